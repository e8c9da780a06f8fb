#!/usr/bin/env python3
"""Run the built-in idea_validation workflow with deterministic local agents.

    python examples/idea_validation.py [--mode mvp|full] [--review approve|reject|manual]
                                       [--session ID] [--resume] [--crash-after N]

Each run writes a new session into ./projects (idea-001, idea-002, ...) unless --session
names one. Phase 1 has a review gate: by default the demo approves it for you; --review
reject sends it back once with comments first; --review manual stops so that you can edit
the feedback file yourself and continue with --resume (the latest demo session unless
--session names one). --crash-after N kills the process (os._exit) right after the Nth agent
output is saved: run again with --resume and nothing is lost or done twice.

This is a thin wrapper around ``haytham.run.demo.run_demo``, as is ``haytham demo``; exit codes:
0 done or awaiting review, 1 failed, 3 crashed on purpose.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from haytham import IDEA_VALIDATION, CheckpointManager, HaythamError
from haytham.run.demo import DEMO_PROJECT, REVIEW_MODES, DemoEvent, last_session_id, next_session_id, run_demo


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--base-dir", type=Path, default=Path("projects"))
    parser.add_argument("--mode", choices=sorted(IDEA_VALIDATION.modes), default="mvp")
    parser.add_argument("--review", choices=REVIEW_MODES, default="approve")
    parser.add_argument("--session", help="session id (default: the next free idea-NNN)")
    parser.add_argument("--resume", action="store_true", help="continue an existing session")
    parser.add_argument("--crash-after", type=int, metavar="N", help="os._exit after the Nth saved output")
    args = parser.parse_args()

    manager = CheckpointManager(base_dir=args.base_dir)
    session = args.session or (last_session_id(manager) if args.resume else next_session_id(manager))
    if session is None:
        print(f"Error: there is no demo session under {args.base_dir} to resume", file=sys.stderr)
        return 1

    def show(event: DemoEvent) -> None:
        print(event, flush=True)

    try:
        result = run_demo(
            manager,
            session,
            args.mode,
            args.review,
            resume=args.resume,
            crash_after=args.crash_after,
            on_event=show,
        )
        summarise(manager, session)
    except (HaythamError, OSError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 1 if result.status == "failed" else 0


def summarise(manager: CheckpointManager, session: str) -> None:
    """Print the session's files, its phase table and its totals."""
    state = manager.load_session(DEMO_PROJECT, session)
    session_dir = Path(state["session_dir"])
    print(f"\nSession files in {session_dir}/")
    for path in sorted(session_dir.rglob("*.md")):
        print(f"  {path.relative_to(session_dir)}")
    print(f"\n{'Phase':<6}{'Name':<20}{'Status':<12}")
    for row in state["phases"]:
        print(f"{row['number']:<6}{row['name']:<20}{row['status']:<12}")
    metrics = state["metrics"]
    print(f"\nStatus: {state['status']}; tokens {metrics['total_tokens']}, cost ${metrics['total_cost']:.4f}")
    print(f"Open {session_dir / 'session_manifest.md'} to read the manifest.")


if __name__ == "__main__":
    raise SystemExit(main())
