"""The reference PhaseRunner: full runs, review gates, retries, failures, resume after kill."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from haytham import (
    IDEA_VALIDATION,
    CheckpointManager,
    DocumentError,
    InvalidArgumentError,
    PhaseDefinition,
    Workflow,
)
from haytham.format.workflow import dump_workflow, load_workflow
from haytham.run.demo import DEMO_AGENTS, DEMO_WORKFLOW
from haytham.run.runner import (
    Agent,
    AgentContext,
    AgentImportError,
    AgentResult,
    PhaseRunner,
    WorkflowChangedError,
    missing_agents,
    next_step,
    resolve_agents,
)

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "idea_validation.py"
P = "demo"
VOLATILE = re.compile(
    r"^(- (Executed|Started|Completed|Duration|Timestamp|Last Updated|Created|Total Duration"
    r"|Agent Execution Times|History Head): )"
    r".*$|^(\| \d+ \| [^|]+ \| \w+ \|).*$",
    re.MULTILINE,
)


def run_to_end(manager: CheckpointManager, runner: PhaseRunner, session: str) -> list[str]:
    """Run, approving every review, and return the agents that ran, in order."""
    ran: list[str] = []
    result = runner.run(P, session)
    ran += result.ran_agents
    while result.status == "awaiting_review":
        assert result.phase is not None
        manager.save_user_feedback(P, session, result.phase, reviewed=True, approved=True)
        result = runner.run(P, session)
        ran += result.ran_agents
    assert result.status == "completed", str(result)
    return ran


@pytest.mark.parametrize("mode", ["mvp", "full"])
def test_a_full_run_completes_every_phase_of_the_mode(tmp_path: Path, mode: str) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u", execution_mode=mode)
    ran = run_to_end(manager, PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS), "s")
    expected = [f"{p.number}:{a}" for p in IDEA_VALIDATION.phases_for(mode) for a in p.agents]
    assert sorted(ran) == sorted(expected)
    state = manager.load_session(P, "s")
    assert state["status"] == "completed"
    assert state["completed_phases"] == list(IDEA_VALIDATION.modes[mode])
    outputs = manager.get_phase_outputs(P, "s")
    assert "Builds on phase 1" in outputs[2]["market_intelligence"]
    assert state["metrics"]["total_tokens"] > 0
    assert manager.validate_session(P, "s") == []


def test_review_gate_waits_then_approval_goes_on(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    runner = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS)
    first = runner.run(P, "s")
    assert (first.status, first.phase) == ("awaiting_review", 1)
    assert first.feedback_file == manager.phase_dir(P, "s", 1) / "user_feedback.md"
    feedback = manager.load_feedback(P, "s", 1)
    assert feedback is not None and not feedback.reviewed
    again = runner.run(P, "s")
    assert again.status == "awaiting_review" and again.ran_agents == ()
    # A person edits the file by hand.
    text = (
        first.feedback_file.read_text()
        .replace("Reviewed: false", "Reviewed: yes")
        .replace("Approved: false", "Approved: yes")
    )
    first.feedback_file.write_text(text)
    assert runner.run(P, "s").status == "completed"


def test_reject_then_approve_keeps_the_first_attempt_and_passes_the_feedback(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    runner = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS)
    runner.run(P, "s")
    first_output = manager.get_phase_outputs(P, "s", [1])[1]["concept_expansion"]
    manager.save_user_feedback(
        P,
        "s",
        1,
        True,
        False,
        comments="Sharper please",
        action="rejected",
        requested_changes=["Name the buyer"],
    )
    result = runner.run(P, "s")
    assert (result.status, result.phase, result.ran_agents) == (
        "awaiting_review",
        1,
        ("1:concept_expansion",),
    )
    attempts = manager.load_attempts(P, "s", 1)
    assert [a.number for a in attempts] == [1, 2]
    assert attempts[0].outputs["concept_expansion"] == first_output
    assert attempts[0].feedback is not None and attempts[0].feedback.comments == "Sharper please"
    assert attempts[1].checkpoint is not None and attempts[1].checkpoint.retry_count == 1
    assert "Addressed: Name the buyer" in attempts[1].outputs["concept_expansion"]
    manager.save_user_feedback(P, "s", 1, True, True)
    assert runner.run(P, "s").status == "completed"
    assert manager.validate_session(P, "s") == []


def test_too_many_retries_fail_with_the_reason(tmp_path: Path) -> None:
    workflow = Workflow("strict", IDEA_VALIDATION.phases, IDEA_VALIDATION.modes, max_retries=1)
    manager = CheckpointManager(base_dir=tmp_path, workflows=[workflow])
    manager.create_session(P, "s", "u", workflow_type="strict")
    runner = PhaseRunner(manager, workflow, DEMO_AGENTS)
    runner.run(P, "s")
    for _ in range(2):
        manager.save_user_feedback(P, "s", 1, True, False, action="retry")
        result = runner.run(P, "s")
    assert result.status == "failed"
    assert "allows 1 retries" in str(result)
    assert len(manager.load_attempts(P, "s", 1)) == 2


def test_a_failing_parallel_agent_is_the_only_one_rerun_on_resume(tmp_path: Path) -> None:
    calls: list[str] = []
    broken = {"competitor_analysis": True}

    def agent(context: AgentContext) -> AgentResult:
        calls.append(context.agent_name)
        if broken.get(context.agent_name):
            raise RuntimeError("rate limited")
        return AgentResult(f"{context.agent_name} done", input_tokens=1, output_tokens=2, cost=0.5)

    phases = tuple(
        p if p.number != 1 else PhaseDefinition(1, p.name, p.directory, p.agents)
        for p in IDEA_VALIDATION.phases
    )
    workflow = Workflow("idea_validation", phases, IDEA_VALIDATION.modes)
    manager = CheckpointManager(base_dir=tmp_path, workflows=[workflow])
    manager.create_session(P, "s", "u")
    runner = PhaseRunner(
        manager, workflow, {a: agent for p in phases for a in p.agents}, allow_workflow_change=True
    )
    result = runner.run(P, "s")
    assert (result.status, result.phase) == ("failed", 2)
    assert "competitor_analysis: RuntimeError: rate limited" in str(result)
    failed = manager.load_agent_output(P, "s", 2, "competitor_analysis")
    assert (failed.status, failed.error_type, failed.error_message) == (
        "failed",
        "RuntimeError",
        "rate limited",
    )
    assert failed.stack_trace is not None and "rate limited" in failed.stack_trace
    assert manager.load_session(P, "s")["status"] == "failed"

    broken.clear()
    calls.clear()
    assert runner.run(P, "s").status == "completed"
    assert calls.count("competitor_analysis") == 1
    assert "market_intelligence" not in calls
    checkpoint = manager.load_checkpoint(P, "s", 2)
    assert checkpoint.cost == 1.0  # both agents' costs, the earlier one kept across the resume


def test_async_agents_are_awaited(tmp_path: Path) -> None:
    async def agent(context: AgentContext) -> str:
        await asyncio.sleep(0)
        return f"async {context.agent_name}"

    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    run_to_end(manager, PhaseRunner(manager, IDEA_VALIDATION, dict.fromkeys(DEMO_AGENTS, agent)), "s")
    assert manager.get_phase_outputs(P, "s", [3])[3] == {"niche_selector": "async niche_selector"}


def test_a_session_of_another_workflow_is_refused_unless_overridden(tmp_path: Path) -> None:
    other = Workflow("other", IDEA_VALIDATION.phases, IDEA_VALIDATION.modes)
    manager = CheckpointManager(base_dir=tmp_path, workflows=[other])
    manager.create_session(P, "s", "u", workflow_type="other")
    with pytest.raises(WorkflowChangedError, match="workflow 'other', not 'idea_validation'"):
        PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS).run(P, "s")
    result = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS, allow_workflow_change=True).run(P, "s")
    assert result.status == "awaiting_review"


def test_a_changed_definition_at_resume_says_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CUSTOM)
    workflow = load_workflow(path)
    manager = CheckpointManager(base_dir=tmp_path / "projects")
    manager.create_session(P, "s", "u", workflow_type=workflow, execution_mode="full")
    agents = {a: (lambda c: "ok") for p in workflow.phases for a in p.agents}
    assert PhaseRunner(manager, workflow, agents).run(P, "s").status == "awaiting_review"

    path.write_text(
        CUSTOM.replace("agents: [analyst, skeptic]", "agents: [analyst]").replace(
            "max_retries: 2", "max_retries: 5"
        )
    )
    changed = load_workflow(path)
    before = manager.load_manifest(P, "s")
    with pytest.raises(WorkflowChangedError) as raised:
        PhaseRunner(manager, changed, agents).run(P, "s")
    message = str(raised.value)
    assert "phase 2 agents: ('analyst', 'skeptic') -> ('analyst',)" in message
    assert "max_retries: 2 -> 5" in message
    assert manager.load_manifest(P, "s") == before  # refused: nothing changed

    result = PhaseRunner(manager, changed, agents, allow_workflow_change=True).run(P, "s")
    assert result.status == "awaiting_review"
    assert manager.load_manifest(P, "s").workflow_fingerprint == changed.fingerprint()
    assert manager.session_workflow(P, "s") == changed


# ------------------------------------------------------------------- YAML workflows

CUSTOM = """\
name: due_diligence
max_retries: 2
modes:
  quick: [1, 3]
  full: [1, 2, 3]
