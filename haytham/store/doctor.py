"""The doctor: compare a session's manifest with the files on disk, find every trace of an
interrupted operation, and repair what is safe.

Findings are data, so a CLI can list them and a runner can decide; ``fix=True`` only
finishes interrupted operations (``haytham.store.journal``), rebuilds the manifest from the
phase files, moves History Head to the newest entry and removes what killed writers left
(temporary files, staging, replaced and trash folders). It never deletes or rewrites a
person's content. ``check_folders`` does the same for a project's or the base directory's
own traces.
"""

from __future__ import annotations

import contextlib
import os
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Literal, Protocol

from haytham.errors import Issue
from haytham.format import CHECKPOINT, MANIFEST, ReadCache
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    FEEDBACK_FILE,
    HISTORY_DIR,
    LOCK_FILE,
    MANIFEST_FILE,
    OUTPUTS_DIR,
    PHASE_DIR_PREFIX,
    REMOVING_SUFFIX,
    REPLACED_SUFFIX,
    SESSIONS_DIR,
    STAGING_SUFFIX,
    TMP_SUFFIX,
    TRASH_SUFFIX,
)
from haytham.format.workflow import Workflow
from haytham.frozen import frozen
from haytham.store import fs as _storage
from haytham.store import history, journal, lifecycle, orphans
from haytham.store import progress as _progress
from haytham.store.clock import Clock, format_timestamp
from haytham.store.validation import is_edited_issue


class Examined(Protocol):
    """What the doctor asks of the store it examines (``CheckpointManager`` is one): the
    doctor is called by the manager, so it names what it needs rather than importing it."""

    cache: ReadCache
    workflows: dict[str, Workflow]
    clock: Clock

    def session_dir(self, project_id: str, session_id: str) -> Path: ...

    def lock(self, project_id: str, session_id: str) -> AbstractContextManager[object]: ...

    def validate_session(self, project_id: str, session_id: str) -> list[Issue]: ...

    def session_workflow(self, project_id: str, session_id: str) -> Workflow: ...

    def repair(self, project_id: str, session_id: str) -> None: ...


FindingKind = Literal[
    "missing_manifest",
    "checkpoint_not_in_manifest",
    "row_without_checkpoint",
    "manifest_out_of_date",
    "unlisted_agent_file",
    "unexpected_directory",
    "temporary_leftover",
    "invalid_file",
    "stale_phase",
    "edited_output",
    "interrupted_operation",
    "staging_leftover",
    "replaced_leftover",
    "trash_leftover",
    "history_head_behind",
]
FIXABLE: frozenset[str] = frozenset(
    {
        "checkpoint_not_in_manifest",
        "row_without_checkpoint",
        "manifest_out_of_date",
        "temporary_leftover",
        "interrupted_operation",
        "staging_leftover",
        "replaced_leftover",
        "trash_leftover",
        "history_head_behind",
    }
)
"""Kinds that ``fix=True`` repairs; the others need a person's decision. A
``missing_manifest`` is rebuilt when the session's files tell its workflow (``fixed`` says
whether it was), never when ``session_manifest.md`` is a link to nothing."""


@frozen
class Finding:
    """One way the session on disk is not what its manifest says, or not clean."""

    kind: FindingKind
    path: Path
    message: str
    fixed: bool = False
    """True when ``check(fix=True)`` repaired it."""

    def __str__(self) -> str:
        state = " (fixed)" if self.fixed else ""
        return f"{self.path}: {self.kind}: {self.message}{state}"


