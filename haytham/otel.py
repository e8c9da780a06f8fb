"""A session as an OpenTelemetry trace: its phases, agents, tokens, costs and reviews, sent
over OTLP/HTTP with the GenAI semantic conventions (``gen_ai.*``), so the tools teams already
run (Arize Phoenix, Langfuse, LangSmith) show them beside the model calls.

Two steps, each testable on its own. ``plan_trace`` reads the session through the store's
read API (no lock, nothing written) into a ``TracePlan``: plain records of spans, their ids,
times, attributes, events and links, with no OpenTelemetry import, so the core never needs
the ``otel`` extra. ``readable_spans`` turns a plan into the SDK's ``ReadableSpan`` objects
(any SDK exporter takes them, such as the in-memory one of the tests), and ``send_spans``
POSTs them to a collector as one OTLP/HTTP protobuf request; ``export_trace`` does all three.

The trace (docs/otel.md has the attribute table):

- a root span ``invoke_workflow {workflow}`` for the session;
- a child per phase attempt, ``phase {n} {name} #{attempt}``, with its lifecycle state, and each
  review of it as a ``gen_ai.evaluation.result`` event (``gen_ai.evaluation.name`` =
  ``human_review``, the label ``approved``/``changes_requested``/..., the comments, reviewer);
- under it an ``invoke_agent {agent}`` span per agent output, with the model, tokens, cost
  and status, each recorded try of the runner as an event, the output's path and digest (its
  text only with ``content=True``), and the agent's own trace, when it recorded one, as a link.

Every id is derived from the session (and the phase, attempt and agent) with SHA-256, so
exporting twice sends the same spans, which a collector de-duplicates. Times are the files'
own (the manifest's created and last updated, a checkpoint's started and completed, an
output's executed time less its duration, a review's timestamp), each clamped into its
parent's so a child never outlives its parent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import CollectorError, InvalidArgumentError, MissingExtraError
from haytham.format import AGENT_OUTPUT, trace_context
from haytham.format.guard import read_file
from haytham.records import AgentOutput, AgentTry, Attempt, UserFeedback
from haytham.store import lifecycle
from haytham.store.clock import parse_timestamp
from haytham.store.manager import CheckpointManager
from haytham.version import __version__

if TYPE_CHECKING:  # the otel extra, imported only when spans are made or sent
    from opentelemetry.sdk.trace import ReadableSpan

DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
"""Where ``export_trace`` sends by default: an OpenTelemetry collector's OTLP/HTTP traces path
on this machine (Phoenix listens on ``http://localhost:6006/v1/traces``)."""
DEFAULT_TIMEOUT = 10.0
"""Seconds to wait for the collector before the export is reported as failed."""
EXTRA_HINT = "pip install 'haytham[otel]'"


AttributeValue = str | bool | int | float | tuple[str, ...]
Attributes = Mapping[str, AttributeValue]


# ---------------------------------------------------------------- haytham.yaml


TRACE_URL_FIELDS = ("trace_id", "span_id", "project", "session", "phase", "agent")
"""The placeholders a ``trace_url`` template may use."""


@dataclass(frozen=True)
class OtelConfig:
    """``otel:`` of haytham.yaml: where exports go and how the pages link to a trace."""

    endpoint: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    trace_url: str | None = None
    """A link template such as ``http://localhost:6006/redirects/spans/{span_id}``."""

    def __post_init__(self) -> None:
        if self.trace_url is not None:
            check_trace_url(self.trace_url)

    def agent_trace_url(
        self, project_id: str, session_id: str, phase: int, attempt: int, agent: str
    ) -> str | None:
        """The link of an agent output's span in the tracing tool; None without a template."""
        if self.trace_url is None:
            return None
        return self.trace_url.format(
            trace_id=f"{trace_id_for(project_id, session_id):032x}",
            span_id=f"{span_id_for(project_id, session_id, phase, attempt, agent):016x}",
            project=project_id,
            session=session_id,
            phase=phase,
            agent=agent,
        )


def check_trace_url(template: str) -> None:
    """InvalidArgumentError (field ``trace_url``) for a template that names a placeholder other
    than ``TRACE_URL_FIELDS`` or does not parse as a format string."""
    import string

    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as error:
        raise InvalidArgumentError(
            f"trace_url {template!r} does not parse: {error}", field="trace_url"
        ) from None
    unknown = [name for name in names if name not in TRACE_URL_FIELDS]
    if unknown:
        raise InvalidArgumentError(
            f"trace_url names {{{unknown[0]}}}; a template may use "
            + ", ".join(f"{{{name}}}" for name in TRACE_URL_FIELDS),
            field="trace_url",
        )


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class SpanEvent:
    """Something that happened at one moment within a span: a review, a try."""

    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True)
