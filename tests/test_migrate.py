"""``haytham migrate`` on the legacy corpus (version 0): a copy of ``tests/legacy/corpus``.

Dry runs write nothing and list what a real run does; a real run changes only version lines
(and states an output's final line breaks) and every file reads the same after it; a second
run does nothing; a run killed in the middle and run again ends where an uninterrupted one
does. Files of a newer format are refused, at their line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from haytham.cli.main import cli
from haytham.errors import DocumentError
from haytham.format import FEEDBACK, MANIFEST
from haytham.format.feedback import merge_feedback
from haytham.format.layout import FORMAT_VERSION, MANIFEST_FILE, PHASE_DIR, SESSIONS_DIR
from haytham.migrate import STEPS, Change, migrate
from haytham.projects import ProjectManager
from haytham.store.manager import CheckpointManager
from haytham.store.session_files import kind_of, session_files

CORPUS = Path(__file__).resolve().parent / "legacy" / "corpus" / "projects"
Snapshot = dict[str, tuple[str, int] | None]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    shutil.copytree(CORPUS, root)
    return root


def snapshot(root: Path) -> Snapshot:
    """Every file's hash and mtime, every folder: equal snapshots, nothing written."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        if p.is_file()
        else None
        for p in sorted(root.rglob("*"))
    }


def contents(root: Path) -> dict[str, bytes]:
    """Every file's bytes but the lock files a writer leaves (they hold no data)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".haytham.lock"
    }


def listed(changes: tuple[Change, ...], root: Path) -> list[tuple[str, str]]:
    return [(str(c.path.relative_to(root)), c.what) for c in changes]


def records(root: Path) -> dict[str, Any]:
    """Each session file's record (None when unreadable), read by the format layer."""
    return {str(p.relative_to(root)): kind_of(p).read_path(p)[0] for p in session_files([root])}  # type: ignore[union-attr]


def sessions(root: Path) -> list[tuple[str, str]]:
    return sorted(
        (m.parent.parent.parent.name, m.parent.name) for m in root.glob(f"*/{SESSIONS_DIR}/*/{MANIFEST_FILE}")
    )


