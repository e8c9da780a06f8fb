"""Analytics from the files alone, on a real multi-session project with retries, and the
``haytham stats`` command.

The sessions are built with the public API and a clock the test sets, so every duration
and review wait below is exact.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from haytham import CheckpointManager, InvalidArgumentError, ProjectNotFoundError, SessionNotFoundError
from haytham.analytics import Analytics, Usage, summarize
from haytham.cli.ops import JSON_OUTPUT, stats
from haytham.retention import RetentionPolicy, cleanup

T0 = datetime(2024, 11, 24, 10, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> str:
        """Move to T0 + seconds; return that time as written in the files."""
        self.now = T0 + timedelta(seconds=seconds)
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_phase1(
    m: CheckpointManager, clock: Clock, p: str, s: str, start: float, *, tokens: tuple[int, int], cost: float
) -> None:
    """Phase 1's one agent runs from ``start`` for 20 s; the phase completes then."""
    clock.at(start)
    m.save_agent_output(
        p,
        s,
        1,
        "concept_expansion",
        "# Concept",
        model="m",
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        cost=cost,
    )
    agent = {"agent_name": "concept_expansion", "tokens": sum(tokens), "cost": cost, "duration": 18.0}
    retry = m.load_checkpoint(p, s, 1).retry_count if (m.phase_dir(p, s, 1) / "checkpoint.md").exists() else 0
    m.save_checkpoint(
        p,
        s,
        1,
        "completed",
        agents=[agent],
        started=clock.at(start),
        completed=clock.at(start + 20),
        retry_count=retry,
    )


def review(m: CheckpointManager, clock: Clock, p: str, s: str, at: float, *, approve: bool) -> None:
    clock.at(at)
    m.save_user_feedback(p, s, 1, reviewed=True, approved=approve, action="approved" if approve else "retry")


def run_phase2(m: CheckpointManager, clock: Clock, p: str, s: str, start: float) -> None:
    """Two agents in parallel: 30 s of wall clock, 25 + 28 s of agent time."""
    clock.at(start)
    for name, (i, o), cost in (
        ("market_intelligence", (400, 100), 0.02),
        ("competitor_analysis", (300, 50), 0.015),
    ):
        m.save_agent_output(p, s, 2, name, f"# {name}", input_tokens=i, output_tokens=o, cost=cost)
    agents = [
        {"agent_name": "market_intelligence", "tokens": 500, "cost": 0.02, "duration": 25.0},
        {"agent_name": "competitor_analysis", "tokens": 350, "cost": 0.015, "duration": 28.0},
    ]
    m.save_checkpoint(
        p,
        s,
        2,
        "completed",
        agents=agents,
        execution_mode="parallel",
        started=clock.at(start),
        completed=clock.at(start + 30),
    )


@pytest.fixture
def m(tmp_path: Path) -> CheckpointManager:
    """Project acme: s-1 (ada) retried phase 1 twice, s-2 (bob) ran it once, s-3 (ada) only
    started; project beta: b-1 (ada) ran phase 1 once and failed phase 2."""
    clock = Clock()
    m = CheckpointManager(tmp_path / "projects", clock=clock)
    m.create_session("acme", "s-1", "ada")
    run_phase1(m, clock, "acme", "s-1", 0, tokens=(100, 50), cost=0.01)
    review(m, clock, "acme", "s-1", 20 + 300, approve=False)  # waited 300 s
    m.start_attempt("acme", "s-1", 1)
    run_phase1(m, clock, "acme", "s-1", 1000, tokens=(200, 100), cost=0.02)
    review(m, clock, "acme", "s-1", 1020 + 120, approve=False)  # waited 120 s
    m.start_attempt("acme", "s-1", 1)
    run_phase1(m, clock, "acme", "s-1", 2000, tokens=(300, 150), cost=0.03)
    review(m, clock, "acme", "s-1", 2020 + 60, approve=True)  # waited 60 s
    run_phase2(m, clock, "acme", "s-1", 3000)

    m.create_session("acme", "s-2", "bob")
    run_phase1(m, clock, "acme", "s-2", 4000, tokens=(10, 5), cost=0.001)
    review(m, clock, "acme", "s-2", 4020 + 3600, approve=True)  # waited an hour

    m.create_session("acme", "s-3", "ada")

    m.create_session("beta", "b-1", "ada")
    run_phase1(m, clock, "beta", "b-1", 9000, tokens=(1, 1), cost=0.0)
    clock.at(9100)
    m.save_checkpoint("beta", "b-1", 2, "failed", agents=[], errors=["rate limited"])
    return m


