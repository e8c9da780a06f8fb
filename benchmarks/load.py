#!/usr/bin/env python3
"""Under load (issue 26): ``haytham serve`` beside a static server of the same pages' bytes.

    .venv/bin/python benchmarks/load.py                       # 1,000 sessions, 3 rounds (bench.py: 5)
    .venv/bin/python benchmarks/load.py --sessions 200 --repeats 1

A tree of sessions (half awaiting review, half completed, copies of two demo sessions) is
served by ``haytham serve`` in a process of its own. Each page of the mix (the inbox and its
second page and oldest-first order, the sessions page with and without a filter, session
pages, phase pages) is fetched from it once and its bytes saved to disk, where Python's
``http.server`` serves them: the peer is the same bytes with no work behind them.

Each round sends ``--requests`` requests (200), ``--concurrency`` at a time (4 threads, a new
connection each, as ``http.client`` makes it), the same shuffled mix to both servers, while a
writer process saves phases into the tree (three agent outputs and a checkpoint a phase,
``save_agent_output`` and ``save_checkpoint``, into 20 sessions of its own made before the
warm-up, the three phases of one, then of the next, each save a new attempt: the listing
changes under the server, and the tree holds as many sessions at every measure of memory).
The two servers alternate, which goes first changing each round.
Reported: errors (any answer that is not 200, or no answer), p50 (the median of the
rounds'), p99 (of every request of the rounds together), requests per second, and each
server's resident memory (``VmRSS``) after a warm-up before the first round and after each
round, with the goals "no error", "p99 within 10x static", "memory flat" (grown by at most
10%); beside it how many sessions the tree held before and after (what a server keeps grows
with the tree: the watcher's watches, its bounded caches filling; docs/architecture.md,
which gives the figure per session). Medians over rounds, with min-max. Nothing is
asserted; the test suite does not run it.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from haytham import CheckpointManager
from haytham.format.layout import MANIFEST_FILE
from haytham.run.demo import DEMO_PROJECT, run_demo
from haytham.web.pages import INBOX_PER_PAGE

P = DEMO_PROJECT
P99_LIMIT = 10.0
"""The goal: haytham's p99 within this many times the static server's."""
RSS_GROWTH_LIMIT = 0.10
"""The goal "memory flat": resident memory grown by at most this share over the rounds."""
WRITER_SESSIONS = 20
"""The writer's own sessions, made before the warm-up: it saves into them in turn, so the tree
holds as many sessions at every measure of memory (what a server keeps grows with the tree)."""
WRITER = """
import pathlib, sys
from haytham import CheckpointManager

base, stop, pool = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
manager = CheckpointManager(base)
agents = ("analyst", "critic", "writer")
text = ("Lorem ipsum dolor sit amet, **consectetur** adipiscing elit.\\n\\n" * 40)
saved = 0
while not stop.exists():
    session = f"w-{saved // 3 % pool:05d}"
    phase = saved % 3 + 1
    for agent in agents:
        manager.save_agent_output("PROJECT", session, phase, agent, f"{text}{saved}", duration=1.5, model="m")
    runs = [{"agent_name": a, "tokens": 1500, "cost": 0.01, "duration": 1.5} for a in agents]
    manager.save_checkpoint("PROJECT", session, phase, "completed", runs)
    saved += 1
