"""Auto-commit, opt in: exactly one git commit for each event worth one, saying what happened.

``AutoCommit(manager, repo_path)`` listens to the manager's events and commits the session's
directory, and only it (plus the base directory's ``.gitignore``, so that haytham's ignore
rules travel with the sessions), once for each of these events:

- a phase finished: ``haytham: acme/s-001 phase 2 Market Research completed (attempt 1)``
  (``awaits review``, ``failed``); the outputs and the blank review saved while it ran go
  into this one commit, and a checkpoint saved ``in_progress`` makes none;
- a review was saved: ``haytham: acme/s-001 phase 1 Concept Expansion approved`` or ``sent
  back``, its own commit, authored by whoever git knows as the user of this clone (the
  reviewer at their laptop), never by the runner's ``identity``;
- an attempt was archived (``attempt_archived``, called by ``PhaseRunner`` when it opens a
  new attempt), a fork (``session_forked``), and what callers name themselves through
  ``record`` (an import, a migration, a claim).

Whatever else the user has staged or changed is left as it was (``git commit --only``).

A failed commit is loud: it is raised into the event bus (which logs it), emitted as a
``commit_failed`` event that the command line prints, and kept in ``failures``. A stale
``.git/index.lock`` left by a killed git (or a killed haytham in the middle of a commit) is
recognised and explained (``diagnose_index_lock``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from haytham.errors import HaythamError, InvalidArgumentError
from haytham.git.repository import GitError, commit_paths, knows_author, relative_to_root, repo_root, run_git
from haytham.store import lifecycle
from haytham.store.events import Event, EventName
from haytham.store.manager import CheckpointManager

AUTO_COMMIT_EVENTS: tuple[EventName, ...] = ("checkpoint_saved", "feedback_saved", "session_forked")
"""The events ``AutoCommit`` commits after (all of them by default)."""
FINISHED = frozenset({"completed", "failed", "skipped"})
"""Checkpoint statuses that end a phase's run: each is worth one commit."""