def manager_view(root: Path) -> dict[tuple[str, str], Any]:
    """What the manager gives for every session: approved phases, checkpoints, agent outputs
    (content included) and feedback, phase by phase; an error's type where it raises."""
    manager = CheckpointManager(root)
    view: dict[tuple[str, str], Any] = {}

    def attempt(call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except Exception as error:  # the same failure before and after is the point
            return type(error).__name__

    for project, session in sessions(root):
        phases: dict[int, Any] = {}
        for folder in sorted((root / project / SESSIONS_DIR / session).glob("phase_*")):
            found = PHASE_DIR.match(folder.name)
            assert found is not None
            number = int(found.group(1))
            agents = sorted(p.stem for p in folder.glob("*.md") if kind_of(p) is not None)
            phases[number] = (
                attempt(manager.load_checkpoint, project, session, number),
                attempt(manager.load_feedback, project, session, number),
                {a: attempt(manager.load_agent_output, project, session, number, a) for a in agents},
            )
        view[(project, session)] = (attempt(manager.get_approved_phases, project, session), phases)
    return view


def validation(root: Path) -> list[tuple[str, str, str, str]]:
    """validate's findings, by file (not line: a version line moves the lines below it)."""
    return sorted(
        (str(i.path.relative_to(root)) if i.path else "", i.field or "", i.message, i.severity)
        for i in CheckpointManager(root).validate_paths([root])
    )


def projects_view(root: Path) -> Any:
    """Every project the ProjectManager reads, by user, and the problems it reports."""
    manager = ProjectManager(root)
    users = sorted(
        {yaml.safe_load(p.read_text(encoding="utf-8"))["user_id"] for p in root.glob("*/project.yaml")}
    )
    return {user: manager.list_user_projects(user) for user in users}, [
        (str(i.path.relative_to(root)) if i.path else "", i.message) for i in manager.project_issues()
    ]


def test_the_steps_lead_from_version_0_to_the_current_version() -> None:
    versions = [0] + [end for _, end, _ in STEPS]
    assert [start for start, _, _ in STEPS] == versions[:-1]
    assert versions[-1] == FORMAT_VERSION


def test_a_dry_run_writes_nothing_and_lists_what_a_run_does(tree: Path) -> None:
    before = snapshot(tree)
    dry = migrate(tree, dry_run=True)
    assert snapshot(tree) == before
    assert dry.dry_run and len(dry.changes) > 100
    real = migrate(tree)
    assert listed(real.changes, tree) == listed(dry.changes, tree)
    assert real.skipped == dry.skipped


def test_a_run_changes_only_version_lines_and_every_file_reads_the_same(tmp_path: Path, tree: Path) -> None:
    untouched = tmp_path / "untouched"
    shutil.copytree(CORPUS, untouched)
    before_records = records(tree)
    report = migrate(tree)
    assert records(tree) == before_records
    assert manager_view(tree) == manager_view(untouched)

    old, new = contents(untouched), contents(tree)
    assert old.keys() == new.keys()
    changed = {str(c.path.relative_to(tree)) for c in report.changes}
    assert changed == {name for name in old if old[name] != new[name]}
    for name in changed:
        old_lines, new_lines = old[name].splitlines(), new[name].splitlines()
        added = [line for line in new_lines if line not in old_lines]
        assert added and all(
            line.startswith((b"- Format: ", b"- Final Newlines: ", b"format: 1")) for line in added
        )
        assert [line for line in new_lines if line not in added] == old_lines
        if name.endswith(".md"):
            assert kind_of(tree / name).version((tree / name).read_text(encoding="utf-8")) == 1  # type: ignore[union-attr]
        else:
            assert yaml.safe_load((tree / name).read_text(encoding="utf-8"))["format"] == 1
    assert projects_view(tree) == projects_view(untouched)

    # Only the files a crash cut short are left; validate finds what it found before (the
    # corpus's stale manifests and damaged files), no more.
    left = {s.path for s in report.skipped}
    assert {p.parent.name + "/" + p.name for p in left} == {
        "sess-crash/" + MANIFEST_FILE,
        "phase_1_concept/concept_expansion.md",
    }
    assert validation(tree) == validation(untouched)

    again = migrate(tree)
    assert again.changes == () and again.skipped == report.skipped
    assert contents(tree) == new


def test_a_killed_run_run_again_ends_where_an_uninterrupted_run_does(tmp_path: Path, tree: Path) -> None:
    whole = tmp_path / "whole"
    shutil.copytree(CORPUS, whole)
    migrate(whole)
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from haytham.migrate import migrate\n"
        "done = []\n"
        "def kill(change):\n"
        "    done.append(change)\n"
        "    if len(done) == 40:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "migrate(Path(sys.argv[1]), on_change=kill)\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(tree)], capture_output=True, check=False)
    assert result.returncode == -signal.SIGKILL, result.stderr
    half = contents(tree)
    assert half != contents(whole) and half != contents(CORPUS)
    assert records(tree) == records(CORPUS)  # each file old and valid or new and valid
    assert not [p for p in tree.rglob("*") if p.name.endswith(".haytham-tmp")]
    rest = migrate(tree)
    assert 0 < len(rest.changes) < len(migrate(CORPUS, dry_run=True).changes)
    assert contents(tree) == contents(whole)


def test_the_command_explains_every_change_and_writes_only_without_dry_run(tree: Path) -> None:
    runner = CliRunner()
    before = snapshot(tree)
    dry = runner.invoke(cli, ["migrate", str(tree), "--dry-run"])
    assert snapshot(tree) == before
    assert dry.exit_code == 1  # two files a crash cut short are left
    lines = dry.stdout.splitlines()
    would = [line for line in lines if line.startswith("Would migrate ")]
    assert len(would) == len(migrate(tree, dry_run=True).changes)
    assert all(
        "(version 0 to 1): added '- Format: 1'" in line or "added 'format: 1'" in line for line in would
    )
    assert sum(line.startswith("Left ") for line in lines) == 2
    real = runner.invoke(cli, ["migrate", "--base-dir", str(tree)])
    assert [line.replace("Migrated ", "Would migrate ", 1) for line in real.stdout.splitlines()][
        : len(would)
    ] == would
    again = runner.invoke(cli, ["migrate", "--base-dir", str(tree)])
    assert f"0 files migrated, {len(would)} already at version 1, 2 left as they are" in again.stdout


