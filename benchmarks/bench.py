#!/usr/bin/env python3
"""haytham against the floor: the same bytes read or written by a few lines of plain Python.

    .venv/bin/python benchmarks/bench.py             # after `python3 dev.py test` made .venv
    .venv/bin/python benchmarks/bench.py --only B1,B2 --no-peer

Each measurement runs several times, haytham and its floor alternately (so a noisy moment
hits both), and the medians are compared. Writes are durable on both sides: a temporary file,
fsync, ``os.replace`` and an fsync of the directory, once per file. Reads are warm (the page
cache holds the files on both sides). The peer, LangGraph's ``SqliteSaver``, is pip-installed
into the running interpreter when missing; its figures are printed, not judged. Not part of
the test suite; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import importlib.metadata
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haytham import CheckpointManager
from haytham.format import AGENT_OUTPUT, HISTORY_ENTRY, MANIFEST
from haytham.records import AgentOutput, SessionStatus
from haytham.store import history
from haytham.store import index as _index

AGENTS = ("analyst", "critic", "writer")
PARAGRAPH = "Lorem ipsum dolor sit amet, **consectetur** adipiscing elit; sed do eiusmod tempor.\n\n"
OUTPUT_8K = (PARAGRAPH * 100)[:8192]
PROJECT = "bench"

# Sizes and repeat counts (printed with the results).
B1_REPEATS = 31
B2_REPEATS, B2_COLD_REPEATS = 41, 15
B3_SESSIONS, B3_REPEATS = 10_000, 5
B4_SESSIONS, B4_PHASES, B4_OUTPUT_BYTES, B4_REPEATS = 1_000, 3, 2048, 5
B5_BYTES, B5_REPEATS = 10 * 1024 * 1024, 7
B6_TOTAL_BYTES = 500 * 1024 * 1024
B7_HISTORY, B7_REPEATS = 1_000, 21


# ------------------------------------------------------------------------------ the floor


def floor_write(path: Path, data: bytes) -> None:
    """What haytham's atomic_write does, in plain Python: temp file, fsync, replace, dir fsync."""
    tmp = path.parent / f".{path.name}.floor-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def floor_read(paths: list[Path]) -> int:
    """Read every file's bytes; return how many bytes were read."""
    total = 0
    for path in paths:
        with open(path, "rb") as handle:
            total += len(handle.read())
    return total


# ------------------------------------------------------------------------------ measuring


@dataclasses.dataclass
class Row:
    target: str
    what: str
    haytham: str
    floor: str
    ratio: float | None
    goal: str
    met: bool | None


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def alternate(
    repeats: int,
    haytham: Callable[[int], Any],
    floor: Callable[[int], Any],
) -> tuple[float, float]:
    """Median seconds of ``haytham(i)`` and ``floor(i)``, run alternately ``repeats`` times."""
    ours: list[float] = []
    theirs: list[float] = []
    for index in range(repeats):
        for action, times in [(haytham, ours), (floor, theirs)][:: 1 if index % 2 == 0 else -1]:
            started = time.perf_counter()
            action(index)
            times.append(time.perf_counter() - started)
    return statistics.median(ours), statistics.median(theirs)


def median_of(repeats: int, action: Callable[[int], Any]) -> float:
    times = []
    for index in range(repeats):
        started = time.perf_counter()
        action(index)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 10 else f"{seconds:.1f} s"


def save_phase(manager: CheckpointManager, session: str, phase: int, output: str = OUTPUT_8K) -> None:
    """One phase of a workflow: 3 agent outputs, the checkpoint (and manifest), the feedback."""
    for agent in AGENTS:
        manager.save_agent_output(
            PROJECT,
            session,
            phase,
            agent,
            output,
            duration=1.5,
            model="gpt-4o",
            input_tokens=1200,
            output_tokens=300,
            tools_used=["search"],
            cost=0.01,
        )
    manager.save_checkpoint(
        PROJECT,
        session,
        phase,
        "completed",
        [{"agent_name": a, "tokens": 1500, "cost": 0.01, "duration": 1.5} for a in AGENTS],
    )
    manager.save_user_feedback(PROJECT, session, phase, True, True, comments="Looks good; ship it.")


