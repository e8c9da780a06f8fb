"""Checks of the arguments the manager's public methods take, before anything is read or written.

Each check raises InvalidArgumentError naming the argument (``field``) and what was expected,
and returns the value in the form the records keep (a timestamp normalised, seconds rounded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from haytham.errors import InvalidArgumentError
from haytham.format.budget import read_budget, write_budget
from haytham.format.policy import Budget
from haytham.format.reviewer import Reviewer, parse_reviewer
from haytham.frozen import frozen
from haytham.records import APPROVAL_ACTIONS, FEEDBACK_ACTIONS, PHASE_STATUSES, RUN_STYLES, AgentRun, AgentTry
from haytham.store.clock import format_timestamp, parse_timestamp
from haytham.store.names import check_agent_name, check_name

AGENT_KEYS = frozenset(
    {"agent_name", "status", "output_file", "tokens", "input_tokens", "output_tokens", "cost", "duration"}
)
"""The keys an entry of ``save_checkpoint(agents=...)`` may have."""


def check_choice(field: str, value: object, choices: Sequence[str]) -> None:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise InvalidArgumentError(
            f"{field} {value!r} is not valid (expected one of {', '.join(choices)})", field=field
        )


def check_flag(field: str, value: object) -> bool:
    """``value`` must be True or False (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{field} must be True or False, got {value!r}", field=field)
    return value


def check_count(field: str, value: object, *, optional: bool = False) -> None:
    """``value`` must be a whole number >= 0 (or None when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError(f"{field} {value!r} is not a whole number >= 0", field=field)


def check_seconds(field: str, value: object) -> float | None:
    """A finite number of seconds >= 0, rounded to tenths as the files keep it; None stays None."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
        raise InvalidArgumentError(f"{field} {value!r} is not a number of seconds >= 0", field=field)
    if value == float("inf"):
        raise InvalidArgumentError(f"{field} {value!r} is not a finite number of seconds", field=field)
    return round(float(value), 1)


def check_amount(field: str, value: object) -> float | None:
    """A finite amount (of dollars) >= 0; None stays None."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
        raise InvalidArgumentError(
            f"{field} {value!r} is not an amount >= 0", field=field.split("[")[0].split(".")[0]
        )
    return float(value)


def check_timestamp(field: str, value: object) -> str | None:
    """An ISO 8601 UTC timestamp, in the form the files write; None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} {value!r} is not an ISO 8601 string", field=field)
    try:
        return format_timestamp(parse_timestamp(value))
    except ValueError:
        raise InvalidArgumentError(
            f"{field} {value!r} is not an ISO 8601 UTC timestamp (expected like 2024-11-24T10:00:00Z)",
            field=field,
        ) from None


def check_text_list(field: str, items: Iterable[object]) -> list[str]:
    """A list of strings (one string alone is refused: it would be taken letter by letter)."""
    if isinstance(items, str):
        raise InvalidArgumentError(f"{field} must be a list of strings, not one string", field=field)
    result = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidArgumentError(f"{field} holds {item!r}, which is not a string", field=field)
        result.append(item)
    return result


def agent_run(index: int, agent: Mapping[str, Any]) -> AgentRun:
    """The checkpoint row of ``agents[index]`` of ``save_checkpoint``, every key checked."""
    where = f"agents[{index}]"
    if not isinstance(agent, Mapping):
        raise InvalidArgumentError(f"{where} must be a dict, got {agent!r}", field="agents")
    unknown = set(agent) - AGENT_KEYS
    if unknown:
        raise InvalidArgumentError(
            f"{where} has unknown keys {sorted(unknown)} (expected {', '.join(sorted(AGENT_KEYS))})",
            field="agents",
        )
    if "agent_name" not in agent:
        raise InvalidArgumentError(f"{where} has no 'agent_name'", field="agents")
    name = check_agent_name(agent["agent_name"])
    status = agent.get("status", "completed")
    check_choice(f"{where}.status", status, PHASE_STATUSES)
    for key in ("tokens", "input_tokens", "output_tokens"):
        check_count(f"{where}.{key}", agent.get(key), optional=True)
    tokens = agent.get("tokens")
    if tokens is None and agent.get("input_tokens") is not None and agent.get("output_tokens") is not None:
        tokens = agent["input_tokens"] + agent["output_tokens"]
    cost = check_amount(f"{where}.cost", agent.get("cost"))
    output_file = agent.get("output_file") or f"{name}.md"
    check_name(f"{where}.output_file", output_file)
    return AgentRun(
        agent_name=name,
        status=status,
        output_file=output_file,
        duration=check_seconds(f"{where}.duration", agent.get("duration")),
        tokens=tokens,
        cost=round_or_none(cost, 4),
    )