def test_crlf_and_a_bom_are_kept(tmp_path: Path) -> None:
    folder = tmp_path / "p" / SESSIONS_DIR / "s" / "phase_1_concept"
    folder.mkdir(parents=True)
    path = folder / "user_feedback.md"
    text = "# User Feedback: Concept\r\n\r\n## Review Status\r\n- Reviewed: true\r\n- Approved: true\r\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    record = FEEDBACK.load(path)
    [change] = migrate(tmp_path).changes
    assert change.path == path and not change.canonical
    assert (
        path.read_bytes()
        == b"\xef\xbb\xbf"
        + text.replace("true\r\n- Approved: true\r\n", "true\r\n- Approved: true\r\n- Format: 1\r\n").encode()
    )
    assert FEEDBACK.load(path) == record


def test_a_file_of_a_newer_format_is_refused_at_its_line(tmp_path: Path) -> None:
    text = MANIFEST.render(
        MANIFEST.parse((CORPUS / "proj-legacy/sessions/sess-retry" / MANIFEST_FILE).read_text())
    )
    newer = text.replace(f"- Format: {FORMAT_VERSION}", f"- Format: {FORMAT_VERSION + 1}")
    line = newer.split("\n").index(f"- Format: {FORMAT_VERSION + 1}") + 1
    with pytest.raises(
        DocumentError, match=f"^x.md:{line}: Format: is {FORMAT_VERSION + 1}: written by a newer haytham"
    ):
        MANIFEST.parse(newer, Path("x.md"))
    with pytest.raises(DocumentError, match="'one' is not a format version"):
        MANIFEST.version(text.replace(f"- Format: {FORMAT_VERSION}", "- Format: one"))
    assert MANIFEST.version(text) == FORMAT_VERSION
    session = tmp_path / "p" / SESSIONS_DIR / "s"
    session.mkdir(parents=True)
    (session / MANIFEST_FILE).write_text(newer)
    report = migrate(tmp_path)
    assert report.changes == ()
    assert "written by a newer haytham" in report.skipped[0].reason
    assert (session / MANIFEST_FILE).read_text() == newer


def test_a_project_yaml_of_a_newer_format_is_refused_at_its_line(tree: Path) -> None:
    migrate(tree)
    path = tree / "pet_food_subscriptions" / "project.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("format: 1\n")
    path.write_text(text.replace("format: 1", f"format: {FORMAT_VERSION + 1}", 1), encoding="utf-8")
    with pytest.raises(DocumentError, match=r"project.yaml:1: format: is 2: written by a newer haytham"):
        ProjectManager(tree).get_project("pet_food_subscriptions")
    path.write_text(text.replace("format: 1", "format: one", 1), encoding="utf-8")
    with pytest.raises(DocumentError, match="'one' is not a format version"):
        ProjectManager(tree).get_project("pet_food_subscriptions")


def test_a_review_saved_into_a_version_0_feedback_file_adds_the_version_line_once() -> None:
    old = (CORPUS / "proj-legacy/sessions/sess-retry/phase_1_concept/user_feedback.md").read_text(
        encoding="utf-8"
    )
    assert FEEDBACK.version(old) == 0
    record = dataclasses.replace(FEEDBACK.parse(old), approved=True, action="approved")
    once = merge_feedback(old, record)
    assert FEEDBACK.version(once) == FORMAT_VERSION and FEEDBACK.parse(once) == record
    assert merge_feedback(once, record) == once
    assert once.count("- Format: ") == 1
