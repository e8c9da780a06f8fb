"""Which sessions changed since the last look, told by the file system (Linux inotify).

A long-running ``haytham serve`` answers its inbox and sessions page from the index
(``haytham.store.index``); to notice a hand edit or a ``git pull`` the listing would ``stat``
every fact file of every session on every request (``derived.still``). A ``Watcher`` lets it
``stat`` only the sessions the kernel reported events for: it watches every directory under
the base directory (but its hidden top-level ones: ``.git``, the index) and, when asked
(``changed_sessions``), reads the queued events without blocking. The kernel queues an event
before the writing system call returns, so a change that finished before a page was
requested is always among them: no debounce, no thread.

``changed_sessions`` answers None, "check every session", whenever the events cannot be
trusted to be complete: the first time (the cache was never checked against the files), after
the kernel's queue overflowed (``IN_Q_OVERFLOW``: the watches are then made again), when a
watch cannot be added (``ENOSPC``, ``max_user_watches``: the watcher then stays off), on a
platform without inotify, with ``HAYTHAM_WATCH=0`` in the environment, and when a project or
``sessions`` folder is a symbolic link (changes behind it raise no event here). A session
folder holding a symbolic link is in every answer, for the same reason.

The listing also keeps here (``verified``) the index key it last checked against each
session's files, under the watcher's ``lock``: a remembered row is trusted without a ``stat``
only while it is the row this process checked and no event came for its folder since. What it
learnt of a session too new for the index (``recent``) is trusted the same way: the kernel
queues an event for any write after the read, so no racy window opens.

Listings overlap: the lock is held only while one ``look``s (reads the events, forgets what
they name, copies the rest) and ``settle``s (keeps what it found), never while it checks
sessions, since a listing waiting for another's checks made the slowest listing pages of a
busy server (issue 26). What a listing found of a folder is kept only if no later look read
an event for that folder meanwhile.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import stat
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from haytham.format.layout import SESSIONS_DIR
from haytham.frozen import frozen
from haytham.store.index import Keeper

ENV = "HAYTHAM_WATCH"
"""``HAYTHAM_WATCH=0`` turns the watcher off: every request checks every session's files."""

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")
"""``struct inotify_event`` without its name: wd, mask, cookie, len."""


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


