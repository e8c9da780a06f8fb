"""Every writer finishes an interrupted change before it decides (issue 23, defect 6).

A change of several files commits with its journal record and is rolled forward by the next
writer that takes the session's lock (docs/architecture.md, "Multi-file changes"). A writer
that reads the facts it decides on before that recovery decides on a change half applied:
a resume killed inside ``start_attempt`` made the next ``haytham resume`` fail ("phase 1 has
no feedback"), and a resume that found a session completed by a half-applied save wrote
nothing, so the record stayed and ``haytham validate`` warned after a successful resume.

Here a real process (``tests/fault_worker.py``) SIGKILLs itself just before each file-system
change of the step a resume makes, then ONE ``haytham resume`` (a real subprocess) must
succeed and ``haytham validate --strict`` must find nothing, at every kill point. The default
run takes a few kill points (before the commit point, the first and last after it, one
between); ``-m slow`` takes every one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fault_ops
import pytest
from test_cli import editor
from test_fault_injection import Worker
from test_reads_never_write import cli_reads, library_reads, lock_files, snapshot

from haytham import CheckpointManager
from haytham.format.layout import LOCK_FILE
from haytham.migrate import migrate
from haytham.run.demo import DEMO_PROJECT
from haytham.store import journal

S = fault_ops.S


@pytest.fixture(name="worker")
def _worker() -> Iterator[Worker]:
    """The fault injection's worker (``test_fault_injection.Worker``), one per test."""
    started = Worker()
    yield started
    started.close()


@dataclass(frozen=True)
class Killed:
    """A copy of the tree in which the operation was killed before change ``point``."""

    point: int
    root: Path
    committed: bool
    """Whether the kill came after the commit point (a complete journal record is pending)."""


def session_dir(root: Path) -> Path:
    return fault_ops.base(root) / DEMO_PROJECT / "sessions" / S


def kill_everywhere(operation: str, tmp_path: Path, worker: Worker) -> list[Killed]:
    """Build the tree before ``operation``, then kill it before each of its file-system
    changes in a copy of its own, until a run finishes: every kill point."""
    setup, _ = fault_ops.operation(operation)
    template = tmp_path / "template"
    setup(template)
    killed = []
    point = 1
    while True:
        root = tmp_path / f"killed-{point}"
        shutil.copytree(template, root, symlinks=True)
        answer = worker.run(root, operation, point)
        if answer["outcome"] == "done":
            assert answer["changes"] == point - 1
            shutil.rmtree(root)
            break
        assert answer["outcome"] == "killed", f"{operation} at {point}: {answer}"
        found = journal.pending(session_dir(root))
        killed.append(Killed(point, root, found is not None and found.operation is not None))
        point += 1
    assert any(k.committed for k in killed) and not all(k.committed for k in killed)
    return killed


def killed_at_commit(operation: str, tmp_path: Path, worker: Worker, folder: Path, *, then: int = 0) -> Path:
    """A tree in which ``operation`` was killed at its commit point (its record in ``folder``,
    relative to the tree's base directory, whole and no step of it applied), or ``then``
    file-system changes after it (part of it applied)."""
    setup, _ = fault_ops.operation(operation)
    template = tmp_path / "template"
    setup(template)
    root = tmp_path / "killed"
    for point in range(1, 1000):
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(template, root, symlinks=True)
        assert worker.run(root, operation, point)["outcome"] == "killed", f"{operation} never committed"
        found = journal.pending(fault_ops.base(root) / folder)
        if found is not None and found.operation is not None:
            if then:
                shutil.rmtree(root)
                shutil.copytree(template, root, symlinks=True)
                assert worker.run(root, operation, point + then)["outcome"] == "killed"
                assert journal.pending(fault_ops.base(root) / folder) is not None
            return root
    raise AssertionError(f"{operation} has no commit point")


