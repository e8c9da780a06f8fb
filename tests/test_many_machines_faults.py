"""Many machines when something goes wrong (issue 24): a remote that refuses pushes, a stale
lock in the remote, a runner killed with SIGKILL, a clone set up before the remote had
``.gitattributes``, and two runners sharing one name. Real git, real processes: a bare
repository on a file URL is the remote, each host a clone of its own (tests/many_machines.py).
"""

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
    PROJECT,
    bare_origin,
    clone,
    environment,
    git,
    new_repository,
    seeded_origin,
    session_name,
    start_worker,
)

from haytham.format.layout import CLAIM_FILE
from haytham.git.merge import setup
from haytham.store.manager import CheckpointManager

pytestmark = pytest.mark.usefixtures("isolated_git")
"""Every test runs real git with no system or user configuration (conftest.py)."""

KEPT_DIR = ".haytham-kept"
"""Where a clone keeps the files a killed run left (docs/many-machines.md)."""
DEADLINE = 120.0
"""Seconds any one process of these tests may take; a process still running then is a failure."""


def haytham(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``haytham ARGS`` in ``repo``, bounded by DEADLINE (a TimeoutExpired fails the test)."""
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=DEADLINE,
    )


def runner(repo: Path, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    return haytham(
        repo,
        "runner",
        "--remote",
        "origin",
        "--agents",
        "mm_agents:agent",
        "--poll",
        "0.2",
        "--until-idle",
        "--base-dir",
        str(repo / "projects"),
        *more,
        env=env,
    )


def error_line(stderr: str) -> str:
    """The one ``Error:`` line a command printed; fails unless there is exactly one line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: "), stderr
    return lines[0]


def commit_something(repo: Path) -> None:
    (repo / "notes.md").write_text(f"a note from {repo.name}\n", "utf-8")
    git(repo, "add", "notes.md")
    git(repo, "commit", "-q", "-m", "a note")


# ------------------------------------------------------------ a refusing remote (item 6)


def test_a_remote_whose_hook_refuses_every_push_stops_sync_and_runner_with_its_words(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are frozen until Monday' >&2\nexit 1\n", "utf-8")
    hook.chmod(0o755)
    env = environment(tmp_path)

    laptop = clone(origin, tmp_path / "laptop", "ada")
    commit_something(laptop)
    mine = git(laptop, "rev-parse", "HEAD")
    started = time.monotonic()
    synced = haytham(laptop, "sync", "--base-dir", "projects")
    assert synced.returncode == 1
    said = error_line(synced.stderr)
    assert "pushes are frozen until Monday" in said  # the remote's own words
    assert "pre-receive hook declined" in said
    assert "other machines" not in said and "rejected 12 times" not in said  # not a race
    assert time.monotonic() - started < 30  # not retried with backoff as if it were one
    assert git(laptop, "rev-parse", "HEAD") == mine  # the commit is kept

    worker = clone(origin, tmp_path / "worker", "worker-a")
    ran = runner(worker, env, "--worker", "worker-a")  # before: still running at the deadline
    assert ran.returncode == 1, ran.stdout + ran.stderr
    said = error_line(ran.stderr)
    assert "pushes are frozen until Monday" in said and "pre-receive hook declined" in said
    assert "other machines" not in said
    assert not (tmp_path / "calls.log").exists()  # no agent ran without a claim on the remote
    session_dir = worker / "projects" / PROJECT / "sessions" / session_name(1)
    assert not (session_dir / CLAIM_FILE).exists()  # the claim that was refused is not left behind
    assert git(worker, "status", "--porcelain") == ""


# ------------------------------------------------------- a stale lock in the remote (item 9)


@pytest.mark.parametrize("lock", ["HEAD.lock", "refs/heads/main.lock"])
def test_a_stale_lock_in_the_remote_is_named_with_its_fix_not_blamed_on_other_machines(
    tmp_path: Path, lock: str
) -> None:
    origin = seeded_origin(tmp_path, 1)
    stale = origin / lock
    stale.write_text("", "utf-8")  # a git process on the remote was killed while updating a ref
    env = environment(tmp_path)

    laptop = clone(origin, tmp_path / "laptop", "ada")
    commit_something(laptop)
    started = time.monotonic()
    synced = haytham(laptop, "sync", "--base-dir", "projects")
    assert synced.returncode == 1
    said = error_line(synced.stderr)
    assert "other machines" not in said
    assert f"remove {stale}" in said.replace("/./", "/")
    assert "if no git process is running there" in said
    assert time.monotonic() - started < 30

    worker = clone(origin, tmp_path / "worker", "worker-a")
    ran = runner(worker, env, "--worker", "worker-a")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    said = error_line(ran.stderr)
    assert f"remove {stale}" in said.replace("/./", "/") and "other machines" not in said
    assert not (tmp_path / "calls.log").exists()

    stale.unlink()  # the fix the message names
    assert haytham(laptop, "sync", "--base-dir", "projects").returncode == 0


# ------------------------------------------------------------- a killed runner (item 7)


def test_a_sigkilled_runners_clone_syncs_again_by_itself_keeping_its_files_aside(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    session = session_name(1)
    hanging = tmp_path / "hanging"
    env = environment(tmp_path)
    doomed = start_worker(
        tmp_path, origin, "worker-a", {**env, "MM_HANG": session, "MM_HANGING": str(hanging)}, claim_seconds=1
    )
    deadline = time.monotonic() + DEADLINE
    while not hanging.exists():  # its claim is on the remote, its phase has begun
        assert doomed.poll() is None, doomed.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    doomed.send_signal(signal.SIGKILL)
    doomed.communicate()
    dead = tmp_path / "worker-a"
    session_dir = Path("projects") / PROJECT / "sessions" / session
    left = git(dead, "status", "--porcelain", "--untracked-files=all", "--", str(session_dir))
    assert left.strip(), "the killed runner left no uncommitted file: nothing is reproduced"

    heir = start_worker(tmp_path, origin, "worker-b", env, more=("--max", "1"))  # redoes the phase
    out, err = heir.communicate(timeout=DEADLINE)
    assert heir.returncode == 0, err
    assert json.loads(out)["runs"] == [[PROJECT, session, "awaiting_review"]]

    synced = haytham(dead, "sync", "--base-dir", "projects")  # before: git's "would be overwritten"
    assert synced.returncode == 0, synced.stderr
    assert "would be overwritten" not in synced.stdout + synced.stderr
    kept = dead / KEPT_DIR
    assert KEPT_DIR in synced.stdout  # the user is told where the files went
    for line in left.splitlines():
        name = line[3:].strip()
        if line[:2] != " D":  # every file the killed run left is kept, none is thrown away
            assert list(kept.glob(f"*/{name}")), (name, sorted(kept.rglob("*")))
    assert git(dead, "status", "--porcelain") == ""  # the kept folder is ignored by git
    assert git(dead, "rev-parse", "HEAD") == git(origin, "rev-parse", "main")
    manager = CheckpointManager(dead / "projects")
    assert manager.state(PROJECT, session).next_action == "review"  # the heir's work, whole
    assert manager.validate_session(PROJECT, session) == []

    again = haytham(dead, "runner", "--remote", "origin", "--agents", "mm_agents:agent", "--until-idle",
                    "--base-dir", "projects", "--worker", "worker-a", env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert haytham(dead, "sync", "--base-dir", "projects").returncode == 0


def test_a_sync_killed_in_its_merge_leaves_a_clone_the_next_sync_recovers(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    a, b = clone(origin, tmp_path / "a", "ada"), clone(origin, tmp_path / "b", "bob")
    commit_something(b)
    git(b, "push", "-q", "origin", "main")
    (a / "other.md").write_text("ada's\n", "utf-8")
    git(a, "add", "other.md")
    git(a, "commit", "-q", "-m", "ada's other file")
    git(a, "fetch", "-q", "origin")
    # what a sync killed between git's merge and its commit leaves: haytham's merge in progress
    git(a, "merge", "--no-commit", "--no-ff", "-m", "haytham: sync with origin/main", "origin/main")
    assert git(a, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).strip()
    synced = haytham(a, "sync", "--base-dir", "projects")
    assert synced.returncode == 0, synced.stderr
    assert git(b, "log", "-1", "--format=%s", "origin/main") == "a note\n"
    assert git(origin, "cat-file", "-t", "main:other.md").strip() == "blob"
    assert git(origin, "cat-file", "-t", "main:notes.md").strip() == "blob"


def test_a_stale_index_lock_left_by_a_killed_git_does_not_stop_the_next_sync(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    a, b = clone(origin, tmp_path / "a", "ada"), clone(origin, tmp_path / "b", "bob")
    commit_something(b)
    git(b, "push", "-q", "origin", "main")
    lock = a / ".git" / "index.lock"
    lock.write_text("", "utf-8")
    old = time.time() - 60
    os.utime(lock, (old, old))  # left a minute ago by a git that was killed; none runs now
    synced = haytham(a, "sync", "--base-dir", "projects")
    assert synced.returncode == 0, synced.stderr
    assert not lock.exists()
    assert (a / "notes.md").exists()


def test_git_setup_in_a_clone_older_than_the_remotes_gitattributes_leaves_sync_free(tmp_path: Path) -> None:
    origin = bare_origin(tmp_path)
    first = new_repository(tmp_path / "first")
    commit_something(first)
    git(first, "remote", "add", "origin", origin.as_uri())
    git(first, "push", "-q", "origin", "main")
    old = clone(origin, tmp_path / "old", "olga", driver=False)  # before the remote had .gitattributes

    setup(first, first / "projects")  # the team sets haytham up and commits it
    git(first, "add", ".gitattributes")
    git(first, "commit", "-q", "-m", "haytham's merge driver")
    git(first, "push", "-q", "origin", "main")

    done = haytham(old, "git", "setup")
    assert done.returncode == 0, done.stderr
    synced = haytham(old, "sync", "--base-dir", "projects")  # before: ".gitattributes would be overwritten"
    assert synced.returncode == 0, synced.stderr
    assert (old / ".gitattributes").read_text("utf-8") == (first / ".gitattributes").read_text("utf-8")
    assert git(old, "status", "--porcelain") == ""
    assert haytham(old, "sync", "--base-dir", "projects").returncode == 0


# ------------------------------------------------------------------ twin workers (item 9)


def test_two_runners_with_one_name_never_run_an_agent_twice(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, 1)
    session = session_name(1)
    hanging, release = tmp_path / "hanging", tmp_path / "release"
    env = environment(tmp_path)
    blocked = {**env, "MM_BLOCK": session, "MM_HANGING": str(hanging), "MM_RELEASE": str(release)}
    first = start_worker(tmp_path, origin, "twin-1", blocked, more=("--worker", "twin", "--until-idle"))
    deadline = time.monotonic() + DEADLINE
    while not hanging.exists():  # the first twin's agent runs: its claim is on the remote
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    calls = tmp_path / "calls.log"
    second = start_worker(tmp_path, origin, "twin-2", blocked, more=("--worker", "twin", "--until-idle"))
    while second.poll() is None and len(calls.read_text("utf-8").splitlines()) < 2:
        assert time.monotonic() < deadline  # the second twin stops (nothing free) or runs the agent
        time.sleep(0.05)
    release.touch()
    outs = [p.communicate(timeout=DEADLINE) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    lines = [line.rsplit("|", 1)[0] for line in calls.read_text("utf-8").splitlines()]
    assert lines == [f"{session}|1|writer|1"]  # the twin did not run it again
    first_report, second_report = (json.loads(out) for out, _ in outs)
    assert first_report["worker"] == second_report["worker"] == "twin"  # the name shown is shared
    assert [run[2] for run in first_report["runs"]] == ["awaiting_review"]
    assert second_report["runs"] == []
