"""Events: callbacks that run after the store has safely written something.

Subscribers are called after the files are on disk and the session lock is released, so a
callback may call the manager again. A callback that raises is logged on the ``haytham``
logger and changes nothing: the store never rolls back or corrupts what it wrote.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, overload

from haytham.errors import InvalidArgumentError
from haytham.frozen import frozen

if TYPE_CHECKING:
    import logging

EventName = Literal[
    "checkpoint_saved",
    "agent_output_saved",
    "feedback_saved",
    "phase_completed",
    "session_completed",
    "session_forked",
    "cleanup_done",
    "commit_failed",
]
EVENT_NAMES: tuple[str, ...] = get_args(EventName)


def logger() -> logging.Logger:
    """The ``haytham`` logger. The logging package is imported when something is logged,
    not by every process that reads a session."""
    import logging

    return logging.getLogger("haytham")


@frozen
class Event:
    """What happened, to which session and file."""

    name: EventName
    project_id: str | None = None
    session_id: str | None = None
    phase: int | None = None
    path: Path | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    """Details that depend on the event (the status saved, what a cleanup removed, ...).

    ``commit_failed`` (emitted by ``haytham.git.autocommit``, not by the store) carries the
    commit ``message`` and the ``error`` that explains the failure."""


Callback = Callable[[Event], object]


class EventBus:
    """Keeps the callbacks of each event and calls them, isolating their failures."""

    def __init__(self) -> None:
        self._callbacks: dict[str, list[Callback]] = defaultdict(list)

    @overload
    def on(self, name: EventName, callback: Callback) -> Callback: ...
    @overload
    def on(self, name: EventName, callback: None = None) -> Callable[[Callback], Callback]: ...

    def on(
        self, name: EventName, callback: Callback | None = None
    ) -> Callback | Callable[[Callback], Callback]:
        """Subscribe ``callback`` to ``name``; without a callback, return a decorator."""
        if name not in EVENT_NAMES:
            raise InvalidArgumentError(
                f"event {name!r} is not one of {', '.join(EVENT_NAMES)}", field="event"
            )

        def subscribe(function: Callback) -> Callback:
            self._callbacks[name].append(function)
            return function

        return subscribe if callback is None else subscribe(callback)

    def emit(self, events: list[Event]) -> None:
        """Call every subscriber of each event in order; a failing one is logged, not raised."""
        for event in events:
            for callback in list(self._callbacks.get(event.name, ())):
                try:
                    callback(event)
                except Exception:
                    logger().exception("haytham: a %s callback raised; the store is unaffected", event.name)
