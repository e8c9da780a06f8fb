"""``CheckpointManager``: the product document's facade over the store.

Its methods keep the product document's signatures (``save_checkpoint(project_id,
session_id, phase_num, ...)``) and each is one call on the session's handle
(``manager.session(project_id, session_id)``, a ``SessionHandle``), whose writes all go
through one ``Transaction``: lock, recovery of an interrupted change, one read of the files,
stage, commit, the manifest refreshed with them. What the manager shares with every handle
(the base directory, the clock, the workflows, the read cache, the events) is its
``Store``. Whole-tree operations (listing, validating any path) and the doctor are here too.

``CheckpointManager(base_dir)`` is the one way to get a manager (``haytham.config`` and
``ProjectManager`` make theirs the same way). Comparing (``haytham.compare.compare``),
export and import (``haytham.transfer``) and cleanup (``haytham.retention.cleanup``) are
functions of the feature modules, built on its public API.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from haytham.errors import HaythamError, Issue
from haytham.format.layout import MANIFEST_FILE
from haytham.format.reviewer import Reviewer
from haytham.format.workflow import Workflow
from haytham.records import (
    AgentOutput,
    AgentTry,
    Attempt,
    HistoryEntry,
    LeaseHolder,
    PhaseCheckpoint,
    SessionManifest,
    UserFeedback,
)
from haytham.store import lifecycle
from haytham.store.handle import SessionHandle
from haytham.store.names import check_path_name
from haytham.store.store import Store


class Validation(NamedTuple):
    """What ``CheckpointManager.validate_tree`` found and looked at."""

    issues: list[Issue]
    """The problems, sorted by file and line (``validate_paths``)."""
    files: int
    """The session files under the paths (``session_files.count_session_files``)."""
    sessions: int
    """The session folders under the paths (``session_files.sessions_under``)."""


if TYPE_CHECKING:  # the doctor, the listing, validation and orphans are imported by the methods that
    # use them, so that a command that reads one session (status, the merge driver) never pays for them
    from haytham.store.doctor import Finding
    from haytham.store.scan import SessionListing, SessionSummary
    from haytham.store.shown import Shown


class CheckpointManager(Store):
    """Keeps the sessions of phased workflows as markdown files under ``base_dir``."""

    def session(self, project_id: str, session_id: str) -> SessionHandle:
        """The handle of one session: its reads and writes without repeating its ids."""
        return SessionHandle(self, project_id, session_id)

    def phase_dir(self, project_id: str, session_id: str, phase_num: int) -> Path:
        """The directory of one phase of an existing session."""
        return self.session(project_id, session_id).phase_dir(phase_num)

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
        return self.session(project_id, session_id).create(
            user_id, workflow_type, execution_mode, exist_ok=exist_ok
        )

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
        held: Sequence[str] | None = None,
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
        changes no byte. ``name`` and ``reason`` label the history entry. ``held``: why the
        runner holds the phase for a person's decision (its ``## Held``; the phase then awaits
        review until a review decides).
        """
        return self.session(project_id, session_id).save_checkpoint(
            phase_num,
            status,
            agents,
            started,
            completed,
            duration,
            retry_count,
            execution_mode,
            errors,
            name=name,
            reason=reason,
            built_from=built_from,
            held=held,
        )

    def keep_edited_outputs(self, project_id: str, session_id: str, phase_num: int) -> bool:
        """Record in a phase's checkpoint the digest of the outputs its files hold now, when a
        person changed them since it completed (``lifecycle.EDITED``): the correction becomes
        the phase's output of record, with a history entry (``lifecycle.EDIT_KEPT``); nothing
        else of the checkpoint changes. The phases built on the old outputs stay stale.
        Returns whether anything was written (not for a phase whose outputs match, or whose
        checkpoint records no digest)."""
        return self.session(project_id, session_id).keep_edited_outputs(phase_num)

    def correct_output(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        agent_name: str,
        content: str,
        *,
        approve: bool = False,
        expected_version: str | Shown | None = None,
        reviewer: Reviewer | str | None = None,
    ) -> Path | None:
        """A reviewer's correction of an agent's output, before (or with) approving the phase.

        In one change: the output file holds ``content`` and says ``- Corrected:`` (its model,
        tokens and cost stay the agent's run); the checkpoint records the outputs' new
        digest, with a history entry that keeps the original file whole
        (``HistoryEntry.original_output``); the review's action becomes ``modified`` (with
        ``approve``, the phase is approved: ``Approved: true``, ``Action: modified``); the
        phases built on the original become stale. Only a phase that is awaiting review,
        completed or approved can be corrected (MoveRefusedError otherwise);
        ``expected_version``: what the correction was made against, as for
        ``save_user_feedback`` (a ``Shown``, or the review file's version), StaleReviewError
        naming what changed since. ``reviewer``: who corrected, recorded in the review as
        ``save_user_feedback`` records it (else the review's own Reviewer stays). Returns the output
        file, or None when ``content`` is the output already (nothing is written)."""
        return self.session(project_id, session_id).correct_output(
            phase_num,
            agent_name,
            content,
            approve=approve,
            expected_version=expected_version,
            reviewer=reviewer,
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
        *,
        tries: Sequence[AgentTry] = (),
        trace_id: str | None = None,
    ) -> Path:
        """Write ``{agent_name}.md`` with the output exactly as given; ``tries``: every try
        of the run that made it (``## Tries``, written only when there are some);
        ``trace_id``: the agent's own trace id, kept as its ``Trace ID``."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import output_fields

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
            tries,
            trace_id,
        )
        return self.session(project_id, session_id).save_agent_output(phase_num, fields)

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
        expected_version: str | Shown | None = None,
        reviewer: Reviewer | str | None = None,
        justification: str | None = None,
        raised_budget: str | None = None,
    ) -> Path:
        """Write the phase's user_feedback.md (the file people also edit by hand).

        ``reviewer`` (who decided: a ``Reviewer`` or ``Name <email>``) and ``justification``
        (why, one line) are recorded in the Review Status section when given, and so is
        ``raised_budget`` (``400000 tokens, $10.00``), with an approval of a phase held for
        its budget: what the run may spend from then on.

        ``action`` records what is done about the review; by default the one it implies:
        ``pending`` before a review, ``approved`` for an approval, ``retry`` for a review that
        does not approve. ``approved`` is the reviewer's decision: a review that does not
        approve with ``action="approved"`` is refused (InvalidArgumentError).

        With ``expected_version`` (``fs.file_version`` of the file the review was written
        against, ``fs.NO_FILE`` for none) the file must still be that version, checked under
        the session's lock: otherwise StaleReviewError, and nothing is written. With a
        ``Shown`` (``session(p, s).shown(phase)``, read before the outputs were shown to the
        reviewer) the phase's attempt and the digest of its agent outputs must be unchanged
        too: a decision applies only to what was shown (StaleReviewError naming what
        changed). A review
        (``reviewed=True``) is a lifecycle move the phase as it stands must allow a reviewer
        (``lifecycle.check_move``): otherwise MoveRefusedError, and nothing is written. The
        blank template (``reviewed=False``) decides nothing and is no move."""
        # the checks of a write's arguments, imported by the write (see the imports)
        from haytham.store.arguments import feedback_fields

        fields = feedback_fields(
            reviewed,
            approved,
            comments,
            requested_changes,
            action,
            retry_count,
            reviewer=reviewer,
            justification=justification,
            raised_budget=raised_budget,
        )
        return self.session(project_id, session_id).save_user_feedback(
            phase_num, fields, expected_version=expected_version
        )

    def save_feedback_text(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        text: str,
        *,
        expected: str | None = None,
        reviewer: Reviewer | str | None = None,
    ) -> UserFeedback:
        """Write a person's own text as the phase's user_feedback.md, byte for byte, and
        return what haytham understood from it (the editor loop of ``haytham feedback`` and
        ``haytham review``).

        A text that reviews (``Reviewed: true``) is the review made now: haytham records the
        time in its Timestamp, and ``reviewer`` in its Reviewer, unless the person changed
        that field themselves; every other byte is the person's.

        It is saved as every review is: under the session's lock, with its review history
        entry and the manifest brought up to date, as one journaled operation. Nothing is
        written when ``text`` does not read (DocumentError: its first error, at its line
        and field), when the review is a move the lifecycle does not allow a reviewer
        (MoveRefusedError), or when ``expected`` (``fs.file_version`` of the file when the
        person began, ``fs.NO_FILE`` for none) is given and the file is no longer that
        version (StaleReviewError: someone else wrote it meanwhile, theirs stays). The same
        text as the file's writes nothing.
        """
        return self.session(project_id, session_id).save_feedback_text(
            phase_num, text, expected=expected, reviewer=reviewer
        )

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
        return self.session(project_id, session_id).save_phase(
            phase_num,
            outputs,
            status,
            feedback,
            agents=agents,
            started=started,
            completed=completed,
            duration=duration,
            retry_count=retry_count,
            execution_mode=execution_mode,
            errors=errors,
            name=name,
            reason=reason,
            built_from=built_from,
        )

    def session_workflow(self, project_id: str, session_id: str) -> Workflow:
        """The workflow a session runs: its own saved copy, else the registered one by name."""
        return self.session(project_id, session_id).workflow()

    def change_workflow(self, project_id: str, session_id: str, workflow: Workflow) -> None:
        """Move a session to a new definition of its workflow (an explicit, recorded choice).

        The manifest's Workflow Type and Fingerprint are updated and its phase table is
        recomputed for the new phases; saved phase files are kept.
        """
        self.session(project_id, session_id).change_workflow(workflow)

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
        return self.session(project_id, session_id).start_attempt(phase_num)

    def archive_from(self, project_id: str, session_id: str, from_phase: int) -> list[int]:
        """Keep phase ``from_phase`` and every later phase of the mode that has a checkpoint as
        attempts (``start_attempt``), so that the next run runs them again; return those phases.

        All of them are archived in one operation: a crash leaves every one or none.
        ``PhaseRunner.rerun`` and ``haytham rerun`` call it before running the session.
        """
        return self.session(project_id, session_id).archive_from(from_phase)

    def load_attempts(
        self,
        project_id: str,
        session_id: str,
        phase_num: int,
        read_output: Callable[[Path], str | None] | None = None,
    ) -> list[Attempt]:
        """Every attempt of a phase, oldest first; the last is the one in the phase directory.

        Each agent output's content is what ``read_output(path)`` returns for its file (None:
        the file is gone), by default the whole of it; a page passes one that reads only the
        start of a large output. A file removed by a writer since it was listed is left out,
        never an error (``haytham.store.attempts``)."""
        return self.session(project_id, session_id).attempts(phase_num, read_output)

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
        raised_budget: str | None = None,
    ) -> UserFeedback:
        """Change only the given fields of a (possibly hand-edited) user_feedback.md
        (``raised_budget``: as ``save_user_feedback`` records it).

        Every other byte a person wrote (comments, changes, extra sections, their spelling of
        labels and line endings) is kept. A file that does not parse is left alone and its
        error raised; so is a review the lifecycle does not allow (MoveRefusedError, as for
        ``save_user_feedback``).
        """
        return self.session(project_id, session_id).update_feedback(
            phase_num,
            reviewed=reviewed,
            approved=approved,
            action=action,
            retry_count=retry_count,
            raised_budget=raised_budget,
        )

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
        return self.session(project_id, session_id).history(
            phase=phase, status=status, name=name, since=since, until=until
        )

    def history_entry(self, project_id: str, session_id: str, entry_id: str) -> HistoryEntry:
        """One entry by id (a unique prefix is enough); the latest with ``name=`` otherwise."""
        return self.session(project_id, session_id).history_entry(entry_id)

    def entry_state(
        self, project_id: str, session_id: str, entry: HistoryEntry
    ) -> tuple[PhaseCheckpoint, dict[str, str]]:
        """What an entry recorded: its checkpoint, and the outputs of that attempt."""
        return self.session(project_id, session_id).entry_state(entry)

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
        return self.session(project_id, session_id).fork(
            new_session_id, from_phase, from_entry=from_entry, user_id=user_id
        )

    def load_manifest(self, project_id: str, session_id: str) -> SessionManifest:
        """The manifest as written on disk (see ``load_session`` for the checked state)."""
        return self.session(project_id, session_id).manifest()

    def load_checkpoint(self, project_id: str, session_id: str, phase_num: int) -> PhaseCheckpoint:
        """The phase's checkpoint; PhaseNotFoundError if the phase was never saved."""
        return self.session(project_id, session_id).checkpoint(phase_num)

    def load_agent_output(
        self, project_id: str, session_id: str, phase_num: int, agent_name: str
    ) -> AgentOutput:
        """One agent's output record, content included."""
        return self.session(project_id, session_id).agent_output(phase_num, agent_name)

    def load_feedback(self, project_id: str, session_id: str, phase_num: int) -> UserFeedback | None:
        """The phase's feedback, or None when nobody has written any yet."""
        return self.session(project_id, session_id).feedback(phase_num)

    def load_checkpoints(self, project_id: str, session_id: str) -> dict[int, PhaseCheckpoint]:
        """Every saved checkpoint of the session, by phase number."""
        return self.session(project_id, session_id).checkpoints()

    def load_session(self, project_id: str, session_id: str) -> dict[str, Any]:
        """The session's state as a dict, with what a resume needs.

        The progress comes from the phase checkpoints, derived in memory through the
        lifecycle. A manifest that disagrees (a process died between writing a checkpoint and
        the manifest, a hand-written review, a merge, a legacy session) is left as it is on
        disk: reads never write. The next save or ``repair`` (``haytham doctor --fix``)
        brings it up to date.
        """
        return self.session(project_id, session_id).load_session()

    def get_phase_outputs(
        self, project_id: str, session_id: str, phase_nums: Iterable[int] | None = None
    ) -> dict[int, dict[str, str]]:
        """``{phase: {agent: content}}``, each content exactly as it was saved.

        ``phase_nums=None`` means the completed phases. A phase of ``phase_nums`` whose folder
        was never made (not reached yet, or a session started by ``ProjectManager``) is left
        out, as the first implementation did (the product document asks for ``[1, 2]`` of any
        session); a number that is no phase of the workflow is an UnknownPhaseError.
        """
        return self.session(project_id, session_id).phase_outputs(phase_nums)

    def state(self, project_id: str, session_id: str) -> lifecycle.SessionView:
        """Where the session stands: ``lifecycle.derive`` over its checkpoints and review files.

        The one function every view reads (the manifest, ``load_session``, ``list``,
        ``status``, the runner's next step). No agent output is opened; nothing is written.
        """
        return self.session(project_id, session_id).state()

    def running(self, project_id: str, session_id: str) -> LeaseHolder | None:
        """Who is running the session now (a runner holds its run lease), or None.

        ``state`` says where the session's files stand; this says whether a runner is at work
        on it, so that a view shows it ``running`` rather than interrupted. Read-only: the
        lease is never taken or written (``haytham.store.lease.holder``); a lease file left by
        a runner that died is not running.
        """
        return self.session(project_id, session_id).running()

    def get_approved_phases(self, project_id: str, session_id: str) -> list[int]:
        """Phases the lifecycle calls approved (reviewed, approved, and not stale since), and a
        phase outside the mode whose folder holds an approving review, as the first
        implementation counted it."""
        return self.session(project_id, session_id).approved_phases()

    def validate_checkpoint(self, project_id: str, session_id: str, phase_num: int) -> tuple[bool, list[str]]:
        """Check the phase's checkpoint, agent outputs and feedback: ``(ok, messages)``.

        The product document's form of ``validate_paths`` for one phase (a missing
        checkpoint counts as a problem here).
        """
        from haytham.store.validation import phase_issues  # imported when used (see the imports)

        session = self.open_session(project_id, session_id)
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
            self.open_session(project_id, session_id)  # raises the NotFoundError that says what is missing
        return self.validate_paths([directory])

    def list_sessions(
        self, *, project_id: str | None = None, user_id: str | None = None, status: str | None = None
    ) -> list[SessionSummary]:
        """Every session under ``base_dir`` (optionally one project's, one user's, one status),
        most recently updated first, each in the state its files derive (as ``state``; the
        manifest supplies the ids, user, workflow, mode and times). Unreadable manifests are
        skipped; ``validate_paths`` reports them."""
        from haytham.store.scan import list_sessions  # imported when used (see the imports)

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
        from haytham.store.scan import iter_sessions  # imported when used (see the imports)

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
        return self._validate(paths, progress, count=False).issues

    def validate_tree(
        self,
        paths: Iterable[str | os.PathLike[str]] = (),
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> Validation:
        """``validate_paths`` with what it looked at: the number of session files and of
        sessions under ``paths`` (what ``haytham validate`` reports), counted on the same
        walk rather than on one more (a session whose result is not keyed in the index,
        or holds a symlink, is walked once more for its count)."""
        return self._validate(paths, progress, count=True)

    def _validate(
        self,
        paths: Iterable[str | os.PathLike[str]],
        progress: Callable[[int, int], None] | None,
        *,
        count: bool,
    ) -> Validation:
        """``validate_tree``; its ``files`` is 0 unless ``count``."""
        from haytham.store.session_files import kind_of, session_files, sessions_under

        roots = [Path(p) for p in paths] or [self.base_dir]
        sessions = sorted(sessions_under(roots))
        loose = list(session_files(roots, outside=sessions))
        total = len(sessions) + len(loose)

        def step(done: int) -> None:
            if progress is not None:
                progress(done, total)

        issues: list[Issue] = []
        files = len(loose) if count else 0
        if sessions:  # the checks of whole sessions, imported only for them: not for the files
            # of a commit that touches no session folder's manifest (the pre-commit hook's A B)
            found, counted = self._validate_sessions(sessions, step, count)
            issues += found
            files += counted
        folders = [root for root in roots if root.is_dir()]
        if folders:  # a folder that lost its manifest is an error, not nothing
            from haytham.store import orphans

            known = set(sessions)
            issues += [o.issue() for root in folders for o in orphans.under(root, known)]
        for done, path in enumerate(loose, len(sessions) + 1):
            kind = kind_of(path)
            assert kind is not None
            issues += kind.read_path(path)[1]
            step(done)
        unique = dict.fromkeys(issues)
        ordered = sorted(unique, key=lambda i: (str(i.path), i.line or 0))
        return Validation(ordered, files, len(sessions))

    def _validate_sessions(
        self, sessions: list[Path], step: Callable[[int], None], count: bool
    ) -> tuple[list[Issue], int]:
        """``validate_paths`` of whole session folders: each one's files and how they agree;
        with the number of session files in them."""
        from haytham.store.validation import session_issues, validate_sessions

        def validate(directory: Path) -> list[Issue]:
            try:
                check_path_name("project_id", directory.parent.parent.name)
                check_path_name("session_id", directory.name)
                return session_issues(directory, self.workflow_of, cache=self.cache)
            except HaythamError as error:
                return [Issue(error.path or directory / MANIFEST_FILE, error.line, error.field, str(error))]

        # A session's result is remembered in the base directory's index while its files
        # stay unchanged (haytham/store/index.py); the definitions it was checked against count.
        definitions = sorted((name, w.fingerprint()) for name, w in self.workflows.items())
        return validate_sessions(sessions, validate, repr(definitions), progress=step, count=count)

    def check(self, project_id: str, session_id: str, fix: bool = False) -> list[Finding]:
        """Compare the manifest with the files on disk; with ``fix`` repair what is safe.

        Safe repairs: rebuild the manifest from the phase files, remove temporary files
        left by killed writers. A person's content is never deleted.
        """
        from haytham.store.doctor import check_session  # imported when used (see the imports)

        return check_session(self, project_id, session_id, fix)

    def repair(self, project_id: str, session_id: str) -> None:
        """Finish an operation a killed writer left half done (its journal record), rebuild
        the manifest's progress from the phase checkpoints and remove the temporary files and
        staging folders that killed writers left, under the session's lock.

        Safe at any time: what it writes is derived from the files, and a person's content
        is never touched. ``check(fix=True)`` calls it. Reads never repair: ``load_session``
        derives the same progress in memory and leaves the file as it is.
        """
        self.session(project_id, session_id).repair()

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
        return self.session(project_id, session_id).recover()

    def lock(self, project_id: str, session_id: str) -> AbstractContextManager[object]:
        """Hold the session's OS lock, the one every save takes, for as long as the block runs.

        For code that changes a session's files beside the manager's own methods (retention
        removing a session or an attempt), so that no save runs at the same time. The lock
        is released by the kernel if the process dies; it is not reentrant, so do not call
        a saving method of the manager inside the block. LockTimeout after ``lock_timeout``.
        """
        return self.session(project_id, session_id).lock()


__all__ = ["CheckpointManager"]
