"""``HaythamFlowPersistence``: CrewAI's ``FlowPersistence`` that keeps each flow run as a session.

A run (its ``flow_uuid``, the state's ``id``) is the session ``{project}/{flow_uuid}``; each
persisted method is a phase and each save writes the state after it (``files``). A pending
``@human_feedback`` is the method's phase awaiting review: ``haytham list --awaiting-review``
shows it, ``haytham feedback`` or the review page answers it, and ``review.resume_from_review``
resumes the flow with that answer.

Writes go through the store (atomic, journaled, under the session's lock); a flow's own
pointers (``crewai/flow.json``) are replaced whole after the phase, under the flow's lock,
so two processes saving the same run take turns and a kill mid-save leaves the last
complete state. Reads take no lock and never write.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crewai.flow.persistence.base import FlowPersistence
from pydantic import BaseModel, Field, PrivateAttr

from haytham.errors import NotFoundError, SessionExistsError
from haytham.format.guard import read_file
from haytham.format.layout import CREWAI_DIR, MANIFEST_FILE
from haytham.integrations.crewai import files, values
from haytham.store import fs
from haytham.store.handle import SessionHandle
from haytham.store.manager import CheckpointManager
from haytham.store.names import check_name, check_user_id

if TYPE_CHECKING:
    from crewai.flow.async_feedback.types import PendingFeedbackContext


class HaythamFlowPersistence(FlowPersistence):
    """A ``FlowPersistence`` whose flow runs are haytham sessions of ``project``.

    ``@persist(HaythamFlowPersistence("projects", "crewai"))`` on a ``Flow`` class or method
    keeps run ``abc`` in ``projects/crewai/sessions/abc/``. ``docs/crewai.md`` shows the files.
    """

    persistence_type: str = Field(default="HaythamFlowPersistence")
    base_dir: str = Field(default="projects")
    project: str = Field(default="crewai")
    user_id: str = Field(default="crewai")
    lock_timeout: float = Field(default=fs.DEFAULT_LOCK_TIMEOUT)
    _manager: CheckpointManager = PrivateAttr()

    def __init__(
        self, base_dir: str | os.PathLike[str] = "projects", project: str = "crewai", /, **kwargs: Any
    ) -> None:
        kwargs.update(base_dir=os.fspath(base_dir), project=project)
        super().__init__(**kwargs)

    def model_post_init(self, context: Any, /) -> None:
        check_name("project", self.project)
        check_user_id(self.user_id)
        self._manager = CheckpointManager(self.base_dir, lock_timeout=self.lock_timeout)

    @property
    def manager(self) -> CheckpointManager:
        """The manager of ``base_dir`` (every session of every run)."""
        return self._manager

    def init_db(self) -> None:
        """Nothing to set up: a run's session is made at its first save."""

    # ------------------------------------------------------------------ places

    def session_id(self, flow_uuid: str) -> str:
        """The session of a run: its ``flow_uuid`` (UnsafeNameError when it is not a safe name)."""
        return check_name("flow_uuid", flow_uuid)

    def session(self, flow_uuid: str) -> SessionHandle:
        return self._manager.session(self.project, self.session_id(flow_uuid))

    def _flow_dir(self, flow_uuid: str) -> Path:
        return self.session(flow_uuid).directory / CREWAI_DIR

    @contextlib.contextmanager
    def _locked_flow(
        self, flow_uuid: str, method_name: str, review: bool
    ) -> Iterator[tuple[SessionHandle, int]]:
        """Hold the run's lock (``crewai/.haytham.lock``), with the session made and a phase
        for ``method_name`` in its workflow; yield the session and the phase number.

        The run's lock is not the session's: the store takes that one for each change made
        inside the block, and a workflow change and a phase save must not interleave with
        another process's."""
        session = self.session(flow_uuid)
        directory = session.directory
        if not (directory / MANIFEST_FILE).exists():
            first, _ = files.with_method(files.empty_workflow(), method_name, review)
            with contextlib.suppress(SessionExistsError):
                session.create(self.user_id, first, files.MODE, exist_ok=True)
        if session.workflow().name != files.WORKFLOW_NAME:
            raise SessionExistsError(
                f"session {self.project}/{session.session_id} has workflow {session.workflow().name!r}, "
                f"not {files.WORKFLOW_NAME!r}: it is not a CrewAI flow run's, and was left untouched",
                path=directory,
            )
        flow_dir = directory / CREWAI_DIR
        fs.make_dirs(flow_dir)
        with fs.locked(flow_dir, self.lock_timeout, f"the CrewAI flow run {flow_uuid}"):
            workflow = session.workflow()
            changed, number = files.with_method(workflow, method_name, review)
            if changed != workflow:
                session.change_workflow(changed)
            yield session, number

    def _pointers(self, flow_uuid: str) -> files.FlowPointers:
        try:
            return files.FlowPointers.parse(
                read_file(self._flow_dir(flow_uuid) / files.FLOW_FILE).decode("utf-8")
            )
        except FileNotFoundError:
            return files.FlowPointers()

    def _output(self, flow_uuid: str, number: int, agent: str) -> str:
        """The newest ``agent`` output of the phase: the current attempt's, else (a writer
        killed between opening a new attempt and saving it) the last kept attempt's."""
        session = self.session(flow_uuid)
        try:
            return session.agent_output(number, agent).content
        except NotFoundError:
            for attempt in reversed(session.attempts(number)):
                if agent in attempt.outputs:
                    return attempt.outputs[agent]
            raise

    def _write_pointers(self, flow_uuid: str, pointers: files.FlowPointers) -> None:
        fs.atomic_write(self._flow_dir(flow_uuid) / files.FLOW_FILE, pointers.render())

    # ------------------------------------------------------------------ writing

    def _save(
        self,
        session: SessionHandle,
        number: int,
        method_name: str,
        state: dict[str, Any],
        request: str | None,
    ) -> None:
        """Write the phase's state (and the feedback request), as one change of the session."""
        outputs = {files.STATE_AGENT: files.render_state(method_name, state)}
        if request is not None:
            outputs[files.FEEDBACK_AGENT] = request
        phase_state = session.state().phase(number).state
        if request is None and phase_state != "pending":
            try:
                unchanged = (
                    session.agent_output(number, files.STATE_AGENT).content == outputs[files.STATE_AGENT]
                )
            except NotFoundError:
                unchanged = False
            if unchanged:
                return  # saved again as it is (a resumed method): its review stays as it was
        if phase_state not in ("pending", "in_progress"):
            session.start_attempt(number)  # the earlier save stays, as attempts/{n}/, to diff
        session.save_phase(
            number,
            outputs,
            "completed",
            {"reviewed": False, "approved": False, "action": "pending"} if request is not None else None,
            reason=f"CrewAI saved the state after {method_name}"
            + (" and waits for human feedback" if request is not None else ""),
        )

    def save_state(self, flow_uuid: str, method_name: str, state_data: dict[str, Any] | BaseModel) -> None:
        """Save the state after ``method_name``: the method's phase, then the run's pointers."""
        state = values.state_dict(state_data)
        values.encode(state)  # refuse an unstorable value before anything is written
        with self._locked_flow(flow_uuid, method_name, review=False) as (session, number):
            self._save(session, number, method_name, state, None)
            old = self._pointers(flow_uuid)
            self._write_pointers(flow_uuid, files.FlowPointers(number, old.saves + 1, old.pending))

    def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
        """The newest state of the run, or None when it has none."""
        pointers = self._pointers(flow_uuid)
        if pointers.latest is None:
            return None
        return files.parse_state(self._output(flow_uuid, pointers.latest, files.STATE_AGENT))

    def save_pending_feedback(
        self, flow_uuid: str, context: PendingFeedbackContext, state_data: dict[str, Any] | BaseModel
    ) -> None:
        """Save the state and put the method's phase up for review with CrewAI's request."""
        state = values.state_dict(state_data)
        values.encode(state)
        request = files.render_feedback_request(context.to_dict())
        with self._locked_flow(flow_uuid, context.method_name, review=True) as (session, number):
            self._save(session, number, context.method_name, state, request)
            old = self._pointers(flow_uuid)
            self._write_pointers(flow_uuid, files.FlowPointers(number, old.saves + 1, number))

    def load_pending_feedback(self, flow_uuid: str) -> tuple[dict[str, Any], PendingFeedbackContext] | None:
        """The state and CrewAI's context of the run's pending feedback, or None."""
        from crewai.flow.async_feedback.types import PendingFeedbackContext

        pointers = self._pointers(flow_uuid)
        if pointers.pending is None:
            return None
        state = files.parse_state(self._output(flow_uuid, pointers.pending, files.STATE_AGENT))
        request = self._output(flow_uuid, pointers.pending, files.FEEDBACK_AGENT)
        return state, PendingFeedbackContext.from_dict(files.parse_feedback_context(request))

    def clear_pending_feedback(self, flow_uuid: str) -> None:
        """The run no longer waits for feedback (its review and files are kept)."""
        directory = self._flow_dir(flow_uuid)
        if not directory.is_dir():
            return
        with fs.locked(directory, self.lock_timeout, f"the CrewAI flow run {flow_uuid}"):
            old = self._pointers(flow_uuid)
            if old.pending is not None:
                self._write_pointers(flow_uuid, files.FlowPointers(old.latest, old.saves, None))

    def pending_phase(self, flow_uuid: str) -> int | None:
        """The phase of the run that waits for human feedback, or None."""
        return self._pointers(flow_uuid).pending
