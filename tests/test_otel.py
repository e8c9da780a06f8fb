"""A session as an OpenTelemetry trace (issue 29), checked without a collector: the span tree
through the SDK's own ``InMemorySpanExporter``, what reaches a real HTTP receiver on a
loopback port (decoded with OTLP's own protobuf classes), the one-line errors for a collector
that cannot be reached or refuses, and for a session that does not read, the ``otel:`` keys of
haytham.yaml and the phase page's link to an output's trace. tests/test_otel_phoenix.py (slow
tier) sends the same traces to a real Arize Phoenix server and reads them back."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from haytham import CheckpointManager, CollectorError, DocumentError
from haytham.cli.main import cli
from haytham.config import load_config
from haytham.otel import (
    OtelConfig,
    agent_trace_link,
    default_endpoint,
    export_trace,
    parse_headers,
    plan_trace,
    readable_spans,
    span_id_for,
    trace_id_for,
    traceparent_for,
)
from haytham.records import AgentOutput, AgentTry
from haytham.run.demo import run_demo
from haytham.store.clock import format_timestamp, parse_timestamp

P, S = "demo", "idea-001"
ROOT = Path(__file__).resolve().parent.parent


def sent_back_session(base: Path) -> CheckpointManager:
    """The demo session, its phase 1 sent back once with comments, then approved, to the end."""
    manager = CheckpointManager(base)
    assert run_demo(manager, S, review="reject").status == "completed"
    return manager


def retried_session(base: Path, session: str = "retried") -> CheckpointManager:
    """A session whose phase 1 agent succeeded on its second try after a rate limit, on record
    as the runner writes it (``## Tries``, issue 27), its times those of the files."""
    manager = CheckpointManager(base)
    manager.create_session(P, session, "ada", execution_mode="mvp")
    now = datetime.now(timezone.utc)

    def at(seconds: float) -> str:
        return format_timestamp(now + timedelta(seconds=seconds))

    tries = [
        AgentTry(1, at(-2.5), at(-2.4), "rate_limit", 2.0, "RateLimitError", "429 Too Many Requests"),
        AgentTry(2, at(-0.4), at(-0.1), "completed"),
    ]
    manager.save_agent_output(P, session, 1, "concept_expansion", "# Concept\n", duration=0.2, tries=tries)
    manager.save_checkpoint(P, session, 1, "completed", [{"agent_name": "concept_expansion"}])
    return manager


def exported(manager: CheckpointManager, **options: Any) -> list[ReadableSpan]:
    """The session's spans as the SDK's in-memory exporter holds them after an export."""
    exporter = InMemorySpanExporter()
    exporter.export(readable_spans(plan_trace(manager, P, S, **options)))
    return list(exporter.get_finished_spans())


def by_name(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    """The spans whose name no other span has, by name (an agent of a phase sent back has a
    span in each attempt)."""
    names = [span.name for span in spans]
    return {span.name: span for span in spans if names.count(span.name) == 1}


def test_the_span_tree_of_a_session_with_a_send_back(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path)
    spans = exported(manager)
    named = by_name(spans)
    root = named["invoke_workflow idea_validation"]
    phases = [s for s in spans if s.name.startswith("phase ")]
    agents = [s for s in spans if s.name.startswith("invoke_agent ")]
    assert [s.name for s in phases] == [
        "phase 1 Concept Expansion #1",
        "phase 1 Concept Expansion #2",
        "phase 2 Market Research #1",
        "phase 3 Niche Selection #1",
        "phase 6 Validation #1",
        "phase 7 Final Synthesis #1",
    ]
    assert len(spans) == 1 + len(phases) + len(agents) == 14
    # one trace; the root has no parent, each phase's parent is the root, each agent's its phase
    assert {s.context.trace_id for s in spans} == {trace_id_for(P, S)}
    assert root.parent is None
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in phases)
    first, second = named["phase 1 Concept Expansion #1"], named["phase 1 Concept Expansion #2"]
    concept = [s for s in agents if s.name == "invoke_agent concept_expansion"]
    assert sorted(cast(Any, s.parent).span_id for s in concept) == sorted(
        [first.context.span_id, second.context.span_id]
    )
    market = [
        s
        for s in agents
        if cast(Any, s.parent).span_id == named["phase 2 Market Research #1"].context.span_id
    ]
    assert sorted(s.name for s in market) == [
        "invoke_agent competitor_analysis",
        "invoke_agent market_intelligence",
    ]

    assert dict(root.attributes or {}) | {} == {
        **dict(root.attributes or {}),
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "idea_validation",
        "gen_ai.conversation.id": f"{P}/{S}",
        "session.id": f"{P}/{S}",
        "user.id": "demo-user",
        "haytham.session.state": "completed",
    }
    agent_tokens = sum(cast(int, (s.attributes or {})["gen_ai.usage.input_tokens"]) for s in agents)
    assert (root.attributes or {})["gen_ai.usage.input_tokens"] == agent_tokens > 0

    # the attempt sent back carries its review and says so; the second its approval
    assert (first.attributes or {})["haytham.phase.state"] == "sent_back"
    assert (second.attributes or {})["haytham.phase.state"] == "approved"
    (review,) = first.events
    assert review.name == "gen_ai.evaluation.result"
    assert dict(review.attributes or {}) == {
        "gen_ai.evaluation.name": "human_review",
        "gen_ai.evaluation.score.label": "changes_requested",
        "gen_ai.evaluation.explanation": "Good start. Be concrete about who pays.",
        "haytham.review.action": "retry",
        "haytham.review.requested_changes": ("Name the paying customer",),
    }
    (approval,) = second.events
    assert (approval.attributes or {})["gen_ai.evaluation.score.label"] == "approved"

    # an agent span: the model, tokens, cost, status and the file it stands for, never its text
    writer = manager.session(P, S).agent_output(1, "concept_expansion")
    current = next(s for s in concept if cast(Any, s.parent).span_id == second.context.span_id)
    path = manager.session_dir(P, S) / "phase_1_concept" / "concept_expansion.md"
    assert dict(current.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "concept_expansion",
        "gen_ai.request.model": "demo-local-1",
        "gen_ai.usage.input_tokens": writer.input_tokens,
        "gen_ai.usage.output_tokens": writer.output_tokens,
        "gen_ai.usage.cost": writer.cost,
        "openinference.span.kind": "AGENT",
        "haytham.agent.status": "completed",
        "haytham.agent.duration_seconds": 1.0,
        "haytham.agent.tools": ("notes",),
        "haytham.output.path": "phase_1_concept/concept_expansion.md",
        "haytham.output.sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    archived = next(s for s in concept if s is not current)
    assert (archived.attributes or {})[
        "haytham.output.path"
    ] == "phase_1_concept/attempts/1/concept_expansion.md"
    assert all(s.status.status_code is StatusCode.OK for s in spans)


def test_every_child_lies_within_its_parent_and_times_are_the_files(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path)
    spans = exported(manager)
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        start, end = cast(int, span.start_time), cast(int, span.end_time)
        assert start <= end
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert cast(int, parent.start_time) <= start and end <= cast(int, parent.end_time), span.name
        for event in span.events:
            assert start <= event.timestamp <= end, (span.name, event.name)
    # the demo's agents say they took 1.0 s, longer than their phase: clamped to the phase
    manifest = manager.session(P, S).manifest()
    root = next(s for s in spans if s.parent is None)
    assert root.start_time == int(parse_timestamp(manifest.created).timestamp() * 1_000_000) * 1000
    checkpoint = manager.session(P, S).checkpoint(2)
    phase = next(s for s in spans if s.name == "phase 2 Market Research #1")
    assert (
        phase.start_time == int(parse_timestamp(cast(str, checkpoint.started)).timestamp() * 1_000_000) * 1000
    )


def test_exporting_twice_gives_the_same_ids_and_another_session_other_ids(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path)
    once = [(s.name, s.context.trace_id, s.context.span_id) for s in exported(manager)]
    again = [(s.name, s.context.trace_id, s.context.span_id) for s in exported(manager)]
    assert once == again
    assert len({span_id for _, _, span_id in once}) == len(once)
    assert trace_id_for(P, S) != trace_id_for(P, "other") and span_id_for(P, S) != span_id_for(P, "other")
    trace, span = f"{trace_id_for(P, S):032x}", f"{span_id_for(P, S, 1, 2, 'concept_expansion'):016x}"
    assert traceparent_for(P, S, 1, 2, "concept_expansion") == f"00-{trace}-{span}-01"
    # the runner's AgentContext.traceparent (issue 27) derives the same ids, by this rule
    assert trace == hashlib.sha256(f"trace\0{P}\0{S}".encode()).hexdigest()[:32]
    assert span == hashlib.sha256(f"span\0{P}\0{S}\0{1}\0{2}\0concept_expansion".encode()).hexdigest()[:16]
    assert (trace, span) in {(f"{t:032x}", f"{s:016x}") for _, t, s in once}


def test_content_only_when_asked(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path)
    plain = by_name(exported(manager))["invoke_agent synthesizer"]
    assert "gen_ai.output.messages" not in (plain.attributes or {})
    full = by_name(exported(manager, content=True))["invoke_agent synthesizer"]
    messages = json.loads(cast(str, (full.attributes or {})["gen_ai.output.messages"]))
    text = manager.session(P, S).agent_output(7, "synthesizer").content
    assert messages == [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}
    ]


def test_a_failed_agent_and_an_unreviewed_phase(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.create_session(P, S, "ada", execution_mode="mvp")
    manager.save_agent_output(
        P, S, 1, "concept_expansion", "", status="failed", error_type="RateLimitError", error_message="429"
    )
    manager.save_checkpoint(
        P, S, 1, "failed", [{"agent_name": "concept_expansion"}], errors=["429 from the API"]
    )
    spans = by_name(exported(manager))
    agent, phase = spans["invoke_agent concept_expansion"], spans["phase 1 Concept Expansion #1"]
    assert agent.status.status_code is StatusCode.ERROR and agent.status.description == "429"
    assert (agent.attributes or {})["error.type"] == "RateLimitError"
    assert phase.status.status_code is StatusCode.ERROR and phase.status.description == "429 from the API"
    assert phase.events == ()
    assert (spans["invoke_workflow idea_validation"].attributes or {})["user.id"] == "ada"


def test_each_try_is_an_event_of_its_agent(tmp_path: Path) -> None:
    manager = retried_session(tmp_path, S)
    spans = by_name(exported(manager))
    agent = spans["invoke_agent concept_expansion"]
    output = manager.session(P, S).agent_output(1, "concept_expansion")
    assert (agent.attributes or {})["haytham.agent.tries"] == 2
    assert [(e.name, dict(e.attributes or {})) for e in agent.events] == [
        (
            "haytham.agent.try",
            {
                "haytham.try.number": 1,
                "haytham.try.outcome": "rate_limit",
                "haytham.try.started": output.tries[0].started,
                "haytham.try.ended": output.tries[0].ended,
                "error.type": "RateLimitError",
                "haytham.try.error_message": "429 Too Many Requests",
                "haytham.try.wait_seconds": 2.0,
            },
        ),
        (
            "haytham.agent.try",
            {
                "haytham.try.number": 2,
                "haytham.try.outcome": "completed",
                "haytham.try.started": output.tries[1].started,
                "haytham.try.ended": output.tries[1].ended,
            },
        ),
    ]
    # the span starts with the first try, not with the last try's duration; events within it
    phase = spans["phase 1 Concept Expansion #1"]
    first_try = int(parse_timestamp(output.tries[0].started).timestamp() * 1_000_000) * 1000
    assert cast(int, agent.start_time) == max(first_try, cast(int, phase.start_time))
    assert all(cast(int, agent.start_time) <= e.timestamp <= cast(int, agent.end_time) for e in agent.events)


def test_an_agents_own_trace_id_becomes_a_link(tmp_path: Path) -> None:
    """The trace id the runner records in an output's metadata (issue 27) becomes a span link."""
    own = "4bf92f3577b34da6a3ce929d0e0e4736"
    manager = CheckpointManager(tmp_path)
    manager.create_session(P, S, "u")

    def output(trace_id: str | None) -> AgentOutput:
        manager.save_agent_output(P, S, 1, "writer", "text", trace_id=trace_id)
        return manager.load_agent_output(P, S, 1, "writer")

    assert agent_trace_link(output(f"00-{own}-00f067aa0ba902b7-01")) == (int(own, 16), 0x00F067AA0BA902B7)
    assert agent_trace_link(output(own)) == (int(own, 16), int(own[16:], 16))
    assert agent_trace_link(output("run-123")) is None
    assert agent_trace_link(output(None)) is None
    assert agent_trace_link(output("0" * 32)) is None


# ------------------------------------------------------------ over the wire


class Collector:
    """An OTLP/HTTP receiver on a loopback port: keeps each request, answers ``status``."""

    def __init__(self, status: int = 200, body: bytes = b"") -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        requests, answer = self.requests, (status, body)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers["Content-Length"]))
                requests.append(({k.lower(): v for k, v in self.headers.items()}, data))
                self.send_response(answer[0])
                self.send_header("Content-Length", str(len(answer[1])))
                self.end_headers()
                self.wfile.write(answer[1])

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self, index: int = -1) -> list[Any]:
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.requests[index][1])
        return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    yield found
    found.close()