class _Libc:
    """inotify's three calls through ctypes (no dependency); None where they are missing."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.init1 = libc.inotify_init1
        self.init1.argtypes = [ctypes.c_int]
        self.add_watch = libc.inotify_add_watch
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.rm_watch = libc.inotify_rm_watch
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]


def _libc() -> _Libc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _Libc()
    except (OSError, AttributeError):
        return None


class Watcher:
    """The sessions under one base directory that changed since ``changed_sessions`` was
    last called (see the module doc). Make it before the first listing it serves."""

    def __init__(self, base_dir: Path) -> None:
        self.base = os.fspath(base_dir)
        self._prefix = os.path.join(self.base, "")
        self.lock = threading.RLock()
        """Held while the events are read and ``verified`` and ``recent`` read or updated
        (``look``, ``settle``); never while a listing checks sessions, so listings overlap."""
        self.verified: dict[tuple[str, str], str] = {}
        """``(parent, name)`` of a session folder: the index key this process last found its
        files to have (``scan._from_index``)."""
        self.recent: dict[str, tuple[Any, ...]] = {}
        """A session folder (as text, as ``changed_sessions`` names it) whose files changed
        too recently for the index to remember them (the racy rule, ``Index.settled``): what
        this process learnt of it (``scan._know``), trusted while no event came for the folder,
        so a session being written is read once a change, not on every listing."""
        self.salt = ""
        """The workflows' salt ``verified`` and ``recent`` were checked with (another one
        clears them)."""
        self.index = Keeper(Path(base_dir))
        """The index kept open between listings, so that no listing's connection is the last
        to close (``Keeper``)."""
        self.looks = 0
        """How many ``look``s were taken: each is numbered by this count."""
        self._changed_at: dict[str, int] = {}
        """A session folder's last event: the number of the ``look`` that read it."""
        self._all_changed_at = 0
        """The last ``look`` told "check every session" (None), or whose salt was new."""
        self._open: set[int] = set()
        """The numbers of the looks not settled yet (while none is, ``_changed_at`` is not needed)."""
        self._libc = _libc() if enabled() else None
        self._fd = -1
        self._paths: dict[int, str] = {}
        self._watches: dict[str, int] = {}
        """Each watched directory's watch (``_paths`` the other way round)."""
        self._below: dict[str, set[str]] = {}
        """The watched directories in each watched directory: what ``_forget`` drops with it,
        found without going through every watch (a writer's save makes folders all the time)."""
        self._linked: set[str] = set()
        self._fresh = False
        """Whether the events since the watches were made are complete and were all read."""
        self.resets = 0
        """How many times the watches were made (1 at start, one more after each overflow)."""
        self._start()

    @property
    def active(self) -> bool:
        """Whether events are being watched (False: every answer is None)."""
        return self._fd >= 0

    def _start(self) -> None:
        """Watch every directory anew; on any failure stay off (every answer None)."""
        self._stop()
        if self._libc is None:
            return
        fd = self._libc.init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            self._libc = None
            return
        self._fd = fd
        self.resets += 1
        if not self._watch_tree(self.base):
            self._stop()
            self._libc = None  # ENOSPC or a linked folder: the stat check for good

    def _stop(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1
        self._paths.clear()
        self._watches.clear()
        self._below.clear()
        self._linked.clear()
        self._fresh = False

    def close(self) -> None:
        """Stop watching (every answer is None from now on)."""
        with self.lock:
            self._stop()
            self._libc = None
        self.index.close()

    def _watch_tree(self, top: str, changed: set[str] | None = None) -> bool:
        """Add a watch on ``top`` and every directory under it (the watch before the listing,
        so a folder made meanwhile is seen one way or the other); each session folder met goes
        into ``changed``. False when a watch cannot be added or a project or ``sessions``
        folder is a symbolic link."""
        assert self._libc is not None
        pending = [top]
        while pending:
            directory = pending.pop()
            top_of_all = directory == self.base  # followed if a link: the base directory as given
            mask = _MASK & ~_IN_DONT_FOLLOW if top_of_all else _MASK
            wd = self._libc.add_watch(self._fd, os.fsencode(directory), mask)
            if wd < 0:
                code = ctypes.get_errno()
                if code in (errno.ENOENT, errno.ENOTDIR) and not top_of_all:
                    continue  # gone meanwhile: its parent's event says so
                return False  # ENOSPC (the limit), EACCES, ...: events would be incomplete
            self._paths[wd] = directory
            self._watches[directory] = wd
            if not top_of_all:
                self._below.setdefault(os.path.dirname(directory), set()).add(directory)
            depth = self._depth(directory)
            if changed is not None:
                changed.update(self._sessions_of(directory))
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if depth == 0 and entry.name.startswith("."):
                            continue  # .git, the index: no session lives there
                        if entry.is_symlink():
                            if depth < 2 and _is_dir(entry.path):
                                return False  # a linked project, sessions or session folder
                            self._linked.update(self._sessions_of(entry.path))
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return False
        return True

    def _below_base(self, path: str) -> str:
        """``path`` relative to the base directory (not the base itself). Every path here is
        the base joined with names (a watch's folder, an event's name), so it is cut, not
        worked out by ``os.path.relpath``, whose normalising took a fifth of a listing's time
        on a server whose tree a writer kept changing (S14)."""
        prefix = self._prefix
        return path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, self.base)

    def _depth(self, path: str) -> int:
        return 0 if path == self.base else self._below_base(path).count(os.sep) + 1

    def _sessions_of(self, path: str) -> set[str]:
        """The session folders ``path`` may be in or be (both readings of a name such as
        ``sessions/sessions/x``: a session of the root or a project named ``sessions``)."""
        if path == self.base:
            return set()
        parts = self._below_base(path).split(os.sep)
        found = set()
        if len(parts) >= 2 and parts[0] == SESSIONS_DIR:
            found.add(os.path.join(self.base, *parts[:2]))
        if len(parts) >= 3 and parts[1] == SESSIONS_DIR:
            found.add(os.path.join(self.base, *parts[:3]))
        return found

    def look(self, salt: str) -> Look:
        """The events so far, read for one listing, with copies of ``verified`` and ``recent``
        to check against (the listing may change its copies, then hands them to ``settle``).
        What the events name is forgotten at once (``verified`` and ``recent`` of each changed
        folder, or all of them), so a listing that looks later checks those folders too,
        even before this one settles. ``salt``: the workflows' (another one forgets all)."""
        self.index.keep()
        with self.lock:
            changed = self.changed_sessions()
            self.looks += 1
            number = self.looks
            if changed is None or salt != self.salt:
                self.salt = salt
                self.verified.clear()
                self.recent.clear()
                self._changed_at.clear()
                self._all_changed_at = number
            else:
                for folder in changed:
                    self._changed_at[folder] = number
                    self.recent.pop(folder, None)
                    self.verified.pop(os.path.split(folder), None)
            self._open.add(number)
            return Look(number, changed, dict(self.verified), dict(self.recent))

    def settle(
        self, look: Look, verified: dict[tuple[str, str], str], recent: dict[str, tuple[Any, ...]]
    ) -> None:
        """Take what a listing learnt (its copies of ``look``'s ``verified`` and ``recent``,
        changed) into this watcher's: what it dropped is dropped, and what it found is kept
        for each folder with no event read after ``look`` (a later event means the files
        may have changed after this listing checked them: the next listing checks again)."""
        with self.lock:
            current = look.number >= self._all_changed_at
            for key, value in look.verified.items():
                if verified.get(key) != value and self.verified.get(key) == value:
                    del self.verified[key]
            for folder, learnt in look.recent.items():
                if recent.get(folder) is not learnt and self.recent.get(folder) is learnt:
                    del self.recent[folder]
            if current:
                for key, value in verified.items():
                    if look.verified.get(key) != value and self._unchanged(os.path.join(*key), look):
                        self.verified[key] = value
                for folder, learnt in recent.items():
                    if look.recent.get(folder) is not learnt and self._unchanged(folder, look):
                        self.recent[folder] = learnt
            self._close(look)

    def abandon(self, look: Look) -> None:
        """A look whose listing failed: nothing it learnt is kept."""
        with self.lock:
            self._close(look)

    def _close(self, look: Look) -> None:
        """``look`` is settled or abandoned (under the lock)."""
        self._open.discard(look.number)
        if not self._open:
            self._changed_at.clear()  # every later look is numbered after each of them

    def _unchanged(self, folder: str, look: Look) -> bool:
        return self._changed_at.get(folder, 0) <= look.number

    def changed_sessions(self) -> set[str] | None:
        """The session folders (as text, joined to the base directory) with events since the
        last call, and those holding a symbolic link; None: check every session."""
        if self._fd < 0:
            return None
        changed: set[str] = set()
        complete = self._drain(changed)
        if not complete:
            self._start()  # watches made again: the events lost may have been new folders
            self._fresh = self._fd >= 0  # the check this None asks for comes after them
            return None
        if not self._fresh:
            self._fresh = True
            return None
        return changed | self._linked

    def _drain(self, changed: set[str]) -> bool:
        """Read every queued event into ``changed``; False after an overflow."""
        complete = True
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return complete
            except OSError:
                return False
            if not data:
                return complete
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + length].rstrip(b"\0")
                offset += length
                if mask & _IN_Q_OVERFLOW:
                    complete = False
                    continue
                if complete and not self._event(wd, mask, os.fsdecode(name), changed):
                    complete = False

    def _event(self, wd: int, mask: int, name: str, changed: set[str]) -> bool:
        """Take one event into ``changed`` (and the watches); False when the events can no
        longer be trusted (the base directory itself moved or a watch cannot be added)."""
        directory = self._paths.get(wd)
        if directory is None:
            return True  # a watch dropped already (its IN_IGNORED, or events queued before)
        if mask & _IN_IGNORED:
            del self._paths[wd]
            if self._watches.get(directory) == wd:
                del self._watches[directory]
                self._unlink(directory)
            return True
        if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
            changed.update(self._sessions_of(directory))
            return directory != self.base
        path = os.path.join(directory, name) if name else directory
        if self._depth(path) == 1 and name.startswith("."):
            return True  # the index, .git
        changed.update(self._sessions_of(path))
        if mask & _IN_ISDIR:
            if mask & (_IN_MOVED_FROM | _IN_DELETE):
                self._forget(path)
            if mask & (_IN_CREATE | _IN_MOVED_TO):
                self._forget(path)  # a folder replaced under the same name
                if not self._watch_tree(path, changed):
                    return False
        elif mask & (_IN_CREATE | _IN_MOVED_TO) and os.path.islink(path):
            self._linked.update(self._sessions_of(path))
            if self._depth(path) <= 2 and _is_dir(path):
                return False  # a linked project, sessions or session folder
        return True

    def _unlink(self, directory: str) -> None:
        """Drop ``directory``, no longer watched, from ``_below`` once nothing under it is
        watched either, and each folder above it that this leaves empty and unwatched."""
        while directory not in self._watches and not self._below.get(directory):
            self._below.pop(directory, None)
            parent = os.path.dirname(directory)
            siblings = self._below.get(parent)
            if siblings is None or directory not in siblings:
                return
            siblings.discard(directory)
            directory = parent

    def _forget(self, path: str) -> None:
        """Drop the watches of ``path`` and below (moved away or removed)."""
        assert self._libc is not None
        self._below.get(os.path.dirname(path), set()).discard(path)
        pending = [path]
        while pending:
            directory = pending.pop()
            pending += self._below.pop(directory, ())
            wd = self._watches.pop(directory, None)
            if wd is not None and self._paths.pop(wd, None) is not None:
                self._libc.rm_watch(self._fd, wd)


def _is_dir(path: str) -> bool:
    """Whether ``path`` leads to a directory (through a link); an error counts as one."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    except OSError:
        return True


@frozen
class Look:
    """What ``Watcher.look`` told one listing: its number, the session folders with events
    since the look before (None: check every session), and ``verified`` and ``recent`` as
    they were then (copies: the listing changes its own copies of these)."""

    number: int
    changed: set[str] | None
    verified: dict[tuple[str, str], str]
    recent: dict[str, tuple[Any, ...]]
