"""What an agent's calls to the world are keyed and traced by, and what a crash leaves unknown.

An agent that calls an API with side effects (sends a mail, opens a ticket, charges a card)
passes ``AgentContext.idempotency_key`` to it, so that a second call after a crash is
recognised by the API as the same request. The key is a pure function of where the call
stands in the session (project, session, phase, attempt, agent, try): the same on every
machine and every resume, different for every try.

``AgentContext.traceparent`` is a W3C Trace Context header (https://www.w3.org/TR/trace-context/)
for the agent's calls: one trace per session (its trace id is derived from the project and
session), one span per agent run (its parent id from phase, attempt and agent), sampled.

Before an agent runs, the runner records it as started (its row in the phase checkpoint reads
``in_progress``, saved through the store's journal); its completed output file records that it
finished. A row still ``in_progress`` whose output is not completed, found when no runner is
running the session, is an agent that **may have run**: it started, and nothing says whether
its calls went out (``may_have_run``). docs/formats.md, "Side effects and trace context".
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from haytham.format import AGENT_OUTPUT
from haytham.format.trace_context import _nonzero as _nonzero
from haytham.format.trace_context import span_id as span_id
from haytham.format.trace_context import trace_id as trace_id
from haytham.format.trace_context import traceparent as traceparent
from haytham.records import AgentOutput, PhaseCheckpoint
from haytham.store.interrupted import MAY_HAVE_RUN as MAY_HAVE_RUN
from haytham.store.interrupted import may_have_run as may_have_run
from haytham.store.interrupted import started_agents as started_agents

KEY_PREFIX = "haytham"
"""The first part of every idempotency key."""


def idempotency_key(
    project_id: str, session_id: str, phase: int, attempt: int, agent: str, try_number: int
) -> str:
    """``haytham-{sha256 of the six parts, 32 hex digits}``: stable and opaque.

    The parts are hashed (joined by NUL, which no name holds) rather than spelt out, so the key
    is short, of one alphabet and length for every API that takes one (Stripe allows 255
    characters, most allow 64), and says nothing of the project's names to a third party.
    """
    parts = (project_id, session_id, str(phase), str(attempt), agent, str(try_number))
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    return f"{KEY_PREFIX}-{digest[:32]}"


PLACEHOLDER_ERROR = "MayHaveRun"
"""The Error Type of the output the runner writes for an agent with side effects that may have
run: the file a reviewer corrects to accept a hand-written output (``correct_output``)."""


def hold_reason(agent: str) -> str:
    """The hold of a phase whose agent with side effects may have run (checkpoint's Held)."""
    return f"{agent} {MAY_HAVE_RUN}: it started and never completed, and it has side effects"


def rerun_note(agents: Sequence[str]) -> str:
    """The history reason of the checkpoint that runs agents without side effects again."""
    return f"{', '.join(agents)} {MAY_HAVE_RUN} (started, never completed): running again"


def placeholder(agent: str) -> dict[str, Any]:
    """``save_agent_output``'s fields for the output of an agent held because it may have run:
    failed, with an error that says so and no content (a reviewer may write it)."""
    return {
        "agent_name": agent,
        "duration": None,
        "status": "failed",
        "model": None,
        "input_tokens": None,
        "output_tokens": None,
        "tools_used": (),
        "content": "",
        "error_type": PLACEHOLDER_ERROR,
        "error_message": f"{hold_reason(agent)}; nothing says whether its calls went out",
        "stack_trace": None,
        "cost": None,
    }


def carried(checkpoint: PhaseCheckpoint, outputs: Mapping[str, AgentOutput | None]) -> list[dict[str, Any]]:
    """The outputs an approved hold keeps in the phase's next attempt, as ``save_agent_output``
    fields: every completed output, and each held agent's output a person corrected (accepted
    as written, completed, its ``Corrected`` kept). A held agent whose output nobody corrected
    runs again."""
    held = set(started_agents(checkpoint))
    kept = []
    for name, output in outputs.items():
        if output is None:
            continue
        if output.status == "completed":
            fields = _fields(output)
        elif name in held and output.corrected is not None:
            fields = {**_fields(output), "status": "completed", "error_type": None, "error_message": None}
            fields["stack_trace"] = None
        else:
            continue
        kept.append(fields)
    return kept


def archived_output(directory: Path, agent: str) -> AgentOutput | None:
    """``agent``'s output in an attempt's folder (``Attempt.directory``), None without one."""
    return AGENT_OUTPUT.load_optional(directory / f"{agent}.md")


def _fields(output: AgentOutput) -> dict[str, Any]:
    """An output's record as ``save_agent_output`` fields (all but the phase and the time)."""
    fields = {f.name: getattr(output, f.name) for f in dataclasses.fields(output)}
    for key in ("phase_number", "phase_name", "executed"):
        fields.pop(key)
    return fields
