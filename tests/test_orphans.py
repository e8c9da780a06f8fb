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


# ------------------------------------------------------------------- a deleted manifest


def test_list_warns_of_a_session_folder_that_has_no_manifest(base: Path, orphan: Path) -> None:
    listed = run(base, "list")
    assert listed.exit_code == 0, listed.output
    [warning] = listed.stderr.splitlines()
    assert warning.startswith(
        f"warning: skipped a session whose manifest cannot be read: {orphan / MANIFEST}: "
    )
    assert "does not exist" in warning and "phase_1_concept" in warning
    assert "haytham doctor acme s-1 --fix" in warning
    assert "s-2" in listed.stdout and "s-1" not in listed.stdout  # the other sessions are listed
    data = run_json(base, "list")
    assert [s["session_id"] for s in data["sessions"]] == ["s-2"]
    [text] = data["warnings"]
    assert text.startswith(f"{orphan / MANIFEST}: ") and "does not exist" in text
    project = run_json(base, "list", "--project", "acme")
    assert len(project["warnings"]) == 1


def test_list_warns_of_an_orphan_with_an_index_too(base: Path, orphan: Path) -> None:
    """With the base directory's index (made by a listing of 50 sessions), an orphan is
    never remembered: each listing looks at it again and says so."""
    manager = CheckpointManager(base)
    for number in range(3, 55):
        manager.create_session("acme", f"s-{number}", "ada")
    for _ in range(2):  # the first listing makes the index, the second reads from it
        data = run_json(base, "list")
        assert data["total"] == 53
        assert [w for w in data["warnings"] if str(orphan) in w] == [data["warnings"][0]]
        assert len(data["warnings"]) == 1
    assert (base / ".haytham-cache").is_dir()


def test_list_passes_over_an_empty_folder_and_hidden_files_alone(base: Path) -> None:
    """A folder holding nothing (or only haytham's lock) has nothing to lose: no warning."""
    CheckpointManager(base).create_session("acme", "s-2", "ada")
    (base / "acme" / "sessions" / "empty").mkdir()
    locked = base / "acme" / "sessions" / "locked"
    locked.mkdir()
    (locked / ".haytham.lock").write_text("")
    listed = run(base, "list")
    assert listed.exit_code == 0 and listed.stderr == ""
    assert run(base, "validate").exit_code == 0
    assert run(base, "doctor").exit_code == 0


def test_validate_reports_a_session_folder_without_manifest_as_an_error(base: Path, orphan: Path) -> None:
    result = run(base, "validate")
    assert result.exit_code == 1, result.output
    line = next(line for line in result.output.splitlines() if line.startswith(str(orphan / MANIFEST)))
    assert "does not exist" in line and "haytham doctor acme s-1 --fix" in line
    assert not line.endswith("(warning)")
    data = run_json(base, "validate", code=1)
    [issue] = [i for i in data["issues"] if i["path"] == str(orphan / MANIFEST)]
    assert (issue["line"], issue["field"], issue["severity"]) == (None, None, "error")
    for path in (orphan, orphan.parent.parent, base):  # the folder itself, its project, the tree
        found = run_json(base, "validate", str(path), code=1)["issues"]
        assert [i["path"] for i in found if i["path"].endswith(MANIFEST)] == [str(orphan / MANIFEST)]


def test_doctor_reports_a_missing_manifest_and_writes_nothing(base: Path, orphan: Path) -> None:
    before = sorted(p.relative_to(base) for p in base.rglob("*"))
    for args in ((), ("acme",), ("acme", "s-1")):
        result = run(base, "doctor", *args)
        assert result.exit_code == 1, result.output
        assert f"{orphan / MANIFEST}: missing_manifest: " in result.output
        assert "--fix rebuilds it" in result.output
    assert sorted(p.relative_to(base) for p in base.rglob("*")) == before
    [finding] = run_json(base, "doctor", "acme", "s-1", code=1)["findings"]
    assert (finding["kind"], finding["fixed"]) == ("missing_manifest", False)


