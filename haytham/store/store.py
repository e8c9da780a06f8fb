"""``Store``: what every read and write of the sessions under one base directory shares.

The base directory, the clock, the lock timeout, the known workflows, the read cache and the
event bus; how a session's folder is found and read into a ``Session`` snapshot; how a
record becomes the text of its file. ``SessionHandle`` (one session's reads and writes) and
``Transaction`` (the one write path) are built on it, and ``CheckpointManager`` is the
product document's facade over all three.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    NotFoundError,
    ProjectNotFoundError,
    SessionNotFoundError,
)
from haytham.format import CHECKPOINT, MANIFEST, DocumentFormat, ReadCache
from haytham.format.guard import guard_tree, read_file
from haytham.format.layout import CHECKPOINT_FILE, MANIFEST_FILE, SESSIONS_DIR, WORKFLOW_FILE
from haytham.format.workflow import BUILTIN_WORKFLOWS, Workflow, load_workflow
from haytham.records import PhaseCheckpoint, SessionManifest
from haytham.store import fs as _storage
from haytham.store import lifecycle
from haytham.store import progress as _progress
from haytham.store.clock import Clock, format_timestamp, utc_now
from haytham.store.events import EventBus
from haytham.store.names import check_below, check_path_name
from haytham.store.session import Session

if TYPE_CHECKING:  # a writer's (store.transaction), as the journal is: a read of a session needs neither
    from haytham.store.reads import Reads

R = TypeVar("R")


class Store:
    """The sessions under ``base_dir``, and what every operation on them shares."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str] = "projects",
        *,
        clock: Clock | None = None,
        lock_timeout: float = _storage.DEFAULT_LOCK_TIMEOUT,
        workflows: Iterable[Workflow] = (),
    ) -> None:
        self.base_dir = Path(base_dir)
        guard_tree(self.base_dir)  # every read below it stays inside it
        self.clock: Clock = clock or utc_now
        self.lock_timeout = lock_timeout
        self.workflows: dict[str, Workflow] = dict(BUILTIN_WORKFLOWS)
        self.workflows.update((w.name, w) for w in workflows)
        self.cache = ReadCache()
        """What this store has read: an unchanged file (the same bytes) is not parsed again."""
        self.digests: _progress.OutputDigests = _progress.DIGESTS
        """The outputs digests of phase folders by their files' identity (the process's)."""
        self._workflow_copies: dict[bytes, Workflow] = {}
        """Sessions' own workflow.yaml by their bytes: each text parsed once."""
        self.events = EventBus()
        self.on = self.events.on
        """Subscribe to an event: ``manager.on("phase_completed", callback)`` or as a decorator."""

    # ------------------------------------------------------------------ paths

    def project_dir(self, project_id: str) -> Path:
        return self.base_dir / check_path_name("project_id", project_id)

    def session_dir(self, project_id: str, session_id: str) -> Path:
        """Where a session lives: ``{base_dir}/{project_id}/sessions/{session_id}``."""
        return self.project_dir(project_id) / SESSIONS_DIR / check_path_name("session_id", session_id)

    def session_home(self, project_id: str, session_id: str) -> Path:
        """The folder of an existing session, checked (``check_below``); ProjectNotFoundError
        or SessionNotFoundError when there is none. A writer calls it before taking the lock,
        then reads the session once, under the lock (``read_session``)."""
        directory = check_below(self.base_dir, self.session_dir(project_id, session_id))
        path = directory / MANIFEST_FILE
        if not path.is_file():
            if not self.project_dir(project_id).is_dir():
                raise ProjectNotFoundError(
                    f"project {project_id!r} does not exist under {self.base_dir}",
                    path=self.project_dir(project_id),
                )
            from haytham.store import orphans  # only for a session that is not there

            orphan = orphans.find(directory)
            if orphan is not None:  # its folder holds files: say how to get it back
                raise SessionNotFoundError(f"session {project_id}/{session_id}: {orphan.issue()}", path=path)
            raise SessionNotFoundError(
                f"session {project_id}/{session_id} does not exist (no {path})", path=path
            )
        return directory

    # ------------------------------------------------------------ the clock

    def now(self) -> str:
        """The clock's time as a timestamp; InvalidArgumentError for a clock that fails."""
        try:
            return format_timestamp(self.clock())
        except ValueError as error:
            raise InvalidArgumentError(f"the manager's clock is unusable: {error}", field="clock") from None

    # -------------------------------------------------------------- workflows

    def workflow(self, workflow: str | Workflow) -> Workflow:
        """A workflow given by name (one of ``workflows``) or as itself."""
        if isinstance(workflow, Workflow):
            return workflow
        found = self.workflows.get(workflow)
        if found is None:
            raise InvalidArgumentError(
                f"workflow_type {workflow!r} is not a known workflow "
                f"(expected one of {', '.join(sorted(self.workflows))})",
                field="workflow_type",
            )
        return found

    def workflow_of(self, directory: Path, manifest: SessionManifest) -> Workflow:
        """The session's own copy of a custom workflow, else the registered one by name."""
        own_copy = directory / WORKFLOW_FILE
        try:
            data = read_file(own_copy)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return self.workflow(manifest.workflow_type)
        found = self._workflow_copies.get(data)
        if found is None:  # sessions of one workflow hold the same bytes: parsed once
            found = load_workflow(own_copy, data)
            if len(self._workflow_copies) >= 64:
                self._workflow_copies.clear()
            self._workflow_copies[data] = found
        return found

    # ---------------------------------------------------------------- reading

    def read_session(self, directory: Path, reads: Reads | None = None) -> Session:
        """The session in the checked folder ``directory`` (its manifest read through
        ``reads`` when a writer holds the lock, so that the manifest is read once)."""
        path = directory / MANIFEST_FILE
        if reads is None:
            manifest = MANIFEST.load(path, cache=self.cache)
        else:
            data = reads.data(path)
            if data is None:  # removed since session_home looked
                raise SessionNotFoundError(f"session folder {directory} has no {MANIFEST_FILE}", path=path)
            manifest = MANIFEST.load_data(data, path, cache=self.cache)
        workflow = self.workflow_of(directory, manifest)
        return Session(
            self.base_dir, directory, manifest, workflow, workflow.phases_for(manifest.execution_mode)
        )

    def open_session(self, project_id: str, session_id: str) -> Session:
        """The session as it is now, read without a lock (a reader's snapshot)."""
        return self.read_session(self.session_home(project_id, session_id))

    def checkpoints(self, session: Session, reads: Reads | None = None) -> dict[int, PhaseCheckpoint]:
        """Every saved checkpoint of the session's phases, by phase number."""
        found = {}
        for phase in session.phases:
            path = session.directory.joinpath(phase.directory, CHECKPOINT_FILE)
            if reads is None:
                record = CHECKPOINT.load_optional(path, cache=self.cache)
            else:
                data = reads.data(path)
                record = None if data is None else CHECKPOINT.load_data(data, path, cache=self.cache)
            if record is not None:
                found[phase.number] = record
        return found

    def view(
        self, session: Session, checkpoints: Mapping[int, PhaseCheckpoint] | None = None
    ) -> lifecycle.SessionView:
        """Where the session stands (``lifecycle.derive`` over its files)."""
        found = self.checkpoints(session) if checkpoints is None else checkpoints
        return _progress.view_of(session.directory, session.phases, found, self.cache, self.digests)

    def derived_manifest(
        self,
        session: Session,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        view: lifecycle.SessionView | None = None,
        head: str | None = None,
    ) -> SessionManifest:
        """The manifest as the session's files say it should be (``lifecycle.derive``), in
        memory: the one record a read returns, whatever the manifest file on disk says."""
        base = session.manifest if head is None else dataclasses.replace(session.manifest, history_head=head)
        found = self.checkpoints(session) if checkpoints is None else checkpoints
        derived = _progress.derive(base, session.phases, found, view or self.view(session, found))
        return session.manifest if _progress.same_progress(session.manifest, derived) else derived

    def load(self, kind: DocumentFormat[R], path: Path, missing: type[NotFoundError], what: str) -> R:
        """The record of the file at ``path``; ``missing`` (naming ``what``) when there is none."""
        try:
            return kind.load(path, cache=self.cache)
        except FileNotFoundError:
            raise missing(f"{what}: {path} does not exist", path=path) from None

    def load_optional(self, kind: DocumentFormat[R], path: Path) -> R | None:
        return kind.load_optional(path, cache=self.cache)

    # ---------------------------------------------------------------- writing

    @contextlib.contextmanager
    def locked(self, directory: Path, project_id: str, session_id: str) -> Iterator[set[str]]:
        """Hold the session's lock; first finish an operation a killed writer left half done
        and remove what one that never committed staged (``journal.recover``), so every
        writer starts from a whole, clean state. Yields the names the session folder holds
        then (its one listing)."""
        from haytham.store import journal  # a writer's: a read of a session never takes the lock

        what = f"session {project_id}/{session_id}"
        names: set[str] = set()
        with _storage.locked(directory, self.lock_timeout, what, root=self.base_dir):
            journal.recover(directory, names)
            yield names

    def render(self, kind: DocumentFormat[R], path: Path, record: R, reads: Reads | None = None) -> str:
        """The text of ``record`` for ``path``, checked against its schema first (over the
        file as ``reads`` read it, else as it is now)."""
        kind.check_record(record, path)
        # A person's added sections stay (formats.md, "Hand edits"); the record is remembered
        # as the read of its text, so that reading back what was just written parses nothing.
        if reads is None:
            text = kind.render_at(record, path, cache=self.cache)
        else:
            try:
                old = reads.data(path, kind.max_bytes)
            except (OSError, DocumentError):
                old = None
            text = kind.render_over_data(
                record, path, old, cache=self.cache, rendered=reads.rendered(kind, record)
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidArgumentError(
                f"text for {path.name} holds {error.object[error.start : error.end]!r}, "
                "which UTF-8 cannot store (a lone surrogate)"
            ) from None
        return text

    def write(self, kind: DocumentFormat[R], path: Path, record: R, reads: Reads | None = None) -> None:
        """Write one file on its own (atomically): for a session being created, never for a
        change of an existing session, which goes through a ``Transaction``."""
        _storage.atomic_write(path, self.render(kind, path, record, reads))
