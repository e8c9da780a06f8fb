"""Many machines sharing one git remote (docs/many-machines.md), all with real git and real
processes: a bare repository on a file URL is the remote, each host a clone of its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from many_machines import (
    PROJECT,
    clone,
    git,
    run_scenario,
    session_name,
)

from haytham.format.layout import CLAIM_FILE
from haytham.store.manager import CheckpointManager


@pytest.fixture(autouse=True)
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git (and every process started here) sees no system or user configuration."""
    home = tmp_path / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("GIT_") or key == "XDG_CONFIG_HOME":
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


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