class AutoCommit:
    """Commits a session's files to git once for each event worth a commit (module docstring).

    The repository is the one holding ``repo_path`` (default: the manager's base_dir); it
    is checked at once, so a missing git or a directory outside any repository is a clear
    ``GitError`` here rather than a failure later. ``identity=(name, email)`` commits a
    runner's work as that name instead of git's configured user; reviews are committed as
    git's configured user. ``events`` narrows what is committed. A failed commit is kept in
    ``failures`` and emitted as ``commit_failed``, and (``log_failures``) logged.
    """

    def __init__(
        self,
        manager: CheckpointManager,
        repo_path: str | os.PathLike[str] | None = None,
        *,
        identity: tuple[str, str] | None = None,
        events: Iterable[EventName] = AUTO_COMMIT_EVENTS,
        log_failures: bool = True,
    ) -> None:
        chosen = tuple(dict.fromkeys(events))
        unknown = [name for name in chosen if name not in AUTO_COMMIT_EVENTS]
        if unknown or not chosen:
            raise InvalidArgumentError(
                f"events {list(chosen)!r}: choose from {', '.join(AUTO_COMMIT_EVENTS)}", field="events"
            )
        self.manager = manager
        self.root = repo_root(manager.base_dir if repo_path is None else repo_path)
        relative_to_root(self.root, manager.base_dir)  # the sessions must be in this repository
        self.identity = identity
        self.commits: list[str] = []
        """Hashes of the commits made, oldest first."""
        self.failures: list[GitError] = []
        """Every commit that failed, oldest first (each also emitted as ``commit_failed``)."""
        self.last_error: GitError | None = None
        """Why the latest commit failed, or None after a success."""
        self.started = time.time()
        """When this auto-commit began (a ``.git/index.lock`` older than this is stale)."""
        self.log_failures = log_failures
        """Also raise a failed commit into the event bus, which logs it with its traceback
        (the command line, which prints each failure itself, turns this off)."""
        self._lock = threading.Lock()
        self._enabled = True
        for name in chosen:
            manager.on(name, self._on_event)

    def close(self) -> None:
        """Stop committing (the subscription stays, but does nothing)."""
        self._enabled = False

    def commit(
        self,
        project_id: str,
        session_id: str,
        message: str,
        *,
        as_reviewer: bool = False,
    ) -> str | None:
        """Commit the session directory (and the base dir's .gitignore) now; the new commit's
        hash, or None if nothing changed. A reviewer's commit is authored by git's configured
        user of this clone when git knows one (else by ``identity``), a runner's by ``identity``
        when given."""
        who = None if as_reviewer and knows_author(self.root) else self.identity
        paths = [self.manager.session_dir(project_id, session_id)]
        ignore = self.manager.base_dir / ".gitignore"
        if ignore.is_file():
            paths.append(ignore)
        with self._lock:
            sha = commit_paths(self.root, paths, message, identity=who)
        if sha is not None:
            self.commits.append(sha)
        return sha

    def record(self, project_id: str, session_id: str, what: str) -> str | None:
        """Commit a session after something the store does not announce (an import, a
        migration, a claim): ``haytham: P/S WHAT``. Failures are loud, as for events."""
        return self._guarded(project_id, session_id, None, f"haytham: {project_id}/{session_id} {what}")

    def attempt_archived(self, project_id: str, session_id: str, phases: Iterable[int]) -> str | None:
        """Commit the attempts just archived (``start_attempt``, ``archive_from``)."""
        described = []
        for number in phases:
            checkpoint = self.manager.load_checkpoint(project_id, session_id, number)
            described.append(f"phase {number} {checkpoint.phase_name} attempt {checkpoint.retry_count}")
        if not described:
            return None
        return self.record(
            project_id, session_id, f"{', '.join(described)} archived; the next attempt begins"
        )

    def message(self, event: Event) -> str | None:
        """The commit message for ``event``, or None when the event is not worth a commit."""
        where = f"haytham: {event.project_id}/{event.session_id}"
        if event.name == "session_forked":
            source = event.data.get("source", "?")
            return f"{where} forked from {event.project_id}/{source} at phase {event.phase}"
        if event.phase is None or event.project_id is None or event.session_id is None:
            return None
        if event.name == "checkpoint_saved":
            status = str(event.data.get("status", ""))
            if status not in FINISHED:
                return None
            checkpoint = self.manager.load_checkpoint(event.project_id, event.session_id, event.phase)
            state = self.manager.state(event.project_id, event.session_id).phase(event.phase).state
            words = "finished, awaits review" if state == "awaiting_review" else status
            attempt = checkpoint.retry_count + 1
            return f"{where} phase {event.phase} {checkpoint.phase_name} {words} (attempt {attempt})"
        if event.name == "feedback_saved":
            if event.data.get("action") == "pending" and not event.data.get("approved"):
                return None  # the runner's blank review: part of the phase's own commit
            return self.review_message(event.project_id, event.session_id, event.phase)
        return None

    def review_message(self, project_id: str, session_id: str, phase: int) -> str | None:
        """``haytham: P/S phase N NAME approved (review of attempt K)`` (or ``sent back``), or
        None when the phase's review file says it is not reviewed yet."""
        feedback = self.manager.load_feedback(project_id, session_id, phase)
        if feedback is None or not feedback.reviewed:
            return None
        checkpoint = self.manager.load_checkpoint(project_id, session_id, phase)
        verdict = {"approved": "approved", "skipped": "skipped"}.get(lifecycle.verdict(feedback), "sent back")
        attempt = checkpoint.retry_count + 1
        where = f"haytham: {project_id}/{session_id}"
        return f"{where} phase {phase} {feedback.phase_name} {verdict} (review of attempt {attempt})"

    def review_saved(self, project_id: str, session_id: str, phase: int) -> str | None:
        """Commit a review written without the manager (a person's own editor, a tool of theirs)
        as the reviewer; None when there was nothing to commit."""
        message = self.review_message(project_id, session_id, phase)
        if message is None:
            return None
        return self._guarded(project_id, session_id, phase, message, as_reviewer=True)

    def _on_event(self, event: Event) -> None:
        if not self._enabled or event.project_id is None or event.session_id is None:
            return
        try:
            message = self.message(event)
        except HaythamError:  # the files were changed meanwhile; the next event commits them
            return
        if message is None:
            return
        reviewer = event.name == "feedback_saved"
        self._guarded(
            event.project_id, event.session_id, event.phase, message, reviewer, raise_=self.log_failures
        )

    def _guarded(
        self,
        project_id: str,
        session_id: str,
        phase: int | None,
        message: str,
        as_reviewer: bool = False,
        *,
        raise_: bool = False,
    ) -> str | None:
        """Commit; on failure explain it, keep it, emit ``commit_failed`` (and raise)."""
        try:
            sha = self.commit(project_id, session_id, message, as_reviewer=as_reviewer)
        except (HaythamError, OSError) as error:
            failure = self._explain(project_id, session_id, message, error)
            self.failures.append(failure)
            self.last_error = failure
            self.manager.events.emit(
                [
                    Event(
                        "commit_failed",
                        project_id,
                        session_id,
                        phase,
                        self.root,
                        {"message": message, "error": str(failure)},
                    )
                ]
            )
            if raise_:
                raise failure from error  # the event bus logs it; the store is unaffected
            return None
        self.last_error = None
        return sha

    def _explain(self, project_id: str, session_id: str, message: str, error: Exception) -> GitError:
        stale = diagnose_index_lock(self.root, self.started)
        said = stale or str(error)
        return GitError(
            f"auto-commit of {project_id}/{session_id} ({message!r}) failed: {said}", path=self.root
        )


