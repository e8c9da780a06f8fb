"""Side effects run once or are flagged; idempotency keys and trace context (issue 27).

The crash test kills a real runner process (SIGKILL) while an agent with side effects runs:
the next resume holds the phase for a person instead of running the agent again, and each
of the person's decisions (run it again, accept a hand-written output, send the phase back)
is then followed and recorded.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import CheckpointManager, InvalidArgumentError
from haytham.cli.main import cli
from haytham.format.budget import read_budget, write_budget
from haytham.format.layout import ATTEMPTS_DIR
from haytham.format.policy import Budget
from haytham.format.workflow import PhaseDefinition, Workflow, load_workflow
from haytham.run import effects
from haytham.run.runner import AgentContext, AgentResult, PhaseRunner

P, S = "acme", "outreach-1"
ROOT = Path(__file__).resolve().parent.parent

AGENTS_MODULE = """
import os
import sys
from pathlib import Path

from haytham.run.runner import AgentResult

CALLS = Path(__file__).with_name("calls.log")


def _call(context, text):
    with CALLS.open("a", encoding="utf-8") as log:
        log.write(f"{context.phase.number}:{context.agent_name}:{context.attempt}:{context.idempotency_key}\\n")
    if os.environ.get("FX_BLOCK") == context.agent_name:
        print("STARTED", context.idempotency_key, flush=True)
        sys.stdin.read()  # blocks until the test kills this process
    trace = f"run-{context.agent_name}"
    return AgentResult(text, input_tokens=100, output_tokens=20, cost=0.01, trace_id=trace)


def draft(context):
    return _call(context, "the draft")


def notify(context):
    return _call(context, "notified the team")


def send(context):
    return _call(context, f"sent the mail, key {context.idempotency_key}")
"""

WORKFLOW = """\
name: outreach
modes:
  all: [1, 2]
phases:
  - {number: 1, name: Draft, agents: [draft]}
  - {number: 2, name: Send, agents: [notify, send], run_style: sequential}
agents:
  draft: fx_agents:draft
  notify: fx_agents:notify
  send: {call: fx_agents:send, side_effects: SIDE_EFFECTS}
"""

WORKER = """
import sys
from pathlib import Path
from haytham import CheckpointManager
from haytham.format.workflow import load_workflow
from haytham.run.runner import PhaseRunner
base = Path(sys.argv[1])
manager = CheckpointManager(base / "projects")
workflow = load_workflow(base / "outreach.yaml")
manager.create_session("acme", "outreach-1", "ann", workflow, "all")
PhaseRunner(manager, workflow).run("acme", "outreach-1")
"""


def _project(tmp_path: Path, side_effects: bool, monkeypatch: pytest.MonkeyPatch | None = None) -> Path:
    """The agents module and the workflow in ``tmp_path``; with ``monkeypatch``, also the
    current directory and import path for ``haytham resume``, with the module imported anew
    (an earlier test's would log to its own folder)."""
    if monkeypatch is not None:
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "fx_agents", raising=False)
    (tmp_path / "fx_agents.py").write_text(AGENTS_MODULE, encoding="utf-8")
    (tmp_path / "outreach.yaml").write_text(
        WORKFLOW.replace("SIDE_EFFECTS", "true" if side_effects else "false"), encoding="utf-8"
    )
    return tmp_path


def _killed_while(tmp_path: Path, agent: str) -> None:
    """Run the session in a real process until ``agent`` is called, then SIGKILL it."""
    env = {**os.environ, "FX_BLOCK": agent, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the agent says it started: the kill lands inside it
    assert line.startswith("STARTED haytham-"), (line, process.stderr.read() if process.stderr else "")
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [":".join(line.split(":")[:3]) for line in lines]


def _cli(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(tmp_path / "projects")])
    assert "Traceback" not in result.output, result.output
    return result.output


