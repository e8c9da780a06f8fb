"""Trying an agent again: which failures are transient, how long to wait, and the loop that
runs one agent's tries under its policy (``haytham.format.policy.AgentPolicy``).

Failures are classified by duck typing, so haytham needs no provider SDK: an exception with
a ``status_code`` or ``status`` (or a ``response`` that has one) of 429 is a rate limit, of
408 or 5xx a server error, of any other 4xx permanent; the usual class names of the
OpenAI/Anthropic/httpx clients (``RateLimitError``, ``APITimeoutError``,
``APIConnectionError``, ``TimeoutException``...), ``TimeoutError`` and ``ConnectionError``
are transient; everything else (``ValueError``, ``TypeError``, a bug) is permanent. A
``retry_on`` predicate replaces that judgement for the agents that name one.

A failure that says how long to wait (a ``retry-after`` header in seconds or as an HTTP
date, on the exception's ``response.headers`` or ``headers``, or a ``retry_after``
attribute) waits that long, at most ``max_interval``, instead of the computed backoff.

Waiting goes through a ``RunClock``, so the tests inject one that only counts (the default
suite never sleeps); each agent's loop runs in its own worker thread, so one agent's waits
never hold up another agent of a parallel phase.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from haytham.errors import AgentTimeout
from haytham.format.policy import AgentPolicy, RetryPolicy
from haytham.records import AgentTry, TryOutcome
from haytham.store.clock import format_timestamp, utc_now

TRANSIENT_NAMES: dict[str, TryOutcome] = {
    "RateLimitError": "rate_limit",
    "APITimeoutError": "timeout",
    "TimeoutException": "timeout",  # httpx
    "ReadTimeout": "timeout",
    "ConnectTimeout": "timeout",
    "APIConnectionError": "connection",
    "ConnectError": "connection",  # httpx
    "RemoteProtocolError": "connection",
    "InternalServerError": "server_error",
    "ServiceUnavailableError": "server_error",
    "OverloadedError": "server_error",
}
"""Class names (of the exception or any of its bases) that mark a transient failure."""


class RunClock(Protocol):
    """What the retry loop needs of time: the wall clock for the tries' records, a monotonic
    clock for durations, and a way to wait."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: ``time.sleep`` waits."""

    def now(self) -> datetime:
        return utc_now()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def status_of(error: BaseException) -> int | None:
    """The HTTP status an exception carries (``status_code``, ``status``, or its response's)."""
    for holder in (error, getattr(error, "response", None)):
        for name in ("status_code", "status"):
            value = getattr(holder, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def classify(error: BaseException) -> TryOutcome:
    """How a failed try ended: a transient kind (tried again) or ``permanent``."""
    status = status_of(error)
    if status == 429:
        return "rate_limit"
    if status == 408 or (status is not None and status >= 500):
        return "server_error"
    for kind in type(error).__mro__:
        found = TRANSIENT_NAMES.get(kind.__name__)
        if found is not None:
            return found
    if status is not None:
        return "permanent"  # any other 4xx: the request itself is wrong
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, ConnectionError):
        return "connection"
    return "permanent"


def retry_after(error: BaseException, now: datetime | None = None) -> float | None:
    """The seconds a failure asks to wait (``Retry-After``), or None when it asks nothing."""
    value: Any = getattr(error, "retry_after", None)
    if value is None:
        for holder in (getattr(error, "response", None), error):
            headers = getattr(holder, "headers", None)
            if headers is not None and hasattr(headers, "get"):
                value = headers.get("retry-after") or headers.get("Retry-After")
                if value is not None:
                    break
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return max(0.0, float(value))
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (moment - (now or utc_now())).total_seconds())


def wait_before_next(
    policy: RetryPolicy, tries: int, error: BaseException, clock: RunClock, rng: Callable[[], float]
) -> float:
    """How long to wait after ``tries`` failed tries: the failure's ``Retry-After`` (at most
    ``max_interval``), else the backoff, with jitter a random point between half of it
    and all of it."""
    asked = retry_after(error, clock.now())
    if asked is not None:
        return round(min(asked, policy.max_interval), 3)
    wait = policy.interval(tries)
    if policy.jitter:
        wait = wait / 2 + rng() * wait / 2
    return round(wait, 3)