def check_session(manager: Examined, project_id: str, session_id: str, fix: bool) -> list[Finding]:
    """The findings for one session; with ``fix`` the safe ones are repaired under the lock."""
    directory = manager.session_dir(project_id, session_id)
    manifest_path = directory / MANIFEST_FILE
    if not manifest_path.is_file():
        orphan = orphans.find(directory)
        if orphan is not None:
            return _orphan_findings(manager, orphan, fix)
        if os.path.lexists(manifest_path):  # a folder where the file should be: left as it is
            issues = MANIFEST.read_path(manifest_path)[1]
            return [Finding("invalid_file", manifest_path, _describe(issue)) for issue in issues]
    if fix and journal.pending(directory) is not None:
        with manager.lock(project_id, session_id):  # taking the lock finishes the operation
            pass
    findings = _interrupted(directory)
    findings += [
        Finding("invalid_file", issue.path or manifest_path, _describe(issue))
        for issue in manager.validate_session(project_id, session_id)
        if not _worded_by_doctor(issue, manifest_path)
    ]
    manifest, _ = MANIFEST.read_path(manifest_path)
    if manifest is None:
        return findings
    phases = manager.session_workflow(project_id, session_id).phases_for(manifest.execution_mode)
    checkpoints = {
        phase.number: found
        for phase in phases
        if (found := CHECKPOINT.read_path(directory / phase.directory / CHECKPOINT_FILE)[0]) is not None
    }
    view = _progress.view_of(directory, phases, checkpoints)
    for phase in phases:
        phase_dir = directory / phase.directory
        checkpoint, _ = CHECKPOINT.read_path(phase_dir / CHECKPOINT_FILE)
        row = next((r for r in manifest.phases if r.number == phase.number), None)
        row_status = row.status if row else "missing"
        if checkpoint is not None:
            state = view.phase(phase.number).state
            if row_status != state:
                findings.append(
                    Finding(
                        "checkpoint_not_in_manifest",
                        phase_dir / CHECKPOINT_FILE,
                        f"phase {phase.number}'s files say {state!r}, the manifest {row_status!r}",
                    )
                )
            for name in view.phase(phase.number).edited:
                findings.append(
                    Finding(
                        "edited_output",
                        directory / name,
                        f"changed since phase {phase.number} completed: kept as its output "
                        f"({lifecycle.EDITED}); the phases built on the old outputs are stale",
                    )
                )
            if state == "stale":
                findings.append(
                    Finding(
                        "stale_phase",
                        phase_dir / CHECKPOINT_FILE,
                        f"phase {phase.number} is {view.phase(phase.number).describe()}: "
                        "run haytham resume to run it again",
                    )
                )
            listed = {run.output_file for run in checkpoint.agents}
            for path in sorted(phase_dir.glob("*.md")):
                if path.name not in listed | {CHECKPOINT_FILE, FEEDBACK_FILE}:
                    findings.append(
                        Finding(
                            "unlisted_agent_file",
                            path,
                            f"{path.name} is not listed in phase {phase.number}'s checkpoint",
                        )
                    )
        elif not (phase_dir / CHECKPOINT_FILE).exists() and row_status not in ("pending", "missing"):
            findings.append(
                Finding(
                    "row_without_checkpoint",
                    manifest_path,
                    f"phase {phase.number} is {row_status!r} in the manifest but has no checkpoint.md",
                )
            )
    derived = _progress.derive(manifest, phases, checkpoints, view)
    if not _progress.same_progress(manifest, derived) and not any(
        f.kind in ("checkpoint_not_in_manifest", "row_without_checkpoint") for f in findings
    ):
        findings.append(
            Finding(
                "manifest_out_of_date",
                manifest_path,
                "Status, Current Phase or Metrics disagree with the checkpoints",
            )
        )
    expected = {p.directory for p in phases}
    for path in sorted(directory.iterdir()):
        if path.is_dir() and path.name.startswith(PHASE_DIR_PREFIX) and path.name not in expected:
            findings.append(
                Finding(
                    "unexpected_directory",
                    path,
                    f"{path.name} is not a phase of the session's {manifest.execution_mode!r} mode",
                )
            )
    for folder in written_folders(directory):
        findings += _leftovers(folder)
    findings += _head_findings(directory, manifest.history_head, manager)
    if fix and any(f.kind in FIXABLE for f in findings):
        manager.repair(project_id, session_id)
        findings = [replace(f, fixed=f.kind in FIXABLE) for f in findings]
    return findings


