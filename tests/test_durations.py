"""A phase's duration is the time it ran, never the time it waited (issue 23, defect 5).

The sessions are run through the command line (click's runner, in this process) with every
``CheckpointManager`` reading a clock the test sets, so a review wait of a quarter of a minute
or a retry ten minutes later takes no time at all. After each run, the manifest on disk,
``haytham status``, ``haytham stats`` and the session page's duration chart must all say the
time the agents ran.
"""

from __future__ import annotations

import json
import re
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import haytham.store.store as store_module
from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format import MANIFEST
from haytham.run.demo import DEMO_PROJECT as DEMO
from haytham.run.demo import run_demo
from haytham.web.pages import session_page

T0 = datetime(2024, 11, 24, 10, 0, tzinfo=timezone.utc)


class Clock:
    """The time every manager made while the test runs reads: it moves only when told."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = T0 + timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """A clock for every ``CheckpointManager`` made from now on, the command line's included."""
    clock = Clock()
    monkeypatch.setattr(store_module, "utc_now", clock)
    return clock


def run(base: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(base)])
    assert "Traceback" not in result.output, result.output
    return result


def run_json(base: Path, *args: str) -> Any:
    result = run(base, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def views(base: Path, project: str, session: str) -> dict[str, Any]:
    """Each phase's duration and the total as the manifest on disk, ``status``, ``stats`` and
    the session page's chart say them."""
    manager = CheckpointManager(base)
    manifest = MANIFEST.load(manager.session_dir(project, session) / "session_manifest.md")
    status = run_json(base, "status", project, session)
    stats = run_json(base, "stats", "--project", project, "--session", session)
    page = session_page(manager, project, session)
    [chart] = [c for c in page.charts if 'aria-label="Duration per phase"' in c]
    shown = [float(x) for x in re.findall(r">([0-9.]+) s</text>", chart)]
    return {
        "manifest": {row.number: row.duration for row in manifest.phases if row.duration is not None},
        "manifest total": manifest.metrics.total_duration,
        "status": {p["number"]: p["duration"] for p in status["phases"] if p["duration"] is not None},
        "status total": status["metrics"]["total_duration"],
        "chart": dict(zip([line.view.number for line in page.phases if line.checkpoint], shown, strict=True)),
        "stats": {p["phase"]: p["duration"] for p in stats["phases"]},
        "stats total": stats["totals"]["duration"],
        "attempts": {
            line.view.number: [a.duration for a in line.attempts] for line in page.phases if line.attempts
        },
    }


def test_a_rerun_that_waits_for_a_review_counts_only_the_time_each_phase_ran(
    tmp_path: Path, clock: Clock
) -> None:
    """The reported defect: after ``haytham rerun P S --from-phase 1`` and 15 s of waiting for
    phase 1's review, every later phase said 15 s for agents that report 1 s each."""
    base = tmp_path / "projects"
    assert run_demo(CheckpointManager(base), "s").status == "completed"  # all at T0
    clock.at(100)
    rerun = run(base, "rerun", DEMO, "s", "--from-phase", "1")
    assert "phase 1 awaits review" in rerun.output, rerun.output
    clock.at(115)  # the reviewer took 15 s
    assert run(base, "feedback", DEMO, "s", "1", "--approve").exit_code == 0
    resumed = run(base, "resume", DEMO, "s")
    assert resumed.exit_code == 0, resumed.output

    # the demo's agents report 1.0 s each; phase 2 runs its two agents side by side
    ran = {1: 1.0, 2: 1.0, 3: 1.0, 6: 1.0, 7: 1.0}  # the phases of the demo's mode (mvp)
    seen = views(base, DEMO, "s")
    assert seen["manifest"] == ran
    assert seen["status"] == ran
    assert seen["chart"] == ran
    assert seen["manifest total"] == seen["status total"] == sum(ran.values())
    # stats adds up every attempt kept on disk: the first run and the re-run, 1 s each
    assert seen["attempts"] == {n: [1.0, 1.0] for n in ran}
    assert seen["stats"] == {n: 2 * s for n, s in ran.items()}
    assert seen["stats total"] == 2 * sum(ran.values())
    # the re-run left phase 6 pending (no Started) until the runner reached it after the
    # review: Started and Completed are both then, and the 15 s wait is in neither
    checkpoint = CheckpointManager(base).load_checkpoint(DEMO, "s", 6)
    assert (checkpoint.started, checkpoint.completed) == ("2024-11-24T10:01:55Z", "2024-11-24T10:01:55Z")


FLAKY = """
from pathlib import Path

from haytham.run.runner import AgentResult

FLAG = Path({flag!r})
TIMES = {{"concept_expansion": 2.0, "market_intelligence": 4.0, "competitor_analysis": 3.0,
          "niche_selector": 5.0, "validator": 1.5, "synthesizer": 0.5}}


def agent(context):
    name = context.agent_name
    if name == "market_intelligence" and FLAG.exists():
        raise RuntimeError(f"{{name}}: rate limited")
    return AgentResult(f"# {{name}}\\n", duration=TIMES[name])
"""


def test_a_failed_phase_retried_ten_minutes_later_counts_its_agents_not_the_wait(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phase 2 (two agents side by side) fails at its first run, again 600 s later, and is
    retried 600 s after that: it says the time its agents ran in this attempt, the re-run
    agent's included, and not the twenty minutes between the failures and the retry."""
    base = tmp_path / "projects"
    flag = tmp_path / "rate-limited"
    flag.touch()
    module = tmp_path / "agents_dir"
    module.mkdir()
    (module / "flaky_agents.py").write_text(textwrap.dedent(FLAKY.format(flag=str(flag))))
    monkeypatch.syspath_prepend(str(module))
    agents = ("--agents", "flaky_agents:agent")
    CheckpointManager(base).create_session("acme", "s", "ada")

    assert "phase 1 awaits review" in run(base, "resume", "acme", "s", *agents).output
    clock.at(30)
    assert run(base, "feedback", "acme", "s", "1", "--approve").exit_code == 0
    failed = run(base, "resume", "acme", "s", *agents)
    assert failed.exit_code == 1 and "rate limited" in failed.output, failed.output
    manager = CheckpointManager(base)
    assert manager.load_checkpoint("acme", "s", 2).status == "failed"
    assert manager.load_checkpoint("acme", "s", 2).duration == 3.0  # the run that failed: its agents
    clock.at(630)  # ten minutes later
    failed_again = run(base, "resume", "acme", "s", *agents)  # phase 2 again, still limited
    assert failed_again.exit_code == 1, failed_again.output
    assert manager.load_checkpoint("acme", "s", 2).duration == 3.0
    flag.unlink()
    clock.at(1230)
    resumed = run(base, "resume", "acme", "s", *agents)
    assert resumed.exit_code == 0, resumed.output

    # phase 2: the longest of its side-by-side agents, the re-run one (4 s)
    ran = {1: 2.0, 2: 4.0, 3: 5.0, 6: 1.5, 7: 0.5}
    seen = views(base, "acme", "s")
    assert seen["manifest"] == seen["status"] == seen["chart"] == seen["stats"] == ran
    assert seen["manifest total"] == seen["status total"] == seen["stats total"] == sum(ran.values())
    retried = manager.load_checkpoint("acme", "s", 2)
    assert (retried.status, retried.started, retried.completed) == (
        "completed",
        "2024-11-24T10:00:30Z",
        "2024-11-24T10:20:30Z",
    )


# ------------------------------------------------------------------- the rule, through saves


def saved_duration(tmp_path: Path, mode: str, agents: list[dict[str, Any]], **times: str) -> float | None:
    """Phase 2 started at T0 and saved completed 600 s later with ``agents``; its Duration."""
    clock = Clock()
    manager = CheckpointManager(tmp_path / "projects", clock=clock)
    manager.create_session("acme", "s", "ada")
    manager.save_checkpoint("acme", "s", 2, "in_progress", [], execution_mode=mode)
    clock.at(600)
    manager.save_checkpoint("acme", "s", 2, "completed", agents, execution_mode=mode, **times)
    return manager.load_checkpoint("acme", "s", 2).duration


TWO = [
    {"agent_name": "market_intelligence", "status": "completed", "duration": 0.1},
    {"agent_name": "competitor_analysis", "status": "completed", "duration": 0.2},
]


@pytest.mark.parametrize(
    ("mode", "agents", "times", "expected"),
    [
        ("single", TWO, {}, 0.3),  # one after the other: the sum (written with one decimal)
        ("sequential", TWO, {}, 0.3),
        ("parallel", TWO, {}, 0.2),  # side by side: the longest
        ("single", [{"agent_name": "market_intelligence", "status": "completed"}], {}, 600.0),  # no times
        ("single", TWO, {"started": "2024-11-24T10:09:50Z", "completed": "2024-11-24T10:10:00Z"}, 10.0),
        ("single", TWO, {"started": "2024-11-24T10:09:50Z"}, 0.3),  # a Started alone is no span
    ],
)
def test_the_duration_a_save_writes(
    tmp_path: Path, mode: str, agents: list[dict[str, Any]], times: dict[str, str], expected: float
) -> None:
    assert saved_duration(tmp_path, mode, agents, **times) == expected


def test_a_duration_the_saver_gives_is_kept_and_saving_the_same_again_changes_no_byte(tmp_path: Path) -> None:
    assert saved_duration(tmp_path, "single", TWO, duration=42.0) == 42.0
    manager = CheckpointManager(tmp_path / "projects", clock=Clock())
    manager.save_checkpoint("acme", "s", 1, "completed", TWO)
    path = manager.phase_dir("acme", "s", 1) / "checkpoint.md"
    before = (path.read_bytes(), len(manager.history("acme", "s")))
    manager.save_checkpoint("acme", "s", 1, "completed", TWO)  # 0.1 + 0.2 is written 0.3
    assert (path.read_bytes(), len(manager.history("acme", "s"))) == before
    assert "- Duration: 0.3s\n" in path.read_text("utf-8")


# --------------------------------------------------------------- files written before the rule

LEGACY = Path(__file__).parent / "legacy" / "corpus" / "projects" / "proj-legacy"
DURATION_LINE = re.compile(r"^- Duration: (?:-|([0-9.]+)s)$", re.MULTILINE)


def test_legacy_sessions_show_the_duration_their_checkpoints_say_and_reading_writes_nothing(
    tmp_path: Path,
) -> None:
    """The first implementation's files (and an older haytham's, whose Duration may include a
    wait) are not recomputed: every view shows the Duration line as written, and no read
    changes a byte or a modification time."""
    import shutil

    base = tmp_path / "projects"
    shutil.copytree(LEGACY, base / "proj-legacy")

    def snapshot() -> dict[str, tuple[bytes, int]]:
        return {
            p.relative_to(base).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(base.rglob("*"))
            if p.is_file() and ".haytham-cache" not in p.parts
        }

    before = snapshot()
    checked = 0
    for session in sorted((base / "proj-legacy" / "sessions").iterdir()):
        written = {}
        for checkpoint in session.glob("phase_*/checkpoint.md"):
            found = DURATION_LINE.search(checkpoint.read_text("utf-8"))
            assert found is not None, checkpoint
            number = int(checkpoint.parent.name.split("_")[1])
            written[number] = None if found.group(1) is None else float(found.group(1))
        status = run(base, "status", "proj-legacy", session.name, "--json")
        if status.exit_code != 0:  # a session this corpus keeps unreadable on purpose
            continue
        rows = {p["number"]: p["duration"] for p in json.loads(status.stdout)["phases"]}
        assert {n: rows[n] for n in written if n in rows} == {n: d for n, d in written.items() if n in rows}
        stats = run_json(base, "stats", "--project", "proj-legacy", "--session", session.name)
        in_mode = sum(d or 0.0 for n, d in written.items() if n in rows)  # stats counts the mode's phases
        assert stats["totals"]["duration"] == pytest.approx(in_mode)
        checked += 1
    assert checked >= 8
    assert snapshot() == before