def test_export_trace_posts_one_otlp_request(tmp_path: Path, collector: Collector) -> None:
    manager = sent_back_session(tmp_path)
    sent = export_trace(manager, P, S, endpoint=collector.url, headers={"authorization": "Bearer k"})
    assert (sent.trace_id, sent.spans) == (f"{trace_id_for(P, S):032x}", 14)
    ((headers, _),) = collector.requests
    assert headers["content-type"] == "application/x-protobuf" and headers["authorization"] == "Bearer k"
    spans = collector.spans()
    assert len(spans) == 14 and {s.trace_id.hex() for s in spans} == {sent.trace_id}
    request = ExportTraceServiceRequest()
    request.ParseFromString(collector.requests[0][1])
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "haytham" and resource["openinference.project.name"] == P


def test_the_command_line_sends_and_says_where(tmp_path: Path, collector: Collector) -> None:
    manager = sent_back_session(tmp_path / "projects")
    base = str(manager.base_dir)
    done = CliRunner().invoke(
        cli,
        ["export", P, S, "--otel", "--endpoint", collector.url, "--headers", "x-key=v", "--base-dir", base],
    )
    assert done.exit_code == 0, done.output
    trace = f"{trace_id_for(P, S):032x}"
    assert done.output == f"Exported {P}/{S} to {collector.url} as trace {trace} (14 spans)\n"
    assert collector.requests[0][0]["x-key"] == "v"
    again = CliRunner().invoke(
        cli, ["export", P, S, "--otel", "--endpoint", collector.url, "--base-dir", base]
    )
    assert again.exit_code == 0
    assert [s.span_id for s in collector.spans(0)] == [s.span_id for s in collector.spans(1)]
    misuse = CliRunner().invoke(cli, ["export", P, S, "--content", "--base-dir", base])
    assert misuse.exit_code == 2 and "--content is an option of --otel" in misuse.output


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_collector_is_one_line(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path / "projects")
    url = f"http://127.0.0.1:{_closed_port()}/v1/traces"
    with pytest.raises(CollectorError, match=f"cannot reach the collector at {url}: .*refused"):
        export_trace(manager, P, S, endpoint=url)
    done = subprocess.run(
        [sys.executable, "-m", "haytham", "export", P, S, "--otel", "--endpoint", url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot reach the collector at {url}: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_collector_that_refuses_says_why(tmp_path: Path) -> None:
    manager = sent_back_session(tmp_path)
    refusing = Collector(401, b"missing API key\nmore detail")
    try:
        with pytest.raises(CollectorError) as caught:
            export_trace(manager, P, S, endpoint=refusing.url)
    finally:
        refusing.close()
    assert str(caught.value) == (
        f"the collector at {refusing.url} refused the trace: HTTP 401 Unauthorized: missing API key"
    )


def test_a_session_that_does_not_read_sends_nothing(tmp_path: Path, collector: Collector) -> None:
    manager = sent_back_session(tmp_path)
    checkpoint = manager.session_dir(P, S) / "phase_2_market_research" / "checkpoint.md"
    checkpoint.write_text(checkpoint.read_text().replace("- Status: completed", "- Status: wobbly"))
    with pytest.raises(DocumentError, match=r"checkpoint\.md:\d+"):
        export_trace(manager, P, S, endpoint=collector.url)
    checkpoint.write_text(checkpoint.read_text().replace("- Status: wobbly", "- Status: completed"))
    output = manager.session_dir(P, S) / "phase_1_concept" / "attempts" / "1" / "concept_expansion.md"
    output.write_text(output.read_text().replace("- Input Tokens: 400", "- Input Tokens: many"))
    with pytest.raises(DocumentError, match=r"attempts/1/concept_expansion\.md:\d+"):
        export_trace(manager, P, S, endpoint=collector.url)
    assert collector.requests == []


# ------------------------------------------------------------ haytham.yaml and the page


def test_the_otel_keys_of_haytham_yaml(tmp_path: Path) -> None:
    config = tmp_path / "haytham.yaml"
    config.write_text(
        "otel:\n  endpoint: http://127.0.0.1:6006/v1/traces\n  headers: {api_key: k}\n"
        "  trace_url: http://127.0.0.1:6006/redirects/spans/{span_id}\n"
    )
    otel = load_config(config).otel
    assert otel == OtelConfig(
        "http://127.0.0.1:6006/v1/traces", {"api_key": "k"}, otel.trace_url if otel else None
    )
    assert otel is not None
    span = f"{span_id_for(P, S, 1, 2, 'writer'):016x}"
    assert otel.agent_trace_url(P, S, 1, 2, "writer") == f"http://127.0.0.1:6006/redirects/spans/{span}"
    config.write_text("otel:\n  endpoint: http://x/v1/traces\n  trace_url: http://h/{trace}\n")
    with pytest.raises(DocumentError) as caught:
        load_config(config)
    assert (caught.value.line, caught.value.field) == (3, "otel.trace_url")
    assert "{trace}" in str(caught.value)


def test_endpoint_and_headers_from_the_environment_and_the_options() -> None:
    assert default_endpoint({}) == "http://localhost:4318/v1/traces"
    assert default_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    traces = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x",
    }
    assert default_endpoint(traces) == "http://t/x"
    assert parse_headers(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="'nokey' is not KEY=VALUE"):
        parse_headers(["nokey"])


def test_the_phase_page_links_each_output_to_its_trace(tmp_path: Path) -> None:
    from web_demo import client_of

    manager = sent_back_session(tmp_path)
    otel = OtelConfig(trace_url="http://127.0.0.1:6006/redirects/spans/{span_id}")
    with client_of(manager, otel=otel) as client:
        page = client.get(f"/p/{P}/s/{S}/phase/1").text
    span = f"{span_id_for(P, S, 1, 2, 'concept_expansion'):016x}"
    assert f'id="trace-1-concept_expansion" href="http://127.0.0.1:6006/redirects/spans/{span}"' in page
    with client_of(manager) as client:
        assert 'class="trace-link"' not in client.get(f"/p/{P}/s/{S}/phase/1").text


def test_the_core_does_not_import_the_sdk() -> None:
    """haytham.otel plans a trace without the extra: the SDK is imported to make spans only."""
    probe = (
        "import sys, haytham.otel, haytham.cli.history\n"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "False"


def test_the_documented_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: Collector
) -> None:
    """docs/otel.md's Python example, run as written against this test's collector, and its
    haytham.yaml example, read as haytham reads it."""
    text = (ROOT / "docs" / "otel.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert example.count("http://localhost:6006/v1/traces") == 1
    run_demo(CheckpointManager(tmp_path / "projects"), S)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    code = example.replace("http://localhost:6006/v1/traces", collector.url)
    exec(compile(code, "docs/otel.md", "exec"), namespace)
    assert namespace["sent"].spans == len(namespace["spans"]) == len(collector.spans()) == 12
    yaml_example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "haytham.yaml").write_text(yaml_example)
    otel = load_config(tmp_path / "haytham.yaml").otel
    assert otel is not None and otel.headers == {"authorization": "Bearer my-key"}
    assert otel.agent_trace_url(P, S, 1, 1, "a") == (
        f"http://localhost:6006/redirects/spans/{span_id_for(P, S, 1, 1, 'a'):016x}"
    )


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    """A Python where the SDK cannot be imported (as without ``haytham[otel]``): one line
    naming the extra, exit code 1, nothing sent."""
    sent_back_session(tmp_path / "projects")
    probe = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None  # what an interpreter without the extra finds\n"
        "from haytham.cli.main import main\n"
        "sys.argv = ['haytham', 'export', 'demo', 'idea-001', '--otel', '--endpoint', 'http://127.0.0.1:9/v1/traces']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr == (
        "Error: exporting to OpenTelemetry needs the otel extra, which is not installed "
        "(no module 'opentelemetry.sdk'): pip install 'haytham[otel]'\n"
    )