print(saved)
""".replace("PROJECT", P)
"""``python -c WRITER BASE STOP POOL`` saves phases into the sessions w-00000 ... of BASE (POOL
of them, made before: ``writer_sessions``), the three phases of one, then of the next, round
and round, each a new attempt with other text, until the file STOP exists, then prints how
many it saved."""


def writer_sessions(base: Path, pool: int = WRITER_SESSIONS) -> None:
    """The sessions the writer saves into, made once a figure, before the servers start."""
    manager = CheckpointManager(base)
    for number in range(pool):
        manager.create_session(P, f"w-{number:05d}", "writer")


def make_tree(root: Path, sessions: int) -> Path:
    """A base directory of ``sessions`` sessions, every other one awaiting review at phase 1
    and the rest completed (copies of two demo sessions), made once and kept."""
    base = root / f"load-{sessions}"
    done = base / ".complete"
    if done.exists():
        for written in (base / P / "sessions").glob("w-*"):  # a former run's writer sessions
            shutil.rmtree(written)
        return base
    shutil.rmtree(base, ignore_errors=True)
    manager = CheckpointManager(base)
    templates = {"a": "a-00000", "c": "c-00000"}
    assert run_demo(manager, templates["a"], review="manual").status == "awaiting_review"
    assert run_demo(manager, templates["c"], review="approve").status == "completed"
    folder = manager.session_dir(P, templates["a"]).parent
    for number in range(1, sessions // 2):
        for kind, template in templates.items():
            name = f"{kind}-{number:05d}"
            shutil.copytree(folder / template, folder / name)
            manifest = folder / name / MANIFEST_FILE
            manifest.write_text(manifest.read_text("utf-8").replace(template, name), "utf-8")
    done.touch()
    return base


def sessions_in(base: Path) -> int:
    """How many session folders the tree holds now."""
    return sum(1 for entry in os.scandir(base / P / "sessions") if entry.is_dir())


def page_mix(sessions: int, requests: int, seed: int = 26) -> list[str]:
    """``requests`` paths, a third listing pages, a third session pages, a third phase pages,
    over 20 sessions of the tree, in a shuffled order (the same for both servers)."""
    listings = ["/", "/?order=oldest", "/sessions", "/sessions?state=awaiting_review", "/sessions?page=2"]
    listings += ["/?page=2"] if sessions // 2 > INBOX_PER_PAGE else []
    chosen = [
        f"{kind}-{number:05d}" for number in range(0, sessions // 2, max(1, sessions // 20)) for kind in "ac"
    ]
    session_pages = [f"/p/{P}/s/{name}" for name in chosen[:20]]
    phase_pages = [f"/p/{P}/s/{name}/phase/1" for name in chosen[:20]]
    shuffle = random.Random(seed)
    mix = [shuffle.choice((listings, session_pages, phase_pages)) for _ in range(requests)]
    return [shuffle.choice(kind) for kind in mix]


@dataclass
class Server:
    """A server process and its address (``http://host:port``)."""

    name: str
    process: subprocess.Popen[bytes]
    address: str
    paths: dict[str, str] = field(default_factory=dict)
    """What each path of the mix is called on this server (the static one saved them as files)."""

    def rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def start(name: str, argv: Sequence[str], cwd: Path) -> Server:
    """``argv`` started; its address, the first ``http://`` its standard output prints."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode()
        if "http://" in line:
            address = line[line.index("http://") :].split()[0].rstrip("/)")
            return Server(name, process, address)
    raise RuntimeError(f"{name} printed no address")


def get(address: str, path: str) -> tuple[int, bytes]:
    parts = urlsplit(address)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def snapshot(haytham: Server, paths: Sequence[str], folder: Path) -> dict[str, str]:
    """Each path's page as haytham serves it now, saved in ``folder``; the file of each path."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for number, path in enumerate(sorted(set(paths))):
        status, body = get(haytham.address, path)
        assert status == 200, (path, status)
        (folder / f"{number}.html").write_bytes(body)
        files[path] = f"/{number}.html"
    return files


def p99_of(latencies: Sequence[float]) -> float:
    """The 99th percentile of ``latencies`` (at least two)."""
    return statistics.quantiles(latencies, n=100, method="inclusive")[98]


@dataclass
class Round:
    latencies: list[float]
    errors: int
    seconds: float
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    """The latencies of each kind of page (``kind_of``)."""

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def p99(self) -> float:
        return p99_of(self.latencies)

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds


def kind_of(path: str) -> str:
    """``listing``, ``session`` or ``phase``: which kind of page of the mix ``path`` is."""
    return "phase" if "/phase/" in path else "session" if path.startswith("/p/") else "listing"


def load(server: Server, paths: Sequence[str], concurrency: int) -> Round:
    """Every path of ``paths`` requested from ``server``, ``concurrency`` at a time."""
    pending = list(reversed(paths))
    lock = threading.Lock()
    latencies: list[float] = []
    by_kind: dict[str, list[float]] = {}
    errors = [0]

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                kind = kind_of(pending[-1])
                path = server.paths.get(pending[-1], pending[-1])
                pending.pop()
            began = time.perf_counter()
            try:
                status, _ = get(server.address, path)
            except OSError:
                status = 0
            took = time.perf_counter() - began
            with lock:
                latencies.append(took)
                by_kind.setdefault(kind, []).append(took)
                errors[0] += status != 200

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Round(latencies, errors[0], time.perf_counter() - began, by_kind)


def writing(base: Path, work: Path) -> tuple[subprocess.Popen[bytes], Path]:
    stop = work / "stop-writer"
    stop.unlink(missing_ok=True)
    argv = [sys.executable, "-c", WRITER, str(base), str(stop), str(WRITER_SESSIONS)]
    writer = subprocess.Popen(argv, stdout=subprocess.PIPE)
    return writer, stop


def stopped(writer: subprocess.Popen[bytes], stop: Path) -> int:
    """How many phases the writer saved, once it has stopped."""
    stop.touch()
    out, _ = writer.communicate(timeout=120)
    if writer.returncode != 0:
        raise RuntimeError(f"the writer failed (exit {writer.returncode})")
    return int(out)


def by_page(rounds: Sequence[Round]) -> str:
    """The median over rounds of each kind of page's p99 (``kind_of``)."""
    kinds = sorted({kind for r in rounds for kind in r.by_kind})
    p99 = {
        kind: statistics.median(p99_of(r.by_kind[kind]) for r in rounds if len(r.by_kind.get(kind, ())) > 1)
        for kind in kinds
    }
    return ", ".join(f"{kind} {value * 1000:.0f} ms" for kind, value in p99.items())


def pooled_p99(rounds: Sequence[Round]) -> float:
    """The p99 of every request of ``rounds`` together: of 200 requests a round, a round's own
    p99 is its second slowest request, which one stall of the machine decides."""
    return p99_of([latency for r in rounds for latency in r.latencies])


def pooled(rounds: Sequence[Round]) -> str:
    """``pooled_p99`` with the min-max of the rounds' own p99s."""
    own = [r.p99 for r in rounds]
    return f"{pooled_p99(rounds) * 1000:.1f} ms ({min(own) * 1000:.1f}-{max(own) * 1000:.1f})"


def spread(values: Sequence[float], scale: float = 1000.0, unit: str = "ms") -> str:
    low, middle, high = (value * scale for value in (min(values), statistics.median(values), max(values)))
    return f"{middle:.1f} {unit} ({low:.1f}-{high:.1f})"


def figure(
    root: Path,
    sessions: int = 1000,
    requests: int = 200,
    concurrency: int = 4,
    repeats: int = 3,
    writer: bool = True,
) -> list[tuple[str, ...]]:
    """The rows of the figure: (what, haytham, static, ratio, goal, met, note)."""
    base = make_tree(root, sessions)
    work = root / f"load-{sessions}-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    paths = page_mix(sessions, requests)
    if writer:
        writer_sessions(base)
    env_argv = [sys.executable, "-m", "haytham", "serve", "--port", "0", "--base-dir", str(base)]
    haytham = start("haytham serve", env_argv, work)
    static: Server | None = None
    try:
        static_dir = work / "static"
        files = snapshot(haytham, paths, static_dir)
        static_argv = [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"]
        static = start("http.server", [*static_argv, "--directory", str(static_dir)], work)
        static.paths = files
        servers = (haytham, static)
        for server in servers:  # warm: each page once, then the memory it holds
            load(server, sorted(set(paths)), concurrency)
        rss = {server.name: [server.rss_mb()] for server in servers}
        tree = [sessions_in(base)]
        rounds: dict[str, list[Round]] = {server.name: [] for server in servers}
        saved: list[int] = []
        for number in range(repeats):
            for server in servers if number % 2 == 0 else servers[::-1]:
                if writer:
                    saving, stop = writing(base, work)
                rounds[server.name].append(load(server, paths, concurrency))
                saved.append(stopped(saving, stop) if writer else 0)
                rss[server.name].append(server.rss_mb())
        tree.append(sessions_in(base))
    finally:
        haytham.stop()
        if static is not None:
            static.stop()
    mine, peer = rounds["haytham serve"], rounds["http.server"]
    p99_ratio = pooled_p99(mine) / pooled_p99(peer)
    growth = {name: values[-1] / values[0] - 1 for name, values in rss.items()}
    saving_note = (
        f"a writer saving ({statistics.median(saved):.0f} phases a round)" if writer else "no writer"
    )
    where = f"{sessions:,} sessions, {requests} requests {concurrency} at a time, {saving_note}"
    fewer = statistics.median(r.per_second for r in peer) / statistics.median(r.per_second for r in mine)
    errors_mine, errors_peer = sum(r.errors for r in mine), sum(r.errors for r in peer)
    return [
        (
            "errors (all rounds)",
            str(errors_mine),
            str(errors_peer),
            "-",
            "0",
            "yes" if errors_mine == 0 else "NO",
            where,
        ),
        (
            "p50",
            spread([r.p50 for r in mine]),
            spread([r.p50 for r in peer]),
            f"{statistics.median(r.p50 for r in mine) / statistics.median(r.p50 for r in peer):.1f}x",
            "-",
            "-",
            "median (min-max) of rounds",
        ),
        (
            "p99",
            pooled(mine),
            pooled(peer),
            f"{p99_ratio:.1f}x",
            f"<= {P99_LIMIT:.0f}x static",
            "yes" if p99_ratio <= P99_LIMIT else "NO",
            "of every request of the rounds (min-max of the rounds' own); haytham's p99 by page: "
            + by_page(mine),
        ),
        (
            "requests/s",
            spread([r.per_second for r in mine], 1, "/s"),
            spread([r.per_second for r in peer], 1, "/s"),
            f"{fewer:.1f}x fewer",
            "-",
            "-",
            "median (min-max) of rounds",
        ),
        (
            "server RSS, warm, then after each round",
            " -> ".join(f"{value:.0f}" for value in rss["haytham serve"]) + " MB",
            " -> ".join(f"{value:.0f}" for value in rss["http.server"]) + " MB",
            f"{growth['haytham serve']:+.0%}",
            f"flat (<= +{RSS_GROWTH_LIMIT:.0%})",
            "yes" if growth["haytham serve"] <= RSS_GROWTH_LIMIT else "NO",
            f"{repeats} rounds of {requests} requests; {tree[0]:,} sessions before, {tree[-1]:,} after",
        ),
    ]


def print_rows(rows: Sequence[tuple[str, ...]]) -> None:
    header = ("what", "haytham serve", "http.server (same bytes)", "ratio", "goal", "met", "note")
    cells = [header, *rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=1000, help="sessions in the tree (default 1000)")
    parser.add_argument("--requests", type=int, default=200, help="requests a round (default 200)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests at a time (default 4)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds a server (default 3)")
    parser.add_argument("--no-writer", action="store_true", help="no writer saving during the rounds")
    args = parser.parse_args(argv)
    root = Path(tempfile.gettempdir()) / "haytham-bench-cache" / "load"
    root.mkdir(parents=True, exist_ok=True)
    print_rows(figure(root, args.sessions, args.requests, args.concurrency, args.repeats, not args.no_writer))
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} cores; tree kept in {root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