def _orphan_findings(manager: Examined, orphan: orphans.Orphan, fix: bool) -> list[Finding]:
    """A session folder without a manifest; with ``fix`` the manifest its files say is
    written (``orphans.rebuild``) under the session's lock, and the session checked again."""
    project_id, session_id = orphan.ids
    path = orphan.manifest
    traces = [f for folder in written_folders(orphan.directory) for f in _leftovers(folder)]
    traces = _interrupted(orphan.directory) + traces
    if orphan.link is not None:
        message = f"{orphan.describe()}: the link is left as it is; put the manifest back where it points"
        return [Finding("missing_manifest", path, message), *traces]
    if not fix:
        message = f"{orphan.describe()}: haytham does not see the session; --fix rebuilds it from its files"
        return [Finding("missing_manifest", path, message), *traces]
    with manager.lock(project_id, session_id):  # also finishes an interrupted operation
        if os.path.lexists(path):  # written since it was looked at: that one is the truth
            return check_session(manager, project_id, session_id, fix)
        rebuilt = orphans.rebuild(orphan, manager.workflows, format_timestamp(manager.clock()), manager.cache)
        if rebuilt.manifest is not None:
            MANIFEST.check_record(rebuilt.manifest, path)
            _storage.atomic_write(path, MANIFEST.render(rebuilt.manifest))
    if rebuilt.manifest is None:
        message = f"{orphan.describe()}: --fix cannot rebuild it: {rebuilt.how}"
        return [Finding("missing_manifest", path, message), *traces]
    message = f"{orphan.describe()}: rebuilt from its files: {rebuilt.how}"
    rest = check_session(manager, project_id, session_id, fix)
    return [Finding("missing_manifest", path, message, fixed=True), *rest]


def written_folders(session_dir: Path) -> list[Path]:
    """Every folder of a session that haytham writes into: the session folder, ``history/``,
    each phase folder, its ``attempts/`` and each ``attempts/{n}/`` (no symlinks followed)."""
    folders = [session_dir]
    for name in _subfolders(session_dir):
        if name == HISTORY_DIR or name.startswith(PHASE_DIR_PREFIX):
            folders.append(session_dir / name)
        if name.startswith(PHASE_DIR_PREFIX) and ATTEMPTS_DIR in _subfolders(session_dir / name):
            attempts = session_dir / name / ATTEMPTS_DIR
            folders.append(attempts)
            folders += [attempts / n for n in _subfolders(attempts) if n.isdigit()]
    return folders


def _subfolders(directory: Path) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _interrupted(folder: Path) -> list[Finding]:
    found = journal.pending(folder)
    if found is None:
        return []
    if found.operation is None:
        message = (
            "an operation was killed while writing its record, before its commit point: nothing "
            "of it happened; --fix removes the record and what it staged"
        )
    else:
        message = (
            f"{found.operation} was killed after its commit point with {len(found.steps)} steps "
            "to finish; --fix (or the next save) rolls it forward, keeping any file edited by "
            "hand since"
        )
    return [Finding("interrupted_operation", found.record, message)]


_MEANINGS = {
    TMP_SUFFIX: ("temporary_leftover", "left by a writer that was killed before its change committed"),
    STAGING_SUFFIX: ("staging_leftover", "a folder assembled by a fork, import or save that was killed"),
    REPLACED_SUFFIX: ("replaced_leftover", "a session an overwriting import was replacing when killed"),
    TRASH_SUFFIX: ("trash_leftover", "a folder that was being deleted when the process was killed"),
    REMOVING_SUFFIX: ("trash_leftover", "a session or attempt a cleanup was removing when killed"),
}