def round_or_none(value: float | None, digits: int) -> float | None:
    """``round(value, digits)`` as a float, None for an unknown value."""
    return None if value is None else round(float(value), digits)


@frozen
class CheckpointArgs:
    """``save_checkpoint``'s arguments, checked (before the session is opened)."""

    status: str
    agents: Sequence[Mapping[str, Any]]
    runs: tuple[AgentRun, ...]
    started: str | None
    completed: str | None
    duration: float | None
    retry_count: int | None
    execution_mode: str
    errors: tuple[str, ...]
    built_from: tuple[tuple[int, str], ...] | None
    held: tuple[str, ...] = ()


def checkpoint_args(
    status: str,
    agents: Sequence[Mapping[str, Any]],
    started: str | None,
    completed: str | None,
    duration: float | None,
    retry_count: int | None,
    execution_mode: str,
    errors: Sequence[str] | None,
    name: str | None,
    reason: str | None,
    built_from: Mapping[int, str] | None,
    held: Sequence[str] | None = None,
) -> CheckpointArgs:
    for key, label in (("name", name), ("reason", reason)):
        if label is not None and not isinstance(label, str):
            raise InvalidArgumentError(f"{key} must be a string or None, got {label!r}", field=key)
    check_choice("status", status, PHASE_STATUSES)
    check_choice("execution_mode", execution_mode, RUN_STYLES)
    check_count("retry_count", retry_count, optional=True)
    runs = tuple(agent_run(index, agent) for index, agent in enumerate(agents))
    names = [run.agent_name for run in runs]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"agents lists an agent twice: {names}", field="agents")
    return CheckpointArgs(
        status,
        agents,
        runs,
        check_timestamp("started", started),
        check_timestamp("completed", completed),
        check_seconds("duration", duration),
        retry_count,
        execution_mode,
        tuple(check_text_list("errors", errors or ())),
        check_built_from(built_from),
        tuple(check_text_list("held", held or ())),
    )


def output_fields(
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
    tries: Sequence[AgentTry] = (),
    trace_id: str | None = None,
) -> dict[str, Any]:
    """``save_agent_output``'s arguments, checked: the fields of its ``AgentOutput`` but the
    phase and the time (the tries' values are checked by the schema when written)."""
    check_agent_name(agent_name)
    check_choice("status", status, PHASE_STATUSES)
    if not isinstance(output_content, str):
        raise InvalidArgumentError(
            f"output_content must be a string, got {type(output_content).__name__}",
            field="output_content",
        )
    for key, value in (
        ("model", model),
        ("error_type", error_type),
        ("error_message", error_message),
        ("stack_trace", stack_trace),
        ("trace_id", trace_id),
    ):
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentError(f"{key} must be a string or None, got {value!r}", field=key)
    check_count("input_tokens", input_tokens, optional=True)
    check_count("output_tokens", output_tokens, optional=True)
    return {
        "agent_name": agent_name,
        "duration": check_seconds("duration", duration),
        "status": status,
        "model": model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "tools_used": tuple(check_text_list("tools_used", tools_used or ())),
        "content": output_content,
        "error_type": error_type,
        "error_message": error_message,
        "stack_trace": stack_trace,
        "cost": round_or_none(check_amount("cost", cost), 4),
        "tries": _tries(tries),
        "trace_id": trace_id,
    }


