"""Fork (a new session from an old one's first phases), compare, and their CLI commands."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import (
    IDEA_VALIDATION,
    CheckpointManager,
    HistoryEntry,
    InvalidArgumentError,
    PhaseDefinition,
    SessionExistsError,
    SessionNotFoundError,
    UnknownPhaseError,
    UnsafeNameError,
    Workflow,
)
from haytham.cli.history import COMMANDS, JSON_OUTPUT, diff_command, fork_command, history_command
from haytham.compare import Comparison, compare, unified_diff
from haytham.format import MANIFEST
from haytham.run.runner import AgentContext, AgentResult, PhaseRunner
from haytham.store.events import Event

P, S = "acme", "s-1"
START = datetime(2024, 11, 24, 10, tzinfo=timezone.utc)


def clock_from(start: datetime):  # type: ignore[no-untyped-def]
    moment = [start]

    def clock() -> datetime:
        moment[0] += timedelta(minutes=1)
        return moment[0]

    return clock


def build_session(manager: CheckpointManager, session: str = S, user: str = "ada") -> None:
    """Phase 1 sent back once (attempts/1), phase 2 done by two agents, phase 3 running.

    The first draft has CRLF line breaks; outputs and comments hold non-ASCII text.
    """
    m = manager
    m.create_session(P, session, user)
    m.save_agent_output(
        P,
        session,
        1,
        "concept_expansion",
        "# Concept\r\n\r\nFirst draft, café\r\n",
        input_tokens=10,
        output_tokens=5,
    )
    m.save_checkpoint(
        P,
        session,
        1,
        "completed",
        [{"agent_name": "concept_expansion", "input_tokens": 10, "output_tokens": 5, "cost": 0.01}],
    )
    m.save_user_feedback(
        P,
        session,
        1,
        True,
        False,
        comments="Plus de détails ✓",
        requested_changes=["Add EU data"],
        action="retry",
        retry_count=1,
    )
    m.start_attempt(P, session, 1)
    m.save_agent_output(
        P,
        session,
        1,
        "concept_expansion",
        "# Concept\n\nSecond draft, 日本語\n",
        input_tokens=12,
        output_tokens=8,
    )
    m.save_checkpoint(
        P,
        session,
        1,
        "completed",
        [{"agent_name": "concept_expansion", "input_tokens": 12, "output_tokens": 8, "cost": 0.02}],
        retry_count=1,
        name="approved draft",
    )
    m.save_user_feedback(P, session, 1, True, True, comments="Good", retry_count=1)
    m.save_agent_output(P, session, 2, "market_intelligence", "Market: big")
    m.save_agent_output(P, session, 2, "competitor_analysis", "Competitors: few\n")
    m.save_checkpoint(
        P,
        session,
        2,
        "completed",
        [
            {"agent_name": "market_intelligence", "tokens": 30},
            {"agent_name": "competitor_analysis", "tokens": 20},
        ],
        execution_mode="parallel",
    )
    m.save_agent_output(P, session, 3, "niche_selector", "Niche: B2B")
    m.save_checkpoint(
        P, session, 3, "in_progress", [{"agent_name": "niche_selector", "status": "in_progress"}]
    )


def saves(entries: list[HistoryEntry]) -> list[HistoryEntry]:
    """The checkpoint saves among history entries (a saved review is an entry too)."""
    return [entry for entry in entries if entry.kind == "checkpoint"]


def tree(directory: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) under ``directory``, by relative path."""
    if not directory.exists():
        return {}
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(directory.rglob("*"))
    }


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path, clock=clock_from(START))
    build_session(m)
    return m


# ------------------------------------------------------------------------- fork


def test_fork_copies_the_earlier_phases_byte_for_byte_and_starts_at_the_phase(
    manager: CheckpointManager,
) -> None:
    source = manager.session_dir(P, S)
    target = manager.fork_session(P, S, "s-2", 3)
    assert target == manager.session_dir(P, "s-2")
    copied = {k: v for k, v in tree(target).items() if k.startswith(("phase_1", "phase_2"))}
    original = {k: v for k, v in tree(source).items() if k.startswith(("phase_1", "phase_2"))}
    assert copied == original
    assert "phase_1_concept/attempts/1/concept_expansion.md" in copied
    assert (
        b"- Line Endings: crlf" in (target / "phase_1_concept/attempts/1/concept_expansion.md").read_bytes()
    )
    for later in ("phase_3_niche_selection", "phase_6_validation", "phase_7_synthesis"):
        assert (target / later).is_dir() and not any((target / later).iterdir())
    state = manager.load_session(P, "s-2")
    assert state["phase_statuses"] == {
        1: "approved",  # its approving review is copied with it
        2: "completed",
        3: "pending",
        6: "pending",
        7: "pending",
    }
    assert state["next_phase"] == 3 and state["current_phase"] == 3 and state["can_resume"]
    assert state["metrics"]["total_tokens"] == 20 + 50
    assert (
        manager.get_phase_outputs(P, "s-2")[1]["concept_expansion"] == "# Concept\n\nSecond draft, 日本語\n"
    )
    assert [a.number for a in manager.load_attempts(P, "s-2", 1)] == [1, 2]
    assert manager.validate_session(P, "s-2") == []
    assert manager.check(P, "s-2") == []


