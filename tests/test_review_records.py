"""What a review records (issue 25): who reviewed and why, when, and what a reviewer wrote.

Who and why: ``Reviewer`` and ``Justification`` of user_feedback.md's Review Status, written
by ``haytham feedback`` (``--reviewer``, ``--justification``), the editor loop and the page
(the server's ``--reviewer``), kept by the history entry of the review and the export.
When: every review haytham writes records its time in ``Timestamp`` (the editor loop too).
Each test runs the real command line (or the real application) on real files; editors are
scripts given as $EDITOR.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_cli import P, S, editor, run

from haytham import CheckpointManager, DocumentError
from haytham.format import FEEDBACK
from haytham.format.reader import decode

ALICE = "Alice Smith <alice@example.com>"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def awaiting(base: Path) -> Path:
    """A demo session stopped at phase 1's review gate; its review file."""
    result = run(base, "demo", "--review", "manual")
    assert result.exit_code == 0, result.output
    return CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"


def field(text: str, label: str) -> str | None:
    """The value of the ``- Label: value`` line of ``text``, None when it has none."""
    found = re.search(rf"^- {label}: (.*)$", text, re.M)
    return None if found is None else found.group(1)


# ------------------------------------------------------------------ who and why


def test_feedback_records_the_reviewer_and_the_justification(base: Path, awaiting: Path) -> None:
    result = run(
        base,
        "feedback",
        P,
        S,
        "1",
        "--approve",
        "--reviewer",
        ALICE,
        "--justification",
        "The numbers check out",
    )
    assert result.exit_code == 0, result.output
    text = awaiting.read_text()
    assert field(text, "Reviewer") == ALICE
    assert field(text, "Justification") == "The numbers check out"
    assert f"Reviewer: {ALICE}" in result.output
    assert "Justification: The numbers check out" in result.output
    manager = CheckpointManager(base)
    feedback = manager.load_feedback(P, S, 1)
    assert feedback is not None
    assert (feedback.reviewer, feedback.justification) == (ALICE, "The numbers check out")
    # the history entry of the review keeps them: it is the file's text
    entry = next(e for e in reversed(manager.history(P, S)) if e.kind == "review")
    assert entry.feedback_text == text
    # and the export includes them: it holds every file's exact text
    exported = run(base, "export", P, S)
    assert exported.exit_code == 0, exported.output
    files = json.loads(exported.stdout)["files"]
    review_files = [
        t for name, t in files.items() if name.endswith("/user_feedback.md") and "Reviewed: true" in t
    ]
    assert review_files == [text]
    assert any(f"- Reviewer: {ALICE}" in t for name, t in files.items() if name.startswith("history/"))


def test_the_reviewer_comes_from_the_environment_without_the_option(base: Path, awaiting: Path) -> None:
    result = run(
        base,
        "feedback",
        P,
        S,
        "1",
        "--reject",
        "--comment",
        "Redo",
        env={"HAYTHAM_REVIEWER": "bob@example.com"},
    )
    assert result.exit_code == 0, result.output
    text = awaiting.read_text()
    assert field(text, "Reviewer") == "<bob@example.com>"
    assert field(text, "Justification") is None  # none given: no line


def test_a_reviewer_that_names_nobody_is_refused(base: Path, awaiting: Path) -> None:
    before = awaiting.read_bytes()
    result = run(base, "feedback", P, S, "1", "--approve", "--reviewer", "<>")
    assert result.exit_code == 2
    assert "names no reviewer" in result.output
    assert awaiting.read_bytes() == before


def test_a_hand_written_reviewer_is_read_and_a_bad_one_is_named_at_its_line(awaiting: Path) -> None:
    text = awaiting.read_text().replace("- Format:", f"- Reviewer: {ALICE}\n- Justification: fine\n- Format:")
    record, issues = FEEDBACK.read(text, awaiting)
    assert issues == []
    assert record is not None and (record.reviewer, record.justification) == (ALICE, "fine")
    bad = text.replace(ALICE, "Alice <a@x> <b@y>")
    record, issues = FEEDBACK.read(bad, awaiting)
    assert record is None
    line = bad.split("\n").index("- Reviewer: Alice <a@x> <b@y>") + 1
    assert [(i.line, i.field) for i in issues] == [(line, "Reviewer")]
    assert "names no reviewer" in issues[0].message


