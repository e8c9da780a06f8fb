"""Storage primitives: durable atomic writes, hidden temporary files and per-session locks.

A write goes to a hidden temporary file in the target's directory, is fsynced, replaced into
place with ``os.replace`` and the directory is fsynced, so a reader sees the old file or the
new one and a save that returned survives a crash. Temporary files start with ``.`` and end
with ``TMP_SUFFIX``: no ``*.md`` glob or listing of documents ever sees one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock
    fcntl = None  # type: ignore[assignment]

from haytham.errors import LockTimeout
from haytham.format import layout

TMP_SUFFIX = layout.TMP_SUFFIX
LOCK_NAME = layout.LOCK_FILE
DEFAULT_LOCK_TIMEOUT = 30.0
GITIGNORE_TEXT = (
    "# Written by haytham: its lock and temporary files never belong in version control.\n"
    f"{LOCK_NAME}\n"
    f".*{TMP_SUFFIX}\n"
    f"{layout.INDEX_DIR}/\n"
)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (as UTF-8) to ``path`` durably; the old content stays until the swap."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(
        directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}"
    )
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
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
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
    """Hold the OS lock of ``directory`` (released by the kernel if the holder dies).

    The lock is ``flock`` on ``directory/.haytham.lock`` (the file stays; it holds no data),
    taken directly where the platform has it and through filelock elsewhere or on a file
    system without flock. Like filelock's, it is not reentrant: each hold is its own open
    file, so two holds in one process exclude each other too. ``timeout`` < 0 waits forever.
    """
    path = os.path.join(directory, LOCK_NAME)
    fd = _flock(path, timeout, what, directory) if fcntl is not None else None
    if fd is None:
        with _filelock(path, timeout, what, directory):
            yield
        return
    try:
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


_CONTENTION = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})


def _flock(path: str, timeout: float, what: str, directory: Path) -> int | None:
    """An open descriptor of ``path`` holding its flock, or None when flock is unavailable."""
    assert fcntl is not None
    deadline = None if timeout < 0 else time.monotonic() + timeout
    pause = 0.001
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno not in _CONTENTION:
                return None  # no flock here (ENOSYS, ENOLCK, EOPNOTSUPP): filelock decides
            if deadline is not None and time.monotonic() >= deadline:
                raise _timeout(timeout, what, directory) from None
            time.sleep(pause if deadline is None else max(0.0, min(pause, deadline - time.monotonic())))
            pause = min(pause * 2, 0.05)
            continue
        # The file may have been removed or replaced while we waited: lock the one in place.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextlib.contextmanager
def _filelock(path: str, timeout: float, what: str, directory: Path) -> Iterator[None]:
    from filelock import FileLock, Timeout  # only without flock: a read never pays for it

    lock = FileLock(path, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise _timeout(timeout, what, directory) from None
    try:
        yield
    finally:
        lock.release()


def _timeout(timeout: float, what: str, directory: Path) -> LockTimeout:
    return LockTimeout(
        f"timed out after {timeout:g}s waiting for the lock of {what} "
        f"({directory / LOCK_NAME}): another process is saving to it",
        path=directory,
    )


def ensure_gitignore(base_dir: Path) -> None:
    """Give ``base_dir`` a .gitignore for haytham's lock and temporary files, once."""
    target = base_dir / ".gitignore"
    if not target.exists():
        atomic_write(target, GITIGNORE_TEXT)
