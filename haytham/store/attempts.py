"""Attempts of a phase: the current one lives in the phase directory, older ones in
``attempts/{n}/`` beside it, each with its checkpoint, agent outputs and feedback.

``archive`` keeps the current attempt's files before a retry; ``load_all`` reads every
attempt back, oldest first.
"""

from __future__ import annotations

from pathlib import Path

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK
from haytham.format.guard import read_file
from haytham.format.layout import ATTEMPTS_DIR, CHECKPOINT_FILE, FEEDBACK_FILE
from haytham.records import Attempt, PhaseCheckpoint
from haytham.store import journal
from haytham.store.phase_files import agent_files
from haytham.store.review_time import hand_review_time


def stage_archive(change: journal.Change, directory: Path, number: int) -> None:
    """Stage copying the phase's checkpoint, agent outputs and feedback into
    ``attempts/{number}/`` and removing the outputs from the phase directory.

    A file already in the archive is kept as it is. The caller holds the session's lock and
    stages the rest of the operation (the new checkpoint, the feedback's removal) in ``change``.
    """
    target = directory / ATTEMPTS_DIR / str(number)
    for path in [directory / CHECKPOINT_FILE, *agent_files(directory), directory / FEEDBACK_FILE]:
        if path.is_file() and not (target / path.name).exists():
            change.write(target / path.name, read_file(path, AGENT_OUTPUT.max_bytes))
    for path in agent_files(directory):
        change.remove(path)


def load_all(directory: Path, current: PhaseCheckpoint | None) -> list[Attempt]:
    """Every attempt of the phase at ``directory``, oldest first, then the current one (whose
    checkpoint, read by the caller, is ``current``; None when the phase has none)."""
    archived = directory / ATTEMPTS_DIR
    numbers = sorted(int(p.name) for p in archived.iterdir() if p.name.isdigit()) if archived.is_dir() else []
    attempts = [load(number, archived / str(number)) for number in numbers]
    if current is not None:
        attempts.append(load(current.retry_count + 1, directory))
    return attempts


def load(number: int, directory: Path) -> Attempt:
    """Attempt ``number``, as the files in ``directory`` record it."""
    path = directory / CHECKPOINT_FILE
    checkpoint = CHECKPOINT.load(path) if path.is_file() else None
    order = [run.agent_name for run in checkpoint.agents] if checkpoint else []
    outputs = {p.stem: AGENT_OUTPUT.load(p).content for p in agent_files(directory, order)}
    feedback_path = directory / FEEDBACK_FILE
    feedback = FEEDBACK.load(feedback_path) if feedback_path.is_file() else None
    if feedback is not None:
        feedback = hand_review_time(feedback, feedback_path, checkpoint.completed if checkpoint else None)
    return Attempt(number, directory, checkpoint, feedback, outputs)