def test_a_project_per_phase_and_per_agent(m: CheckpointManager) -> None:
    a = summarize(m, project_id="acme")

    assert (a.project_id, a.session_id, a.user_id) == ("acme", None, None)
    assert a.sessions == 3
    assert a.by_status == {"in_progress": 3, "completed": 0, "failed": 0}
    phase1, phase2 = a.phases
    assert (phase1.phase, phase1.name, phase1.sessions, phase1.attempts, phase1.retries) == (
        1,
        "Concept Expansion",
        2,
        4,  # three attempts of s-1, one of s-2
        2,  # s-1 was sent back twice
    )
    assert phase1.usage == Usage(
        tokens=150 + 300 + 450 + 15,
        input_tokens=100 + 200 + 300 + 10,
        output_tokens=50 + 100 + 150 + 5,
        cost=0.061,
        duration=80.0,
    )
    assert (phase1.reviews, phase1.review_wait) == (4, 300 + 120 + 60 + 3600)
    assert (phase2.sessions, phase2.attempts, phase2.retries, phase2.reviews) == (1, 1, 0, 0)
    assert phase2.usage == Usage(tokens=850, input_tokens=700, output_tokens=150, cost=0.035, duration=30.0)

    agents = {(x.phase, x.agent): x for x in a.agents}
    assert list(agents) == [(1, "concept_expansion"), (2, "competitor_analysis"), (2, "market_intelligence")]
    concept = agents[(1, "concept_expansion")]
    assert (concept.runs, concept.usage.tokens, concept.usage.duration) == (4, 915, 72.0)
    assert agents[(2, "competitor_analysis")].usage == Usage(350, 300, 50, 0.015, 28.0)
    assert a.totals == phase1.usage + phase2.usage
    assert (a.reviews, a.review_wait) == (4, 4080.0)
    assert a.problems == ()


def test_one_session_and_one_user_across_projects(m: CheckpointManager) -> None:
    one = summarize(m, project_id="acme", session_id="s-2")
    assert one.sessions == 1
    assert [(p.phase, p.attempts, p.retries, p.review_wait) for p in one.phases] == [(1, 1, 0, 3600.0)]
    assert one.totals == Usage(15, 10, 5, 0.001, 20.0)

    ada = summarize(m, user_id="ada")
    assert ada.sessions == 3  # s-1, s-3 in acme and b-1 in beta
    assert ada.by_status == {"in_progress": 2, "completed": 0, "failed": 1}
    assert [(p.phase, p.sessions, p.attempts) for p in ada.phases] == [(1, 2, 4), (2, 2, 2)]
    assert ada.totals.tokens == 150 + 300 + 450 + 850 + 2

    everything = summarize(m)
    assert everything.sessions == 4
    assert (
        everything.totals == summarize(m, project_id="acme").totals + summarize(m, project_id="beta").totals
    )


def test_tokens_of_an_unfinished_attempt_come_from_the_agent_files(m: CheckpointManager) -> None:
    m.save_user_feedback("acme", "s-2", 1, reviewed=True, approved=False, action="retry")
    m.start_attempt("acme", "s-2", 1)  # the new checkpoint lists the agent as pending, no numbers
    before = summarize(m, project_id="acme", session_id="s-2")
    assert before.agents[0].runs == 1
    m.save_agent_output(
        "acme", "s-2", 1, "concept_expansion", "again", input_tokens=7, output_tokens=3, cost=0.5
    )

    after = summarize(m, project_id="acme", session_id="s-2")

    assert after.agents[0].runs == 2
    assert after.agents[0].usage.tokens == 15 + 10
    assert after.agents[0].usage.cost == 0.501
    assert after.phases[0].attempts == 2 and after.phases[0].retries == 1


def test_pruned_attempts_leave_the_retry_count(m: CheckpointManager) -> None:
    m.save_checkpoint(
        "acme", "s-1", 1, "completed", agents=[{"agent_name": "concept_expansion"}], retry_count=2
    )
    for n in (2, 3, 6, 7):
        m.save_checkpoint("acme", "s-1", n, "completed", agents=[])
    cleanup(m, RetentionPolicy(max_attempts_per_phase=1))

    phase1 = summarize(m, project_id="acme", session_id="s-1").phases[0]

    assert (phase1.attempts, phase1.retries) == (1, 2)