def session_md_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.md") if not p.name.startswith("."))


# ------------------------------------------------------------------------------ the targets

COLD: dict[str, tuple[float, float, str]] = {}
"""First runs (empty read cache, no index): seconds, the floor's seconds, what; printed
under the table, not judged."""


def settle() -> None:
    """Wait until the files just written are old enough for the index to remember them."""
    time.sleep(_index.RACY_NS / 1e9 + 0.5)


def bench_b1(base: Path) -> Row:
    manager = CheckpointManager(base / "b1")
    for index in range(B1_REPEATS):
        manager.create_session(PROJECT, f"s{index}", "ada", execution_mode="full")
        save_phase(manager, f"s{index}", 1)
    # The floor writes the very files one phase save leaves, with the same bytes and layout.
    probe = CheckpointManager(base / "b1-probe")
    probe.create_session(PROJECT, "probe", "ada", execution_mode="full")
    save_phase(probe, "probe", 1)
    session_dir = probe.session_dir(PROJECT, "probe")
    before = {p: p.stat().st_mtime_ns for p in session_md_files(session_dir)}
    save_phase(probe, "probe", 2)
    written = [p for p in session_md_files(session_dir) if before.get(p) != p.stat().st_mtime_ns]
    payload = [(p.relative_to(session_dir), p.read_bytes()) for p in written]
    floor_root = base / "b1-floor"
    for index in range(B1_REPEATS):
        for relative, _ in payload:
            (floor_root / str(index) / relative).parent.mkdir(parents=True, exist_ok=True)
        (floor_root / str(index) / "session_manifest.md").write_bytes(b"old manifest\n")

    def ours(index: int) -> None:
        save_phase(manager, f"s{index}", 2)

    def floor(index: int) -> None:
        for relative, data in payload:
            floor_write(floor_root / str(index) / relative, data)

    h, f = alternate(B1_REPEATS, ours, floor)
    size = sum(len(d) for _, d in payload)
    return Row(
        "B1",
        f"save one phase: {len(payload)} durable files, {size / 1024:.0f} KB",
        ms(h),
        ms(f),
        h / f,
        "<= 1.5x",
        h / f <= 1.5,
    )


def make_full_session(manager: CheckpointManager, session: str) -> None:
    manager.create_session(PROJECT, session, "ada", execution_mode="full")
    for phase in range(1, 8):
        save_phase(manager, session, phase)


def bench_b2(base: Path) -> Row:
    manager = CheckpointManager(base / "b2")
    make_full_session(manager, "full")
    directory = manager.session_dir(PROJECT, "full")
    files = [directory / "session_manifest.md"]
    for phase_dir in sorted(d for d in directory.iterdir() if d.name.startswith("phase_")):
        files.append(phase_dir / "checkpoint.md")
        files += [phase_dir / f"{agent}.md" for agent in AGENTS]

    def load(reader: CheckpointManager) -> None:
        reader.load_session(PROJECT, "full")
        outputs = reader.get_phase_outputs(PROJECT, "full")
        assert len(outputs) == 7
        assert outputs[7]["writer"] == OUTPUT_8K

    def ours(_: int) -> None:
        load(manager)

    def first_read(_: int) -> None:  # what a new process pays: nothing parsed yet
        fresh = CheckpointManager(base / "b2")  # a new manager has an empty read cache
        started = time.perf_counter()
        load(fresh)
        cold.append(time.perf_counter() - started)

    cold: list[float] = []
    alternate(B2_COLD_REPEATS, first_read, lambda _: floor_read(files))
    ours(0)
    h, f = alternate(B2_REPEATS, ours, lambda _: floor_read(files))
    COLD["B2"] = (statistics.median(cold), f, "load with an empty read cache (a new process)")
    return Row(
        "B2",
        f"load_session + get_phase_outputs, 7 phases x 3 agents ({len(files)} files)",
        ms(h),
        ms(f),
        h / f,
        "<= 3x",
        h / f <= 3,
    )


