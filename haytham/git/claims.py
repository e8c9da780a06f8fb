"""Claims: which worker host runs a session, decided by a push to the shared remote.

Before a worker runs a session it writes ``claim.json`` in the session's folder (who: the
worker's name, host and process, and a random id of the worker process; since when; until
when), commits it alone and pushes. The
remote accepts a push only on top of what it has, so of two workers claiming the same session
at once exactly one push lands first; the other's push is rejected, and after fetching it
sees the claim file changed on the remote: it has lost, drops its own claim commit (and
nothing else) and is told who holds the session and until when (``SessionClaimed``).

A claim expires. A worker that died leaves its claim behind; once it has expired another
worker may take the session over, and the new claim records whose expired claim it replaced
(in the file and in the commit message). A worker releases its claim when it stops, by
removing the file in a commit. Reviewers never claim: a review touches only the phase's
review file, which no runner writes while the phase awaits review.

Expiry compares the claim's ``expires`` (UTC) with this machine's clock, so hosts need
roughly synchronised clocks (NTP); ``docs/many-machines.md`` says what that means.

A claim is a worker's own when its name *and* its id are the worker's. The name (``--worker``,
or ``host:pid``) is for people and may repeat: two containers whose runners are each process
1 on hosts of the same name, or two runners started with one ``--worker``. The id, random
for each worker process (``new_worker_id``), does not, so a twin never takes a claim for its
own and no session runs twice.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

from haytham.errors import GitError, SessionClaimed
from haytham.format.guard import read_file
from haytham.format.layout import CLAIM_FILE
from haytham.git.repository import commit_paths, relative_to_root, run_git
from haytham.git.sync import (
    DEFAULT_ATTEMPTS,
    Pusher,
    PushRejected,
    RemoteRefused,
    backoff_pause,
    current_branch,
    fetch,
    sync,
)
from haytham.records import CLAIM_TIME_FORMAT, Claim
from haytham.store import fs


def default_worker() -> str:
    """This process's worker name: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


_PROCESS_ID = uuid.uuid4().hex
"""This process's worker id when a caller gives none."""


def new_worker_id() -> str:
    """A random worker id (``Claim.worker_id``): unique where names, hosts and pids repeat."""
    return uuid.uuid4().hex


def read_claim(session_dir: Path) -> Claim | None:
    """The claim in a session's folder, or None (no file, or one that cannot be read)."""
    try:
        data = json.loads(read_file(session_dir / CLAIM_FILE, 1 << 16).decode("utf-8"))
        return Claim(
            str(data["worker"]),
            str(data["host"]),
            int(data["pid"]),
            str(data["since"]),
            str(data["expires"]),
            str(data["took_over"]) if data.get("took_over") else None,
            str(data.get("worker_id") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def claimable(
    session_dir: Path, worker: str, now: datetime | None = None, *, worker_id: str | None = None
) -> bool:
    """Whether ``worker`` (whose id is ``worker_id``, by default this process's) may claim the
    session now: no claim, its own, or an expired one."""
    claim = read_claim(session_dir)
    me = _PROCESS_ID if worker_id is None else worker_id
    return claim is None or claim.mine(worker, me) or claim.expired(now)


def claim_session(
    root: Path,
    session_dir: Path,
    what: str,
    *,
    worker: str,
    ttl: float,
    remote: str,
    identity: tuple[str, str] | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    worker_id: str | None = None,
) -> Claim:
    """Claim the session in ``session_dir`` (``what`` names it) and push the claim.

    Call it right after a sync. Raises SessionClaimed when another worker holds a valid
    claim, already or by winning the race to the remote; GitError when git fails. On
    success the claim is on the remote, and the working tree has the remote's latest files.
    ``worker_id`` (by default this process's) tells this worker from another of its name.
    """
    me = _PROCESS_ID if worker_id is None else worker_id
    branch = current_branch(root)
    pusher = Pusher(root, remote, branch)
    for attempt in range(attempts):
        if attempt:
            time.sleep(backoff_pause(attempt))
        held = read_claim(session_dir)
        if held is not None and not held.mine(worker, me) and not held.expired():
            raise SessionClaimed(f"session {what} is claimed by {held.describe()}", held)
        now = datetime.now(timezone.utc)
        claim = Claim(
            worker,
            socket.gethostname(),
            os.getpid(),
            now.strftime(CLAIM_TIME_FORMAT),
            (now + timedelta(seconds=ttl)).strftime(CLAIM_TIME_FORMAT),
            held.describe() if held is not None and not held.mine(worker, me) else None,
            me,
        )
        fs.atomic_write(session_dir / CLAIM_FILE, json.dumps(asdict(claim), indent=2, sort_keys=True) + "\n")
        base = _head(root)
        took = f" (took over from {claim.took_over}, expired)" if claim.took_over else ""
        message = f"haytham: {what} claimed by {worker} until {claim.expires}{took}"
        commit_paths(root, [session_dir / CLAIM_FILE], message, identity=identity)
        try:
            if pusher.push():
                return claim
        except (RemoteRefused, GitError):  # not a race: drop the claim commit, say why
            run_git(["reset", "--quiet", "--keep", base], root)
            raise
        # Someone pushed first. Drop our claim commit (only it), take theirs, look again.
        run_git(["reset", "--quiet", "--keep", base], root)
        theirs = fetch(root, remote, branch)
        spec = relative_to_root(root, session_dir / CLAIM_FILE)
        if theirs is not None and _show(root, theirs, spec) != _show(root, base, spec):
            sync(root, remote, push=False)
            held = read_claim(session_dir)
            if held is not None and not held.mine(worker, me) and not held.expired():
                raise SessionClaimed(f"session {what} is claimed by {held.describe()}", held)
        sync(root, remote, push=False)
    raise PushRejected(
        f"could not push a claim of {what} to {remote} after {attempts} tries (other machines kept "
        "pushing first); nothing was claimed",
        path=root,
    )


def release_claim(
    root: Path,
    session_dir: Path,
    what: str,
    *,
    worker: str,
    reason: str = "done",
    identity: tuple[str, str] | None = None,
    worker_id: str | None = None,
) -> str | None:
    """Remove this worker's claim of the session in a commit (with whatever else of the
    session is still uncommitted); the commit, or None when the claim is not this worker's
    (its name and ``worker_id``, by default this process's). The caller pushes (``sync``)."""
    held = read_claim(session_dir)
    if held is None or not held.mine(worker, _PROCESS_ID if worker_id is None else worker_id):
        return None
    (session_dir / CLAIM_FILE).unlink()
    return commit_paths(
        root, [session_dir], f"haytham: {what} released by {worker} ({reason})", identity=identity
    )


def _head(root: Path) -> str:
    return run_git(["rev-parse", "HEAD"], root).stdout.decode("ascii").strip()


def _show(root: Path, commit: str, spec: str) -> bytes | None:
    found = run_git(["show", f"{commit}:{spec}"], root, check=False)
    return found.stdout if found.returncode == 0 else None


__all__ = [
    "Claim",
    "SessionClaimed",
    "claim_session",
    "claimable",
    "default_worker",
    "new_worker_id",
    "read_claim",
    "release_claim",
]
