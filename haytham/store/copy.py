"""Copy a session folder whole: read the files a session holds, write them all at once.

Forking, exporting and importing all move whole sessions. What belongs to a session is
decided here (``is_session_path``, ``is_session_directory``): the manifest, the phase files
and their attempts, the history and ``workflow.yaml``, never a lock, a temporary file or a
person's stray notes. ``write_session_dir`` makes a session appear complete or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

from haytham.errors import SessionExistsError, UnsafeNameError, UnsafePathError
from haytham.format.document import read_file
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
from haytham.store.names import check_name
from haytham.store.scan import kind_of


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
    files: dict[str, bytes] = {}
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
                files[prefix + name] = read_file(here / name)
    return dict(sorted(files.items())), sorted(directories)


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise UnsafePathError(
            f"{path} is a symlink: a session holds regular files and directories only", field="path"
        )


def write_session_dir(
    target: Path,
    files: Mapping[str, bytes],
    directories: Iterable[str] = (),
    *,
    overwrite: bool = False,
    lock_timeout: float = _storage.DEFAULT_LOCK_TIMEOUT,
    what: str = "session",
) -> None:
    """Make ``target`` a session directory holding exactly ``files``, all at once.

    The files are written (atomically, durably) into a hidden staging directory beside the
    project's ``sessions/`` and renamed into place: readers never see part of a session. An
    existing ``target`` raises SessionExistsError, or with ``overwrite`` is swapped out under
    its lock and deleted. On any failure the staging directory and the parents this call
    made are removed.
    """
    project_dir = target.parent.parent
    made = list(_missing(target.parent))
    staging = project_dir / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}{STAGING_SUFFIX}"
    try:
        _storage.make_dirs(target.parent)
        staging.mkdir()
        for directory in sorted(directories):
            _storage.make_dirs(staging / directory)
        for relative, data in sorted(files.items()):
            path = staging / relative
            _storage.make_dirs(path.parent)
            _storage.atomic_write(path, data)
        _storage.fsync_dir(staging)
        if overwrite and target.exists():
            _swap(staging, target, lock_timeout, what)
        else:
            _move_into_place(staging, target, what)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for parent in reversed(made):
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise


def _missing(directory: Path) -> Iterator[Path]:
    """``directory`` and its parents that do not exist yet, outermost first."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    return reversed(missing)


def _move_into_place(staging: Path, target: Path, what: str) -> None:
    try:
        os.rename(staging, target)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR, errno.ENOTDIR):
            raise SessionExistsError(
                f"{what} appeared at {target} while it was being written; it was left untouched",
                path=target,
            ) from None
        raise
    _storage.fsync_dir(target.parent)


def _swap(staging: Path, target: Path, lock_timeout: float, what: str) -> None:
    """Replace the session at ``target`` with ``staging`` while holding its lock.

    The old lock file is unlinked before the lock is released, so a saver that was waiting
    for it finds the lock gone and locks the new session instead.
    """
    old = staging.with_name(staging.name.replace(STAGING_SUFFIX, REPLACED_SUFFIX))
    with _storage.locked(target, lock_timeout, what):
        os.rename(target, old)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(old, target)
            raise
        _storage.fsync_dir(target.parent)
        _storage.fsync_dir(old.parent)
        (old / _storage.LOCK_NAME).unlink(missing_ok=True)
    shutil.rmtree(old)


__all__ = ["is_session_directory", "is_session_path", "read_session_files", "write_session_dir"]