class SpanPlan:
    """One span to send: its id, its parent's (None for the root), times and data."""

    name: str
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: tuple[SpanEvent, ...] = ()
    links: tuple[tuple[int, int], ...] = ()
    """``(trace_id, span_id)`` of other traces this span is linked to (an agent's own trace)."""
    error: str | None = None
    """The status description of a span that failed; None for one that did not."""


@dataclass(frozen=True)
class TracePlan:
    """A session's trace: its id and its spans, the root first, every parent before its children."""

    project_id: str
    session_id: str
    trace_id: int
    spans: tuple[SpanPlan, ...]

    @property
    def trace_id_hex(self) -> str:
        return f"{self.trace_id:032x}"


def trace_id_for(project_id: str, session_id: str) -> int:
    """The session's trace id as the SDK takes it (``trace_context.trace_id``): the same on every
    export, and the one the runner's ``AgentContext.traceparent`` carries, so an agent's own
    spans fall into this trace."""
    return int(trace_context.trace_id(project_id, session_id), 16)


def span_id_for(project_id: str, session_id: str, *where: object) -> int:
    """A span's id as the SDK takes it (``trace_context.span_id``): ``()`` the root, ``(phase,
    attempt)`` a phase attempt, ``(phase, attempt, agent)`` an agent output, which is the parent
    id of the runner's ``traceparent`` for that agent run."""
    return int(trace_context.span_id(project_id, session_id, *where), 16)


def traceparent_for(project_id: str, session_id: str, phase: int, attempt: int, agent: str) -> str:
    """The W3C ``traceparent`` of an agent's span (``trace_context.traceparent``): an agent that
    starts its own spans under it puts its model calls under the agent's ``invoke_agent`` span."""
    return trace_context.traceparent(project_id, session_id, phase, attempt, agent)


def _ns(timestamp: str | None) -> int | None:
    """A stored ISO timestamp in nanoseconds since the epoch; None when missing or unreadable."""
    if not timestamp:
        return None
    try:
        moment = parse_timestamp(timestamp)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _clamp(start: int | None, end: int | None, parent: tuple[int, int]) -> tuple[int, int]:
    """A child's times inside its parent's: a missing start is the parent's, a missing end
    the start, and neither goes before the parent's start or past its end."""
    low, high = parent
    begin = min(max(start if start is not None else low, low), high)
    finish = min(max(end if end is not None else begin, begin), high)
    return begin, finish


def agent_tries(output: AgentOutput) -> tuple[AgentTry, ...]:
    """The tries the runner recorded in an output file (``## Tries``, issue 27), oldest first;
    none for a file without the section. The one place the trace reads them from."""
    return output.tries