def test_the_fork_says_where_it_came_from_and_keeps_the_workflow(manager: CheckpointManager) -> None:
    manager.fork_session(P, S, "s-2", 3)
    source, fork = manager.load_manifest(P, S), manager.load_manifest(P, "s-2")
    assert fork.forked_from == "s-1 at phase 3"
    assert source.forked_from is None
    assert (fork.workflow_type, fork.workflow_fingerprint, fork.execution_mode, fork.user_id) == (
        source.workflow_type,
        source.workflow_fingerprint,
        source.execution_mode,
        source.user_id,
    )
    lines = (manager.session_dir(P, "s-2") / "session_manifest.md").read_text().splitlines()
    head = lines.index(f"- History Head: {fork.history_head}")
    assert lines[head + 1] == "- Forked From: s-1 at phase 3"
    assert "Forked From" not in (manager.session_dir(P, S) / "session_manifest.md").read_text()


def test_the_forks_history_starts_with_one_entry_per_copied_checkpoint(manager: CheckpointManager) -> None:
    manager.fork_session(P, S, "s-2", 3)
    entries = manager.history(P, "s-2")
    assert [(e.phase_number, e.attempt, e.status) for e in entries] == [
        (1, 2, "completed"),
        (2, 1, "completed"),
    ]
    assert {e.reason for e in entries} == {"forked from s-1"}
    assert entries[0].parent is None and entries[1].parent == entries[0].entry_id
    assert manager.load_manifest(P, "s-2").history_head == entries[-1].entry_id
    for entry in entries:
        directory = manager.phase_dir(P, "s-2", entry.phase_number)
        assert entry.checkpoint_text == (directory / "checkpoint.md").read_text(encoding="utf-8")
    # the source's own history (5 checkpoint saves, 2 reviews) is not copied, nor changed
    assert len(manager.history(P, S)) == 7


def test_the_source_session_is_untouched_byte_for_byte(manager: CheckpointManager) -> None:
    before = tree(manager.session_dir(P, S))
    manager.fork_session(P, S, "s-2", 2, user_id="bob")
    assert tree(manager.session_dir(P, S)) == before
    assert manager.load_manifest(P, "s-2").user_id == "bob"


def test_a_fork_resumes_from_its_phase_with_the_copied_outputs(manager: CheckpointManager) -> None:
    manager.fork_session(P, S, "s-2", 3)
    seen: dict[str, object] = {}

    def agent(context: AgentContext) -> AgentResult:
        seen[f"{context.phase.number}:{context.agent_name}"] = dict(context.previous_outputs)
        return AgentResult(f"# {context.agent_name}\n")

    agents = {name: agent for phase in IDEA_VALIDATION.phases for name in phase.agents}
    result = PhaseRunner(manager, IDEA_VALIDATION, agents).run(P, "s-2")
    assert result.status == "completed"
    assert list(seen) == ["3:niche_selector", "6:validator", "7:synthesizer"]
    earlier = seen["3:niche_selector"]
    assert isinstance(earlier, dict) and earlier[2]["market_intelligence"] == "Market: big"
    assert manager.load_session(P, S)["phase_statuses"][3] == "in_progress"  # the source did not move


def test_forking_from_the_first_phase_copies_no_phase(manager: CheckpointManager) -> None:
    target = manager.fork_session(P, S, "fresh", 1)
    assert manager.history(P, "fresh") == []
    assert manager.load_manifest(P, "fresh").forked_from == "s-1 at phase 1"
    assert manager.load_session(P, "fresh")["current_phase"] == 0
    assert not [p for p in target.rglob("*") if p.is_file() and p.name != "session_manifest.md"]


