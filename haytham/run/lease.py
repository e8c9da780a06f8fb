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
many-machines claims (``haytham.git.claims``) extend the idea across hosts. Whether a
session's lease is held, and by whom, is read without taking it by ``haytham.store.lease``
(``CheckpointManager.running``), which ``status``, ``list`` and the pages show.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock
    fcntl = None  # type: ignore[assignment]

from haytham.errors import LockTimeout, SessionBusyError
from haytham.format.layout import LEASE_FILE
from haytham.store.fs import flock_path
from haytham.store.lease import LeaseHolder, read_holder


def current_holder() -> LeaseHolder:
    """This process, as a lease record names it."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment (a container without passwd)
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return LeaseHolder(socket.gethostname(), os.getpid(), user, since)


@contextlib.contextmanager
def run_lease(session_dir: Path, what: str) -> Iterator[LeaseHolder]:
    """Hold the run lease of the session in ``session_dir`` for the block, or refuse at once.

    Raises SessionBusyError (naming the holder and since when) when another process holds
    it. ``what`` names the session in that message (``acme/s-001``).
    """
    path = session_dir / LEASE_FILE
    me = current_holder()
    try:
        fd = flock_path(str(path), 0, what, session_dir) if fcntl is not None else None
    except LockTimeout:
        raise _busy(session_dir, what) from None
    if fd is None:  # no flock (Windows, or a file system without it): filelock decides
        from filelock import FileLock, Timeout

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
