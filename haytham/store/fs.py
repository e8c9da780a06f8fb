"""Storage primitives: durable atomic writes, hidden temporary files and per-session locks.

A write goes to a hidden temporary file in the target's directory, is fsynced, replaced into
place with ``os.replace`` and the directory is fsynced, so a reader sees the old file or the
new one and a save that returned survives a crash. Temporary files start with ``.`` and end
with ``TMP_SUFFIX``: no ``*.md`` glob or listing of documents ever sees one.

Every primitive turns an ``OSError`` into a ``haytham.errors.StorageError`` that names the
file in plain words ("no space left on device while writing ...") and keeps the original as
its cause.

No write leaves its tree: while ``locked(directory)`` is held, or inside ``confined(root)``,
every path a primitive writes, creates, locks or removes below that directory is checked
component by component (``lstat``) and refused, naming the link and where it points, when a
part is a symlink: git carries symlinks, so a pull request could plant ``history/`` pointing
at ``/etc``. Lock files are opened with ``O_NOFOLLOW``. ``check_no_symlink`` is the one check.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock
    fcntl = None  # type: ignore[assignment]

from haytham.errors import LockTimeout, StorageAction, UnsafeFileError, UnsafePathError, storage_error
from haytham.format import layout
from haytham.format.guard import absolute, read_file

TMP_SUFFIX = layout.TMP_SUFFIX
LOCK_NAME = layout.LOCK_FILE
DEFAULT_LOCK_TIMEOUT = 30.0
GITIGNORE_TEXT = (
    "# Written by haytham: its lock and temporary files never belong in version control.\n"
    f"{LOCK_NAME}\n"
    f"{layout.LEASE_FILE}\n"
    f".*{TMP_SUFFIX}\n"
    f"{layout.INDEX_DIR}/\n"
    f"{layout.JOURNAL_FILE}\n"
    f".*{layout.STAGING_SUFFIX}\n"
    f".*{layout.REPLACED_SUFFIX}\n"
    f".*{layout.TRASH_SUFFIX}\n"
    f".*{layout.REMOVING_SUFFIX}\n"
)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted as a lock file never blocks the open
_ROOTS: ContextVar[tuple[str, ...]] = ContextVar("haytham_confined_roots", default=())
"""The directories (absolute, as written) below which every write is checked for symlinks."""


@contextlib.contextmanager
def confined(root: str | os.PathLike[str]) -> Iterator[None]:
    """Check every path the primitives write below ``root`` for symlinks while the block runs
    (``locked`` confines to its directory by itself)."""
    token = _ROOTS.set((*_ROOTS.get(), os.path.abspath(root)))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def check_no_symlink(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> None:
    """Refuse ``path`` (UnsafePathError naming the link and its target) when it, or any folder
    between ``root`` and it, is a symlink.

    Without ``root``, the outermost directory given to ``confined`` or held by ``locked`` that
    holds ``path`` is the root; when there is none, only ``path`` itself is checked. Parts that
    do not exist yet are fine: haytham creates them as real folders.
    """
    full = absolute(path)
    start = absolute(root) if root is not None else confining_root(full)
    if start is None or not _below(full, start):
        start = os.path.dirname(full)
    parts = parts_below(full, start)
    current = start
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        except OSError as error:
            raise storage_error(error, current, "read") from error
        if stat.S_ISLNK(mode):
            raise _symlink_error(current, start)


def parts_below(absolute: str, start: str) -> list[str]:
    """The names from ``start`` down to ``absolute`` (``os.path.relpath(absolute, start)``
    split), for ``start`` equal to or a folder above ``absolute``, both normalised by
    ``os.path.abspath``: the rest of the text, without relpath normalising both again."""
    return absolute[len(start.rstrip(os.sep)) + 1 :].split(os.sep) if absolute != start else []


def confining_root(path: str | os.PathLike[str]) -> str | None:
    """The outermost directory given to ``confined`` or held by ``locked`` that holds
    ``path`` (the root ``check_no_symlink`` checks from), or None when there is none."""
    full = absolute(path)
    inside = [r for r in _ROOTS.get() if _below(full, r)]
    return min(inside, key=len) if inside else None


def _below(absolute: str, root: str) -> bool:
    return absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep)


def _symlink_error(link: str, root: str) -> UnsafePathError:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    error = UnsafePathError(
        f"{link} is a symlink (to {target}): haytham never writes through a symlink inside "
        f"{root}; replace it with a real file or folder",
        field="path",
    )
    error.path = Path(link)
    return error


NO_FILE = "none"
"""The version (``file_version``) of a file that does not exist."""


def file_version(path: Path) -> tuple[str, bytes | None]:
    """The version of the file at ``path`` (a hash of its bytes; ``NO_FILE`` when there is
    none) and its bytes (None when there is none).

    A page rendered from one version of a file a person also edits (user_feedback.md) sends
    it back with its write; the writer compares it under the lock (``save_user_feedback``'s
    ``expected_version``), so a write over a version nobody saw is refused."""
    try:
        data = read_file(path)
    except FileNotFoundError:
        return NO_FILE, None
    import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

    return hashlib.sha256(data).hexdigest()[:20], data


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise storage_error(error, directory, "write") from error


def atomic_write(path: Path, text: str | bytes, *, sync_folder: bool = True) -> None:
    """Write ``text`` (as UTF-8) to ``path`` durably; the old content stays until the swap.

    ``sync_folder=False`` leaves the fsync of ``path``'s folder, which makes the swap itself
    durable, to the caller (``fsync_dir``): one that holds a lock while it writes does it
    after letting the lock go, so that the next writer's own writing overlaps it.

    StorageError names ``path`` when the file system refuses (no space, read-only, ...);
    UnsafePathError when ``path`` or a folder on the way is a symlink (see the module).
    """
    check_no_symlink(path)
    try:
        _atomic_write(path, text, sync_folder)
    except OSError as error:
        raise storage_error(error, path, "write") from error


def _atomic_write(path: Path, text: str | bytes, sync_folder: bool = True) -> None:
    data = text.encode("utf-8") if isinstance(text, str) else text
    directory = os.path.dirname(path) or "."
    tmp = _tmp_name(directory, path)
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
    if sync_folder:
        fsync_dir(directory)


@contextlib.contextmanager
def atomic_stream(path: Path) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through, piece by piece, with ``atomic_write``'s promise:
    the content appears at ``path`` whole (fsynced, replaced, directory fsynced) when the block
    ends, and not at all if it raises. For large outputs (an export archive) that should not
    be held in memory twice."""
    check_no_symlink(path)
    directory = os.path.dirname(path) or "."
    tmp = _tmp_name(directory, path)
    try:
        handle = open(tmp, "xb")  # noqa: SIM115 - closed below, before the replace
    except OSError as error:
        raise storage_error(error, path, "write") from error
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise storage_error(error, path, "write") from error
        raise
    fsync_dir(directory)