def test_a_custom_workflow_goes_with_the_fork(tmp_path: Path) -> None:
    flow = Workflow(
        "two_step",
        (
            PhaseDefinition(1, "Draft", "phase_1_draft", ("writer",)),
            PhaseDefinition(2, "Edit", "phase_2_edit", ("editor",)),
        ),
        {"all": (1, 2)},
    )
    manager = CheckpointManager(base_dir=tmp_path, clock=clock_from(START))
    manager.create_session(P, "w", "ada", flow, "all")
    manager.save_agent_output(P, "w", 1, "writer", "text")
    manager.save_checkpoint(P, "w", 1, "completed", [{"agent_name": "writer"}])
    target = manager.fork_session(P, "w", "w-2", 2)
    assert (target / "workflow.yaml").read_bytes() == (
        manager.session_dir(P, "w") / "workflow.yaml"
    ).read_bytes()
    assert manager.session_workflow(P, "w-2") == flow
    assert manager.load_manifest(P, "w-2").workflow_fingerprint == flow.fingerprint()


def test_fork_emits_session_forked(manager: CheckpointManager) -> None:
    events: list[Event] = []
    manager.on("session_forked", events.append)
    target = manager.fork_session(P, S, "s-2", 3)
    assert len(events) == 1
    event = events[0]
    assert (event.project_id, event.session_id, event.phase, event.path) == (P, "s-2", 3, target)
    assert event.data == {"source": S, "from_phase": 3, "copied_phases": [1, 2]}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((S, "s-1", 3), SessionExistsError),
        ((S, "s-2", 4), UnknownPhaseError),  # phase 4 is not run in mvp mode
        ((S, "s-2", 99), UnknownPhaseError),
        ((S, "s-2", True), UnknownPhaseError),
        (("nope", "s-2", 3), SessionNotFoundError),
        ((S, "../x", 3), UnsafeNameError),
    ],
)
def test_fork_refusals_change_nothing(
    manager: CheckpointManager, args: tuple[str, str, int], error: type
) -> None:
    before = tree(manager.base_dir)
    with pytest.raises(error):
        manager.fork_session(P, *args)
    assert tree(manager.base_dir) == before


def test_fork_refuses_a_target_that_exists_even_if_created_by_create_session(
    manager: CheckpointManager,
) -> None:
    manager.create_session(P, "taken", "ada")
    before = tree(manager.base_dir)
    with pytest.raises(SessionExistsError, match="already exists"):
        manager.fork_session(P, S, "taken", 2)
    assert tree(manager.base_dir) == before


def test_the_forked_from_line_round_trips_and_is_optional(manager: CheckpointManager) -> None:
    manager.fork_session(P, S, "s-2", 3)
    record = manager.load_manifest(P, "s-2")
    assert MANIFEST.parse(MANIFEST.render(record)) == record
    plain = MANIFEST.parse(MANIFEST.render(manager.load_manifest(P, S)))
    assert plain.forked_from is None


# ---------------------------------------------------------------------- compare


def test_compare_two_entries_shows_status_metadata_metrics_and_outputs(manager: CheckpointManager) -> None:
    entries = saves(manager.history(P, S, phase=1))
    first, last = entries[0], entries[-1]  # attempt 1 completed, attempt 2 completed and named
    second = manager.history_entry(P, S, last.entry_id[:6])  # a unique prefix is enough
    outputs = (manager.entry_state(P, S, first)[1], manager.entry_state(P, S, second)[1])
    result = compare(first, second, outputs=outputs)
    assert result.status is None
    assert result.metadata["attempt"] == (1, 2)
    assert result.metadata["name"] == (None, "approved draft")
    assert result.metadata["retry_count"] == (0, 1)
    assert result.metrics["total_tokens"] == (15, 20, 5)
    assert result.metrics["cost"] == (0.01, 0.02, 0.01)
    [agent] = result.agents
    assert (agent.agent, agent.change) == ("concept_expansion", "changed")
    assert agent.diff.startswith("--- a/concept_expansion.md\n+++ b/concept_expansion.md\n")
    assert "-First draft, café\r\n" in agent.diff and "+Second draft, 日本語\n" in agent.diff
    assert not result.same


def test_compare_entries_without_outputs_compares_the_agent_rows(manager: CheckpointManager) -> None:
    entries = saves(manager.history(P, S))
    started = entries[1]  # attempt 2 opened: pending, not started, agent pending, tokens unknown
    done = entries[2]
    result = compare(started, done)
    assert result.status == ("pending", "completed")
    assert result.metadata["completed"][0] is None
    [agent] = result.agents
    assert agent.change == "changed"
    assert "-status: pending\n" in agent.diff and "+status: completed\n" in agent.diff
    assert "+tokens: 20\n" in agent.diff
    assert result.metrics["total_tokens"] == (None, 20, None)


