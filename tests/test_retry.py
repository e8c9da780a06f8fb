"""The runner tries transient failures again under each agent's policy (issue 27).

Fake agents raise rate limits with and without ``Retry-After``, 5xx answers, timeouts,
dropped connections and permanent errors; an injected clock only counts the waits (no test
here sleeps through a backoff). Each test asserts the number of tries, the waits, the
files written and where the session stands.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_clock import START, FakeClock

from haytham import CheckpointManager
from haytham.errors import AgentImportError
from haytham.format.policy import AgentPolicy, RetryPolicy
from haytham.format.workflow import Workflow, load_workflow
from haytham.run.retry import AgentTimeout, TryLoop, classify, retry_after
from haytham.run.runner import AgentContext, PhaseRunner, RunResult

P, S = "acme", "s1"


class Response:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.headers = headers or {}


class RateLimitError(Exception):
    """Shaped like the OpenAI and Anthropic clients' (a response with headers)."""

    def __init__(self, retry_after: str | None = None) -> None:
        super().__init__("429 Too Many Requests")
        self.response = Response(429, {"retry-after": retry_after} if retry_after else {})


class APIStatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"{status} from the provider")
        self.status_code = status


class APIConnectionError(Exception):
    pass


def failing(*failures: BaseException | None, text: str = "done") -> Callable[[AgentContext], str]:
    """An agent that raises ``failures`` in turn, then returns ``text`` (None: returns)."""
    calls: list[int] = []

    def agent(context: AgentContext) -> str:
        calls.append(1)
        if len(calls) <= len(failures) and failures[len(calls) - 1] is not None:
            raise failures[len(calls) - 1]  # type: ignore[misc]
        return f"{text} on call {len(calls)}"

    agent.calls = calls  # type: ignore[attr-defined]
    return agent


def workflow(tmp_path: Path, writer: str, defaults: str = "", review: bool = False) -> Workflow:
    path = tmp_path / "flow.yaml"
    path.write_text(
        f"name: flow\n{defaults}modes:\n  all: [1, 2]\nphases:\n"
        f"  - {{number: 1, name: Draft, agents: [writer]{', review: true' if review else ''}}}\n"
        "  - {number: 2, name: Check, agents: [checker]}\n"
        f"agents:\n  writer: {writer}\n",
        "utf-8",
    )
    return load_workflow(path)


def run(
    tmp_path: Path, flow: Workflow, writer: Callable[[AgentContext], Any], clock: FakeClock
) -> tuple[CheckpointManager, RunResult]:
    manager = CheckpointManager(base_dir=tmp_path / "projects", workflows=[flow])
    manager.create_session(P, S, "u", workflow_type=flow, execution_mode="all")
    agents = {"writer": writer, "checker": lambda c: "checked"}
    return manager, PhaseRunner(manager, flow, agents, clock=clock).run(P, S)


NO_JITTER = "{retry: {max_attempts: 4, initial_interval: 0.5, backoff: 2.0, max_interval: 30, jitter: false}}"