@pytest.fixture
def crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A session whose runner was killed while the side-effect agent ``send`` ran."""
    _project(tmp_path, side_effects=True, monkeypatch=monkeypatch)
    _killed_while(tmp_path, "send")
    assert _calls(tmp_path) == ["1:draft:1", "2:notify:1", "2:send:1"]
    return tmp_path


def test_the_killed_side_effect_agent_is_held_for_a_person_not_run_again(crashed: Path) -> None:
    manager = CheckpointManager(crashed / "projects")
    checkpoint = manager.load_checkpoints(P, S)[2]
    assert [(run.agent_name, run.status) for run in checkpoint.agents] == [
        ("notify", "completed"),
        ("send", "in_progress"),  # recorded as started, durably, before it was called
    ]
    # Before any resume, as soon as the runner is gone, status says what the crash left unknown.
    before = _cli(crashed, "status", P, S)
    assert "phase 2 (Send) was interrupted (send may have run (started, never completed))" in before

    output = _cli(crashed, "resume", P, S)
    assert "phase 2 awaits review" in output
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1"]  # not run again
    held = manager.load_checkpoints(P, S)[2]
    reason = "send may have run: it started and never completed, and it has side effects"
    assert held.held == (reason,)
    assert manager.state(P, S).current is not None
    assert manager.state(P, S).current.describe() == f"awaiting review ({reason})"  # type: ignore[union-attr]
    placeholder = manager.load_agent_output(P, S, 2, "send")
    assert (placeholder.status, placeholder.error_type) == ("failed", effects.PLACEHOLDER_ERROR)
    assert f"awaiting review ({reason})" in _cli(crashed, "status", P, S)
    assert (
        reason in (crashed / "projects" / P / "sessions" / S / "phase_2_send" / "checkpoint.md").read_text()
    )

    # Resuming again without a decision still does not run it.
    assert "phase 2 awaits review" in _cli(crashed, "resume", P, S)
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1"]


def test_an_approval_runs_the_held_agent_again_and_keeps_the_others(crashed: Path) -> None:
    manager = CheckpointManager(crashed / "projects")
    _cli(crashed, "resume", P, S)
    output = _cli(crashed, "feedback", P, S, "2", "--approve", "--reviewer", "Ann <ann@example.com>")
    assert "Traceback" not in output
    result = _cli(crashed, "resume", P, S)
    assert "completed" in result, result
    # notify completed before the crash: carried into the next attempt, not called again
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1", "2:send:2"]
    send = manager.load_agent_output(P, S, 2, "send")
    assert send.status == "completed" and send.content.startswith("sent the mail")
    assert manager.load_agent_output(P, S, 2, "notify").content == "notified the team"
    attempts = manager.load_attempts(P, S, 2)
    assert [a.number for a in attempts] == [1, 2]
    first = attempts[0]
    assert first.checkpoint is not None and first.checkpoint.held
    assert first.feedback is not None and first.feedback.approved
    assert first.feedback.reviewer == "Ann <ann@example.com>"  # the decision, recorded
    assert (crashed / "projects" / P / "sessions" / S / "phase_2_send" / ATTEMPTS_DIR / "1").is_dir()
    assert manager.load_checkpoints(P, S)[2].held == ()


def test_a_hand_written_output_is_accepted_instead_of_running_the_agent(crashed: Path) -> None:
    manager = CheckpointManager(crashed / "projects")
    _cli(crashed, "resume", P, S)
    manager.correct_output(P, S, 2, "send", "the mail went out at 06:10 (checked by hand)", approve=True)
    assert "completed" in _cli(crashed, "resume", P, S)
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1"]  # never run again
    send = manager.load_agent_output(P, S, 2, "send")
    assert (send.status, send.content) == ("completed", "the mail went out at 06:10 (checked by hand)")
    assert send.corrected is not None and send.error_type is None
    archived = manager.load_attempts(P, S, 2)[0].feedback
    assert archived is not None and archived.action == "modified" and archived.approved


def test_sending_the_held_phase_back_runs_a_new_attempt_of_it(crashed: Path) -> None:
    manager = CheckpointManager(crashed / "projects")
    _cli(crashed, "resume", P, S)
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=False, comments="run it all again")
    assert "completed" in _cli(crashed, "resume", P, S)
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1", "2:notify:2", "2:send:2"]


def test_an_agent_without_side_effects_simply_runs_again_with_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, side_effects=False, monkeypatch=monkeypatch)
    _killed_while(tmp_path, "send")
    assert "completed" in _cli(tmp_path, "resume", P, S)
    assert _calls(tmp_path) == ["1:draft:1", "2:notify:1", "2:send:1", "2:send:1"]
    manager = CheckpointManager(tmp_path / "projects")
    reasons = [entry.reason for entry in manager.history(P, S, phase=2)]
    assert "send may have run (started, never completed): running again" in reasons


# ------------------------------------------------------------------ started records


def _workflow(run_style: str) -> Workflow:
    phase = PhaseDefinition(1, "Work", "phase_1_work", ("a", "b", "c"), run_style)  # type: ignore[arg-type]
    return Workflow("work", (phase,), {"all": (1,)})


@pytest.mark.parametrize("run_style", ["sequential", "parallel"])
def test_every_agent_is_recorded_as_started_before_it_is_called(tmp_path: Path, run_style: str) -> None:
    manager = CheckpointManager(tmp_path)
    workflow = _workflow(run_style)
    manager.create_session(P, S, "ann", workflow, "all")
    seen: dict[str, dict[str, str]] = {}

    def agent(context: AgentContext) -> str:
        checkpoint = manager.load_checkpoints(P, S)[1]  # the file, as any reader sees it
        seen[context.agent_name] = {run.agent_name: run.status for run in checkpoint.agents}
        return context.agent_name

    assert (
        PhaseRunner(manager, workflow, {"a": agent, "b": agent, "c": agent}).run(P, S).status == "completed"
    )
    assert all(rows[name] == "in_progress" for name, rows in seen.items())
    if run_style == "sequential":
        assert seen["c"] == {"a": "completed", "b": "completed", "c": "in_progress"}
    final = manager.load_checkpoints(P, S)[1]
    assert {run.status for run in final.agents} == {"completed"}


def test_async_agents_get_the_same_keys_and_trace_context(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    workflow = _workflow("parallel")
    manager.create_session(P, S, "ann", workflow, "all")

    async def agent(context: AgentContext) -> AgentResult:
        return AgentResult(
            f"{context.idempotency_key} {context.traceparent}", trace_id=f"t-{context.agent_name}"
        )

    PhaseRunner(manager, workflow, {"a": agent, "b": agent, "c": agent}).run(P, S)
    for name in ("a", "b", "c"):
        output = manager.load_agent_output(P, S, 1, name)
        key = effects.idempotency_key(P, S, 1, 1, name, 1)
        assert output.content == f"{key} {effects.traceparent(P, S, 1, 1, name)}"
        assert output.trace_id == f"t-{name}"
        assert (
            f"- Trace ID: t-{name}\n"
            in (tmp_path / P / "sessions" / S / "phase_1_work" / f"{name}.md").read_text()
        )


# ------------------------------------------------------------------ keys and trace context

TRACEPARENT = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-01")


def test_the_idempotency_key_is_stable_and_differs_in_every_part() -> None:
    key = effects.idempotency_key("acme", "s1", 2, 1, "send", 1)
    assert key == effects.idempotency_key("acme", "s1", 2, 1, "send", 1)
    assert re.fullmatch(r"haytham-[0-9a-f]{32}", key)
    others = [
        effects.idempotency_key("acme2", "s1", 2, 1, "send", 1),
        effects.idempotency_key("acme", "s2", 2, 1, "send", 1),
        effects.idempotency_key("acme", "s1", 3, 1, "send", 1),
        effects.idempotency_key("acme", "s1", 2, 2, "send", 1),
        effects.idempotency_key("acme", "s1", 2, 1, "notify", 1),
        effects.idempotency_key("acme", "s1", 2, 1, "send", 2),
        effects.idempotency_key("acme", "s12", 2, 1, "send", 1),
    ]
    assert len({key, *others}) == 8
    # a fixed value: the key must not change between haytham versions (an API remembers it)
    assert key == "haytham-" + __import__("hashlib").sha256(b"acme\0s1\x002\x001\0send\x001").hexdigest()[:32]


def test_the_traceparent_is_valid_w3c_one_trace_per_session_one_span_per_agent_run() -> None:
    parent = effects.traceparent("acme", "s1", 2, 1, "send")
    assert TRACEPARENT.fullmatch(parent)
    assert parent == effects.traceparent("acme", "s1", 2, 1, "send")
    trace = parent.split("-")[1]
    spans = {
        effects.traceparent("acme", "s1", phase, attempt, agent).split("-")[2]
        for phase in (1, 2)
        for attempt in (1, 2)
        for agent in ("send", "notify")
    }
    assert len(spans) == 8
    assert {effects.traceparent("acme", "s1", p, 1, "x").split("-")[1] for p in (1, 2, 3)} == {trace}
    assert effects.traceparent("acme", "s2", 2, 1, "send").split("-")[1] != trace


def test_an_id_of_zeros_is_never_given() -> None:
    assert effects._nonzero("0" * 16) == "0" * 15 + "1"
    assert effects._nonzero("00ab") == "00ab"


def test_the_context_derives_key_and_traceparent_from_where_it_runs() -> None:
    phase = PhaseDefinition(3, "Send", "phase_3_send", ("send",))
    context = AgentContext("acme", "s1", phase, "send", 2, {}, try_number=3)
    assert context.idempotency_key == effects.idempotency_key("acme", "s1", 3, 2, "send", 3)
    assert context.traceparent == effects.traceparent("acme", "s1", 3, 2, "send")
    again = AgentContext("acme", "s1", phase, "send", 2, {}, try_number=4)
    assert again.idempotency_key != context.idempotency_key  # every try its own key
    assert again.traceparent == context.traceparent  # one span for the agent's run


def test_a_workflow_marks_its_side_effect_agents(tmp_path: Path) -> None:
    path = _project(tmp_path, side_effects=True) / "outreach.yaml"
    workflow = load_workflow(path)
    assert workflow.policy_of("send").side_effects and not workflow.policy_of("notify").side_effects


# ------------------------------------------------------------------ budgets


def _budget_workflow(session: Budget | None, phase_two: Budget | None = None) -> Workflow:
    phases = (
        PhaseDefinition(1, "One", "phase_1_one", ("a",)),
        PhaseDefinition(2, "Two", "phase_2_two", ("b",), review=True, budget=phase_two),
        PhaseDefinition(3, "Three", "phase_3_three", ("c",)),
        PhaseDefinition(4, "Four", "phase_4_four", ("d",)),
    )
    return Workflow("budgeted", phases, {"all": (1, 2, 3, 4)}, max_retries=5, budget=session)


class Spender:
    """Agents that each spend 70,000 tokens and $0.60, and count their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, context: AgentContext) -> AgentResult:
        self.calls.append(f"{context.phase.number}:{context.attempt}")
        return AgentResult(f"{context.agent_name} done", input_tokens=60_000, output_tokens=10_000, cost=0.6)


