"""Every review goes through one write path and one rule (issue 23).

- A review made in ``$EDITOR`` (``haytham feedback P S N``, ``haytham review``) is saved by the
  manager's one transaction, so the manifest and the history say it at once; the person's
  text is kept byte for byte.
- ``Approved:`` is the reviewer's decision: ``Approved: false`` is never an approval, and a
  file that also says ``Action: approved`` is an error at its line, which the editor loop
  shows, ``validate`` reports and the runner stops on.
- Every review write (``save_user_feedback``, ``update_feedback``, ``save_phase``'s feedback,
  ``save_feedback_text``) makes a lifecycle move that ``lifecycle.check_move`` must allow a
  reviewer: the library, the command line and the page refuse the same things.

Each test runs the real command line on real files; editors are scripts given as $EDITOR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import P, S, editor, run, run_json
from test_cli_review import logging_editor, opened_on, snapshot, unstamped

from haytham import CheckpointManager, HaythamError, MoveRefusedError, StaleReviewError
from haytham.format import FEEDBACK, MANIFEST
from haytham.run.runner import next_step
from haytham.store import fs


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def awaiting(base: Path) -> Path:
    """A demo session stopped at phase 1's review gate: its user_feedback.md."""
    result = run(base, "demo", "--review", "manual")
    assert result.exit_code == 0, result.output
    return CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"


def manifest_row(base: Path, phase: int) -> str:
    """Phase ``phase``'s state as the manifest file on disk says it (not derived)."""
    path = CheckpointManager(base).session_dir(P, S) / "session_manifest.md"
    record, issues = MANIFEST.read_path(path)
    assert record is not None, issues
    return next(row.status for row in record.phases if row.number == phase)


APPROVE = """
text = text.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")
text = text.replace("No comments provided", "Clear and *well* argued.\\r\\nShip it.")
text += "\\n## My Notes\\nkept as I wrote it  \\n"
"""


# ----------------------------------------------- 1: the editor loop writes through the manager