def agent_trace_link(output: AgentOutput) -> tuple[int, int] | None:
    """The agent's own trace as ``(trace_id, span_id)`` for a span link, from the trace id the
    runner recorded in the output's metadata (issue 27): a W3C ``traceparent`` gives both, a
    32-hex-digit trace id gives the trace (its span id then the trace id's low 64 bits, as
    a link must name a span). None without one, or for an id of another form (a tool's run
    id), which stays in the ``haytham.agent.trace_id`` attribute."""
    recorded = output.trace_id
    if recorded is None:
        return None
    parts = recorded.strip().lower().split("-")
    try:
        if len(parts) == 4 and len(parts[1]) == 32 and len(parts[2]) == 16:
            trace, span = int(parts[1], 16), int(parts[2], 16)
        elif len(parts) == 1 and len(parts[0]) == 32:
            trace = int(parts[0], 16)
            span = trace & 0xFFFF_FFFF_FFFF_FFFF
        else:
            return None
    except ValueError:
        return None
    return (trace, span) if trace and span else None


def _review_event(feedback: UserFeedback, time_ns: int) -> SpanEvent:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.evaluation.name": "human_review",
        "gen_ai.evaluation.score.label": lifecycle.outcome(feedback),
        "haytham.review.action": feedback.action,
    }
    if feedback.comments.strip():
        attributes["gen_ai.evaluation.explanation"] = feedback.comments.strip()
    if feedback.requested_changes:
        attributes["haytham.review.requested_changes"] = tuple(feedback.requested_changes)
    if feedback.reviewer:
        attributes["haytham.review.reviewer"] = feedback.reviewer
    return SpanEvent("gen_ai.evaluation.result", time_ns, attributes)


def _try_event(attempt_try: AgentTry, span: tuple[int, int]) -> SpanEvent:
    """A try as an event at its end (its start for one that never ended; within ``span``, the
    agent's): its number, how it ended, the error and the wait before the next try."""
    attributes: dict[str, AttributeValue] = {
        "haytham.try.number": attempt_try.number,
        "haytham.try.outcome": attempt_try.outcome,
        "haytham.try.started": attempt_try.started,
    }
    if attempt_try.ended:
        attributes["haytham.try.ended"] = attempt_try.ended
    if attempt_try.error_type:
        attributes["error.type"] = attempt_try.error_type
    if attempt_try.error_message:
        attributes["haytham.try.error_message"] = attempt_try.error_message
    if attempt_try.wait is not None:
        attributes["haytham.try.wait_seconds"] = float(attempt_try.wait)
    moment = _ns(attempt_try.ended) or _ns(attempt_try.started)
    return SpanEvent("haytham.agent.try", _clamp(moment, moment, span)[0], attributes)


def _output_message(content: str) -> str:
    """``gen_ai.output.messages`` for an agent's text: one assistant message of one text part."""
    message = {"role": "assistant", "parts": [{"type": "text", "content": content}], "finish_reason": "stop"}
    return json.dumps([message], ensure_ascii=False)


def _agent_span(
    where: tuple[str, str, int, int],
    output: AgentOutput,
    file: tuple[str, str],
    parent: SpanPlan,
    content: bool,
) -> SpanPlan:
    """An agent output's span; ``file``: the output file's path in the session and its SHA-256."""
    project_id, session_id, phase, attempt = where
    tries = agent_tries(output)
    end = _ns(output.executed)
    start = None if end is None or output.duration is None else end - int(output.duration * 1e9)
    first_try = _ns(tries[0].started) if tries else None
    if first_try is not None:  # the run began with its first try, waits included
        start = first_try if start is None else min(start, first_try)
    start_ns, end_ns = _clamp(start, end, (parent.start_ns, parent.end_ns))
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": output.agent_name,
        "openinference.span.kind": "AGENT",
        "haytham.agent.status": output.status,
        "haytham.output.path": file[0],
        "haytham.output.sha256": file[1],
    }
    if output.model:
        attributes["gen_ai.request.model"] = output.model
    attributes.update(_usage(output.input_tokens, output.output_tokens, output.cost))
    if output.duration is not None:
        attributes["haytham.agent.duration_seconds"] = float(output.duration)
    if output.tools_used:
        attributes["haytham.agent.tools"] = tuple(output.tools_used)
    if output.error_type:
        attributes["error.type"] = output.error_type
    if output.trace_id:
        attributes["haytham.agent.trace_id"] = output.trace_id
    if content:
        attributes["gen_ai.output.messages"] = _output_message(output.content)
    if tries:
        attributes["haytham.agent.tries"] = len(tries)
    link = agent_trace_link(output)
    failed = output.status == "failed"
    return SpanPlan(
        name=f"invoke_agent {output.agent_name}",
        span_id=span_id_for(project_id, session_id, phase, attempt, output.agent_name),
        parent_id=parent.span_id,
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=tuple(_try_event(t, (start_ns, end_ns)) for t in tries),
        links=() if link is None else (link,),
        error=(output.error_message or output.error_type or "failed") if failed else None,
    )


