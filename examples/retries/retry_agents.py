"""Agents that call a flaky model API, for examples/retries/flow.yaml.

``writer`` is rate limited twice (HTTP 429 with ``Retry-After: 2``) and succeeds on its
third try; ``checker`` gets HTTP 503 on every try, so its tries run out and, under
``on_exhausted: await_review``, its phase waits in ``haytham review`` for a person. The
errors are shaped like the OpenAI and Anthropic clients' (a ``response`` with a status
code and headers): haytham recognises them by duck typing, with no SDK installed.
"""

from __future__ import annotations

from haytham.run.runner import AgentContext, AgentResult


class Response:
    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers


class RateLimitError(Exception):
    def __init__(self, retry_after: str) -> None:
        super().__init__("429 Too Many Requests: rate limit reached for requests")
        self.response = Response(429, {"retry-after": retry_after})


class InternalServerError(Exception):
    def __init__(self) -> None:
        super().__init__("503 Service Unavailable: the model is overloaded")
        self.response = Response(503, {})


CALLS: dict[tuple[str, str, int], int] = {}
"""How often each agent was called, by (session, agent, attempt)."""


def _call(context: AgentContext) -> int:
    key = (context.session_id, context.agent_name, context.attempt)
    CALLS[key] = CALLS.get(key, 0) + 1
    return CALLS[key]


def writer(context: AgentContext) -> AgentResult:
    if _call(context) <= 2:
        raise RateLimitError(retry_after="2")
    return AgentResult(
        "# Draft\n\nThree ideas for the night shift.\n",
        model="flaky-model",
        input_tokens=120,
        output_tokens=40,
    )


def checker(context: AgentContext) -> str:
    _call(context)
    raise InternalServerError()
