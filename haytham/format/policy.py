"""How an agent is run, as data: its retry policy, timeout, what happens when its tries run
out, whether it has side effects, and the budgets of a session and of its phases.

These are the policy keys of workflow.yaml (``defaults:``, an ``agents:`` entry written as a
mapping, ``budget:`` at the top and on a phase); ``haytham.format.workflow`` reads them and
checks them with located errors, and the runner (``haytham.run``) follows them. They are
kept apart from the fingerprint: they change how a session is run, never the shape of its
files, so adding or tuning a policy never makes a session "changed".

Each place writes only the keys it sets (``PolicyKeys``); an agent's policy is its own keys
over the workflow's ``defaults:`` over the built-in defaults (``resolve_policy``), key by
key, and ``retry:`` field by field: ``defaults: {retry: {max_attempts: 4, backoff: 3}}``
with ``writer: {retry: {max_attempts: 6}}`` gives the writer six tries with backoff 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields, replace
from typing import Any

from haytham.frozen import frozen
from haytham.records import OnExhausted

RETRY_KEYS = ("max_attempts", "initial_interval", "backoff", "max_interval", "jitter")
"""The keys of ``retry:``, in the order they are written."""

POLICY_KEYS = ("retry", "retry_on", "timeout", "on_exhausted", "side_effects")
"""The policy keys of an agent (and of ``defaults:``), in the order they are written."""


@frozen
class RetryPolicy:
    """How often and how patiently an agent's transient failures are tried again.

    The wait before try ``n + 1`` is ``initial_interval * backoff ** (n - 1)`` seconds, at
    most ``max_interval``; with ``jitter`` a random part of it (uniformly between half
    of it and all of it), so that agents limited together do not retry
    together. A failure that says how long to wait (``Retry-After``) waits that long
    instead, at most ``max_interval`` too. The built-in policy makes one try: a workflow
    that says nothing about retries runs as it always did.
    """

    max_attempts: int = 1
    """How many tries in all, the first one included (1: never tried again)."""
    initial_interval: float = 1.0
    """Seconds to wait before the second try."""
    backoff: float = 2.0
    """What each wait is multiplied by for the next."""
    max_interval: float = 60.0
    """The longest wait, computed or asked for by ``Retry-After``."""
    jitter: bool = True

    def interval(self, tries: int) -> float:
        """The computed wait (no jitter) after ``tries`` failed tries (1 for the first)."""
        return min(self.max_interval, self.initial_interval * self.backoff ** max(0, tries - 1))


@frozen
class AgentPolicy:
    """Everything about how one agent is run, resolved (``Workflow.policy_of``)."""

    retry: RetryPolicy = RetryPolicy()
    retry_on: str | None = None
    """``module:function`` of a predicate ``(exception) -> bool`` that says which failures
    are transient, instead of the built-in classification (``haytham.run.retry``)."""
    timeout: float | None = None
    """Seconds one try may take; a try that takes longer is cancelled (an async agent) or
    abandoned (a sync one, its late result discarded) and counts as a transient failure."""
    on_exhausted: OnExhausted = "fail"
    side_effects: bool = False
    """True when the agent acts on the world (sends, pays, writes elsewhere): after a crash
    that may have cut it short, it waits for a person instead of running again."""

    @property
    def keeps_tries(self) -> bool:
        """Whether the agent's tries go on record (``## Tries`` of its output): when it runs
        under a retry policy or a timeout. Otherwise its one try is the output itself, and
        its file is what it always was."""
        return self.retry.max_attempts > 1 or self.timeout is not None


@frozen
class PolicyKeys:
    """The policy keys as written in one place (``defaults:`` or one agent's mapping):
    None, or an empty ``retry``, where nothing is written."""

    retry: Mapping[str, Any] = field(default_factory=dict)
    """The keys of ``retry:`` written here, a subset of ``RETRY_KEYS``."""
    retry_on: str | None = None
    timeout: float | None = None
    on_exhausted: OnExhausted | None = None
    side_effects: bool | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PolicyKeys:
        """The keys of a mapping already checked against the workflow schema (other keys,
        such as an agent's ``call``, are not policy and are left out)."""
        return cls(
            retry=dict(data.get("retry", {})),
            retry_on=data.get("retry_on"),
            timeout=data.get("timeout"),
            on_exhausted=data.get("on_exhausted"),
            side_effects=data.get("side_effects"),
        )

    def as_data(self) -> dict[str, Any]:
        """The keys as written (``from_data`` gives them back), in ``POLICY_KEYS`` order."""
        data: dict[str, Any] = {}
        if self.retry:
            data["retry"] = {key: self.retry[key] for key in RETRY_KEYS if key in self.retry}
        for key in POLICY_KEYS[1:]:
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    def __bool__(self) -> bool:
        return bool(self.as_data())


def resolve_policy(*layers: PolicyKeys) -> AgentPolicy:
    """The policy of the layers, each over the ones before it (first the workflow's
    ``defaults:``, then the agent's own keys), over the built-in ``AgentPolicy``."""
    policy = AgentPolicy()
    for layer in layers:
        changes: dict[str, Any] = {
            f.name: getattr(layer, f.name)
            for f in fields(layer)
            if f.name != "retry" and getattr(layer, f.name) is not None
        }
        if layer.retry:
            changes["retry"] = replace(policy.retry, **dict(layer.retry))
        policy = replace(policy, **changes)
    return policy


@frozen
class Budget:
    """How much a session (``budget:`` at the top) or a phase (``budget:`` on the phase)
    may spend: tokens (input and output together) and/or cost, in the unit the agents
    report it in. None: no limit of that kind."""

    tokens: int | None = None
    cost: float | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> Budget | None:
        """The budget of a ``budget:`` mapping checked against the schema; None without one."""
        if data is None:
            return None
        return cls(tokens=data.get("tokens"), cost=data.get("cost"))

    def as_data(self) -> dict[str, Any]:
        """The keys as written: only the limits set."""
        return {
            key: value for key, value in (("tokens", self.tokens), ("cost", self.cost)) if value is not None
        }
