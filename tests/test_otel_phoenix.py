"""``haytham export --otel`` against a real Arize Phoenix server (issue 29), slow tier.

Phoenix (``arize-phoenix`` from PyPI, the ``phoenix`` extra) lives in a venv of its own,
``.venv-phoenix``, made by ``python3 dev.py phoenix`` (the one step that needs the network;
.ci/run runs it): it is heavy and brings pins and a pytest plugin the test venv must not get.
The server runs from it as a subprocess on a loopback port, its database in a tmp
``PHOENIX_WORKING_DIR``. The test exports the demo session and a session whose phase 1 was
sent back and a session whose agent succeeded on its second try after a rate limit (issue 27's
``## Tries``), each through the command line in a process of its own, reads the spans back with
Phoenix's own client (``phoenix.client.Client``, run in that venv), and checks every span
against the plan haytham made: name, ids, parent, times, attributes, events and status. A second
export of each, then one more session as a marker (Phoenix ingests in order), must add no
span. Last, Chromium (Debian's, through Selenium) opens the trace in Phoenix's UI and takes a
screenshot; with ``HAYTHAM_SCREENSHOTS=DIR`` it is copied to ``DIR/otel-phoenix-trace.png``
(docs/otel.md's image: ``HAYTHAM_SCREENSHOTS=docs/images python3 dev.py test -m slow -n 0
tests/test_otel_phoenix.py``).

Without ``.venv-phoenix`` (or Chromium) the test is skipped, except in CI, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_otel import retried_session

from haytham import CheckpointManager
from haytham.otel import TracePlan, plan_trace
from haytham.run.demo import run_demo

ROOT = Path(__file__).resolve().parent.parent
PHOENIX_PYTHON = ROOT / ".venv-phoenix" / "bin" / "python"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
P = "demo"
WAIT = 240.0
"""Seconds Phoenix may take to start (it migrates its database first) or to ingest a trace."""

_MISSING = [
    what
    for what, there in (
        ("an Arize Phoenix venv (python3 dev.py phoenix)", PHOENIX_PYTHON.exists()),
        (
            "chromium and chromium-driver (apt-get install chromium chromium-driver)",
            CHROMIUM and CHROMEDRIVER,
        ),
    )
    if not there
]
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True, scope="module")
def _phoenix_is_there() -> None:
    """Skip, or in CI fail, when what the test needs is missing. Checked as a test starts,
    not at collection: the default tier collects this module and deselects it (slow), and CI
    builds the Phoenix venv only after that tier."""
    if _MISSING:
        message = f"the Phoenix test needs {' and '.join(_MISSING)}"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Phoenix test: {message}", pytrace=False)
        pytest.skip(message)


READ_SPANS = """
import json, sys
from phoenix.client import Client
spans = Client(base_url=sys.argv[1]).spans.get_spans(project_identifier=sys.argv[2], limit=10000)
print(json.dumps(spans, default=str))
"""
"""Phoenix's own client, in Phoenix's venv: every span of a project, as JSON."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on a loopback port with its database in a tmp dir; its address."""
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    url = f"http://127.0.0.1:{port}"
    with (work / "server.log").open("w") as log:
        process = subprocess.Popen(
            [str(PHOENIX_PYTHON), "-m", "phoenix.server.main", "serve"],
            env=env,
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + WAIT
            while True:
                try:
                    urllib.request.urlopen(f"{url}/healthz", timeout=2).close()
                    break
                except (urllib.error.URLError, ConnectionError):
                    assert process.poll() is None, (work / "server.log").read_text()[-3000:]
                    assert time.monotonic() < deadline, "Phoenix did not start"
                    time.sleep(0.5)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=60)


