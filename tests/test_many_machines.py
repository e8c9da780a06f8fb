"""Many machines sharing one git remote (docs/many-machines.md), all with real git and real
processes: a bare repository on a file URL is the remote, each host a clone of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from many_machines import (
    GATED,
    PROJECT,
    clone,
    environment,
    git,
    run_scenario,
    seeded_origin,
    session_name,
    start_worker,
)

from haytham.format.layout import CLAIM_FILE
from haytham.git.claims import SessionClaimed, claim_session, read_claim
from haytham.git.sync import DriverNotConfigured, SyncConflict, driver_configured, sync
from haytham.store.manager import CheckpointManager

pytestmark = pytest.mark.usefixtures("isolated_git")
"""Every test runs real git with no system or user configuration (conftest.py)."""


def check_outcome(tmp_path: Path, workers: int, reviewers: int, sessions: int) -> dict[str, object]:
    outcome = run_scenario(tmp_path, workers=workers, reviewers=reviewers, sessions=sessions)
    fresh = clone(outcome.origin, tmp_path / "fresh", "auditor")
    manager = CheckpointManager(fresh / "projects")
    for number in range(1, sessions + 1):
        session = session_name(number)
        assert manager.state(PROJECT, session).state == "completed", session
        assert manager.validate_session(PROJECT, session) == [], session
        assert not (manager.session_dir(PROJECT, session) / CLAIM_FILE).exists()  # every claim released
        sent_back = number % 3 == 0
        assert [a.number for a in manager.load_attempts(PROJECT, session, 1)] == (
            [1, 2] if sent_back else [1]
        )
    assert outcome.duplicate_runs == 0
    expected = sum(4 + (1 if number % 3 == 0 else 0) for number in range(1, sessions + 1))
    assert len(outcome.calls) == expected  # every attempt's agents ran exactly once, on some host
    for repo in outcome.clones:  # no commit lost: every host's work is on the remote's main
        head = git(repo, "rev-parse", "main").strip()
        assert git(outcome.origin, "merge-base", "--is-ancestor", head, "main", check=False) == ""
    assert all("conflict" not in err.lower() for err in outcome.stderr), outcome.stderr
    assert git(fresh, "status", "--porcelain") == ""
    assert sum(len(r["runs"]) for r in outcome.worker_reports) >= sessions
    summary = outcome.summary(fresh)
    assert summary["reviews"] == sessions + sum(1 for n in range(1, sessions + 1) if n % 3 == 0)
    print(json.dumps(summary))
    target = os.environ.get("HAYTHAM_MANY_MACHINES_SUMMARY")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    return summary


def test_two_workers_and_a_reviewer_finish_three_sessions(tmp_path: Path) -> None:
    check_outcome(tmp_path, workers=2, reviewers=1, sessions=3)


@pytest.mark.slow
def test_four_workers_and_two_reviewers_finish_twelve_sessions(tmp_path: Path) -> None:
    check_outcome(tmp_path, workers=4, reviewers=2, sessions=12)


# ------------------------------------------------------------------------ claims


def test_a_killed_workers_claim_expires_and_another_worker_takes_the_session_over(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    session = session_name(1)
    hanging = tmp_path / "hanging"
    env = environment(tmp_path)
    doomed = start_worker(
        tmp_path, origin, "worker-a", {**env, "MM_HANG": session, "MM_HANGING": str(hanging)}, claim_seconds=2
    )
    while not hanging.exists():  # its agent runs: its claim is on the remote
        assert doomed.poll() is None, doomed.communicate()
        time.sleep(0.05)
    doomed.send_signal(signal.SIGKILL)
    doomed.communicate()
    claim_path = f"projects/{PROJECT}/sessions/{session}/{CLAIM_FILE}"
    assert json.loads(git(origin, "show", f"main:{claim_path}"))["worker"] == "worker-a"

    heir = start_worker(tmp_path, origin, "worker-b", env, claim_seconds=600, more=("--max", "2"))
    reviewer = clone(origin, tmp_path / "reviewer", "reviewer")
    reviewed = subprocess.run(
        [sys.executable, str(tmp_path / "mm_reviewer.py"), str(reviewer), "0", "1", "1"],
        cwd=reviewer,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert reviewed.returncode == 0, reviewed.stderr
    out, err = heir.communicate(timeout=600)
    assert heir.returncode == 0, err
    report = json.loads(out)
    assert report["takeovers"] == 1
    assert [run[2] for run in report["runs"]] == ["awaiting_review", "completed"]
    subjects = git(origin, "log", "--format=%s", "main")
    assert f"haytham: {PROJECT}/{session} claimed by worker-b until " in subjects
    assert "(took over from worker worker-a (process " in subjects  # the takeover is recorded

    fresh = clone(origin, tmp_path / "fresh", "auditor")
    manager = CheckpointManager(fresh / "projects")
    assert manager.state(PROJECT, session).state == "completed"
    assert manager.validate_session(PROJECT, session) == []
    assert not (manager.session_dir(PROJECT, session) / CLAIM_FILE).exists()


def test_two_workers_claiming_one_session_at_once_one_wins_the_other_is_told_who(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    a, b = clone(origin, tmp_path / "a", "a"), clone(origin, tmp_path / "b", "b")
    what = f"{PROJECT}/{session_name(1)}"
    won = claim_session(
        a, a / "projects" / PROJECT / "sessions" / session_name(1), what, worker="a", ttl=600, remote="origin"
    )
    head = git(b, "rev-parse", "HEAD")
    session_b = b / "projects" / PROJECT / "sessions" / session_name(1)
    with pytest.raises(SessionClaimed) as lost:
        claim_session(b, session_b, what, worker="b", ttl=600, remote="origin")
    assert str(lost.value) == f"session {what} is claimed by {won.describe()}"
    assert str(lost.value).endswith(f"until {won.expires}")
    assert read_claim(session_b) == won  # b now has a's claim, and no claim commit of its own
    assert "claimed by b" not in git(b, "log", "--format=%s")
    assert git(b, "merge-base", "--is-ancestor", head.strip(), "HEAD", check=False) == ""


# -------------------------------------------------------------------------- sync


def test_a_clone_without_the_driver_refuses_to_merge_or_sets_it_up(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    other = clone(origin, tmp_path / "other", "other")
    CheckpointManager(other / "projects", workflows=[GATED]).create_session(
        PROJECT, "s-new", "bob", GATED, "full"
    )
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "bob's session")
    assert sync(other, "origin").pushed
    bare = clone(origin, tmp_path / "bare-clone", "carol", driver=False)
    git(bare, "reset", "-q", "--hard", "HEAD~1")  # behind the remote
    before = git(bare, "rev-parse", "HEAD")
    assert not driver_configured(bare)
    with pytest.raises(DriverNotConfigured, match="the haytham merge driver is not configured in "):
        sync(bare, "origin")
    assert git(bare, "rev-parse", "HEAD") == before  # nothing was merged
    refused = subprocess.run(
        [sys.executable, "-m", "haytham", "sync", "--base-dir", "projects"],
        cwd=bare,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: the haytham merge driver is not configured in ")
    assert "`haytham git setup`" in refused.stderr
    done = subprocess.run(
        [sys.executable, "-m", "haytham", "sync", "--setup-driver", "--base-dir", "projects", "--json"],
        cwd=bare,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["driver_set_up"] is True
    assert driver_configured(bare)
    assert (bare / "projects" / PROJECT / "sessions" / "s-new").is_dir()


def test_the_same_session_created_by_two_users_is_a_true_conflict_and_nothing_is_lost(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    a, b = clone(origin, tmp_path / "a", "ada"), clone(origin, tmp_path / "b", "bob")
    for repo, user in ((a, "ada"), (b, "bob")):
        CheckpointManager(repo / "projects", workflows=[GATED]).create_session(
            PROJECT, "s-dup", user, GATED, "full"
        )
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{user} creates s-dup")
    assert sync(a, "origin").pushed
    mine = git(b, "rev-parse", "HEAD")
    result = subprocess.run(
        [sys.executable, "-m", "haytham", "sync", "--base-dir", "projects"],
        cwd=b,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    manifest = f"projects/{PROJECT}/sessions/s-dup/session_manifest.md"
    assert result.stderr.startswith("Error: sync stopped at a true conflict with origin/main in ")
    assert f"{manifest} line " in result.stderr
    assert "Nothing was lost: the merge was undone" in result.stderr
    with pytest.raises(SyncConflict) as caught:
        sync(b, "origin")
    assert any(spot.path == manifest and spot.line is not None for spot in caught.value.spots)
    assert git(b, "rev-parse", "HEAD") == mine  # the local commit is kept
    assert git(b, "status", "--porcelain") == ""  # no half-merged files
    assert git(b, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False) == ""
    doctor = subprocess.run(
        [sys.executable, "-m", "haytham", "doctor", PROJECT, "s-dup", "--base-dir", "projects"],
        cwd=b,
        capture_output=True,
        text=True,
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert CheckpointManager(b / "projects").load_manifest(PROJECT, "s-dup").user_id == "bob"


def test_sigterm_stops_a_worker_cleanly_releasing_its_claim_and_keeping_its_outputs(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    session = session_name(1)
    hanging, release = tmp_path / "hanging", tmp_path / "release"
    env = environment(tmp_path)
    blocked = {**env, "MM_BLOCK": session, "MM_HANGING": str(hanging), "MM_RELEASE": str(release)}
    worker = start_worker(tmp_path, origin, "worker-a", blocked)
    while not hanging.exists():
        assert worker.poll() is None, worker.communicate()
        time.sleep(0.05)
    worker.send_signal(signal.SIGTERM)
    release.touch()  # the agent finishes; the worker stops right after its output is saved
    out, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err
    report = json.loads(out)
    assert report["stopped"] is True and report["runs"] == [[PROJECT, session, "stopped"]]
    subjects = git(origin, "log", "--format=%s", "main")
    assert f"haytham: {PROJECT}/{session} released by worker-a (stopped)" in subjects
    fresh = clone(origin, tmp_path / "fresh", "auditor")
    manager = CheckpointManager(fresh / "projects")
    assert not (manager.session_dir(PROJECT, session) / CLAIM_FILE).exists()
    assert manager.load_agent_output(PROJECT, session, 1, "writer").status == "completed"  # kept
    assert manager.state(PROJECT, session).current.state == "in_progress"  # type: ignore[union-attr]
    heir = start_worker(tmp_path, origin, "worker-b", env, more=("--max", "1"))
    out, err = heir.communicate(timeout=300)
    assert heir.returncode == 0, err
    assert json.loads(out)["runs"] == [[PROJECT, session, "awaiting_review"]]
    calls = (tmp_path / "calls.log").read_text("utf-8").splitlines()
    assert [line.rsplit("|", 1)[0] for line in calls] == [f"{session}|1|writer|1"]  # not run again