def _tries(tries: Sequence[AgentTry]) -> tuple[AgentTry, ...]:
    if not all(isinstance(found, AgentTry) for found in tries):
        raise InvalidArgumentError("tries must be AgentTry records", field="tries")
    return tuple(tries)


def agent_row(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint's row for an agent output (``save_phase`` without ``agents``)."""
    row = {"agent_name": fields["agent_name"], "status": fields["status"]}
    for key in ("duration", "input_tokens", "output_tokens", "cost"):
        if fields[key] is not None:
            row[key] = fields[key]
    return row


def feedback_fields(
    reviewed: bool,
    approved: bool,
    comments: str = "",
    requested_changes: Sequence[str] | None = None,
    action: str | None = None,
    retry_count: int = 0,
    *,
    reviewer: object = None,
    justification: str | None = None,
    raised_budget: str | None = None,
) -> dict[str, Any]:
    """``save_user_feedback``'s arguments, checked: the fields of its ``UserFeedback`` but the
    phase and the time. No ``action`` is the one the review implies: ``pending`` before a
    review, ``approved`` for an approval, ``retry`` for a review that does not approve.
    ``reviewer`` (a ``Reviewer`` or its text) is written as ``Name <email>``; a blank
    ``justification`` is none. ``raised_budget`` must read as a budget
    (``haytham.format.budget.read_budget``) and comes only with an approval."""
    if action is None:
        action = "approved" if approved is True else "retry" if reviewed is True else "pending"
    check_choice("action", action, FEEDBACK_ACTIONS)
    check_count("retry_count", retry_count)
    check_flag("reviewed", reviewed)
    check_flag("approved", approved)
    if not isinstance(comments, str):
        raise InvalidArgumentError(f"comments must be a string, got {comments!r}", field="comments")
    if reviewed and not approved and action in APPROVAL_ACTIONS:  # formats.md, "Hand edits"
        raise InvalidArgumentError(
            f"action {action!r} contradicts approved=False, and approved is the reviewer's decision: "
            "pass approved=True to approve the phase, or action='retry' to send it back",
            field="action",
        )
    if reviewer is not None and not isinstance(reviewer, (str, Reviewer)):
        raise InvalidArgumentError(
            f"reviewer must be a string or a Reviewer, got {reviewer!r}", field="reviewer"
        )
    if justification is not None and not isinstance(justification, str):
        raise InvalidArgumentError(
            f"justification must be a string, got {justification!r}", field="justification"
        )
    if raised_budget is not None:
        if approved is not True:
            raise InvalidArgumentError(
                "raised_budget is recorded with an approval only (approved=True)", field="raised_budget"
            )
        raised_budget = check_budget("raised_budget", raised_budget)
    who = parse_reviewer(reviewer) if isinstance(reviewer, str) else reviewer
    return {
        "reviewed": reviewed,
        "approved": approved,
        "comments": comments,
        "requested_changes": tuple(check_text_list("requested_changes", requested_changes or ())),
        "action": action,
        "retry_count": retry_count,
        "reviewer": None if who is None else str(who),
        "justification": justification.strip() or None if justification is not None else None,
        "raised_budget": raised_budget,
    }


def check_budget(key: str, value: object) -> str:
    """A budget's text (``400,000 tokens, $10``) checked and in its one spelling
    (``format.budget.write_budget``)."""
    read = read_budget(value) if isinstance(value, str) else f"{value!r} is not text"
    if not isinstance(read, Budget):
        raise InvalidArgumentError(f"{key}: {read}", field=key)
    return write_budget(read)


def check_built_from(value: Mapping[int, str] | None) -> tuple[tuple[int, str], ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 and isinstance(d, str)
        for n, d in value.items()
    ):
        raise InvalidArgumentError(
            f"built_from must map phase numbers to digests, got {value!r}", field="built_from"
        )
    return tuple(sorted(value.items()))