def export(base: Path, session: str, endpoint: str) -> str:
    """``haytham export P SESSION --otel`` in a process of its own; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "haytham", "export", P, session, "--otel", "--endpoint", endpoint],
        cwd=base.parent,
        env={**os.environ, "HAYTHAM_BASE_DIR": str(base)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def phoenix_spans(url: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(PHOENIX_PYTHON), "-c", READ_SPANS, url, P], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    spans: list[dict[str, Any]] = json.loads(done.stdout)
    return spans


def spans_of(url: str, trace_ids: set[str], count: int) -> list[dict[str, Any]]:
    """The spans of ``trace_ids`` Phoenix holds, once at least ``count`` of them are in (it
    ingests in the background)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = [s for s in phoenix_spans(url) if s["context"]["trace_id"] in trace_ids]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _micros(ns: int) -> str:
    """A span time as Phoenix's client gives it: ISO 8601 in UTC, to the microsecond."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ns // 1000 / 1_000_000, tz=timezone.utc).isoformat()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def check_against_plan(plan: TracePlan, spans: list[dict[str, Any]]) -> None:
    """Every planned span is in Phoenix once, as planned; nothing else is in its trace."""
    got = {s["context"]["span_id"]: s for s in spans if s["context"]["trace_id"] == plan.trace_id_hex}
    assert sorted(got) == sorted(f"{s.span_id:016x}" for s in plan.spans)
    for span in plan.spans:
        found = got[f"{span.span_id:016x}"]
        assert found["name"] == span.name
        parent = None if span.parent_id is None else f"{span.parent_id:016x}"
        assert found["parent_id"] == parent, span.name
        assert (found["start_time"], found["end_time"]) == (_micros(span.start_ns), _micros(span.end_ns))
        planned = dict(span.attributes)
        assert found["span_kind"] == planned.pop("openinference.span.kind")  # Phoenix's own field
        attributes = found["attributes"]
        assert {k: attributes.get(k) for k in planned} == {k: _plain(v) for k, v in planned.items()}, (
            span.name
        )
        events = [(e["name"], e["attributes"]) for e in found["events"]]
        assert events == [(e.name, {k: _plain(v) for k, v in e.attributes.items()}) for e in span.events], (
            span.name
        )
        assert found["status_code"] == ("OK" if span.error is None else "ERROR")


def test_phoenix_shows_the_sessions_as_planned_once_however_often_sent(phoenix: str, tmp_path: Path) -> None:
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "idea-001").status == "completed"
    assert run_demo(manager, "idea-002", review="reject").status == "completed"
    retried_session(base, "retried")
    assert run_demo(manager, "marker").status == "completed"
    endpoint = f"{phoenix}/v1/traces"
    plans = [plan_trace(manager, P, session) for session in ("idea-001", "idea-002", "retried")]
    for plan in plans:
        said = f"as trace {plan.trace_id_hex} ({len(plan.spans)} spans)"
        assert (
            export(base, plan.session_id, endpoint)
            == f"Exported {P}/{plan.session_id} to {endpoint} {said}\n"
        )
    traces = {plan.trace_id_hex for plan in plans}
    total = sum(len(plan.spans) for plan in plans)
    first = spans_of(phoenix, traces, total)
    for plan in plans:
        check_against_plan(plan, first)
    sent_back = next(s for s in first if s["name"] == "phase 1 Concept Expansion #1" and s["events"])
    assert sent_back["events"][0]["attributes"]["gen_ai.evaluation.score.label"] == "changes_requested"
    assert sent_back["attributes"]["haytham.phase.state"] == "sent_back"
    retried = next(s for s in first if s["context"]["trace_id"] == plans[2].trace_id_hex and s["events"])
    assert [e["attributes"]["haytham.try.outcome"] for e in retried["events"]] == ["rate_limit", "completed"]

    # again: the same ids; once the marker session sent after them is in, nothing was added
    for plan in plans:
        export(base, plan.session_id, endpoint)
    marker = plan_trace(manager, P, "marker")
    export(base, "marker", endpoint)
    spans_of(phoenix, {marker.trace_id_hex}, len(marker.spans))
    again = spans_of(phoenix, traces, total)
    assert len(again) == total
    for plan in plans:
        check_against_plan(plan, again)

    screenshot_trace(phoenix, plans[1], tmp_path)


def screenshot_trace(phoenix: str, plan: TracePlan, tmp_path: Path) -> None:
    """The send-back session's trace in Phoenix's UI, in Chromium: its spans are listed."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--window-size=1600,1000",
        f"--user-data-dir={tmp_path / 'chrome-profile'}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        driver.get(f"{phoenix}/redirects/traces/{plan.trace_id_hex}")

        def shown(d: Any) -> bool:
            text = d.find_element(By.TAG_NAME, "body").text
            return "invoke_workflow idea_validation" in text and "invoke_agent synthesizer" in text

        def body(d: Any) -> str:
            return str(d.find_element(By.TAG_NAME, "body").text)

        WebDriverWait(driver, 60, poll_frequency=0.5).until(shown)
        for span in plan.spans[1:]:  # the tree lists every span of the trace
            assert span.name in body(driver), span.name
        # the attempt sent back, its Events tab, its review opened: the reviewer's words
        driver.find_element(By.XPATH, "//*[normalize-space(text())='phase 1 Concept Expansion #1']").click()
        WebDriverWait(driver, 30, poll_frequency=0.5).until(
            lambda d: d.find_elements(By.XPATH, "//*[@role='tab'][starts-with(normalize-space(.), 'Events')]")
        )
        driver.find_element(By.XPATH, "//*[@role='tab'][starts-with(normalize-space(.), 'Events')]").click()
        WebDriverWait(driver, 30, poll_frequency=0.5).until(lambda d: "gen_ai.evaluation.result" in body(d))
        driver.find_element(By.XPATH, "//*[normalize-space(text())='gen_ai.evaluation.result']").click()
        WebDriverWait(driver, 30, poll_frequency=0.5).until(
            lambda d: "changes_requested" in body(d) and "Name the paying customer" in body(d)
        )
        path = tmp_path / "otel-phoenix-trace.png"
        assert driver.save_screenshot(str(path)), path
    finally:
        driver.quit()
    copy_to = os.environ.get("HAYTHAM_SCREENSHOTS")
    if copy_to:
        shutil.copyfile(path, Path(copy_to) / "otel-phoenix-trace.png")
