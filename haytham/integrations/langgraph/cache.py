"""What a ``HaythamSaver`` has read of its threads' files, kept while the files are unchanged.

The files are the truth; this is a cache of what they say, in the saver's memory, keyed by
what each file is now. A read asks the file system first (one ``stat`` a file it kept, one
``stat`` a namespace folder) and uses what it kept only while that answer is the one it kept:

- a checkpoint or writes file: its sections (``files.split_sections``, the markdown parse)
  under the file's inode, size, modification and change times in nanoseconds. Values are
  decoded from the sections at each read (``files.checkpoint_from``), so every caller gets
  objects of its own, as from ``SqliteSaver``;
- a namespace folder: its checkpoint ids and file names, under the folder's inode and times
  (a file added, removed or renamed in it changes them).

A call that reads a whole thread (``list``) keeps a file only from its second read of it
unchanged (``ThreadFiles.sections``'s ``scan``): a saver that lists a thread once keeps none of
its text, whose allocation (and page faults) cost more than a tenth of the listing.

A hand edit, a ``git pull`` or another process's write changes the file's (or the folder's)
times, size or inode, so the next read reads the file again; no write of haytham's is
needed in between. What changed in the last ``RACY_NS`` is not kept at all (git's "racily
clean" rule, as ``haytham.store.progress`` keeps digests): a second change within one tick
of the file system's clock could keep every time the same. Reads take no lock and never
write, as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

from haytham.format.guard import MAX_DOCUMENT_BYTES, open_folder, read_file_stat, read_small_in
from haytham.integrations.langgraph import files

RACY_NS = 100_000_000
"""How long ago a file or folder must have last changed for what it says to be kept: a
tenth of a second, many ticks of the kernel's file-time clock on every local file system."""
LIMIT = 4096
"""How many files' sections one saver keeps at most (the least recently read go first)."""

_Key = tuple[int, int, int, int]
_Sections = list[files.Section]


def _key(st: os.stat_result) -> _Key:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _settled(st: os.stat_result, now_ns: int) -> bool:
    """Whether ``st`` last changed long enough before ``now_ns`` to be kept (module doc)."""
    return max(st.st_mtime_ns, st.st_ctime_ns) < now_ns - RACY_NS


class _Listing:
    """The names of a namespace folder's files as listed; their set, the folder's checkpoint
    ids and its newest, each once asked for (a cold ``get_tuple`` of the newest needs only
    the last: ``ThreadFiles.newest``)."""

    __slots__ = ("_names", "ids", "listed", "newest")

    def __init__(self, listed: list[str]) -> None:
        self.listed = listed
        self.ids: list[str] | None = None
        self.newest: tuple[str | None, bool] | None = None
        """``files.newest_checkpoint`` of the names."""
        self._names: frozenset[str] | None = None

    @property
    def names(self) -> frozenset[str]:
        if self._names is None:  # two threads may both make it: the same set
            self._names = frozenset(self.listed)
        return self._names


