"""Every review goes through one write path and one rule (issue 23).

- ``Approved:`` is the reviewer's decision: ``Approved: false`` is never an approval, and a
  file that also says ``Action: approved`` is an error at its line, which the editor loop
  shows, ``validate`` reports and the runner stops on.

Each test runs the real command line on real files; editors are scripts given as $EDITOR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import P, S, run
from test_cli_review import logging_editor, opened_on, snapshot

from haytham import CheckpointManager, HaythamError
from haytham.format import FEEDBACK
from haytham.run.runner import next_step


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def awaiting(base: Path) -> Path:
    """A demo session stopped at phase 1's review gate: its user_feedback.md."""
    result = run(base, "demo", "--review", "manual")
    assert result.exit_code == 0, result.output
    return CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"


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