@pytest.mark.parametrize("command", [("feedback", P, S, "1"), ("review",)])
def test_a_review_made_in_the_editor_reaches_the_manifest_and_the_history(
    base: Path, awaiting: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    env, log = logging_editor(tmp_path, APPROVE)
    assert manifest_row(base, 1) == "awaiting_review"
    result = run(base, *command, env=env)
    assert result.exit_code == 0, result.output
    (opened,) = opened_on(log)
    # the person's text, byte for byte (their CRLF inside the comments and trailing spaces too)
    written = opened.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")
    written = written.replace("No comments provided", "Clear and *well* argued.\r\nShip it.")
    saved = awaiting.read_bytes().decode()
    assert unstamped(saved) == written + "\n## My Notes\nkept as I wrote it  \n"
    assert "- Timestamp: -" not in saved  # haytham recorded when the review was made
    assert manifest_row(base, 1) == "approved"
    assert run_json(base, "list", "--awaiting-review")["sessions"] == []
    strict = run(base, "validate", "--strict")
    assert strict.exit_code == 0, strict.output
    manager = CheckpointManager(base)
    review = manager.history(P, S)[-1]
    assert (review.kind, review.phase_number) == ("review", 1)
    assert review.feedback_text == awaiting.read_bytes().decode()
    assert manager.load_manifest(P, S).history_head == review.entry_id
    assert "Next: phase 2 (Market Research) is ready to run" in result.output


def test_ten_reviews_in_the_editor_leave_nothing_awaiting_and_validate_strict_clean(
    base: Path, tmp_path: Path
) -> None:
    from haytham.run.demo import run_demo

    manager = CheckpointManager(base)
    sessions = [f"idea-{n:03}" for n in range(1, 11)]
    for session in sessions:
        run_demo(manager, session, review="manual")
    assert len(run_json(base, "list", "--awaiting-review")["sessions"]) == 10
    env, _ = logging_editor(tmp_path, APPROVE)
    assert run(base, "review", env=env).exit_code == 0
    assert run_json(base, "list", "--awaiting-review")["sessions"] == []
    assert run(base, "validate", "--strict").exit_code == 0


def test_a_file_changed_while_the_editor_was_open_is_theirs_and_nothing_of_yours_is_written(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    theirs = awaiting.read_text().replace("No comments provided", "Written by git meanwhile")
    env = editor(
        tmp_path,
        f"""
        Path({str(awaiting)!r}).write_text({theirs!r})
        text = text.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")
        """,
    )
    history = len(CheckpointManager(base).history(P, S))
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 1
    assert "changed while you edited it; your text was not saved" in result.stderr
    assert awaiting.read_text() == theirs
    assert len(CheckpointManager(base).history(P, S)) == history
    assert manifest_row(base, 1) == "awaiting_review"


def test_save_feedback_text_keeps_the_text_and_refuses_a_changed_file(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    version, _ = fs.file_version(awaiting)
    text = (
        awaiting.read_text()
        .replace("Reviewed: false", "Reviewed: yes")
        .replace("Approved: false", "Approved: yes")
    )
    awaiting.write_text(awaiting.read_text() + "\n<!-- a note -->\n")
    before = snapshot(base)
    with pytest.raises(StaleReviewError):
        manager.save_feedback_text(P, S, 1, text, expected=version)
    assert snapshot(base) == before
    understood = manager.save_feedback_text(P, S, 1, text)
    assert (understood.reviewed, understood.approved, understood.action) == (True, True, "approved")
    assert unstamped(awaiting.read_text()) == text and understood.timestamp is not None
    assert manager.state(P, S).phase(1).state == "approved"
    same = snapshot(base)
    assert manager.save_feedback_text(P, S, 1, text) == understood  # the same text again: no write
    assert snapshot(base) == same


def test_save_feedback_text_refuses_a_text_that_does_not_read(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    before = snapshot(base)
    with pytest.raises(HaythamError) as raised:
        manager.save_feedback_text(P, S, 1, awaiting.read_text().replace("Approved: false", "Approved: nope"))
    assert isinstance(raised.value, ValueError)
    assert (raised.value.path, raised.value.line, raised.value.field) == (awaiting, 5, "Approved")
    assert snapshot(base) == before


# ------------------------------------------ 2: Approved is the reviewer's decision, not Action

TURN_INTO_REJECTION = """
if "<!-- haytham:" in text:
    banners.append(text.split("-->", 1)[0])
    text = text.replace("Action: approved", "Action: retry")
else:
    text = text.replace("Approved: true", "Approved: false")
    text = text.replace("Fine for now", "Who pays? Name them.")
    text = text.replace("- No changes requested", "- Change 1: Name the paying customer")
"""


def test_turning_an_approval_into_a_rejection_in_the_editor_is_a_mistake_until_action_agrees(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    approved = run(base, "feedback", P, S, "1", "--approve", "--comment", "Fine for now")
    assert approved.exit_code == 0, approved.output
    banners = tmp_path / "banners.json"
    env, log = logging_editor(
        tmp_path,
        f"import json\nbanners = []\n{TURN_INTO_REJECTION}\n"
        f"if banners:\n    open({str(banners)!r}, 'w').write(json.dumps(banners))\n",
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    _, second = opened_on(log)
    (banner,) = json.loads(banners.read_text())
    line = second.splitlines().index("- Action: approved") + 1  # counted in the editor's text
    assert f"line {line}: Action: 'approved' contradicts Approved: false" in banner
    assert "and Approved is the reviewer's decision" in banner
    assert "approved: no" in result.output and "action: retry" in result.output
    assert "ready to run" not in result.output
    manager = CheckpointManager(base)
    assert manager.state(P, S).phase(1).state == "sent_back"
    assert next_step(manager, P, S).reason == "sent_back"


def test_quitting_with_approved_false_and_action_approved_saves_nothing_and_runs_nothing(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    assert run(base, "feedback", P, S, "1", "--approve", "--comment", "Fine for now").exit_code == 0
    before = awaiting.read_bytes()
    env, log = logging_editor(
        tmp_path,
        """
        if "<!-- haytham:" not in text:
            text = text.replace("Approved: true", "Approved: false")
            text = text.replace("- No changes requested", "- Change 1: Name the paying customer")
        """,
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 1
    assert len(opened_on(log)) == 2
    assert "ready to run" not in result.output
    assert awaiting.read_bytes() == before
    assert CheckpointManager(base).state(P, S).phase(1).state == "approved"


def test_a_hand_edit_with_approved_false_and_action_approved_stops_the_runner(
    base: Path, awaiting: Path
) -> None:
    assert run(base, "feedback", P, S, "1", "--approve").exit_code == 0
    awaiting.write_text(awaiting.read_text().replace("Approved: true", "Approved: false"))
    action_line = awaiting.read_text().splitlines().index("- Action: approved") + 1
    record, issues = FEEDBACK.read_path(awaiting)
    assert record is None
    assert [(i.line, i.field) for i in issues if i.is_error] == [(action_line, "Action")]
    checked = run(base, "validate")
    assert checked.exit_code == 1
    assert f"{awaiting}:{action_line}: Action: 'approved' contradicts Approved: false" in checked.output
    manager = CheckpointManager(base)
    step = next_step(manager, P, S)
    assert (step.action, step.reason, step.phase) == ("fix", "invalid_feedback", 1)
    resumed = run(base, "resume", P, S)
    assert manager.load_checkpoints(P, S).keys() == {1}, resumed.output  # phase 2 did not run
    assert str(awaiting) in resumed.output


def test_approved_false_is_never_an_approval_whatever_the_action() -> None:
    from haytham.records import FEEDBACK_ACTIONS, UserFeedback
    from haytham.store import lifecycle

    for action in FEEDBACK_ACTIONS:
        feedback = UserFeedback("p", True, False, None, "", (), action, 0)  # type: ignore[arg-type]
        assert lifecycle.verdict(feedback) != "approved", action


def test_the_library_refuses_to_write_approved_false_with_action_approved(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    before = snapshot(base)
    with pytest.raises(ValueError, match="approved") as raised:
        manager.save_user_feedback(P, S, 1, reviewed=True, approved=False, comments="No", action="approved")
    assert isinstance(raised.value, HaythamError)
    assert snapshot(base) == before


# ------------------------------------------------ 7: every review write checks the lifecycle move


def test_the_library_refuses_to_approve_a_phase_that_never_ran(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    before = snapshot(base)
    with pytest.raises(MoveRefusedError) as raised:
        manager.save_user_feedback(P, S, 2, reviewed=True, approved=True)
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, HaythamError)
    assert "phase 2 (Market Research)" in str(error)
    assert "a phase that is pending cannot be approved" in str(error)
    assert error.path == manager.session_dir(P, S) / "phase_2_market_research" / "user_feedback.md"
    assert snapshot(base) == before
    with pytest.raises(MoveRefusedError):
        manager.save_user_feedback(P, S, 2, reviewed=True, approved=False, action="retry")
    with pytest.raises(MoveRefusedError):
        manager.save_feedback_text(P, S, 2, awaiting.read_text().replace("Reviewed: false", "Reviewed: true"))
    assert snapshot(base) == before
    manager.save_user_feedback(P, S, 2, reviewed=False, approved=False, action="pending")  # not a move
    assert manager.load_feedback(P, S, 2) is not None


def test_save_phase_and_update_feedback_check_the_move_too(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    before = snapshot(base)
    with pytest.raises(MoveRefusedError, match="a phase that is failed cannot be approved"):
        manager.save_phase(
            P,
            S,
            2,
            {"market_intelligence": "x"},
            status="failed",
            feedback={"reviewed": True, "approved": True},
        )
    assert snapshot(base) == before
    manager.save_phase(
        P,
        S,
        2,
        {"market_intelligence": "x"},
        status="in_progress",
        feedback={"reviewed": False, "approved": False, "action": "pending"},
    )
    with pytest.raises(MoveRefusedError, match="a phase that is in progress cannot be approved"):
        manager.update_feedback(P, S, 2, reviewed=True, approved=True, action="approved")
    assert manager.load_feedback(P, S, 2).reviewed is False  # type: ignore[union-attr]
    # a failed phase with the blank review is one the runner parked for a person
    # (on_exhausted: await_review, docs/lifecycle.md): it awaits its review, which may approve it
    manager.save_phase(P, S, 2, {"market_intelligence": "x"}, status="failed")
    assert manager.state(P, S).phase(2).state == "awaiting_review"
    manager.update_feedback(P, S, 2, reviewed=True, approved=True, action="approved")
    assert manager.state(P, S).phase(2).state == "approved"
    # save_phase's feedback is checked against the phase as its checkpoint leaves it: completed
    manager.save_phase(P, S, 3, {"competitor_analysis": "y"}, feedback={"reviewed": True, "approved": True})
    assert manager.state(P, S).phase(3).state == "approved"


def test_the_cli_and_the_library_refuse_the_same_move_with_the_same_words(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    manager.save_phase(P, S, 2, {"market_intelligence": "x"}, status="failed")
    before = snapshot(base)
    with pytest.raises(MoveRefusedError) as raised:
        manager.save_user_feedback(P, S, 2, reviewed=True, approved=True)
    refused = run(base, "feedback", P, S, "2", "--approve")
    assert refused.exit_code == 1
    assert refused.output == f"Error: {raised.value}\n"
    assert snapshot(base) == before


def test_re_saving_a_review_and_changing_ones_mind_before_the_next_run_keep_working(
    base: Path, awaiting: Path
) -> None:
    manager = CheckpointManager(base)
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True, comments="Good")
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True, comments="Good, and clear")
    assert manager.state(P, S).phase(1).state == "approved"
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=False, comments="No", action="retry")
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=False, comments="No, really", action="retry")
    assert manager.state(P, S).phase(1).state == "sent_back"
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True, comments="On second thought, yes")
    assert manager.state(P, S).phase(1).state == "approved"
    assert run(base, "feedback", P, S, "1", "--reject", "--comment", "No after all").exit_code == 0
    assert run(base, "feedback", P, S, "1", "--approve").exit_code == 0
    assert manager.state(P, S).phase(1).state == "approved"
