"""Attempts of a phase: the current one lives in the phase directory, older ones in
``attempts/{n}/`` beside it, each with its checkpoint, agent outputs and feedback.

``archive`` keeps the current attempt's files before a retry; ``load_all`` reads every
attempt back, oldest first.

Reading takes no lock, so a writer may change the files between two reads (a journaled
``archive`` removes a phase's outputs and feedback one step after another): a file that was
listed and is gone when it is opened is read as absent, as it would have been a moment
later, never as an error. A read thus sees each file before or after a step, never a 404
for a session that exists.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from haytham.errors import Issue
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK
from haytham.format.document import DocumentFormat, R
from haytham.format.guard import read_file
from haytham.format.layout import ATTEMPTS_DIR, CHECKPOINT_FILE, FEEDBACK_FILE
from haytham.records import Attempt, PhaseCheckpoint, ReviewTimeSource, UserFeedback
from haytham.store import journal
from haytham.store.phase_files import agent_files
from haytham.store.review_time import hand_review_time, is_hand_review


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


OutputReader = Callable[[Path], "str | None"]
"""How ``load`` reads an agent output file: its content, or None when the file is gone."""


def whole_output(path: Path) -> str | None:
    """The whole content of the agent output at ``path``; None when there is no such file."""
    record = _optional(AGENT_OUTPUT, path)
    return None if record is None else record.content


def _optional(kind: DocumentFormat[R], path: Path) -> R | None:
    """The record of the file at ``path``; None when it is not a file, or no longer one."""
    return kind.load_optional(path) if path.is_file() else None


def load_all(
    directory: Path,
    current: PhaseCheckpoint | None,
    read_output: OutputReader = whole_output,
    problems: list[Issue] | None = None,
) -> list[Attempt]:
    """Every attempt of the phase at ``directory``, oldest first, then the current one (whose
    checkpoint, read by the caller, is ``current``; None when the phase has none). Each
    output is read by ``read_output`` (a page reads only the start of a large one).

    ``problems``: where a view that must show what reads (a page, ``show``) collects the
    mistakes of review files that do not read (each attempt's feedback is then None);
    without it such a file raises its DocumentError, as every library read does."""
    archived = directory / ATTEMPTS_DIR
    try:
        numbers = sorted(int(p.name) for p in archived.iterdir() if p.name.isdigit())
    except (FileNotFoundError, NotADirectoryError):
        numbers = []
    attempts = [load(number, archived / str(number), read_output, problems) for number in numbers]
    if current is not None:
        attempts.append(load(current.retry_count + 1, directory, read_output, problems))
    return attempts


def read_review(
    path: Path, completed: str | None, problems: list[Issue] | None = None
) -> UserFeedback | None:
    """The review in the file at ``path`` (None when there is none), with a hand review's
    time (``hand_review_time``; ``completed``: its phase checkpoint's Completed).

    A file that does not read raises its DocumentError, or with ``problems`` is None and its
    mistakes (file, line, field, message: ``FEEDBACK.read_path``'s issues, as ``validate``
    reports them) are added there: the one lenient read of a review, for the views that show
    a session whose review has a mistake instead of refusing all of it."""
    feedback = _review_file(path, problems)
    return None if feedback is None else hand_review_time(feedback, path, completed)


def _review_file(path: Path, problems: list[Issue] | None) -> UserFeedback | None:
    """The review in the file at ``path`` as written (no time derived), or None; a mistake
    raises, or with ``problems`` is added there (as for ``read_review``)."""
    if not path.is_file():
        return None
    if problems is None:
        return FEEDBACK.load_optional(path)
    feedback, issues = FEEDBACK.read_path(path)
    if feedback is None:
        problems.extend(issue for issue in issues if issue.is_error)
    return feedback


def load(
    number: int,
    directory: Path,
    read_output: OutputReader = whole_output,
    problems: list[Issue] | None = None,
) -> Attempt:
    """Attempt ``number``, as the files in ``directory`` record it (a file removed since it
    was listed is not there; ``problems``: as for ``load_all``)."""
    checkpoint = _optional(CHECKPOINT, directory / CHECKPOINT_FILE)
    order = [run.agent_name for run in checkpoint.agents] if checkpoint else []
    try:
        listed = agent_files(directory, order)
    except (FileNotFoundError, NotADirectoryError):
        listed = []
    outputs = {}
    for path in listed:
        content = read_output(path)
        if content is not None:
            outputs[path.stem] = content
    feedback_path = directory / FEEDBACK_FILE
    completed = checkpoint.completed if checkpoint else None
    feedback = _review_file(feedback_path, problems)
    source: ReviewTimeSource | None = None
    if feedback is not None and feedback.reviewed:
        source = "file" if is_hand_review(feedback, completed) else "recorded"
        feedback = hand_review_time(feedback, feedback_path, completed)
    return Attempt(number, directory, checkpoint, feedback, outputs, source)
