"""A review written against one version of user_feedback.md (the web page's form) is saved
only over that version: the manager compares it under the session's lock, with the write, so
another writer or a hand edit between the page and the save is never written over."""

from __future__ import annotations

from pathlib import Path

import pytest

from haytham import CheckpointManager, StaleReviewError
from haytham.format.layout import JOURNAL_FILE
from haytham.store import fs, journal

P, S = "acme", "s-1"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path / "base")
    m.create_session(P, S, "u")
    m.save_agent_output(P, S, 1, "writer", "draft")
    m.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "status": "completed"}])
    m.save_user_feedback(P, S, 1, False, False)  # the blank review file the runner writes
    return m


def snapshot(manager: CheckpointManager) -> dict[str, bytes]:
    root = manager.session_dir(P, S)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def feedback(manager: CheckpointManager) -> Path:
    return manager.phase_dir(P, S, 1) / "user_feedback.md"


def test_a_review_over_the_version_it_was_written_against_is_saved(manager: CheckpointManager) -> None:
    version, data = fs.file_version(feedback(manager))
    assert data == feedback(manager).read_bytes() and version != fs.NO_FILE
    manager.save_user_feedback(P, S, 1, True, True, "fine", expected_version=version)
    saved = manager.load_feedback(P, S, 1)
    assert saved is not None and saved.approved and saved.comments == "fine"


def test_another_writers_save_between_render_and_save_is_never_written_over(
    manager: CheckpointManager,
) -> None:
    rendered = fs.file_version(feedback(manager))[0]  # the page is rendered
    CheckpointManager(base_dir=manager.base_dir).save_user_feedback(  # haytham feedback, meanwhile
        P, S, 1, True, False, "from the command line", action="rejected"
    )
    before = snapshot(manager)
    with pytest.raises(StaleReviewError) as caught:
        manager.save_user_feedback(P, S, 1, True, True, "from the page", expected_version=rendered)
    assert str(caught.value) == (
        f"{feedback(manager)} changed since the review was written against it (edited by hand or "
        "brought by git); nothing was saved"
    )
    assert caught.value.path == feedback(manager)
    assert caught.value.expected == rendered
    assert caught.value.current == fs.file_version(feedback(manager))[0]
    assert snapshot(manager) == before  # no file, history entry or manifest changed


def test_the_version_is_compared_under_the_lock_after_recovery(manager: CheckpointManager) -> None:
    """A writer killed just after its commit point changed the file as far as every reader
    after recovery is concerned: the save finishes that operation under the lock, then
    compares, and refuses."""
    path = feedback(manager)
    edited = path.read_text().replace("## User Comments\n", "## User Comments\nFrom a killed writer.\n")
    change = journal.Change(manager.session_dir(P, S), "save_user_feedback")
    change.write(path, edited)
    (change.folder / JOURNAL_FILE).write_bytes(journal.encode(change.operation, change.steps))
    rendered = fs.file_version(path)[0]  # the page still sees the old file
    with pytest.raises(StaleReviewError):
        manager.save_user_feedback(P, S, 1, True, True, "from the page", expected_version=rendered)
    assert path.read_text() == edited  # rolled forward, then never written over


def test_a_review_expecting_no_file_is_refused_once_one_exists(manager: CheckpointManager) -> None:
    feedback(manager).unlink()
    rendered = fs.file_version(feedback(manager))
    assert rendered == (fs.NO_FILE, None)
    manager.save_user_feedback(P, S, 1, False, False)
    with pytest.raises(StaleReviewError):
        manager.save_user_feedback(P, S, 1, True, True, expected_version=rendered[0])
    saved = manager.load_feedback(P, S, 1)
    assert saved is not None and not saved.reviewed
