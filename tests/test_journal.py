"""The journal (haytham/store/journal.py) and the doctor's knowledge of every trace an
interrupted operation can leave. The exhaustive kill tests are in test_fault_injection.py."""

from __future__ import annotations

import base64
import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from workcount import WorkCounters

from haytham import CheckpointManager, ProjectManager
from haytham.cli.main import cli
from haytham.format.layout import JOURNAL_FILE
from haytham.store import fs as _storage
from haytham.store import journal
from haytham.store.doctor import check_folders

P, S = "acme", "s-1"


def staged_but_not_applied(change: journal.Change, boot: str | None = None) -> None:
    """Write the change's record as its commit does, and stop there: a kill right after the
    commit point (``boot``: a redo change's, the boot it was written under)."""
    if change.redo and boot is None:
        boot = journal.boot_id()
    (change.folder / JOURNAL_FILE).write_bytes(journal.encode(change.operation, change.steps, boot))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("old a\n")
    (tmp_path / "b.md").write_text("old b\n")
    (tmp_path / "gone.md").write_text("to remove\n")
    return tmp_path


def test_a_change_applies_all_its_steps_and_leaves_nothing_hidden(folder: Path) -> None:
    with journal.Change(folder, "test") as change:
        change.write(folder / "a.md", "new a\n")
        change.write(folder / "new" / "c.md", "new c\n")  # a new folder arrives whole
        change.remove(folder / "gone.md")
    assert (folder / "a.md").read_text() == "new a\n"
    assert (folder / "new" / "c.md").read_text() == "new c\n"
    assert not (folder / "gone.md").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "b.md", "new"]


def test_a_failed_change_removes_what_it_staged(folder: Path) -> None:
    def fail() -> None:
        with journal.Change(folder, "test") as change:
            change.write(folder / "a.md", "new a\n")
            change.write(folder / "new" / "c.md", "new c\n")
            raise RuntimeError("the caller failed before the commit point")

    with pytest.raises(RuntimeError):
        fail()
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "b.md", "gone.md"]
    assert (folder / "a.md").read_text() == "old a\n"


def test_recovery_rolls_a_committed_change_forward_once(folder: Path) -> None:
    change = journal.Change(folder, "test")
    change.write(folder / "a.md", "new a\n")
    change.write(folder / "new" / "c.md", "new c\n")
    change.remove(folder / "gone.md")
    staged_but_not_applied(change)
    assert journal.pending(folder) is not None
    assert journal.recover(folder) == []
    assert (folder / "a.md").read_text() == "new a\n"
    assert (folder / "new" / "c.md").read_text() == "new c\n"
    assert not (folder / "gone.md").exists()
    assert journal.pending(folder) is None and journal.leftovers(folder) == []
    assert journal.recover(folder) == []  # nothing left to do


def test_recovery_never_overwrites_or_removes_a_file_a_person_edited_since(folder: Path) -> None:
    change = journal.Change(folder, "test")
    change.write(folder / "a.md", "new a\n")
    change.write(folder / "b.md", "new b\n")
    change.remove(folder / "gone.md")
    staged_but_not_applied(change)
    (folder / "a.md").write_text("a person's edit\n")
    (folder / "gone.md").write_text("a person's edit too\n")
    conflicts = journal.recover(folder)
    assert sorted(c.path.name for c in conflicts) == ["a.md", "gone.md"]
    assert all("by hand" in c.message for c in conflicts)
    assert (folder / "a.md").read_text() == "a person's edit\n"
    assert (folder / "gone.md").read_text() == "a person's edit too\n"
    assert (folder / "b.md").read_text() == "new b\n"  # the rest of the operation is done
    assert journal.leftovers(folder) == []


def redo_change(folder: Path) -> journal.Change:
    change = journal.Change(folder, "test", redo=True)
    change.write(folder / "a.md", "new a\n")
    change.write(folder / "b.md", "new b\n")
    change.write(folder / "new" / "c.md", "new c\n")
    change.remove(folder / "gone.md")
    return change


