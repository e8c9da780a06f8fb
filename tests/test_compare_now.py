"""Comparing a history entry with the session as it is now: the entry's phase then, with
that phase now (``compare(entry, (manager, project, session))`` and ``haytham diff
PROJECT/SESSION@ENTRY PROJECT/SESSION``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from small_workflow import PROJECT, Agents, manager_for, new_session, runner_for

from haytham.cli.main import cli
from haytham.compare import compare
from haytham.errors import InvalidArgumentError
from haytham.records import HistoryEntry
from haytham.store.manager import CheckpointManager

S = "s-1"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """Phase 2 approved, then sent back with comments and run again (attempt 2)."""
    manager = manager_for(tmp_path)
    new_session(manager, S)
    runner = runner_for(manager, Agents())
    runner.run(PROJECT, S)
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True)
    runner.run(PROJECT, S)
    manager.save_user_feedback(
        PROJECT, S, 2, reviewed=True, approved=False, comments="deeper", action="retry"
    )
    assert runner.run(PROJECT, S).status == "awaiting_review"
    return manager


def completed(manager: CheckpointManager, phase: int, attempt: int) -> HistoryEntry:
    return next(
        e for e in manager.history(PROJECT, S, phase=phase, status="completed") if e.attempt == attempt
    )


def test_an_entry_of_an_earlier_attempt_differs_from_the_phase_now(manager: CheckpointManager) -> None:
    entry = completed(manager, 2, 1)
    comparison = compare(entry, (manager, PROJECT, S))
    assert comparison.metadata["attempt"] == (1, 2)
    assert "timestamp" not in comparison.metadata and "reason" not in comparison.metadata
    assert [(a.agent, a.change) for a in comparison.agents] == [("scout", "changed"), ("analyst", "changed")]
    scout = comparison.agents[0].diff
    assert "-attempt 1; comments: -" in scout and "+attempt 2; comments: deeper" in scout
    assert comparison.status is None  # both completed checkpoints


def test_the_newest_entry_of_the_phase_is_the_same_as_now(manager: CheckpointManager) -> None:
    entry = completed(manager, 2, 2)
    assert compare(entry, (manager, PROJECT, S)).same


def test_either_order_and_the_status_of_a_phase_reset_since(manager: CheckpointManager) -> None:
    entry = completed(manager, 3, 1)  # phase 3 is now stale and not run again: still attempt 1
    forward = compare(entry, (manager, PROJECT, S))
    backward = compare((manager, PROJECT, S), entry)
    assert forward.same and backward.same
    manager.archive_from(PROJECT, S, 3)  # phase 3 runs again: attempt 2, pending (not started), no outputs
    now = compare(entry, (manager, PROJECT, S))
    assert now.status == ("completed", "pending")
    assert [(a.agent, a.change) for a in now.agents] == [("planner", "removed")]
    assert compare((manager, PROJECT, S), entry).status == ("pending", "completed")


def test_without_the_entrys_outputs_on_disk_both_sides_compare_agent_rows(manager: CheckpointManager) -> None:
    entry = completed(manager, 2, 1)
    attempt = manager.phase_dir(PROJECT, S, 2) / "attempts" / "1"
    for path in attempt.iterdir():
        path.unlink()
    attempt.rmdir()
    comparison = compare(entry, (manager, PROJECT, S))
    assert [a.agent for a in comparison.agents] == ["scout", "analyst"]
    assert all("status: completed" in a.diff or a.change == "same" for a in comparison.agents)


def test_outputs_are_only_for_two_entries(manager: CheckpointManager) -> None:
    with pytest.raises(InvalidArgumentError, match="only for comparing two history entries"):
        compare(completed(manager, 2, 1), (manager, PROJECT, S), outputs=({}, {}))


def test_the_diff_command_compares_an_entry_with_the_session_now(manager: CheckpointManager) -> None:
    entry = completed(manager, 2, 1)
    base = ["--base-dir", str(manager.base_dir)]
    result = CliRunner().invoke(cli, ["diff", f"{PROJECT}/{S}@{entry.entry_id[:7]}", f"{PROJECT}/{S}", *base])
    assert result.exit_code == 0, result.output
    assert "attempt: 1 -> 2" in result.output
    assert "+attempt 2; comments: deeper" in result.output
    data = json.loads(
        CliRunner()
        .invoke(cli, ["diff", f"{PROJECT}/{S}", f"{PROJECT}/{S}@{entry.entry_id}", "--json", *base])
        .output
    )
    assert data["metadata"]["attempt"] == [2, 1]
    newest = completed(manager, 2, 2)
    same = CliRunner().invoke(cli, ["diff", f"{PROJECT}/{S}@{newest.entry_id}", f"{PROJECT}/{S}", *base])
    assert same.exit_code == 0 and "No differences" in same.output
    refused = CliRunner().invoke(cli, ["diff", f"{PROJECT}/{S}:2#1", f"{PROJECT}/{S}", *base])
    assert refused.exit_code == 2 and "or an entry with a session as it is now" in refused.output
