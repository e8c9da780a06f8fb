"""What a reviewer writes outside haytham's fields (issue 25, item 4).

Text under a reviewer's own ``## Heading``, or left in ``## Review Status`` after deleting
the ``## User Comments`` heading, was silently not read ("Comments: none") and never reached
the agents. Now it is kept in the file, read as ``UserFeedback.notes`` and passed to the
agents after the comments. Comments or changes written while ``Reviewed: false`` stays get a
note that the review does not count yet: in ``validate``, ``status``, the editor loop and the
phase page. Real files, the real runner and command line, a script as $EDITOR.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli import P, S, editor, run

from haytham import CheckpointManager, PhaseRunner
from haytham.format import FEEDBACK
from haytham.format.workflow import IDEA_VALIDATION
from haytham.run.demo import DEMO_AGENTS
from haytham.run.runner import AgentContext, AgentReturn

SEND_BACK = """# User Feedback: Concept Expansion

## Review Status
- Reviewed: true
- Approved: false
- Timestamp: -
- Format: 1
Please name the buyer: my comment, whose heading I deleted.

## Requested Changes
- No changes requested

## Action Taken
- Action: retry
- Retry Count: 1

## Pricing
Charge per seat, not per project.
"""


def test_own_sections_and_stray_comments_reach_the_agents(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    seen: list[str] = []

    def concept(context: AgentContext) -> AgentReturn:
        seen.append(context.comments)
        return DEMO_AGENTS["concept_expansion"](context)  # type: ignore[return-value]

    runner = PhaseRunner(manager, IDEA_VALIDATION, {**DEMO_AGENTS, "concept_expansion": concept})
    assert runner.run(P, "s").status == "awaiting_review"
    path = manager.phase_dir(P, "s", 1) / "user_feedback.md"
    path.write_text(SEND_BACK)
    feedback = manager.load_feedback(P, "s", 1)
    assert feedback is not None and feedback.comments == ""
    assert feedback.notes == (
        "Please name the buyer: my comment, whose heading I deleted.\n\n"
        "### Pricing\nCharge per seat, not per project."
    )
    assert runner.run(P, "s").status == "awaiting_review"  # the retry ran with them
    assert seen[-1] == feedback.notes
    archived = manager.load_attempts(P, "s", 1)[0]
    assert archived.feedback is not None and "Charge per seat" in archived.feedback.notes
    assert "## Pricing" in (archived.directory / "user_feedback.md").read_text()  # never moved


def test_a_haytham_rewrite_keeps_the_reviewers_own_sections(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    runner = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS)
    runner.run(P, "s")
    path = manager.phase_dir(P, "s", 1) / "user_feedback.md"
    path.write_text(path.read_text() + "\n## Pricing\nCharge per seat.\n")
    manager.save_user_feedback(P, "s", 1, True, True, comments="Fine")
    text = path.read_text()
    assert text.endswith("## Pricing\nCharge per seat.\n")
    saved = manager.load_feedback(P, "s", 1)
    assert saved is not None and (saved.comments, saved.notes) == ("Fine", "### Pricing\nCharge per seat.")


def test_the_editor_says_what_it_read_of_a_reviewers_own_section(base: Path, tmp_path: Path) -> None:
    assert run(base, "demo", "--review", "manual").exit_code == 0
    body = """
    text = text.replace("Reviewed: false", "Reviewed: true").replace("Action: pending", "Action: retry")
    text += "\\n## Why\\nThe market is too small.\\n"
    """
    result = run(base, "feedback", P, S, "1", env=editor(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "Comments: none" in result.output
    assert (
        "Your own text (passed to the agents after the comments):\n    ### Why\n    The market is too small."
        in (result.output)
    )


# ------------------------------------------------------------- Reviewed: false


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def unflagged(base: Path) -> Path:
    """A phase awaiting review whose file has comments and a change but still says Reviewed: false."""
    assert run(base, "demo", "--review", "manual").exit_code == 0
    path = CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"
    text = path.read_text().replace("No comments provided", "Too vague.")
    path.write_text(text.replace("- No changes requested", "- Name the buyer"))
    return path


def reviewed_line(path: Path) -> int:
    return path.read_text().split("\n").index("- Reviewed: false") + 1


def test_validate_notes_comments_written_while_not_reviewed(base: Path, unflagged: Path) -> None:
    record, issues = FEEDBACK.read_path(unflagged)
    assert record is not None and record.reviewed is False
    assert [(i.line, i.field, i.severity) for i in issues] == [
        (reviewed_line(unflagged), "Reviewed", "warning")
    ]
    assert "(comments, requested changes) does not count yet" in issues[0].message
    result = run(base, "validate", str(base / P))
    assert result.exit_code == 0, result.output  # a warning, not an error
    assert f"user_feedback.md:{reviewed_line(unflagged)}: Reviewed: is false" in result.output
    assert "does not count yet" in result.output


def test_status_notes_it(base: Path, unflagged: Path) -> None:
    result = run(base, "status", P, S)
    assert result.exit_code == 0, result.output
    assert "does not count yet" in result.output


def test_the_editor_notes_it_when_the_saved_file_is_not_a_review(
    base: Path, unflagged: Path, tmp_path: Path
) -> None:
    body = 'text = text.replace("Too vague.", "Too vague, and no buyer.")\n'
    result = run(base, "feedback", P, S, "1", env=editor(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "Note: " in result.output and "does not count yet" in result.output


def test_the_page_notes_it(base: Path, unflagged: Path) -> None:
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")
    from starlette.testclient import TestClient

    from haytham.web.app import create_app

    with TestClient(create_app(str(base)), base_url="http://127.0.0.1") as client:
        page = client.get(f"/p/{P}/s/{S}/phase/1")
    assert page.status_code == 200
    assert 'id="review-not-counted"' in page.text
    assert "does not count yet" in page.text
