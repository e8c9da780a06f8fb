"""Copy a session folder whole: read the files a session holds, write them all at once.

Forking, exporting and importing all move whole sessions. What belongs to a session is
decided here (``is_session_path``, ``is_session_directory``): the manifest, the phase files
and their attempts, the history and ``workflow.yaml``, never a lock, a temporary file or a
person's stray notes. ``write_session_dir`` makes a session appear complete or not at all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path

from haytham.errors import SessionExistsError, UnsafeNameError, UnsafePathError
from haytham.format.guard import read_file
from haytham.format.layout import (
    ATTEMPTS_DIR,
    HISTORY_DIR,
    MANIFEST_FILE,
    PHASE_DIR_PREFIX,
    REPLACED_SUFFIX,
    STAGING_SUFFIX,
    WORKFLOW_FILE,
)
from haytham.store import fs as _storage
from haytham.store import journal
from haytham.store.doctor import restore_replaced
from haytham.store.names import check_name
from haytham.store.session_files import kind_of


def is_session_path(relative: str) -> bool:
    """True for the relative (``/``-separated) path of a file a session directory holds."""
    parts = relative.split("/")
    if not all(_safe_part(part) for part in parts):
        return False
    if len(parts) == 1:
        return parts[0] in (MANIFEST_FILE, WORKFLOW_FILE)
    if parts[-1] == MANIFEST_FILE or kind_of(Path(*parts)) is None:
        return False
    if len(parts) == 2:
        return parts[0] == HISTORY_DIR or parts[0].startswith(PHASE_DIR_PREFIX)
    return (
        len(parts) == 4
        and parts[0].startswith(PHASE_DIR_PREFIX)
        and parts[1] == ATTEMPTS_DIR
        and parts[2].isdigit()
    )


def is_session_directory(relative: str) -> bool:
    """True for the relative path of a directory a session holds (``history``, a phase, ...)."""
    parts = relative.split("/")
    if not all(_safe_part(part) for part in parts):
        return False
    if parts == [HISTORY_DIR]:
        return True
    if not parts[0].startswith(PHASE_DIR_PREFIX):
        return False
    if len(parts) == 1:
        return True
    return parts[1] == ATTEMPTS_DIR and (len(parts) == 2 or (len(parts) == 3 and parts[2].isdigit()))


def _safe_part(part: str) -> bool:
    try:
        check_name("path", part)
    except UnsafeNameError:
        return False
    return True


def session_listing(directory: Path, *, only: Collection[str] | None = None) -> tuple[list[str], list[str]]:
    """The relative paths of the session's files and of its directories, sorted, read from
    the folders alone (no file is opened): what ``read_session_files`` reads."""
    files: list[str] = []
    directories: list[str] = []
    for root, subdirs, names in os.walk(directory):
        here = Path(root)
        prefix = here.relative_to(directory).as_posix()
        prefix = "" if prefix == "." else prefix + "/"
        for name in sorted(subdirs):
            if is_session_directory(prefix + name) and (only is None or prefix or name in only):
                _refuse_symlink(here / name)
                directories.append(prefix + name)
        subdirs[:] = sorted(
            s for s in subdirs if is_session_directory(prefix + s) and (only is None or prefix or s in only)
        )
        for name in sorted(names):
            if is_session_path(prefix + name) and (only is None or prefix or name in only):
                _refuse_symlink(here / name)
                files.append(prefix + name)
    return sorted(files), sorted(directories)


def read_session_files(
    directory: Path, *, only: Collection[str] | None = None
) -> tuple[dict[str, bytes], list[str]]:
    """The session's files by relative path (sorted) and its directories, as they are now.

    Only what ``is_session_path`` and ``is_session_directory`` accept is read; the lock,
    temporary files and anything a person added are left out. A symlink where a session
    file or directory belongs is refused: a session holds regular files only. With
    ``only``, just the top-level names it holds (phase directories, ``workflow.yaml``) are
    read: a fork of phase 2 reads phase 1, not the whole session.
    """
    names, directories = session_listing(directory, only=only)
    return {name: read_session_file(directory, name) for name in names}, directories


def read_session_file(directory: Path, relative: str) -> bytes:
    """The bytes of a session's file, refused above the limit of its kind (an agent output's
    is larger than the other files', docs/formats.md "Limits")."""
    kind = kind_of(Path(relative))
    return read_file(directory / relative, None if kind is None else kind.max_bytes)


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise UnsafePathError(
            f"{path} is a symlink: a session holds regular files and directories only", field="path"
        )