def test_compare_two_attempts_diffs_outputs_and_reviews(manager: CheckpointManager) -> None:
    attempts = manager.load_attempts(P, S, 1)
    assert [a.number for a in attempts] == [1, 2]
    result = compare(attempts[0], attempts[1])
    assert result.metadata["attempt"] == (1, 2)
    assert result.metadata["comments"] == ("Plus de détails ✓", "Good")
    assert result.metadata["approved"] == (False, True)
    assert result.metadata["requested_changes"] == (("Add EU data",), ())
    assert result.metrics["input_tokens"] == (10, 12, 2)
    [agent] = result.agents
    assert agent.change == "changed"
    assert "-# Concept\r\n" in agent.diff and "+# Concept\n" in agent.diff


def test_compare_two_sessions_finds_added_removed_changed_and_same_agents(manager: CheckpointManager) -> None:
    manager.fork_session(P, S, "s-2", 2, user_id="bob")
    manager.save_agent_output(P, "s-2", 2, "market_intelligence", "Market: small")
    manager.save_agent_output(P, "s-2", 2, "pricing", "Pricing\n")
    manager.save_checkpoint(P, "s-2", 2, "failed", [{"agent_name": "market_intelligence", "tokens": 45}])
    result = compare((manager, P, S), (manager, P, "s-2"))
    assert result.status == ("in_progress", "failed")
    assert result.metadata["user_id"] == ("ada", "bob")
    assert result.metadata["forked_from"] == (None, "s-1 at phase 2")
    assert result.metadata["phase 3"] == ("in_progress", "pending")
    assert result.metrics["total_tokens"] == (70, 65, -5)
    changes = {agent.agent: agent.change for agent in result.agents}
    assert changes == {
        "1:concept_expansion": "same",
        "2:market_intelligence": "changed",
        "2:competitor_analysis": "removed",
        "3:niche_selector": "removed",
        "2:pricing": "added",
    }
    by_name = {agent.agent: agent for agent in result.agents}
    assert by_name["2:market_intelligence"].diff == (
        "--- a/2:market_intelligence.md\n+++ b/2:market_intelligence.md\n@@ -1 +1 @@\n"
        "-Market: big\n\\ No newline at end of file\n+Market: small\n\\ No newline at end of file\n"
    )
    assert by_name["2:pricing"].diff.endswith("@@ -0,0 +1 @@\n+Pricing\n")
    assert by_name["1:concept_expansion"].diff == ""
    data = json.loads(json.dumps(result.to_dict()))
    assert data["status"] == ["in_progress", "failed"]
    assert data["metrics"]["total_tokens"] == [70, 65, -5]
    assert data["metadata"]["user_id"] == ["ada", "bob"]
    assert {a["agent"]: a["change"] for a in data["agents"]} == changes
    assert data["same"] is False


def test_a_session_compared_with_itself_is_the_same(manager: CheckpointManager) -> None:
    before = tree(manager.base_dir)
    result = compare((manager, P, S), (manager, P, S))
    assert result.same and result.metadata == {} and result.status is None
    assert all(agent.change == "same" for agent in result.agents) and len(result.agents) == 4
    assert tree(manager.base_dir) == before  # comparing only reads


def test_compare_refuses_mixed_sides(manager: CheckpointManager) -> None:
    entry = manager.history(P, S)[0]
    attempt = manager.load_attempts(P, S, 1)[0]
    with pytest.raises(InvalidArgumentError):
        compare(entry, attempt)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        compare((manager, P, S), (manager, P))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="outputs"):
        compare(attempt, attempt, outputs=({}, {}))


def test_unified_diff_keeps_carriage_returns_and_marks_a_missing_final_newline() -> None:
    text = unified_diff("a\r\nb", "a\r\nc\n", "x")
    assert text == "--- a/x.md\n+++ b/x.md\n@@ -1,2 +1,2 @@\n a\r\n-b\n\\ No newline at end of file\n+c\n"
    assert unified_diff("same\n", "same\n", "x") == ""
    assert Comparison().same


# -------------------------------------------------------------------------- CLI


def invoke(command: object, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, list(args))  # type: ignore[arg-type]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_the_module_exposes_its_commands() -> None:
    assert [c.name for c in COMMANDS] == ["history", "diff", "fork", "export", "import"]


