"""Hand-edited user_feedback.md files: every reasonable spelling understood, every
unreasonable one explained, and a rewrite by haytham keeps everything a person wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from haytham import CheckpointManager, DocumentError
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
        assert issues == []
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
    manager.save_user_feedback("p", "s", 1, True, False, comments="<<<<<<< not a merge\nquoted text")
    assert manager.load_feedback("p", "s", 1).comments == "<<<<<<< not a merge\nquoted text"  # type: ignore[union-attr]
