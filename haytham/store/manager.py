"""``CheckpointManager``: create sessions, save phases, agent outputs and feedback, read back.

Every write is validated against its schema first, written atomically and durably, and done
under the session's OS lock, so a failed call changes nothing and concurrent savers never
lose each other's manifest rows. The manifest's progress is always recomputed from the
phase checkpoints, never patched.

``CheckpointManager(base_dir)`` is the one way to get a manager (``haytham.config`` and
``ProjectManager`` make theirs the same way). Saving, loading, forking and validating are
its methods; comparing (``haytham.compare.compare``), export and import
(``haytham.transfer``) and cleanup (``haytham.retention.cleanup``) are functions of the
feature modules, built on its public API. The pieces it ties together live beside it in
``haytham.store``: argument checks, attempts, forks, validation and the doctor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from haytham.errors import (
    DocumentError,
    HaythamError,
    InvalidArgumentError,
    Issue,
    MoveRefusedError,
    NotFoundError,
    PhaseNotFoundError,
    ProjectNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    StaleReviewError,
    UnknownPhaseError,
)
from haytham.format import (
    AGENT_OUTPUT,
    CHECKPOINT,
    FEEDBACK,
    HISTORY_ENTRY,
    MANIFEST,
    DocumentFormat,
    ReadCache,
)
from haytham.format.document import read_file
from haytham.format.feedback import rewrite_feedback, rewrite_fields
from haytham.format.feedback import settle as settle_feedback
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE, SESSIONS_DIR, WORKFLOW_FILE
from haytham.format.reader import decode
from haytham.format.workflow import BUILTIN_WORKFLOWS, PhaseDefinition, Workflow, dump_workflow, load_workflow
from haytham.records import (
    FEEDBACK_ACTIONS,
    PHASE_STATUSES,
    AgentOutput,
    Attempt,
    HistoryEntry,
    PhaseCheckpoint,
    SessionManifest,
    UserFeedback,
)
from haytham.store import attempts as _attempts
from haytham.store import durations, history, journal, lifecycle, orphans
from haytham.store import fs as _storage
from haytham.store import lease as _lease
from haytham.store import progress as _progress
from haytham.store.arguments import (
    CheckpointArgs,
    agent_row,
    check_choice,
    check_count,
    check_flag,
    check_timestamp,
    checkpoint_args,
    feedback_fields,
    output_fields,
    round_or_none,
)
from haytham.store.clock import Clock, format_timestamp, utc_now
from haytham.store.copy import read_session_files, write_session_dir
from haytham.store.doctor import Finding, check_session, remove_traces, written_folders
from haytham.store.events import Event, EventBus
from haytham.store.fork import files_at_entry, fork_files
from haytham.store.lease import LeaseHolder
from haytham.store.names import (
    check_agent_name,
    check_inside,
    check_name,
    check_new_or_existing,
    check_no_case_twin,
    check_path_name,
    check_user_id,
)
from haytham.store.phase_files import agent_files
from haytham.store.review_time import hand_review_time
from haytham.store.scan import (
    PhaseDirs,
    SessionListing,
    SessionSummary,
    check_below,
    iter_sessions,
    kind_of,
    list_sessions,
    session_dirs,
    session_files,
    validate_sessions,
)
from haytham.store.validation import phase_issues, session_issues

R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class _Session:
    """A session as the manager works on it: where it is and which phases it runs."""

    base_dir: Path
    directory: Path
    manifest: SessionManifest
    workflow: Workflow
    phases: tuple[PhaseDefinition, ...]

    def phase(self, number: object) -> PhaseDefinition:
        return self.workflow.phase_in_mode(number, self.manifest.execution_mode)

    def phase_dir(self, number: object) -> Path:
        return self.phase_location(number)[0]

    def phase_location(self, number: object) -> tuple[Path, bool]:
        """The phase's folder, checked as ``check_inside`` checks it, and whether it is an
        existing folder: one ``lstat`` (``PhaseDirs``; the session folder was checked when
        the session was opened)."""
        return PhaseDirs(self.base_dir, self.directory, session_checked=True).get(
            self.phase(number).directory
        )

    def read_phase(self, number: object) -> PhaseDefinition:
        """For reading: a phase of the mode, or a phase of the workflow outside the mode
        whose folder exists (the first implementation saved phases 4 and 5 of mvp
        sessions). ``validate`` reports such a folder as a warning; saving still refuses it."""
        try:
            return self.phase(number)
        except UnknownPhaseError:
            phase = self.workflow.phase(number)  # a phase the workflow lacks stays an error
            if not (self.directory / phase.directory).is_dir():
                raise
            return phase

    def read_phase_dir(self, number: object) -> Path:
        return check_inside(self.base_dir, self.directory / self.read_phase(number).directory)


_KEEP_BYTES = 1 << 20
"""A file larger than this is not kept by ``_Reads`` (read again where needed, as an
agent output of tens of megabytes should not be held for a whole operation)."""


class _Reads:
    """What one saving operation reads under the session's lock: each file read once.

    The record a save compares with, the text whose hand-added sections a rewrite keeps and
    the before-image hash the journal records all come from the same read of a file, and a
    phase folder is listed once (its leftovers, its letter-case twins, which files exist).
    Made anew for every hold of the lock: what it remembers is never older than the lock.
    """

    def __init__(self) -> None:
        self._data: dict[str, bytes | None] = {}
        self._names: dict[str, set[str]] = {}
        """Both by path as text: a ``Path``'s text is kept, its hash is computed anew each time."""
        self._rendered: dict[tuple[type, int], tuple[Any, str]] = {}

    def listing(self, folder: Path) -> set[str]:
        """The names in ``folder`` (none when it does not exist), listed once."""
        key = os.fspath(folder)
        names = self._names.get(key)
        if names is None:
            try:
                names = set(os.listdir(key))
            except FileNotFoundError:
                names = set()
            self._names[key] = names
        return names

    def data(self, path: Path, limit: int | None = None) -> bytes | None:
        """The bytes of the file at ``path``, None when there is none (a name its listed
        folder, or the listed folder above that, lacks is not opened); any other failure is
        raised and nothing is kept. ``limit``: the file's kind's ``max_bytes``."""
        key = os.fspath(path)
        if key in self._data:
            return self._data[key]
        parent, name = os.path.split(key)
        names = self._names.get(parent)
        above, parent_name = os.path.split(parent)
        above_names = self._names.get(above)
        if (names is not None and name not in names) or (
            above_names is not None and parent_name not in above_names
        ):
            found = None
        else:
            try:
                found = read_file(path, limit)
            except FileNotFoundError:
                found = None
            if found is not None and len(found) > _KEEP_BYTES:
                return found  # read again where needed: a save never holds many large files
        self._data[key] = found
        return found

    def keep(self, path: Path, data: bytes | None) -> None:
        """Remember bytes read from ``path`` by other means (``fs.file_version``)."""
        self._data[os.fspath(path)] = data

    def record(self, kind: DocumentFormat[R], path: Path, cache: ReadCache) -> R | None:
        """The record of the file at ``path``, None when there is none or it cannot be read
        (``read_path``'s record)."""
        try:
            data = self.data(path, kind.max_bytes)
            return None if data is None else kind.read_data(data, path, cache=cache)[0]
        except (OSError, DocumentError):
            return None

    def rendered(self, kind: DocumentFormat[R], record: R) -> str:
        """``kind.render(record)``, rendered once per operation: a checkpoint's text goes into
        its file and into each history entry the operation writes."""
        key = (type(kind), id(record))
        kept = self._rendered.get(key)
        if kept is None or kept[0] is not record:
            kept = self._rendered[key] = (record, kind.render(record))
        return kept[1]

    def current(self, path: Path) -> bytes | journal.Unread | None:
        """What ``journal.Change.write`` makes the before-image hash of: the bytes read,
        or ``UNREAD`` for a file not read (or unreadable), which the journal reads itself.

        The bytes are let go here (a file is staged once per operation): a save of several
        large outputs holds one old file at a time, as when each was read on its own."""
        return self._data.pop(os.fspath(path), journal.UNREAD)