def test_a_rate_limit_with_retry_after_waits_what_it_asks_and_succeeds_on_the_third_try(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    writer = failing(RateLimitError("2"), RateLimitError("2"))
    manager, result = run(tmp_path, workflow(tmp_path, NO_JITTER), writer, clock)
    assert result.status == "completed"
    assert len(writer.calls) == 3  # type: ignore[attr-defined]
    assert clock.waits == [2.0, 2.0]
    output = manager.load_agent_output(P, S, 1, "writer")
    assert output.content == "done on call 3" and output.status == "completed"
    assert [(t.number, t.outcome, t.wait, t.error_type) for t in output.tries] == [
        (1, "rate_limit", 2.0, "RateLimitError"),
        (2, "rate_limit", 2.0, "RateLimitError"),
        (3, "completed", None, None),
    ]
    assert [t.started for t in output.tries] == [
        "2026-12-05T06:00:00Z",
        "2026-12-05T06:00:02Z",
        "2026-12-05T06:00:04Z",
    ]
    checkpoint = manager.load_checkpoints(P, S)[1]
    assert checkpoint.status == "completed" and checkpoint.retry_count == 0  # no review attempt
    assert checkpoint.errors == (
        "writer: try 1 of 4: rate_limit (RateLimitError: 429 Too Many Requests); waited 2 s",
        "writer: try 2 of 4: rate_limit (RateLimitError: 429 Too Many Requests); waited 2 s",
    )
    assert [a.number for a in manager.load_attempts(P, S, 1)] == [1]  # the one attempt: no re-run


def test_a_rate_limit_without_retry_after_backs_off(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = failing(RateLimitError(), RateLimitError(), RateLimitError())
    manager, result = run(tmp_path, workflow(tmp_path, NO_JITTER), writer, clock)
    assert result.status == "completed"
    assert clock.waits == [0.5, 1.0, 2.0]
    assert len(manager.load_agent_output(P, S, 1, "writer").tries) == 4


def test_retry_after_is_capped_by_max_interval_and_read_as_an_http_date() -> None:
    policy = RetryPolicy(max_attempts=3, max_interval=5.0, jitter=False)
    clock = FakeClock()
    later = "Sat, 05 Dec 2026 06:00:08 GMT"  # 3 s after the first wait of 5 s
    loop = TryLoop(AgentPolicy(retry=policy), clock)
    assert loop.run(failing(RateLimitError("120"), RateLimitError(later)), None) == "done on call 3"
    assert clock.waits == [5.0, 3.0]  # 120 s capped at max_interval, then the date
    assert retry_after(RateLimitError(later), START) == 8.0


def test_server_errors_exhaust_the_tries_and_fail_the_phase(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = failing(*(APIStatusError(503) for _ in range(4)))
    manager, result = run(tmp_path, workflow(tmp_path, NO_JITTER), writer, clock)
    assert (result.status, result.phase) == ("failed", 1)
    assert "writer: APIStatusError: 503 from the provider" in (result.error or "")
    assert clock.waits == [0.5, 1.0, 2.0]
    output = manager.load_agent_output(P, S, 1, "writer")
    assert output.status == "failed" and output.error_type == "APIStatusError"
    assert [t.outcome for t in output.tries] == ["server_error"] * 4
    assert [t.wait for t in output.tries] == [0.5, 1.0, 2.0, None]
    assert manager.state(P, S).current.state == "failed"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("failure", "outcome"),
    [
        (TimeoutError("read timed out"), "timeout"),
        (ConnectionResetError("reset by peer"), "connection"),
        (APIConnectionError("dropped"), "connection"),
        (APIStatusError(408), "server_error"),
        (APIStatusError(500), "server_error"),
    ],
)
def test_timeouts_and_connection_errors_are_tried_again(
    tmp_path: Path, failure: Exception, outcome: str
) -> None:
    clock = FakeClock()
    writer = failing(failure)
    manager, result = run(tmp_path, workflow(tmp_path, NO_JITTER), writer, clock)
    assert result.status == "completed" and clock.waits == [0.5]
    assert [t.outcome for t in manager.load_agent_output(P, S, 1, "writer").tries] == [outcome, "completed"]


@pytest.mark.parametrize(
    "failure", [ValueError("bad prompt"), TypeError("oops"), APIStatusError(400), KeyError("x")]
)
def test_a_permanent_error_is_never_tried_again(tmp_path: Path, failure: Exception) -> None:
    clock = FakeClock()
    writer = failing(failure)
    manager, result = run(tmp_path, workflow(tmp_path, NO_JITTER), writer, clock)
    assert result.status == "failed" and clock.waits == []
    assert len(writer.calls) == 1  # type: ignore[attr-defined]
    tries = manager.load_agent_output(P, S, 1, "writer").tries
    assert [(t.outcome, t.wait) for t in tries] == [("permanent", None)]


def test_without_a_policy_an_agent_makes_one_try_and_its_file_has_no_tries(tmp_path: Path) -> None:
    clock = FakeClock()
    writer = failing(RateLimitError("2"))
    manager, result = run(tmp_path, workflow(tmp_path, "my_agents:write"), writer, clock)
    assert result.status == "failed" and clock.waits == []
    text = (manager.phase_dir(P, S, 1) / "writer.md").read_text("utf-8")
    assert "## Tries" not in text
    assert manager.load_checkpoints(P, S)[1].errors == ("writer: RateLimitError: 429 Too Many Requests",)


def test_jitter_waits_between_half_and_all_of_the_backoff() -> None:
    clock = FakeClock()
    policy = AgentPolicy(retry=RetryPolicy(max_attempts=3, initial_interval=4.0, backoff=2.0))
    TryLoop(policy, clock, rng=iter([0.0, 1.0]).__next__).run(
        failing(RateLimitError(), RateLimitError()), None
    )
    assert clock.waits == [2.0, 8.0]


def test_retry_on_names_which_failures_are_transient(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flaky_rules.py").write_text(
        "def transient(error):\n    return isinstance(error, KeyError)\n", "utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    clock = FakeClock()
    policy = "{retry: {max_attempts: 3, initial_interval: 1, jitter: false}, retry_on: flaky_rules:transient}"
    writer = failing(KeyError("cache miss"), RateLimitError("1"))
    manager, result = run(tmp_path, workflow(tmp_path, policy), writer, clock)
    assert result.status == "failed"  # the predicate says a rate limit is permanent here
    tries = manager.load_agent_output(P, S, 1, "writer").tries
    assert [(t.outcome, t.wait) for t in tries] == [("transient", 1.0), ("permanent", None)]


def test_a_sync_agent_past_its_timeout_is_abandoned_and_its_late_result_discarded() -> None:
    release = threading.Event()
    calls: list[int] = []

    def slow(context: object) -> str:
        calls.append(1)
        if len(calls) == 1:
            release.wait(10)  # the first try hangs until the test lets it go
            return "late"
        return "on time"

    clock = FakeClock()
    loop = TryLoop(AgentPolicy(retry=RetryPolicy(max_attempts=2, jitter=False), timeout=0.05), clock)
    try:
        assert loop.run(slow, None) == "on time"
    finally:
        release.set()
    assert [(t.outcome, t.error_type) for t in loop.tries] == [
        ("timeout", "AgentTimeout"),
        ("completed", None),
    ]
    assert clock.waits == [1.0]


def test_an_async_agent_past_its_timeout_is_cancelled() -> None:
    cancelled: list[bool] = []

    async def slow(context: object) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    loop = TryLoop(AgentPolicy(timeout=0.05), FakeClock())
    with pytest.raises(AgentTimeout, match="cancelled"):
        loop.run(slow, None)
    assert cancelled == [True]
    assert [t.outcome for t in loop.tries] == ["timeout"]


def test_an_async_agent_is_tried_again_too() -> None:
    calls: list[int] = []

    async def agent(context: object) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RateLimitError("3")
        return "ok"

    clock = FakeClock()
    loop = TryLoop(AgentPolicy(retry=RetryPolicy(max_attempts=2)), clock)
    assert loop.run(agent, None) == "ok" and clock.waits == [3.0]


def test_one_agents_waits_never_hold_up_another_in_a_parallel_phase(tmp_path: Path) -> None:
    """The writer's wait lasts until the checker has run: were the waits shared, the
    checker would never run and the wait would give up (and the test fail)."""
    checked = threading.Event()
    seen: list[bool] = []

    class WaitingClock(FakeClock):
        def sleep(self, seconds: float) -> None:
            seen.append(checked.wait(10))
            super().sleep(seconds)

    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: flow\nmodes: {all: [1]}\nphases:\n  - {number: 1, name: Both, agents: [writer, checker]}\n"
        f"agents:\n  writer: {NO_JITTER}\n",
        "utf-8",
    )
    flow = load_workflow(path)
    manager = CheckpointManager(base_dir=tmp_path / "projects", workflows=[flow])
    manager.create_session(P, S, "u", workflow_type=flow, execution_mode="all")

    def checker(context: AgentContext) -> str:
        checked.set()
        return "checked"

    agents = {"writer": failing(RateLimitError("5")), "checker": checker}
    result = PhaseRunner(manager, flow, agents, clock=WaitingClock()).run(P, S)
    assert result.status == "completed" and seen == [True]


def test_exhausted_tries_await_review_and_a_send_back_runs_the_phase_again(tmp_path: Path) -> None:
    clock = FakeClock()
    policy = "{retry: {max_attempts: 2, initial_interval: 1, jitter: false}, on_exhausted: await_review}"
    writer = failing(RateLimitError(), RateLimitError())
    flow = workflow(tmp_path, policy)
    manager, result = run(tmp_path, flow, writer, clock)
    assert (result.status, result.phase) == ("awaiting_review", 1)
    assert result.error == "writer: RateLimitError: 429 Too Many Requests"
    assert "awaits review (writer: RateLimitError" in str(result)
    view = manager.state(P, S)
    assert view.current is not None and view.current.state == "awaiting_review"
    assert manager.load_checkpoints(P, S)[1].status == "failed"
    assert manager.load_feedback(P, S, 1).action == "pending"  # type: ignore[union-attr]
    again = PhaseRunner(manager, flow, {"writer": writer, "checker": lambda c: "c"}, clock=clock).run(P, S)
    assert again.status == "awaiting_review" and len(writer.calls) == 2  # type: ignore[attr-defined]

    manager.save_user_feedback(P, S, 1, reviewed=True, approved=False, action="retry", comments="try again")
    done = PhaseRunner(manager, flow, {"writer": writer, "checker": lambda c: "c"}, clock=clock).run(P, S)
    assert done.status == "completed"
    assert manager.load_agent_output(P, S, 1, "writer").content == "done on call 3"
    assert [a.number for a in manager.load_attempts(P, S, 1)] == [1, 2]  # the send-back's attempt


def test_exhausted_tries_awaiting_review_may_be_skipped_or_approved_by_hand(tmp_path: Path) -> None:
    policy = "{retry: {max_attempts: 1}, on_exhausted: await_review}"
    writer = failing(ValueError("the model refused"))
    flow = workflow(tmp_path, policy)
    manager, result = run(tmp_path, flow, writer, FakeClock())
    assert result.status == "awaiting_review"
    manager.correct_output(P, S, 1, "writer", "written by hand\n")
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True, action="approved")
    seen: list[str] = []

    def checker(context: AgentContext) -> str:
        seen.append(context.previous_outputs[1]["writer"])
        return "checked"

    done = PhaseRunner(manager, flow, {"writer": writer, "checker": checker}, clock=FakeClock()).run(P, S)
    assert done.status == "completed" and seen == ["written by hand\n"]
    assert len(writer.calls) == 1  # type: ignore[attr-defined]


def test_the_classification_is_by_duck_typing() -> None:
    class Overloaded(Exception):
        status = 529

    class Wrapped(Exception):
        def __init__(self) -> None:
            self.response = Response(404)

    class TimeoutException(Exception):  # httpx's name
        pass

    assert classify(Overloaded()) == "server_error"
    assert classify(Wrapped()) == "permanent"
    assert classify(TimeoutException()) == "timeout"
    assert classify(RateLimitError()) == "rate_limit"
    assert classify(OSError("disk")) == "permanent"


def test_a_retry_on_that_cannot_be_imported_is_refused_before_anything_runs(tmp_path: Path) -> None:
    flow = workflow(tmp_path, "{retry: {max_attempts: 2}, retry_on: no_such_rules_module:transient}")
    manager = CheckpointManager(base_dir=tmp_path / "projects", workflows=[flow])
    manager.create_session(P, S, "u", workflow_type=flow, execution_mode="all")
    with pytest.raises(AgentImportError, match="no_such_rules_module"):
        PhaseRunner(manager, flow, {"writer": failing(), "checker": lambda c: "c"})
    assert manager.load_checkpoints(P, S) == {}


def test_a_phase_run_in_order_is_parked_by_the_agent_that_failed_not_by_those_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: flow\nmodes: {all: [1]}\nphases:\n"
        "  - {number: 1, name: Both, agents: [writer, checker], run_style: single}\n"
        "agents:\n  writer: {on_exhausted: await_review}\n",
        "utf-8",
    )
    flow = load_workflow(path)
    manager = CheckpointManager(base_dir=tmp_path / "projects", workflows=[flow])
    manager.create_session(P, S, "u", workflow_type=flow, execution_mode="all")
    checker = failing()
    result = PhaseRunner(manager, flow, {"writer": failing(ValueError("no")), "checker": checker}).run(P, S)
    assert (result.status, result.phase) == ("awaiting_review", 1)
    assert checker.calls == []  # type: ignore[attr-defined]


def test_each_try_has_its_own_try_number_and_idempotency_key(tmp_path: Path) -> None:
    """A retry is a new request to the provider: the key an agent passes it differs per try,
    and is the same on every machine for the same try."""
    seen: list[tuple[int, str]] = []

    def writer(context: AgentContext) -> str:
        seen.append((context.try_number, context.idempotency_key))
        if len(seen) < 3:
            raise RateLimitError("1")
        return "done"

    run(tmp_path, workflow(tmp_path, NO_JITTER), writer, FakeClock())
    assert [number for number, _ in seen] == [1, 2, 3]
    assert len({key for _, key in seen}) == 3
    flow = workflow(tmp_path, NO_JITTER)
    again = AgentContext(P, S, flow.phase(1), "writer", 1, {}, None, try_number=2)
    assert again.idempotency_key == seen[1][1]
