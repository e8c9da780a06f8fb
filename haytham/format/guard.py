"""The one guarded read: every file haytham reads from a tree is opened here.

Sessions arrive by ``git pull``, by import and by hand, so any file may be hostile. A read
therefore holds three promises, whatever the caller:

- **Never out of the tree.** A store registers its base directory (``guard_tree``). A file
  below a registered tree is read only when the file actually opened lies inside the tree's
  real path: a symlink (of the file or of any folder above it) that stays inside the tree is
  followed, one that leads out is refused with an ``UnsafeFileError`` naming the link and
  where it points, and nothing of the target is read. The check is of the open descriptor
  itself (``/proc/self/fd`` on Linux), so a link swapped in between a check and the open
  changes nothing. Writes never go through a link at all (``haytham.store.fs``).
- **Regular files only.** The open never blocks (``O_NONBLOCK``: a FIFO would wait for a
  writer forever) and the descriptor is ``fstat``-ed first: a FIFO, device, socket or
  folder where a file should be is refused before one byte is read.
- **Never past a limit.** A file longer than its kind's documented limit is refused by its
  size before it is read; a file that grows while it is read is read up to the limit and
  refused then, so no read ever holds more than the limit in memory.

Outside every registered tree (a file named on the command line, a workflow beside the
project) the last two promises still hold.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from haytham.errors import DocumentError, UnsafeFileError, storage_error

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""The largest markdown file haytham reads: a larger one is a DocumentError, never read."""
_CHUNK = 1 << 16
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_IN_FOLDER = bool(_NO_FOLLOW) and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd
"""Whether files can be opened by name in an open folder without following a link."""
_FD_LINKS = "/proc/self/fd"
_HAS_FD_LINKS = sys.platform.startswith("linux") and os.path.isdir(_FD_LINKS)

_TREES: dict[str, str] = {}
"""The guarded trees: each registered base directory (absolute, as given) and its real path."""
_KIND_NAMES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def guard_tree(base_dir: str | os.PathLike[str]) -> None:
    """Bound every later read below ``base_dir`` to the tree (see the module's docstring).

    Idempotent and cheap; the real path is taken now, so a base directory that is itself a
    symlink (a projects folder on another disk) is a tree like any other.
    """
    absolute = os.path.abspath(base_dir)
    if absolute not in _TREES:
        _TREES[absolute] = os.path.realpath(absolute)
        _FOLDERS.clear()  # a folder below the new tree now belongs to it


def absolute(path: str | os.PathLike[str]) -> str:
    """``os.path.abspath(path)``, without the work for a path that is absolute and normal
    already (no ``.`` or ``..`` part, no doubled or final separator): every path a session's
    save reads or writes, each checked several times over."""
    text = os.fspath(path)
    if os.sep == "/" and text[:1] == "/" and text[-1:] != "/" and "//" not in text and "/." not in text:
        return text
    return os.path.abspath(text)