def test_an_unreadable_file_is_named_and_the_rest_still_added_up(m: CheckpointManager) -> None:
    broken = m.phase_dir("acme", "s-2", 1) / "concept_expansion.md"
    broken.write_bytes(b"\xff\xfe not utf-8")

    a = summarize(m, project_id="acme")

    assert a.sessions == 3 and a.by_status["in_progress"] == 3
    assert [p.sessions for p in a.phases] == [1, 1]
    assert len(a.problems) == 1 and a.problems[0].startswith("acme/s-2: ")
    assert "is not UTF-8" in a.problems[0]


def test_to_dict_is_json_with_stable_keys(m: CheckpointManager) -> None:
    data = summarize(m, project_id="acme").to_dict()
    assert json.loads(json.dumps(data)) == data
    assert list(data) == [
        "project_id",
        "session_id",
        "user_id",
        "sessions",
        "by_status",
        "totals",
        "reviews",
        "review_wait",
        "review_times_from",
        "phases",
        "agents",
        "problems",
    ]
    assert data["phases"][0]["review_wait"] == 4080.0
    assert data["review_times_from"] == {"recorded": 4, "git": 0, "file": 0}
    assert set(data["totals"]) == {"tokens", "input_tokens", "output_tokens", "cost", "duration"}


def test_empty_and_wrong_scopes(m: CheckpointManager, tmp_path: Path) -> None:
    empty = summarize(CheckpointManager(tmp_path / "none"))
    assert isinstance(empty, Analytics)
    assert (empty.sessions, empty.phases, empty.agents, empty.totals) == (0, (), (), Usage())
    with pytest.raises(InvalidArgumentError, match="session_id needs project_id"):
        summarize(m, session_id="s-1")
    with pytest.raises(ProjectNotFoundError):
        summarize(m, project_id="nope")
    with pytest.raises(SessionNotFoundError):
        summarize(m, project_id="acme", session_id="nope")


# --------------------------------------------------------------------- haytham stats


def run(m: CheckpointManager, *args: str) -> Result:
    result = CliRunner().invoke(stats, [*args, "--base-dir", str(m.base_dir)])
    assert "Traceback" not in result.output, result.output
    assert "\x1b[" not in result.output
    return result


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the command from a folder without a haytham.yaml."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.usefixtures("cwd")
def test_stats_prints_tables_per_phase_and_per_agent(m: CheckpointManager) -> None:
    result = run(m, "--project", "acme")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "3 sessions: 3 in progress, 0 completed, 0 failed"
    cells = [" ".join(line.split()) for line in lines]  # columns are padded with spaces
    assert cells[1] == (
        "Phase Name Sessions Attempts Retries Tokens In Out Cost Duration Review wait Review time from"
    )
    assert cells[2] == "1 Concept Expansion 2 4 2 915 610 305 $0.0610 1.3m 1.1h recorded 4"
    assert cells[3] == "2 Market Research 1 1 0 850 700 150 $0.0350 30.0s - -"
    assert any(line.split()[:3] == ["2", "competitor_analysis", "1"] for line in lines)
    assert lines[-1] == (
        "Totals: 1765 tokens (1310 in, 455 out), $0.0960, 1.8m; 4 reviews, 1.1h waiting "
        "(review time from: recorded 4)"
    )


@pytest.mark.usefixtures("cwd")
def test_stats_json_keys_are_the_documented_ones(m: CheckpointManager) -> None:
    result = run(m, "--user", "ada", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == summarize(m, user_id="ada").to_dict()
    documented = JSON_OUTPUT["stats"]
    assert set(data) == {k for k in documented if "." not in k and "[" not in k}
    assert set(data["totals"]) == {k.split(".", 1)[1] for k in documented if k.startswith("totals.")}
    for key in ("phases", "agents"):
        assert set(data[key][0]) == {k.split(".", 1)[1] for k in documented if k.startswith(f"{key}[].")}


@pytest.mark.usefixtures("cwd")
def test_stats_errors(m: CheckpointManager) -> None:
    result = run(m, "--session", "s-1")
    assert result.exit_code == 2 and "--session needs --project" in result.output
    result = run(m, "--project", "acme", "--session", "nope")
    assert result.exit_code == 1
    assert result.output.startswith("Error: session acme/nope does not exist")
    assert len(result.output.strip().splitlines()) == 1
    result = run(m, "--project", "nope")
    assert result.exit_code == 1 and result.output.startswith("Error: project 'nope' does not exist")


@pytest.mark.usefixtures("cwd")
def test_stats_of_a_store_without_phases(tmp_path: Path) -> None:
    m = CheckpointManager(tmp_path / "projects")
    m.create_session("acme", "s-1", "ada")
    result = run(m)
    assert result.exit_code == 0, result.output
    assert result.output == "1 session: 1 in progress, 0 completed, 0 failed\nNo phase has run yet\n"
