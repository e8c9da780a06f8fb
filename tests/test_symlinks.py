"""No write leaves base_dir: a symlink planted anywhere below it (git carries symlinks, so a
pull request can plant one) is refused, naming the link and where it points, and nothing is
written where it points."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import CheckpointManager, UnsafePathError
from haytham.cli.main import cli
from haytham.store import fs

P, S = "acme", "s-1"
PHASE = "phase_1_concept"


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path / "base")
    m.create_session(P, S, "u")
    return m


def sent_back(manager: CheckpointManager) -> None:
    """Phase 1 done and sent back by its reviewer: ready for a new attempt."""
    manager.save_agent_output(P, S, 1, "writer", "draft")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "status": "completed"}])
    manager.save_user_feedback(P, S, 1, True, False, "shorter", action="rejected")


def test_a_history_folder_pointing_outside_is_never_written_through(
    manager: CheckpointManager, outside: Path
) -> None:
    history = manager.session_dir(P, S) / "history"
    if history.exists():
        for entry in history.iterdir():
            entry.rename(outside / entry.name)
        history.rmdir()
    before = tree(outside)
    os.symlink(outside, history)
    with pytest.raises(UnsafePathError, match=f"^{history} is a symlink \\(to {outside}\\)"):
        manager.save_checkpoint(P, S, 1, "in_progress", [])
    assert tree(outside) == before


def test_an_attempts_folder_pointing_outside_is_never_written_through(
    manager: CheckpointManager, outside: Path
) -> None:
    sent_back(manager)
    attempts = manager.session_dir(P, S) / PHASE / "attempts"
    os.symlink(outside, attempts)
    with pytest.raises(UnsafePathError, match=f"^{attempts} is a symlink \\(to {outside}\\)"):
        manager.start_attempt(P, S, 1)
    assert tree(outside) == []
    assert (manager.session_dir(P, S) / PHASE / "writer.md").is_file()  # nothing was moved


def test_an_attempt_number_folder_pointing_outside_is_never_written_through(
    manager: CheckpointManager, outside: Path
) -> None:
    sent_back(manager)
    attempts = manager.session_dir(P, S) / PHASE / "attempts"
    attempts.mkdir()
    os.symlink(outside, attempts / "1")
    with pytest.raises(UnsafePathError, match=f"^{attempts / '1'} is a symlink \\(to {outside}\\)"):
        manager.start_attempt(P, S, 1)
    assert tree(outside) == []


def test_a_dangling_lock_symlink_is_never_followed(manager: CheckpointManager, outside: Path) -> None:
    lock = manager.session_dir(P, S) / fs.LOCK_NAME
    lock.unlink()
    target = outside / "planted"
    os.symlink(target, lock)
    message = (
        f"{lock} is a symlink (to {target}): haytham never writes through a symlink inside "
        f"{manager.base_dir}; replace it with a real file or folder"
    )
    with pytest.raises(UnsafePathError) as caught:
        manager.save_agent_output(P, S, 1, "writer", "x")
    assert str(caught.value) == message
    assert caught.value.path == lock
    assert not target.exists()
    assert tree(outside) == []


def test_the_cli_names_the_link_without_a_traceback(manager: CheckpointManager, outside: Path) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    lock = manager.session_dir(P, S) / fs.LOCK_NAME
    lock.unlink()
    os.symlink(outside / "planted", lock)
    result = CliRunner().invoke(
        cli, ["feedback", "--base-dir", str(manager.base_dir), "--approve", P, S, "1"], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert f"Error: {lock} is a symlink (to {outside / 'planted'})" in result.output
    assert "Traceback" not in result.output
    assert tree(outside) == []


def test_a_symlinked_gitignore_is_left_alone(tmp_path: Path, outside: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside / "ignore", base / ".gitignore")
    CheckpointManager(base_dir=base).create_session(P, S, "u")
    assert tree(outside) == []


def test_a_project_folder_pointing_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside, base / P)
    with pytest.raises(UnsafePathError, match="leads outside"):
        CheckpointManager(base_dir=base).create_session(P, S, "u")
    assert tree(outside) == []


def test_confined_checks_every_part_below_the_root(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    os.symlink(outside, root / "a" / "b")
    with fs.confined(root), pytest.raises(UnsafePathError, match=f"^{root / 'a' / 'b'} is a symlink"):
        fs.make_dirs(root / "a" / "b" / "c" / "d")
    with fs.confined(root), pytest.raises(UnsafePathError):
        fs.atomic_write(root / "a" / "b" / "file.md", "x")
    with fs.confined(root), pytest.raises(UnsafePathError):
        fs.remove_tree(root / "a" / "b" / "c")
    assert tree(outside) == []
    fs.make_dirs(root / "a" / "real" / "c")  # real folders are fine
    assert (root / "a" / "real" / "c").is_dir()


def test_a_users_folder_pointing_outside_is_never_written_through(tmp_path: Path, outside: Path) -> None:
    from haytham.projects import ProjectManager

    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside, base / "_users")
    with pytest.raises(UnsafePathError, match=f"^{base / '_users'} is a symlink \\(to {outside}\\)"):
        ProjectManager(base_dir=base).update_user_preferences("grace", {"tone": "short"})
    assert tree(outside) == []


def test_prune_never_deletes_through_an_attempts_symlink(manager: CheckpointManager, outside: Path) -> None:
    from haytham.retention import RetentionPolicy, cleanup

    sent_back(manager)
    manager.start_attempt(P, S, 1)
    manager.save_agent_output(P, S, 1, "writer", "second")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "status": "completed"}])
    policy = RetentionPolicy(max_attempts_per_phase=1, include_in_progress=True)
    assert [r.attempt for r in cleanup(manager, policy, dry_run=True).removed] == [1]
    phase = manager.session_dir(P, S) / PHASE
    (phase / "attempts").rename(outside / "attempts")
    os.symlink(outside / "attempts", phase / "attempts")
    before = tree(outside)
    with pytest.raises(UnsafePathError, match=f"^{phase / 'attempts'} is a symlink"):
        cleanup(manager, policy)
    assert tree(outside) == before


def test_the_index_folder_as_a_symlink_is_never_written_through(tmp_path: Path, outside: Path) -> None:
    from haytham.store import index

    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside, base / index.INDEX_DIR)
    assert index.Index.open(base) is None
    assert tree(outside) == []


def test_an_import_never_writes_through_a_symlinked_project(tmp_path: Path, outside: Path) -> None:
    from haytham import transfer

    source = CheckpointManager(base_dir=tmp_path / "source")
    source.create_session(P, S, "u")
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside, base / P)
    with pytest.raises(UnsafePathError):
        transfer.import_session(CheckpointManager(base_dir=base), archive)
    assert tree(outside) == []


def test_a_change_refused_for_a_symlink_stages_nothing(tmp_path: Path, outside: Path) -> None:
    from haytham.store import journal

    folder = tmp_path / "session"
    folder.mkdir()
    (folder / "a.md").write_text("old a\n")
    os.symlink(outside, folder / "history")

    def save() -> None:
        with journal.Change(folder, "test") as change:
            change.write(folder / "a.md", "new a\n")
            change.write(folder / "history" / "entry.md", "entry\n")

    with pytest.raises(UnsafePathError, match=f"^{folder / 'history'} is a symlink \\(to {outside}\\)"):
        save()
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "history"]
    assert (folder / "a.md").read_text() == "old a\n"
    assert tree(outside) == []


def test_recovery_never_follows_a_symlink_planted_after_the_commit_point(
    tmp_path: Path, outside: Path
) -> None:
    from haytham.format.layout import JOURNAL_FILE
    from haytham.store import journal

    folder = tmp_path / "session"
    (folder / "history").mkdir(parents=True)
    (folder / "a.md").write_text("old a\n")
    change = journal.Change(folder, "test")
    change.write(folder / "a.md", "new a\n")
    change.write(folder / "history" / "entry.md", "entry\n")
    (folder / JOURNAL_FILE).write_bytes(journal.encode(change.operation, change.steps))  # killed here
    shutil.rmtree(folder / "history")
    os.symlink(outside, folder / "history")
    with pytest.raises(UnsafePathError, match=f"^{folder / 'history'} is a symlink \\(to {outside}\\)"):
        journal.recover(folder)
    assert (folder / "a.md").read_text() == "old a\n"  # refused before any step was applied
    assert (folder / JOURNAL_FILE).is_file()  # kept: recovery finishes once the link is gone
    assert tree(outside) == []


def test_a_record_that_is_a_symlink_is_never_read_or_followed(tmp_path: Path, outside: Path) -> None:
    from haytham.format.layout import JOURNAL_FILE
    from haytham.store import journal

    folder = tmp_path / "session"
    folder.mkdir()
    planted = outside / "record"
    planted.write_bytes(journal.encode("hostile", [journal.Step("rmtree", "x")]))
    os.symlink(planted, folder / JOURNAL_FILE)
    found = journal.pending(folder)
    assert found is not None and found.operation is None
    with pytest.raises(UnsafePathError, match=f"^{folder / JOURNAL_FILE} is a symlink"):
        journal.recover(folder)
    assert planted.is_file()
