#!/usr/bin/env python3
"""Kill a saving process with SIGKILL N times (default 1,000) and print what was found.

Not part of the test suite (tests/test_crash.py runs 50 cycles). Run it after
``python3 dev.py test`` has made the virtualenv:

    .venv/bin/python benchmarks/crash_cycles.py [--cycles 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from crash_harness import Counts, run_cycle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts = Counts()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as base:
        for cycle in range(args.cycles):
            run_cycle(Path(base), cycle, rng, counts)
            if (cycle + 1) % 100 == 0:
                print(f"{cycle + 1} cycles, {time.monotonic() - started:.0f}s", file=sys.stderr)
    for name, value in dataclasses.asdict(counts).items():
        if name != "problems":
            print(f"{name:26} {value}")
    for problem in counts.problems[:20]:
        print(f"problem: {problem}")
    return 1 if counts.problems else 0


if __name__ == "__main__":
    sys.exit(main())