def test_a_redo_change_keeps_every_content_in_its_record(folder: Path) -> None:
    """The files are staged (unsynced: a full disk fails before the commit point), and the
    record holds their contents too; the commit renames them in and leaves nothing hidden."""
    change = redo_change(folder)
    assert len(journal.leftovers(folder)) == 3 and not (folder / JOURNAL_FILE).exists()
    found = journal.decode(journal.encode(change.operation, change.steps, "boot"))
    assert found is not None and found[2] == "boot"
    assert [s.kind for s in found[1]] == ["replace", "replace", "mkdir", "replace", "remove"]
    change.commit()
    assert [(folder / n).read_text() for n in ("a.md", "b.md", "new/c.md")] == [
        "new a\n",
        "new b\n",
        "new c\n",
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "b.md", "new"]


def test_redo_recovery_in_the_same_boot_keeps_a_persons_edit(folder: Path) -> None:
    """A process was killed after the commit point: the page cache kept every write, so a
    file holding neither its old nor its new content was edited by a person since."""
    change = redo_change(folder)
    staged_but_not_applied(change)
    (folder / "a.md").write_text("a person's edit\n")
    conflicts = journal.recover(folder)
    assert [c.path.name for c in conflicts] == ["a.md"]
    assert (folder / "a.md").read_text() == "a person's edit\n"
    assert (folder / "b.md").read_text() == "new b\n"
    assert (folder / "new" / "c.md").read_text() == "new c\n"
    assert not (folder / "gone.md").exists()
    assert journal.pending(folder) is None and journal.leftovers(folder) == []


def test_redo_recovery_after_a_power_loss_rewrites_every_file_from_the_record(folder: Path) -> None:
    """Under another boot a file renamed in but never flushed may be empty: the record, kept
    until the flush, rewrites every file not holding its new content. Recovery is idempotent."""
    change = redo_change(folder)
    staged_but_not_applied(change, boot="the boot before the power loss")
    for path in [folder / "a.md", folder / "b.md", *journal.leftovers(folder)]:
        path.write_bytes(b"")  # renamed in or staged, its data lost
    assert journal.recover(folder) == []
    assert [(folder / n).read_text() for n in ("a.md", "b.md", "new/c.md")] == [
        "new a\n",
        "new b\n",
        "new c\n",
    ]
    assert not (folder / "gone.md").exists()
    assert journal.pending(folder) is None and journal.leftovers(folder) == []
    assert journal.recover(folder) == []


def test_a_redo_record_whose_content_is_not_its_hash_is_not_followed(folder: Path) -> None:
    change = redo_change(folder)
    steps = [
        dataclasses.replace(s, content=base64.b64encode(b"other\n").decode()) if s.path == "a.md" else s
        for s in change.steps
    ]
    assert journal.decode(journal.encode("test", steps, journal.boot_id())) is None
    with pytest.raises(ValueError, match="writes and removes files only"):
        change.rename(folder / "new", folder / "renamed")


def test_a_record_cut_short_means_the_operation_never_happened(folder: Path) -> None:
    change = journal.Change(folder, "test")
    change.write(folder / "a.md", "new a\n")
    data = journal.encode(change.operation, change.steps)
    (folder / JOURNAL_FILE).write_bytes(data[: len(data) // 2])
    found = journal.pending(folder)
    assert found is not None and found.operation is None
    assert journal.recover(folder) == []
    assert (folder / "a.md").read_text() == "old a\n"
    assert not (folder / JOURNAL_FILE).exists()
    assert journal.leftovers(folder) == []  # the staged file, a leftover, went with it


def test_a_record_naming_a_path_outside_its_folder_is_not_followed(folder: Path) -> None:
    outside = folder / "inside"
    outside.mkdir()
    step = journal.Step("remove", "../a.md", before=journal.file_digest(folder / "a.md"))
    (outside / JOURNAL_FILE).write_bytes(journal.encode("hostile", [step]))
    journal.recover(outside)
    assert (folder / "a.md").read_text() == "old a\n"


# ------------------------------------------------------------------- the doctor


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(tmp_path / "base")
    m.create_session(P, S, "u", execution_mode="mvp")
    m.save_agent_output(P, S, 1, "writer", "text\n")
    m.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "status": "completed"}])
    m.save_user_feedback(P, S, 1, True, False, comments="again", action="rejected")
    m.start_attempt(P, S, 1)
    return m


