"""Reads never write (issue 14, point 1).

Every read of the library and the CLI leaves every byte, size and modification time of a
session as it was; only lock files and the ``.haytham-cache`` folder may appear. A stale
manifest (written by the first implementation, or left behind by a review saved by hand or
rows edited by hand) is derived in memory by a read and written only by the next save or
``haytham doctor --fix``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from haytham import CheckpointManager, HaythamError
from haytham.cli.main import cli
from haytham.format import MANIFEST
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE, INDEX_DIR, LOCK_FILE, MANIFEST_FILE

LEGACY = Path(__file__).parent / "legacy" / "corpus" / "projects"
P = "acme"
HAND_REVIEW = "hand-review"
HAND_ROWS = "hand-rows"

Snapshot = dict[str, tuple[str, int, int] | None]


def snapshot(root: Path) -> Snapshot:
    """Every path under ``root``: a file's (sha256, st_mtime_ns, st_size), a folder's None.

    Lock files and the cache folder are left out: reads may create them."""
    found: Snapshot = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if INDEX_DIR in relative.parts or path.name == LOCK_FILE:
            continue
        if path.is_dir():
            found[str(relative)] = None
        else:
            info = path.stat()
            found[str(relative)] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                info.st_mtime_ns,
                info.st_size,
            )
    return found


def _complete(manager: CheckpointManager, session: str, phase: int) -> None:
    manager.save_agent_output(P, session, phase, "writer", f"phase {phase} text\n")
    manager.save_checkpoint(P, session, phase, "completed", [{"agent_name": "writer", "tokens": 5}])


def build_tree(root: Path) -> Path:
    """The legacy corpus plus two haytham sessions whose manifests are stale on disk."""
    base = root / "projects"
    shutil.copytree(LEGACY, base)
    manager = CheckpointManager(base)

    manager.create_session(P, HAND_REVIEW, "u")
    for phase in (1, 2):
        _complete(manager, HAND_REVIEW, phase)
    manager.save_user_feedback(P, HAND_REVIEW, 1, reviewed=False, approved=False, action="pending")
    review = manager.phase_dir(P, HAND_REVIEW, 1) / FEEDBACK_FILE
    text = review.read_text("utf-8")
    approved = text.replace("- Reviewed: false", "- Reviewed: true").replace(
        "- Approved: false", "- Approved: true"
    )
    review.write_text(approved, "utf-8")  # reviewed and approved by hand

    manager.create_session(P, HAND_ROWS, "u")
    _complete(manager, HAND_ROWS, 1)
    manifest = manager.session_dir(P, HAND_ROWS) / MANIFEST_FILE
    rows = manifest.read_text("utf-8")
    edited = rows.replace("| completed |", "| pending |", 1)
    assert edited != rows
    manifest.write_text(edited, "utf-8")  # a row edited by hand
    for lock in base.rglob(LOCK_FILE):  # left by the saves above; a read must not need one
        lock.unlink()
    return base


def lock_files(base: Path) -> list[Path]:
    return sorted(base.rglob(LOCK_FILE))


def sessions(base: Path) -> list[tuple[str, str]]:
    return sorted(
        (m.parent.parent.parent.name, m.parent.name) for m in base.glob(f"*/sessions/*/{MANIFEST_FILE}")
    )


def phases_and_agents(
    manager: CheckpointManager, project: str, session: str
) -> Iterator[tuple[int, list[str]]]:
    """Every phase of the session's workflow (in or outside its mode), with its agent files."""
    try:
        workflow = manager.session_workflow(project, session)
    except HaythamError:
        return
    for phase in workflow.phases:
        directory = manager.session_dir(project, session) / phase.directory
        agents = sorted(
            p.stem for p in directory.glob("*.md") if p.name not in (CHECKPOINT_FILE, FEEDBACK_FILE)
        )
        yield phase.number, agents


