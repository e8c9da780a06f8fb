"""A LangGraph ``interrupt()`` as a haytham review, and the reviewer's answer as a resume.

Each thread's session runs the one-phase workflow ``langgraph``: phase 1, ``Review``, with a
review gate and one agent, ``interrupt``. When the root graph pauses, ``open_review`` saves
what the graph asks (the interrupt values) as ``phase_1_review/interrupt.md``, completes the
phase and leaves a blank ``user_feedback.md``: the session is then ``awaiting_review`` in
``haytham list --awaiting-review``, ``haytham review`` and every other view. Each later
interrupt is a new attempt of the phase (the previous one is kept under ``attempts/{n}/``).

``resume_command`` reads the review back: approved or sent back (with comments and requested
changes) becomes ``Command(resume={"approved": ..., "comments": ..., "requested_changes": [...]})``
for the paused graph; no answer yet is None.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.serde.types import INTERRUPT, RESUME

from haytham.errors import NotFoundError
from haytham.format.run_by import LANGGRAPH
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.integrations.langgraph.files import is_plain_json

if TYPE_CHECKING:  # names for the type checker; a saver that only reads never imports these
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple
    from langgraph.types import Command

    from haytham.store.handle import SessionHandle
    from haytham.store.manager import CheckpointManager


class PausedThreads(Protocol):
    """What ``resume_command`` asks of a checkpointer (``HaythamSaver`` is one): the saver
    imports this module, so this module names what it needs rather than importing it."""

    @property
    def manager(self) -> CheckpointManager: ...

    @property
    def project(self) -> str: ...

    def session_id(self, thread_id: str) -> str: ...

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None: ...


REVIEW_PHASE = 1
INTERRUPT_AGENT = "interrupt"
MODE = "default"
LANGGRAPH_WORKFLOW = Workflow(
    name=LANGGRAPH.name,
    phases=(PhaseDefinition(REVIEW_PHASE, "Review", "phase_1_review", (INTERRUPT_AGENT,), review=True),),
    modes={MODE: (REVIEW_PHASE,)},
    max_retries=1_000_000,
    run_by=LANGGRAPH.name,
)
"""The workflow of every LangGraph thread's session: one phase that a person reviews, marked
as run by LangGraph (so haytham's advice says to resume the graph, never ``haytham resume``)."""
MARKER = "<!-- langgraph checkpoint: {} -->"
"""The last line of ``interrupt.md``: the checkpoint the graph paused at (not rendered)."""


def _interrupts(values: Sequence[Any]) -> list[tuple[str | None, Any]]:
    """(id, value) of each interrupt in the values of ``__interrupt__`` writes."""
    from langgraph.types import Interrupt  # with langchain's tracers: only when a graph pauses

    found: list[tuple[str | None, Any]] = []
    for value in values:
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, Interrupt):
                found.append((item.id, item.value))
            else:
                found.append((None, item))
    return found


def _as_markdown(value: Any, depth: int = 0) -> str:
    """What the reviewer reads for one interrupt value: text as it is, a dict as one ``###``
    heading per key over its value, other data as JSON."""
    if isinstance(value, str):
        return value
    if depth == 0 and type(value) is dict and value and all(isinstance(key, str) for key in value):
        return "\n\n".join(f"### {key}\n\n{_as_markdown(item, 1)}" for key, item in value.items())
    if is_plain_json(value):
        return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"
    return "```\n" + repr(value).replace("```", "'''") + "\n```"


def review_text(checkpoint_id: str, interrupt_values: Sequence[Any]) -> str:
    """The content of ``interrupt.md``: each interrupt's value, then the checkpoint marker."""
    parts = [_as_markdown(value) for _, value in _interrupts(interrupt_values)]
    return "\n\n---\n\n".join(parts) + "\n\n" + MARKER.format(checkpoint_id) + "\n"


def open_review(session: SessionHandle, checkpoint_id: str, interrupt_values: Sequence[Any]) -> None:
    """Put the thread's session in ``awaiting_review`` for the interrupt at ``checkpoint_id``.

    Saving the same interrupt again (a graph run again without an answer) changes nothing; a
    new one after a review opens the next attempt of the phase. The interrupt's text, the
    completed checkpoint and the blank review are one change (``save_phase``).
    """
    text = review_text(checkpoint_id, interrupt_values)
    session.recover()  # decide on the whole of an interrupted change, not half
    state = session.state().phase(REVIEW_PHASE).state
    if state != "pending":
        try:
            current = session.agent_output(REVIEW_PHASE, INTERRUPT_AGENT).content
        except NotFoundError:
            current = None
        if current == text and state != "in_progress":
            return  # this interrupt is already up for review (or reviewed)
        if state not in ("in_progress", "awaiting_review"):
            session.start_attempt(REVIEW_PHASE)
    blank = session.feedback(REVIEW_PHASE) is None
    session.save_phase(
        REVIEW_PHASE,
        {INTERRUPT_AGENT: text},
        "completed",
        {"reviewed": False, "approved": False, "action": "pending"} if blank else None,
        agents=[{"agent_name": INTERRUPT_AGENT, "status": "completed"}],
        reason=f"LangGraph paused at checkpoint {checkpoint_id}",
    )


def resume_command(saver: PausedThreads, config: RunnableConfig) -> Command[Any] | None:
    """``Command(resume=...)`` from the review of the thread's paused graph, or None.

    None when the graph is not paused at an interrupt or nobody has answered yet. The resume
    value is ``{"approved": bool, "comments": str, "requested_changes": [str, ...]}``; when
    several interrupts wait at once, each gets it (``{interrupt_id: value}``).
    """
    thread_id = str(config["configurable"]["thread_id"])
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if latest is None:
        return None
    writes = latest.pending_writes or []
    answered = {task for task, channel, _ in writes if channel == RESUME}
    waiting = _interrupts(
        [value for task, channel, value in writes if channel == INTERRUPT and task not in answered]
    )
    if not waiting:
        return None
    manager, project, session = saver.manager, saver.project, saver.session_id(thread_id)
    view = manager.state(project, session).phase(REVIEW_PHASE)
    if view.state not in ("approved", "sent_back"):
        return None
    feedback = manager.load_feedback(project, session, REVIEW_PHASE)
    answer = {
        "approved": view.state == "approved",
        "comments": feedback.comments if feedback else "",
        "requested_changes": list(feedback.requested_changes) if feedback else [],
    }
    from langgraph.types import Command

    ids = [interrupt_id for interrupt_id, _ in waiting if interrupt_id is not None]
    if len(ids) > 1:
        return Command(resume={interrupt_id: answer for interrupt_id in ids})
    return Command(resume=answer)