def bench_b3(base: Path) -> Row:
    root = base / "b3"
    template = CheckpointManager(root / "template")
    make_full_session(template, "t")
    manifest = template.load_manifest(PROJECT, "t")
    paths: list[Path] = []
    statuses: tuple[SessionStatus, ...] = ("in_progress", "completed", "failed")
    for index in range(B3_SESSIONS):
        project = f"p{index % 10}"
        session = f"s{index:05d}"
        record = dataclasses.replace(
            manifest,
            project_id=project,
            session_id=session,
            status=statuses[index % 3],
            last_updated=f"2024-11-{1 + index % 28:02d}T10:{index % 60:02d}:00Z",
        )
        directory = root / "tree" / project / "sessions" / session
        directory.mkdir(parents=True)
        path = directory / "session_manifest.md"
        path.write_text(MANIFEST.render(record), encoding="utf-8")
        paths.append(path)
    manager = CheckpointManager(root / "tree")

    def ours(_: int) -> None:
        found = manager.list_sessions()
        assert len(found) == B3_SESSIONS

    cold = timed(lambda: ours(0))  # no index yet: every manifest is read and parsed
    settle()
    ours(0)  # builds the index
    h, f = alternate(B3_REPEATS, ours, lambda _: floor_read(paths))
    COLD["B3"] = (cold, f, "the first listing, without an index")
    return Row(
        "B3",
        f"list_sessions over {B3_SESSIONS:,} sessions (status, phase, cost)",
        ms(h),
        ms(f),
        h / f,
        "<= 3x",
        h / f <= 3,
    )


def bench_b4(base: Path) -> Row:
    root = base / "b4"
    template = CheckpointManager(root / "template")
    template.create_session(PROJECT, "t", "ada", execution_mode="full")
    for phase in range(1, B4_PHASES + 1):
        save_phase(template, "t", phase, output=(PARAGRAPH * 40)[:B4_OUTPUT_BYTES])
    source = template.session_dir(PROJECT, "t")
    assert template.validate_paths([source]) == []
    tree = root / "tree"
    for index in range(B4_SESSIONS):
        shutil.copytree(source, tree / f"p{index % 10}" / "sessions" / f"s{index:04d}")
    files = [p for p in sorted(tree.rglob("*.md")) if not p.name.startswith(".")]
    manager = CheckpointManager(tree)

    def ours(_: int) -> None:
        assert manager.validate_paths([tree]) == []

    cold = timed(lambda: ours(0))  # no index yet: every file is read and parsed
    settle()
    ours(0)  # builds the index
    h, f = alternate(B4_REPEATS, ours, lambda _: floor_read(files))
    COLD["B4"] = (cold, f, "the first validation, without an index")
    return Row(
        "B4",
        f"validate {B4_SESSIONS:,} sessions ({len(files):,} files)",
        ms(h),
        ms(f),
        h / f,
        "<= 4x",
        h / f <= 4,
    )