def plan_trace(
    manager: CheckpointManager, project_id: str, session_id: str, *, content: bool = False
) -> TracePlan:
    """Read a session into the spans of its trace, reading files only (no lock, no write).

    ``content``: put each output's text in its span (``gen_ai.output.messages``); without it
    a span carries the output file's path and SHA-256 only. A session that does not read
    raises the store's error (SessionNotFoundError, DocumentError, ...) before anything is
    sent; a file removed by a writer while it is read is left out, as every read does."""
    handle = manager.session(project_id, session_id)
    session = handle.open()
    view = handle.state()
    manifest = session.manifest
    trace_id = trace_id_for(project_id, session_id)
    states = {phase.number: phase for phase in view.phases}

    created = _ns(manifest.created) or 0
    updated = max(_ns(manifest.last_updated) or created, created)
    root = SpanPlan(
        name=f"invoke_workflow {manifest.workflow_type}",
        span_id=span_id_for(project_id, session_id),
        parent_id=None,
        start_ns=created,
        end_ns=updated,
        attributes={
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": manifest.workflow_type,
            "gen_ai.conversation.id": f"{project_id}/{session_id}",
            "openinference.span.kind": "CHAIN",
            "session.id": f"{project_id}/{session_id}",
            "user.id": manifest.user_id,
            "haytham.project.id": project_id,
            "haytham.session.id": session_id,
            "haytham.session.state": view.state,
            "haytham.execution_mode": manifest.execution_mode,
            "gen_ai.usage.input_tokens": 0,
            "gen_ai.usage.output_tokens": 0,
        },
        error="the session failed" if view.state == "failed" else None,
    )
    spans: list[SpanPlan] = []
    inputs = outputs = 0
    for phase in session.phases:
        records: dict[Path, tuple[AgentOutput, str]] = {}

        def read_output(path: Path, records: dict[Path, tuple[AgentOutput, str]] = records) -> str | None:
            """Each output file read once, through the guarded read: its record and digest."""
            try:
                data = read_file(path, AGENT_OUTPUT.max_bytes)
            except FileNotFoundError:  # removed by a writer since it was listed
                return None
            records[path] = (AGENT_OUTPUT.load_data(data, path), hashlib.sha256(data).hexdigest())
            return ""

        if not (session.directory / phase.directory).is_dir():
            continue
        attempts = handle.attempts(phase.number, read_output)
        for attempt in attempts:
            if attempt.checkpoint is None:
                continue
            current = attempt is attempts[-1]
            phase_span = _phase_span(
                (project_id, session_id), attempt, states.get(phase.number) if current else None, root
            )
            spans.append(phase_span)
            for agent in attempt.outputs:
                path = attempt.directory / f"{agent}.md"
                if path not in records:
                    continue
                record, digest = records[path]
                relative = path.relative_to(session.directory).as_posix()
                where = (project_id, session_id, phase.number, attempt.number)
                spans.append(_agent_span(where, record, (relative, digest), phase_span, content))
                inputs += record.input_tokens or 0
                outputs += record.output_tokens or 0
    root_attributes = dict(root.attributes)
    root_attributes["gen_ai.usage.input_tokens"] = inputs
    root_attributes["gen_ai.usage.output_tokens"] = outputs
    root_attributes["gen_ai.usage.cost"] = float(manifest.metrics.total_cost)
    root = dataclasses.replace(root, attributes=root_attributes)
    return TracePlan(project_id, session_id, trace_id, (root, *spans))


