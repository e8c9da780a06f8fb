"""What each page shows, gathered from the store's public API: no HTML and no web framework.

Every state is the lifecycle's (``CheckpointManager.state``, ``lifecycle.verdict``); this
module only reads, never writes, and never decides a state of its own. Every project and
session name from a URL goes through ``store.names.check_path_name`` (the rule for reaching
what exists) before it touches a path, and agent names through ``check_agent_name``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from haytham.errors import HaythamError, NotFoundError
from haytham.format.agent_output import load_start
from haytham.format.layout import ATTEMPTS_DIR, FEEDBACK_FILE
from haytham.records import AgentOutput, Attempt, HistoryEntry, PhaseCheckpoint, SessionManifest, UserFeedback
from haytham.store import durations, fs, lifecycle
from haytham.store.clock import parse_timestamp, sort_time
from haytham.store.lease import LeaseHolder
from haytham.store.lifecycle import PhaseView, SessionView
from haytham.store.manager import CheckpointManager
from haytham.store.names import check_path_name
from haytham.store.scan import list_sessions
from haytham.web.render import Bar, DiffLine, bar_chart, unified_diff

INBOX_KINDS = ("awaiting_review", "failed", "stale")
"""What the inbox lists: phases awaiting review, failed sessions, stale phases."""
REVIEW_MOVES = ("approve", "send back")
"""The lifecycle moves the review form makes."""
NO_FILE = fs.NO_FILE
"""The version of a user_feedback.md that does not exist."""
SHOWN_OUTPUT_BYTES = 1024 * 1024
"""How much of an agent output a page and the report show: its first MiB, with a note of its
size and its file. An output may be 256 MiB (docs/formats.md, "Limits"); rendering it whole
took gigabytes. Only this much of an output is read, so the memory a page or the report
takes grows only with what the store reads to derive the state (``memory_bound``; docs/formats.md,
"Limits")."""


def memory_bound(output_bytes: int) -> int:
    """The most memory (peak resident bytes) a page or the report of a session may take when its
    largest agent output is ``output_bytes`` long: 100 MiB for the program and the page, plus
    twice the output for the store's digest of the phase's outputs (which reads each one whole,
    mapped and decoded, to tell whether it was edited since its checkpoint), the bound every
    read command keeps (tests/test_big_output_memory.py)."""
    return 100 * 2**20 + 2 * output_bytes


def check_names(project: str, session: str) -> None:
    """Refuse (UnsafeNameError) a project or session from a URL that cannot name a folder safely."""
    check_path_name("project", project)
    check_path_name("session", session)


# ------------------------------------------------------------------------- inbox


@dataclass(frozen=True)
class InboxItem:
    """One line of the inbox: a phase that needs a person, and why."""

    kind: str
    """``awaiting_review``, ``failed`` or ``stale`` (one of ``INBOX_KINDS``)."""
    project: str
    session: str
    phase: int
    name: str
    state: str
    """The lifecycle's state in words (``PhaseView.describe``)."""
    since: str | None
    """When the phase began to wait (awaiting review) or ended (failed), ISO 8601 UTC."""
    tokens: int | None
    cost: float | None


@dataclass(frozen=True)
class Inbox:
    items: list[InboxItem]
    projects: list[str]
    warnings: list[str]


def inbox(manager: CheckpointManager) -> Inbox:
    """Every phase awaiting review (oldest first), then failed and stale ones, across the base dir."""
    found, unreadable = list_sessions(manager.base_dir, workflows=manager.workflows)
    warnings = [f"a session that cannot be read: {issue}" for issue in unreadable]
    items: list[InboxItem] = []
    for summary in found:
        project, session = summary.project_id, summary.session_id
        try:
            view = manager.state(project, session)
            checkpoints = manager.load_checkpoints(project, session)
        except HaythamError as error:
            warnings.append(f"{project}/{session}: {error}")
            continue
        for phase in view.phases:
            kind = _inbox_kind(view, phase)
            if kind is None:
                continue
            checkpoint = checkpoints.get(phase.number)
            since = phase.waiting_since or (checkpoint.completed if checkpoint else None)
            items.append(
                InboxItem(
                    kind,
                    project,
                    session,
                    phase.number,
                    phase.name,
                    phase.describe(),
                    since,
                    checkpoint.total_tokens if checkpoint else None,
                    checkpoint.cost if checkpoint else None,
                )
            )
    items.sort(key=lambda i: (INBOX_KINDS.index(i.kind), sort_time(i.since), i.project, i.session, i.phase))
    return Inbox(items, sorted({s.project_id for s in found}), warnings)


