"""Forking from any history entry: the new session starts at the entry's phase, with the
phases before it as they were at that entry (their attempt then, its outputs and review),
and is refused when the outputs of that moment are no longer on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from small_workflow import PROJECT, Agents, manager_for, new_session, runner_for

from haytham.cli.main import cli
from haytham.errors import InvalidArgumentError, NotFoundError
from haytham.records import HistoryEntry
from haytham.store.manager import CheckpointManager

S = "s-1"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """A session whose phase 2 was approved, then sent back after every phase completed and run
    again: phase 2 is at attempt 2, attempt 1 is archived, phases 3 and 4 were re-run."""
    manager = manager_for(tmp_path)
    new_session(manager, S)
    runner = runner_for(manager, Agents())
    assert runner.run(PROJECT, S).status == "awaiting_review"
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True)
    assert runner.run(PROJECT, S).status == "completed"
    manager.save_user_feedback(
        PROJECT, S, 2, reviewed=True, approved=False, comments="deeper", action="retry"
    )
    assert runner.run(PROJECT, S).status == "awaiting_review"
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True)
    assert runner.run(PROJECT, S).status == "completed"
    return manager


def first_completed(manager: CheckpointManager, phase: int, attempt: int) -> HistoryEntry:
    return next(
        e
        for e in manager.history(PROJECT, S, phase=phase, status="completed")
        if e.attempt == attempt and e.kind == "checkpoint"
    )


def test_a_fork_from_an_entry_holds_the_earlier_phases_as_they_were_then(manager: CheckpointManager) -> None:
    entry = first_completed(manager, 3, 1)  # phase 3 of the first round, built on attempt 1 of phase 2
    target = manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id[:8])
    first_attempt = manager.load_attempts(PROJECT, S, 2)[0]
    assert first_attempt.number == 1
    assert manager.get_phase_outputs(PROJECT, "s-2", [2])[2] == first_attempt.outputs
    assert manager.get_phase_outputs(PROJECT, "s-2", [1]) == manager.get_phase_outputs(PROJECT, S, [1])
    assert manager.load_checkpoint(PROJECT, "s-2", 2).retry_count == 0
    assert not (target / "phase_2_research" / "attempts").exists()  # no attempt came before attempt 1
    view = manager.state(PROJECT, "s-2")
    assert [p.state for p in view.phases] == ["completed", "approved", "pending", "pending"]
    assert view.current is not None and view.current.number == 3
    manifest = manager.load_manifest(PROJECT, "s-2")
    assert manifest.forked_from == "s-1 at phase 3"
    reasons = {e.reason for e in manager.history(PROJECT, "s-2")}
    assert reasons == {f"forked from s-1 at entry {entry.entry_id}"}
    assert manager.validate_session(PROJECT, "s-2") == []


def test_a_fork_from_an_entry_resumes_on_the_outputs_of_that_moment(manager: CheckpointManager) -> None:
    entry = first_completed(manager, 3, 1)
    manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id)
    assert runner_for(manager, Agents()).run(PROJECT, "s-2").status == "completed"
    old_plan = manager.load_attempts(PROJECT, S, 3)[0].outputs
    assert manager.get_phase_outputs(PROJECT, "s-2", [3])[3] == old_plan  # same inputs, same output
    assert manager.get_phase_outputs(PROJECT, S, [3])[3] != old_plan


def test_a_fork_from_a_later_entry_takes_the_current_attempt_and_its_older_attempts(
    manager: CheckpointManager,
) -> None:
    entry = first_completed(manager, 4, 2)
    target = manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id)
    assert manager.get_phase_outputs(PROJECT, "s-2", [2, 3]) == manager.get_phase_outputs(PROJECT, S, [2, 3])
    assert (target / "phase_2_research" / "attempts" / "1" / "scout.md").is_file()
    assert [a.number for a in manager.load_attempts(PROJECT, "s-2", 2)] == [1, 2]
    assert manager.state(PROJECT, "s-2").current is not None


def test_outputs_no_longer_on_disk_are_refused_and_nothing_is_written(manager: CheckpointManager) -> None:
    entry = first_completed(manager, 3, 1)
    (manager.phase_dir(PROJECT, S, 2) / "attempts" / "1" / "scout.md").unlink()
    with pytest.raises(NotFoundError, match=r"phase 2 had then \(attempt 1.*no longer on disk.*missing"):
        manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id)
    assert not manager.session_dir(PROJECT, "s-2").exists()


def test_outputs_changed_since_are_refused(manager: CheckpointManager) -> None:
    entry = first_completed(manager, 3, 2)
    manager.save_agent_output(PROJECT, S, 1, "writer", "rewritten by hand\n")
    with pytest.raises(NotFoundError, match=r"phase 1 had then .* changed since"):
        manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id)
    assert not manager.session_dir(PROJECT, "s-2").exists()


def test_a_phase_not_started_at_the_entry_has_no_files_in_the_fork(manager: CheckpointManager) -> None:
    entry = next(e for e in manager.history(PROJECT, S) if e.phase_number == 2)
    manager.fork_session(PROJECT, S, "s-2", from_entry=entry.entry_id)
    assert [p.state for p in manager.state(PROJECT, "s-2").phases] == ["completed", *["pending"] * 3]


def test_from_phase_still_works_and_both_or_neither_is_refused(manager: CheckpointManager) -> None:
    manager.fork_session(PROJECT, S, "by-phase", 3)
    manifest = manager.load_manifest(PROJECT, "by-phase")
    assert manifest.forked_from == "s-1 at phase 3"
    # the manifest written with the fork counts the copied review: phase 2 is approved on disk
    assert [row.status for row in manifest.phases] == ["completed", "approved", "pending", "pending"]
    assert manager.validate_session(PROJECT, "by-phase") == []
    entry = first_completed(manager, 3, 1)
    with pytest.raises(InvalidArgumentError, match="exactly one of from_phase and from_entry"):
        manager.fork_session(PROJECT, S, "s-2", 3, from_entry=entry.entry_id)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        manager.fork_session(PROJECT, S, "s-2")
    with pytest.raises(NotFoundError, match="no history entry"):
        manager.fork_session(PROJECT, S, "s-2", from_entry="ffffffffffff")
    assert not manager.session_dir(PROJECT, "s-2").exists()


def test_the_fork_command_takes_an_entry(manager: CheckpointManager) -> None:
    entry = first_completed(manager, 3, 1)
    base = ["--base-dir", str(manager.base_dir)]
    result = CliRunner().invoke(cli, ["fork", PROJECT, S, "s-2", "--from-entry", entry.entry_id[:6], *base])
    assert result.exit_code == 0, result.output
    assert f"at entry {entry.entry_id} (phase 3) into acme/s-2" in result.output
    assert manager.state(PROJECT, "s-2").current is not None
    both = CliRunner().invoke(
        cli, ["fork", PROJECT, S, "s-3", "--from-phase", "2", "--from-entry", entry.entry_id, *base]
    )
    assert both.exit_code == 2 and "exactly one of --from-phase N and --from-entry ID" in both.output
    neither = CliRunner().invoke(cli, ["fork", PROJECT, S, "s-3", *base])
    assert neither.exit_code == 2
    assert not manager.session_dir(PROJECT, "s-3").exists()
