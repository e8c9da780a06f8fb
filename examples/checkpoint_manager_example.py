#!/usr/bin/env python3
"""The CheckpointManager walk-through of the product document, end to end.

Creates (or reuses) the session ``project-123/session-456`` under ``./projects``, saves two
phases with their agent outputs, checkpoints and feedback, loads the session back, reads
the outputs, validates every file and prints where everything is.

    python examples/checkpoint_manager_example.py [--base-dir DIR] [--fixed-clock]

``--fixed-clock`` stamps every file 2024-11-24T10:00:00Z, so the files come out byte for
byte the same on every run (that is how ``projects/`` and the golden test were made).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from haytham import CheckpointManager

PROJECT, SESSION = "project-123", "session-456"
FIXED_TIME = datetime(2024, 11, 24, 10, 0, 0, tzinfo=timezone.utc)


def run(base_dir: Path, fixed_clock: bool) -> CheckpointManager:
    """Write the example session and return the manager that wrote it."""
    manager = CheckpointManager(base_dir=base_dir, clock=(lambda: FIXED_TIME) if fixed_clock else None)
    manager.create_session(
        project_id=PROJECT, session_id=SESSION, user_id="user-789", execution_mode="mvp", exist_ok=True
    )

    # Phase 1: one agent, reviewed and approved.
    manager.save_agent_output(
        project_id=PROJECT,
        session_id=SESSION,
        phase_num=1,
        agent_name="concept_expansion",
        output_content=(
            "# Concept\n\nA marketplace that matches **solo founders** with fractional experts.\n\n"
            "## Who it is for\n\n- first-time founders\n- bootstrapped teams of one or two\n"
        ),
        status="completed",
        duration=120.5,
        model="anthropic.claude-3-sonnet-20240229-v1:0",
        input_tokens=12000,
        output_tokens=3000,
        tools_used=["file_write"],
    )
    manager.save_checkpoint(
        project_id=PROJECT,
        session_id=SESSION,
        phase_num=1,
        status="completed",
        agents=[
            {
                "agent_name": "concept_expansion",
                "status": "completed",
                "output_file": "concept_expansion.md",
                "tokens": 15000,
                "input_tokens": 12000,
                "output_tokens": 3000,
                "cost": 0.0375,
                "duration": 120.5,
            }
        ],
        started="2024-11-24T10:00:00Z",
        completed="2024-11-24T10:02:00Z",
        duration=120.5,
        execution_mode="single",
    )
    manager.save_user_feedback(
        project_id=PROJECT,
        session_id=SESSION,
        phase_num=1,
        reviewed=True,
        approved=True,
        comments="Looks great!",
        action="approved",
    )

    # Phase 2: two agents in parallel; the reviewer asks for changes.
    outputs = {
        "market_intelligence": "## Market size\n\nTAM is $4B, growing 12% a year.\n",
        "competitor_analysis": "| Competitor | Price |\n|---|---|\n| Foo | $49 |\n| Bar | $99 |\n",
    }
    for name, text in outputs.items():
        manager.save_agent_output(
            project_id=PROJECT,
            session_id=SESSION,
            phase_num=2,
            agent_name=name,
            output_content=text,
            duration=30.2,
            model="gpt-4o",
            input_tokens=800,
            output_tokens=400,
            tools_used=["web_search"],
        )
    manager.save_checkpoint(
        project_id=PROJECT,
        session_id=SESSION,
        phase_num=2,
        status="completed",
        agents=[
            {
                "agent_name": name,
                "tokens": 1200,
                "input_tokens": 800,
                "output_tokens": 400,
                "cost": 0.01,
                "duration": 30.2,
            }
            for name in outputs
        ],
        started="2024-11-24T10:03:00Z",
        completed="2024-11-24T10:04:00Z",
        execution_mode="parallel",
    )
    manager.save_user_feedback(
        project_id=PROJECT,
        session_id=SESSION,
        phase_num=2,
        reviewed=True,
        approved=False,
        comments="Please dig deeper into the EU market.\nAlso check pricing.",
        requested_changes=["Add EU market data", "Compare pricing tiers"],
        action="retry",
        retry_count=1,
    )
    return manager


def show(manager: CheckpointManager) -> None:
    """Print what a person would want to see: where the files are and where things stand."""
    state = manager.load_session(PROJECT, SESSION)
    session_dir = Path(state["session_dir"])
    print(f"Session written to {session_dir}/")
    for path in sorted(session_dir.rglob("*.md")):
        print(f"  {path.relative_to(session_dir)}")
    print()
    print(f"Status:           {state['status']}")
    print(f"Current phase:    {state['current_phase']} ({state['current_phase_name']})")
    print(f"Completed phases: {state['completed_phases']}")
    print(f"Approved phases:  {manager.get_approved_phases(PROJECT, SESSION)}")
    metrics = state["metrics"]
    print(f"Tokens / cost:    {metrics['total_tokens']} / ${metrics['total_cost']:.4f}")
    outputs = manager.get_phase_outputs(PROJECT, SESSION, phase_nums=[1, 2])
    print(f"Phase 2 agents:   {', '.join(outputs[2])}")
    ok, errors = manager.validate_checkpoint(PROJECT, SESSION, 1)
    issues = manager.validate_session(PROJECT, SESSION)
    print(f"Validation:       phase 1 {'valid' if ok else errors}; session issues: {len(issues)}")
    print()
    print((session_dir / "session_manifest.md").read_text(encoding="utf-8"), end="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-dir", type=Path, default=Path("projects"))
    parser.add_argument("--fixed-clock", action="store_true", help="stamp every file 2024-11-24T10:00:00Z")
    args = parser.parse_args()
    show(run(args.base_dir, args.fixed_clock))


if __name__ == "__main__":
    main()