def test_doctor_finds_and_fixes_a_trace_in_every_folder_haytham_writes(manager: CheckpointManager) -> None:
    session = manager.session_dir(P, S)
    phase = session / "phase_1_concept"
    planted = [
        session / "history" / ".20250101T000000Z_abc.md.1.ab.haytham-tmp",
        phase / "attempts" / ".attempts.1.ab.haytham-tmp",
        phase / "attempts" / "1" / ".checkpoint.md.1.ab.haytham-tmp",
        session / ".session_manifest.md.1.ab.haytham-tmp",
    ]
    for path in planted:
        path.write_text("half")
    staging = session / ".history.1.ab.haytham-staging"
    staging.mkdir()
    findings = {f.path: f for f in manager.check(P, S)}
    for path in planted:
        assert findings[path].kind == "temporary_leftover"
    assert findings[staging].kind == "staging_leftover" and "killed" in findings[staging].message
    fixed = manager.check(P, S, fix=True)
    assert all(f.fixed for f in fixed)
    assert not any(p.exists() for p in [*planted, staging])
    assert manager.check(P, S) == []


def test_doctor_finishes_a_committed_operation(manager: CheckpointManager, counters: WorkCounters) -> None:
    session = manager.session_dir(P, S)
    change = journal.Change(session, "save_checkpoint")
    change.write(session / "phase_1_concept" / "writer.md", "staged\n")
    staged_but_not_applied(change)
    counters.reset()
    [finding] = [f for f in manager.check(P, S) if f.kind == "interrupted_operation"]
    assert "save_checkpoint was killed after its commit point" in finding.message
    assert counters.recovered == 0  # found and reported, not finished
    manager.check(P, S, fix=True)
    assert counters.recovered == 1
    assert (session / "phase_1_concept" / "writer.md").read_text() == "staged\n"
    assert journal.pending(session) is None
    manager.check(P, S, fix=True)
    assert counters.recovered == 1  # nothing left to finish


def test_validate_warns_of_a_committed_operation_until_it_is_finished(manager: CheckpointManager) -> None:
    """A reader never writes, so it cannot finish the operation; validate says what it sees."""
    session = manager.session_dir(P, S)
    change = journal.Change(session, "save_checkpoint")
    change.write(session / "phase_1_concept" / "writer.md", "staged\n")
    staged_but_not_applied(change)
    [warning] = [i for i in manager.validate_session(P, S) if i.path == session / ".haytham-journal"]
    assert warning.severity == "warning"
    assert str(warning) == (
        f"{session / '.haytham-journal'}: an interrupted save_checkpoint is not finished yet (1 step): "
        "the next write to this session, or haytham doctor --fix, finishes it"
    )
    manager.check(P, S, fix=True)
    assert not [i for i in manager.validate_session(P, S) if i.path == session / ".haytham-journal"]


def test_a_history_entry_cut_short_fails_validation(manager: CheckpointManager) -> None:
    entry = sorted((manager.session_dir(P, S) / "history").glob("*.md"))[0]
    text = entry.read_text()
    entry.write_text(text[: text.index("## Metrics")] + "```\n")  # the checkpoint cut short
    problems = [i for i in manager.validate_session(P, S) if i.path == entry and i.is_error]
    assert problems, "a cut entry must not validate"
    assert any("not the hash of what it records" in i.message for i in problems)


def test_project_level_traces_are_reported_and_repaired(tmp_path: Path) -> None:
    base = tmp_path / "base"
    pm = ProjectManager(base)
    project = pm.create_project("u", "An idea", "Idea")["project_id"]
    session = pm.start_session(project)["session_id"]
    directory = base / project
    # an earlier haytham's overwriting import, killed between its two renames
    replaced = directory / f".{session}.1.ab.haytham-replaced"
    (directory / "sessions" / session).rename(replaced)
    staging = directory / f".{session}.1.ab.haytham-staging"
    staging.mkdir()
    (directory / "outputs" / ".latest_requirements.md.1.ab.haytham-tmp").write_text("half")
    trash = base / ".gone.1.ab.haytham-trash"
    (trash / "sessions" / "s").mkdir(parents=True)
    (trash / "sessions" / "s" / "session_manifest.md").write_text("# not a session any more\n")
    removing = directory / "sessions" / ".old.removing"
    removing.mkdir()
    assert pm.checkpoints.list_sessions() == []  # hidden folders are never listed
    kinds = sorted(f.kind for f in check_folders(base, None, False, 5))
    assert kinds == [
        "replaced_leftover",
        "staging_leftover",
        "temporary_leftover",
        "trash_leftover",
        "trash_leftover",
    ]
    fixed = check_folders(base, None, True, 5)
    assert all(f.fixed for f in fixed)
    assert [s.session_id for s in pm.checkpoints.list_sessions()] == [session]  # restored
    assert check_folders(base, None, False, 5) == []
    assert not any(p.exists() for p in (replaced, staging, trash, removing))