def _inbox_kind(view: SessionView, phase: PhaseView) -> str | None:
    """Why a phase is in the inbox: the session's current phase awaiting review or failed, or stale."""
    if view.current is not None and phase.number == view.current.number and phase.state in INBOX_KINDS[:2]:
        return phase.state
    return "stale" if phase.state == "stale" else None


def waited(since: str | None, now: datetime) -> str:
    """How long ago ``since`` was, in words a person reads at a glance (``3 h 5 min``)."""
    if not since:
        return "unknown"
    try:
        seconds = int((now - parse_timestamp(since)).total_seconds())
    except ValueError:
        return "unknown"
    if seconds < 60:
        return f"{max(seconds, 0)} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} days"


# ----------------------------------------------------------------------- session


@dataclass(frozen=True)
class AttemptLine:
    """One attempt of a phase on the timeline: its checkpoint's status and its review's verdict."""

    number: int
    status: str
    verdict: str
    """``lifecycle.verdict`` of the attempt's review: none, awaiting, approved, sent_back."""
    comments: str
    changes: tuple[str, ...]
    duration: float | None
    tokens: int | None
    cost: float | None


@dataclass(frozen=True)
class PhaseLine:
    view: PhaseView
    checkpoint: PhaseCheckpoint | None
    attempts: list[AttemptLine]

    @property
    def duration(self) -> float | None:
        """The time the phase's current attempt ran, as every view says it."""
        return durations.phase_seconds(self.checkpoint)


@dataclass(frozen=True)
class SessionPage:
    project: str
    session: str
    manifest: SessionManifest
    state: SessionView
    phases: list[PhaseLine]
    history: list[HistoryEntry]
    charts: list[str]
    """Inline SVG charts: duration, tokens and cost per phase, then per agent."""
    version: str
    running: LeaseHolder | None = None
    """Who is running the session now (``CheckpointManager.running``), or None."""


def session_page(manager: CheckpointManager, project: str, session: str) -> SessionPage:
    """The session page: its timeline, charts and history."""
    check_names(project, session)
    manifest = manager.load_manifest(project, session)
    state = manager.state(project, session)
    checkpoints = manager.load_checkpoints(project, session)
    lines = []
    for view in state.phases:
        checkpoint = checkpoints.get(view.number)
        attempts = manager.load_attempts(project, session, view.number, _no_output) if checkpoint else []
        lines.append(PhaseLine(view, checkpoint, [_attempt_line(a) for a in attempts]))
    return SessionPage(
        project,
        session,
        manifest,
        state,
        lines,
        manager.history(project, session),
        charts(lines),
        session_version(manager, project, session),
        manager.running(project, session),
    )


def _no_output(path: Path) -> str:
    """An output as the session page needs it: not at all (it shows attempts' reviews)."""
    return ""


@dataclass(frozen=True)
class OutputCut:
    """An output of which a page shows only the first ``SHOWN_OUTPUT_BYTES``."""

    path: Path
    """The file, to open for the rest."""
    size: int
    """The file's size in bytes."""

    @property
    def note(self) -> str:
        return (
            f"This output is {self.size / 2**20:,.1f} MiB: only its first {SHOWN_OUTPUT_BYTES // 2**20} MiB "
            f"is shown. Open {self.path} for the whole of it."
        )