def diagnose_index_lock(root: Path, since: float | None = None) -> str | None:
    """What a ``.git/index.lock`` in ``root`` means, or None when there is none.

    A lock with no git process running in the repository and (when ``since`` is given)
    older than ``since`` is stale: an interrupted commit left it, and every later commit
    fails until it is removed. Which processes run where is read from ``/proc``; where that
    is not available the lock is only described, not judged.
    """
    result = run_git(["rev-parse", "--git-path", "index.lock"], root, check=False)
    if result.returncode != 0:
        return None
    lock = Path(os.fsdecode(result.stdout.strip()))
    lock = lock if lock.is_absolute() else root / lock
    try:
        made = lock.stat().st_mtime
    except OSError:
        return None
    at = datetime.fromtimestamp(made, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    running = git_processes_in(root)
    if running == [] and (since is None or made < since):
        before = " before this run began" if since is not None else ""
        return (
            f"a stale .git/index.lock from an interrupted commit ({lock}, left at {at}{before}; "
            f"no git process is running in {root}); remove it if no git command is running: rm {lock}"
        )
    who = f"git process {', '.join(map(str, running))}" if running else "a git command"
    return (
        f"git's index is locked by {lock} (since {at}): {who} is using {root}, or one was "
        "interrupted; wait for it to finish, or remove the file if no git command is running"
    )


def git_processes_in(root: Path) -> list[int] | None:
    """The ids of running ``git`` processes whose working directory is inside ``root``;
    None when this system does not say (no ``/proc``)."""
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return None
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text("utf-8").strip() != "git":
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == root or root in cwd.parents:
            found.append(int(entry.name))
    return found


def enable_autocommit(
    manager: CheckpointManager,
    repo_path: str | os.PathLike[str] | None = None,
    *,
    identity: tuple[str, str] | None = None,
) -> AutoCommit:
    """``AutoCommit(manager, repo_path)``: commit each event of ``manager`` worth a commit."""
    return AutoCommit(manager, repo_path, identity=identity)


__all__ = [
    "AUTO_COMMIT_EVENTS",
    "AutoCommit",
    "GitError",
    "diagnose_index_lock",
    "enable_autocommit",
    "git_processes_in",
]