def _phase_span(
    ids: tuple[str, str], attempt: Attempt, view: lifecycle.PhaseView | None, root: SpanPlan
) -> SpanPlan:
    """A phase attempt's span: from its checkpoint's start to its completion or, when it was
    reviewed, to the review; the review is its event. An archived attempt's state is what its
    review decided (``sent back``), the current one's the lifecycle's."""
    checkpoint = attempt.checkpoint
    assert checkpoint is not None  # the caller skips an attempt without one
    feedback = attempt.feedback
    reviewed = feedback is not None and feedback.reviewed
    review_ns = _ns(feedback.timestamp) if feedback is not None and reviewed else None
    completed = _ns(checkpoint.completed)
    known = [n for n in (_ns(checkpoint.started), completed, review_ns) if n is not None]
    end = max(known) if known else None
    start_ns, end_ns = _clamp(_ns(checkpoint.started), end, (root.start_ns, root.end_ns))
    if view is not None:
        state: str = view.state
    else:
        state = "sent_back" if lifecycle.verdict(feedback) == "sent_back" else checkpoint.status
    attributes: dict[str, AttributeValue] = {
        "haytham.phase.number": checkpoint.phase_number,
        "haytham.phase.name": checkpoint.phase_name,
        "haytham.phase.attempt": attempt.number,
        "haytham.phase.status": checkpoint.status,
        "haytham.phase.state": state,
        "openinference.span.kind": "CHAIN",
    }
    attributes.update(_usage(checkpoint.input_tokens, checkpoint.output_tokens, checkpoint.cost))
    events: tuple[SpanEvent, ...] = ()
    if feedback is not None and reviewed:
        events = (_review_event(feedback, _clamp(review_ns, review_ns, (start_ns, end_ns))[0]),)
    failed = checkpoint.status == "failed"
    return SpanPlan(
        name=f"phase {checkpoint.phase_number} {checkpoint.phase_name} #{attempt.number}",
        span_id=span_id_for(*ids, checkpoint.phase_number, attempt.number),
        parent_id=root.span_id,
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=events,
        error=("; ".join(checkpoint.errors) or "the phase failed") if failed else None,
    )


# ---------------------------------------------------------------- the SDK and the wire


def _sdk() -> Any:
    """The OpenTelemetry SDK's trace module, or MissingExtraError naming the extra to install."""
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError as error:
        raise MissingExtraError(
            f"exporting to OpenTelemetry needs the otel extra, which is not installed "
            f"(no module {error.name!r}): {EXTRA_HINT}"
        ) from None
    return sdk_trace


def readable_spans(plan: TracePlan) -> list[ReadableSpan]:
    """The plan as the SDK's finished spans, ready for any ``SpanExporter``."""
    sdk_trace = _sdk()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    resource = Resource.create(
        {
            "service.name": "haytham",
            "service.version": __version__,
            "openinference.project.name": plan.project_id,
        }
    )
    scope = InstrumentationScope("haytham.otel", __version__)
    sampled = TraceFlags(TraceFlags.SAMPLED)

    def context(trace_id: int, span_id: int) -> SpanContext:
        return SpanContext(trace_id, span_id, is_remote=False, trace_flags=sampled)

    spans: list[ReadableSpan] = []
    for span in plan.spans:
        status = Status(StatusCode.OK) if span.error is None else Status(StatusCode.ERROR, span.error)
        spans.append(
            sdk_trace.ReadableSpan(
                name=span.name,
                context=context(plan.trace_id, span.span_id),
                parent=None if span.parent_id is None else context(plan.trace_id, span.parent_id),
                resource=resource,
                attributes=dict(span.attributes),
                events=[sdk_trace.Event(e.name, dict(e.attributes), e.time_ns) for e in span.events],
                links=[Link(context(trace, linked)) for trace, linked in span.links],
                kind=SpanKind.INTERNAL,
                status=status,
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=scope,
            )
        )
    return spans


