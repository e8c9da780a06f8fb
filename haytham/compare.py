"""Compare two states of work: two history entries, two attempts of a phase, or two sessions.

A ``Comparison`` says what changed in the metadata, the status, the metrics (with deltas)
and each agent's output (as a unified diff, the form people already read in code review).
It is plain data with ``to_dict()``, so the command line prints it and scripts get JSON.
Comparing only reads: nothing is written, not even a repaired manifest.

``compare(a, b)`` is the one way to compare: this module builds on the manager's public
API, and the store never imports it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from haytham.errors import InvalidArgumentError, NotFoundError
from haytham.format import AGENT_OUTPUT, CHECKPOINT
from haytham.records import AgentRun, Attempt, HistoryEntry, PhaseCheckpoint
from haytham.store.manager import CheckpointManager

Change = Literal["added", "removed", "changed", "same"]
Number = int | float
SessionRef = tuple[CheckpointManager, str, str]
"""A session to compare: ``(manager, project_id, session_id)``."""


@dataclass(frozen=True)
class AgentDiff:
    """How one agent's output differs between the two sides."""

    agent: str
    """The agent's name; ``{phase}:{agent}`` when whole sessions are compared."""
    change: Change
    diff: str
    """A unified diff from ``a/{agent}.md`` to ``b/{agent}.md``; empty when the same."""


@dataclass(frozen=True)
class Comparison:
    """What differs between side ``a`` (old) and side ``b`` (new)."""

    metadata: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Only the fields that changed: name -> (old, new)."""
    status: tuple[str | None, str | None] | None = None
    """(old, new) when the status changed, else None."""
    metrics: dict[str, tuple[Number | None, Number | None, Number | None]] = field(default_factory=dict)
    """Every metric either side knows: name -> (old, new, new - old); the delta is None
    when a side does not know the value."""
    agents: list[AgentDiff] = field(default_factory=list)
    """Every agent of either side, in the order a then b lists them."""

    @property
    def same(self) -> bool:
        """True when nothing differs: metadata, status, metrics and every output."""
        return (
            not self.metadata
            and self.status is None
            and all(old == new for old, new, _ in self.metrics.values())
            and all(agent.change == "same" for agent in self.agents)
        )

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON data (tuples become lists)."""
        return {
            "same": self.same,
            "metadata": {name: [_json(old), _json(new)] for name, (old, new) in self.metadata.items()},
            "status": None if self.status is None else list(self.status),
            "metrics": {name: list(values) for name, values in self.metrics.items()},
            "agents": [{"agent": a.agent, "change": a.change, "diff": a.diff} for a in self.agents],
        }


@dataclass(frozen=True)
class _Side:
    """One side of a comparison, whatever it was made from."""

    metadata: dict[str, Any]
    status: str | None
    metrics: dict[str, Number | None]
    agents: dict[str, str]


def compare(
    a: HistoryEntry | Attempt | SessionRef,
    b: HistoryEntry | Attempt | SessionRef,
    *,
    outputs: tuple[Mapping[str, str], Mapping[str, str]] | None = None,
) -> Comparison:
    """Compare two history entries, two attempts, or two sessions ``(manager, project, session)``,
    or a history entry with a session as it is now.

    The one way to compare, whatever the sides (``CheckpointManager`` has no compare
    methods). An entry and ``(manager, project, session)`` (either order) compare the
    entry's phase as the entry recorded it with that phase of the session now: checkpoint
    metadata, status, metrics and outputs. The entry's outputs are those of its attempt
    (``entry_state``) while that attempt's files are on disk; when they are not, both sides
    compare their checkpoint's agent rows instead, so like is compared with like.

    The entry of a correction (``correct_output``) keeps the output it replaced, so its side
    shows the corrected agent's output as it was before: compared with the session now, it
    gives the correction's diff (``haytham diff P/S@ENTRY P/S``).

    An entry records its checkpoint but not the outputs; ``outputs`` gives each
    entry's agent outputs (what ``manager.entry_state(project, session, entry)[1]``
    returns). Without it, entries' agents are compared by their checkpoint rows. Attempts
    come from ``manager.load_attempts``.
    """
    if outputs is not None and not (isinstance(a, HistoryEntry) and isinstance(b, HistoryEntry)):
        raise InvalidArgumentError("outputs is only for comparing two history entries", field="outputs")
    if isinstance(a, HistoryEntry) and (now := _as_session(b)):
        first, second = _entry_and_now(a, *now)
    elif isinstance(b, HistoryEntry) and (now := _as_session(a)):
        second, first = _entry_and_now(b, *now)
    elif isinstance(a, HistoryEntry) and isinstance(b, HistoryEntry):
        first = _entry_side(a, None if outputs is None else outputs[0])
        second = _entry_side(b, None if outputs is None else outputs[1])
    elif isinstance(a, Attempt) and isinstance(b, Attempt):
        first, second = _attempt_side(a), _attempt_side(b)
    elif (first_ref := _as_session(a)) and (second_ref := _as_session(b)):
        first, second = _session_side(*first_ref), _session_side(*second_ref)
    else:
        raise InvalidArgumentError(
            f"compare takes two HistoryEntry, two Attempt, two (manager, project_id, session_id), "
            f"or a HistoryEntry and a (manager, project_id, session_id), "
            f"not {type(a).__name__} and {type(b).__name__}",
            field="a",
        )
    return _compare(first, second)


