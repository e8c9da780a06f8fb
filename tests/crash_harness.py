"""Kill a saving process at a random moment and check what it left: shared by the crash test
(50 cycles) and ``benchmarks/crash_cycles.py`` (1,000 cycles)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from haytham import CheckpointManager
from haytham.errors import Issue
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST
from haytham.store import journal
from haytham.store.fs import TMP_SUFFIX, temporary_leftovers

WORKER = Path(__file__).resolve().parent / "workers.py"
PROJECT, SESSION = "crash", "s-1"
PHASE_DIRS = {1: "phase_1_concept", 2: "phase_2_market_research", 3: "phase_3_niche_selection"}

ALLOWED_STATES = {
    "completed": {"completed", "awaiting_review", "approved", "sent_back", "stale"},
    "requires_retry": {"sent_back"},
}
"""The lifecycle states a checkpoint status allows; any other status allows only itself."""


@dataclass
class Counts:
    """What the cycles saw, added up."""

    cycles: int = 0
    kills: int = 0
    acknowledged_saves: int = 0
    files_checked: int = 0
    corrupt_files: int = 0
    lost_acknowledged_saves: int = 0
    visible_temporary_files: int = 0
    leftovers_after_kill: int = 0
    manifests_repaired: int = 0
    lost_manifest_rows: int = 0
    problems: list[str] = field(default_factory=list)


def _read_acks(process: subprocess.Popen[str], acks: list[str], first: threading.Event) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        acks.append(line.split())
        first.set()


def run_cycle(base_dir: Path, cycle: int, rng: random.Random, counts: Counts) -> None:
    """Start a saver, kill it with SIGKILL at a random moment, then check the session."""
    process = subprocess.Popen(
        [sys.executable, str(WORKER), "crash", str(base_dir), str(cycle * 1_000_000)],
        stdout=subprocess.PIPE,
        text=True,
    )
    acks: list[list[str]] = []
    first = threading.Event()
    reader = threading.Thread(target=_read_acks, args=(process, acks, first), daemon=True)
    reader.start()
    first.wait(timeout=30)
    time.sleep(rng.uniform(0, 0.15))
    process.send_signal(signal.SIGKILL)
    process.wait()
    reader.join(timeout=10)
    assert process.stdout is not None
    process.stdout.close()
    counts.cycles += 1
    counts.kills += process.returncode == -signal.SIGKILL
    counts.acknowledged_saves += len(acks)
    check_session(base_dir, acks, counts)


def _iteration(path: Path, kind: str) -> int:
    if kind == "output":
        return int(AGENT_OUTPUT.load(path).content.split("\n", 1)[0].split()[-1])
    if kind == "checkpoint":
        return CHECKPOINT.load(path).retry_count
    return FEEDBACK.load(path).retry_count


def check_session(base_dir: Path, acks: list[list[str]], counts: Counts) -> None:
    """Every file parses, no acknowledged save is lost, the manifest tells the truth."""
    session = base_dir / PROJECT / "sessions" / SESSION
    kinds = [(MANIFEST, session / "session_manifest.md")]
    for directory in PHASE_DIRS.values():
        for path in sorted((session / directory).glob("*.md")):
            if path.name.endswith(TMP_SUFFIX):
                counts.visible_temporary_files += 1
            kind = {"checkpoint.md": CHECKPOINT, "user_feedback.md": FEEDBACK}.get(path.name, AGENT_OUTPUT)
            kinds.append((kind, path))
    for kind, path in kinds:
        counts.files_checked += 1
        _, issues = kind.read_path(path)
        errors = [issue for issue in issues if issue.is_error]  # a warning (comments while
        if errors:  # Reviewed: false, written by the worker for a stale phase) is no corruption
            counts.corrupt_files += 1
            counts.problems.append(f"corrupt {path}: {errors[0]}")
    counts.leftovers_after_kill += sum(
        len(temporary_leftovers(d)) for d in [session, *(session / p for p in PHASE_DIRS.values())]
    )

    last: dict[tuple[str, str, str], int] = {}
    for words in acks:
        if len(words) == 5 and words[0] == "ack":  # a line cut by the kill is no acknowledgement
            _, kind_name, phase, agent, iteration = words
            last[(kind_name, phase, agent)] = int(iteration)
    for (kind_name, phase, agent), iteration in last.items():
        directory = session / PHASE_DIRS[int(phase)]
        name = {"output": f"{agent}.md", "checkpoint": "checkpoint.md", "feedback": "user_feedback.md"}
        path = directory / name[kind_name]
        try:
            found = _iteration(path, kind_name)
        except (OSError, ValueError) as error:
            counts.lost_acknowledged_saves += 1
            counts.problems.append(f"lost {path}: {error}")
            continue
        if found < iteration:
            counts.lost_acknowledged_saves += 1
            counts.problems.append(f"lost {path}: holds iteration {found}, acknowledged {iteration}")

    manager = CheckpointManager(base_dir=base_dir)
    if _errors(manager):
        counts.manifests_repaired += 1
    manifest_path = session / "session_manifest.md"
    before = (manifest_path.read_bytes(), manifest_path.stat().st_mtime_ns)
    loaded = manager.load_session(PROJECT, SESSION)
    if (manifest_path.read_bytes(), manifest_path.stat().st_mtime_ns) != before:
        counts.problems.append("load_session wrote the manifest (reads never write)")
    # A save killed after its commit point is finished by the repair (docs/architecture.md,
    # "Multi-file changes"): only then may what a reader sees change, and validate said so.
    found = journal.pending(session)
    interrupted = found is not None and found.operation is not None  # a cut-short record: not done
    if interrupted and not any(
        "interrupted" in i.message for i in manager.validate_session(PROJECT, SESSION)
    ):
        counts.problems.append("a committed operation is pending and validate does not say so")
    manager.repair(PROJECT, SESSION)  # what doctor --fix does to a manifest a kill left behind
    repaired = manager.load_session(PROJECT, SESSION)
    if not interrupted and {k: v for k, v in loaded.items() if k != "last_updated"} != {
        k: v for k, v in repaired.items() if k != "last_updated"
    }:
        counts.problems.append("load_session before the repair differs from after it")
    # The manifest on disk must now tell the truth: each row is the phase's lifecycle state as
    # derived from its checkpoint and review file, and that state is one its checkpoint allows.
    rows = {row.number: row.status for row in MANIFEST.load(session / "session_manifest.md").phases}
    view = manager.state(PROJECT, SESSION)
    checkpoints = manager.load_checkpoints(PROJECT, SESSION)
    for number, checkpoint in checkpoints.items():
        derived = view.phase(number).state
        allowed = ALLOWED_STATES.get(checkpoint.status, {checkpoint.status})
        if rows[number] != derived or derived not in allowed:
            counts.lost_manifest_rows += 1
            counts.problems.append(
                f"manifest row {number} says {rows[number]}, the files {derived}, "
                f"the checkpoint {checkpoint.status}"
            )
    remaining = _errors(manager)
    if remaining:
        counts.lost_manifest_rows += 1
        counts.problems.append(f"after repair: {remaining[0]}")


def _errors(manager: CheckpointManager) -> list[Issue]:
    """The session's errors. A stale phase (a later phase built on outputs the writer saved
    again since) is a warning about the lifecycle, true of the files, not damage from a kill."""
    return [issue for issue in manager.validate_session(PROJECT, SESSION) if issue.severity == "error"]
