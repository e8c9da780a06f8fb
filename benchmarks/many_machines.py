#!/usr/bin/env python3
"""Four worker hosts and two reviewers on one git remote: run the scenario and print its counts.

    .venv/bin/python benchmarks/many_machines.py [--workers 4] [--reviewers 2] [--sessions 12]

The scenario is the one of tests/test_many_machines.py (``tests/many_machines.py``): a bare
repository on a file URL is the remote, every worker (``haytham runner``) and reviewer
(``haytham feedback … --push``) a clone in its own directory and its own process, all at once,
until every session is complete. Prints sessions, phases, agent runs, reviews, commits, merge
commits, push retries, claims lost, conflicts, duplicate runs and the wall time, as JSON.
Not part of the test suite; the slow test asserts the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from many_machines import clone, run_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--reviewers", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haytham-many-") as folder:
        tmp = Path(folder)
        (tmp / "home").mkdir()
        for key in [k for k in os.environ if k.startswith("GIT_")]:
            del os.environ[key]
        os.environ.update({"HOME": str(tmp / "home"), "GIT_CONFIG_NOSYSTEM": "1"})
        outcome = run_scenario(tmp, workers=args.workers, reviewers=args.reviewers, sessions=args.sessions)
        print(json.dumps(outcome.summary(clone(outcome.origin, tmp / "fresh", "auditor")), indent=2))


if __name__ == "__main__":
    main()