def _as_session(value: object) -> SessionRef | None:
    """``value`` as ``(manager, project_id, session_id)``, or None when it is not one."""
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], CheckpointManager):
        manager, project_id, session_id = value
        if isinstance(project_id, str) and isinstance(session_id, str):
            return manager, project_id, session_id
    return None


def _compare(a: _Side, b: _Side) -> Comparison:
    metadata = {
        name: (a.metadata.get(name), b.metadata.get(name))
        for name in _union(a.metadata, b.metadata)
        if a.metadata.get(name) != b.metadata.get(name)
    }
    metrics = {
        name: (a.metrics.get(name), b.metrics.get(name), _delta(a.metrics.get(name), b.metrics.get(name)))
        for name in _union(a.metrics, b.metrics)
        if a.metrics.get(name) is not None or b.metrics.get(name) is not None
    }
    agents = [
        _agent_diff(name, a.agents.get(name), b.agents.get(name)) for name in _union(a.agents, b.agents)
    ]
    status = None if a.status == b.status else (a.status, b.status)
    return Comparison(metadata, status, metrics, agents)


def _union(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """The keys of ``a`` in order, then those only ``b`` has."""
    return list(dict.fromkeys([*a, *b]))


def _delta(old: Number | None, new: Number | None) -> Number | None:
    if old is None or new is None:
        return None
    difference = new - old
    return round(difference, 6) if isinstance(difference, float) else difference


def _agent_diff(name: str, old: str | None, new: str | None) -> AgentDiff:
    change: Change
    if old is None:
        change = "added"
    elif new is None:
        change = "removed"
    else:
        change = "same" if old == new else "changed"
    text = "" if change == "same" else unified_diff(old or "", new or "", name)
    return AgentDiff(name, change, text)


def unified_diff(old: str, new: str, name: str) -> str:
    """A unified diff of two texts as ``a/{name}.md`` and ``b/{name}.md``, like ``git diff``.

    Lines are split at ``\\n`` only (a CR stays part of its line), and a last line without a
    line break is marked ``\\ No newline at end of file``.
    """
    lines = difflib.unified_diff(
        _lines(old), _lines(new), fromfile=f"a/{name}.md", tofile=f"b/{name}.md", lineterm="\n"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# ----------------------------------------------------------------------- sides


def _checkpoint_metadata(checkpoint: PhaseCheckpoint | None) -> dict[str, Any]:
    if checkpoint is None:
        return {}
    return {
        "started": checkpoint.started,
        "completed": checkpoint.completed,
        "retry_count": checkpoint.retry_count,
        "execution_mode": checkpoint.execution_mode,
        "errors": checkpoint.errors,
    }


def _checkpoint_metrics(checkpoint: PhaseCheckpoint | None) -> dict[str, Number | None]:
    if checkpoint is None:
        return {}
    return {
        "duration": checkpoint.duration,
        "total_tokens": checkpoint.total_tokens,
        "input_tokens": checkpoint.input_tokens,
        "output_tokens": checkpoint.output_tokens,
        "cost": checkpoint.cost,
    }


def _run_text(run: AgentRun) -> str:
    """An agent's checkpoint row as lines, what an entry compared without outputs shows."""
    return "".join(
        f"{key}: {'-' if value is None else value}\n"
        for key, value in (
            ("status", run.status),
            ("output_file", run.output_file),
            ("duration", run.duration),
            ("tokens", run.tokens),
            ("cost", run.cost),
        )
    )


def _entry_side(entry: HistoryEntry, outputs: Mapping[str, str] | None) -> _Side:
    checkpoint = CHECKPOINT.parse(entry.checkpoint_text)
    metadata = {
        "phase": entry.phase_number,
        "phase_name": entry.phase_name,
        "attempt": entry.attempt,
        "timestamp": entry.timestamp,
        "name": entry.name,
        "reason": entry.reason,
        **_checkpoint_metadata(checkpoint),
    }
    agents = dict(outputs) if outputs is not None else {r.agent_name: _run_text(r) for r in checkpoint.agents}
    if outputs is not None and entry.corrected_agent is not None and entry.original_output is not None:
        # a correction's entry keeps the output it replaced: its side shows the output before
        agents[entry.corrected_agent] = AGENT_OUTPUT.parse(entry.original_output).content
    return _Side(metadata, entry.status, _checkpoint_metrics(checkpoint), agents)


def _entry_and_now(
    entry: HistoryEntry, manager: CheckpointManager, project_id: str, session_id: str
) -> tuple[_Side, _Side]:
    """The entry's phase as the entry recorded it, and that phase of the session now."""
    number = entry.phase_number
    attempts = {a.number for a in manager.load_attempts(project_id, session_id, number)}
    on_disk = entry.attempt in attempts
    then = _entry_side(entry, manager.entry_state(project_id, session_id, entry)[1] if on_disk else None)
    for key in ("timestamp", "name", "reason"):  # what only a history entry has
        del then.metadata[key]
    checkpoint = manager.load_checkpoints(project_id, session_id).get(number)
    metadata: dict[str, Any] = {"phase": number, "phase_name": entry.phase_name}
    if checkpoint is not None:
        metadata.update(phase_name=checkpoint.phase_name, attempt=checkpoint.retry_count + 1)
    metadata.update(_checkpoint_metadata(checkpoint))
    if on_disk:
        try:
            agents = dict(manager.get_phase_outputs(project_id, session_id, [number])[number])
        except NotFoundError:
            agents = {}
    else:
        agents = {r.agent_name: _run_text(r) for r in checkpoint.agents} if checkpoint else {}
    status = checkpoint.status if checkpoint else None
    return then, _Side(metadata, status, _checkpoint_metrics(checkpoint), agents)


def _attempt_side(attempt: Attempt) -> _Side:
    metadata: dict[str, Any] = {"attempt": attempt.number, **_checkpoint_metadata(attempt.checkpoint)}
    feedback = attempt.feedback
    if feedback is not None:
        metadata.update(
            reviewed=feedback.reviewed,
            approved=feedback.approved,
            action=feedback.action,
            comments=feedback.comments,
            requested_changes=feedback.requested_changes,
        )
    status = attempt.checkpoint.status if attempt.checkpoint else None
    return _Side(metadata, status, _checkpoint_metrics(attempt.checkpoint), dict(attempt.outputs))


def _session_side(manager: CheckpointManager, project_id: str, session_id: str) -> _Side:
    manifest = manager.load_manifest(project_id, session_id)
    metadata: dict[str, Any] = {
        "project_id": manifest.project_id,
        "session_id": manifest.session_id,
        "user_id": manifest.user_id,
        "workflow_type": manifest.workflow_type,
        "workflow_fingerprint": manifest.workflow_fingerprint,
        "execution_mode": manifest.execution_mode,
        "created": manifest.created,
        "last_updated": manifest.last_updated,
        "history_head": manifest.history_head,
        "forked_from": manifest.forked_from,
        "current_phase": manifest.current.number,
    }
    metadata.update({f"phase {row.number}": row.status for row in manifest.phases})
    metrics: dict[str, Number | None] = {
        "total_duration": manifest.metrics.total_duration,
        "total_tokens": manifest.metrics.total_tokens,
        "total_cost": manifest.metrics.total_cost,
    }
    numbers = [
        row.number
        for row in manifest.phases
        if manager.phase_dir(project_id, session_id, row.number).is_dir()
    ]
    agents = {
        f"{number}:{agent}": text
        for number, outputs in manager.get_phase_outputs(project_id, session_id, numbers).items()
        for agent, text in outputs.items()
    }
    return _Side(metadata, manifest.status, metrics, agents)


__all__ = ["AgentDiff", "Comparison", "SessionRef", "compare", "unified_diff"]