phases:
  - number: 1
    name: Gather
    agents: [collector]
  - number: 2
    name: Deep Dive
    agents: [analyst, skeptic]
    review: true
  - number: 3
    name: Verdict
    directory: phase_3_verdict
    agents: [judge]
"""


def test_a_custom_workflow_loaded_from_yaml_runs(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CUSTOM)
    workflow = load_workflow(path)
    assert [p.directory for p in workflow.phases] == [
        "phase_1_gather",
        "phase_2_deep_dive",
        "phase_3_verdict",
    ]
    assert workflow.phases[1].run_style == "parallel" and workflow.phases[1].review
    manager = CheckpointManager(base_dir=tmp_path / "projects")
    manager.create_session(P, "s", "u", workflow_type=workflow, execution_mode="quick")
    agents = {a: (lambda c: f"{c.agent_name} says hi") for p in workflow.phases for a in p.agents}
    runner = PhaseRunner(manager, workflow, agents)
    assert runner.run(P, "s").status == "completed"
    assert manager.load_session(P, "s")["completed_phases"] == [1, 3]


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (("review: true", "review: maybe"), 13, "'maybe' is not a boolean"),
        (("quick: [1, 3]", "quick: [1, 9]"), 4, "names phase 9"),
        (("    name: Verdict\n", ""), 14, "'name' is a required property"),
        (("  full: [1, 2, 3]", "  full: [1, 2, 3"), 6, "not valid YAML"),
        (
            ("phases:", "agents:\n  judge: my_agents.judge\nphases:"),
            7,
            "'my_agents.judge' is not module:function",
        ),
        (("phases:", "agents:\n  judge: ':judge'\nphases:"), 7, "':judge' is not module:function"),
        (("phases:", "agents:\n  jugde: my_agents:judge\nphases:"), 7, "'jugde', which no phase runs"),
        (("phases:", "agents:\n  judge: 3\nphases:"), 7, "3 is not a string"),
    ],
)
def test_workflow_yaml_errors_point_at_file_and_line(
    tmp_path: Path, edit: tuple[str, str], line: int, message: str
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CUSTOM.replace(*edit))
    with pytest.raises(DocumentError) as raised:
        load_workflow(path)
    assert raised.value.path == path
    assert raised.value.line == line, str(raised.value)
    assert message in str(raised.value)


AGENTS_MODULE = """\
from haytham.run.runner import AgentResult


