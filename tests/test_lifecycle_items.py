"""Issue 12's items 1-4 and ``rerun``, each as a new user meets it: through the command line
(and, for item 3, two real git clones), asserting what every view says now."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from test_git_merge import (
    IDENTITY,
    P,
    S,
    clock_at,
    clone,
    git,
    pull,
    seeded_origin,
    session_with_phase_3_failed,
)

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format.workflow import IDEA_VALIDATION
from haytham.git.autocommit import AutoCommit
from haytham.run.demo import DEMO_AGENTS, run_demo
from haytham.run.runner import PhaseRunner

DEMO = "demo"


def run(base: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(base)])
    assert "Traceback" not in result.output, result.output
    return result


def run_json(base: Path, *args: str) -> Any:
    result = run(base, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def listed(base: Path, *args: str) -> dict[str, tuple[str, int]]:
    """``haytham list --json``: each session's status and current phase."""
    data = run_json(base, "list", *args)
    return {s["session_id"]: (s["status"], s["current_phase"]) for s in data["sessions"]}


def completed_demo(base: Path, session: str) -> CheckpointManager:
    manager = CheckpointManager(base)
    assert run_demo(manager, session).status == "completed"
    return manager


# -------------------------------------------------------------------------- item 1


def test_item_1_a_phase_without_a_gate_sent_back_runs_again_on_resume(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    manager = completed_demo(base, "rj")
    phase_3 = manager.phase_dir(DEMO, "rj", 3)
    before = (phase_3 / "niche_selector.md").read_text("utf-8")
    sent = run(
        base, "feedback", DEMO, "rj", "3", "--reject", "--comment", "Wrong niche", "--change", "Pick B2B"
    )
    assert sent.exit_code == 0, sent.output
    assert "every phase is done" not in sent.output
    assert listed(base) == {"rj": ("in_progress", 3)}
    assert run_json(base, "status", DEMO, "rj")["phases"][2]["status"] == "sent_back"

    resumed = run(base, "resume", DEMO, "rj")
    assert resumed.exit_code == 0, resumed.output
    assert (phase_3 / "attempts" / "1" / "niche_selector.md").read_text("utf-8") == before
    assert "Wrong niche" in (phase_3 / "attempts" / "1" / "user_feedback.md").read_text("utf-8")
    after = (phase_3 / "niche_selector.md").read_text("utf-8")
    assert "## Changes in attempt 2" in after and "- Addressed: Pick B2B" in after  # it saw the review
    assert manager.load_checkpoint(DEMO, "rj", 3).retry_count == 1
    status = run_json(base, "status", DEMO, "rj")
    assert (status["status"], status["phases"][2]["status"]) == ("completed", "completed")
    assert listed(base) == {"rj": ("completed", status["current_phase"])}


# -------------------------------------------------------------------------- item 2


def test_item_2_phase_1_sent_back_reopens_a_completed_session_and_reruns_what_was_built_on_it(
    tmp_path: Path,
) -> None:
    base = tmp_path / "projects"
    manager = completed_demo(base, "s")
    builds = {n: manager.load_checkpoint(DEMO, "s", n).retry_count for n in (2, 3, 6, 7)}
    assert builds == {2: 0, 3: 0, 6: 0, 7: 0}
    assert run(base, "feedback", DEMO, "s", "1", "--reject", "--comment", "Too vague").exit_code == 0

    status = run_json(base, "status", DEMO, "s")
    assert (status["status"], status["current_phase"], status["phases"][0]["status"]) == (
        "in_progress",
        1,
        "sent_back",
    )
    assert listed(base) == {"s": ("in_progress", 1)}
    state = manager.load_session(DEMO, "s")
    assert (state["status"], state["current_phase"], state["phase_statuses"][1]) == (
        "in_progress",
        1,
        "sent_back",
    )
    assert "Session demo/s: " in (text := run(base, "status", DEMO, "s").output)
    assert text.splitlines()[0].endswith("in_progress")

    # the re-run of phase 1 waits for its review; approving it makes 2.. stale, resume re-runs them
    assert run(base, "resume", DEMO, "s").exit_code == 0
    assert run(base, "feedback", DEMO, "s", "1", "--approve").exit_code == 0
    assert {p["number"]: p["status"] for p in run_json(base, "status", DEMO, "s")["phases"]} == {
        1: "approved",
        2: "stale",
        3: "stale",
        6: "stale",
        7: "stale",
    }
    assert run(base, "resume", DEMO, "s").exit_code == 0
    assert {n: manager.load_checkpoint(DEMO, "s", n).retry_count for n in (2, 3, 6, 7)} == {
        2: 1,
        3: 1,
        6: 1,
        7: 1,
    }
    assert manager.state(DEMO, "s").state == "completed"
    assert listed(base) == {"s": ("completed", 7)}


# -------------------------------------------------------------------------- item 3


def test_item_3_a_merge_of_phase_2s_new_attempt_with_phases_built_on_the_old_one_is_stale(
    tmp_path: Path,
) -> None:
    origin = seeded_origin(tmp_path, session_with_phase_3_failed)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    # clone a completes phases 3.. on phase 2's first attempt
    runner_side = CheckpointManager(a / "projects", clock=clock_at(100))
    AutoCommit(runner_side, identity=IDENTITY)
    assert PhaseRunner(runner_side, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "completed"
    git(a, "push", "-q", "origin", "main")
    # clone b (cloned before) sends phase 2 back and runs attempt 2
    other = CheckpointManager(b / "projects", clock=clock_at(100.5))
    AutoCommit(other, identity=IDENTITY)
    other.save_user_feedback(P, S, 2, reviewed=True, approved=False, comments="Add EU", action="retry")
    assert other.start_attempt(P, S, 2) == 2
    agents = []
    for name in ("market_intelligence", "competitor_analysis"):
        other.save_agent_output(P, S, 2, name, f"# {name}, attempt 2\n\nWith EU numbers.\n")
        agents.append({"agent_name": name})
    other.save_checkpoint(P, S, 2, "completed", agents, retry_count=1, execution_mode="parallel")
    code, output = pull(b, "--no-rebase")
    assert code == 0, output

    base = b / "projects"
    validated = run_json(base, "validate")
    assert [i["severity"] for i in validated["issues"] if i["severity"] == "error"] == []
    stale = [i["message"] for i in validated["issues"] if i["field"] == "Built From"]
    assert stale == [
        f"phase {n} is stale (built on phase 2, which changed since); run haytham resume to run it again"
        for n in (3, 6, 7)
    ]
    doctor = run(base, "doctor", P, S)
    assert doctor.output.count("stale_phase") == 3 and "built on phase 2" in doctor.output
    status = run_json(base, "status", P, S)
    assert status["stale_phases"] == {"3": [2], "6": [2], "7": [2]}
    assert {p["number"]: p["status"] for p in status["phases"]}[3] == "stale"

    resumed = run(base, "resume", P, S, "--agents", "haytham.run.demo:DEMO_AGENTS")
    assert resumed.exit_code == 0, resumed.output
    manager = CheckpointManager(base)
    assert {n: manager.load_checkpoint(P, S, n).retry_count for n in (3, 6, 7)} == {3: 1, 6: 1, 7: 1}
    assert all(manager.load_attempts(P, S, n)[0].number == 1 for n in (3, 6, 7))  # the old runs are kept
    assert manager.state(P, S).state == "completed"
    after = run_json(base, "validate")
    assert (after["ok"], after["issues"]) == (True, [])


# -------------------------------------------------------------------------- item 4


def test_item_4_list_and_status_agree_and_list_what_awaits_a_reviewer(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "waits-1", review="manual").status == "awaiting_review"
    assert run_demo(manager, "waits-2", review="manual").status == "awaiting_review"
    assert run_demo(manager, "done").status == "completed"
    status = run_json(base, "status", DEMO, "waits-1")
    assert (status["status"], status["current_phase"]) == ("awaiting_review", 1)
    assert listed(base)["waits-1"] == ("awaiting_review", status["current_phase"])
    assert (
        "Current phase: 1 Concept Expansion (awaiting review)" in run(base, "status", DEMO, "waits-1").output
    )
    waiting = {"waits-1": ("awaiting_review", 1), "waits-2": ("awaiting_review", 1)}
    assert listed(base, "--awaiting-review") == waiting
    assert listed(base, "--status", "awaiting_review") == waiting
    assert listed(base, "--status", "completed") == {"done": ("completed", 7)}


# ---------------------------------------------------------------------------- rerun


def test_rerun_from_phase_3_archives_3_and_later_and_leaves_earlier_phases_byte_for_byte(
    tmp_path: Path,
) -> None:
    base = tmp_path / "projects"
    manager = completed_demo(base, "s")
    session = manager.session_dir(DEMO, "s")

    def files(*prefixes: str) -> dict[str, bytes]:
        return {
            p.relative_to(session).as_posix(): p.read_bytes()
            for p in sorted(session.rglob("*"))
            if p.is_file() and p.relative_to(session).as_posix().startswith(prefixes)
        }

    earlier = files("phase_1_", "phase_2_")
    later = {n: files(manager.phase_dir(DEMO, "s", n).name + "/") for n in (3, 6, 7)}
    result = run(base, "rerun", DEMO, "s", "--from-phase", "3")
    assert result.exit_code == 0, result.output
    assert files("phase_1_", "phase_2_") == earlier
    for n, before in later.items():
        name = manager.phase_dir(DEMO, "s", n).name
        archived = files(f"{name}/attempts/1/")
        assert {k.replace("attempts/1/", ""): v for k, v in archived.items()} == before
        assert manager.load_checkpoint(DEMO, "s", n).retry_count == 1
    assert manager.state(DEMO, "s").state == "completed"


# ------------------------------------------------------- a review written by hand, and list


def test_a_review_written_by_hand_is_a_validate_warning_until_doctor_fix_writes_the_manifest(
    tmp_path: Path,
) -> None:
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "s", review="manual").status == "awaiting_review"
    feedback = manager.phase_dir(DEMO, "s", 1) / "user_feedback.md"
    text = feedback.read_text("utf-8")
    feedback.write_text(
        text.replace("- Reviewed: false", "- Reviewed: true").replace("- Approved: false", "- Approved: true")
    )
    assert manager.state(DEMO, "s").phase(1).state == "approved"
    # list derives the state from the files: it shows the review at once (docs/lifecycle.md)
    assert listed(base) == {"s": ("in_progress", 2)}
    validated = run_json(base, "validate")
    assert validated["ok"] is True
    [issue] = validated["issues"]
    assert (issue["severity"], issue["field"]) == ("warning", "Phase Status")
    assert (
        "'approved' after its review file" in issue["message"] and "haytham doctor --fix" in issue["message"]
    )
    assert run(base, "doctor", DEMO, "s", "--fix").exit_code == 0
    assert listed(base) == {"s": ("in_progress", 2)}
    assert run_json(base, "validate")["issues"] == []
