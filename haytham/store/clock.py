"""Timestamps: ISO 8601 in UTC with a trailing ``Z``, from an injectable clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware (never the deprecated ``utcnow``)."""
    return datetime.now(timezone.utc)


def format_timestamp(moment: datetime) -> str:
    """``2024-11-24T10:00:00Z``, with microseconds only when there are some."""
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {moment!r} has no time zone; give an aware datetime")
    moment = moment.astimezone(timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def parse_timestamp(text: str) -> datetime:
    """The inverse of format_timestamp; also accepts ``+00:00`` offsets."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return value.astimezone(timezone.utc)


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
"""Where a missing or unreadable timestamp sorts: before every real one."""


def sort_time(text: str | None) -> datetime:
    """A stored timestamp as a time to sort by, oldest first; a missing or unreadable one is
    ``EARLIEST`` (the inbox of the CLI shows such a phase first, the web inbox first in its
    oldest-first order and last in its default, newest first)."""
    try:
        return parse_timestamp(text) if text else EARLIEST
    except ValueError:
        return EARLIEST