def _runner(tmp_path: Path, workflow: Workflow) -> tuple[CheckpointManager, PhaseRunner, Spender]:
    manager = CheckpointManager(tmp_path / "projects")
    manager.create_session(P, S, "ann", workflow, "all")
    spender = Spender()
    return manager, PhaseRunner(manager, workflow, dict.fromkeys("abcd", spender)), spender


def test_a_phase_that_would_start_past_the_session_budget_waits_for_a_person(tmp_path: Path) -> None:
    manager, runner, spender = _runner(tmp_path, _budget_workflow(Budget(tokens=200_000)))
    assert runner.run(P, S).phase == 2  # phase 2's review gate
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=True)
    result = runner.run(P, S)
    assert (result.status, result.phase) == ("awaiting_review", 4)
    assert spender.calls == ["1:1", "2:1", "3:1"]  # 210,000 tokens spent: phase 4 does not start
    reason = "session budget: spent 210,000 of 200,000 tokens"
    assert manager.load_checkpoints(P, S)[4].held == (reason,)
    assert manager.load_checkpoints(P, S)[4].status == "pending"
    assert manager.state(P, S).state == "awaiting_review"
    status = _cli(tmp_path, "status", P, S)
    assert f"awaiting review ({reason})" in status, status

    assert runner.run(P, S).phase == 4 and spender.calls == ["1:1", "2:1", "3:1"]  # still waiting
    manager.save_user_feedback(P, S, 4, reviewed=True, approved=True)  # no figure: one more budget
    assert runner.run(P, S).status == "completed"
    assert spender.calls == ["1:1", "2:1", "3:1", "4:2"]
    archived = manager.load_attempts(P, S, 4)[0]
    assert archived.checkpoint is not None and archived.checkpoint.held == (reason,)
    assert archived.feedback is not None and archived.feedback.approved


