"""Orphan sessions and broken manifests, through the command line (issue 23, defect 8).

A session folder whose ``session_manifest.md`` was deleted used to be invisible to
``list``, ``validate`` and ``doctor``; a manifest that does not read must be reported and
never overwritten; and ``doctor`` must refuse what ``validate`` and ``status`` refuse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from haytham import CheckpointManager, ProjectManager
from haytham.cli.main import cli

MANIFEST = "session_manifest.md"


def run(base: Path, *args: str) -> Result:
    """``haytham ARGS --base-dir BASE`` through click's runner (stderr kept apart)."""
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(base)])
    assert "Traceback" not in result.output, result.output
    return result


def run_json(base: Path, *args: str, code: int = 0) -> Any:
    result = run(base, *args, "--json")
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def haytham(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command in its own process, as a person runs it."""
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _worked_session(base: Path) -> tuple[str, str]:
    """A project (its project.yaml names the user) with a session: phase 1 completed and
    approved, phase 2 in progress, with tokens and costs, so every part of the manifest
    that is derived from the files has something to show."""
    projects = ProjectManager(base)
    project = projects.create_project("ada", "A tool for orphans", "Orphans")["project_id"]
    session = projects.start_session(project)["session_id"]
    manager = CheckpointManager(base)
    manager.save_agent_output(project, session, 1, "writer", "phase one\n")
    manager.save_checkpoint(
        project, session, 1, "completed", [{"agent_name": "writer", "tokens": 120, "cost": 0.25}]
    )
    manager.save_user_feedback(project, session, 1, reviewed=True, approved=True, comments="fine")
    manager.save_agent_output(project, session, 2, "scout", "half of phase two\n")
    manager.save_checkpoint(project, session, 2, "in_progress", [{"agent_name": "scout", "tokens": 7}])
    return project, session


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def orphan(base: Path) -> Path:
    """Two sessions of project acme; s-1 (two phases saved) has lost its manifest."""
    manager = CheckpointManager(base)
    manager.create_session("acme", "s-1", "ada")
    manager.save_agent_output("acme", "s-1", 1, "writer", "text\n")
    manager.save_checkpoint("acme", "s-1", 1, "completed", [{"agent_name": "writer"}])
    manager.create_session("acme", "s-2", "ada")
    directory = manager.session_dir("acme", "s-1")
    (directory / MANIFEST).unlink()
    return directory


def test_doctor_refuses_a_donezo_status_as_validate_and_status_do(base: Path) -> None:
    """Found on main: doctor said "OK: consistent" for a Status that validate and status refuse."""
    CheckpointManager(base).create_session("acme", "s-1", "ada")
    path = base / "acme" / "sessions" / "s-1" / MANIFEST
    text = path.read_text("utf-8")
    path.write_text(text.replace("- Status: in_progress", "- Status: donezo", 1), "utf-8")
    line = next(n for n, t in enumerate(path.read_text("utf-8").splitlines(), 1) if "donezo" in t)
    validated = run(base, "validate")
    assert validated.exit_code == 1
    expected = f"{path}:{line}: Status: 'donezo' is not one of"
    assert expected in validated.output
    status = haytham(base, "status", "acme", "s-1")
    assert status.returncode == 1 and expected in status.stderr
    doctored = run(base, "doctor", "acme", "s-1")
    assert doctored.exit_code == 1, doctored.output
    assert f"{path}: invalid_file: line {line}: Status: 'donezo' is not one of" in doctored.output
    assert "OK" not in doctored.output
    assert run(base, "doctor", "acme", "s-1", "--fix").exit_code == 1
    assert "donezo" in path.read_text("utf-8")