def tree_of(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """The innermost guarded tree holding ``path`` (as given, real), or None: the tree whose
    files these are."""
    current = absolute(path)
    real = _TREES.get(current)
    if real is not None:
        return current, real
    folder = os.path.dirname(current)
    found = _FOLDERS.get(folder, _NOT_KNOWN)
    return _folder_tree(folder) if found is _NOT_KNOWN else found


def _folder_tree(folder: str) -> tuple[str, str] | None:
    """``tree_of`` of a folder not remembered yet: up to the first folder that is a tree or
    is remembered, then remembered for every folder on the way."""
    unknown = []
    current = folder
    while True:
        found = _FOLDERS.get(current, _NOT_KNOWN)
        if found is not _NOT_KNOWN:
            break
        unknown.append(current)
        real = _TREES.get(current)
        if real is not None:
            found = current, real
            break
        parent = os.path.dirname(current)
        if parent == current:
            found = None
            break
        current = parent
    if len(_FOLDERS) + len(unknown) > _MOST_FOLDERS:
        _FOLDERS.clear()
    for each in unknown:
        _FOLDERS[each] = found
    return found


_FOLDERS: dict[str, tuple[str, str] | None] = {}
"""``tree_of`` of the folders of files read, so a read costs one look-up, not a step a level
above it (forgotten whenever a tree is registered, and when it holds ``_MOST_FOLDERS``)."""
_MOST_FOLDERS = 4096
_NOT_KNOWN = ("", "")
"""What ``_FOLDERS.get`` gives for a folder it does not hold (compared by identity; a
thread may forget every folder between a test and a look-up, so there is one look-up)."""


@contextlib.contextmanager
def opened(path: str | os.PathLike[str]) -> Iterator[tuple[int, os.stat_result]]:
    """An open read-only descriptor of the regular file at ``path`` and its ``fstat``, under
    the guards of this module; closed when the block ends.

    Raises FileNotFoundError for a missing file, ``UnsafeFileError`` for a file that is not a
    regular file or that lies out of its tree, and a StorageError naming the file for any
    other OSError.
    """
    fd = _open(path)
    try:
        yield fd, _inspect(fd, path)
    finally:
        os.close(fd)


def _open(path: str | os.PathLike[str]) -> int:
    """``os.open`` of ``path`` for a guarded read (``opened``), its failure in plain words."""
    try:
        return os.open(path, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:
        mode = _mode(path) if error.errno == errno.ENXIO else None  # a socket: no open reaches it
        if mode is not None:
            raise _not_regular(path, mode) from error
        raise storage_error(error, path, "read") from error


def _inspect(fd: int, path: str | os.PathLike[str]) -> os.stat_result:
    """The ``fstat`` of the descriptor ``_open`` gave for ``path``, refused (see ``opened``)
    unless it is a regular file inside its tree."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        cause = IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        raise storage_error(cause, path, "read") from cause
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path, info.st_mode)
    _check_inside(fd, path)
    return info


def read_file(
    path: Path, limit: int | None = None, *, too_long: Callable[[int], DocumentError] | None = None
) -> bytes:
    """The bytes of the regular file at ``path``, read under the guards of this module.

    A file of more than ``limit`` bytes (None: ``MAX_DOCUMENT_BYTES``) is a DocumentError
    (``too_long(size)`` when given, for a kind that words its limit its own way), judged by
    its size before it is read. An OSError other than a missing file is a StorageError
    naming ``path`` in plain words ("... is a folder where a file should be")."""
    return read_file_stat(path, limit, too_long=too_long)[0]


def read_file_stat(
    path: str | os.PathLike[str],
    limit: int | None = None,
    *,
    too_long: Callable[[int], DocumentError] | None = None,
) -> tuple[bytes, os.stat_result]:
    """``read_file``, and the ``fstat`` of the file it read: the identity of those very
    bytes, for a cache keyed by what each file is, which then needs no ``stat`` of its own
    before a file it has never read."""
    found, info = _read(path, limit, None, too_long)
    assert isinstance(found, bytes)
    return found, info


def read_existing(path: Path, limit: int | None = None) -> bytes | None:
    """``read_file``, or None when there is no file at ``path``: a writer that looks for the
    files a session may hold (most phases have no checkpoint yet) learns of a missing one
    from the one failed open, with no exception raised through the guards."""
    try:
        fd = _open(path)
    except FileNotFoundError:
        return None
    found = _read_opened(fd, path, limit, None, None)[0]
    assert isinstance(found, bytes)
    return found


def map_file(path: Path, limit: int | None, smallest: int) -> bytes | mmap.mmap:
    """``read_file``, except that a file of more than ``smallest`` bytes comes back mapped
    read-only (``mmap``), not read: a caller that decodes only the parts it needs (an agent
    output's header and content, ``str(memoryview(mapped)[a:b], "utf-8")``) then never holds
    the file's bytes beside its text. The mapped pages are the system's page cache, which it
    may evict; the caller closes the mapping."""
    return _read(path, limit, smallest, None)[0]


def read_start(path: str | os.PathLike[str], most: int) -> tuple[bytes, int]:
    """The first ``most`` bytes of the regular file at ``path`` (all of a shorter one) and
    its size, under the guards of this module: what a page shows of an output of hundreds of
    megabytes, read without the rest."""
    with opened(path) as (fd, info):
        pieces: list[bytes] = []
        total = 0
        while total < most:
            try:
                piece = os.read(fd, most - total)
            except OSError as error:
                raise storage_error(error, path, "read") from error
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
        return b"".join(pieces), info.st_size


def read_small(path: str | os.PathLike[str], most: int = _CHUNK) -> tuple[bytes, os.stat_result] | None:
    """The bytes and ``fstat`` of the regular file at ``path``, inside its tree and shorter
    than ``most`` bytes, in one read; None for anything else (missing, larger, a link out, a
    FIFO, an error), which the caller then reads with ``read_file`` to learn what it is.

    The fast path of the scans that read one small file per session folder."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    return _read_small_opened(fd, most, path)


@contextlib.contextmanager
def open_folder(path: str | os.PathLike[str]) -> Iterator[int | None]:
    """A descriptor of the folder at ``path`` whose small files ``read_small_in`` reads by
    name, once the folder itself is found inside its tree (the check ``read_small`` makes of
    every file, made once for them all); None where that cannot be had (missing, not a
    folder, leading out of its tree, a system without ``openat``), and the caller then reads
    each file with ``read_small``. Closed when the block ends.

    For a folder of many small files (a history of a hundred thousand entries), so that each
    file costs an ``openat``, an ``fstat`` and a ``read``, not a look-up of its path's tree
    and a ``readlink`` of its descriptor."""
    if not _IN_FOLDER:  # pragma: no cover - every POSIX system haytham runs on has openat
        yield None
        return
    try:
        fd = os.open(path, _FOLDER_FLAGS)
    except OSError:
        yield None
        return
    try:
        try:
            _check_inside(fd, path)
        except OSError:  # leads out (UnsafeFileError): each file's own read names it
            yield None
            return
        yield fd
    finally:
        os.close(fd)


def read_small_in(folder: int, name: str, most: int = _CHUNK) -> tuple[bytes, os.stat_result] | None:
    """``read_small`` of the file ``name`` of the folder ``open_folder`` gave.

    The folder was found inside its tree, and the name is a plain name opened without
    following a symlink (``O_NOFOLLOW``), so the file opened is one of that folder's own:
    nothing out of the tree is read. None for anything ``read_small`` gives None for, and
    for a symlink or a name that is not a plain name: the caller then reads it by its path
    (``read_file``), which follows a link that stays in the tree and refuses one that leaves
    it, as it does for any file."""
    if os.sep in name or name in (".", ".."):
        return None
    try:
        fd = os.open(name, _FLAGS | _NO_FOLLOW, dir_fd=folder)
    except OSError:
        return None
    return _read_small_opened(fd, most, None)


def _read_small_opened(
    fd: int, most: int, path: str | os.PathLike[str] | None
) -> tuple[bytes, os.stat_result] | None:
    """``read_small`` of the descriptor ``fd`` (closed here), checked to lie inside its tree
    when ``path`` is given (a file opened by name in a checked folder needs no check).

    One ``read`` of a byte more than the ``fstat`` size (a buffer the file's size, not
    ``most``'s, so that ``most`` may be as large as ``MAX_DOCUMENT_BYTES``): a shorter answer
    is the whole file, a full one (the file grew since) gives None."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size >= most:
            return None
        if path is not None:
            _check_inside(fd, path)
        wanted = min(most, info.st_size + 1)
        data = os.read(fd, wanted)
        return (data, info) if len(data) < wanted else None
    except OSError:  # a link out (UnsafeFileError) too: read_file names it
        return None
    finally:
        os.close(fd)


def chunks(path: str | os.PathLike[str], limit: int) -> Iterator[bytes]:
    """The bytes of the regular file at ``path`` in pieces, under the guards of this module,
    for a reader that streams (a digest, an archive): memory stays one piece whatever the
    size. A file longer than ``limit`` is a DocumentError, before a piece or once it grew."""
    with opened(path) as (fd, info):
        if info.st_size > limit:
            raise _too_long(Path(path), info.st_size, limit)
        total = 0
        while True:
            try:
                piece = os.read(fd, 1 << 20)
            except OSError as error:
                raise storage_error(error, path, "read") from error
            if not piece:
                return
            total += len(piece)
            if total > limit:
                raise _too_long(Path(path), total, limit)
            yield piece


def _read(
    path: str | os.PathLike[str],
    limit: int | None,
    map_from: int | None,
    too_long: Callable[[int], DocumentError] | None,
) -> tuple[bytes | mmap.mmap, os.stat_result]:
    """The guarded read of ``read_file``, ``read_file_stat`` and ``map_file``: the bytes (or
    mapping) and the ``fstat`` of what was read."""
    return _read_opened(_open(path), path, limit, map_from, too_long)


def _read_opened(
    fd: int,
    path: str | os.PathLike[str],
    limit: int | None,
    map_from: int | None,
    too_long: Callable[[int], DocumentError] | None,
) -> tuple[bytes | mmap.mmap, os.stat_result]:
    """``_read`` of the descriptor ``_open`` gave for ``path``, which this closes.

    A file whose first ``read`` (of at least a byte more than its ``fstat`` size) gives
    exactly that size is whole: a read of a regular file stops short only at its end. Any
    other answer (the file grew or shrank since the ``fstat``) is read on to the end, so a
    file is never cut where a stale size says it ends."""
    most = MAX_DOCUMENT_BYTES if limit is None else limit
    refuse = too_long or (lambda size: _too_long(Path(path), size, limit))
    try:
        info = _inspect(fd, path)
        if info.st_size > most:
            raise refuse(info.st_size)
        if map_from is not None and info.st_size > map_from:
            with contextlib.suppress(ValueError, OSError):  # shrunk since fstat: read it
                return mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ), info  # outlives fd
        try:
            chunk = os.read(fd, max(_CHUNK, info.st_size + 1))
            if len(chunk) == info.st_size:  # the size fstat saw, a byte short of what was asked: the end
                return chunk, info
            pieces: list[bytes] = []
            total = 0
            while chunk:  # it grew or shrank since fstat (or a read stopped short): read to the end
                total += len(chunk)
                if total > most:  # grew while it was read
                    raise refuse(total)
                pieces.append(chunk)
                chunk = os.read(fd, max(_CHUNK, info.st_size + 1 - total))
            return b"".join(pieces), info
        except OSError as error:
            raise storage_error(error, path, "read") from error
    finally:
        os.close(fd)


def _check_inside(fd: int, path: str | os.PathLike[str]) -> None:
    tree = tree_of(path)
    if tree is None:
        return
    root, real_root = tree
    if _HAS_FD_LINKS:
        try:
            real = os.readlink(f"{_FD_LINKS}/{fd}")
        except OSError:
            real = os.path.realpath(path)
    else:  # pragma: no cover - no /proc: the path resolved now
        real = os.path.realpath(path)
    if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
        return
    raise _leads_out(path, root, real)


def _leads_out(path: str | os.PathLike[str], root: str, real: str) -> UnsafeFileError:
    link = _first_link(os.path.abspath(path), root)
    if link is None:  # a hard-to-see way out (a bind mount, a link replaced since): the fact
        how = f"it is {real}"
    else:
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        how = f"{link} is a symlink to {target}"
    return UnsafeFileError(
        f"{path} leads out of {root} ({how}): haytham reads no file outside its base "
        "directory; replace the link with a real file",
        path=Path(path),
        brief=f"this file leads out of the base directory ({how}): haytham does not read it",
    )


def _first_link(absolute: str, root: str) -> str | None:
    """The outermost symlink between ``root`` and ``absolute``, for the error's message."""
    current = root
    rest = absolute[len(root.rstrip(os.sep)) + 1 :].split(os.sep) if absolute != root else []
    for part in rest:
        current = os.path.join(current, part)
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
    return None


def _mode(path: str | os.PathLike[str]) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _not_regular(path: str | os.PathLike[str], mode: int) -> UnsafeFileError:
    kind = next((name for test, name in _KIND_NAMES if test(mode)), "not a regular file")
    return UnsafeFileError(
        f"{path} is {kind} where a file should be: haytham reads regular files only",
        path=Path(path),
        brief=f"this file is {kind} where a file should be: haytham reads regular files only",
    )


def _too_long(path: Path, size: int, limit: int | None) -> DocumentError:
    most, kind = (MAX_DOCUMENT_BYTES, "") if limit is None else (limit, " of this kind")
    return DocumentError(
        f"is {size:,} bytes long: haytham reads session files{kind} of at most {most:,} bytes "
        "(docs/formats.md, Limits)",
        path=path,
    )
