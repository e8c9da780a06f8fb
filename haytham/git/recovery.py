"""What a killed worker or sync leaves in a clone, undone by the next ``sync`` (docs/many-machines.md).

A worker or a sync may be killed at any moment (SIGKILL, a power cut). What that can leave,
and what the next ``haytham sync`` (or ``haytham runner``, which syncs) does about it:

- **git's index lock** (``.git/index.lock``) of a git command killed in the middle: removed
  when no git process runs in the clone and the lock is older than ``STALE_INDEX_LOCK_SECONDS``
  (``recover_interrupted``).
- **haytham's own merge, half done** (``MERGE_HEAD`` with the message ``haytham: sync with
  …``): undone with ``git merge --abort``; the sync then merges again. A merge a person
  started is never touched.
- **A dead run's uncommitted files.** A runner killed during a run leaves the session's files
  it saved but had not committed yet, and its claim. Once the claim expires another worker
  redoes that work and pushes it, and git refuses to merge it over the leftovers ("untracked
  working tree files would be overwritten by merge"). When a merge is refused so, the
  leftovers of each session whose claim is in this clone's last commit and that no process
  here is running (its run lease is free) are moved into ``KEPT_DIR`` at the top of the
  clone, one folder per session and sync (``.haytham-kept/20260501T100000Z-acme-idea-1/``,
  with the files at their paths in the repository), after the store finishes any change a
  killed writer left half applied. Nothing is thrown away; ``.haytham-kept`` ignores itself
  in git. The merge is then tried again. Uncommitted files anywhere else (a person's edits)
  are never moved: the sync stops and names them.
- **A ``.gitattributes`` written by ``haytham git setup`` before the remote had one**: the
  remote's is taken; the lines of this clone's that the remote's lacks are kept in
  ``KEPT_DIR``, and the haytham lines are added again (and committed) by ``sync``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from haytham.format.layout import CLAIM_FILE, GITATTRIBUTES_FILE, KEPT_DIR, KEPT_NOTE_FILE
from haytham.frozen import frozen
from haytham.git.repository import relative_to_root, run_git
from haytham.store.lease import holder

STALE_INDEX_LOCK_SECONDS = 5.0
"""An index lock this old, with no git process in the clone, was left by a killed git."""
SYNC_MERGE_MESSAGE = "haytham: sync with "
"""How the message of every merge ``sync`` makes begins."""
ATTRIBUTES = GITATTRIBUTES_FILE


@frozen
class SetAside:
    """What was moved out of a merge's way."""

    notes: tuple[str, ...]
    """One sentence for each thing done, naming where the files are kept."""
    attributes: bool
    """True when this clone's .gitattributes was replaced by the remote's (re-add haytham's lines)."""


def recover_interrupted(root: Path) -> list[str]:
    """Undo what a killed git or sync left in ``root`` (module docstring); a note for each."""
    notes = []
    lock = _git_path(root, "index.lock")
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        age = None
    from haytham.git.autocommit import git_processes_in  # imported when used: it imports the
    # store, which the merge driver (importing this module through sync) never needs

    if age is not None and age >= STALE_INDEX_LOCK_SECONDS and git_processes_in(root) == []:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        notes.append(f"removed a stale {lock} (a git command was killed; none runs in {root})")
    merge_head = _git_path(root, "MERGE_HEAD")
    if merge_head.exists():
        try:
            message = _git_path(root, "MERGE_MSG").read_text("utf-8", "replace")
        except OSError:
            message = ""
        if message.startswith(SYNC_MERGE_MESSAGE):
            run_git(["merge", "--abort"], root)
            notes.append("undid the merge an interrupted sync left half done")
    return notes


