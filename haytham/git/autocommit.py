"""Auto-commit, opt in: one git commit of the session's own files after each checkpoint.

``AutoCommit(manager, repo_path)`` subscribes to the manager's ``checkpoint_saved`` event;
each time a phase checkpoint is written it commits the session directory, and only it,
with a message such as ``haytham: acme/s-001 phase 2 Market Research completed (attempt 1)``.
Agent outputs and feedback saved in between go into the next checkpoint's commit. Whatever
else the user has staged or changed is left as it was (``git commit --only -- DIR``).

Event callbacks never raise into the store (a failing one is logged on the ``haytham``
logger), so a failed commit is also kept in ``AutoCommit.last_error`` for the caller.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from haytham.errors import HaythamError, InvalidArgumentError
from haytham.git.repository import GitError, commit_path, relative_to_root, repo_root
from haytham.records import PhaseCheckpoint
from haytham.store.events import Event, EventName
from haytham.store.manager import CheckpointManager

AUTO_COMMIT_EVENTS: tuple[EventName, ...] = ("checkpoint_saved", "feedback_saved", "agent_output_saved")
"""The events ``AutoCommit`` can commit after (``checkpoint_saved`` by default)."""


class AutoCommit:
    """Commits a session's files to git after each checkpoint save of ``manager``.

    The repository is the one holding ``repo_path`` (default: the manager's base_dir); it
    is checked at once, so a missing git or a directory outside any repository is a clear
    ``GitError`` here rather than a logged failure later. ``identity=(name, email)``
    commits as that person instead of git's configured user. ``events`` may add
    ``feedback_saved`` and ``agent_output_saved`` to commit after those saves too.
    """

    def __init__(
        self,
        manager: CheckpointManager,
        repo_path: str | os.PathLike[str] | None = None,
        *,
        identity: tuple[str, str] | None = None,
        events: Iterable[EventName] = ("checkpoint_saved",),
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
        self.last_error: HaythamError | None = None
        """Why the latest commit attempt failed, or None after a success."""
        self._lock = threading.Lock()
        self._enabled = True
        for name in chosen:
            manager.on(name, self._on_event)

    def close(self) -> None:
        """Stop committing (the subscription stays, but does nothing)."""
        self._enabled = False

    def commit(self, project_id: str, session_id: str, message: str) -> str | None:
        """Commit the session directory now; the new commit's hash, or None if nothing changed."""
        directory = self.manager.session_dir(project_id, session_id)
        with self._lock:
            sha = commit_path(self.root, directory, message, identity=self.identity)
        if sha is not None:
            self.commits.append(sha)
        return sha

    def message(self, event: Event) -> str:
        """``haytham: acme/s-001 phase 2 Market Research completed (attempt 1)``, and the like."""
        where = f"{event.project_id}/{event.session_id}"
        if event.phase is None or event.project_id is None or event.session_id is None:
            return f"haytham: {where} {event.name.replace('_', ' ')}"
        try:
            checkpoint: PhaseCheckpoint | None = self.manager.load_checkpoint(
                event.project_id, event.session_id, event.phase
            )
        except HaythamError:  # a feedback or output saved before the phase's first checkpoint
            checkpoint = None
        name = checkpoint.phase_name if checkpoint else ""
        phase = f"phase {event.phase} {name}".rstrip()
        attempt = f" (attempt {checkpoint.retry_count + 1})" if checkpoint else ""
        if event.name == "checkpoint_saved":
            return f"haytham: {where} {phase} {event.data.get('status', 'saved')}{attempt}"
        if event.name == "agent_output_saved":
            return f"haytham: {where} {phase} output of {event.data.get('agent_name', 'an agent')}{attempt}"
        return f"haytham: {where} {phase} feedback {event.data.get('action', 'saved')}{attempt}"

    def _on_event(self, event: Event) -> None:
        if not self._enabled or event.project_id is None or event.session_id is None:
            return
        try:
            self.commit(event.project_id, event.session_id, self.message(event))
        except HaythamError as error:
            self.last_error = error
            raise  # the event bus logs it; the store is unaffected
        except OSError as error:
            self.last_error = GitError(f"auto-commit failed: {error}", path=Path(self.root))
            raise self.last_error from error
        self.last_error = None


def enable_autocommit(
    manager: CheckpointManager,
    repo_path: str | os.PathLike[str] | None = None,
    *,
    identity: tuple[str, str] | None = None,
) -> AutoCommit:
    """``AutoCommit(manager, repo_path)``: commit each checkpoint of ``manager`` to git."""
    return AutoCommit(manager, repo_path, identity=identity)


__all__ = ["AUTO_COMMIT_EVENTS", "AutoCommit", "GitError", "enable_autocommit"]
