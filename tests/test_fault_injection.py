"""Kill every multi-file operation before each of its file-system changes, recover, and check.

For an operation of ``tests/fault_ops.py`` the harness builds the tree before it, runs it
once uninterrupted for the tree after it, then for N = 1, 2, ... runs it in a real process
(``tests/fault_worker.py``) that SIGKILLs itself just before its Nth file-system change,
until a run finishes without reaching N: every kill point, not a sample. After each kill:

* recovery runs: the next writer (taking each session's and project's lock finishes a
  journaled operation) on even kill points, ``doctor --fix`` alone on odd ones;
* every file a reader sees is exactly as before the operation or exactly as after it;
* ``doctor --fix`` then leaves no hidden trace (journal record, temporary file, staging,
  replaced or trash folder), changes no visible byte, and finds nothing the uninterrupted
  trees do not have; every session validates; no history entry is lost.

The same runs again with a simulated power loss at every point (``fault_worker.PowerLoss``:
each file holding writes no fsync or sync made durable is emptied before recovery, which runs
under another boot id); an operation that finishes must leave no such file behind.

The default suite kills four representative operations at every point (and cuts the power
under two); ``-m slow`` does both to all of them. ``KILL_POINTS`` records the counts the
last run saw (quoted in the report).
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

import pytest

from haytham import CheckpointManager
from haytham.format.layout import (
    JOURNAL_FILE,
    REMOVING_SUFFIX,
    REPLACED_SUFFIX,
    STAGING_SUFFIX,
    TMP_SUFFIX,
    TRASH_SUFFIX,
)
from haytham.store import fs as _storage
from haytham.store import history, journal
from haytham.store.doctor import check_folders
from haytham.store.scan import session_dirs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fault_ops

WORKER = Path(__file__).resolve().parent / "fault_worker.py"
TRACES = (TMP_SUFFIX, STAGING_SUFFIX, REPLACED_SUFFIX, TRASH_SUFFIX, REMOVING_SUFFIX)
STAGED = (TMP_SUFFIX, STAGING_SUFFIX, JOURNAL_FILE)
"""What a change stages before its commit point: the next writer removes it (issue 24, item
8). A folder being removed (trash, removing, replaced) is finished by ``doctor --fix``."""
FAST = ("save_checkpoint", "save_phase", "start_attempt", "import_overwrite", "complete_session")
SLOW = tuple(name for name in fault_ops.OPERATIONS if name not in FAST)


@dataclass
class Outcome:
    kill_points: int = 0
    not_done: int = 0
    done: int = 0
    emptied: int = 0
    """Files a simulated power loss emptied, over every kill point."""


class Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, root: Path, operation: str, kill_at: int, power: bool = False) -> dict[str, object]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{root} {operation} {kill_at}{' power' if power else ''}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the fault worker died"
        answer: dict[str, object] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture
def worker() -> Iterator[Worker]:
    started = Worker()
    yield started
    started.close()


def visible(base: Path) -> dict[str, bytes | None]:
    """What a reader sees: every file whose path has no hidden part (``.gitignore`` aside)
    with its bytes, and every ``attempts/{n}`` folder (an attempt even when empty). Other
    empty folders show nothing to any reader (a project folder an import made before it was
    killed, holding only an empty ``sessions/``)."""
    found: dict[str, bytes | None] = {}
    for directory, folders, files in os.walk(base):
        relative = Path(directory).relative_to(base)
        folders[:] = [f for f in folders if not f.startswith(".")]
        if relative.parent.name == "attempts" and relative.name.isdigit():
            found[relative.as_posix()] = None
        for name in files:
            if not name.startswith(".") or name == ".gitignore":
                found[(relative / name).as_posix()] = (Path(directory) / name).read_bytes()
    return found


def traces(base: Path) -> list[Path]:
    """Every hidden name an interrupted operation can leave, anywhere under ``base``."""
    found = []
    for directory, folders, files in os.walk(base):
        for name in folders + files:
            if name == JOURNAL_FILE or (name.startswith(".") and name.endswith(TRACES)):
                found.append(Path(directory) / name)
    return found


def sessions(base: Path) -> list[tuple[str, str]]:
    return [(d.parent.parent.name, d.name) for d in session_dirs(base)]


def next_writer(root: Path) -> None:
    """What the next writer does first: take each project's and session's lock, which rolls
    a journaled operation forward and removes what an operation that never committed staged
    (issue 24, item 8: the next writer cleans, not only ``doctor --fix``)."""
    base = fault_ops.base(root)
    for project in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        with _storage.locked(project, 10, "project"):
            journal.recover(project)
    manager = fault_ops.manager(root)
    for project_id, session_id in sessions(base):
        with manager.lock(project_id, session_id):
            pass


def doctor(root: Path, fix: bool) -> list[str]:
    """``haytham doctor [--fix]`` over the whole base directory, as kinds and paths."""
    base = fault_ops.base(root)
    manager = fault_ops.manager(root)
    findings = check_folders(base, None, fix, 10)
    for project_id, session_id in sessions(base):
        findings += manager.check(project_id, session_id, fix=fix)
    return sorted(f"{f.kind} {f.path.relative_to(root)}" for f in findings if not f.fixed)


def errors(root: Path) -> list[str]:
    manager = CheckpointManager(fault_ops.base(root))
    return [str(i) for i in manager.validate_paths() if i.is_error]


def entries(base: Path) -> set[tuple[str, str]]:
    return {
        (f"{p}/{s}", e.entry_id)
        for p, s in sessions(base)
        for e in history.read_entries(base / p / "sessions" / s)[0]
    }


def kill_everywhere(operation: str, tmp_path: Path, worker: Worker, power: bool = False) -> Outcome:
    setup, run = fault_ops.OPERATIONS[operation]
    template = tmp_path / "template"
    setup(template)
    before = visible(fault_ops.base(template))
    reference = tmp_path / "reference"
    shutil.copytree(template, reference, symlinks=True)
    run(reference)
    after = visible(fault_ops.base(reference))
    assert after != before, f"{operation} changed nothing"
    assert traces(fault_ops.base(reference)) == []
    expected = {id(before): doctor(template, False), id(after): doctor(reference, False)}
    history_of = {
        id(before): entries(fault_ops.base(template)),
        id(after): entries(fault_ops.base(reference)),
    }
    outcome = Outcome()
    root = tmp_path / "killed"
    kill_at = 1
    while True:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(template, root, symlinks=True)
        answer = worker.run(root, operation, kill_at, power)
        if answer["outcome"] == "done":
            assert answer["changes"] == kill_at - 1
            assert visible(fault_ops.base(root)) == after
            if power:  # what returned is durable: a power loss now would lose nothing
                assert answer["undurable"] == [], f"{operation} returned with {answer['undurable']}"
            break
        assert answer["outcome"] == "killed", f"{operation} at {kill_at}: {answer}"
        where = f"{operation} {'lost power' if power else 'killed'} before change {kill_at}"
        outcome.emptied += len(answer.get("emptied", []))  # type: ignore[arg-type]
        if kill_at % 2 == 0:
            next_writer(root)
            staged = [t for t in traces(fault_ops.base(root)) if t.name.endswith(STAGED)]
            assert staged == [], f"{where}: the next writer left staged files: {staged}"
        else:
            doctor(root, True)
        state = visible(fault_ops.base(root))
        assert state in (before, after), (
            f"{where}: neither done nor undone: {_differences(state, before, after)}"
        )
        matched = before if state == before else after
        doctor(root, True)
        assert visible(fault_ops.base(root)) == state, f"{where}: doctor --fix changed what readers see"
        assert traces(fault_ops.base(root)) == [], f"{where}: hidden leftovers after doctor --fix"
        assert doctor(root, False) == expected[id(matched)], f"{where}: doctor still finds something"
        assert errors(root) == [], f"{where}: a session does not validate"
        assert entries(fault_ops.base(root)) == history_of[id(matched)], f"{where}: history entries differ"
        outcome.kill_points += 1
        outcome.done += state == after
        outcome.not_done += state == before
        kill_at += 1
    KILL_POINTS[operation + (" (power loss)" if power else "")] = outcome
    report = os.environ.get("HAYTHAM_KILL_POINTS")
    if report:  # benchmarks and the closing note quote these counts
        with open(report, "a", encoding="utf-8") as out:
            out.write(json.dumps({"operation": operation, "power_loss": power, **outcome.__dict__}) + "\n")
    return outcome


def _differences(state: dict[str, bytes | None], *trees: dict[str, bytes | None]) -> list[str]:
    closest = min(trees, key=lambda tree: len(set(tree.items()) ^ set(state.items())))
    return sorted({k for k in state.keys() | closest.keys() if state.get(k, b"-") != closest.get(k, b"-")})


KILL_POINTS: dict[str, Outcome] = {}


@pytest.mark.parametrize("operation", FAST)
def test_every_kill_point_leaves_the_operation_done_or_not_done(
    operation: str, tmp_path: Path, worker: Worker
) -> None:
    outcome = kill_everywhere(operation, tmp_path, worker)
    assert outcome.kill_points > 3
    assert outcome.not_done > 0 and outcome.done > 0  # both sides of the commit point were hit


@pytest.mark.slow
@pytest.mark.parametrize("operation", SLOW)
def test_every_kill_point_of_every_operation(operation: str, tmp_path: Path, worker: Worker) -> None:
    outcome = kill_everywhere(operation, tmp_path, worker)
    assert outcome.kill_points > 0
    assert outcome.not_done > 0 and outcome.done > 0


POWER = ("save_phase", "save_checkpoint")


@pytest.mark.parametrize("operation", POWER)
def test_a_power_loss_at_every_point_leaves_the_operation_done_or_not_done(
    operation: str, tmp_path: Path, worker: Worker
) -> None:
    outcome = kill_everywhere(operation, tmp_path, worker, power=True)
    assert outcome.not_done > 0 and outcome.done > 0
    assert outcome.emptied > 0  # the power loss did lose writes, and recovery redid them


@pytest.mark.slow
@pytest.mark.parametrize("operation", [name for name in fault_ops.OPERATIONS if name not in POWER])
def test_a_power_loss_at_every_point_of_every_operation(
    operation: str, tmp_path: Path, worker: Worker
) -> None:
    outcome = kill_everywhere(operation, tmp_path, worker, power=True)
    assert outcome.not_done > 0 and outcome.done > 0
