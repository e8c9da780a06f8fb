"""The files of a CrewAI flow run's session: what each holds, written and read back.

- Each persisted method is a phase of the session's own ``crewai`` workflow, added the first
  time the method is saved (``phase_{n}_{method}``). Its agent output ``state.md`` is the
  state after the method, as readable JSON in a fenced block (``values.dumps``), under a
  heading naming the method.
- A pending ``@human_feedback`` adds ``human_feedback.md`` to the method's phase: CrewAI's
  message, the outcomes the reviewer may choose (``emit``), what the method returned, and
  CrewAI's ``PendingFeedbackContext`` as JSON (what ``Flow.from_pending`` needs).
- ``crewai/flow.json`` says which phase holds the newest state (``latest``), how many saves
  the run had (``saves``) and which phase waits for a person (``pending``, or null). It is
  written after the phase, whole and atomically, so a reader sees the last complete state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from haytham.errors import DocumentError, InvalidArgumentError
from haytham.format.layout import CREWAI_FLOW_FILE
from haytham.format.run_by import CREWAI
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.integrations.crewai import values
from haytham.store.names import check_name

STATE_AGENT = "state"
"""The agent output of every phase that holds the state after the method (``state.md``)."""
FEEDBACK_AGENT = "human_feedback"
"""The agent output of a phase paused for a person (``human_feedback.md``)."""
WORKFLOW_NAME = CREWAI.name
"""The workflow of every flow run's session, named as the framework (``format.run_by``)."""
MODE = "default"
FLOW_FILE = CREWAI_FLOW_FILE
"""In the session's ``crewai/`` folder (``layout.CREWAI_DIR``): the run's pointers."""
_FENCE = "```json"


def empty_workflow() -> Workflow:
    """The workflow of a run before its first save: no phase yet, marked as run by CrewAI."""
    return Workflow(
        name=WORKFLOW_NAME, phases=(), modes={MODE: ()}, max_retries=1_000_000, run_by=CREWAI.name
    )


def phase_directory(number: int, method_name: str) -> str:
    """``phase_{n}_{method}``, or ``phase_{n}`` for a method name that is not a safe name."""
    try:
        return f"phase_{number}_{check_name('method_name', method_name.lower())}"
    except InvalidArgumentError:
        return f"phase_{number}"


def with_method(workflow: Workflow, method_name: str, review: bool) -> tuple[Workflow, int]:
    """The workflow with a phase for ``method_name`` (added last when it has none; turned
    into a reviewed phase when ``review``), and the phase's number."""
    phases = list(workflow.phases)
    for index, phase in enumerate(phases):
        if phase.name == method_name:
            if review and not phase.review:
                phases[index] = PhaseDefinition(
                    phase.number, phase.name, phase.directory, (STATE_AGENT, FEEDBACK_AGENT), review=True
                )
                break
            return workflow, phase.number
    else:
        number = len(phases) + 1
        agents = (STATE_AGENT, FEEDBACK_AGENT) if review else (STATE_AGENT,)
        phases.append(
            PhaseDefinition(number, method_name, phase_directory(number, method_name), agents, review=review)
        )
    numbers = tuple(p.number for p in phases)
    changed = Workflow(
        WORKFLOW_NAME, tuple(phases), {MODE: numbers}, workflow.max_retries, run_by=CREWAI.name
    )
    return changed, next(p.number for p in phases if p.name == method_name)


def _fenced(text: str) -> str:
    return f"{_FENCE}\n{text}\n```"


def _fenced_json(content: str, what: str) -> str:
    """The text of the first ```json block of ``content``."""
    start = content.find(_FENCE + "\n")
    end = content.find("\n```", start + len(_FENCE) + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        raise DocumentError(f"{what} has no ```json block")
    return content[start + len(_FENCE) + 1 : end]


def render_state(method_name: str, state: Mapping[str, Any]) -> str:
    """``state.md``: the state after ``method_name``."""
    return (
        f"# State after `{method_name}`\n\n"
        "The flow's state when the method finished, as CrewAI's `FlowPersistence` saved it. "
        'Values that are not JSON are tagged `{"$haytham": TYPE, "value": ...}`.\n\n'
        f"{_fenced(values.dumps(state))}\n"
    )


def parse_state(content: str) -> dict[str, Any]:
    """The state ``render_state`` wrote."""
    return values.loads(_fenced_json(content, "state.md"))


def render_feedback_request(context: Mapping[str, Any]) -> str:
    """``human_feedback.md``: what CrewAI asks the reviewer, and the context to resume with."""
    emit = context.get("emit") or []
    lines = [f"# Feedback wanted on `{context.get('method_name')}`", "", str(context.get("message") or "")]
    if emit:
        lines += [
            "",
            "## Outcomes",
            "",
            "Name one as the first word of your comments; approving without one chooses "
            f"`{context.get('default_outcome') or emit[0]}`.",
            "",
            *(f"- `{outcome}`" for outcome in emit),
        ]
    output = context.get("method_output")
    lines += ["", "## What the method returned", ""]
    if isinstance(output, str):
        lines.append(output if output.strip() else "(empty)")
    else:
        lines.append(_fenced(values.dumps({"output": output})))
    lines += [
        "",
        "## Resume context",
        "",
        "CrewAI's `PendingFeedbackContext`, read by `Flow.from_pending`.",
        "",
        _fenced(values.dumps(dict(context))),
        "",
    ]
    return "\n".join(lines)


def parse_feedback_context(content: str) -> dict[str, Any]:
    """The ``PendingFeedbackContext.to_dict()`` that ``render_feedback_request`` wrote."""
    marker = content.rfind("## Resume context")
    if marker < 0:
        raise DocumentError("human_feedback.md has no '## Resume context' section")
    return values.loads(_fenced_json(content[marker:], "human_feedback.md"))


@dataclass(frozen=True)
class FlowPointers:
    """``crewai/flow.json``: where the newest state is and what waits for a person."""

    latest: int | None = None
    """The phase whose ``state.md`` is the newest state, or None before the first save."""
    saves: int = 0
    pending: int | None = None
    """The phase paused for human feedback, or None."""

    def render(self) -> str:
        return (
            json.dumps({"latest": self.latest, "saves": self.saves, "pending": self.pending}, indent=2) + "\n"
        )

    @classmethod
    def parse(cls, text: str) -> FlowPointers:
        try:
            data = json.loads(text)
            latest, saves, pending = data["latest"], data["saves"], data["pending"]
        except (ValueError, KeyError, TypeError) as error:
            raise DocumentError(f"{FLOW_FILE} is not readable: {error}", field=FLOW_FILE) from None
        for field, value in (("latest", latest), ("pending", pending)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise DocumentError(f"{FLOW_FILE}: {field} must be a phase number or null", field=field)
        if not isinstance(saves, int):
            raise DocumentError(f"{FLOW_FILE}: saves must be a number", field="saves")
        return cls(latest, saves, pending)