def _attempt_line(attempt: Attempt) -> AttemptLine:
    checkpoint, feedback = attempt.checkpoint, attempt.feedback
    return AttemptLine(
        attempt.number,
        checkpoint.status if checkpoint else "pending",
        lifecycle.verdict(feedback),
        feedback.comments if feedback else "",
        feedback.requested_changes if feedback else (),
        durations.phase_seconds(checkpoint),
        checkpoint.total_tokens if checkpoint else None,
        checkpoint.cost if checkpoint else None,
    )


def charts(lines: Sequence[PhaseLine]) -> list[str]:
    """Duration, tokens and cost per phase and per agent, as SVG bar charts (a phase's
    duration is the time it ran, ``durations.phase_seconds``, as every view shows it)."""
    ran = [line for line in lines if line.checkpoint is not None]
    if not ran:
        return []

    def label(line: PhaseLine) -> str:
        return f"{line.view.number}. {line.view.name}"

    phase_times = [Bar(label(x), x.duration or 0.0, _seconds(x.duration)) for x in ran]
    tokens = [
        Bar(label(x), float(x.checkpoint.total_tokens or 0), f"{x.checkpoint.total_tokens or 0:,}")
        for x in ran
        if x.checkpoint
    ]
    costs = [
        Bar(label(x), x.checkpoint.cost or 0.0, f"${x.checkpoint.cost or 0:.4f}") for x in ran if x.checkpoint
    ]
    runs = [
        (f"{x.view.number}. {run.agent_name}", run)
        for x in ran
        if x.checkpoint
        for run in x.checkpoint.agents
    ]
    return [
        bar_chart("Duration per phase", phase_times),
        bar_chart("Tokens per phase", tokens),
        bar_chart("Cost per phase", costs),
        bar_chart("Duration per agent", [Bar(n, r.duration or 0.0, _seconds(r.duration)) for n, r in runs]),
        bar_chart("Tokens per agent", [Bar(n, float(r.tokens or 0), f"{r.tokens or 0:,}") for n, r in runs]),
        bar_chart("Cost per agent", [Bar(n, r.cost or 0.0, f"${r.cost or 0:.4f}") for n, r in runs]),
    ]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def session_version(manager: CheckpointManager, project: str, session: str) -> str:
    """A stamp of every file of the session (names, sizes, modification times): it changes when
    any file does, so a page can tell that it is out of date without reading the files."""
    check_names(project, session)
    directory = manager.session_dir(project, session)
    if not directory.is_dir():
        raise NotFoundError(f"session {project}/{session} does not exist", path=directory)
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            try:
                stat = os.stat(os.path.join(root, name))
            except OSError:
                continue
            digest.update(f"{root}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


# ------------------------------------------------------------------------- phase


@dataclass(frozen=True)
class EarlierAttempt:
    """An archived attempt, with its outputs' diffs against the current attempt's."""

    attempt: AttemptLine
    outputs: dict[str, str]
    diffs: dict[str, list[DiffLine]]


@dataclass(frozen=True)
class PhasePage:
    project: str
    session: str
    view: PhaseView
    session_state: str
    checkpoint: PhaseCheckpoint | None
    outputs: list[AgentOutput]
    feedback: UserFeedback | None
    feedback_text: str | None
    """user_feedback.md exactly as it is on disk, None when there is none."""
    version: str
    """``feedback_version``: what the review form carries back."""
    moves: tuple[str, ...]
    """The lifecycle moves a reviewer may make now (``approve``, ``send back``)."""
    current_attempt: AttemptLine | None
    earlier: list[EarlierAttempt] = field(default_factory=list)
    running: LeaseHolder | None = None
    """Who is running the session now (``CheckpointManager.running``), or None."""
    cut: dict[Path, OutputCut] = field(default_factory=dict)
    """The outputs (current and earlier) shown only in part, by their file."""
    directory: Path = Path()
    """The phase's folder."""

    def cut_of(self, agent: str, attempt: int | None = None) -> OutputCut | None:
        """How the output of ``agent`` (in the current attempt, or earlier ``attempt``) was cut."""
        directory = self.directory if attempt is None else self.directory / ATTEMPTS_DIR / str(attempt)
        return self.cut.get(directory / f"{agent}.md")

    @property
    def duration(self) -> float | None:
        """The time the phase's current attempt ran, as every view says it."""
        return durations.phase_seconds(self.checkpoint)

    @property
    def not_counted(self) -> bool:
        """Whether user_feedback.md holds comments, changes or the reviewer's own text while
        it still says ``Reviewed: false``: written, but not a review yet (the page says so)."""
        f = self.feedback
        return f is not None and not f.reviewed and bool(f.comments or f.requested_changes or f.notes)


def feedback_path(manager: CheckpointManager, project: str, session: str, phase: int) -> Path:
    return manager.phase_dir(project, session, phase) / FEEDBACK_FILE


def feedback_version(
    manager: CheckpointManager, project: str, session: str, phase: int
) -> tuple[str, str | None]:
    """The version (``fs.file_version``) of the phase's user_feedback.md, and its text."""
    version, data = fs.file_version(feedback_path(manager, project, session, phase))
    return version, None if data is None else data.decode("utf-8", "replace")


def phase_page(
    manager: CheckpointManager,
    project: str,
    session: str,
    phase: int,
    *,
    state: SessionView | None = None,
    checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
) -> PhasePage:
    """The phase page: outputs, their metadata, the review, earlier attempts with diffs.

    ``state`` and ``checkpoints`` are the session's as the caller read them, when it has:
    the report makes every phase's page from one reading of the session, where reading it
    again for each phase would make its work grow with the square of the phases."""
    check_names(project, session)
    state = manager.state(project, session) if state is None else state
    try:
        view = state.phase(phase)
    except KeyError:
        manager.phase_dir(project, session, phase)  # UnknownPhaseError names the phases there are
        raise NotFoundError(f"phase {phase} is not a phase of {project}/{session}") from None
    if checkpoints is None:
        checkpoints = manager.load_checkpoints(project, session)
    checkpoint = checkpoints.get(phase)
    records: dict[Path, AgentOutput] = {}
    cut: dict[Path, OutputCut] = {}

    def read_output(path: Path) -> str | None:
        """Each output file read once (its first ``SHOWN_OUTPUT_BYTES``), its record kept
        for the page: reading it a second time could find it removed by a writer in between
        (a 404 for a session that exists)."""
        found = load_start(path, SHOWN_OUTPUT_BYTES) if path.is_file() else None
        if found is None:
            return None
        records[path], size, whole = found
        if not whole:
            cut[path] = OutputCut(path, size)
        return records[path].content

    directory = manager.phase_dir(project, session, phase)
    attempts = manager.load_attempts(project, session, phase, read_output) if checkpoint else []
    outputs = [records[directory / f"{agent}.md"] for agent in attempts[-1].outputs] if attempts else []
    version, text = feedback_version(manager, project, session, phase)
    current = attempts[-1].outputs if attempts else {}
    earlier = [
        EarlierAttempt(
            _attempt_line(attempt),
            attempt.outputs,
            {
                agent: unified_diff(
                    attempt.outputs.get(agent, ""),
                    current.get(agent, ""),
                    f"attempt {attempt.number}/{agent}.md",
                    f"attempt {attempts[-1].number}/{agent}.md",
                )
                for agent in sorted(set(attempt.outputs) | set(current))
            },
        )
        for attempt in reversed(attempts[:-1])
    ]
    moves = tuple(t.event for t in lifecycle.moves_from(view.state, "reviewer") if t.event in REVIEW_MOVES)
    return PhasePage(
        project,
        session,
        view,
        state.state,
        checkpoint,
        outputs,
        manager.load_feedback(project, session, phase) if checkpoint else None,
        text,
        version,
        moves if checkpoint else (),
        _attempt_line(attempts[-1]) if attempts else None,
        earlier,
        manager.running(project, session),
        cut,
        directory,
    )
