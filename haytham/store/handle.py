"""``SessionHandle``: one session's reads and writes on one object (``manager.session(p, s)``).

Reads derive where the session stands from its files now (``lifecycle.derive``), never from
the manifest's rows, and write nothing. Writes check their arguments first, then run inside
one ``Transaction`` (lock, recovery of an interrupted change, one read of the files, stage,
commit, the manifest refreshed in the same change), and announce their events once the lock
is released.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import InvalidArgumentError, Issue, NotFoundError, PhaseNotFoundError, SessionExistsError
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE, SESSIONS_DIR, WORKFLOW_FILE
from haytham.format.reviewer import Reviewer, parse_reviewer
from haytham.format.workflow import BUILTIN_WORKFLOWS, Workflow, dump_workflow
from haytham.frozen import frozen
from haytham.records import (
    FEEDBACK_ACTIONS,
    PHASE_STATUSES,
    AgentOutput,
    Attempt,
    HistoryEntry,
    LeaseHolder,
    PhaseCheckpoint,
    SessionManifest,
    UserFeedback,
)
from haytham.store import fs as _storage
from haytham.store import lease as _lease
from haytham.store import lifecycle
from haytham.store import progress as _progress
from haytham.store.events import Event
from haytham.store.names import (
    PhaseDirs,
    check_agent_name,
    check_inside,
    check_name,
    check_new_or_existing,
    check_no_case_twin,
    check_user_id,
)
from haytham.store.phase_files import agent_files
from haytham.store.session import Session
from haytham.store.store import Store

if TYPE_CHECKING:  # the write path (the transaction, the saves, the checks of their arguments)
    # and the reads of history and attempts are imported by the methods that use them: a read of
    # where a session stands (haytham status, validate of files) needs none of them
    from haytham.store.attempts import OutputReader
    from haytham.store.shown import Shown
    from haytham.store.transaction import Transaction


class SessionHandle:
    """One session of a ``Store``: ``store.session(project_id, session_id)``.

    Cheap to make and holding no state of its own: every call reads the files anew, so a
    handle kept for a long time never shows an old state.
    """

    def __init__(self, store: Store, project_id: str, session_id: str) -> None:
        self.store = store
        self.project_id = project_id
        self.session_id = session_id

    @functools.cached_property
    def directory(self) -> Path:
        """Where the session lives (its ids checked as names; it may not exist yet)."""
        return self.store.session_dir(self.project_id, self.session_id)

    def __repr__(self) -> str:
        return f"SessionHandle({self.project_id!r}, {self.session_id!r})"

    # ------------------------------------------------------------ reading

    def open(self) -> Session:
        """The session as it is now (its manifest read, its workflow found)."""
        return self.store.open_session(self.project_id, self.session_id)

    def manifest(self) -> SessionManifest:
        """The manifest as written on disk (``load_session`` is the checked state)."""
        return self.open().manifest

    def workflow(self) -> Workflow:
        """The workflow the session runs: its own saved copy, else the registered one by name."""
        return self.open().workflow

    def phase_dir(self, phase_num: int) -> Path:
        return self.open().phase_dir(phase_num)

    def checkpoint(self, phase_num: int) -> PhaseCheckpoint:
        """The phase's checkpoint; PhaseNotFoundError if the phase was never saved."""
        path = self.open().read_phase_dir(phase_num) / CHECKPOINT_FILE
        return self.store.load(CHECKPOINT, path, PhaseNotFoundError, f"phase {phase_num} has no checkpoint")

    def checkpoints(self) -> dict[int, PhaseCheckpoint]:
        """Every saved checkpoint of the session, by phase number."""
        return self.store.checkpoints(self.open())

    def agent_output(self, phase_num: int, agent_name: str) -> AgentOutput:
        """One agent's output record, content included."""
        check_agent_name(agent_name)
        path = self.open().read_phase_dir(phase_num) / f"{agent_name}.md"
        return self.store.load(AGENT_OUTPUT, path, NotFoundError, f"agent {agent_name!r} has no output")

    def feedback(self, phase_num: int) -> UserFeedback | None:
        """The phase's review, or None when nobody has written any yet."""
        directory = self.open().read_phase_dir(phase_num)
        found = self.store.load_optional(FEEDBACK, directory / FEEDBACK_FILE)
        if found is None or not found.reviewed:
            return found
        checkpoint = self.store.load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        completed = checkpoint.completed if checkpoint is not None else None
        from haytham.store.review_time import hand_review_time  # a hand review's only

        return hand_review_time(found, directory / FEEDBACK_FILE, completed)  # a hand review's time

    def shown(self, phase_num: int) -> Shown:
        """What a reviewer of the phase is shown now: its attempt, the digest of its agent
        outputs and the version of its review file (``store.shown``). A page or a command reads
        it before it shows the outputs and passes it back with the decision
        (``save_user_feedback(expected_version=...)``), which is refused if any of them changed."""
        directory = self.open().read_phase_dir(phase_num)
        checkpoint = self.store.load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        from haytham.store.shown import shown_now  # a review's only (see the imports)

        return shown_now(directory, checkpoint, self.store.digests, self.store.cache)

    def state(self) -> lifecycle.SessionView:
        """Where the session stands: ``lifecycle.derive`` over its checkpoints and review files.

        The one function every view reads (the manifest, ``load_session``, ``list``,
        ``status``, the runner's next step). No agent output is opened; nothing is written.
        """
        return self.store.view(self.open())

    def running(self) -> LeaseHolder | None:
        """Who is running the session now (a runner holds its run lease), or None: read only,
        the lease is never taken or written (``store.lease.holder``)."""
        return _lease.holder(self.directory)

    def load_session(self) -> dict[str, Any]:
        """The session's state as a dict, with what a resume needs (``CheckpointManager``)."""
        session = self.open()
        checkpoints = self.store.checkpoints(session)
        view = self.store.view(session, checkpoints)
        manifest = self.store.derived_manifest(session, checkpoints, view)
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
            "phases": [_flat_dict(r) for r in manifest.phases],
            "metrics": _flat_dict(manifest.metrics),
            "session_dir": str(session.directory),
        }

    def phase_outputs(self, phase_nums: Iterable[int] | None = None) -> dict[int, dict[str, str]]:
        """``{phase: {agent: content}}``, each content exactly as it was saved (``None``: the
        completed phases); a phase whose folder was never made is left out, as the first
        implementation did."""
        store, session = self.store, self.open()
        checkpoints: dict[int, PhaseCheckpoint] | None = None
        if phase_nums is None:
            checkpoints = store.checkpoints(session)
            numbers = [n for n, c in checkpoints.items() if c.status == "completed"]
        else:
            numbers = [session.read_phase(n).number for n in phase_nums]
        outputs: dict[int, dict[str, str]] = {}
        phase_dirs = PhaseDirs(store.base_dir, session.directory, session_checked=True)  # by open
        for number in numbers:
            directory, is_dir = phase_dirs.get(session.read_phase(number).directory)
            if not is_dir:
                if not os.path.lexists(directory):  # never made: nothing to give
                    continue
                raise PhaseNotFoundError(
                    f"phase {number} of {self.project_id}/{self.session_id}: {directory} is not a directory",
                    path=directory,
                )
            if checkpoints is not None:  # read a moment ago from this very file
                listed = checkpoints.get(number)
            else:
                listed = CHECKPOINT.load_optional(directory / CHECKPOINT_FILE, cache=store.cache)
            order = [run.agent_name for run in listed.agents] if listed else []
            outputs[number] = {
                path.stem: AGENT_OUTPUT.load(path, cache=store.cache).content
                for path in agent_files(directory, order)
            }
        return outputs

    def approved_phases(self) -> list[int]:
        """Phases the lifecycle calls approved, and a phase outside the mode whose folder holds
        an approving review, as the first implementation counted it."""
        session = self.open()
        approved = [v.number for v in self.store.view(session).phases if v.state == "approved"]
        for phase in session.workflow.phases:
            if phase in session.phases or not (session.directory / phase.directory).is_dir():
                continue
            found = self.store.load_optional(FEEDBACK, session.directory / phase.directory / FEEDBACK_FILE)
            if found is not None and found.reviewed and found.approved:
                approved.append(phase.number)
        return sorted(approved)

    def attempts(
        self,
        phase_num: int,
        read_output: OutputReader | None = None,
        *,
        problems: list[Issue] | None = None,
    ) -> list[Attempt]:
        """Every attempt of a phase, oldest first; the last is the one in the phase directory.
        Each output's content is what ``read_output`` reads of its file (all of it by default).
        ``problems``: collects the mistakes of review files that do not read, whose attempts
        then have no feedback, instead of raising (``attempts.load_all``)."""
        from haytham.store import attempts as _attempts  # imported when used (see the imports)

        directory = self.phase_dir(phase_num)
        current = self.store.load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        return _attempts.load_all(directory, current, read_output or _attempts.whole_output, problems)

    def review(self, phase_num: int, problems: list[Issue]) -> UserFeedback | None:
        """The phase's review as ``feedback`` gives it, or None when there is none or it does
        not read; then its mistakes (file, line, field, message) are added to ``problems``
        (``attempts.read_review``): what a view that shows everything that reads needs."""
        directory = self.open().read_phase_dir(phase_num)
        checkpoint = self.store.load_optional(CHECKPOINT, directory / CHECKPOINT_FILE)
        completed = checkpoint.completed if checkpoint is not None else None
        from haytham.store import attempts as _attempts  # imported when used (see the imports)

        return _attempts.read_review(directory / FEEDBACK_FILE, completed, problems)

    def history(
        self,
        *,
        phase: int | None = None,
        status: str | None = None,
        name: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[HistoryEntry]:
        """The session's history entries, oldest first, matching every criterion given."""
        # the checks of a caller's arguments, imported where a filter is given (see the imports)
        from haytham.store.arguments import check_choice, check_timestamp

        session = self.open()
        if phase is not None:
            session.phase(phase)
        if status is not None:
            check_choice("status", status, PHASE_STATUSES)
        since = check_timestamp("since", since)
        until = check_timestamp("until", until)
        from haytham.store import history  # imported when used (see the imports)

        entries, _ = history.read_entries(session.directory, cache=self.store.cache)
        return history.select(entries, phase=phase, status=status, name=name, since=since, until=until)

    def history_entry(self, entry_id: str) -> HistoryEntry:
        """One entry by id (a unique prefix is enough)."""
        entries = self.history()
        found = [e for e in entries if e.entry_id.startswith(entry_id)] if entry_id else []
        if len(found) != 1:
            what = "no" if not found else "more than one"
            raise NotFoundError(
                f"{what} history entry of {self.project_id}/{self.session_id} matches {entry_id!r}"
            )
        return found[0]

    def entry_state(self, entry: HistoryEntry) -> tuple[PhaseCheckpoint, dict[str, str]]:
        """What an entry recorded: its checkpoint, and the outputs of that attempt."""
        checkpoint = CHECKPOINT.parse(entry.checkpoint_text)
        attempts = self.attempts(entry.phase_number)
        outputs = next((a.outputs for a in attempts if a.number == entry.attempt), {})
        return checkpoint, outputs

    # ----------------------------------------------------------- creating

    def create(
        self,
        user_id: str,
        workflow_type: str | Workflow = "idea_validation",
        execution_mode: str = "mvp",
        *,
        exist_ok: bool = False,
    ) -> Path:
        """``CheckpointManager.create_session``: the manifest and the phase folders of the mode.

        An existing session is never reset: SessionExistsError, or with ``exist_ok=True`` it is
        returned unchanged (if it has the same user, workflow and mode)."""
        store, project_id, session_id = self.store, self.project_id, self.session_id
        check_new_or_existing("project_id", project_id, store.base_dir)  # new ids: the strict rule
        check_new_or_existing("session_id", session_id, store.project_dir(project_id) / SESSIONS_DIR)
        directory = self.directory
        check_user_id(user_id)
        workflow = store.workflow(workflow_type)
        phases = workflow.phases_for(execution_mode)
        now = store.now()
        check_no_case_twin(store.base_dir, project_id, "project_id")
        check_no_case_twin(directory.parent, session_id, "session_id")
        check_inside(store.base_dir, directory)
        _storage.make_dirs(directory)
        _storage.ensure_gitignore(store.base_dir)
        with store.locked(directory, project_id, session_id):
            manifest_path = directory / MANIFEST_FILE
            if manifest_path.exists():
                existing = MANIFEST.load(manifest_path, cache=store.cache)
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
            store.write(MANIFEST, manifest_path, manifest)
        return directory

    def fork(
        self,
        new_session_id: str,
        from_phase: int | None = None,
        *,
        from_entry: str | None = None,
        user_id: str | None = None,
    ) -> Path:
        """``CheckpointManager.fork_session``: a new session sharing the phases before
        ``from_phase`` (or those of history entry ``from_entry``); the source is left exactly
        as it is, and the new session is written whole or not at all."""
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
            self.recover()  # an entry an interrupted save committed counts
            entry = self.history_entry(from_entry)
            from_phase = entry.phase_number
        from haytham.store import history
        from haytham.store.copy import read_session_files, write_session_dir  # imported when used: it

        # brings the doctor, which a read of one session (haytham status) never needs
        from haytham.store.fork import files_at_entry, fork_files

        store, project_id, session_id = self.store, self.project_id, self.session_id
        target = check_inside(store.base_dir, store.session_dir(project_id, new_session_id))
        check_no_case_twin(target.parent, new_session_id, "session_id")
        session = self.open()
        session.phase(from_phase)  # UnknownPhaseError for a phase the mode does not run
        if target.exists():
            raise SessionExistsError(
                f"session {project_id}/{new_session_id} already exists at {target}; it was left "
                "untouched (fork into a new session id)",
                path=target,
            )
        with self.transact() as tx:
            session = tx.session
            start = session.phase(from_phase)
            copied = {p.directory for p in session.phases[: session.phases.index(start)]}
            source, _ = read_session_files(session.directory, only={*copied, WORKFLOW_FILE})
            reason = None
            if entry is not None:
                entries, _ = history.read_entries(session.directory, cache=store.cache)
                before = session.phases[: session.phases.index(start)]
                source = files_at_entry(source, session.directory, entries, entry, before, tx.checkpoints())
                reason = f"forked from {session_id} at entry {entry.entry_id}"
        files, kept = fork_files(
            source,
            session.directory,
            session.manifest,
            session.phases,
            start,
            new_session_id=new_session_id,
            user_id=user_id,
            now=store.now(),
            target=target,
            reason=reason,
        )
        write_session_dir(
            target,
            files,
            [phase.directory for phase in session.phases],
            lock_timeout=store.lock_timeout,
            what=f"session {project_id}/{new_session_id}",
        )
        data: dict[str, object] = {
            "source": session_id,
            "from_phase": start.number,
            "copied_phases": [p.number for p in kept],
        }
        if entry is not None:
            data["from_entry"] = entry.entry_id
        store.events.emit([Event("session_forked", project_id, new_session_id, start.number, target, data)])
        return target

    # ------------------------------------------------------------ writing

    def transact(self) -> AbstractContextManager[Transaction]:
        """The one write path: hold the lock, recover, read once (``store.transaction``)."""
        from haytham.store.transaction import transaction  # a write's (see the imports)

        return transaction(self.store, self.project_id, self.session_id)

    def recover(self) -> bool:
        """Finish a change of the session that a killed writer committed and left half applied
        (its journal record), under the session's lock; return whether there was one. For code
        that decides from the session's state before it writes: the decision is then made on
        the whole change. A session with no record is not locked and nothing is written."""
        from haytham.store import journal  # a writer's (see the imports)

        directory = self.store.session_home(self.project_id, self.session_id)
        if journal.pending(directory) is None:
            return False
        with self.store.locked(directory, self.project_id, self.session_id):  # rolls it forward
            return True

    def lock(self) -> AbstractContextManager[object]:
        """Hold the session's lock (after recovering an interrupted change) while the block
        runs, for code that changes the session's files beside the handle's own writes."""
        return self.store.locked(self.directory, self.project_id, self.session_id)

    def save_checkpoint(
        self,
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
        held: Sequence[str] | None = None,
    ) -> Path:
        """``CheckpointManager.save_checkpoint``: the phase's checkpoint, its history entry and
        the manifest, in one change."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import checkpoint_args

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
            held,
        )
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            path, events = saving.save_checkpoint(tx, phase_num, checked, name, reason)
        self.store.events.emit(events)
        return path

    def save_agent_output(self, phase_num: int, fields: Mapping[str, Any]) -> Path:
        """``CheckpointManager.save_agent_output``: ``{agent_name}.md`` with the output exactly
        as given (``fields``: ``arguments.output_fields``)."""
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            path, events = saving.save_agent_output(tx, phase_num, fields)
        self.store.events.emit(events)
        return path

    def save_user_feedback(
        self, phase_num: int, fields: Mapping[str, Any], *, expected_version: str | Shown | None = None
    ) -> Path:
        """``CheckpointManager.save_user_feedback``: the review file, its history entry and the
        manifest, in one change (``fields``: ``arguments.feedback_fields``)."""
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            path, events = saving.save_user_feedback(tx, phase_num, fields, expected_version)
        self.store.events.emit(events)
        return path

    def save_feedback_text(
        self,
        phase_num: int,
        text: str,
        *,
        expected: str | None = None,
        reviewer: Reviewer | str | None = None,
    ) -> UserFeedback:
        """``CheckpointManager.save_feedback_text``: a person's own text as the review file."""
        who = None if reviewer is None else str(parse_reviewer(str(reviewer)))
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}", field="text")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidArgumentError(
                f"text holds {error.object[error.start : error.end]!r}, which UTF-8 cannot store "
                "(a lone surrogate)",
                field="text",
            ) from None
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            record, events = saving.save_feedback_text(tx, phase_num, text, expected, who)
        self.store.events.emit(events)
        return record

    def save_phase(
        self,
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
        """``CheckpointManager.save_phase``: a phase's outputs, checkpoint and review in one change."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import agent_row, checkpoint_args, feedback_fields, output_fields

        checked_outputs: dict[str, dict[str, Any]] = {}
        try:
            for agent, value in (outputs or {}).items():
                if isinstance(value, str):
                    checked_outputs[agent] = output_fields(agent, value)
                elif isinstance(value, Mapping):
                    checked_outputs[agent] = output_fields(agent, **value)
                else:
                    raise InvalidArgumentError(
                        f"outputs[{agent!r}] must be the content or a dict of save_agent_output's "
                        f"arguments, got {type(value).__name__}",
                        field="outputs",
                    )
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
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            path, events = saving.save_phase(tx, phase_num, checked_outputs, checked, review, name, reason)
        self.store.events.emit(events)
        return path

    def correct_output(
        self,
        phase_num: int,
        agent_name: str,
        content: str,
        *,
        approve: bool = False,
        expected_version: str | Shown | None = None,
        reviewer: Reviewer | str | None = None,
    ) -> Path | None:
        """``CheckpointManager.correct_output``: a reviewer's correction of one agent's output,
        the original kept in the history, the review's action ``modified``, in one change;
        None when ``content`` is the output already (nothing is written)."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import check_flag, feedback_fields

        check_agent_name(agent_name)
        if not isinstance(content, str):
            raise InvalidArgumentError(
                f"content must be a string, got {type(content).__name__}", field="content"
            )
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidArgumentError(
                f"content holds {error.object[error.start : error.end]!r}, which UTF-8 cannot store "
                "(a lone surrogate)",
                field="content",
            ) from None
        check_flag("approve", approve)
        who = feedback_fields(True, True, reviewer=reviewer)["reviewer"]  # checked as a review's
        self.open().phase(phase_num)
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            saved = saving.correct_output(tx, phase_num, agent_name, content, approve, expected_version, who)
        if saved is None:
            return None
        self.store.events.emit(saved[1])
        return saved[0]

    def corrections(self, phase_num: int) -> list[Correction]:
        """The corrections of the phase's current attempt, one per agent a reviewer corrected:
        the agent's own output (kept by the first correction's history entry) and the output
        now, with their diff. Read only; empty when nobody corrected the attempt."""
        session = self.open()
        phase = session.phase(phase_num)
        checkpoint = self.store.load_optional(CHECKPOINT, session.read_phase_dir(phase_num) / CHECKPOINT_FILE)
        if checkpoint is None:
            return []
        attempt = checkpoint.retry_count + 1
        from haytham.store import history  # imported when used (see the imports)

        entries, _ = history.read_entries(session.directory, cache=self.store.cache)
        first: dict[str, HistoryEntry] = {}
        for entry in entries:
            if entry.phase_number != phase.number or entry.attempt != attempt:
                continue
            if entry.corrected_agent is not None and entry.original_output is not None:
                first.setdefault(entry.corrected_agent, entry)
        found = []
        for agent, entry in sorted(first.items()):
            assert entry.original_output is not None
            original = AGENT_OUTPUT.parse(entry.original_output).content
            try:
                now = self.agent_output(phase_num, agent).content
            except NotFoundError:
                continue
            found.append(Correction(agent, entry.entry_id, entry.timestamp, original, now))
        return found

    def keep_edited_outputs(self, phase_num: int) -> bool:
        """``CheckpointManager.keep_edited_outputs``: a person's correction of a phase's outputs
        becomes its output of record; returns whether anything was written."""
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            return saving.keep_edited_outputs(tx, phase_num)

    def update_feedback(
        self,
        phase_num: int,
        *,
        reviewed: bool | None = None,
        approved: bool | None = None,
        action: str | None = None,
        retry_count: int | None = None,
        raised_budget: str | None = None,
    ) -> UserFeedback:
        """``CheckpointManager.update_feedback``: only the given fields of the review change."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import check_budget, check_choice, check_count, check_flag

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
        if raised_budget is not None:
            updates["raised_budget"] = check_budget("raised_budget", raised_budget)
        self.open().phase(phase_num)
        from haytham.store import saving  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            return saving.update_feedback(tx, phase_num, updates)

    def change_workflow(self, workflow: Workflow) -> None:
        """Move the session to a new definition of its workflow (an explicit, recorded choice):
        its Workflow Type and Fingerprint change and its phase table is recomputed."""
        workflow.phases_for(self.open().manifest.execution_mode)
        with self.transact() as tx:
            session = tx.session
            manifest = dataclasses.replace(
                session.manifest, workflow_type=workflow.name, workflow_fingerprint=workflow.fingerprint()
            )
            moved = Session(
                session.base_dir,
                session.directory,
                manifest,
                workflow,
                workflow.phases_for(manifest.execution_mode),
            )
            derived = self.store.derived_manifest(moved, self.store.checkpoints(moved, tx.reads))
            if derived is not moved.manifest:
                derived = dataclasses.replace(derived, last_updated=self.store.now())
            with tx.change("change_workflow") as change:
                own_copy = session.directory / WORKFLOW_FILE
                if BUILTIN_WORKFLOWS.get(workflow.name) != workflow:
                    change.write(own_copy, dump_workflow(workflow))
                else:
                    change.remove(own_copy)
                path = session.directory / MANIFEST_FILE
                change.write(path, self.store.render(MANIFEST, path, derived))

    def start_attempt(self, phase_num: int) -> int:
        """Keep the phase's current attempt in ``attempts/{n}/`` and open attempt ``n + 1``."""
        self.open().phase(phase_num)
        from haytham.store import reruns  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            return reruns.start_attempt(tx, phase_num)

    def archive_from(self, from_phase: int) -> list[int]:
        """Keep ``from_phase`` and every later phase with a checkpoint as attempts."""
        self.open().phase(from_phase)
        from haytham.store import reruns  # the write path, imported by a write (see the imports)

        with self.transact() as tx:
            return reruns.archive_from(tx, from_phase)

    def repair(self) -> None:
        """Finish an interrupted change, rebuild the manifest's progress from the files and
        remove what killed writers left (``CheckpointManager.repair``)."""
        from haytham.store import history
        from haytham.store.doctor import remove_traces, written_folders  # imported when used: the
        # doctor is for repairs, and a read of one session (haytham status) never needs it

        with self.transact() as tx:
            for folder in written_folders(tx.session.directory):
                remove_traces(folder)
            entries, _ = history.read_entries(tx.session.directory, cache=self.store.cache)
            newest = history.newest(entries, tx.session.manifest.history_head)
            head = newest.entry_id if newest is not None else None
            tx.sync_manifest(head=head if head != tx.session.manifest.history_head else None)


@frozen
class Correction:
    """A reviewer's correction of an agent's output in a phase's current attempt."""

    agent: str
    entry_id: str
    """The history entry of the first correction, which keeps the agent's own output."""
    timestamp: str
    """When the output was first corrected."""
    original: str
    """The agent's own output (the content, not the file)."""
    corrected: str
    """The output now."""


def _flat_dict(record: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` of a record whose fields are all plain values, without its
    recursive deep copy."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
