"""The commits of ``--commit``: one per event worth one, reviews by the reviewer, and every
failure loud (the CLI says it, an event carries it, a stale ``.git/index.lock`` is explained)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from many_machines import GATED, PROJECT, clone, environment, git, seeded_origin
from small_workflow import Agents, manager_for, new_session, runner_for

from haytham.git.autocommit import AutoCommit, diagnose_index_lock
from haytham.git.repository import GitError
from haytham.run.runner import PhaseRunner
from haytham.store.events import Event
from haytham.store.manager import CheckpointManager

pytestmark = pytest.mark.usefixtures("isolated_git")
"""Every test runs real git with no system or user configuration (conftest.py)."""


def haytham(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", "projects"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )


def test_a_stale_index_lock_is_recognised_and_explained(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "runner")
    git(repo, "config", "user.email", "runner@example.com")
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"")
    past = time.time() - 3600
    os.utime(lock, (past, past))  # left by a commit killed an hour ago
    manager = manager_for(repo / "projects")
    auto = AutoCommit(manager)
    events: list[Event] = []
    manager.on("commit_failed", events.append)
    new_session(manager, "s-1")
    assert runner_for(manager, Agents()).run(PROJECT, "s-1").status == "awaiting_review"
    assert auto.commits == [] and len(auto.failures) == 2  # phase 1 completed, phase 2 awaits review
    said = str(auto.failures[0])
    assert said.startswith(f"auto-commit of {PROJECT}/s-1 ('haytham: {PROJECT}/s-1 phase 1 Idea completed")
    assert f"a stale .git/index.lock from an interrupted commit ({lock}, left at " in said
    assert f"before this run began; no git process is running in {repo.resolve()})" in said
    assert said.endswith(f"remove it if no git command is running: rm {lock}")
    assert [e.data["error"] for e in events] == [str(f) for f in auto.failures]
    assert [e.phase for e in events] == [1, 2]
    lock.unlink()
    assert diagnose_index_lock(repo.resolve()) is None


def test_a_fresh_index_lock_is_not_called_stale(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"")
    said = diagnose_index_lock(repo.resolve(), since=time.time() - 3600)  # newer than the run
    assert said is not None and said.startswith(f"git's index is locked by {lock} (since ")
    assert "stale" not in said


def test_resume_commit_reports_a_failed_commit_and_exits_non_zero(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    repo = clone(origin, tmp_path / "work", "runner")
    env = environment(tmp_path)
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"")
    past = time.time() - 3600
    os.utime(lock, (past, past))
    result = haytham(repo, "resume", PROJECT, "s-001", "--agents", "mm_agents:agent", "--commit", env=env)
    assert result.returncode == 1
    assert "Result: phase 1 awaits review" in result.stdout  # the run itself went on
    assert f"Error: auto-commit of {PROJECT}/s-001 (" in result.stderr
    assert "a stale .git/index.lock from an interrupted commit" in result.stderr
    assert "Error: 1 auto-commit failed (above); the session's files are saved but not committed" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_resume_and_feedback_commit_once_per_event_and_push(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    runner = clone(origin, tmp_path / "runner", "runner")
    reviewer = clone(origin, tmp_path / "reviewer", "rita")
    env = environment(tmp_path)
    first = haytham(runner, "resume", PROJECT, "s-001", "--agents", "mm_agents:agent", "--push", env=env)
    assert first.returncode == 0, first.stderr
    assert "Synced with origin: nothing new to merge, pushed" in first.stderr
    sent = haytham(reviewer, "feedback", PROJECT, "s-001", "1", "--reject", "--comment", "More.", "--push")
    assert sent.returncode == 0, sent.stderr
    again = haytham(runner, "resume", PROJECT, "s-001", "--agents", "mm_agents:agent", "--push", env=env)
    assert again.returncode == 0, again.stderr
    assert "Synced with origin: merged origin/main, nothing to push" in again.stderr  # the review first
    approved = haytham(reviewer, "feedback", PROJECT, "s-001", "1", "--approve", "--push")
    assert approved.returncode == 0, approved.stderr
    done = haytham(runner, "resume", PROJECT, "s-001", "--agents", "mm_agents:agent", "--push", env=env)
    assert done.returncode == 0, done.stderr

    log = git(origin, "log", "--reverse", "--format=%an|%s", "main").splitlines()
    where = f"haytham: {PROJECT}/s-001"
    assert [line for line in log if "haytham:" in line and "sync with" not in line] == [
        f"runner|{where} phase 1 Idea finished, awaits review (attempt 1)",
        f"rita|{where} phase 1 Idea sent back (review of attempt 1)",
        f"runner|{where} phase 1 Idea attempt 1 archived; the next attempt begins",
        f"runner|{where} phase 1 Idea finished, awaits review (attempt 2)",
        f"rita|{where} phase 1 Idea approved (review of attempt 2)",
        f"runner|{where} phase 2 Plan completed (attempt 1)",
        f"runner|{where} phase 3 Pitch completed (attempt 1)",
    ]
    fresh = clone(origin, tmp_path / "fresh", "auditor")
    manager = CheckpointManager(fresh / "projects", workflows=[GATED])
    assert manager.state(PROJECT, "s-001").state == "completed"
    assert manager.validate_session(PROJECT, "s-001") == []
    assert git(runner, "status", "--porcelain") == "" and git(reviewer, "status", "--porcelain") == ""


def test_autocommit_with_no_repository_is_still_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git repository"):
        AutoCommit(CheckpointManager(tmp_path / "projects"))


def test_review_push_fetches_first_and_pushes_each_review_as_its_own_commit(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 2)
    runner = clone(origin, tmp_path / "runner", "runner")
    reviewer = clone(origin, tmp_path / "reviewer", "rita")
    env = environment(tmp_path)
    for session in ("s-001", "s-002"):
        ran = haytham(runner, "resume", PROJECT, session, "--agents", "mm_agents:agent", "--push", env=env)
        assert ran.returncode == 0, ran.stderr
    script = tmp_path / "approve.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n"
        "text = path.read_text().replace('Reviewed: false', 'Reviewed: yes')\n"
        "text = text.replace('Approved: false', 'Approved: yes')\n"
        "text = text.replace('Action: pending', 'Action: approved')\n"
        "path.write_text(text)\n",
        "utf-8",
    )
    script.chmod(0o755)
    walked = haytham(reviewer, "review", "--push", env={**env, "EDITOR": str(script), "VISUAL": ""})
    assert walked.returncode == 0, walked.stdout + walked.stderr
    assert "2 phases await review" in walked.stdout  # seen because the walk fetched first
    assert walked.stderr.count("pushed") == 2  # each review shared as soon as it was saved
    log = git(origin, "log", "--format=%an|%s", "main").splitlines()
    reviews = [line for line in log if "(review of attempt" in line]
    assert sorted(reviews) == [
        f"rita|haytham: {PROJECT}/{session} phase 1 Idea approved (review of attempt 1)"
        for session in ("s-001", "s-002")
    ]


def test_rerun_fork_and_record_each_make_one_commit_saying_what_happened(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "runner")
    git(repo, "config", "user.email", "runner@example.com")
    manager = manager_for(repo / "projects")
    auto = AutoCommit(manager)
    new_session(manager, "s-1")
    runner = PhaseRunner(manager, runner_for(manager, Agents()).workflow, Agents().mapping(), autocommit=auto)
    assert runner.run(PROJECT, "s-1").status == "awaiting_review"
    manager.save_user_feedback(PROJECT, "s-1", 2, reviewed=True, approved=True)
    assert runner.run(PROJECT, "s-1").status == "completed"
    before = len(auto.commits)
    assert runner.rerun(PROJECT, "s-1", 3).status == "completed"
    manager.fork_session(PROJECT, "s-1", "s-2", 3)
    auto.record(PROJECT, "s-2", "imported from s-2.json")  # nothing changed: no commit
    subjects = git(repo, "log", "--format=%s", "main").splitlines()[::-1][before:]
    where = f"haytham: {PROJECT}/s-1"
    assert subjects == [
        f"{where} phase 3 Plan attempt 1, phase 4 Pitch attempt 1 archived; the next attempt begins",
        f"{where} phase 3 Plan completed (attempt 2)",
        f"{where} phase 4 Pitch completed (attempt 2)",
        f"haytham: {PROJECT}/s-2 forked from {PROJECT}/s-1 at phase 3",
    ]
    assert len(auto.commits) == before + 4 and auto.failures == []
    assert git(repo, "status", "--porcelain") == ""


def test_import_commit_and_push_make_one_commit_saying_what_happened(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    first = clone(origin, tmp_path / "first", "ada")
    second = clone(origin, tmp_path / "second", "bob")
    exported = tmp_path / "s-001.json"
    assert haytham(first, "export", PROJECT, "s-001", "-o", str(exported)).returncode == 0
    before = git(origin, "rev-list", "--count", "main")
    result = haytham(second, "import", str(exported), "--session", "s-copy", "--push")
    assert result.returncode == 0, result.stderr
    assert "Committed: 1 commit" in result.stderr
    assert int(git(origin, "rev-list", "--count", "main")) == int(before) + 1
    subject = git(origin, "log", "-1", "--format=%s", "main").strip()
    assert subject == f"haytham: {PROJECT}/s-copy imported from s-001.json"
    assert git(second, "status", "--porcelain") == ""