def _leftovers(folder: Path) -> list[Finding]:
    """Hidden names a killed writer left directly in ``folder``, each with its meaning."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    findings = []
    for name in names:
        if not name.startswith(".") or name == LOCK_FILE:
            continue
        for suffix, (kind, meaning) in _MEANINGS.items():
            if name.endswith(suffix):
                findings.append(Finding(kind, folder / name, meaning))  # type: ignore[arg-type]
                break
    return findings


def _head_findings(directory: Path, head: str | None, manager: Examined) -> list[Finding]:
    """History Head must name the newest entry of its line of history."""
    entries, _ = history.read_entries(directory, cache=manager.cache)
    newest = history.newest(entries, head)
    if newest is None or newest.entry_id == head:
        return []
    said = f"names {head}" if head else "is empty"
    return [
        Finding(
            "history_head_behind",
            directory / MANIFEST_FILE,
            f"History Head {said}, but the newest entry is {newest.entry_id}: the manifest was not "
            "written after its history entry (a writer was killed)",
        )
    ]


def check_folders(base_dir: Path, project_id: str | None, fix: bool, lock_timeout: float) -> list[Finding]:
    """The traces of interrupted operations outside sessions: a project's record and its
    staging and replaced folders, tmp files in ``outputs/`` and ``history/``, retention's
    leftovers in ``sessions/`` and deleted projects' trash in ``base_dir``. With ``fix``
    they are finished or removed under the project's lock.
    """
    findings = _leftovers(base_dir) if project_id is None else []
    projects = [project_id] if project_id is not None else _subfolders(base_dir)
    for name in projects:
        if name.startswith(".") or name.startswith("_"):
            continue
        directory = base_dir / name
        if not directory.is_dir():
            continue
        found = _interrupted(directory)
        for folder in (directory, directory / OUTPUTS_DIR, directory / HISTORY_DIR, directory / SESSIONS_DIR):
            found += _leftovers(folder)
        if fix and found:
            with _storage.locked(directory, lock_timeout, f"project {name}"):
                journal.recover(directory)
                restore_replaced(directory)
                for finding in found:
                    if finding.kind != "interrupted_operation":
                        _remove(finding.path)
            found = [replace(f, fixed=True) for f in found]
        findings += found
    if fix:
        for finding in findings:
            if finding.path.parent == base_dir and not finding.fixed:
                _remove(finding.path)  # a deleted project's trash: committed, anyone may remove it
        findings = [replace(f, fixed=True) for f in findings]
    return findings


def restore_replaced(project_dir: Path) -> None:
    """A session that an earlier haytham's overwriting import had moved aside, when no
    session took its place, is moved back (the caller holds the project's lock)."""
    for name in _subfolders(project_dir):
        if not name.endswith(REPLACED_SUFFIX):
            continue
        session_id = name[1 : -len(REPLACED_SUFFIX)].rsplit(".", 2)[0]
        target = project_dir / SESSIONS_DIR / session_id
        if session_id and not os.path.lexists(target) and (project_dir / name / MANIFEST_FILE).is_file():
            os.rename(project_dir / name, target)
            journal.fsync_dir(target.parent)
            journal.fsync_dir(project_dir)


def remove_traces(folder: Path) -> list[Path]:
    """Remove what killed writers left directly in ``folder`` (temporary files, staging and
    trash folders). The caller holds the lock every writer of ``folder`` takes, and has
    recovered its journal record, so nothing staged there is still wanted."""
    removed = []
    for finding in _leftovers(folder):
        if finding.kind != "replaced_leftover":
            _remove(finding.path)
            removed.append(finding.path)
    return removed


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            import shutil  # only to remove a folder: it loads the archive modules too

            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


def _worded_by_doctor(issue: Issue, manifest_path: Path) -> bool:
    """validate_session's warnings that the doctor reports as its own findings: the manifest
    disagreeing with its files (``store.disagreements``) and a stale phase (Built From).

    An error on the same fields (``Status: 'donezo' is not one of ...``, a Built From line
    that does not read) is a file that does not read, which ``validate`` and ``status``
    refuse, so the doctor reports it as an ``invalid_file``."""
    if issue.is_error:
        return False
    disagreement = issue.path == manifest_path and issue.field in (
        "Phase Status",
        "Status",
        "Current Phase",
        "Metrics",
    )
    return disagreement or issue.field == "Built From" or is_edited_issue(issue)


def _describe(issue: Issue) -> str:
    """The issue without its path (the finding carries it): ``line 4: Reviewed: ...``."""
    return (
        str(Issue(None, None, issue.field, issue.message))
        if issue.line is None
        else (f"line {issue.line}: {Issue(None, None, issue.field, issue.message)}")
    )