def test_an_older_file_without_the_fields_reads_with_none(awaiting: Path) -> None:
    record = FEEDBACK.parse(decode(awaiting.read_bytes(), awaiting), awaiting)
    assert (record.reviewer, record.justification) == (None, None)
    assert "Reviewer" not in awaiting.read_text()  # the blank template names nobody


def test_the_library_refuses_a_reviewer_of_the_wrong_type(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    with pytest.raises(ValueError, match="reviewer must be a string"):
        manager.save_user_feedback(P, S, 1, True, True, reviewer=42)  # type: ignore[arg-type]


# ------------------------------------------------------------ the editor loop


APPROVE = """
text = text.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")
text = text.replace("Action: pending", "Action: approved")
"""


def test_an_editor_review_records_its_time_and_reviewer(base: Path, awaiting: Path, tmp_path: Path) -> None:
    template = awaiting.read_text()
    env = {**editor(tmp_path, APPROVE), "HAYTHAM_REVIEWER": ALICE}
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    text = awaiting.read_text()
    stamp = field(text, "Timestamp")
    assert stamp is not None and stamp != "-"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", stamp)
    assert field(text, "Reviewer") == ALICE
    feedback = CheckpointManager(base).load_feedback(P, S, 1)
    assert feedback is not None and feedback.timestamp == stamp and feedback.reviewer == ALICE
    # every other byte is the person's: only the two fields differ from what they saved
    person = template.replace("Reviewed: false", "Reviewed: true").replace(
        "Approved: false", "Approved: true"
    )
    person = person.replace("Action: pending", "Action: approved")
    assert text == person.replace("- Timestamp: -", f"- Timestamp: {stamp}").replace(
        "- Format: 1", f"- Reviewer: {ALICE}\n- Format: 1"
    )


def test_an_editor_review_keeps_the_reviewer_and_time_a_person_wrote(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    body = APPROVE + (
        'text = text.replace("- Timestamp: -", "- Timestamp: 2030-01-02T03:04:05Z\\n- Reviewer: Carol")\n'
    )
    env = {**editor(tmp_path, body), "HAYTHAM_REVIEWER": ALICE}
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    text = awaiting.read_text()
    assert (field(text, "Timestamp"), field(text, "Reviewer")) == ("2030-01-02T03:04:05Z", "Carol")


def test_save_feedback_text_of_a_blank_template_stamps_nothing(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    text = awaiting.read_text().replace("No comments provided", "thinking about it")
    saved = manager.save_feedback_text(P, S, 1, text, reviewer=ALICE)
    assert awaiting.read_text() == text  # not a review: the person's bytes exactly
    assert (saved.timestamp, saved.reviewer) == (None, None)
    with pytest.raises(DocumentError):
        manager.save_feedback_text(P, S, 1, text.replace("Reviewed: false", "Reviewed: nope"))


# --------------------------------------------------------------------- the page


def test_the_page_records_the_servers_reviewer_and_the_justification(base: Path, awaiting: Path) -> None:
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")
    from starlette.testclient import TestClient

    from haytham.format.reviewer import parse_reviewer
    from haytham.web.app import create_app

    url = f"/p/{P}/s/{S}/phase/1"
    with TestClient(
        create_app(str(base), reviewer=parse_reviewer(ALICE)), base_url="http://127.0.0.1"
    ) as client:
        page = client.get(url).text
        assert 'name="justification"' in page
        assert "Alice Smith &lt;alice@example.com&gt;" in page  # who the review will be recorded as
        fields = dict(re.findall(r'name="(csrf|version)" value="([^"]*)"', page))
        data = {
            **fields,
            "decision": "approve",
            "comments": "",
            "changes": "",
            "justification": " Sound plan ",
        }
        response = client.post(url + "/review", data=data)
        assert response.status_code == 200, response.text
        text = awaiting.read_text()
        assert (field(text, "Reviewer"), field(text, "Justification")) == (ALICE, "Sound plan")
        assert field(text, "Timestamp") not in (None, "-")
        shown = client.get(url).text
        assert '<span id="review-reviewer">Alice Smith &lt;alice@example.com&gt;</span>' in shown
        assert '<q id="review-justification">Sound plan</q>' in shown


def test_serve_takes_the_reviewer_option() -> None:
    from click.testing import CliRunner

    from haytham.cli.main import cli

    assert "--reviewer" in CliRunner().invoke(cli, ["serve", "--help"]).output