def test_history_command_lists_and_filters_entries(manager: CheckpointManager) -> None:
    base = str(manager.base_dir)
    code, out = invoke(history_command, P, S, "--base-dir", base)
    entries = manager.history(P, S)
    assert code == 0
    assert out.splitlines()[0].split() == ["Entry", "Time", "Phase", "Attempt", "Status", "Name", "Reason"]
    assert all(e.entry_id in out for e in entries) and "approved draft" in out
    code, out = invoke(history_command, P, S, "--phase", "2", "--json", "--base-dir", base)
    data = json.loads(out)
    assert code == 0 and [e["phase_number"] for e in data["entries"]] == [2]
    documented = JSON_OUTPUT["history"]
    assert set(data) == {k for k in documented if "." not in k}
    assert set(data["entries"][0]) == {k.split(".", 1)[1] for k in documented if k.startswith("entries[].")}
    code, out = invoke(history_command, P, S, "--name", "approved draft", "--json", "--base-dir", base)
    assert [e["entry_id"] for e in json.loads(out)["entries"]] == [saves(entries)[2].entry_id]
    code, out = invoke(history_command, P, S, "--since", "2030-01-01T00:00:00Z", "--base-dir", base)
    assert code == 0 and "No history entries" in out
    code, out = invoke(history_command, P, S, "--status", "finished", "--base-dir", base)
    assert code == 2
    code, out = invoke(history_command, P, "nope", "--base-dir", base)
    assert code == 1 and out.startswith("Error: ") and len(out.strip().splitlines()) == 1


def test_diff_command_compares_sessions_and_entries(manager: CheckpointManager) -> None:
    base = str(manager.base_dir)
    manager.fork_session(P, S, "s-2", 2)
    manager.save_agent_output(P, "s-2", 2, "market_intelligence", "Market: small")
    code, out = invoke(diff_command, f"{P}/{S}", f"{P}/s-2", "--base-dir", base)
    assert code == 0
    assert "+++ b/2:market_intelligence.md\n" in out and "+Market: small\n" in out
    assert "forked_from: - -> s-1 at phase 2" in out
    code, out = invoke(diff_command, f"{P}/{S}", f"{P}/s-2", "--json", "--base-dir", base)
    data = json.loads(out)
    assert code == 0 and data["metadata"]["forked_from"] == [None, "s-1 at phase 2"]
    assert set(data) == {k for k in JSON_OUTPUT["diff"] if "." not in k}
    assert set(data["agents"][0]) == {
        k.split(".", 1)[1] for k in JSON_OUTPUT["diff"] if k.startswith("agents[].")
    }
    entries = manager.history(P, S, phase=1)
    a, b = f"{P}/{S}@{entries[0].entry_id}", f"{P}/{S}@{entries[-1].entry_id[:5]}"
    code, out = invoke(diff_command, a, b, "--json", "--base-dir", base)
    assert code == 0 and json.loads(out)["agents"][0]["change"] == "changed"
    code, out = invoke(diff_command, f"{P}/{S}", f"{P}/{S}", "--base-dir", base)
    assert code == 0 and "No differences" in out
    code, out = invoke(diff_command, f"{P}/{S}", a, "--base-dir", base)  # the session now vs an entry
    assert code == 0 and out.startswith(f"--- {P}/{S}\n")
    assert invoke(diff_command, "no-slash", a, "--base-dir", base)[0] == 2
    code, out = invoke(diff_command, f"{P}/{S}@ffffff", a, "--base-dir", base)
    assert code == 1 and out.startswith("Error: ")


def test_fork_command_forks_and_refuses_an_existing_target(manager: CheckpointManager) -> None:
    base = str(manager.base_dir)
    code, out = invoke(fork_command, P, S, "s-2", "--from-phase", "3", "--base-dir", base)
    assert code == 0 and "Forked acme/s-1 at phase 3 into acme/s-2" in out
    assert f"haytham resume acme s-2 --base-dir {base}" in out
    assert manager.load_manifest(P, "s-2").forked_from == "s-1 at phase 3"
    code, out = invoke(fork_command, P, S, "s-2", "--from-phase", "3", "--base-dir", base)
    assert code == 1 and out.startswith("Error: session acme/s-2 already exists")
    assert invoke(fork_command, P, S, "s-3", "--base-dir", base)[0] == 2  # --from-phase is required
    code, out = invoke(fork_command, P, S, "s-3", "--from-phase", "5", "--base-dir", base)
    assert code == 1 and "not run in 'mvp' mode" in out