def test_an_approval_names_the_raised_budget_and_it_is_kept_in_the_review(tmp_path: Path) -> None:
    workflow = _budget_workflow(Budget(tokens=100_000, cost=5.0))
    phases = tuple(
        PhaseDefinition(p.number, p.name, p.directory, p.agents, p.run_style) for p in workflow.phases
    )
    workflow = Workflow("budgeted", phases, {"all": (1, 2, 3, 4)}, budget=Budget(tokens=100_000, cost=5.0))
    manager, runner, spender = _runner(tmp_path, workflow)
    result = runner.run(P, S)
    assert (result.status, result.phase) == ("awaiting_review", 3)  # 140,000 of 100,000 after two
    assert manager.load_checkpoints(P, S)[3].held == ("session budget: spent 140,000 of 100,000 tokens",)
    manager.save_user_feedback(P, S, 3, reviewed=True, approved=True, raised_budget="210,000 tokens")
    text = (tmp_path / "projects" / P / "sessions" / S / "phase_3_three" / "user_feedback.md").read_text()
    assert "- Raised Budget: 210000 tokens\n" in text
    result = runner.run(P, S)  # phase 3 runs (210,000 spent), phase 4 would start at the raise
    assert (result.status, result.phase) == ("awaiting_review", 4)
    assert manager.load_checkpoints(P, S)[4].held == ("session budget: spent 210,000 of 210,000 tokens",)
    assert spender.calls == ["1:1", "2:1", "3:2"]
    assert manager.load_attempts(P, S, 3)[0].feedback.raised_budget == "210000 tokens"  # type: ignore[union-attr]