def write(context):
    return AgentResult(f"# {context.agent_name}\\n", model="mine-1")


async def later(context):
    return f"# {context.agent_name} (async)\\n"


NOT_CALLABLE = 3
"""


def test_a_workflow_names_its_agents_callables_and_the_runner_imports_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flow_agents.py").write_text(AGENTS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    bindings = "agents:\n  collector: flow_agents:write\n  analyst: flow_agents:later\n"
    path = tmp_path / "flow.yaml"
    path.write_text(CUSTOM + bindings + "  skeptic: flow_agents:write\n  judge: flow_agents:write\n")
    workflow = load_workflow(path)
    assert workflow.callables["analyst"] == "flow_agents:later"
    assert (
        workflow.fingerprint() == load_workflow_text(tmp_path, CUSTOM).fingerprint()
    )  # bindings are not in it
    assert load_workflow_text(tmp_path, dump_workflow(workflow)) == workflow  # written and read back
    manager = CheckpointManager(tmp_path / "projects")
    manager.create_session(P, "s", "u", workflow, "full")
    assert manager.session_workflow(P, "s").callables == workflow.callables
    runner = PhaseRunner(manager, manager.session_workflow(P, "s"))  # no agents given: the bindings
    assert runner.run(P, "s").status == "awaiting_review"
    assert manager.load_agent_output(P, "s", 1, "collector").model == "mine-1"
    assert manager.load_agent_output(P, "s", 2, "analyst").content == "# analyst (async)\n"
    given = PhaseRunner(manager, workflow, {"collector": DEMO_AGENTS["concept_expansion"]})
    assert given.agents["collector"] is DEMO_AGENTS["concept_expansion"]  # what is given comes first


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_agents_module:write", "cannot import module 'no_such_agents_module'"),
        ("flow_agents:missing", "module 'flow_agents' has no 'missing'"),
        ("flow_agents:NOT_CALLABLE", "agent 'judge': 'flow_agents:NOT_CALLABLE' is a int, not a function"),
    ],
)
def test_an_agent_binding_that_cannot_be_used_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, message: str
) -> None:
    (tmp_path / "flow_agents.py").write_text(AGENTS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    workflow = load_workflow_text(tmp_path, CUSTOM + f"agents:\n  judge: '{spec}'\n")
    with pytest.raises(AgentImportError, match=re.escape(message)):
        resolve_agents(workflow)
    assert missing_agents(workflow, resolve_agents(workflow, {"judge": DEMO_AGENTS["validator"]})) == [
        "collector",
        "analyst",
        "skeptic",
    ]


def load_workflow_text(tmp_path: Path, text: str) -> Workflow:
    path = tmp_path / "other.yaml"
    path.write_text(text)
    return load_workflow(path)


def test_the_demo_workflow_names_demo_agent_and_keeps_the_builtin_fingerprint() -> None:
    assert set(DEMO_WORKFLOW.callables.values()) == {"haytham.run.demo:demo_agent"}
    assert set(DEMO_WORKFLOW.callables) == set(DEMO_AGENTS)
    assert DEMO_WORKFLOW.fingerprint() == IDEA_VALIDATION.fingerprint()
    assert resolve_agents(DEMO_WORKFLOW) == DEMO_AGENTS


# --------------------------------------------------------------- kill, then resume


def demo(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), "--base-dir", str(base), "--session", "s", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def normalised(session: Path) -> dict[str, str]:
    """The session's files without times; the history is left out, since it rightly records
    the interrupted saves (its entries are checked separately)."""
    return {
        str(p.relative_to(session)): VOLATILE.sub(r"\1\3", p.read_text())
        for p in sorted(session.rglob("*.md"))
        if p.parent.name != "history"
    }


def test_killed_after_every_agent_count_then_resumed_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    baseline = demo(tmp_path / "baseline")
    assert baseline.returncode == 0, baseline.stderr
    total = baseline.stdout.count("saved phase")
    assert total == 6
    expected = normalised(tmp_path / "baseline" / P / "sessions" / "s")
    for count in range(1, total + 1):
        base = tmp_path / f"kill{count}"
        crashed = demo(base, "--crash-after", str(count))
        assert crashed.returncode == 3, crashed.stderr
        resumed = demo(base, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        saved = re.findall(r"saved phase (\d \w+)", crashed.stdout + resumed.stdout)
        assert sorted(saved) == sorted(re.findall(r"saved phase (\d \w+)", baseline.stdout)), count
        assert normalised(base / P / "sessions" / "s") == expected, count
        entries = CheckpointManager(base).history(P, "s")
        last = {e.phase_number: e.status for e in entries}
        assert set(last.values()) == {"completed"}, count


def test_next_step_says_where_a_run_would_stop_without_running(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, "s", "u")
    assert (next_step(manager, P, "s").action, next_step(manager, P, "s").reason) == ("resume", "ready")
    runner = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS)
    runner.run(P, "s")
    step = next_step(manager, P, "s")
    assert (step.action, step.phase, step.reason) == ("review", 1, "awaiting_review")
    assert step.feedback_file == manager.phase_dir(P, "s", 1) / "user_feedback.md"
    manager.save_user_feedback(P, "s", 1, True, False, action="retry")
    assert next_step(manager, P, "s").reason == "sent_back"
    step.feedback_file.write_text(
        step.feedback_file.read_text().replace("Approved: false", "Approved: perhaps")
    )
    assert next_step(manager, P, "s").reason == "invalid_feedback"
    manager.save_user_feedback(P, "s", 1, True, True)
    assert (next_step(manager, P, "s").phase, next_step(manager, P, "s").reason) == (2, "ready")
    assert runner.run(P, "s").status == "completed"
    assert next_step(manager, P, "s").action == "done"


def test_a_run_needs_callables_only_for_the_agents_of_the_sessions_mode(tmp_path: Path) -> None:
    """An mvp session never runs phases 4 and 5, so their agents need no callable; a missing
    agent of the mode is refused before any file changes."""
    manager = CheckpointManager(tmp_path)
    manager.create_session("p", "s", "ada", execution_mode="mvp")
    mvp_agents = {a for p in IDEA_VALIDATION.phases_for("mvp") for a in p.agents}
    agents: dict[str, Agent] = {name: (lambda context: f"# {context.agent_name}\n") for name in mvp_agents}
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    short = dict(agents)
    del short["validator"]
    with pytest.raises(InvalidArgumentError, match="no callable given for agents validator"):
        PhaseRunner(manager, IDEA_VALIDATION, short).run("p", "s")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert PhaseRunner(manager, IDEA_VALIDATION, agents).run("p", "s").status == "awaiting_review"
