"""Storage primitives: durable atomic writes, hidden temporary files and per-session locks.

A write goes to a hidden temporary file in the target's directory, is fsynced, replaced into
place with ``os.replace`` and the directory is fsynced, so a reader sees the old file or the
new one and a save that returned survives a crash. Temporary files start with ``.`` and end
with ``TMP_SUFFIX``: no ``*.md`` glob or listing of documents ever sees one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from haytham.errors import LockTimeout

TMP_SUFFIX = ".haytham-tmp"
LOCK_NAME = ".haytham.lock"
DEFAULT_LOCK_TIMEOUT = 30.0
GITIGNORE_TEXT = (
    "# Written by haytham: its lock and temporary files never belong in version control.\n"
    f"{LOCK_NAME}\n"
    f".*{TMP_SUFFIX}\n"
)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (as UTF-8) to ``path`` durably; the old content stays until the swap."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    directory = path.parent
    tmp = directory / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(directory)


def make_dirs(path: Path) -> None:
    """Create ``path`` and its parents, fsyncing each parent whose entries changed."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir()
        fsync_dir(directory.parent)


def temporary_leftovers(directory: Path) -> list[Path]:
    """The temporary files a killed writer left in ``directory``."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(directory / n for n in names if n.startswith(".") and n.endswith(TMP_SUFFIX))


def remove_leftovers(directory: Path) -> list[Path]:
    """Delete the temporary files of dead writers in ``directory``; return what went.

    Call it only while holding the lock that every writer of ``directory`` takes, so that no
    live writer's temporary file is removed.
    """
    removed = []
    for leftover in temporary_leftovers(directory):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
            removed.append(leftover)
    return removed


@contextlib.contextmanager
def locked(directory: Path, timeout: float, what: str) -> Iterator[None]:
    """Hold the OS lock of ``directory`` (released by the kernel if the holder dies)."""
    lock = FileLock(directory / LOCK_NAME, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise LockTimeout(
            f"timed out after {timeout:g}s waiting for the lock of {what} "
            f"({directory / LOCK_NAME}): another process is saving to it",
            path=directory,
        ) from None
    try:
        yield
    finally:
        lock.release()


def ensure_gitignore(base_dir: Path) -> None:
    """Give ``base_dir`` a .gitignore for haytham's lock and temporary files, once."""
    target = base_dir / ".gitignore"
    if not target.exists():
        atomic_write(target, GITIGNORE_TEXT)
