#!/usr/bin/env python3
"""Scale inside the limits (issue 24, item 11): the big cases of docs/formats.md "Limits", timed.

    .venv/bin/python benchmarks/scale.py                 # the documented sizes (trees cached)
    .venv/bin/python benchmarks/scale.py --quick         # a tenth of them, a smoke run
    .venv/bin/python benchmarks/scale.py --cache DIR     # keep the trees in DIR

Three sessions, made once with ``tests/scale_trees.py`` (the first steps saved through the
library, the rest written as it writes them) and kept in ``$TMPDIR/haytham-scale-cache``:
a workflow of 1,000 phases, a phase of 10,000 attempts, a history of 100,000 entries. Each
command runs as a person runs it, ``haytham ...`` in a new process (no index), and prints its
wall time; the numbers in docs/formats.md come from this script. Not part of the test suite,
nothing is asserted: ``tests/test_scale.py`` pins that the work is linear, by counting it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from scale_trees import PROJECT, SESSION, long_history, many_attempts, many_phases

from haytham.store.manager import CheckpointManager

HAYTHAM = [sys.executable, "-m", "haytham"]


def made(cache: Path, name: str, make: Callable[[Path, int], CheckpointManager], size: int) -> Path:
    """The base directory of the tree ``name`` (made once, then reused)."""
    base = cache / name
    done = cache / f".{name}-{size}.complete"
    if not done.exists():
        shutil.rmtree(base, ignore_errors=True)
        started = time.perf_counter()
        make(base, size)
        print(f"made {name} ({size:,}) in {time.perf_counter() - started:.1f} s", flush=True)
        done.touch()
    return base


def timed(*args: str | Path) -> float:
    """Seconds ``haytham ARGS`` takes in a new process (the command must succeed)."""
    env = {**os.environ, "HAYTHAM_INDEX": "0"}
    started = time.perf_counter()
    subprocess.run([*HAYTHAM, *map(str, args)], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "haytham-scale-cache")
    options = parser.parse_args(argv)
    scale = 10 if options.quick else 1
    cache = options.cache / ("quick" if options.quick else "full")
    cache.mkdir(parents=True, exist_ok=True)
    phases = made(cache, "phases", many_phases, 1_000 // scale)
    attempts = made(cache, "attempts", many_attempts, 10_000 // scale)
    history = made(cache, "history", long_history, 100_000 // scale)
    rows: list[tuple[str, float]] = []

    def row(what: str, seconds: float) -> None:
        rows.append((what, seconds))
        print(f"{what:<48} {seconds:8.1f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="haytham-scale-") as scratch:
        out = Path(scratch)
        row(
            f"report, {1_000 // scale:,} phases",
            timed("report", PROJECT, SESSION, "-o", out / "r.html", "--base-dir", phases),
        )
        row(f"stats, {1_000 // scale:,} phases", timed("stats", "--base-dir", phases))
        row(f"status, {1_000 // scale:,} phases", timed("status", PROJECT, SESSION, "--base-dir", phases))
        for name, base, size in (("attempts", attempts, 10_000), ("history entries", history, 100_000)):
            what = f"{size // scale:,} {name}"
            archive = out / f"{name.split()[0]}.tar.gz"
            row(
                f"export .tar.gz, {what}",
                timed("export", PROJECT, SESSION, "-o", archive, "--base-dir", base),
            )
            row(f"import, {what}", timed("import", archive, "--base-dir", out / f"import-{name.split()[0]}"))
            fork = ["--from-phase", "2"]  # phase 1, with its attempts
            if base == history:  # every entry read, the chain to the last one followed
                fork = ["--from-entry", CheckpointManager(base).history(PROJECT, SESSION)[-1].entry_id]
            row(f"fork, {what}", timed("fork", PROJECT, SESSION, "copy", *fork, "--base-dir", base))
            shutil.rmtree(base / PROJECT / "sessions" / "copy")
        row(
            f"report, {10_000 // scale:,} attempts",
            timed("report", PROJECT, SESSION, "-o", out / "a.html", "--base-dir", attempts),
        )
        row(f"stats, {10_000 // scale:,} attempts", timed("stats", "--base-dir", attempts))
        row(
            f"history, {100_000 // scale:,} entries",
            timed("history", PROJECT, SESSION, "--base-dir", history),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