def library_reads(manager: CheckpointManager, base: Path) -> int:
    """Call every read method on every session and phase; return how many calls succeeded."""
    succeeded = 0

    def attempt(call: object, *args: object) -> None:
        nonlocal succeeded
        assert callable(call)
        with contextlib.suppress(HaythamError):
            call(*args)
            succeeded += 1

    attempt(manager.list_sessions)
    attempt(manager.validate_paths)
    attempt(manager.validate_paths, [base])
    for project, session in sessions(base):
        key = (project, session)
        for method in (
            manager.load_session,
            manager.load_manifest,
            manager.load_checkpoints,
            manager.get_phase_outputs,
            manager.get_approved_phases,
            manager.state,
            manager.history,
            manager.validate_session,
            manager.check,
        ):
            attempt(method, *key)
        attempt(manager.list_sessions)
        with contextlib.suppress(HaythamError):
            for entry in manager.history(*key):
                attempt(manager.history_entry, *key, entry.entry_id)
                attempt(manager.entry_state, *key, entry)
        for phase, agents in phases_and_agents(manager, *key):
            attempt(manager.load_checkpoint, *key, phase)
            attempt(manager.load_feedback, *key, phase)
            attempt(manager.load_attempts, *key, phase)
            attempt(manager.validate_checkpoint, *key, phase)
            attempt(manager.get_phase_outputs, *key, [phase])
            attempt(lambda k=key, n=phase: manager.validate_paths([manager.phase_dir(*k, n)]))
            for agent in agents:
                attempt(manager.load_agent_output, *key, phase, agent)
    return succeeded


def haytham(base: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--base-dir", str(base)], catch_exceptions=False)


def cli_reads(base: Path, out: Path) -> list[Result]:
    """Every reading command of the CLI on every session, as a person or a script runs it."""
    results = [
        haytham(base, "validate"),
        haytham(base, "validate", "--json"),
        haytham(base, "list"),
        haytham(base, "list", "--json"),
        haytham(base, "stats"),
        haytham(base, "stats", "--json"),
    ]
    manager = CheckpointManager(base)
    for index, (project, session) in enumerate(sessions(base)):
        ref = f"{project}/{session}"
        results += [
            haytham(base, "validate", str(manager.session_dir(project, session))),
            haytham(base, "list", "--project", project),
            haytham(base, "status", project, session),
            haytham(base, "status", project, session, "--json"),
            haytham(base, "show", project, session),
            haytham(base, "show", project, session, "--json"),
            haytham(base, "history", project, session),
            haytham(base, "history", project, session, "--json"),
            haytham(base, "diff", ref, ref),
            haytham(base, "stats", "--project", project, "--session", session),
            haytham(base, "export", project, session),
            haytham(base, "export", project, session, "-o", str(out / f"{index}.json")),
            haytham(base, "export", project, session, "-o", str(out / f"{index}.tar.gz")),
            haytham(base, "doctor", project, session),
            haytham(base, "doctor", project, session, "--json"),
        ]
        with contextlib.suppress(HaythamError):
            for entry in manager.history(project, session)[:3]:
                results.append(haytham(base, "diff", f"{ref}@{entry.entry_id}", ref))
        for phase, agents in phases_and_agents(manager, project, session):
            results.append(haytham(base, "show", project, session, "--phase", str(phase)))
            for agent in agents[:2]:
                results.append(
                    haytham(base, "show", project, session, "--phase", str(phase), "--agent", agent)
                )
            results.append(haytham(base, "diff", f"{ref}:{phase}#1", f"{ref}:{phase}#1"))
    return results


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "tree")


def test_the_tree_holds_stale_manifests_a_read_would_once_have_rewritten(base: Path) -> None:
    manager = CheckpointManager(base)
    for session in (HAND_REVIEW, HAND_ROWS):
        assert manager.validate_session(P, session), session  # the manifest disagrees with its files
    assert len(sessions(base)) > 10  # the legacy corpus is there too


def test_no_library_read_changes_a_file(base: Path) -> None:
    before = snapshot(base)
    manager = CheckpointManager(base)
    succeeded = library_reads(manager, base)
    assert succeeded > 500  # the reads ran, not just raised
    assert snapshot(base) == before
    assert lock_files(base) == []  # no read takes the session lock
    # A second manager (a cold read cache) reads the same files again: still nothing written.
    library_reads(CheckpointManager(base), base)
    assert snapshot(base) == before


def test_no_cli_read_changes_a_file(base: Path, tmp_path: Path) -> None:
    out = tmp_path / "exports"
    out.mkdir()
    before = snapshot(base)
    results = cli_reads(base, out)
    assert snapshot(base) == before
    assert lock_files(base) == []
    assert sum(r.exit_code == 0 for r in results) > 100  # the commands ran
    assert all(r.exit_code in (0, 1) for r in results), [r.output for r in results if r.exit_code > 1]


