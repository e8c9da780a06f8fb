"""A hand review's time (issue 25, item 5): the commit that last changed the file, not its mtime.

A clone gives every file a fresh modification time, so a hand review (``Reviewed: true``
written by a person, ``Timestamp: -``) read from a clone waited as long as the clone is old
(35,226 h in the issue). ``haytham stats`` asks git once, for every such file, when the file
was last committed, uses that time when the file is committed unchanged since, else the
file's modification time, and says which source each review time came from. Real git, real
clones, ``stats`` as a real process; a git on PATH that logs each call counts them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta, timezone
from pathlib import Path

import pytest
from test_cli import P, run

from haytham import CheckpointManager
from haytham.store.clock import format_timestamp, parse_timestamp

pytestmark = pytest.mark.usefixtures("isolated_git")

REVIEWER = ("Rita Reviewer", "rita@example.com")
SESSIONS = ("idea-001", "idea-002", "idea-003")


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", "-c", f"user.name={REVIEWER[0]}", "-c", f"user.email={REVIEWER[1]}", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def approve_by_hand(path: Path) -> None:
    """What a person does in their editor: approve, leaving the Timestamp as it was (``-``)."""
    text = path.read_text()
    for old, new in (("Reviewed: false", "Reviewed: true"), ("Approved: false", "Approved: true")):
        text = text.replace(old, new)
    path.write_text(text.replace("Action: pending", "Action: approved"))


def stats(base: Path, cwd: Path, counted: Path) -> dict[str, object]:
    """``haytham stats --json`` as a real process whose git calls are logged in ``counted``."""
    wrapper = counted.parent / "bin"
    wrapper.mkdir(exist_ok=True)
    real = shutil.which("git")
    assert real is not None
    (wrapper / "git").write_text(f'#!/bin/sh\necho "$@" >> "{counted}"\nexec "{real}" "$@"\n')
    (wrapper / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrapper}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [sys.executable, "-m", "haytham", "stats", "--json", "--base-dir", str(base)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def reviewed_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose sessions' phase 1 were approved by hand and committed two hours
    after the phase completed; the commit's author time."""
    repo = tmp_path / "origin"
    base = repo / "projects"
    for session in SESSIONS:
        assert run(base, "demo", "--review", "manual", "--session", session).exit_code == 0
        approve_by_hand(CheckpointManager(base).phase_dir(P, session, 1) / "user_feedback.md")
    completed = CheckpointManager(base).load_checkpoint(P, SESSIONS[0], 1).completed
    assert completed is not None
    reviewed = (parse_timestamp(completed) + timedelta(hours=2)).replace(microsecond=0)  # git keeps seconds
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    stamp = reviewed.astimezone(timezone(timedelta(hours=3))).isoformat()  # any offset: read as UTC
    git(
        repo,
        "commit",
        "-q",
        "-m",
        "hand reviews",
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    return repo, format_timestamp(reviewed)


def test_a_fresh_clone_shows_the_commits_review_time_with_one_git_log(
    reviewed_repo: tuple[Path, str], tmp_path: Path
) -> None:
    repo, reviewed = reviewed_repo
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    base = clone / "projects"
    manager = CheckpointManager(base)
    waits = []
    for session in SESSIONS:
        path = manager.phase_dir(P, session, 1) / "user_feedback.md"
        assert "Timestamp: -" in path.read_text()
        completed = manager.load_checkpoint(P, session, 1).completed
        assert completed is not None
        waits.append((parse_timestamp(reviewed) - parse_timestamp(completed)).total_seconds())
    counted = tmp_path / "calls" / "git.log"
    counted.parent.mkdir()
    found = stats(base, clone, counted)
    assert found["review_times_from"] == {"recorded": 0, "git": 3, "file": 0}
    assert found["reviews"] == 3
    assert found["review_wait"] == pytest.approx(sum(waits), abs=0.01)  # hours, not the clone's seconds
    assert all(w > 3600 for w in waits)
    calls = counted.read_text().split("\n")[:-1]
    assert sum(" log " in f" {c} " for c in calls) == 1  # one git log for all three files
    assert len(calls) <= 3, calls  # the work tree, the log, the status: never one per file
    before = {p: p.stat().st_mtime_ns for p in base.rglob("*")}
    assert stats(base, clone, counted)["review_times_from"] == found["review_times_from"]
    assert {p: p.stat().st_mtime_ns for p in base.rglob("*")} == before  # reads never write


def test_a_review_changed_since_its_commit_or_outside_git_takes_the_files_time(
    reviewed_repo: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = reviewed_repo
    base = repo / "projects"
    edited = CheckpointManager(base).phase_dir(P, SESSIONS[0], 1) / "user_feedback.md"
    edited.write_text(edited.read_text() + "\n## My Notes\nlooked again\n")
    counted = tmp_path / "calls" / "git.log"
    counted.parent.mkdir()
    found = stats(base, repo, counted)
    assert found["review_times_from"] == {"recorded": 0, "git": 2, "file": 1}
    elsewhere = tmp_path / "copy"
    shutil.copytree(base, elsewhere)  # not in any repository
    assert stats(elsewhere, tmp_path, counted)["review_times_from"] == {"recorded": 0, "git": 0, "file": 3}


def test_a_recorded_review_time_is_said_so_and_git_is_not_asked(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    assert run(base, "demo", "--review", "manual").exit_code == 0
    assert run(base, "feedback", P, SESSIONS[0], "1", "--approve").exit_code == 0
    counted = tmp_path / "calls" / "git.log"
    counted.parent.mkdir()
    found = stats(base, tmp_path, counted)
    assert found["review_times_from"] == {"recorded": 1, "git": 0, "file": 0}
    assert not counted.exists()  # no hand review: no git process at all
    shown = run(base, "stats")
    assert "review time from: recorded 1" in shown.output


def test_stats_says_where_a_hand_reviews_time_came_from(
    reviewed_repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _ = reviewed_repo
    monkeypatch.chdir(repo)
    shown = run(repo / "projects", "stats")
    assert shown.exit_code == 0, shown.output
    assert "review time from: git 3" in shown.output