def test_a_phase_budget_counts_every_attempt_of_the_phase(tmp_path: Path) -> None:
    manager, runner, spender = _runner(tmp_path, _budget_workflow(None, phase_two=Budget(cost=1.0)))
    assert runner.run(P, S).phase == 2
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=False, comments="again")
    assert runner.run(P, S).phase == 2  # attempt 2 starts with $0.60 spent: under $1.00
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=False, comments="once more")
    result = runner.run(P, S)
    assert (result.status, result.phase) == ("awaiting_review", 2)
    assert spender.calls == ["1:1", "2:1", "2:2"]
    assert manager.load_checkpoints(P, S)[2].held == ("phase budget: spent $1.2000 of $1.0000",)
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=True, raised_budget="$2")
    assert runner.run(P, S).phase == 2  # attempt 4 ran ($1.80 of $2.00), its review gate
    assert spender.calls == ["1:1", "2:1", "2:2", "2:4"]


def test_a_raised_budget_must_read_as_one_and_come_with_an_approval(tmp_path: Path) -> None:
    manager, runner, _ = _runner(tmp_path, _budget_workflow(Budget(tokens=1)))
    runner.run(P, S)
    with pytest.raises(InvalidArgumentError, match="raised_budget: 'lots' is not a budget"):
        manager.save_user_feedback(P, S, 2, reviewed=True, approved=True, raised_budget="lots")
    with pytest.raises(InvalidArgumentError, match="with an approval only"):
        manager.save_user_feedback(P, S, 2, reviewed=True, approved=False, raised_budget="$3")