class CheckpointManager:
    """Keeps the sessions of phased workflows as markdown files under ``base_dir``."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str] = "projects",
        *,
        clock: Clock | None = None,
        lock_timeout: float = _storage.DEFAULT_LOCK_TIMEOUT,
        workflows: Iterable[Workflow] = (),
    ) -> None:
        self.base_dir = Path(base_dir)
        self.clock: Clock = clock or utc_now
        self.lock_timeout = lock_timeout
        self.workflows: dict[str, Workflow] = dict(BUILTIN_WORKFLOWS)
        self.workflows.update((w.name, w) for w in workflows)
        self.cache = ReadCache()
        self.digests: _progress.OutputDigests = _progress.DIGESTS
        """The outputs digests of phase folders by their files' identity (the process's)."""
        self._workflow_copies: dict[bytes, Workflow] = {}
        """Sessions' own workflow.yaml by their bytes: each text parsed once."""
        """What this manager has read: an unchanged file (the same bytes) is not parsed again."""
        self.events = EventBus()
        self.on = self.events.on
        """Subscribe to an event: ``manager.on("phase_completed", callback)`` or as a decorator."""

    # ------------------------------------------------------------------ paths

    def project_dir(self, project_id: str) -> Path:
        return self.base_dir / check_path_name("project_id", project_id)

    def session_dir(self, project_id: str, session_id: str) -> Path:
        """Where a session lives: ``{base_dir}/{project_id}/sessions/{session_id}``."""
        return self.project_dir(project_id) / SESSIONS_DIR / check_path_name("session_id", session_id)

    def phase_dir(self, project_id: str, session_id: str, phase_num: int) -> Path:
        """The directory of one phase of an existing session."""
        return self._open(project_id, session_id).phase_dir(phase_num)

    # --------------------------------------------------------------- creating

    def create_session(
        self,
        project_id: str,
        session_id: str,
        user_id: str,
        workflow_type: str | Workflow = "idea_validation",
        execution_mode: str = "mvp",
        *,
        exist_ok: bool = False,
    ) -> Path:
        """Create the manifest and the phase directories of the mode; return the session dir.

        An existing session is never reset: it raises SessionExistsError, or with
        ``exist_ok=True`` is returned unchanged (if it has the same user, workflow and mode).
        """
        check_new_or_existing("project_id", project_id, self.base_dir)  # new ids: the strict rule
        check_new_or_existing("session_id", session_id, self.project_dir(project_id) / SESSIONS_DIR)
        directory = self.session_dir(project_id, session_id)
        check_user_id(user_id)
        workflow = self._workflow(workflow_type)
        phases = workflow.phases_for(execution_mode)
        now = self._now()
        check_no_case_twin(self.base_dir, project_id, "project_id")
        check_no_case_twin(directory.parent, session_id, "session_id")
        check_inside(self.base_dir, directory)
        _storage.make_dirs(directory)
        _storage.ensure_gitignore(self.base_dir)
        with self._lock(directory, project_id, session_id):
            manifest_path = directory / MANIFEST_FILE
            if manifest_path.exists():
                existing = MANIFEST.load(manifest_path, cache=self.cache)
                wanted = (user_id, workflow.name, execution_mode)
                found = (existing.user_id, existing.workflow_type, existing.execution_mode)
                if not exist_ok or wanted != found:
                    differs = "" if wanted == found else f" with user, workflow and mode {found}"
                    raise SessionExistsError(
                        f"session {project_id}/{session_id} already exists{differs} at "
                        f"{directory}; it was left untouched (pass exist_ok=True to reuse it)",
                        path=directory,
                    )
                return directory
            for phase in phases:
                _storage.make_dirs(directory / phase.directory)
            if BUILTIN_WORKFLOWS.get(workflow.name) != workflow:
                _storage.atomic_write(directory / WORKFLOW_FILE, dump_workflow(workflow))
            manifest = SessionManifest(
                session_id=session_id,
                project_id=project_id,
                user_id=user_id,
                workflow_type=workflow.name,
                workflow_fingerprint=workflow.fingerprint(),
                execution_mode=execution_mode,
                created=now,
                last_updated=now,
                status="in_progress",
                phases=_progress.phase_rows(phases, {}),
                current=_progress.NOT_STARTED,
                metrics=_progress.metrics({}),
            )
            self._write(MANIFEST, manifest_path, manifest)
        return directory

    # ----------------------------------------------------------------- saving

    def save_checkpoint(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        status: str,
        agents: Sequence[Mapping[str, Any]],
        started: str | None = None,
        completed: str | None = None,
        duration: float | None = None,
        retry_count: int | None = None,
        execution_mode: str = "single",
        errors: Sequence[str] | None = None,
        *,
        name: str | None = None,
        reason: str | None = None,
        built_from: Mapping[int, str] | None = None,
    ) -> Path:
        """Write the phase's checkpoint.md, add it to the history, update the manifest.

        The checkpoint records what the phase was built from: the outputs digest of every
        earlier phase of the mode that has one, as it is when the attempt starts (the first
        save before any of its agents has a result), kept on later saves of the attempt;
        ``built_from={phase: digest}`` overrides it. A completed phase also records the
        digest of its own outputs (``lifecycle.outputs_digest``), read from its files now.

        ``retry_count=None`` keeps the phase's current attempt (0 for a new phase), so a
        save after ``start_attempt`` cannot renumber it. Missing times are filled in
        sensibly: ``started`` keeps the previous checkpoint's, ``completed`` is now for a
        newly finished phase (and kept when the status is saved again), and ``duration`` is
        the time the phase ran (``durations.checkpoint_seconds``: the span of ``started``
        and ``completed`` when both are given, else the agents' times, never the time the
        phase waited for a review or a retry). Saving exactly what is already there
        changes no byte. ``name`` and ``reason`` label the history entry.
        """
        checked = checkpoint_args(
            status,
            agents,
            started,
            completed,
            duration,
            retry_count,
            execution_mode,
            errors,
            name,
            reason,
            built_from,
        )
        with self._saving(project_id, session_id) as (session, reads):
            phase = session.phase(phase_num)
            directory = session.phase_dir(phase_num)
            path = directory / CHECKPOINT_FILE
            current = self._checkpoints(session, reads)
            record, previous, now = self._checkpoint_record(session, phase, checked, current, reads=reads)
            if previous == record and name is None and reason is None:
                return path  # the same data again: no byte changes, no history entry
            self._phase_folder(session, phase_num, reads)
            _storage.remove_leftovers(session.directory, reads.listing(session.directory))
            before_status = session.manifest.status
            with journal.Change(session.directory, "save_checkpoint") as change:
                manifest = self._stage_checkpoint(
                    change, session, path, record, now, name, reason, current=current, reads=reads
                )
        self.events.emit(
            _checkpoint_events(
                project_id, session_id, session, phase.number, path, status, before_status, manifest
            )
        )
        return path

    def keep_edited_outputs(self, project_id: str, session_id: str, phase_num: int) -> bool:
        """Record in a phase's checkpoint the digest of the outputs its files hold now, when a
        person changed them since it completed (``lifecycle.EDITED``): the correction becomes
        the phase's output of record, with a history entry (``lifecycle.EDIT_KEPT``); nothing
        else of the checkpoint changes. The phases built on the old outputs stay stale.
        Returns whether anything was written (not for a phase whose outputs match, or whose
        checkpoint records no digest)."""
        with self._saving(project_id, session_id) as (session, reads):
            directory = session.phase_dir(phase_num)
            current = self._checkpoints(session, reads)
            previous = current.get(session.phase(phase_num).number)
            if previous is None or previous.outputs_digest is None:
                return False
            digest = self._outputs_digest(directory, previous.agents, None, reads)
            if digest == previous.outputs_digest:
                return False
            record = dataclasses.replace(previous, outputs_digest=digest)
            self._phase_folder(session, phase_num, reads)
            _storage.remove_leftovers(session.directory, reads.listing(session.directory))
            with journal.Change(session.directory, "save_checkpoint") as change:
                self._stage_checkpoint(
                    change,
                    session,
                    directory / CHECKPOINT_FILE,
                    record,
                    self._now(),
                    reason=lifecycle.EDIT_KEPT,
                    current=current,
                    reads=reads,
                )
        return True

    def _checkpoint_record(
        self,
        session: _Session,
        phase: PhaseDefinition,
        checked: CheckpointArgs,
        current: Mapping[int, PhaseCheckpoint],
        staged: Mapping[str, str] | None = None,
        *,
        reads: _Reads | None = None,
    ) -> tuple[PhaseCheckpoint, PhaseCheckpoint | None, str]:
        """The checkpoint ``save_checkpoint`` writes, the one it replaces and the time now
        (the caller holds the lock and has read the session's ``current`` checkpoints, once
        for the whole operation). ``staged``: agent outputs (name -> content) an operation
        is about to write, which count for the phase's outputs digest instead of the files."""
        directory = session.phase_dir(phase.number)
        previous = current.get(phase.number)
        status, runs, retry_count = checked.status, checked.runs, checked.retry_count
        started, completed, duration = checked.started, checked.completed, checked.duration
        if retry_count is None:  # the attempt in progress, as start_attempt left it
            retry_count = previous.retry_count if previous else 0
        now = self._now()
        if started is None and status != "pending":
            started = previous.started if previous and previous.started else now
        if completed is None and status in ("completed", "failed", "skipped"):
            same = previous is not None and previous.status == status and previous.completed
            completed = previous.completed if same and previous else now
        span_given = checked.started is not None and checked.completed is not None
        duration = durations.checkpoint_seconds(
            duration, started, completed, runs, checked.execution_mode, span_given=span_given
        )
        position = session.phases.index(phase)
        if checked.built_from is not None:
            sources = checked.built_from
        elif previous is not None and previous.retry_count == retry_count and _has_results(previous):
            sources = previous.built_from
        else:
            sources = self._sources(session, phase, current)
        digest = self._outputs_digest(directory, runs, staged, reads) if status == "completed" else None
        before = session.phases[position - 1] if position > 0 else None
        after = session.phases[position + 1] if position + 1 < len(session.phases) else None
        record = PhaseCheckpoint(
            phase_number=phase.number,
            phase_name=phase.name,
            status=status,  # type: ignore[arg-type]
            started=started,
            completed=completed,
            duration=duration,
            retry_count=retry_count,
            execution_mode=checked.execution_mode,  # type: ignore[arg-type]
            agents=runs,
            previous_phase=before.name if before else None,
            next_phase=after.number if after else None,
            next_phase_name=after.name if after else None,
            total_tokens=_sum(run.tokens for run in runs),
            input_tokens=_sum(_int_or_none(a.get("input_tokens")) for a in checked.agents),
            output_tokens=_sum(_int_or_none(a.get("output_tokens")) for a in checked.agents),
            cost=round_or_none(_sum(run.cost for run in runs), 4),
            errors=checked.errors,
            outputs_digest=digest,
            built_from=sources,
        )
        return record, previous, now

    def _sources(
        self,
        session: _Session,
        phase: PhaseDefinition,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> tuple[tuple[int, str], ...]:
        """The outputs digest of every earlier phase of the mode that recorded one (in
        ``checkpoints``, the checkpoints an operation is about to write), as its output files
        say now: a phase built on outputs a person corrected is built on the correction."""
        checkpoints = self._checkpoints(session) if checkpoints is None else checkpoints
        found = []
        for earlier in session.phases[: session.phases.index(phase)]:
            saved = checkpoints.get(earlier.number)
            if saved is not None and saved.outputs_digest is not None:
                agents = [run.agent_name for run in saved.agents]
                now = _progress.outputs_digest_of(
                    session.phase_dir(earlier.number), agents, self.digests, reads=self.cache
                )
                found.append((earlier.number, now))
        return tuple(found)

    def _stage_review(
        self,
        change: journal.Change,
        session: _Session,
        phase: PhaseDefinition,
        feedback: UserFeedback,
        *,
        checkpoint: PhaseCheckpoint | None = None,
        stage_manifest: bool = True,
        reads: _Reads | None = None,
        text: str | None = None,
    ) -> tuple[dict[int, _progress.Review | None], str | None]:
        """Stage a review's history entry and the manifest brought up to date with the review
        file being written (the caller holds the lock and stages the file itself).

        Only a review is recorded: a file that says it is not reviewed yet (the blank file
        the runner writes for a gated phase) decides nothing, so it adds no entry.
        ``checkpoint``: the phase's checkpoint the operation writes (default: the file's).
        Returns the review and the new History Head (None: unchanged), for a caller that
        stages the manifest itself (``stage_manifest=False``). ``text``: the file's text when
        it is a person's own (``save_feedback_text``), which the entry keeps as written.
        """
        if checkpoint is None:
            path = session.phase_dir(phase.number) / CHECKPOINT_FILE
            if reads is None:
                checkpoint = self._load_optional(CHECKPOINT, path)
            else:
                data = reads.data(path)
                checkpoint = None if data is None else CHECKPOINT.load_data(data, path, cache=self.cache)
        review: dict[int, _progress.Review | None] = {phase.number: (lifecycle.verdict(feedback), None)}
        head = None
        if checkpoint is not None and feedback.reviewed:
            entry = history.make_entry(
                session.manifest.history_head,
                phase.number,
                phase.name,
                checkpoint.retry_count + 1,
                checkpoint.status,
                self._now(),
                CHECKPOINT.render(checkpoint) if reads is None else reads.rendered(CHECKPOINT, checkpoint),
                reason="approved" if lifecycle.verdict(feedback) == "approved" else "review",
                feedback_text=FEEDBACK.render(feedback) if text is None else text,
            )
            self._stage_entry(change, session, entry, reads)
            head = entry.entry_id
        if stage_manifest:
            self._stage_manifest(change, session, reviews=review, head=head, reads=reads)
        return review, head

    def _stage_entry(
        self, change: journal.Change, session: _Session, entry: HistoryEntry, reads: _Reads | None = None
    ) -> None:
        path = session.directory / history.HISTORY_DIR / history.file_name(entry)
        self._stage(change, HISTORY_ENTRY, path, entry, reads)

    def _stage_manifest(
        self,
        change: journal.Change,
        session: _Session,
        *,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        reviews: Mapping[int, _progress.Review | None] | None = None,
        head: str | None = None,
        current: Mapping[int, PhaseCheckpoint] | None = None,
        reads: _Reads | None = None,
    ) -> SessionManifest:
        """Stage the manifest as the session's files will say it should be once ``change``
        is applied: the checkpoints and reviews it writes (None: a review it removes) count
        instead of the files on disk. ``current``: the session's checkpoints as the caller
        read them under the lock (default: read now). Returns the manifest (the old one
        when unchanged)."""
        found = {**(self._checkpoints(session) if current is None else current), **(checkpoints or {})}
        reviews = reviews or {}
        # A phase whose review the change writes or removes is not read: its file is replaced.
        unread = tuple(p for p in session.phases if p.number not in reviews)
        read = _progress.read_reviews(
            session.directory, unread, self.cache, None if reads is None else reads.data
        )
        for number, review in reviews.items():
            if review is None:
                read.pop(number, None)
            else:
                read[number] = review
        # The outputs of a phase whose checkpoint the change writes are those it records.
        kept = {n: c for n, c in found.items() if n not in (checkpoints or {})}
        outputs = _progress.outputs_now(
            session.directory, session.phases, kept, self.digests, reads=self.cache
        )
        view = lifecycle.derive(_progress.phase_facts(session.phases, found, read, outputs))
        derived = self._derived_manifest(session, found, view, head)
        if derived is session.manifest:
            return session.manifest
        updated = dataclasses.replace(derived, last_updated=self._now())
        path = session.directory / MANIFEST_FILE
        self._stage(change, MANIFEST, path, updated, reads)
        return updated

    def _outputs_digest(
        self,
        directory: Path,
        runs: Sequence[Any],
        staged: Mapping[str, str] | None = None,
        reads: _Reads | None = None,
    ) -> str:
        """``lifecycle.outputs_digest`` of the agent outputs in a phase directory, as saved,
        with ``staged`` (agent name -> content, about to be written) in place of the files."""
        staged = staged or {}
        outputs = {}
        if directory.is_dir():
            for path in agent_files(directory, [run.agent_name for run in runs]):
                if path.stem in staged:
                    continue
                if reads is None:
                    record = AGENT_OUTPUT.read_path(path, cache=self.cache)[0]
                else:
                    record = reads.record(AGENT_OUTPUT, path, self.cache)
                outputs[path.stem] = (
                    record.content if record is not None else path.read_bytes().decode("utf-8", "replace")
                )
        outputs.update(staged)
        return lifecycle.outputs_digest(outputs)

    def _stage_checkpoint(
        self,
        change: journal.Change,
        session: _Session,
        path: Path,
        record: PhaseCheckpoint,
        now: str,
        name: str | None = None,
        reason: str | None = None,
        *,
        stage_manifest: bool = True,
        current: Mapping[int, PhaseCheckpoint] | None = None,
        reads: _Reads | None = None,
    ) -> SessionManifest:
        """Stage a checkpoint, its history entry and the manifest (the caller holds the lock).

        Returns the manifest as it will be; the session's History Head moves to the entry.
        With ``stage_manifest=False`` the caller stages the manifest itself, once, after the
        other files of the operation (``_stage_manifest``): a batch of saves is one record."""
        self._stage(change, CHECKPOINT, path, record, reads)
        entry = history.make_entry(
            session.manifest.history_head,
            record.phase_number,
            record.phase_name,
            record.retry_count + 1,
            record.status,
            now,
            CHECKPOINT.render(record) if reads is None else reads.rendered(CHECKPOINT, record),
            name,
            reason,
        )
        self._stage_entry(change, session, entry, reads)
        if not stage_manifest:
            return dataclasses.replace(session.manifest, history_head=entry.entry_id)
        return self._stage_manifest(
            change,
            session,
            checkpoints={record.phase_number: record},
            head=entry.entry_id,
            current=current,
            reads=reads,
        )

    def save_agent_output(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        agent_name: str,
        output_content: str,
        status: str = "completed",
        duration: float | None = None,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        tools_used: Sequence[str] | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        stack_trace: str | None = None,
        cost: float | None = None,
    ) -> Path:
        """Write ``{agent_name}.md`` with the output exactly as given."""
        fields = output_fields(
            agent_name,
            output_content,
            status,
            duration,
            model,
            input_tokens,
            output_tokens,
            tools_used,
            error_type,
            error_message,
            stack_trace,
            cost,
        )
        with self._saving(project_id, session_id) as (session, reads):
            phase = session.phase(phase_num)
            directory = self._phase_folder(session, phase_num, reads)
            path, record = self._output_change(directory, phase, fields, reads)
            if record is None:
                return path  # the same output again: no byte changes
            self._write(AGENT_OUTPUT, path, record, reads)
        self.events.emit([_output_event(project_id, session_id, phase.number, path, fields)])
        return path

    def _phase_folder(self, session: _Session, phase_num: int, reads: _Reads) -> Path:
        """The phase's folder, made when missing, listed once (``reads``) and cleared of the
        temporary files dead writers left (the caller holds the session's lock)."""
        directory, exists = session.phase_location(phase_num)
        if exists:
            _storage.check_no_symlink(directory)
        else:
            _storage.make_dirs(directory)
        names = reads.listing(directory)
        for leftover in _storage.remove_leftovers(directory, names):
            names.discard(leftover.name)
        return directory

    def _output_change(
        self, directory: Path, phase: PhaseDefinition, fields: Mapping[str, Any], reads: _Reads
    ) -> tuple[Path, AgentOutput | None]:
        """The file of an agent output and its record, None when it holds that output already
        (the caller holds the lock and has made and listed ``directory``: ``_phase_folder``)."""
        record = AgentOutput(phase_number=phase.number, phase_name=phase.name, executed=self._now(), **fields)
        check_no_case_twin(directory, f"{record.agent_name}.md", "agent_name", reads.listing(directory))
        path = directory / f"{record.agent_name}.md"
        existing = reads.record(AGENT_OUTPUT, path, self.cache)
        if existing is not None and dataclasses.replace(existing, executed=record.executed) == record:
            return path, None
        return path, record

    def save_user_feedback(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        reviewed: bool,
        approved: bool,
        comments: str = "",
        requested_changes: Sequence[str] | None = None,
        action: str | None = None,
        retry_count: int = 0,
        *,
        expected_version: str | None = None,
    ) -> Path:
        """Write the phase's user_feedback.md (the file people also edit by hand).

        ``action`` records what is done about the review; by default the one it implies:
        ``pending`` before a review, ``approved`` for an approval, ``retry`` for a review that
        does not approve. ``approved`` is the reviewer's decision: a review that does not
        approve with ``action="approved"`` is refused (InvalidArgumentError).

        With ``expected_version`` (``fs.file_version`` of the file the review was written
        against, ``fs.NO_FILE`` for none) the file must still be that version, checked under
        the session's lock: otherwise StaleReviewError, and nothing is written. A review
        (``reviewed=True``) is a lifecycle move the phase as it stands must allow a reviewer
        (``lifecycle.check_move``): otherwise MoveRefusedError, and nothing is written. The
        blank template (``reviewed=False``) decides nothing and is no move."""
        fields = feedback_fields(reviewed, approved, comments, requested_changes, action, retry_count)
        with self._saving(project_id, session_id) as (session, reads):
            phase = session.phase(phase_num)
            directory = session.phase_dir(phase_num)
            if expected_version is not None:
                _check_version(directory / FEEDBACK_FILE, expected_version, reads)
            self._check_review(session, phase, _review_of(phase, fields), reads)
            self._phase_folder(session, phase_num, reads)
            path, found = self._feedback_change(directory, phase, fields, reads)
            if found is None:
                return path  # the same review again: no byte changes
            text, record = found
            with journal.Change(session.directory, "save_user_feedback") as change:
                change.write(path, text, current=reads.current(path))
                self._stage_review(change, session, phase, record, reads=reads)
        self.events.emit([_feedback_event(project_id, session_id, phase.number, path, fields)])
        return path

    def _feedback_change(
        self, directory: Path, phase: PhaseDefinition, fields: Mapping[str, Any], reads: _Reads
    ) -> tuple[Path, tuple[str, UserFeedback] | None]:
        """The feedback file, with the text to write there and its record, None when it says
        that already (the caller holds the lock and has made ``directory``)."""
        reviewed, approved = fields["reviewed"], fields["approved"]
        record = dataclasses.replace(
            _review_of(phase, fields),
            timestamp=self._now() if reviewed or approved else None,  # a blank template has no time
        )
        path = directory / FEEDBACK_FILE
        existing = reads.record(FEEDBACK, path, self.cache)
        if existing is not None and dataclasses.replace(existing, timestamp=record.timestamp) == record:
            return path, None
        data = reads.data(path)
        try:  # a person's sections and lines in the file stay (formats.md, "Hand edits")
            kept = None if data is None else rewrite_feedback(data.decode("utf-8"), record)
        except UnicodeDecodeError:
            kept = None
        if kept is None:
            kept = self._render(FEEDBACK, path, record, reads)
        else:
            FEEDBACK.check_record(record, path)
        return path, (kept, record)

    def _check_review(
        self,
        session: _Session,
        phase: PhaseDefinition,
        review: UserFeedback,
        reads: _Reads | None = None,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> None:
        """Refuse (MoveRefusedError) a review whose move (``lifecycle.review_event``) the
        lifecycle does not allow a reviewer on the phase as its files say it stands now, or as
        ``checkpoints`` (those an operation is about to write) leave it; the caller holds the
        lock. The one check every review write makes, so the library, the command line and
        the pages refuse the same things."""
        event = lifecycle.review_event(review)
        if event is None:
            return
        found = {**self._checkpoints(session, reads), **(checkpoints or {})}
        read = None if reads is None else reads.data
        reviews = _progress.read_reviews(session.directory, session.phases, self.cache, read)
        state = (
            lifecycle.derive(_progress.phase_facts(session.phases, found, reviews)).phase(phase.number).state
        )
        move = lifecycle.check_move(event, state, "reviewer")
        if isinstance(move, str):
            manifest = session.manifest
            raise MoveRefusedError(
                f"phase {phase.number} ({phase.name}) of {manifest.project_id}/{manifest.session_id}: "
                f"{move}; nothing was written",
                path=session.phase_dir(phase.number) / FEEDBACK_FILE,
                field=FEEDBACK.labels["action" if event == "skip" else "approved"],
                event=event,
                state=state,
            )

    def save_feedback_text(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        text: str,
        *,
        expected: str | None = None,
    ) -> UserFeedback:
        """Write a person's own text as the phase's user_feedback.md, byte for byte, and
        return what haytham understood from it (the editor loop of ``haytham feedback`` and
        ``haytham review``).

        It is saved as every review is: under the session's lock, with its review history
        entry and the manifest brought up to date, as one journaled operation. Nothing is
        written when ``text`` does not read (DocumentError: its first error, at its line
        and field), when the review is a move the lifecycle does not allow a reviewer
        (MoveRefusedError), or when ``expected`` (``fs.file_version`` of the file when the
        person began, ``fs.NO_FILE`` for none) is given and the file is no longer that
        version (StaleReviewError: someone else wrote it meanwhile, theirs stays). The same
        text as the file's writes nothing.
        """
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}", field="text")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidArgumentError(
                f"text holds {error.object[error.start : error.end]!r}, which UTF-8 cannot store "
                "(a lone surrogate)",
                field="text",
            ) from None
        with self._saving(project_id, session_id) as (session, reads):
            phase = session.phase(phase_num)
            directory = session.phase_dir(phase_num)
            path = directory / FEEDBACK_FILE
            if expected is not None:
                _check_version(path, expected, reads)
            record, issues = FEEDBACK.read_data(data, path, cache=self.cache)
            if record is None:
                first = next(issue for issue in issues if issue.is_error)
                raise DocumentError(first.message, path=path, line=first.line, field=first.field)
            self._check_review(session, phase, record, reads)
            self._phase_folder(session, phase_num, reads)
            if reads.data(path) == data:
                return record  # the file says this already: no byte changes
            with journal.Change(session.directory, "save_feedback_text") as change:
                change.write(path, data, current=reads.current(path))
                self._stage_review(change, session, phase, record, reads=reads, text=text)
        self.events.emit(
            [_feedback_event(project_id, session_id, phase.number, path, dataclasses.asdict(record))]
        )
        return record

    def save_phase(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        outputs: Mapping[str, str | Mapping[str, Any]] | None = None,
        status: str = "completed",
        feedback: Mapping[str, Any] | None = None,
        *,
        agents: Sequence[Mapping[str, Any]] | None = None,
        started: str | None = None,
        completed: str | None = None,
        duration: float | None = None,
        retry_count: int | None = None,
        execution_mode: str = "single",
        errors: Sequence[str] | None = None,
        name: str | None = None,
        reason: str | None = None,
        built_from: Mapping[int, str] | None = None,
    ) -> Path:
        """Save a whole phase at once: its agent outputs, its checkpoint (with its history
        entry and the manifest) and optionally its feedback, under one lock and as one
        journaled operation (``haytham.store.journal``): one durability point, so a crash
        leaves all of it saved or none, with fewer fsyncs than the calls one by one
        (docs/architecture.md, "Multi-file changes").

        The files are those of ``save_agent_output`` for each of ``outputs``, then
        ``save_checkpoint``, then ``save_user_feedback``, byte for byte:

        - ``outputs`` maps an agent name to its content, or to ``save_agent_output``'s
          keyword arguments (``output_content``, ``status``, ``duration``, ``model``, ...);
        - ``agents`` is the checkpoint's agents (``save_checkpoint``); by default one row per
          output, with its status, duration, tokens and cost; the other keyword arguments
          are ``save_checkpoint``'s;
        - ``feedback`` holds ``save_user_feedback``'s keyword arguments (``reviewed``,
          ``approved``, ``comments``, ...), or None to leave the feedback as it is.

        What is already saved is not written again. The events are those of the calls one by
        one. Returns the checkpoint's path.
        """
        given: dict[str, dict[str, Any]] = {}
        for agent, value in (outputs or {}).items():
            if isinstance(value, str):
                given[agent] = {"output_content": value}
            elif isinstance(value, Mapping):
                given[agent] = dict(value)
            else:
                raise InvalidArgumentError(
                    f"outputs[{agent!r}] must be the content or a dict of save_agent_output's "
                    f"arguments, got {type(value).__name__}",
                    field="outputs",
                )
        try:
            checked_outputs = {agent: output_fields(agent, **kwargs) for agent, kwargs in given.items()}
            review = None if feedback is None else feedback_fields(**feedback)
        except TypeError as error:  # an unknown or missing keyword
            raise InvalidArgumentError(str(error), field="outputs" if feedback is None else None) from None
        if agents is None:
            agents = [agent_row(fields) for fields in checked_outputs.values()]
        checked = checkpoint_args(
            status,
            agents,
            started,
            completed,
            duration,
            retry_count,
            execution_mode,
            errors,
            name,
            reason,
            built_from,
        )
        with self._saving(project_id, session_id) as (session, reads):
            phase = session.phase(phase_num)
            directory = self._phase_folder(session, phase_num, reads)
            _storage.remove_leftovers(session.directory, reads.listing(session.directory))
            written = []
            for fields in checked_outputs.values():
                path, output = self._output_change(directory, phase, fields, reads)
                if output is not None:
                    written.append((path, output, fields))
            staged = {agent: fields["content"] for agent, fields in checked_outputs.items()}
            checkpoint_path = directory / CHECKPOINT_FILE
            current = self._checkpoints(session, reads)
            record, previous, now = self._checkpoint_record(
                session, phase, checked, current, staged, reads=reads
            )
            new_checkpoint = previous != record or name is not None or reason is not None
            if review is not None:  # the review moves the phase as its new checkpoint leaves it
                self._check_review(session, phase, _review_of(phase, review), reads, {phase.number: record})
            feedback_path, found = (
                self._feedback_change(directory, phase, review, reads) if review is not None else (None, None)
            )
            before_status = session.manifest.status
            manifest = session.manifest
            with journal.Change(session.directory, "save_phase") as change:
                for path, output, _ in written:
                    self._stage(change, AGENT_OUTPUT, path, output, reads)
                head = None
                parent = session  # the review's entry follows the checkpoint's
                if new_checkpoint:
                    moved = self._stage_checkpoint(
                        change,
                        session,
                        checkpoint_path,
                        record,
                        now,
                        name,
                        reason,
                        stage_manifest=False,
                        reads=reads,
                    )
                    head = moved.history_head
                    parent = dataclasses.replace(session, manifest=moved)
                reviews: dict[int, _progress.Review | None] = {}
                if found is not None and feedback_path is not None:
                    change.write(feedback_path, found[0], current=reads.current(feedback_path))
                    reviews, reviewed_head = self._stage_review(
                        change, parent, phase, found[1], checkpoint=record, stage_manifest=False, reads=reads
                    )
                    head = reviewed_head or head
                if new_checkpoint or found is not None:
                    manifest = self._stage_manifest(
                        change,
                        session,
                        checkpoints={phase.number: record},
                        reviews=reviews,
                        head=head,
                        current=current,
                        reads=reads,
                    )
        events = [_output_event(project_id, session_id, phase.number, p, f) for p, _, f in written]
        if new_checkpoint:
            events += _checkpoint_events(
                project_id,
                session_id,
                session,
                phase.number,
                checkpoint_path,
                status,
                before_status,
                manifest,
            )
        if found is not None and feedback_path is not None and review is not None:
            events.append(_feedback_event(project_id, session_id, phase.number, feedback_path, review))
        self.events.emit(events)
        return checkpoint_path

    def session_workflow(self, project_id: str, session_id: str) -> Workflow:
        """The workflow a session runs: its own saved copy, else the registered one by name."""
        return self._open(project_id, session_id).workflow

    def change_workflow(self, project_id: str, session_id: str, workflow: Workflow) -> None:
        """Move a session to a new definition of its workflow (an explicit, recorded choice).

        The manifest's Workflow Type and Fingerprint are updated and its phase table is
        recomputed for the new phases; saved phase files are kept.
        """
        session = self._open(project_id, session_id)
        workflow.phases_for(session.manifest.execution_mode)
        with self._lock(session.directory, project_id, session_id):
            session = self._open(project_id, session_id)
            own_copy = session.directory / WORKFLOW_FILE
            manifest = dataclasses.replace(
                session.manifest, workflow_type=workflow.name, workflow_fingerprint=workflow.fingerprint()
            )
            moved = _Session(
                self.base_dir,
                session.directory,
                manifest,
                workflow,
                workflow.phases_for(manifest.execution_mode),
            )
            derived = self._derived_manifest(moved)
            if derived is not moved.manifest:
                derived = dataclasses.replace(derived, last_updated=self._now())
            with journal.Change(session.directory, "change_workflow") as change:
                if BUILTIN_WORKFLOWS.get(workflow.name) != workflow:
                    change.write(own_copy, dump_workflow(workflow))
                else:
                    change.remove(own_copy)
                path = session.directory / MANIFEST_FILE
                change.write(path, self._render(MANIFEST, path, derived))

    def start_attempt(self, project_id: str, session_id: str, phase_num: int) -> int:
        """Keep the phase's current attempt in ``attempts/{n}/`` and open attempt ``n + 1``.

        The checkpoint, agent outputs and feedback of attempt ``n`` (``Retry Count`` + 1) are
        copied into ``phase_{n}_{slug}/attempts/{n}/``; the outputs and feedback are removed
        from the phase directory and the checkpoint is saved ``pending`` (not started: the
        runner starts it) with ``Retry Count`` ``n``, with its history entry and the manifest:
        all in one operation
        (``haytham.store.journal``), so a crash leaves all of it done or none. Returns the
        new attempt number.
        """
        session = self._open(project_id, session_id)
        session.phase(phase_num)
        with self._lock(session.directory, project_id, session_id):
            session = self._open(project_id, session_id)
            with journal.Change(session.directory, "start_attempt") as change:
                numbers = self._stage_attempts(change, session, [session.phase(phase_num)], strict=True)
        return numbers[0] + 1

    def _stage_attempts(
        self, change: journal.Change, session: _Session, phases: Sequence[PhaseDefinition], *, strict: bool
    ) -> list[int]:
        """Stage archiving the current attempt of each of ``phases`` (in the mode's order) and
        opening the next, with one history entry each and the manifest once; return the
        archived attempt numbers. ``strict``: a phase without a checkpoint is an error."""
        checkpoints = self._checkpoints(session)
        planned: dict[int, PhaseCheckpoint] = {}
        reviews: dict[int, _progress.Review | None] = {}
        numbers = []
        for phase in phases:
            directory = session.phase_dir(phase.number)
            current = checkpoints.get(phase.number)
            if current is None:
                if strict:
                    self._load(
                        CHECKPOINT,
                        directory / CHECKPOINT_FILE,
                        PhaseNotFoundError,
                        f"phase {phase.number} has no checkpoint",
                    )
                continue
            number = current.retry_count + 1
            _attempts.stage_archive(change, directory, number)
            now = self._now()
            fresh = dataclasses.replace(  # not started: the runner starts it (rerun: one at a time)
                current,
                status="pending",
                retry_count=number,
                started=None,
                completed=None,
                duration=None,
                agents=tuple(
                    dataclasses.replace(run, status="pending", duration=None, tokens=None, cost=None)
                    for run in current.agents
                ),
                total_tokens=None,
                input_tokens=None,
                output_tokens=None,
                cost=None,
                errors=(),
                outputs_digest=None,
                built_from=self._sources(session, phase, {**checkpoints, **planned}),
            )
            manifest = self._stage_checkpoint(
                change,
                session,
                directory / CHECKPOINT_FILE,
                fresh,
                now,
                reason=f"attempt {number + 1} after review",
                stage_manifest=False,
            )
            session = dataclasses.replace(session, manifest=manifest)  # the next entry's parent
            change.remove(directory / FEEDBACK_FILE)
            planned[phase.number] = fresh
            reviews[phase.number] = None
            numbers.append(number)
        if numbers:
            head = session.manifest.history_head
            self._stage_manifest(change, session, checkpoints=planned, reviews=reviews, head=head)
        return numbers

    def archive_from(self, project_id: str, session_id: str, from_phase: int) -> list[int]:
        """Keep phase ``from_phase`` and every later phase of the mode that has a checkpoint as
        attempts (``start_attempt``), so that the next run runs them again; return those phases.

        All of them are archived in one operation: a crash leaves every one or none.
        ``PhaseRunner.rerun`` and ``haytham rerun`` call it before running the session.
        """
        session = self._open(project_id, session_id)
        start = session.phase(from_phase)
        with self._lock(session.directory, project_id, session_id):
            session = self._open(project_id, session_id)
            checkpoints = self._checkpoints(session)
            later = [p for p in session.phases[session.phases.index(start) :] if p.number in checkpoints]
            with journal.Change(session.directory, "archive_from") as change:
                self._stage_attempts(change, session, later, strict=False)
        return [p.number for p in later]

    def load_attempts(self, project_id: str, session_id: str, phase_num: int) -> list[Attempt]:
        """Every attempt of a phase, oldest first; the last is the one in the phase directory."""
        directory = self.phase_dir(project_id, session_id, phase_num)
        current = self._load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        return _attempts.load_all(directory, current)

    def update_feedback(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        *,
        reviewed: bool | None = None,
        approved: bool | None = None,
        action: str | None = None,
        retry_count: int | None = None,
    ) -> UserFeedback:
        """Change only the given fields of a (possibly hand-edited) user_feedback.md.

        Every other byte a person wrote (comments, changes, extra sections, their spelling of
        labels and line endings) is kept. A file that does not parse is left alone and its
        error raised; so is a review the lifecycle does not allow (MoveRefusedError, as for
        ``save_user_feedback``).
        """
        updates: dict[str, bool | int | str] = {}
        for key, flag in (("reviewed", reviewed), ("approved", approved)):
            if flag is not None:
                updates[key] = check_flag(key, flag)
        if action is not None:
            check_choice("action", action, FEEDBACK_ACTIONS)
            updates["action"] = action
        if retry_count is not None:
            check_count("retry_count", retry_count)
            updates["retry_count"] = retry_count
        session = self._open(project_id, session_id)
        session.phase(phase_num)
        with self._lock(session.directory, project_id, session_id):
            path = session.phase_dir(phase_num) / FEEDBACK_FILE
            before = self._load(FEEDBACK, path, NotFoundError, f"phase {phase_num} has no feedback")
            raw = path.read_bytes().decode("utf-8")
            text = rewrite_fields(raw, updates)
            after = FEEDBACK.parse(decode(text.encode("utf-8"), path), path)
            expected = settle_feedback(dataclasses.replace(before, **updates))  # type: ignore[arg-type]
            if after != expected:
                raise DocumentError(
                    f"rewriting {sorted(updates)} would change more than those fields; the file "
                    "was left as it is",
                    path=path,
                )
            if text != raw:
                session = self._open(project_id, session_id)
                self._check_review(session, session.phase(phase_num), after)
                with journal.Change(session.directory, "update_feedback") as change:
                    change.write(path, text)
                    self._stage_review(change, session, session.phase(phase_num), after)
        return after

    def history(
        self,
        project_id: str,
        session_id: str,
        *,
        phase: int | None = None,
        status: str | None = None,
        name: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[HistoryEntry]:
        """The session's history entries, oldest first, matching every criterion given."""
        session = self._open(project_id, session_id)
        if phase is not None:
            session.phase(phase)
        if status is not None:
            check_choice("status", status, PHASE_STATUSES)
        since = check_timestamp("since", since)
        until = check_timestamp("until", until)
        entries, _ = history.read_entries(session.directory, cache=self.cache)
        return history.select(entries, phase=phase, status=status, name=name, since=since, until=until)

    def history_entry(self, project_id: str, session_id: str, entry_id: str) -> HistoryEntry:
        """One entry by id (a unique prefix is enough); the latest with ``name=`` otherwise."""
        entries = self.history(project_id, session_id)
        found = [e for e in entries if e.entry_id.startswith(entry_id)] if entry_id else []
        if len(found) != 1:
            what = "no" if not found else "more than one"
            raise NotFoundError(f"{what} history entry of {project_id}/{session_id} matches {entry_id!r}")
        return found[0]

    def entry_state(
        self, project_id: str, session_id: str, entry: HistoryEntry
    ) -> tuple[PhaseCheckpoint, dict[str, str]]:
        """What an entry recorded: its checkpoint, and the outputs of that attempt."""
        checkpoint = CHECKPOINT.parse(entry.checkpoint_text)
        attempts = self.load_attempts(project_id, session_id, entry.phase_number)
        outputs = next((a.outputs for a in attempts if a.number == entry.attempt), {})
        return checkpoint, outputs

    # --------------------------------------------------------------- forking

    def fork_session(
        self,
        project_id: str,
        session_id: str,
        new_session_id: str,
        from_phase: int | None = None,
        *,
        from_entry: str | None = None,
        user_id: str | None = None,
    ) -> Path:
        """Start a new session that shares the phases before ``from_phase``; return its dir.

        Time travel that never rewrites history: the source session is left exactly as it
        is. The new session ``new_session_id`` (same project) gets, byte for byte, the
        checkpoints, agent outputs, feedback and attempts of the phases before
        ``from_phase`` in the mode's order, and the source's workflow.yaml if it has one;
        ``from_phase`` and the phases after it are pending with no files. Its manifest says
        ``Forked From: {session_id} at phase {n}``, and its history starts with one entry
        per copied checkpoint (reason ``forked from {session_id}``). Resuming continues a
        session; forking starts another one. Refuses an existing target
        (SessionExistsError) and a phase the session's mode does not run (UnknownPhaseError).

        ``from_entry=ID`` (a history entry id or a unique prefix, instead of ``from_phase``)
        forks from any moment of the history: the new session starts at the entry's phase,
        and the phases before it are as they were at that entry (``fork.files_at_entry``
        says what can be reconstructed; NotFoundError when the outputs of that moment are no
        longer on disk). Giving both, or neither, is an InvalidArgumentError.
        """
        if (from_phase is None) == (from_entry is None):
            raise InvalidArgumentError(
                "give exactly one of from_phase and from_entry",
                field="from_entry" if from_entry else "from_phase",
            )
        check_name("session_id", new_session_id)
        if user_id is not None:
            check_user_id(user_id)
        entry = None
        if from_entry is not None:
            if not isinstance(from_entry, str):
                raise InvalidArgumentError(
                    f"from_entry must be a string, got {from_entry!r}", field="from_entry"
                )
            self.recover(project_id, session_id)  # an entry an interrupted save committed counts
            entry = self.history_entry(project_id, session_id, from_entry)
            from_phase = entry.phase_number
        target = check_inside(self.base_dir, self.session_dir(project_id, new_session_id))
        check_no_case_twin(target.parent, new_session_id, "session_id")
        session = self._open(project_id, session_id)
        session.phase(from_phase)  # UnknownPhaseError for a phase the mode does not run
        if target.exists():
            raise SessionExistsError(
                f"session {project_id}/{new_session_id} already exists at {target}; it was left "
                "untouched (fork into a new session id)",
                path=target,
            )
        with self._lock(session.directory, project_id, session_id):
            session = self._open(project_id, session_id)
            start = session.phase(from_phase)
            copied = {p.directory for p in session.phases[: session.phases.index(start)]}
            source, _ = read_session_files(session.directory, only={*copied, WORKFLOW_FILE})
            reason = None
            if entry is not None:
                entries, _ = history.read_entries(session.directory, cache=self.cache)
                before = session.phases[: session.phases.index(start)]
                source = files_at_entry(
                    source, session.directory, entries, entry, before, self._checkpoints(session)
                )
                reason = f"forked from {session_id} at entry {entry.entry_id}"
        files, kept = fork_files(
            source,
            session.directory,
            session.manifest,
            session.phases,
            start,
            new_session_id=new_session_id,
            user_id=user_id,
            now=self._now(),
            target=target,
            reason=reason,
        )
        write_session_dir(
            target,
            files,
            [phase.directory for phase in session.phases],
            lock_timeout=self.lock_timeout,
            what=f"session {project_id}/{new_session_id}",
        )
        data: dict[str, object] = {
            "source": session_id,
            "from_phase": start.number,
            "copied_phases": [p.number for p in kept],
        }
        if entry is not None:
            data["from_entry"] = entry.entry_id
        self.events.emit([Event("session_forked", project_id, new_session_id, start.number, target, data)])
        return target

    # ---------------------------------------------------------------- reading

    def load_manifest(self, project_id: str, session_id: str) -> SessionManifest:
        """The manifest as written on disk (see ``load_session`` for the checked state)."""
        return self._open(project_id, session_id).manifest

    def load_checkpoint(self, project_id: str, session_id: str, phase_num: int) -> PhaseCheckpoint:
        """The phase's checkpoint; PhaseNotFoundError if the phase was never saved."""
        path = self._open(project_id, session_id).read_phase_dir(phase_num) / CHECKPOINT_FILE
        return self._load(CHECKPOINT, path, PhaseNotFoundError, f"phase {phase_num} has no checkpoint")

    def load_agent_output(
        self, project_id: str, session_id: str, phase_num: int, agent_name: str
    ) -> AgentOutput:
        """One agent's output record, content included."""
        check_agent_name(agent_name)
        path = self._open(project_id, session_id).read_phase_dir(phase_num) / f"{agent_name}.md"
        return self._load(AGENT_OUTPUT, path, NotFoundError, f"agent {agent_name!r} has no output")

    def load_feedback(self, project_id: str, session_id: str, phase_num: int) -> UserFeedback | None:
        """The phase's feedback, or None when nobody has written any yet."""
        directory = self._open(project_id, session_id).read_phase_dir(phase_num)
        feedback = self._load_optional(FEEDBACK, directory / FEEDBACK_FILE)
        if feedback is None or not feedback.reviewed:
            return feedback
        checkpoint = self._load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        completed = checkpoint.completed if checkpoint is not None else None
        return hand_review_time(feedback, directory / FEEDBACK_FILE, completed)  # a hand review's time

    def load_checkpoints(self, project_id: str, session_id: str) -> dict[int, PhaseCheckpoint]:
        """Every saved checkpoint of the session, by phase number."""
        return self._checkpoints(self._open(project_id, session_id))

    def load_session(self, project_id: str, session_id: str) -> dict[str, Any]:
        """The session's state as a dict, with what a resume needs.

        The progress comes from the phase checkpoints, derived in memory through the
        lifecycle. A manifest that disagrees (a process died between writing a checkpoint and
        the manifest, a hand-written review, a merge, a legacy session) is left as it is on
        disk: reads never write. The next save or ``repair`` (``haytham doctor --fix``)
        brings it up to date.
        """
        session = self._open(project_id, session_id)
        checkpoints = self._checkpoints(session)
        view = self._view(session, checkpoints)
        manifest = self._derived_manifest(session, checkpoints, view)
        rows = manifest.phases
        return {
            "session_id": manifest.session_id,
            "project_id": manifest.project_id,
            "user_id": manifest.user_id,
            "workflow_type": manifest.workflow_type,
            "execution_mode": manifest.execution_mode,
            "created": manifest.created,
            "last_updated": manifest.last_updated,
            "status": manifest.status,
            "current_phase": manifest.current.number,
            "current_phase_name": manifest.current.name,
            "current_state": manifest.current.status,
            "can_resume": manifest.current.can_resume,
            "next_phase": view.current.number if view.current else None,
            "next_action": view.next_action,
            "completed_phases": [v.number for v in view.phases if v.state in ("completed", "approved")],
            "phase_statuses": {v.number: v.state for v in view.phases},
            "stale_phases": {v.number: list(v.stale_because) for v in view.stale},
            "edited_outputs": {v.number: list(v.edited) for v in view.phases if v.edited},
            "phases": [_flat_dict(r) for r in rows],
            "metrics": _flat_dict(manifest.metrics),
            "session_dir": str(session.directory),
        }

    def get_phase_outputs(
        self, project_id: str, session_id: str, phase_nums: Iterable[int] | None = None
    ) -> dict[int, dict[str, str]]:
        """``{phase: {agent: content}}``, each content exactly as it was saved.

        ``phase_nums=None`` means the completed phases. A phase of ``phase_nums`` whose folder
        was never made (not reached yet, or a session started by ``ProjectManager``) is left
        out, as the first implementation did (the product document asks for ``[1, 2]`` of any
        session); a number that is no phase of the workflow is an UnknownPhaseError.
        """
        session = self._open(project_id, session_id)
        checkpoints: dict[int, PhaseCheckpoint] | None = None
        if phase_nums is None:
            checkpoints = self._checkpoints(session)
            numbers = [n for n, c in checkpoints.items() if c.status == "completed"]
        else:
            numbers = [session.read_phase(n).number for n in phase_nums]
        outputs: dict[int, dict[str, str]] = {}
        phase_dirs = PhaseDirs(self.base_dir, session.directory, session_checked=True)  # by _open
        for number in numbers:
            directory, is_dir = phase_dirs.get(session.read_phase(number).directory)
            if not is_dir:
                if not os.path.lexists(directory):  # never made: nothing to give
                    continue
                raise PhaseNotFoundError(
                    f"phase {number} of {project_id}/{session_id}: {directory} is not a directory",
                    path=directory,
                )
            if checkpoints is not None:  # read a moment ago from this very file
                listed = checkpoints.get(number)
            else:
                listed = CHECKPOINT.load_optional(directory / CHECKPOINT_FILE, cache=self.cache)
            order = [run.agent_name for run in listed.agents] if listed else []
            outputs[number] = {
                path.stem: AGENT_OUTPUT.load(path, cache=self.cache).content
                for path in agent_files(directory, order)
            }
        return outputs

    def state(self, project_id: str, session_id: str) -> lifecycle.SessionView:
        """Where the session stands: ``lifecycle.derive`` over its checkpoints and review files.

        The one function every view reads (the manifest, ``load_session``, ``list``,
        ``status``, the runner's next step). No agent output is opened; nothing is written.
        """
        return self._view(self._open(project_id, session_id))

    def running(self, project_id: str, session_id: str) -> LeaseHolder | None:
        """Who is running the session now (a runner holds its run lease), or None.

        ``state`` says where the session's files stand; this says whether a runner is at work
        on it, so that a view shows it ``running`` rather than interrupted. Read-only: the
        lease is never taken or written (``haytham.store.lease.holder``); a lease file left by
        a runner that died is not running.
        """
        return _lease.holder(self.session_dir(project_id, session_id))

    def get_approved_phases(self, project_id: str, session_id: str) -> list[int]:
        """Phases the lifecycle calls approved (reviewed, approved, and not stale since), and a
        phase outside the mode whose folder holds an approving review, as the first
        implementation counted it."""
        session = self._open(project_id, session_id)
        approved = [v.number for v in self.state(project_id, session_id).phases if v.state == "approved"]
        for phase in session.workflow.phases:
            if phase in session.phases or not (session.directory / phase.directory).is_dir():
                continue
            feedback = self._load_optional(FEEDBACK, session.directory / phase.directory / FEEDBACK_FILE)
            if feedback is not None and feedback.reviewed and feedback.approved:
                approved.append(phase.number)
        return sorted(approved)

    # ------------------------------------------------------------- validating

    def validate_checkpoint(self, project_id: str, session_id: str, phase_num: int) -> tuple[bool, list[str]]:
        """Check the phase's checkpoint, agent outputs and feedback: ``(ok, messages)``.

        The product document's form of ``validate_paths`` for one phase (a missing
        checkpoint counts as a problem here).
        """
        session = self._open(project_id, session_id)
        phase = session.read_phase(phase_num)
        issues = phase_issues(
            session.directory / phase.directory, phase, require_checkpoint=True, cache=self.cache
        )
        return not any(issue.is_error for issue in issues), [str(issue) for issue in issues]

    def validate_session(self, project_id: str, session_id: str) -> list[Issue]:
        """``validate_paths`` for one session: every problem in every file of it.

        An empty list means it is valid; a session that does not exist raises
        SessionNotFoundError (or ProjectNotFoundError) rather than being reported.
        """
        directory = self.session_dir(project_id, session_id)
        if not (directory / MANIFEST_FILE).is_file():
            self._open(project_id, session_id)  # raises the NotFoundError that says what is missing
        return self.validate_paths([directory])

    def list_sessions(
        self, *, project_id: str | None = None, user_id: str | None = None, status: str | None = None
    ) -> list[SessionSummary]:
        """Every session under ``base_dir`` (optionally one project's, one user's, one status),
        most recently updated first, each in the state its files derive (as ``state``; the
        manifest supplies the ids, user, workflow, mode and times). Unreadable manifests are
        skipped; ``validate_paths`` reports them."""
        if project_id is not None:
            check_path_name("project_id", project_id)
        found = list_sessions(
            self.base_dir, project_id=project_id, user_id=user_id, status=status, workflows=self.workflows
        )
        return found[0]

    def iter_sessions(
        self, *, project_id: str | None = None, user_id: str | None = None, status: str | None = None
    ) -> SessionListing:
        """``list_sessions`` as a ``SessionListing``: its length, and summaries made one at a
        time as it is iterated (``listing.page(offset, limit)`` for a page), for listings
        of many thousands of sessions. ``listing.issues`` are the unreadable manifests."""
        if project_id is not None:
            check_path_name("project_id", project_id)
        return iter_sessions(
            self.base_dir, project_id=project_id, user_id=user_id, status=status, workflows=self.workflows
        )

    def validate_paths(
        self,
        paths: Iterable[str | os.PathLike[str]] = (),
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Issue]:
        """Check every session file under ``paths`` (default: ``base_dir``), like a linter.

        The one general way to validate: a path may be the base dir, a project, a session,
        a phase or one file; a whole session is also checked for a manifest that disagrees
        with its checkpoints. Problems are returned, never raised, sorted by file and line.

        The work is linear in what ``paths`` hold: the tree is walked once, each session
        is checked once (its result remembered in the base directory's index, opened once
        for the run), and a file given alone is read alone, so ``validate_paths([a, b])``
        in a tree of thousands of sessions reads only ``a`` and ``b``. ``progress(done,
        total)`` is called after each session and each file outside a session.
        """
        roots = [Path(p) for p in paths] or [self.base_dir]
        sessions = sorted({d for root in roots if root.is_dir() for d in session_dirs(root)})
        loose = list(session_files(roots, outside=sessions))
        total = len(sessions) + len(loose)

        def validate(directory: Path) -> list[Issue]:
            try:
                check_path_name("project_id", directory.parent.parent.name)
                check_path_name("session_id", directory.name)
                return session_issues(directory, self._session_workflow, cache=self.cache)
            except HaythamError as error:
                return [Issue(error.path or directory / MANIFEST_FILE, error.line, error.field, str(error))]

        def step(done: int) -> None:
            if progress is not None:
                progress(done, total)

        # A session's result is remembered in the base directory's index while its files
        # stay unchanged (haytham/_index.py); the definitions it was checked against count.
        definitions = sorted((name, w.fingerprint()) for name, w in self.workflows.items())
        issues = validate_sessions(sessions, validate, repr(definitions), progress=step)
        known = set(sessions)  # a folder that lost its manifest is an error, not nothing
        issues += [o.issue() for root in roots if root.is_dir() for o in orphans.under(root, known)]
        for done, path in enumerate(loose, len(sessions) + 1):
            kind = kind_of(path)
            assert kind is not None
            issues += kind.read_path(path)[1]
            step(done)
        unique = dict.fromkeys(issues)
        return sorted(unique, key=lambda i: (str(i.path), i.line or 0))

    def check(self, project_id: str, session_id: str, fix: bool = False) -> list[Finding]:
        """Compare the manifest with the files on disk; with ``fix`` repair what is safe.

        Safe repairs: rebuild the manifest from the phase files, remove temporary files
        left by killed writers. A person's content is never deleted.
        """
        return check_session(self, project_id, session_id, fix)

    def repair(self, project_id: str, session_id: str) -> None:
        """Finish an operation a killed writer left half done (its journal record), rebuild
        the manifest's progress from the phase checkpoints and remove the temporary files and
        staging folders that killed writers left, under the session's lock.

        Safe at any time: what it writes is derived from the files, and a person's content
        is never touched. ``check(fix=True)`` calls it. Reads never repair: ``load_session``
        derives the same progress in memory and leaves the file as it is.
        """
        directory = self.session_dir(project_id, session_id)
        with self._lock(directory, project_id, session_id):
            session = self._open(project_id, session_id)
            for folder in written_folders(directory):
                remove_traces(folder)
            entries, _ = history.read_entries(directory, cache=self.cache)
            newest = history.newest(entries, session.manifest.history_head)
            head = newest.entry_id if newest is not None else None
            self._sync_manifest(session, head=head if head != session.manifest.history_head else None)

    def recover(self, project_id: str, session_id: str) -> bool:
        """Finish a change of the session that a killed writer committed and left half
        applied (its journal record, docs/architecture.md "Multi-file changes"), under the
        session's lock, as every save does first; return whether there was one.

        For code that decides from the session's state before it writes (a runner choosing
        its next step, a review read before it is edited): call it first, so the decision is
        made on the whole change, not on half of it. A session with no record is not locked
        and nothing is written. ``load_session`` and every other read never recover: they
        see the files as they are (``validate`` warns of the pending change).
        """
        directory = self._session_home(project_id, session_id)
        if journal.pending(directory) is None:
            return False
        with self._lock(directory, project_id, session_id):  # taking it rolls the change forward
            return True

    def lock(self, project_id: str, session_id: str) -> AbstractContextManager[None]:
        """Hold the session's OS lock, the one every save takes, for as long as the block runs.

        For code that changes a session's files beside the manager's own methods (retention
        removing a session or an attempt), so that no save runs at the same time. The lock
        is released by the kernel if the process dies; it is not reentrant, so do not call
        a saving method of the manager inside the block. LockTimeout after ``lock_timeout``.
        """
        return self._lock(self.session_dir(project_id, session_id), project_id, session_id)

    # ---------------------------------------------------------------- helpers

    def _now(self) -> str:
        try:
            return format_timestamp(self.clock())
        except ValueError as error:
            raise InvalidArgumentError(f"the manager's clock is unusable: {error}", field="clock") from None

    def _workflow(self, workflow: str | Workflow) -> Workflow:
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

    def _session_workflow(self, directory: Path, manifest: SessionManifest) -> Workflow:
        """The session's own copy of a custom workflow, else the registered one by name."""
        own_copy = directory / WORKFLOW_FILE
        try:
            data = read_file(own_copy)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return self._workflow(manifest.workflow_type)
        found = self._workflow_copies.get(data)
        if found is None:  # sessions of one workflow hold the same bytes: parsed once
            found = load_workflow(own_copy, data)
            if len(self._workflow_copies) >= 64:
                self._workflow_copies.clear()
            self._workflow_copies[data] = found
        return found

    @contextlib.contextmanager
    def _lock(self, directory: Path, project_id: str, session_id: str) -> Iterator[None]:
        """Hold the session's lock; first finish an operation a killed writer left half done
        (``journal.recover``), so every writer starts from a whole state."""
        with _storage.locked(directory, self.lock_timeout, f"session {project_id}/{session_id}"):
            journal.recover(directory)
            yield

    @contextlib.contextmanager
    def _saving(self, project_id: str, session_id: str) -> Iterator[tuple[_Session, _Reads]]:
        """Hold the session's lock for a save, and read the session once under it through
        the operation's own ``_Reads`` (what a save reads is never older than the lock)."""
        home = self._session_home(project_id, session_id)
        with self._lock(home, project_id, session_id):
            reads = _Reads()
            yield self._read_session(home, reads), reads

    def _open(self, project_id: str, session_id: str) -> _Session:
        return self._read_session(self._session_home(project_id, session_id))

    def _session_home(self, project_id: str, session_id: str) -> Path:
        """The folder of an existing session, checked (``check_below``); ProjectNotFoundError
        or SessionNotFoundError when there is none. A save calls it before taking the lock,
        then reads the session once, under the lock (``_read_session``)."""
        directory = check_below(self.base_dir, self.session_dir(project_id, session_id))
        path = directory / MANIFEST_FILE
        if not path.is_file():
            if not self.project_dir(project_id).is_dir():
                raise ProjectNotFoundError(
                    f"project {project_id!r} does not exist under {self.base_dir}",
                    path=self.project_dir(project_id),
                )
            orphan = orphans.find(directory)
            if orphan is not None:  # its folder holds files: say how to get it back
                raise SessionNotFoundError(f"session {project_id}/{session_id}: {orphan.issue()}", path=path)
            raise SessionNotFoundError(
                f"session {project_id}/{session_id} does not exist (no {path})", path=path
            )
        return directory

    def _read_session(self, directory: Path, reads: _Reads | None = None) -> _Session:
        """The session in the checked folder ``directory`` (its manifest read through
        ``reads`` when a save holds the lock, so that the manifest is read once)."""
        path = directory / MANIFEST_FILE
        if reads is None:
            manifest = MANIFEST.load(path, cache=self.cache)
        else:
            data = reads.data(path)
            if data is None:  # removed since _session_home looked
                raise SessionNotFoundError(f"session folder {directory} has no {MANIFEST_FILE}", path=path)
            manifest = MANIFEST.load_data(data, path, cache=self.cache)
        workflow = self._session_workflow(directory, manifest)
        return _Session(
            self.base_dir, directory, manifest, workflow, workflow.phases_for(manifest.execution_mode)
        )

    def _checkpoints(self, session: _Session, reads: _Reads | None = None) -> dict[int, PhaseCheckpoint]:
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

    def _view(
        self, session: _Session, checkpoints: Mapping[int, PhaseCheckpoint] | None = None
    ) -> lifecycle.SessionView:
        found = self._checkpoints(session) if checkpoints is None else checkpoints
        return _progress.view_of(session.directory, session.phases, found, self.cache, self.digests)

    def _derived_manifest(
        self,
        session: _Session,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        view: lifecycle.SessionView | None = None,
        head: str | None = None,
    ) -> SessionManifest:
        """The manifest as the session's files say it should be (``lifecycle.derive``), in
        memory: the one record a read returns, whatever the manifest file on disk says."""
        base = session.manifest if head is None else dataclasses.replace(session.manifest, history_head=head)
        found = self._checkpoints(session) if checkpoints is None else checkpoints
        derived = _progress.derive(base, session.phases, found, view or self._view(session, found))
        return session.manifest if _progress.same_progress(session.manifest, derived) else derived

    def _sync_manifest(self, session: _Session, *, head: str | None = None) -> SessionManifest:
        """Recompute the manifest's progress from the session's files (``lifecycle.derive``);
        write it if it changed. Only writers call it, under the session's lock."""
        derived = self._derived_manifest(session, head=head)
        if derived is session.manifest:
            return session.manifest
        updated = dataclasses.replace(derived, last_updated=self._now())
        self._write(MANIFEST, session.directory / MANIFEST_FILE, updated)
        return updated

    def _write(self, kind: DocumentFormat[R], path: Path, record: R, reads: _Reads | None = None) -> None:
        _storage.atomic_write(path, self._render(kind, path, record, reads))

    def _stage(
        self, change: journal.Change, kind: DocumentFormat[R], path: Path, record: R, reads: _Reads | None
    ) -> None:
        """Stage ``record`` to replace the file at ``path``: rendered over the file as
        ``reads`` read it, whose bytes are also the journal's before-image."""
        text = self._render(kind, path, record, reads)
        change.write(path, text, current=journal.UNREAD if reads is None else reads.current(path))

    def _render(self, kind: DocumentFormat[R], path: Path, record: R, reads: _Reads | None = None) -> str:
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

    def _load(self, kind: DocumentFormat[R], path: Path, missing: type[NotFoundError], what: str) -> R:
        try:
            return kind.load(path, cache=self.cache)
        except FileNotFoundError:
            raise missing(f"{what}: {path} does not exist", path=path) from None

    def _load_optional(self, kind: DocumentFormat[R], path: Path) -> R | None:
        return kind.load_optional(path, cache=self.cache)


def _review_of(phase: PhaseDefinition, fields: Mapping[str, Any]) -> UserFeedback:
    """The review ``save_user_feedback``'s checked ``fields`` say, as its file will read
    (``settle``: an approval implies a review), without its time."""
    return settle_feedback(UserFeedback(phase_name=phase.name, timestamp=None, **fields))


def _check_version(path: Path, expected: str, reads: _Reads) -> None:
    """Refuse (StaleReviewError) a write over ``path`` unless it is still version ``expected``
    (the bytes compared are those the save goes on with: ``reads``)."""
    current, data = _storage.file_version(path)
    reads.keep(path, data)
    if current != expected:
        raise StaleReviewError(
            f"{path} changed since the review was written against it (edited by hand or brought "
            "by git); nothing was saved",
            path=path,
            expected=expected,
            current=current,
        )


def _checkpoint_events(
    project_id: str,
    session_id: str,
    session: _Session,
    phase: int,
    path: Path,
    status: str,
    before_status: str,
    manifest: SessionManifest,
) -> list[Event]:
    """What a saved checkpoint announces: saved, the phase completed, the session completed."""
    events = [Event("checkpoint_saved", project_id, session_id, phase, path, {"status": status})]
    if status == "completed":
        events.append(Event("phase_completed", project_id, session_id, phase, path))
    if manifest.status == "completed" and before_status != "completed":
        events.append(Event("session_completed", project_id, session_id, None, session.directory))
    return events


def _output_event(
    project_id: str, session_id: str, phase: int, path: Path, fields: Mapping[str, Any]
) -> Event:
    details = {"agent_name": fields["agent_name"], "status": fields["status"]}
    return Event("agent_output_saved", project_id, session_id, phase, path, details)


def _feedback_event(
    project_id: str, session_id: str, phase: int, path: Path, fields: Mapping[str, Any]
) -> Event:
    details = {"approved": fields["approved"], "action": fields["action"]}
    return Event("feedback_saved", project_id, session_id, phase, path, details)


def _has_results(checkpoint: PhaseCheckpoint) -> bool:
    """Whether any agent of the checkpoint's attempt has a result yet (its inputs are fixed)."""
    return any(run.status != "pending" for run in checkpoint.agents)


def _flat_dict(record: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` of a record whose fields are all plain values, without its
    recursive deep copy."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def _sum(values: Iterable[int | float | None]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


__all__ = ["CheckpointManager"]