class OpenFolder:
    """One namespace folder whose files a read opens by name in the folder (``guard.open_folder``,
    ``guard.read_small_in``): the folder is found inside its tree once, where a read by path
    looks up each file's tree and ``readlink``s its descriptor. The folder is opened at the
    first file read (a call whose files are all kept opens nothing) and closed when the
    ``with`` block ends; a file that cannot be read this way (a symlink, a folder that leads
    out) is read by its path, under the same guards."""

    __slots__ = ("_fd", "_opened", "_stack", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._stack = contextlib.ExitStack()
        self._opened = False
        self._fd: int | None = None

    def read(self, name: str) -> tuple[bytes, os.stat_result] | None:
        """The bytes and ``fstat`` of the file ``name`` of the folder, or None when the caller
        is to read it by its path (it may not exist, or be a link, or too long)."""
        if not self._opened:
            self._opened = True
            self._fd = self._stack.enter_context(open_folder(self.path))
        if self._fd is None:
            return None
        return read_small_in(self._fd, name, MAX_DOCUMENT_BYTES + 1)

    def __enter__(self) -> OpenFolder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()


class ThreadFiles:
    """The sections of the files a saver read and the listings of its namespace folders,
    each under the identity it had when read (the module doc says when one is used)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._sections: OrderedDict[str, tuple[_Key, _Sections]] = OrderedDict()
        self._seen: OrderedDict[str, _Key] = OrderedDict()
        """Files a scan read and did not keep, under the identity they had (``sections``)."""
        self._folders: dict[str, tuple[_Key, _Listing]] = {}
        self._lock = threading.Lock()

    def listing(self, folder: str | Path) -> tuple[list[str], frozenset[str]]:
        """The checkpoint ids of a namespace folder (oldest first) and the names of its
        files; nothing for a folder that does not exist."""
        found = self._listed(folder)
        if found is None:
            return [], frozenset()
        if found.ids is None:
            found.ids = files.checkpoint_ids(found.listed)
        return found.ids, found.names

    def newest(self, folder: str | Path) -> tuple[str | None, bool]:
        """The newest checkpoint id of a namespace folder (None without one) and whether its
        pending writes are beside it, without sorting every id (``files.newest_checkpoint``),
        found once for a folder kept unchanged."""
        found = self._listed(folder)
        if found is None:
            return None, False
        if found.newest is None:  # two threads may both find it: the same answer
            found.newest = files.newest_checkpoint(found.listed)
        return found.newest

    def names(self, folder: str | Path) -> frozenset[str]:
        """The names of a namespace folder's files (none for a folder that does not exist)."""
        found = self._listed(folder)
        return frozenset() if found is None else found.names

    def _listed(self, folder: str | Path) -> _Listing | None:
        """The names of a namespace folder's files, listed only when the folder is not the
        one kept; None for a folder that does not exist."""
        where = os.fspath(folder)
        now = time.time_ns()
        try:
            st = os.stat(where)
            with self._lock:
                kept = self._folders.get(where)
            if kept is not None and kept[0] == _key(st):
                return kept[1]
            found = _Listing(os.listdir(where))
        except (FileNotFoundError, NotADirectoryError):
            with self._lock:
                self._folders.pop(where, None)
            return None
        if _settled(st, now):
            with self._lock:
                self._folders[where] = (_key(st), found)
        return found

    def sections(
        self, path: str | Path, folder: OpenFolder | None = None, *, scan: bool = False
    ) -> _Sections | None:
        """The sections of a checkpoint or writes file (``files.split_sections``), read and
        parsed only when the file is not the one kept; None when there is no such file.
        A file that does not parse raises ``DocumentError``, as ``split_sections`` does.

        A file kept is ``stat``-ed to see that it is still the one kept; a file not kept is
        read at once, keyed by the ``fstat`` of the descriptor it was read from (the very
        bytes read, and a link's target, not the link). ``folder``: the open folder
        ``path`` is a file of, to read it by name (``OpenFolder``).

        ``scan``: the read is one of many of a call that reads a whole thread (``list``,
        ``get_state_history``), whose files may never be asked for again. A file not kept is
        then kept only when it is read a second time unchanged (the identity of its first
        read is remembered, not its text): a saver that lists a thread once keeps nothing of
        it (keeping every file's text costs page faults, more than a tenth of a listing), one
        that lists it again keeps it all, and a third listing reads nothing."""
        where = os.fspath(path)
        now = time.time_ns()
        with self._lock:
            kept = self._sections.get(where)
        if kept is not None:
            try:
                st = os.stat(where)
            except (FileNotFoundError, NotADirectoryError):
                return None
            if kept[0] == _key(st):
                with self._lock:
                    if where in self._sections:
                        self._sections.move_to_end(where)
                return kept[1]
        found = None if folder is None else folder.read(os.path.basename(where))
        if found is None:
            try:
                found = read_file_stat(where)  # the guarded read: a regular file, bounded, in the tree
            except (FileNotFoundError, NotADirectoryError):
                return None
        data, st = found
        _, sections = files.split_sections(data.decode("utf-8"), path)
        key = _key(st)
        with self._lock:
            if not _settled(st, now):
                self._sections.pop(where, None)
            elif scan and self._seen.pop(where, None) != key:  # read once: remembered, not kept
                self._seen[where] = key
                while len(self._seen) > self._limit:
                    self._seen.popitem(last=False)
            else:
                self._seen.pop(where, None)
                self._sections[where] = (key, sections)
                self._sections.move_to_end(where)
                while len(self._sections) > self._limit:
                    self._sections.popitem(last=False)
        return sections

    def forget(self, folder: str | Path) -> None:
        """Drop what is kept of ``folder`` and every file below it (a thread deleted)."""
        prefix = os.path.join(os.fspath(folder), "")
        with self._lock:
            for where in [w for w in self._sections if w.startswith(prefix)]:
                del self._sections[where]
            for where in [w for w in self._seen if w.startswith(prefix)]:
                del self._seen[where]
            for where in [w for w in self._folders if w.startswith(prefix) or w == os.fspath(folder)]:
                del self._folders[where]