def test_doctor_fix_rebuilds_a_deleted_manifest_that_validates_and_gives_the_same_status(base: Path) -> None:
    project, session = _worked_session(base)
    before = haytham(base, "status", project, session)
    assert before.returncode == 0, before.stderr
    listed_before = run_json(base, "list")["sessions"]
    directory = CheckpointManager(base).session_dir(project, session)
    (directory / MANIFEST).unlink()
    missing = haytham(base, "status", project, session)
    assert missing.returncode == 1
    assert f"haytham doctor {project} {session} --fix rebuilds it" in missing.stderr

    fixed = haytham(base, "doctor", project, session, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"{directory / MANIFEST}: missing_manifest: " in fixed.stdout
    assert "(fixed)" in fixed.stdout
    assert "User ID 'ada' from project.yaml" in fixed.stdout
    assert "workflow idea_validation (mvp mode) from its phase folders" in fixed.stdout

    assert haytham(base, "validate").returncode == 0
    assert haytham(base, "status", project, session).stdout == before.stdout
    listed = run_json(base, "list")["sessions"]
    keys = ("session_id", "user_id", "status", "current_phase", "total_tokens", "total_cost")
    assert [{k: s[k] for k in keys} for s in listed] == [{k: s[k] for k in keys} for s in listed_before]
    assert run(base, "doctor", project, session).exit_code == 0  # nothing left to repair


def test_doctor_fix_rebuilds_from_the_sessions_own_workflow_and_says_what_it_made_up(base: Path) -> None:
    """No project.yaml (a session made by ``haytham new``): the user cannot be recovered and
    gets a default the finding names; the workflow comes from the session's workflow.yaml."""
    definition = base.parent / "small.yaml"
    definition.write_text(
        "name: tiny\nphases:\n"
        "  - {number: 1, name: Idea, directory: phase_1_idea, agents: [writer]}\n"
        "  - {number: 2, name: Plan, directory: phase_2_plan, agents: [planner]}\n"
        "modes:\n  quick: [1]\n  full: [1, 2]\n"
    )
    made = run(base, "new", "acme", "s-9", "--user", "ada", "--workflow", str(definition), "--mode", "full")
    assert made.exit_code == 0, made.output
    manager = CheckpointManager(base)
    manager.save_agent_output("acme", "s-9", 1, "writer", "idea\n")
    manager.save_checkpoint("acme", "s-9", 1, "completed", [{"agent_name": "writer"}])
    before = run_json(base, "status", "acme", "s-9")
    directory = manager.session_dir("acme", "s-9")
    (directory / MANIFEST).unlink()

    [finding] = run_json(base, "doctor", "--fix")["findings"]
    assert (finding["kind"], finding["fixed"]) == ("missing_manifest", True)
    assert "workflow tiny (full mode) from workflow.yaml" in finding["message"]
    assert "User ID 'unknown' (no project.yaml names a user)" in finding["message"]
    after = run_json(base, "status", "acme", "s-9")
    assert after["user_id"] == "unknown"
    for key in ("workflow_type", "execution_mode", "status", "phases", "current_phase", "metrics"):
        assert after[key] == before[key], key
    assert run(base, "validate").exit_code == 0


def test_doctor_fix_leaves_a_folder_it_cannot_rebuild_as_it_is(base: Path) -> None:
    """Phase folders that match no known workflow: nothing is made up, the finding stays."""
    CheckpointManager(base).create_session("acme", "s-2", "ada")
    odd = base / "acme" / "sessions" / "odd"
    (odd / "phase_9_mystery").mkdir(parents=True)
    (odd / "phase_9_mystery" / "notes.md").write_text("my notes\n")
    result = run(base, "doctor", "--fix")
    assert result.exit_code == 1, result.output
    assert f"{odd / MANIFEST}: missing_manifest: " in result.output
    assert "no mode of a known workflow has the phase folders phase_9_mystery" in result.output
    assert not (odd / MANIFEST).exists()
    assert (odd / "phase_9_mystery" / "notes.md").read_text() == "my notes\n"


# ----------------------------------------------------------- a manifest that does not read

BROKEN = {
    "not a manifest": b"# Shopping list\n\n- eggs\n",
    "not UTF-8": b"# Session Manifest\n\n## Metadata\n- Session ID: \xff\xfe\n",
    "a bad Status": None,  # the real manifest with its Status edited to 'donezo'
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_manifest_that_does_not_read_is_reported_everywhere_and_never_overwritten(
    base: Path, case: str
) -> None:
    manager = CheckpointManager(base)
    manager.create_session("acme", "s-1", "ada")
    manager.save_checkpoint("acme", "s-1", 1, "completed", [])
    manager.create_session("acme", "s-2", "ada")
    path = manager.session_dir("acme", "s-1") / MANIFEST
    data = BROKEN[case]
    if data is None:
        data = path.read_bytes().replace(b"- Status: in_progress", b"- Status: donezo", 1)
    path.write_bytes(data)
    leftover = path.parent / ".session_manifest.md.1.abcd.haytham-tmp"
    leftover.write_text("half")

    listed = run(base, "list")
    assert listed.exit_code == 0
    assert f"warning: skipped a session whose manifest cannot be read: {path}" in listed.stderr
    validated = run(base, "validate")
    assert validated.exit_code == 1 and str(path) in validated.output
    assert haytham(base, "status", "acme", "s-1").returncode == 1
    for args in (("acme", "s-1"), ("acme",), (), ("acme", "s-1", "--fix"), ("--fix",)):
        doctored = run(base, "doctor", *args)
        assert doctored.exit_code == 1, (args, doctored.output)
        assert f"{path}" in doctored.output and "invalid_file" in doctored.output, doctored.output
        assert "OK" not in doctored.output
        assert path.read_bytes() == data  # a person's bytes are never lost
        assert not (path.parent / MANIFEST).is_dir()


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


def test_a_manifest_that_is_a_folder_or_a_broken_link_is_reported_and_left_alone(base: Path) -> None:
    manager = CheckpointManager(base)
    for session in ("folder", "link"):
        manager.create_session("acme", session, "ada")
        (manager.session_dir("acme", session) / MANIFEST).unlink()
    (manager.session_dir("acme", "folder") / MANIFEST).mkdir()
    (manager.session_dir("acme", "link") / MANIFEST).symlink_to("nowhere.md")
    listed = run(base, "list")
    assert listed.exit_code == 0
    assert listed.stderr.count("warning: ") == 2
    validated = run(base, "validate")
    assert validated.exit_code == 1
    for session in ("folder", "link"):
        assert str(manager.session_dir("acme", session) / MANIFEST) in validated.output
    doctored = run(base, "doctor", "--fix")
    assert doctored.exit_code == 1, doctored.output
    assert (manager.session_dir("acme", "folder") / MANIFEST).is_dir()
    assert os.readlink(manager.session_dir("acme", "link") / MANIFEST) == "nowhere.md"


@pytest.mark.parametrize(
    ("phase_file", "old", "new"),
    [
        ("checkpoint.md", "- Phase 1: ", "- Phase one: "),  # a Built From line that does not read
        ("checkpoint.md", "- Status: completed", "- Status: finished"),
        ("user_feedback.md", "- Reviewed: true", "- Reviewed: perhaps"),
    ],
)
def test_doctor_reports_every_error_that_validate_reports(
    base: Path, phase_file: str, old: str, new: str
) -> None:
    """doctor leaves to its own findings only the warnings of a manifest or phase that lags
    its files; an error on the same fields is a file that does not read, and is reported."""
    manager = CheckpointManager(base)
    manager.create_session("acme", "s-1", "ada")
    for phase in (1, 2):
        manager.save_agent_output("acme", "s-1", phase, "writer", f"phase {phase}\n")
        manager.save_checkpoint("acme", "s-1", phase, "completed", [{"agent_name": "writer"}])
    manager.save_user_feedback("acme", "s-1", 2, reviewed=True, approved=True)
    path = manager.phase_dir("acme", "s-1", 2) / phase_file
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), "utf-8")
    errors = [i for i in run_json(base, "validate", code=1)["issues"] if i["severity"] == "error"]
    assert errors
    findings = run_json(base, "doctor", "acme", "s-1", code=1)["findings"]
    invalid = {(f["path"], f["message"]) for f in findings if f["kind"] == "invalid_file"}
    for error in errors:
        where = f"line {error['line']}: " if error["line"] is not None else ""
        assert (error["path"], f"{where}{error['field']}: {error['message']}") in invalid, findings