def set_aside_for_merge(root: Path, base_dir: Path, theirs: str) -> SetAside | None:
    """Move the leftovers of dead runs (and an old ``.gitattributes``) that stand in the way of
    merging ``theirs`` into ``KEPT_DIR`` (module docstring); None when something else is in
    the way (the caller reports git's refusal). ``base_dir`` is absolute and resolved."""
    dirty = _dirty(root, ".")
    incoming = set(_z(run_git(["diff", "--name-only", "-z", f"HEAD...{theirs}"], root).stdout))
    blocking = [path for path in dirty if path in incoming or any(p.startswith(path + "/") for p in incoming)]
    if not blocking:
        return None
    sessions: dict[Path, str] = {}
    attributes = False
    for path in blocking:
        if path == ATTRIBUTES:
            attributes = True
            continue
        found = _session_of(root, base_dir, path)
        if found is None:
            return None
        sessions[found[0]] = found[1]
    for session_dir in sessions:
        if holder(session_dir) is not None or not _claimed_in_head(root, session_dir):
            return None  # a live run, or no claim: a person's changes, never moved
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    notes = []
    from haytham.store.manager import CheckpointManager  # imported when a sync sets files aside:
    # the merge driver imports this module (through sync) and needs none of the store

    for session_dir, what in sessions.items():
        project_id, session_id = what.split("/", 1)
        CheckpointManager(base_dir).recover(project_id, session_id)  # a half change, whole first
        kept = _kept_folder(root, f"{stamp}-{project_id}-{session_id}")
        moved = _move_aside(root, session_dir, kept)
        (kept / KEPT_NOTE_FILE).write_text(
            f"# Kept by haytham sync\n\nThe files below were left uncommitted in {what} by a run that "
            f"was interrupted (its claim was in this clone's last commit and no process here runs "
            f"the session). The remote has that session's work since, so they were moved here out "
            f"of the merge's way. haytham never reads this folder.\n\n"
            + "".join(f"- {name}\n" for name in moved),
            "utf-8",
        )
        notes.append(
            f"kept {len(moved)} file{'s' if len(moved) != 1 else ''} an interrupted run of {what} left "
            f"uncommitted in {relative_to_root(root, kept)} (the remote has that work now)"
        )
    if attributes:
        ours = (root / ATTRIBUTES).read_text("utf-8", "replace").splitlines()
        shown = run_git(["show", f"{theirs}:{ATTRIBUTES}"], root, check=False)
        theirs_lines = set(shown.stdout.decode("utf-8", "replace").splitlines())
        extra = [line for line in ours if line.strip() and line not in theirs_lines]
        if extra:
            kept = _kept_folder(root, f"{stamp}-gitattributes")
            shutil.copy2(root / ATTRIBUTES, kept / ATTRIBUTES)
            notes.append(
                f"kept this clone's {ATTRIBUTES} in {relative_to_root(root, kept)}; took the remote's"
            )
        _restore(root, [ATTRIBUTES])
    return SetAside(tuple(notes), attributes)


def _kept_folder(root: Path, name: str) -> Path:
    top = root / KEPT_DIR
    top.mkdir(exist_ok=True)
    ignore = top / ".gitignore"
    if not ignore.exists():
        ignore.write_text(
            "# haytham sync keeps here what it moved out of a merge's way; never committed\n*\n"
        )
    folder, number = top / name, 1
    while folder.exists():
        number += 1
        folder = top / f"{name}-{number}"
    folder.mkdir()
    return folder


def _move_aside(root: Path, session_dir: Path, kept: Path) -> list[str]:
    """Copy every uncommitted file of the session into ``kept``, then make the session's files
    what the last commit has. The names of the files kept."""
    entries = _dirty(root, relative_to_root(root, session_dir))
    moved = []
    for path, status in entries.items():
        source = root / path
        if "D" in status or not source.is_file():
            continue
        target = kept / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        moved.append(path)
    _restore(root, list(entries))
    return moved


def _restore(root: Path, paths: list[str]) -> None:
    """Make ``paths`` what HEAD has: tracked ones checked out, the others removed (kept first)."""
    if not paths:
        return
    run_git(["reset", "--quiet", "--", *paths], root, check=False)
    tracked = set(_z(run_git(["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *paths], root).stdout))
    if tracked:
        run_git(["checkout", "--quiet", "HEAD", "--", *sorted(tracked)], root)
    for path in paths:
        if path in tracked:
            continue
        target = root / path
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        for parent in target.parents:  # folders left empty go too
            if parent == root or any(parent.iterdir()):
                break
            parent.rmdir()


def _dirty(root: Path, spec: str) -> dict[str, str]:
    """Each uncommitted path under ``spec`` (untracked files one by one) and its status."""
    found = run_git(["status", "--porcelain", "-z", "--untracked-files=all", "--", spec], root).stdout
    items = _z(found)
    entries: dict[str, str] = {}
    index = 0
    while index < len(items):
        item = items[index]
        status, path = item[:2], item[3:]
        entries[path] = status
        index += 2 if "R" in status or "C" in status else 1  # a rename names its source next
    return entries


def _session_of(root: Path, base_dir: Path, path: str) -> tuple[Path, str] | None:
    """The session folder ``path`` is in, and its ``project/session``; None outside any."""
    try:
        parts = (root / path).relative_to(base_dir).parts
    except ValueError:
        return None
    if len(parts) < 4 or parts[1] != "sessions":
        return None
    return (base_dir / parts[0] / "sessions" / parts[2], f"{parts[0]}/{parts[2]}")


def _claimed_in_head(root: Path, session_dir: Path) -> bool:
    spec = relative_to_root(root, session_dir / CLAIM_FILE)
    return run_git(["cat-file", "-e", f"HEAD:{spec}"], root, check=False).returncode == 0


def _git_path(root: Path, name: str) -> Path:
    found = Path(os.fsdecode(run_git(["rev-parse", "--git-path", name], root).stdout.strip()))
    return found if found.is_absolute() else root / found


def _z(output: bytes) -> list[str]:
    return [name for name in output.decode("utf-8", "replace").split("\0") if name]


__all__ = ["KEPT_DIR", "SetAside", "recover_interrupted", "set_aside_for_merge"]
