"""Checks of the arguments the manager's public methods take, before anything is read or written.

Each check raises InvalidArgumentError naming the argument (``field``) and what was expected,
and returns the value in the form the records keep (a timestamp normalised, seconds rounded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from haytham.errors import InvalidArgumentError
from haytham.records import PHASE_STATUSES, AgentRun
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