def write_session_dir(
    target: Path,
    files: Mapping[str, bytes] | Callable[[Staging], None],
    directories: Iterable[str] = (),
    *,
    overwrite: bool = False,
    lock_timeout: float = _storage.DEFAULT_LOCK_TIMEOUT,
    what: str = "session",
) -> None:
    """Make ``target`` a session directory holding exactly ``files``, all at once.

    Under the project's lock, the files are written into a hidden staging folder beside the
    project's ``sessions/`` (``.{id}.{pid}.{hex}.haytham-staging``), fsynced, and renamed into
    place: readers never see part of a session, and the rename is the commit point. An
    existing ``target`` raises SessionExistsError, or with ``overwrite`` is replaced under
    its own lock by one journaled operation (``haytham.store.journal``): rename it aside
    (``.haytham-replaced``), move the staging folder in, remove the old one. A kill at any
    point leaves the old session or the new one once recovered (the next fork or import in
    the project, or ``doctor --fix``). On a failure before the commit point the staging
    folder and the parents this call made are removed.

    ``files`` is what to write, or a function that fills the ``Staging`` itself under the
    lock (an import checks each file of an archive as it writes it, so a large session is
    never held in memory); what it raises leaves nothing behind, like any failure here.
    """
    project_dir = target.parent.parent
    made = list(_missing(target.parent))
    change: journal.Change | None = None
    staging: Path | None = None
    try:
        _storage.make_dirs(target.parent)
        with _storage.locked(project_dir, lock_timeout, f"project {project_dir.name}"):
            journal.recover(project_dir)  # and what killed writers staged
            restore_replaced(project_dir)
            staging = project_dir / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}{STAGING_SUFFIX}"
            if callable(files):
                filled = Staging(staging)
                files(filled)
                filled.sync()
            else:
                _stage(staging, files, directories)
            change = journal.Change(project_dir, "replace session" if overwrite else "add session")
            if overwrite and target.exists():
                with _storage.locked(target, lock_timeout, what):
                    old = staging.with_name(staging.name.replace(STAGING_SUFFIX, REPLACED_SUFFIX))
                    change.rename(target, old)
                    change.move_into_place(staging, target)
                    change.remove_tree(old)
                    change.commit()  # the old lock file goes with the old folder: waiters retry
            else:
                if target.exists():
                    raise _exists(target, what)
                change.move_into_place(staging, target)
                if change.commit():
                    raise _exists(target, what)
    except BaseException:
        if staging is not None and (change is None or not change.committed or change.conflicts):
            with contextlib.suppress(UnsafePathError):
                _storage.remove_tree(staging, ignore_errors=True)
        for parent in reversed(made):
            with contextlib.suppress(OSError, UnsafePathError):
                if parent == project_dir:  # made by this call: its lock file goes with it
                    _storage.remove_file(parent / _storage.LOCK_NAME)
                parent.rmdir()
        raise


class Staging:
    """The new folder a session is written into before it is moved into place
    (``write_session_dir``): files and folders are added one by one, then all fsynced."""

    def __init__(self, root: Path) -> None:
        journal.make_folder(root)
        self.root = root
        self._made = {root}

    def folder(self, relative: str) -> Path:
        """Make the folder ``relative`` (and its parents) in the staging folder."""
        path = self.root / relative
        for folder in reversed([path, *path.parents]):
            if folder not in self._made and self.root in folder.parents:
                journal.make_folder(folder)
                self._made.add(folder)
        return path

    def write(self, relative: str, data: bytes | Iterable[bytes]) -> Path:
        """Write the new file ``relative`` (bytes, or chunks as they come), fsynced."""
        path = self.root / relative
        for folder in reversed([path.parent, *path.parent.parents]):
            if folder not in self._made and self.root in folder.parents and not folder.exists():
                journal.make_folder(folder)
                self._made.add(folder)
        journal.write_new(path, data)  # a file where a folder belongs: the error names the path
        return path

    def sync(self) -> None:
        """fsync every folder made, deepest first: the files' names are durable."""
        for folder in sorted(self._made, key=lambda p: len(p.parts), reverse=True):
            journal.fsync_dir(folder)


def _stage(staging: Path, files: Mapping[str, bytes], directories: Iterable[str]) -> None:
    """Write the session's files into the new folder ``staging``, every one fsynced."""
    stage = Staging(staging)
    for directory in sorted(directories):
        stage.folder(directory)
    for relative, data in sorted(files.items()):
        stage.write(relative, data)
    stage.sync()


def _exists(target: Path, what: str) -> SessionExistsError:
    return SessionExistsError(
        f"{what} appeared at {target} while it was being written; it was left untouched", path=target
    )


def _missing(directory: Path) -> Iterator[Path]:
    """``directory`` and its parents that do not exist yet, outermost first."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return reversed(missing)


__all__ = [
    "Staging",
    "is_session_directory",
    "is_session_path",
    "read_session_file",
    "read_session_files",
    "session_listing",
    "write_session_dir",
]