def _tmp_name(directory: str, path: str | os.PathLike[str]) -> str:
    return os.path.join(
        directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}"
    )


def make_dirs(path: Path) -> None:
    """Create ``path`` and its parents, fsyncing each parent whose entries changed.

    StorageError names the folder that could not be made; UnsafePathError refuses a symlink
    on the way (see the module)."""
    check_no_symlink(path)
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    if not current.is_dir():
        raise storage_error(OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)), path, "create")
    for directory in reversed(missing):
        try:
            with contextlib.suppress(FileExistsError):
                directory.mkdir()
        except OSError as error:
            raise storage_error(error, directory, "create") from error
        fsync_dir(directory.parent)
    if missing:
        check_no_symlink(path)  # a link planted while the folders were being made


def remove_tree(path: Path, *, ignore_errors: bool = False) -> None:
    """Remove the folder ``path`` and everything in it, never through a symlink (a symlink
    inside is removed as a link; ``path`` or a folder on the way being one is refused).

    With ``ignore_errors`` what cannot be removed stays (a leftover ``doctor --fix`` finds);
    the symlink check still refuses."""
    import shutil  # only to remove a folder: it loads the archive modules too

    check_no_symlink(path)
    try:
        shutil.rmtree(path, ignore_errors=ignore_errors)
    except OSError as error:
        raise storage_error(error, path, "remove") from error


def remove_file(path: Path) -> None:
    """Remove the file ``path`` (nothing when there is none), never through a symlinked folder
    on the way (``path`` itself being a link removes the link)."""
    check_no_symlink(path.parent)
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        raise storage_error(error, path, "remove") from error


def rename(source: Path, target: Path, *, action: StorageAction = "write") -> None:
    """Rename ``source`` to ``target`` in one atomic step and fsync the folder(s), never
    through a symlink on either side; StorageError names ``source`` and what the rename was
    for (``action``: ``remove`` when it hides a folder about to be deleted)."""
    check_no_symlink(source)
    check_no_symlink(target)
    try:
        os.rename(source, target)
    except OSError as error:
        raise storage_error(error, source, action) from error
    fsync_dir(target.parent)
    if source.parent != target.parent:
        fsync_dir(source.parent)


def temporary_leftovers(directory: Path) -> list[Path]:
    """The temporary files a killed writer left in ``directory``."""
    check_no_symlink(directory)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(directory / n for n in names if n.startswith(".") and n.endswith(TMP_SUFFIX))


