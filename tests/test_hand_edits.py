"""Hand-edited user_feedback.md files: every reasonable spelling understood, every
unreasonable one explained, and a rewrite by haytham keeps everything a person wrote."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_cli import run

from haytham import CheckpointManager, DocumentError
from haytham.analytics import summarize
from haytham.format import FEEDBACK
from haytham.format.document import to_json
from haytham.format.feedback import rewrite_fields
from haytham.format.reader import decode

CORPUS = Path(__file__).resolve().parent / "handedits"
CASES = sorted(p.stem for p in CORPUS.glob("*.md") if p.name != "README.md")
VALID = [c for c in CASES if "record" in json.loads((CORPUS / f"{c}.expected.json").read_text())]


def expected(case: str) -> dict[str, object]:
    return json.loads((CORPUS / f"{case}.expected.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_corpus_covers_good_and_bad_files() -> None:
    assert len(VALID) >= 10
    assert len(CASES) - len(VALID) >= 5


@pytest.mark.parametrize("case", CASES)
def test_hand_edited_file_reads_as_expected(case: str) -> None:
    path = Path(f"{case}.md")
    record, issues = FEEDBACK.read(decode((CORPUS / path).read_bytes(), path), path)
    want = expected(case)
    if "record" in want:
        assert [str(issue) for issue in issues] == [f"{path}:{w}" for w in want.get("warnings", [])]
        assert all(issue.severity == "warning" for issue in issues)
        assert to_json(record) == want["record"]
    else:
        assert record is None
        assert str(issues[0]) == f"{path}:{want['error']}"
        with pytest.raises(DocumentError):
            FEEDBACK.parse(decode((CORPUS / path).read_bytes(), path), path)


@pytest.mark.parametrize("case", VALID)
def test_rewriting_action_fields_keeps_every_other_byte(case: str) -> None:
    raw = (CORPUS / f"{case}.md").read_bytes().decode("utf-8")
    text = rewrite_fields(raw, {"action": "rejected", "retry_count": 7})
    record = FEEDBACK.parse(decode(text.encode("utf-8"), None))
    want = dict(expected(case)["record"])  # type: ignore[call-overload]
    assert to_json(record) == {**want, "action": "rejected", "retry_count": 7}
    before, after = raw.split("\n"), text.split("\n")
    kept = [line for line in before if not _is_action_line(line)]
    remaining = iter(after)
    assert all(line in remaining for line in kept), "a person's line was lost or moved"
    added = [line for line in after if line not in kept]
    assert all(_is_action_line(line) or line.strip() in ("", "## Action Taken") for line in added), added


def _is_action_line(line: str) -> bool:
    label = line.strip("\r").split(":")[0].strip(" \t-*+").casefold()
    return label in ("action", "retry count")


def test_update_feedback_through_the_manager_keeps_bom_crlf_comments_and_notes(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session("p", "s", "u")
    ran = [{"agent_name": "market_intelligence", "status": "completed"}]
    manager.save_checkpoint("p", "s", 2, "completed", ran)  # a review is for a phase that ran
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "crlf_and_bom.md", target)
    before = target.read_bytes()
    record = manager.update_feedback("p", "s", 2, action="rejected", retry_count=2)
    after = target.read_bytes()
    assert (record.action, record.retry_count) == ("rejected", 2)
    assert after.startswith(b"\xef\xbb\xbf")
    assert (
        after.replace(b"- Action: rejected\r\n- Retry Count: 2", b"- Action: retry\r\n- Retry Count: 1")
        == before
    )
    shutil.copyfile(CORPUS / "extra_sections_and_notes.md", target)
    manager.update_feedback("p", "s", 2, action="retry", retry_count=1)
    text = target.read_text()
    assert "## My notes\n- call Ana on Friday\n- the TAM figure looks high\n" in text
    assert "PS: no rush.\n" in text
    assert text.endswith("## Action Taken\n- Action: retry\n- Retry Count: 1\n")


def test_update_feedback_leaves_a_broken_file_alone(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session("p", "s", "u")
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "approved_maybe.md", target)
    before = target.read_bytes()
    with pytest.raises(DocumentError, match="'maybe' is not a boolean"):
        manager.update_feedback("p", "s", 2, action="approved")
    assert target.read_bytes() == before


def test_an_unresolved_merge_in_the_comments_is_reported_at_its_line(tmp_path: Path) -> None:
    text = (
        "# User Feedback: Market Research\n\n## Review Status\n- Reviewed: true\n- Approved: false\n\n"
        "## User Comments\n<<<<<<< HEAD\nMore EU data.\n=======\nLooks fine.\n>>>>>>> theirs\n"
    )
    record, issues = FEEDBACK.read(text, Path("user_feedback.md"))
    assert record is None
    assert [(i.line, i.message) for i in issues[:2]] == [
        (8, "'<<<<<<< HEAD' is a git conflict marker: resolve the merge"),
        (12, "'>>>>>>> theirs' is a git conflict marker: resolve the merge"),
    ]
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session("p", "s", "u")
    manager.save_checkpoint(
        "p", "s", 1, "completed", [{"agent_name": "concept_expansion", "status": "completed"}]
    )
    manager.save_user_feedback("p", "s", 1, True, False, comments="<<<<<<< not a merge\nquoted text")
    assert manager.load_feedback("p", "s", 1).comments == "<<<<<<< not a merge\nquoted text"  # type: ignore[union-attr]


# ---------------------------------------------------------------- a person's lines survive every rewrite

KEEPING = [c for c in VALID if "kept" in expected(c)]


def kept_lines(case: str) -> list[str]:
    """The fixture's lines that are a person's own, exactly as in the file (CR included)."""
    lines = (CORPUS / f"{case}.md").read_bytes().decode("utf-8").split("\n")
    want = expected(case)["kept"]
    found = [line for line in lines if line.rstrip("\r") in want]
    assert [line.rstrip("\r") for line in found] == want
    return found


def assert_kept(case: str, after: bytes) -> None:
    before = (CORPUS / f"{case}.md").read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") == before.startswith(b"\xef\xbb\xbf")
    remaining = iter(after.decode("utf-8").split("\n"))
    missing = [line for line in kept_lines(case) if line not in remaining]
    assert missing == [], "a person's line was lost, changed or moved"


def test_the_corpus_has_files_with_a_persons_own_lines() -> None:
    assert {"notes_everywhere", "notes_everywhere_crlf_bom", "bold_labels"} <= set(KEEPING)


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session("p", "s", "u")
    manager.save_checkpoint("p", "s", 2, "completed", [], completed="2024-11-24T10:00:00Z")
    return manager


@pytest.mark.parametrize("case", KEEPING)
def test_approve_reject_and_update_keep_every_line_a_person_added(
    case: str, manager: CheckpointManager
) -> None:
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / f"{case}.md", target)
    manager.save_user_feedback("p", "s", 2, True, True, comments="", action="approved")
    assert_kept(case, target.read_bytes())
    approved = manager.load_feedback("p", "s", 2)
    assert approved is not None
    assert (approved.approved, approved.comments, approved.requested_changes) == (True, "", ())
    manager.save_user_feedback(
        "p", "s", 2, True, False, "Redo the\nEU part", ["More sources", "A table\nof prices"], "retry", 3
    )
    assert_kept(case, target.read_bytes())
    feedback = FEEDBACK.parse(decode(target.read_bytes(), target))
    assert (feedback.approved, feedback.comments, feedback.requested_changes, feedback.retry_count) == (
        False,
        "Redo the\nEU part",
        ("More sources", "A table\nof prices"),
        3,
    )
    manager.update_feedback("p", "s", 2, action="rejected", retry_count=4)
    assert_kept(case, target.read_bytes())
    assert FEEDBACK.parse(decode(target.read_bytes(), target)).action == "rejected"


def test_a_crlf_file_stays_crlf_through_a_save(manager: CheckpointManager) -> None:
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "notes_everywhere_crlf_bom.md", target)
    manager.save_user_feedback("p", "s", 2, True, False, "again", ["x"], "retry", 2)
    data = target.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")


def test_update_feedback_keeps_a_bold_label_bold(manager: CheckpointManager) -> None:
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "bold_labels.md", target)
    manager.update_feedback("p", "s", 2, approved=False, action="retry")
    text = target.read_text(encoding="utf-8")
    assert "- **Approved**: false\n" in text
    assert "- **Action:** retry\n" in text
    assert "- **Reviewed:** true\n" in text


def test_the_cli_approval_keeps_my_notes(manager: CheckpointManager) -> None:
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "notes_everywhere.md", target)
    result = run(manager.base_dir, "feedback", "p", "s", "2", "--approve")
    assert result.exit_code == 0, result.output
    assert_kept("notes_everywhere", target.read_bytes())
    assert "approved: yes" in result.output


def test_the_cli_says_which_rule_it_applied(manager: CheckpointManager) -> None:
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    shutil.copyfile(CORPUS / "approved_unreviewed_with_changes.md", target)
    result = run(manager.base_dir, "validate", str(target))
    assert result.exit_code == 0, result.output  # warnings are listed, never a failure
    assert f"{target}:5: Approved: is true but Reviewed (line 4) is false; read as reviewed" in result.output
    assert "(warning)" in result.output


# ---------------------------------------------------------------- the time of a hand review


def test_a_hand_review_is_dated_when_the_file_was_saved(manager: CheckpointManager) -> None:
    manager.save_user_feedback("p", "s", 2, reviewed=False, approved=False, action="pending")
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    assert "- Timestamp: -\n" in target.read_text()  # the blank template has no review time
    target.write_text(target.read_text().replace("- Approved: false", "- Approved: true"))
    saved = 1732442700.5  # 2024-11-24T10:05:00.5Z, five minutes after the phase completed
    os.utime(target, (saved, saved))
    before = target.read_bytes()
    feedback = manager.load_feedback("p", "s", 2)
    assert feedback is not None
    assert (feedback.reviewed, feedback.approved, feedback.action) == (True, True, "approved")
    assert feedback.timestamp == "2024-11-24T10:05:00.500000Z"
    assert target.read_bytes() == before  # read only
    assert os.stat(target).st_mtime == saved
    stats = summarize(manager, project_id="p", session_id="s")
    assert stats.review_wait == 300.5


def test_a_review_written_by_haytham_keeps_its_own_time(manager: CheckpointManager) -> None:
    manager.save_user_feedback("p", "s", 2, True, True)
    target = manager.phase_dir("p", "s", 2) / "user_feedback.md"
    os.utime(target, (1, 1))
    feedback = manager.load_feedback("p", "s", 2)
    assert feedback is not None
    assert feedback.timestamp is not None
    assert feedback.timestamp.startswith("20")
    template = target.read_text().replace(
        "- Timestamp: " + feedback.timestamp, "- Timestamp: 2024-11-24T09:00:00Z"
    )
    target.write_text(template)  # earlier than Completed: the template's, so the file's time counts
    os.utime(target, (1732442700, 1732442700))
    assert manager.load_feedback("p", "s", 2).timestamp == "2024-11-24T10:05:00Z"  # type: ignore[union-attr]