def test_a_retried_completion_adds_no_second_version(tmp_path: Path) -> None:
    pm = ProjectManager(tmp_path / "base")
    project = pm.create_project("u", "An idea", "Idea")["project_id"]
    session = pm.start_session(project)["session_id"]
    first = pm.complete_session(project, session, "# Requirements\n")
    again = pm.complete_session(project, session, "# Requirements\n")
    assert again == first
    assert len(pm.list_requirements(project)) == 1
    changelog = (tmp_path / "base" / project / "history" / "changelog.md").read_text()
    assert changelog.count("Session completed") == 1
    other = pm.complete_session(project, session, "# Requirements, changed\n")
    assert other["version"] == 2


def test_delete_project_is_never_listed_half_way(tmp_path: Path) -> None:
    base = tmp_path / "base"
    pm = ProjectManager(base)
    project = pm.create_project("u", "An idea", "Idea")["project_id"]
    pm.start_session(project)
    trash = base / f".{project}.1.ab.haytham-trash"
    shutil.copytree(base / project, trash)  # as a delete killed after its rename leaves it
    shutil.rmtree(base / project)
    assert pm.checkpoints.list_sessions() == []
    assert pm.checkpoints.validate_paths() == []


def test_the_gitignore_names_every_trace_and_an_older_one_learns_them(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    older = (
        "# Written by haytham: its lock and temporary files never belong in version control.\n.haytham.lock\n"
    )
    (base / ".gitignore").write_text(older)
    _storage.ensure_gitignore(base)
    lines = (base / ".gitignore").read_text().splitlines()
    for name in (".haytham-journal", ".*.haytham-staging", ".*.haytham-replaced", ".*.haytham-trash"):
        assert name in lines
    assert lines[:2] == older.splitlines()
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / ".gitignore").write_text("mine\n")
    _storage.ensure_gitignore(custom)
    assert (custom / ".gitignore").read_text() == "mine\n"  # a person's file is theirs


def test_haytham_doctor_without_a_session_covers_the_project_and_the_base(tmp_path: Path) -> None:
    base = tmp_path / "base"
    manager = CheckpointManager(base)
    manager.create_session(P, S, "u", execution_mode="mvp")
    trash = base / ".gone.1.ab.haytham-trash"
    trash.mkdir()
    staging = base / P / f".{S}.1.ab.haytham-staging"
    staging.mkdir()

    def doctor(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["doctor", *args, "--base-dir", str(base)])
        return result.exit_code, result.output

    code, output = doctor()
    assert code == 1
    assert f"{trash}: trash_leftover: a folder that was being deleted when the process was killed" in output
    assert f"{staging}: staging_leftover: a folder assembled by a fork, import or save" in output
    code, output = doctor(P)
    assert code == 1 and str(staging) in output and str(trash) not in output
    code, output = doctor("--fix")
    assert code == 0 and "Fixed all 2 findings" in output
    assert not trash.exists() and not staging.exists()
    code, output = doctor()
    assert code == 0 and f"OK: {base} is consistent" in output


def test_a_change_past_the_redo_limit_keeps_no_content_in_its_record(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large output is not copied into the record: past ``REDO_MAX_BYTES`` the change goes
    on with staged, fsynced files, and its record is one of those (no contents, no boot)."""
    monkeypatch.setattr(journal, "REDO_MAX_BYTES", 10)
    fsynced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsynced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    change = journal.Change(folder, "test", redo=True)
    change.write(folder / "a.md", "new a\n")
    assert change.redo and change.steps[-1].content is not None and fsynced == []
    change.write(folder / "b.md", "a longer new b\n")
    assert not change.redo
    assert [s.content for s in change.steps] == [None, None]
    assert len(fsynced) == 2  # the file staged before the limit, then the one past it
    record = journal.decode(journal.encode(change.operation, change.steps))
    assert record is not None and record[2] is None
    change.commit()
    assert [(folder / n).read_text() for n in ("a.md", "b.md")] == ["new a\n", "a longer new b\n"]
    assert journal.leftovers(folder) == [] and not (folder / JOURNAL_FILE).exists()
