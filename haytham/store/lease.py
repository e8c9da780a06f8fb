"""Who is running a session now: a read-only look at its run lease.

A runner (``haytham.run.lease.run_lease``) holds ``flock`` on the session's
``.haytham-run.lease`` (``layout.LEASE_FILE``) for the whole of a run and writes who it is
into that file; it removes the file when the run ends. The lock, not the file, says whether
the run is alive: a runner that dies loses its lock with its process, and its record stays
in the file until the next run overwrites it. So a session is *running* while some process
holds that lock, and ``holder`` answers that without ever taking the lock (a shared lock,
even for a moment, would refuse a runner starting at that instant) and without writing:

* on Linux it reads the kernel's table of locks, ``/proc/locks``, for an exclusive ``FLOCK``
  on the lease file's inode (the device as well, or the record's process when the device
  numbers differ, as they do on btrfs);
* elsewhere it asks whether the recorded process still exists on this host.

A lease held on another machine (a session folder on a network file system) is not seen.
The store's views stay pure derivations of the files (``lifecycle.derive``); a view that
shows a session running asks ``holder`` alongside (``CheckpointManager.running``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

from haytham.errors import SessionBusyError
from haytham.format.guard import read_file
from haytham.format.layout import LEASE_FILE
from haytham.records import LeaseHolder
from haytham.store.clock import format_timestamp

_MOST = 1 << 16
"""The longest lease record read: one JSON line, a few hundred bytes."""

LOCKS_TABLE = "/proc/locks"
"""The kernel's table of the file locks held on this machine (Linux)."""


def read_holder(session_dir: Path) -> LeaseHolder | None:
    """The record in a session's lease file, or None (no file, empty, or unreadable).

    A record is only meaningful while its lease is held: after a runner dies the file keeps
    its last record until the next run overwrites it (``holder`` checks).
    """
    try:
        data = json.loads(read_file(session_dir / LEASE_FILE, _MOST).decode("utf-8"))
        return LeaseHolder(str(data["host"]), int(data["pid"]), str(data["user"]), str(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def holder(session_dir: Path) -> LeaseHolder | None:
    """Who is running the session in ``session_dir`` now, or None when nobody is.

    None without a lease file (one ``stat``: the common case of a session nobody runs), and
    when the file's lock is not held (its runner died). Never takes, breaks or writes the
    lease. A lock held by a runner that has not written its record yet is named by the
    locking process and the file's modification time.
    """
    path = session_dir / LEASE_FILE
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # a runner never follows a link to its lease either
        return None
    record = read_holder(session_dir)
    locked = _flock_holders(st)
    if locked is None:  # no lock table here: is the recorded process alive on this host?
        return record if record is not None and _alive_here(record) else None
    same_device, other_device = locked
    if same_device:
        if record is not None:
            return record
        import socket  # only for a runner that has not written its record yet

        since = format_timestamp(datetime.fromtimestamp(st.st_mtime, timezone.utc))
        return LeaseHolder(socket.gethostname(), min(same_device), "unknown", since)
    if record is not None and record.pid in other_device:  # btrfs, overlayfs: other numbers
        return record
    return None


def refuse_if_running(session_dir: Path, what: str) -> None:
    """Refuse (SessionBusyError, naming the holder) a change that must not happen under a
    run, such as archiving the attempts a runner is at work on, while a process other than
    this one holds the session's run lease. A runner that holds the lease itself (its
    ``rerun`` archives inside its own run) is not refused. Read only, as ``holder``."""
    found = holder(session_dir)
    if found is None or (found.pid == os.getpid() and found.host == _hostname()):
        return
    raise SessionBusyError(
        f"session {what} is being run by {found.describe()}; nothing was changed. Wait for that run "
        "to stop (a runner that dies releases the session at once), then try again",
        found,
        session_dir / LEASE_FILE,
    )


def _hostname() -> str:
    import socket  # only where a lease is held: a read of a session never pays for it

    return socket.gethostname()


def _flock_holders(st: os.stat_result) -> tuple[set[int], set[int]] | None:
    """The processes holding an exclusive flock on the file ``st`` describes, from the
    kernel's lock table: those on the same device and inode, and those on the same inode
    whose device numbers differ; None when there is no table to read (not Linux)."""
    try:
        with open(LOCKS_TABLE, encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    inode = str(st.st_ino)
    same: set[int] = set()
    other: set[int] = set()
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 23891 fe:00:2269809 0 EOF"; a waiter's line has "->"
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[3] != "WRITE":
            continue
        where = fields[5].rsplit(":", 1)
        if len(where) != 2 or where[1] != inode:
            continue
        with contextlib.suppress(ValueError):
            (same if where[0] == device else other).add(int(fields[4]))
    return same, other


def _alive_here(record: LeaseHolder) -> bool:
    """Whether the recorded process exists on this host (without a lock table to ask)."""
    import socket  # only where a lease file is found: a read of a session never pays for it

    if record.host != socket.gethostname() or record.pid <= 0:
        return False
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, as another user's process
        return True
    return True


__all__ = ["LOCKS_TABLE", "LeaseHolder", "holder", "read_holder", "refuse_if_running"]
