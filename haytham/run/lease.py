"""One runner per session: the run lease a runner holds for the whole of a run.

A run (``PhaseRunner.run`` and ``rerun``, so ``haytham resume``, ``rerun``, ``demo`` and
the worker loop) first takes ``flock`` on the session's ``.haytham-run.lease`` without
waiting, then writes who holds it (host, process, user, since) into that file. A second
run of the same session is refused at once with ``SessionBusyError`` naming the holder;
nothing of it runs. The runner removes the file when the run ends. A runner that dies
holds nothing: the kernel releases the lock with the process, and the next run takes the
file over (the dead runner's record is overwritten).

The lease is separate from the store's ``.haytham.lock``, which every save takes for a
moment: the lease is held for minutes, across many saves, by the runner alone. Reads
never take it or write it. The file is git-ignored (``store.fs.GITIGNORE_TEXT``); the
many-machines claims (``haytham.git.claims``) extend the idea across hosts.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock
    fcntl = None  # type: ignore[assignment]

from filelock import FileLock, Timeout

from haytham.errors import HaythamError
from haytham.format.layout import LEASE_FILE

_CONTENTION = frozenset({errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK})


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds a session's run lease."""

    host: str
    pid: int
    user: str
    since: str
    """When the run began, ISO 8601 UTC."""

    def describe(self) -> str:
        return f"process {self.pid} of {self.user} on {self.host} since {self.since}"


class SessionBusyError(HaythamError):
    """Another runner is running this session; nothing was run."""

    def __init__(self, message: str, holder: LeaseHolder | None, path: Path) -> None:
        super().__init__(message)
        self.holder = holder
        self.path = path


def current_holder() -> LeaseHolder:
    """This process, as a lease record names it."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment (a container without passwd)
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return LeaseHolder(socket.gethostname(), os.getpid(), user, since)


def read_holder(session_dir: Path) -> LeaseHolder | None:
    """The record in a session's lease file, or None (no file, empty, or unreadable).

    A record is only meaningful while its lease is held: after a runner dies the file keeps
    its last record until the next run overwrites it.
    """
    try:
        data = json.loads((session_dir / LEASE_FILE).read_text("utf-8"))
        return LeaseHolder(str(data["host"]), int(data["pid"]), str(data["user"]), str(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def run_lease(session_dir: Path, what: str) -> Iterator[LeaseHolder]:
    """Hold the run lease of the session in ``session_dir`` for the block, or refuse at once.

    Raises SessionBusyError (naming the holder and since when) when another process holds
    it. ``what`` names the session in that message (``acme/s-001``).
    """
    path = session_dir / LEASE_FILE
    me = current_holder()
    if fcntl is None:  # pragma: no cover - Windows
        lock = FileLock(str(path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise _busy(session_dir, what) from None
        try:
            yield me
        finally:
            lock.release()
        return
    fd = _take(path, session_dir, what)
    try:
        record = json.dumps(asdict(me), sort_keys=True).encode("utf-8") + b"\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        try:
            yield me
        finally:
            with contextlib.suppress(OSError):  # gone while held: nobody runs, no record misleads
                path.unlink()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _take(path: Path, session_dir: Path, what: str) -> int:
    """An open descriptor of the lease file holding its flock, or SessionBusyError.

    The holder removes the file when it is done; a process that opened the old file just
    before that would lock a file no longer in place, so the lock counts only when the file
    locked is still the one at ``path`` (otherwise try again with the new one).
    """
    assert fcntl is not None
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    while True:
        fd = os.open(path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in _CONTENTION:
                raise _busy(session_dir, what) from None
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def _busy(session_dir: Path, what: str) -> SessionBusyError:
    holder = read_holder(session_dir)
    who = holder.describe() if holder else "another process (it has not said who yet)"
    return SessionBusyError(
        f"session {what} is being run by {who}; nothing was run. Wait for that run to stop "
        "(a runner that dies releases the session at once), then run it again",
        holder,
        session_dir / LEASE_FILE,
    )


__all__ = ["LeaseHolder", "SessionBusyError", "current_holder", "read_holder", "run_lease"]