def test_load_session_returns_the_derived_state_and_a_save_or_doctor_writes_it(base: Path) -> None:
    manager = CheckpointManager(base)
    review_manifest = manager.session_dir(P, HAND_REVIEW) / MANIFEST_FILE
    rows_manifest = manager.session_dir(P, HAND_ROWS) / MANIFEST_FILE
    stale_review, stale_rows = review_manifest.read_bytes(), rows_manifest.read_bytes()

    reviewed = manager.load_session(P, HAND_REVIEW)
    assert reviewed["phase_statuses"][1] == "approved"
    assert reviewed["phases"][0]["status"] == "approved"
    assert MANIFEST.load(review_manifest).phases[0].status == "awaiting_review"  # the file is as it was
    rows = manager.load_session(P, HAND_ROWS)
    assert rows["phases"][0]["status"] == "completed"  # as the row of its checkpoint says
    assert rows["phase_statuses"][1] == "completed"
    assert rows["completed_phases"] == [1]
    assert MANIFEST.load(rows_manifest).phases[0].status == "pending"
    assert (review_manifest.read_bytes(), rows_manifest.read_bytes()) == (stale_review, stale_rows)

    # doctor --fix writes the stale manifest, and the load after it sees what the read derived
    result = haytham(base, "doctor", P, HAND_REVIEW, "--fix")
    assert result.exit_code in (0, 1), result.output
    assert review_manifest.read_bytes() != stale_review
    assert MANIFEST.load(review_manifest).phases[0].status == "approved"
    assert manager.validate_session(P, HAND_REVIEW) == []
    after = manager.load_session(P, HAND_REVIEW)
    assert after.pop("last_updated") > reviewed.pop("last_updated")
    assert after == reviewed

    manager.repair(P, HAND_ROWS)  # the library's doctor --fix
    assert MANIFEST.load(rows_manifest).phases[0].status == "completed"
    assert manager.validate_session(P, HAND_ROWS) == []


def test_the_next_save_writes_the_stale_manifest(base: Path) -> None:
    manager = CheckpointManager(base)
    manifest = manager.session_dir(P, HAND_ROWS) / MANIFEST_FILE
    _complete(manager, HAND_ROWS, 2)
    assert [row.status for row in MANIFEST.load(manifest).phases[:2]] == ["completed", "completed"]
    assert manager.validate_session(P, HAND_ROWS) == []


def test_a_legacy_session_is_rewritten_only_by_doctor_fix(base: Path) -> None:
    manager = CheckpointManager(base)
    stale = [
        key
        for key in sessions(base)
        if key[0] != P
        and any(issue.path and issue.path.name == MANIFEST_FILE for issue in manager.validate_session(*key))
    ]
    assert stale  # the first implementation never updated its metrics
    project, session = stale[0]
    path = manager.session_dir(project, session) / MANIFEST_FILE
    before = path.read_bytes()
    manager.load_session(project, session)
    assert path.read_bytes() == before
    findings = manager.check(project, session, fix=True)
    assert any(f.fixed for f in findings)
    assert path.read_bytes() != before


def test_reads_work_on_a_read_only_tree(base: Path, tmp_path: Path) -> None:
    """Every folder and file without write permission. As root the permissions do not stop a
    write, so the snapshot is what proves that nothing was written; the reads must succeed."""
    manager = CheckpointManager(base)
    expected = {
        key: manager.load_session(*key)["phase_statuses"] for key in ((P, HAND_REVIEW), (P, HAND_ROWS))
    }
    shutil.rmtree(base / INDEX_DIR, ignore_errors=True)
    for path in [base, *base.rglob("*")]:
        mode = path.stat().st_mode
        os.chmod(path, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        before = snapshot(base)
        cold = CheckpointManager(base)
        assert {key: cold.load_session(*key)["phase_statuses"] for key in expected} == expected
        library_reads(cold, base)
        out = tmp_path / "exports"
        out.mkdir()
        results = cli_reads(base, out)
        assert all(r.exit_code in (0, 1) for r in results), [r.output for r in results if r.exit_code > 1]
        assert snapshot(base) == before
        assert lock_files(base) == []
    finally:
        for path in [base, *base.rglob("*")]:
            os.chmod(path, path.stat().st_mode | stat.S_IWUSR)