def representative(killed: list[Killed]) -> list[Killed]:
    """The last kill before the commit point, and the first, a middle and the last after it."""
    after = [k for k in killed if k.committed]
    before = [k for k in killed if not k.committed and k.point < after[0].point]
    return [before[-1], after[0], after[len(after) // 2], after[-1]]


def haytham(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m haytham ARGS --base-dir BASE``, a real process."""
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(fault_ops.base(root))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def resume_once_then_validate(killed: Killed, operation: str) -> dict[str, Any]:
    """One ``haytham resume`` succeeds, leaves no record, and ``validate --strict`` is clean."""
    moment = "after" if killed.committed else "before"
    where = f"{operation} killed before change {killed.point} ({moment} its commit point)"
    resumed = haytham(killed.root, "resume", DEMO_PROJECT, S, "--json")
    assert resumed.returncode == 0, f"{where}: resume failed: {resumed.stdout}{resumed.stderr}"
    result: dict[str, Any] = json.loads(resumed.stdout)
    assert journal.pending(session_dir(killed.root)) is None, f"{where}: the record is still there"
    validated = haytham(killed.root, "validate", "--strict")
    assert validated.returncode == 0, f"{where}: validate after resume: {validated.stdout}{validated.stderr}"
    return result


def check_start_attempt(killed: Killed) -> None:
    """The sent-back phase ran once more, as attempt 2 with the reviewer's changes, and no
    attempt was opened twice."""
    result = resume_once_then_validate(killed, "resume_start_attempt")
    where = f"start_attempt killed before change {killed.point}"
    assert (result["status"], result["phase"]) == ("awaiting_review", 1), f"{where}: {result}"
    manager = CheckpointManager(fault_ops.base(killed.root))
    attempts = manager.load_attempts(DEMO_PROJECT, S, 1)
    assert [a.number for a in attempts] == [1, 2], f"{where}: attempts {[a.number for a in attempts]}"
    assert attempts[0].feedback is not None and attempts[0].feedback.comments == "redo", where
    output = manager.load_agent_output(DEMO_PROJECT, S, 1, "concept_expansion").content
    assert "Addressed: shorter" in output, f"{where}: the rerun was not given the review: {output}"


def check_save(killed: Killed) -> None:
    """The session is completed with its last checkpoint as the save wrote it."""
    result = resume_once_then_validate(killed, "resume_save")
    where = f"save_checkpoint killed before change {killed.point}"
    assert result["status"] == "completed", f"{where}: {result}"
    manager = CheckpointManager(fault_ops.base(killed.root))
    assert manager.load_checkpoint(DEMO_PROJECT, S, 7).status == "completed", where
    assert manager.load_session(DEMO_PROJECT, S)["status"] == "completed", where


@pytest.mark.parametrize(
    "every",
    [pytest.param(False, id="representative"), pytest.param(True, id="every", marks=pytest.mark.slow)],
)
def test_one_resume_finishes_a_start_attempt_killed_at_any_point(
    tmp_path: Path, worker: Worker, every: bool
) -> None:
    killed = kill_everywhere("resume_start_attempt", tmp_path, worker)
    for point in killed if every else representative(killed):
        check_start_attempt(point)


@pytest.mark.parametrize(
    "every",
    [pytest.param(False, id="representative"), pytest.param(True, id="every", marks=pytest.mark.slow)],
)
def test_one_resume_finishes_a_save_killed_at_any_point(tmp_path: Path, worker: Worker, every: bool) -> None:
    killed = kill_everywhere("resume_save", tmp_path, worker)
    for point in killed if every else representative(killed):
        check_save(point)


# ------------------------------------------------------- the other writers that decide


@pytest.mark.parametrize("command", [["feedback", fault_ops.P, S, "1"], ["review", fault_ops.P, S]])
def test_the_review_editor_opens_the_review_an_interrupted_save_wrote(
    tmp_path: Path, worker: Worker, command: list[str]
) -> None:
    """``haytham feedback P S N`` and ``haytham review P S`` (the editor) show the review as
    the interrupted save left it once finished, not the blank file it was replacing."""
    root = killed_at_commit("review", tmp_path, worker, Path(fault_ops.P) / "sessions" / S)
    base = fault_ops.base(root)
    env = editor(tmp_path, 'Path(sys.argv[0]).with_name("seen.md").write_text(text)\n')
    shown = subprocess.run(
        [sys.executable, "-m", "haytham", *command, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in {**os.environ, **env}.items() if v is not None},
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    seen = (tmp_path / "seen.md").read_text()
    assert "send it back" in seen and "- Change 1: shorter" in seen, seen
    assert journal.pending(fault_ops.base(root) / fault_ops.P / "sessions" / S) is None


def test_langgraph_opens_one_attempt_for_an_interrupt_after_an_interrupted_one(
    tmp_path: Path, worker: Worker
) -> None:
    """The saver's next interrupt after one killed inside its ``start_attempt``: the thread's
    review phase is at attempt 2 awaiting review, with no empty attempt opened on top."""
    pytest.importorskip("langgraph", reason="LangGraph is not installed: pip install 'haytham[langgraph]'")
    from haytham.integrations.langgraph import HaythamSaver
    from haytham.integrations.langgraph.review import open_review

    session = HaythamSaver(tmp_path / "ids", "langgraph").session_id("t1")
    root = killed_at_commit("langgraph_review", tmp_path, worker, Path("langgraph") / "sessions" / session)
    saver = HaythamSaver(fault_ops.base(root), "langgraph")
    thread = saver.manager.session("langgraph", session)
    open_review(thread, "cp-2", ["second question"])  # the graph pauses again at the same interrupt
    attempts = saver.manager.load_attempts("langgraph", session, 1)
    assert [a.number for a in attempts] == [1, 2]
    assert "first question" in attempts[0].outputs["interrupt"]
    assert "second question" in attempts[1].outputs["interrupt"]
    assert saver.manager.state("langgraph", session).phase(1).state == "awaiting_review"


def test_migrate_lists_the_files_of_an_interrupted_change_once_finished(
    tmp_path: Path, worker: Worker
) -> None:
    """``migrate`` over a legacy session whose ``start_attempt`` was killed: it migrates the
    old files that attempt archives, and skips none that the change removes."""
    folder = Path("proj-legacy") / "sessions" / "sess-mvp-complete"
    root = killed_at_commit("legacy_attempt", tmp_path, worker, folder)
    report = migrate(fault_ops.base(root))
    assert report.skipped == (), report.skipped
    assert journal.pending(fault_ops.base(root) / folder) is None
    again = migrate(fault_ops.base(root), dry_run=True)
    assert again.changes == (), [str(c.path) for c in again.changes]
    archived = fault_ops.base(root) / folder / "phase_1_concept" / "attempts" / "1"
    assert any(c.path.parent == archived for c in report.changes)


def test_reads_of_a_session_with_an_interrupted_change_write_nothing(tmp_path: Path, worker: Worker) -> None:
    """Reads never write, not even to finish a committed change: every library and CLI read
    leaves every byte and time as it was, the record included, and says the change is
    pending (validate's warning); the next writer (here ``recover``) finishes it."""
    folder = Path(DEMO_PROJECT) / "sessions" / S
    base = fault_ops.base(killed_at_commit("resume_start_attempt", tmp_path, worker, folder, then=10))
    for lock in base.rglob(LOCK_FILE):  # left by the writers that built the tree
        lock.unlink()
    before = snapshot(base)
    assert library_reads(CheckpointManager(base), base) > 40  # the reads ran, not just raised
    out = tmp_path / "exports"
    out.mkdir()
    results = cli_reads(base, out)
    assert all(r.exit_code in (0, 1) for r in results), [r.output for r in results if r.exit_code > 1]
    assert snapshot(base) == before
    assert lock_files(base) == []
    manager = CheckpointManager(base)
    warnings = [i.message for i in manager.validate_session(DEMO_PROJECT, S)]
    assert any("an interrupted start_attempt is not finished yet" in w for w in warnings), warnings
    assert manager.recover(DEMO_PROJECT, S) is True
    assert journal.pending(base / folder) is None
    assert manager.recover(DEMO_PROJECT, S) is False  # nothing left: no lock taken
    assert manager.validate_session(DEMO_PROJECT, S) == []


def test_a_fork_from_an_entry_an_interrupted_save_committed_finds_it(tmp_path: Path, worker: Worker) -> None:
    """``fork_session(from_entry=...)`` looks the entry up once the interrupted save that
    committed it is finished, not before (when its file was still staged)."""
    folder = Path(fault_ops.P) / "sessions" / S
    root = killed_at_commit("save_checkpoint", tmp_path, worker, folder)
    found = journal.pending(fault_ops.base(root) / folder)
    assert found is not None
    entry_id = next(s.path for s in found.steps if s.path.startswith("history/")).split("_")[-1][:-3]
    manager = fault_ops.manager(root)
    manager.fork_session(fault_ops.P, S, "s-fork", from_entry=entry_id)
    assert journal.pending(fault_ops.base(root) / folder) is None
    reasons = [e.reason for e in manager.history(fault_ops.P, "s-fork")]
    assert reasons and all(r == f"forked from {S} at entry {entry_id}" for r in reasons), reasons
