"""examples/retries: a phase that succeeds on its third try after two 429s with
``Retry-After: 2``, and one whose tries run out and that lands in ``haytham review``, run
with an injected clock (the transcript in the README is the same run on the real clock)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_clock import FakeClock

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format.workflow import load_workflow
from haytham.run.runner import PhaseRunner

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "retries"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delitem(sys.modules, "retry_agents", raising=False)


def test_the_example_retries_then_parks_the_phase_for_review(tmp_path: Path, example: None) -> None:
    flow = load_workflow(EXAMPLE / "flow.yaml")
    base = tmp_path / "projects"
    manager = CheckpointManager(base_dir=base)
    manager.create_session("acme", "night", "ada", workflow_type=flow, execution_mode="all")
    clock = FakeClock()
    result = PhaseRunner(manager, flow, clock=clock).run("acme", "night")

    assert (result.status, result.phase) == ("awaiting_review", 2)
    assert clock.waits == [2.0, 2.0, 0.5, 1.0]  # Retry-After twice, then the checker's backoff
    writer = manager.load_agent_output("acme", "night", 1, "writer")
    assert [t.outcome for t in writer.tries] == ["rate_limit", "rate_limit", "completed"]
    checker = manager.load_agent_output("acme", "night", 2, "checker")
    assert checker.status == "failed" and [t.outcome for t in checker.tries] == ["server_error"] * 3

    runner = CliRunner()
    status = runner.invoke(cli, ["status", "acme", "night", "--base-dir", str(base)])
    assert "Tries: phase 1 writer succeeded on try 3 of 5 after 2 rate limits (waited 4 s)" in status.output
    assert (
        "Tries: phase 2 checker failed on try 3 of 3 after 2 server errors (waited 1.5 s): " in status.output
    )
    assert "the tries of checker ran out; run haytham feedback acme night 2 --reject" in status.output
    show = runner.invoke(cli, ["show", "acme", "night", "--phase", "1", "--base-dir", str(base)])
    assert "Tries: succeeded on try 3 of 5 after 2 rate limits (waited 4 s)" in show.output
    review = runner.invoke(
        cli, ["review", "--base-dir", str(base), "--reviewer", "Ada"], env={"EDITOR": "true", "VISUAL": ""}
    )
    assert "[1/1] acme/night phase 2 (Check)" in review.output
    assert "  Tries: phase 2 checker failed on try 3 of 3" in review.output
    listed = runner.invoke(cli, ["list", "--awaiting-review", "--base-dir", str(base)])
    assert "night" in listed.output


def test_the_phase_page_and_the_inbox_show_the_tries(tmp_path: Path, example: None) -> None:
    if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
        pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")
    from web_demo import client_of

    flow = load_workflow(EXAMPLE / "flow.yaml")
    manager = CheckpointManager(base_dir=tmp_path / "projects")
    manager.create_session("acme", "night", "ada", workflow_type=flow, execution_mode="all")
    PhaseRunner(manager, flow, clock=FakeClock()).run("acme", "night")
    with client_of(manager) as client:
        first = client.get("/p/acme/s/night/phase/1").text
        second = client.get("/p/acme/s/night/phase/2").text
        inbox = client.get("/").text
    assert 'id="tries-1-writer">Tries: succeeded on try 3 of 5 after 2 rate limits (waited 4 s)<' in first
    assert 'id="tries-2-checker">Tries: failed on try 3 of 3 after 2 server errors (waited 1.5 s): ' in second
    assert "/p/acme/s/night/phase/2" in inbox