def encode_spans(spans: Sequence[ReadableSpan]) -> bytes:
    """The spans as one OTLP ``ExportTraceServiceRequest`` in protobuf, as OTLP/HTTP sends it."""
    _sdk()
    try:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode
    except ImportError as error:
        raise MissingExtraError(
            f"exporting to OpenTelemetry needs the otel extra (no module {error.name!r}): {EXTRA_HINT}"
        ) from None
    data: bytes = encode(spans).SerializeToString()
    return data


def send_spans(
    spans: Sequence[ReadableSpan],
    endpoint: str = DEFAULT_ENDPOINT,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """POST the spans to an OTLP/HTTP traces endpoint, once, without retrying.

    An endpoint that cannot be reached, or that answers other than 2xx, is a CollectorError
    whose one line names the endpoint and what went wrong (the collector's own words for a 4xx).
    """
    import urllib.error
    import urllib.request

    if not endpoint.startswith(("http://", "https://")):
        raise CollectorError(f"the OTLP endpoint {endpoint!r} is not an http:// or https:// URL")
    body = encode_spans(spans)
    request = urllib.request.Request(endpoint, data=body, method="POST")
    request.add_header("Content-Type", "application/x-protobuf")
    request.add_header("User-Agent", f"haytham/{__version__}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read()
    except urllib.error.HTTPError as error:
        said = _first_line(error.read())
        detail = f": {said}" if said else ""
        raise CollectorError(
            f"the collector at {endpoint} refused the trace: HTTP {error.code} {error.reason}{detail}"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise CollectorError(f"cannot reach the collector at {endpoint}: {reason}") from None


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 200 else line[:199] + "…"


@dataclass(frozen=True)
class OtelExport:
    """What ``export_trace`` sent: the session's trace id and how many spans."""

    trace_id: str
    spans: int
    endpoint: str


def export_trace(
    manager: CheckpointManager,
    project_id: str,
    session_id: str,
    *,
    endpoint: str = DEFAULT_ENDPOINT,
    headers: Mapping[str, str] | None = None,
    content: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> OtelExport:
    """Send a session to an OTLP/HTTP collector as one trace (``plan_trace``, then ``send_spans``).

    The whole session is read first, so a session that does not read sends nothing. Sending
    again sends the same ids: a collector that de-duplicates by span id keeps one copy."""
    plan = plan_trace(manager, project_id, session_id, content=content)
    send_spans(readable_spans(plan), endpoint, headers, timeout=timeout)
    return OtelExport(plan.trace_id_hex, len(plan.spans), endpoint)


def default_endpoint(environ: Mapping[str, str] | None = None) -> str:
    """The endpoint the OpenTelemetry environment names (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
    else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``), else ``DEFAULT_ENDPOINT``."""
    import os

    env = os.environ if environ is None else environ
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + "/v1/traces" if base else DEFAULT_ENDPOINT


def parse_headers(pairs: Iterable[str]) -> dict[str, str]:
    """``K=V`` strings as headers; InvalidArgumentError naming one without ``=`` or a key."""
    headers: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"header {pair!r} is not KEY=VALUE", field="headers")
        headers[key.strip()] = value.strip()
    return headers


def _usage(input_tokens: int | None, output_tokens: int | None, cost: float | None) -> dict[str, Any]:
    """The GenAI usage attributes of a span (an agent's output or a phase's totals): those known."""
    found: dict[str, Any] = {}
    if input_tokens is not None:
        found["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        found["gen_ai.usage.output_tokens"] = output_tokens
    if cost is not None:
        found["gen_ai.usage.cost"] = float(cost)
    return found