Predicate = Callable[[BaseException], bool]


@dataclass
class TryLoop:
    """One agent's tries under its policy: call, classify, wait, call again."""

    policy: AgentPolicy
    clock: RunClock
    predicate: Predicate | None = None
    """``retry_on``, imported: True for a transient failure (outcome ``transient``, unless
    the built-in classification names its kind)."""
    rng: Callable[[], float] = field(default=random.random)
    tries: list[AgentTry] = field(default_factory=list)

    def run(self, agent: Callable[[Any], Any], context: Any) -> Any:
        """The value of the first try of ``agent(context)`` that returns (awaited, for an
        async agent); raises the last try's exception when the tries run out or a failure
        is permanent. ``tries`` holds every try."""
        retry = self.policy.retry
        while True:
            number = len(self.tries) + 1
            started = format_timestamp(self.clock.now())
            try:
                value = self._one(agent, _for_try(context, number))
            except Exception as error:
                ended = format_timestamp(self.clock.now())
                outcome = self._outcome(error)
                last = outcome == "permanent" or number >= retry.max_attempts
                wait = None if last else wait_before_next(retry, number, error, self.clock, self.rng)
                self.tries.append(
                    AgentTry(number, started, ended, outcome, wait, type(error).__name__, str(error))
                )
                if last:
                    raise
                assert wait is not None
                self.clock.sleep(wait)
                continue
            self.tries.append(AgentTry(number, started, format_timestamp(self.clock.now()), "completed"))
            return value

    def _outcome(self, error: BaseException) -> TryOutcome:
        found = classify(error)
        if self.predicate is None:
            return found
        if self.predicate(error):
            return found if found != "permanent" else "transient"
        return "permanent"

    def _one(self, agent: Callable[[Any], Any], context: Any) -> Any:
        """One try, awaited when the agent is async, within the timeout when there is one:
        an async agent is cancelled at the timeout; a sync one cannot be stopped, so it runs
        in a (daemon) thread of its own, is left to finish there, and its late result is
        discarded."""
        timeout = self.policy.timeout
        if timeout is None or _is_async(agent):
            return settle(agent(context), timeout)
        done = threading.Event()
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = settle(agent(context), timeout)
            except BaseException as error:  # handed to the waiting thread
                box["error"] = error
            finally:
                done.set()

        threading.Thread(target=target, name="haytham-agent-try", daemon=True).start()
        if not done.wait(timeout):
            raise AgentTimeout(f"no answer within {timeout:g} s (its late result is discarded)")
        if "error" in box:
            raise box["error"]
        return box["value"]


def settle(value: Any, timeout: float | None) -> Any:
    """``value``, awaited in an event loop of its own when it is awaitable, and cancelled
    past ``timeout`` seconds (an AgentTimeout)."""
    if not inspect.isawaitable(value):
        return value
    import asyncio  # only for an async agent: reading commands never import it

    async def wait(awaitable: Awaitable[Any]) -> Any:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except asyncio.TimeoutError:
            raise AgentTimeout(f"no answer within {timeout:g} s (cancelled)") from None

    return asyncio.run(wait(value))


def _is_async(agent: Callable[[Any], Any]) -> bool:
    """Whether ``agent`` is a coroutine function (any other agent runs in a thread under a
    timeout; an awaitable it returns is awaited there, within the same timeout)."""
    return inspect.iscoroutinefunction(agent)


def _for_try(context: Any, number: int) -> Any:
    """``context`` for try ``number``: its ``try_number``, and so its idempotency key, is that
    try's (an ``AgentContext``); any other context object is passed as it is."""
    if dataclasses.is_dataclass(context) and not isinstance(context, type) and hasattr(context, "try_number"):
        return dataclasses.replace(context, try_number=number)
    return context