def remove_leftovers(directory: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Delete the temporary files of dead writers in ``directory``; return what went.

    Call it only while holding the lock that every writer of ``directory`` takes, so that no
    live writer's temporary file is removed. ``names``: the folder's listing, taken by a
    caller that holds that lock and has checked ``directory`` for symlinks (a save lists a
    phase folder once, for this and for the names it checks), instead of listing it here.
    """
    removed = []
    if names is None:
        leftovers = temporary_leftovers(directory)
    else:
        leftovers = sorted(directory / n for n in names if n.startswith(".") and n.endswith(TMP_SUFFIX))
    for leftover in leftovers:
        try:
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
                removed.append(leftover)
        except OSError as error:
            raise storage_error(error, leftover, "remove") from error
    return removed


@contextlib.contextmanager
def locked(directory: Path, timeout: float, what: str, *, root: Path | None = None) -> Iterator[None]:
    """Hold the OS lock of ``directory`` (released by the kernel if the holder dies).

    The lock is ``flock`` on ``directory/.haytham.lock`` (the file stays; it holds no data),
    taken directly where the platform has it and through filelock elsewhere or on a file
    system without flock. Like filelock's, it is not reentrant: each hold is its own open
    file, so two holds in one process exclude each other too. ``timeout`` < 0 waits forever.

    While held, writes below ``directory`` are checked for symlinks (see the module); the lock
    file is never followed if it is one. StorageError names the lock file when it cannot be
    made (a read-only tree: readers use ``read_locked``). With ``root`` (the base directory),
    ``directory`` itself is checked too, from ``root`` down.
    """
    path = os.path.join(directory, LOCK_NAME)
    check_no_symlink(path, root)
    try:
        fd = flock_path(path, timeout, what, directory) if fcntl is not None else None
    except OSError as error:
        raise _lock_error(error, path) from error
    if fd is None:
        with _filelock(path, timeout, what, directory), confined(directory):
            yield
        return
    try:
        with confined(directory):
            yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@contextlib.contextmanager
def read_locked(directory: Path, timeout: float, what: str) -> Iterator[bool]:
    """Hold the lock of ``directory`` for a read, if it can be had without writing; yield
    whether it is held.

    A read never writes: a lock file that does not exist is not created, and one that cannot
    be opened for writing (a read-only checkout, another user's tree) is opened read-only,
    which ``flock`` accepts. When even that fails, or flock is unavailable, the read goes on
    unlocked (yielding False): a tree nobody can lock is one nobody can save to through
    haytham, and each file is replaced whole, so the caller may compare two reads instead.
    """
    path = os.path.join(directory, LOCK_NAME)
    fd = None
    if fcntl is not None and os.path.isfile(path) and not os.path.islink(path):
        try:
            fd = flock_path(path, timeout, what, directory, create=False)
        except LockTimeout:
            raise  # a writer holds it: as for a writer, the caller is told
        except OSError:
            fd = None
    if fd is None:
        yield False
        return
    try:
        yield True
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _lock_error(error: OSError, path: str) -> Exception:
    if error.errno == errno.ELOOP:
        return _symlink_error(path, os.path.dirname(path))
    return storage_error(error, path, "write")


_CONTENTION = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})


def flock_path(path: str, timeout: float, what: str, directory: Path, *, create: bool = True) -> int | None:
    """An open descriptor of ``path`` holding its flock, or None when flock is unavailable;
    LockTimeout after ``timeout`` seconds of contention (0: try once, as the run lease does).

    With ``create=False`` (a reader), the file is not made, is opened read-only when it cannot
    be opened for writing, and the lock is shared: readers exclude writers, not each other."""
    assert fcntl is not None
    deadline = None if timeout < 0 else time.monotonic() + timeout
    pause = 0.001
    while True:
        if create:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK, 0o644)
        else:
            try:
                fd = os.open(path, os.O_RDWR | _NOFOLLOW | _NONBLOCK)
            except OSError as error:
                if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
                fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        _check_own_file(fd, path)
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if create else fcntl.LOCK_SH) | fcntl.LOCK_NB)
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


def _check_own_file(fd: int, path: str) -> None:
    """Refuse (closing ``fd``) a lock or lease file that is not a regular file of its own: a
    record written into a file with a second hard link would land wherever that other name
    is, outside the tree too (git never makes hard links; a person or a program did)."""
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink <= 1:
        return
    os.close(fd)
    how = f"has {info.st_nlink} hard links" if stat.S_ISREG(info.st_mode) else "is not a regular file"
    raise UnsafeFileError(
        f"{path} {how}: haytham writes its lock and lease records only into a file of its "
        "own; remove it (it holds no content) and run the command again",
        path=Path(path),
    )


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
    """Give ``base_dir`` a .gitignore for haytham's lock, temporary files and the traces of
    interrupted operations; a .gitignore haytham wrote earlier gets the names it lacks."""
    target = base_dir / ".gitignore"
    if os.path.islink(target):  # never written through, even when it dangles
        return
    try:
        text = target.read_text("utf-8")
    except FileNotFoundError:
        atomic_write(target, GITIGNORE_TEXT)
        return
    except (OSError, UnicodeError):
        return
    if text.startswith(GITIGNORE_TEXT.splitlines()[0]):  # haytham's own: add names it lacks
        have = set(text.splitlines())
        missing = [line for line in GITIGNORE_TEXT.splitlines() if line not in have]
        if missing:
            atomic_write(target, text + ("" if text.endswith("\n") else "\n") + "\n".join(missing) + "\n")