@pytest.mark.parametrize(
    ("text", "tokens", "cost"),
    [
        ("400000 tokens, $10.0000", 400_000, 10.0),
        ("400,000 tokens", 400_000, None),
        ("$2", None, 2.0),
        ("$5 and 1_000 tokens", 1_000, 5.0),
    ],
)
def test_a_budget_is_read_leniently_and_written_one_way(
    text: str, tokens: int | None, cost: float | None
) -> None:
    found = read_budget(text)
    assert found == Budget(tokens, cost)
    assert isinstance(found, Budget) and read_budget(write_budget(found)) == found


def test_haytham_feedback_raises_the_budget_of_a_held_phase(tmp_path: Path) -> None:
    manager, runner, spender = _runner(tmp_path, _budget_workflow(Budget(tokens=200_000)))
    runner.run(P, S)
    manager.save_user_feedback(P, S, 2, reviewed=True, approved=True)
    assert runner.run(P, S).phase == 4
    output = _cli(tmp_path, "feedback", P, S, "4", "--approve", "--raise-budget", "300,000 tokens")
    assert "Raised budget: 300000 tokens" in output, output
    refused = _cli(tmp_path, "feedback", P, S, "4", "--reject", "--raise-budget", "$1")
    assert "--raise-budget goes with --approve" in refused
    assert runner.run(P, S).status == "completed"
    assert spender.calls == ["1:1", "2:1", "3:1", "4:2"]


def test_a_parallel_phase_holds_its_side_effect_agent_after_a_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, side_effects=True, monkeypatch=monkeypatch)
    yaml = tmp_path / "outreach.yaml"
    yaml.write_text(yaml.read_text().replace("run_style: sequential", "run_style: parallel"))
    _killed_while(tmp_path, "send")
    manager = CheckpointManager(tmp_path / "projects")
    rows = {run.agent_name: run.status for run in manager.load_checkpoints(P, S)[2].agents}
    assert rows == {"notify": "in_progress", "send": "in_progress"}  # both started together
    assert "phase 2 awaits review" in _cli(tmp_path, "resume", P, S)
    assert manager.load_checkpoints(P, S)[2].held == (
        "send may have run: it started and never completed, and it has side effects",
    )
    assert _calls(tmp_path).count("2:send:1") == 1
    _cli(tmp_path, "feedback", P, S, "2", "--approve")
    assert "completed" in _cli(tmp_path, "resume", P, S)
    sends = [call for call in _calls(tmp_path) if call.startswith("2:send")]
    assert sends == ["2:send:1", "2:send:2"]
    # notify either completed before the kill (kept) or had not (no side effects: it ran again)
    notifies = [call for call in _calls(tmp_path) if call.startswith("2:notify")]
    assert notifies in (["2:notify:1"], ["2:notify:1", "2:notify:2"])
    assert manager.load_agent_output(P, S, 2, "notify").status == "completed"


def test_a_release_killed_before_it_carried_the_outputs_finishes_them(crashed: Path) -> None:
    manager = CheckpointManager(crashed / "projects")
    _cli(crashed, "resume", P, S)
    manager.correct_output(P, S, 2, "send", "sent by hand", approve=True)
    manager.start_attempt(P, S, 2)  # what the release does first; killed before it carried
    assert "completed" in _cli(crashed, "resume", P, S)
    assert _calls(crashed) == ["1:draft:1", "2:notify:1", "2:send:1"]  # neither ran again
    assert manager.load_agent_output(P, S, 2, "send").content == "sent by hand"
    assert manager.load_agent_output(P, S, 2, "notify").content == "notified the team"