def bench_b5(base: Path) -> list[Row]:
    manager = CheckpointManager(base / "b5")
    manager.create_session(PROJECT, "big", "ada", execution_mode="full")
    content = (PARAGRAPH * (B5_BYTES // len(PARAGRAPH) + 1))[:B5_BYTES]
    manager.save_agent_output(PROJECT, "big", 1, "probe", content, model="m")
    data = (manager.phase_dir(PROJECT, "big", 1) / "probe.md").read_bytes()
    floor_dir = base / "b5-floor"
    floor_dir.mkdir()

    def save(index: int) -> None:
        manager.save_agent_output(PROJECT, "big", 1, f"agent{index}", content, model="m")

    def load(index: int) -> None:
        got = manager.load_agent_output(PROJECT, "big", 1, f"agent{index}")
        assert len(got.content) == B5_BYTES

    def floor_save(index: int) -> None:
        floor_write(floor_dir / f"agent{index}.md", data)

    def floor_load(index: int) -> None:
        floor_read([floor_dir / f"agent{index}.md"])

    hs, fs = alternate(B5_REPEATS, save, floor_save)
    hl, fl = alternate(B5_REPEATS, load, floor_load)
    mb = len(data) / 1e6
    rows = []
    for label, h, f in (("save", hs, fs), ("load", hl, fl)):
        share = f / h
        rows.append(
            Row(
                "B5",
                f"{label} a 10 MB agent output: {mb / h:.0f} vs {mb / f:.0f} MB/s ({share:.0%} of the floor)",
                ms(h),
                ms(f),
                h / f,
                ">= 50% throughput (<= 2x)",
                share >= 0.5,
            )
        )
    return rows


@contextmanager
def opened_files() -> Iterator[list[str]]:
    """The paths opened (and directories listed) while the block runs, via an audit hook."""
    found: list[str] = []
    _AUDIT.append(found)
    try:
        yield found
    finally:
        _AUDIT.remove(found)


_AUDIT: list[list[str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _AUDIT and event in ("open", "os.listdir", "os.scandir"):
        _AUDIT[-1].append(f"{event}:{args[0]}")


sys.addaudithook(_audit)


def bench_b6(base: Path) -> Row:
    manager = CheckpointManager(base / "b6")
    manager.create_session(PROJECT, "huge", "ada", execution_mode="full")
    directory = manager.session_dir(PROJECT, "huge")
    per_output = B6_TOTAL_BYTES // (7 * len(AGENTS))
    body = (PARAGRAPH * (per_output // len(PARAGRAPH) + 1))[:per_output]
    for phase in range(1, 8):
        # The big files are written directly (the record rendered, no fsync) to keep the setup
        # fast; the checkpoints and manifest go through haytham.
        phase_dir = manager.phase_dir(PROJECT, "huge", phase)
        for agent in AGENTS:
            record = AgentOutput(
                agent_name=agent,
                phase_number=phase,
                phase_name=CHECKPOINT_NAMES[phase],
                executed="2024-11-24T10:00:00Z",
                duration=1.0,
                status="completed",
                model="m",
                input_tokens=1,
                output_tokens=1,
                tools_used=(),
                content=body,
            )
            (phase_dir / f"{agent}.md").write_text(AGENT_OUTPUT.render(record), encoding="utf-8")
        manager.save_checkpoint(
            PROJECT, "huge", phase, "completed", [{"agent_name": a, "tokens": 10} for a in AGENTS]
        )
    del body
    total = sum(p.stat().st_size for p in directory.rglob("*.md"))
    outputs = {str(p) for p in directory.glob("phase_*/*.md") if p.stem in AGENTS}
    needed = [directory / "session_manifest.md", *sorted(directory.glob("phase_*/checkpoint.md"))]
    gc.collect()
    tracemalloc.start()
    try:
        with opened_files() as seen:
            started = time.perf_counter()
            state = manager.load_session(PROJECT, "huge")
            elapsed = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert state["completed_phases"] == list(range(1, 8))
    opened_outputs = [s for s in seen if s.split(":", 1)[1] in outputs]
    floor_time = min(timed(lambda: floor_read(needed)) for _ in range(5))
    grown = peak / 1e6
    return Row(
        "B6",
        f"load_session, outputs total {total / 1e6:.0f} MB: {len(opened_outputs)} of {len(outputs)} output "
        f"files opened; took {ms(elapsed)} (first read: floor {ms(floor_time)} for manifest + checkpoints)",
        f"+{grown:.2f} MB",
        "20 MB limit",
        None,
        "peak grows < 20 MB (tracemalloc), no output read",
        grown < 20 and not opened_outputs,
    )


CHECKPOINT_NAMES = {
    1: "Concept Expansion",
    2: "Market Research",
    3: "Niche Selection",
    4: "Product Strategy",
    5: "Business Planning",
    6: "Validation",
    7: "Final Synthesis",
}


def bench_b7(base: Path) -> Row:
    manager = CheckpointManager(base / "b7")
    agents = [{"agent_name": a, "tokens": 1500, "cost": 0.01, "duration": 1.5} for a in AGENTS]

    def save(session: str, index: int) -> None:
        manager.save_checkpoint(
            PROJECT, session, 1, "completed", agents, duration=float(index + 1), reason=f"save {index}"
        )

    # The very first save of a session (it also creates history/), in a few fresh sessions.
    for index in range(5):
        manager.create_session(PROJECT, f"first{index}", "ada", execution_mode="full")
    first = median_of(5, lambda i: save(f"first{i}", 0))
    # A short history: the first saves of a fresh session.
    manager.create_session(PROJECT, "short", "ada", execution_mode="full")
    save("short", 0)
    # A long history: B7_HISTORY - 1 entries written directly (rendered, chained, no fsync).
    manager.create_session(PROJECT, "long", "ada", execution_mode="full")
    save("long", 0)
    directory = manager.session_dir(PROJECT, "long")
    head = manager.load_manifest(PROJECT, "long").history_head
    text = (directory / "phase_1_concept" / "checkpoint.md").read_text(encoding="utf-8")
    for index in range(1, B7_HISTORY - 1):
        stamp = f"2024-11-24T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z"
        entry = history.make_entry(head, 1, "Concept Expansion", 1, "completed", stamp, text, None, "x")
        (directory / "history" / history.file_name(entry)).write_text(
            HISTORY_ENTRY.render(entry), encoding="utf-8"
        )
        head = entry.entry_id
    manifest = dataclasses.replace(manager.load_manifest(PROJECT, "long"), history_head=head)
    (directory / "session_manifest.md").write_text(MANIFEST.render(manifest), encoding="utf-8")
    assert len(list((directory / "history").iterdir())) == B7_HISTORY - 1

    with opened_files() as short_seen:
        save("short", 1)
    with opened_files() as long_seen:
        save("long", B7_HISTORY - 1)  # the 1,000th save
    h, f = alternate(
        B7_REPEATS,
        lambda i: save("long", B7_HISTORY + i),
        lambda i: save("short", 2 + i),
    )
    return Row(
        "B7",
        f"save #{B7_HISTORY}+ vs #2-{B7_REPEATS + 1} of one session (the very first: {ms(first)}); "
        f"files opened/listed {len(long_seen)} vs {len(short_seen)}",
        ms(h),
        ms(f) + " (early)",
        h / f,
        "<= 1.2x the early saves",
        h / f <= 1.2 and len(long_seen) == len(short_seen),
    )


# ------------------------------------------------------------------------------ the peer


def load_peer() -> Any:
    """LangGraph's SqliteSaver, installed into this interpreter when it is missing."""
    try:
        return importlib.import_module("langgraph.checkpoint.sqlite")
    except ImportError:
        pass
    print("installing langgraph-checkpoint-sqlite for the peer comparison ...", flush=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "langgraph-checkpoint-sqlite",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed: {(done.stderr or done.stdout).strip()[-300:]}")
    importlib.invalidate_caches()
    return importlib.import_module("langgraph.checkpoint.sqlite")


def bench_peer(base: Path, h_b1: float | None, h_b2: float | None) -> list[str]:
    import sqlite3

    module = load_peer()
    base_module = importlib.import_module("langgraph.checkpoint.base")
    version = importlib.metadata.version("langgraph-checkpoint-sqlite")
    conn = sqlite3.connect(base / "peer.sqlite3", check_same_thread=False, isolation_level=None)
    saver = module.SqliteSaver(conn)
    saver.setup()
    conn.execute("PRAGMA synchronous=FULL")
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]

    def phase_state(phase: int, output: str = OUTPUT_8K) -> dict[str, Any]:
        return {
            "outputs": {a: output for a in AGENTS},
            "checkpoint": {
                "phase_number": phase,
                "status": "completed",
                "agents": [{"agent_name": a, "tokens": 1500, "cost": 0.01, "duration": 1.5} for a in AGENTS],
                "started": "2024-11-24T10:00:00Z",
                "completed": "2024-11-24T10:02:00Z",
            },
            "feedback": {"reviewed": True, "approved": True, "comments": "Looks good; ship it."},
        }

    def put(thread: str, values: dict[str, Any]) -> None:
        checkpoint = base_module.empty_checkpoint()
        checkpoint["channel_values"] = values
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        saver.put(config, checkpoint, {"source": "loop", "step": 1}, {})

    def get(thread: str) -> Any:
        found = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert found is not None
        return found.checkpoint["channel_values"]

    lines = [f"peer: LangGraph SqliteSaver {version} (journal_mode={journal}, synchronous={sync}: FULL=2)"]
    p1 = median_of(B1_REPEATS, lambda i: put(f"b1-{i}", {"phase_2": phase_state(2)}))
    versus = f"; haytham {ms(h_b1)}" if h_b1 else ""
    lines.append(f"  B1 put one phase (3 x 8 KB outputs, checkpoint, feedback): {ms(p1)}{versus}")
    put("b2", {f"phase_{n}": phase_state(n) for n in range(1, 8)})
    p2 = median_of(B2_REPEATS, lambda _: get("b2"))
    versus = f"; haytham {ms(h_b2)}" if h_b2 else ""
    lines.append(f"  B2 get_tuple of a state holding 7 phases x 3 agents: {ms(p2)}{versus}")
    big = (PARAGRAPH * (B5_BYTES // len(PARAGRAPH) + 1))[:B5_BYTES]
    p5s = median_of(B5_REPEATS, lambda i: put(f"b5-{i}", {"big": big}))
    p5l = median_of(B5_REPEATS, lambda i: get(f"b5-{i}"))
    lines.append(f"  B5 put / get_tuple of a 10 MB output: {ms(p5s)} / {ms(p5l)}")
    conn.close()
    return lines


# ------------------------------------------------------------------------------ main

BENCHES: dict[str, Callable[[Path], Row | list[Row]]] = {
    "B1": bench_b1,
    "B2": bench_b2,
    "B3": bench_b3,
    "B4": bench_b4,
    "B5": bench_b5,
    "B6": bench_b6,
    "B7": bench_b7,
}


def print_table(rows: list[Row]) -> None:
    header = ("target", "haytham", "floor", "ratio", "goal", "met", "what")
    cells = [
        (
            r.target,
            r.haytham,
            r.floor,
            f"{r.ratio:.2f}x" if r.ratio is not None else "-",
            r.goal,
            {True: "yes", False: "NO", None: "-"}[r.met],
            r.what,
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated targets (B1,...,B7)")
    parser.add_argument("--no-peer", action="store_true", help="skip the LangGraph comparison")
    parser.add_argument("--dir", default=None, help="where to make the scratch files (default: a temp dir)")
    args = parser.parse_args(argv)
    chosen = [name.strip().upper() for name in args.only.split(",") if name.strip()]
    started = time.perf_counter()
    print(
        f"sizes: B1 {B1_REPEATS} runs; B2 {B2_REPEATS} runs; B3 {B3_SESSIONS:,} manifests, "
        f"{B3_REPEATS} runs; B4 {B4_SESSIONS:,} sessions x {B4_PHASES} phases x {len(AGENTS)} agents "
        f"of {B4_OUTPUT_BYTES} B, {B4_REPEATS} runs; B5 {B5_BYTES / 1e6:.1f} MB, {B5_REPEATS} runs; "
        f"B6 {B6_TOTAL_BYTES / 1e6:.0f} MB of outputs, 1 run; B7 history of {B7_HISTORY:,}, "
        f"{B7_REPEATS} runs; agent outputs of {len(OUTPUT_8K)} B; medians",
        flush=True,
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="haytham-bench-", dir=args.dir) as scratch:
        base = Path(scratch)
        for name in chosen:
            began = time.perf_counter()
            found = BENCHES[name](base)
            rows += found if isinstance(found, list) else [found]
            print(f"  {name} done in {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
            for leftover in base.glob(f"{name.lower()}*"):
                shutil.rmtree(leftover, ignore_errors=True)
        peer_lines: list[str] = []
        if not args.no_peer:
            h_b1 = next((_seconds(r.haytham) for r in rows if r.target == "B1"), None)
            h_b2 = next((_seconds(r.haytham) for r in rows if r.target == "B2"), None)
            try:
                peer_lines = bench_peer(base, h_b1, h_b2)
            except Exception as error:  # the peer is informative only
                peer_lines = [f"peer unavailable: {type(error).__name__}: {error}"]
    print()
    print_table(rows)
    if COLD:
        print(
            "\nfirst runs, not judged (the table times the everyday case: a warm read cache, a built index):"
        )
        for name, (seconds, floor, what) in sorted(COLD.items()):
            print(f"  {name} {what}: {ms(seconds)} ({seconds / floor:.1f}x the floor's {ms(floor)})")
    print()
    for line in peer_lines:
        print(line)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")
    return 0


def _seconds(text: str) -> float:
    value, unit = text.split()[:2]
    return float(value) / 1000 if unit == "ms" else float(value)


if __name__ == "__main__":
    sys.exit(main())
