"""What each page shows, gathered from the store's public API: no HTML and no web framework.

Every state is the lifecycle's (``CheckpointManager.state``, ``lifecycle.verdict``); this
module only reads, never writes, and never decides a state of its own. Every project and
session name from a URL goes through ``store.names.check_path_name`` (the rule for reaching
what exists) before it touches a path, and agent names through ``check_agent_name``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    Issue,
    NotFoundError,
    UnsafeFileError,
    UnsafeNameError,
)
from haytham.format.agent_output import MAX_OUTPUT_BYTES, load_start
from haytham.format.guard import chunks
from haytham.format.layout import ATTEMPTS_DIR, FEEDBACK_FILE, SESSIONS_DIR
from haytham.format.reviewer import Reviewer, parse_reviewer
from haytham.format.run_by import RunBy
from haytham.format.tries import describe_tries
from haytham.otel import OtelConfig
from haytham.records import AgentOutput, Attempt, HistoryEntry, PhaseCheckpoint, SessionManifest, UserFeedback
from haytham.store import durations, fs, lifecycle
from haytham.store.advice import Advice, advise, run_by_of
from haytham.store.clock import parse_timestamp
from haytham.store.lease import LeaseHolder
from haytham.store.lifecycle import PhaseView, SessionView
from haytham.store.listing import SEPARATOR, Match, WaitingMatch
from haytham.store.manager import CheckpointManager
from haytham.store.names import check_agent_name, check_path_name
from haytham.store.scan import SessionSummary, iter_sessions
from haytham.store.shown import Shown
from haytham.store.watch import Watcher
from haytham.web.render import Bar, DiffLine, bar_chart, unified_diff

INBOX_KINDS = lifecycle.NEEDS_A_PERSON
"""What the inbox lists, in its order: phases awaiting review, failed sessions, stale phases."""
INBOX_NEEDS = {"awaiting_review": "review", "failed": "a fix, then resume", "stale": "a re-run"}
"""What each kind of inbox item needs from a person, as its "Needs" column says it."""
INBOX_PER_PAGE = 100
"""How many items one page of the inbox lists: its HTML stays bounded however many phases wait."""
INBOX_ORDERS = ("newest", "oldest")
"""The inbox's orders within each kind (``?order=``): newest waiting first (the default), or
the longest wait first."""
REVIEW_MOVES = ("approve", "send back")
"""The lifecycle moves the review form makes."""
SESSIONS_PER_PAGE = 100
"""How many sessions one page of the sessions page lists: its HTML stays bounded however
many sessions there are."""
NO_FILE = fs.NO_FILE
"""The version of a user_feedback.md that does not exist."""
SHOWN_OUTPUT_BYTES = 256 * 1024
"""How much of an agent output a page and the report show: its first 256 KiB, with a note of
its size and a link to the whole file (``raw_output``). An output may be 256 MiB
(docs/formats.md, "Limits"); rendering it whole took gigabytes, and a page of even 1 MiB of
it was more than a browser shows usably. Only this much of an output is read, so the memory a
page or the report takes grows only with what the store reads to derive the state
(``memory_bound``; docs/formats.md, "Limits")."""
SHOWN_DIFF_LINES = 2000
"""The most lines of one diff between attempts a page shows (the rest is counted in a note):
two outputs of ``SHOWN_OUTPUT_BYTES`` that share nothing would make a diff of both."""

EDITABLE_OUTPUT_CHARS = 50_000
"""The longest output the phase page offers to correct in its "Edit output" form: a browser
sends a text area's line breaks as CRLF, and a form field may hold at most
``app.MAX_FORM_FIELD`` (100,000) characters. A longer output is corrected with
``haytham feedback P S N --edit AGENT``, which the page says instead."""


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


def inbox_reviewer(text: str, mine: bool, identity: Reviewer | None) -> Reviewer | None:
    """Whom the inbox is filtered for: ``?reviewer=`` (a name, an address or ``Name <email>``),
    else the server's own identity with ``?mine=1`` (InvalidArgumentError when it has none),
    else nobody (every phase)."""
    if text.strip():
        return parse_reviewer(text)
    if mine:
        if identity is None:
            raise InvalidArgumentError(
                "this server has no reviewer identity for 'mine': start it with haytham serve "
                "--reviewer, HAYTHAM_REVIEWER or review.reviewer in haytham.yaml",
                field="mine",
            )
        return identity
    return None


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
    reviewers: tuple[str, ...] = ()
    """Who the workflow assigns to review the phase (``reviewers:``); none: anyone."""

    @property
    def needs(self) -> str:
        """What the item needs from a person (``INBOX_NEEDS``): the column that says it once."""
        return INBOX_NEEDS[self.kind]

    @property
    def why(self) -> str:
        """The reason the lifecycle gives beside the state (what a stale phase was built on,
        a failed phase's problem), without the state's own words; empty when it gives none."""
        words = self.kind.replace("_", " ")
        rest = self.state[len(words) :].strip() if self.state.startswith(words) else self.state
        return rest[1:-1] if rest.startswith("(") and rest.endswith(")") else rest


@dataclass(frozen=True)
class InboxQuery:
    """What the inbox was asked for: a project, a kind, a reviewer, an order and a page."""

    project: str = ""
    kind: str = ""
    reviewer_text: str = ""
    """``?reviewer=`` as it was typed (for the form and the links)."""
    mine: bool = False
    order: str = "newest"
    page: int = 1
    reviewer: Reviewer | None = None
    """Whom the inbox is filtered for (``inbox_reviewer``), or None for every phase."""

    @classmethod
    def parse(cls, params: Mapping[str, str], identity: Reviewer | None = None) -> InboxQuery:
        """The query of a URL's parameters; InvalidArgumentError (a 400) names a bad one."""
        kind = params.get("kind", "")
        if kind and kind not in INBOX_KINDS:
            raise InvalidArgumentError(f"kind {kind!r} is not one of {', '.join(INBOX_KINDS)}", field="kind")
        order = params.get("order") or "newest"
        if order not in INBOX_ORDERS:
            raise InvalidArgumentError(f"order {order!r} is not newest or oldest", field="order")
        text = params.get("page") or "1"
        if not text.isdigit() or int(text) < 1:
            raise InvalidArgumentError(f"page {text!r} is not a page number (1, 2, ...)", field="page")
        typed, mine = params.get("reviewer", ""), params.get("mine", "") == "1"
        reviewer = inbox_reviewer(typed, mine, identity)
        return cls(params.get("project", ""), kind, typed, mine, order, int(text), reviewer)

    def link(self, **changes: object) -> str:
        """The query string of this query with ``changes`` (a page): a plain link."""
        values: dict[str, object] = {
            "project": self.project,
            "kind": self.kind,
            "reviewer": self.reviewer_text,
            "mine": "1" if self.mine else "",
            "order": "" if self.order == "newest" else self.order,
            "page": self.page,
        }
        values.update(changes)
        shown = {k: str(v) for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)}
        return "?" + urlencode(shown)


@dataclass(frozen=True)
class Inbox:
    """One page of the inbox: its items, how many match in all, the projects to filter by."""

    items: list[InboxItem]
    projects: list[str]
    warnings: list[str]
    total: int = 0
    """How many items match the query (all pages)."""
    pages: int = 1
    query: InboxQuery = field(default_factory=InboxQuery)
    kinds: dict[str, int] = field(default_factory=dict)
    """How many items of each kind match the query's project and reviewer (every page)."""


def inbox(
    manager: CheckpointManager, query: InboxQuery | None = None, watcher: Watcher | None = None
) -> Inbox:
    """The phases that wait for a person across the base dir (``lifecycle.needs_a_person``):
    those awaiting review, then failed, then stale ones, each kind newest waiting first (or
    oldest, ``query.order``), filtered by project, kind and reviewer (the phases assigned to
    them or to nobody: the workflow's ``reviewers:``, matched by
    ``format.reviewer.is_assigned``) and cut to one page of ``INBOX_PER_PAGE``.

    Everything comes from the store's listing (``scan.iter_sessions``: each session's waiting
    phases are remembered in the index while its files are unchanged), which filters, orders,
    counts and cuts the page in the index's queries: a warm inbox opens no session file and
    makes the items of its page alone. A session whose files changed is read again.
    ``watcher`` (``haytham serve``'s): only the sessions with file-system events are checked."""
    query = InboxQuery() if query is None else query
    with iter_sessions(manager.base_dir, workflows=manager.workflows, watcher=watcher) as listing:
        every_kind = WaitingMatch(project_id=query.project or None, assigned=query.reviewer)
        kinds = listing.waiting_counts(every_kind)
        total = kinds.get(query.kind, 0) if query.kind else sum(kinds.values())
        pages = max(1, -(-total // INBOX_PER_PAGE))
        if query.page > pages:
            raise NotFoundError(f"page {query.page} of the inbox does not exist (there are {pages})")
        found = listing.waiting(
            dataclasses.replace(every_kind, state=query.kind or None),
            newest=query.order == "newest",
            offset=(query.page - 1) * INBOX_PER_PAGE,
            limit=INBOX_PER_PAGE,
        )
        projects = sorted(project for (project,) in listing.counts(["project_id"]))
        warnings = [_located(manager.base_dir, issue) for issue in listing.issues]
    items = [
        InboxItem(
            waiting.state,
            project,
            session,
            waiting.phase,
            waiting.name,
            waiting.described,
            waiting.since,
            waiting.tokens,
            waiting.cost,
            waiting.reviewers,
        )
        for project, session, waiting in found
    ]
    return Inbox(items, projects, warnings, total, pages, query, kinds)


def _located(base_dir: Path, issue: Issue) -> str:
    """A listing's issue as the inbox warns of it: ``project/session: ...`` for a file of a
    session that is listed but whose state its files cannot give (a checkpoint that does not
    read), else a session that cannot be read at all."""
    if issue.severity == "warning" and issue.path is not None:
        try:
            parts = issue.path.relative_to(base_dir).parts
        except ValueError:
            parts = ()
        if len(parts) > 3 and parts[1] == SESSIONS_DIR:
            return f"{parts[0]}/{parts[2]}: {issue}"
    return f"a session that cannot be read: {issue}"


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

    @property
    def meta(self) -> str:
        """Its tokens, cost and duration in one line, those it has (empty when none)."""
        parts = [] if self.tokens is None else [f"{self.tokens:,} tokens"]
        parts += [] if self.cost is None else [f"${self.cost:.4f}"]
        parts += [] if self.duration is None else [f"{self.duration:.1f} s"]
        return " · ".join(parts)

    @property
    def said(self) -> str:
        """The attempt in words: ``completed, sent back`` (its review left out when none)."""
        status = self.status.replace("_", " ")
        return status if self.verdict == "none" else f"{status}, {self.verdict.replace('_', ' ')}"


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
    problems: list[Issue] = field(default_factory=list)
    """The mistakes of its review files that do not read (file, line, field, message),
    shown at the top: everything else of the session is shown as it reads."""
    advice: Advice | None = None
    """What the session needs next and the command to type (``advice.advise``, as
    ``haytham status`` says it)."""
    run_by: RunBy | None = None
    """The framework that runs the session in haytham's stead (``advice.run_by_of``): its
    page offers no fork or re-run, which copy and run haytham's phases."""


def session_page(manager: CheckpointManager, project: str, session: str) -> SessionPage:
    """The session page: its timeline, charts and history. A review file with a mistake
    does not lock the reviewer out: its phase is awaiting review (the lifecycle's state,
    with the problem), its attempt shows no review, and the mistake is in ``problems``."""
    check_names(project, session)
    manifest = manager.load_manifest(project, session)
    state = manager.state(project, session)
    checkpoints = manager.load_checkpoints(project, session)
    handle = manager.session(project, session)
    problems: list[Issue] = []
    lines = []
    for view in state.phases:
        checkpoint = checkpoints.get(view.number)
        attempts = handle.attempts(view.number, _no_output, problems=problems) if checkpoint else []
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
        problems,
        advise(manager, project, session),
        run_by_of(manager, project, session),
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
    attempt: int | None = None
    """The earlier attempt the file is of, None for the current one (the raw file's link
    says which: ``raw_output``)."""

    @property
    def note(self) -> str:
        """What the page says of the cut: the file's size and how much of it is shown."""
        return (
            f"This output is {self.size / 2**20:,.1f} MiB: only its first "
            f"{SHOWN_OUTPUT_BYTES // 1024} KiB is shown."
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
    duration is the time it ran, ``durations.phase_seconds``, as every view shows it). A chart
    whose every value is zero or unknown says nothing and is left out (a LangGraph thread's
    review phase has no duration, tokens or cost)."""
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
    drawn = [
        ("Duration per phase", phase_times),
        ("Tokens per phase", tokens),
        ("Cost per phase", costs),
        ("Duration per agent", [Bar(n, r.duration or 0.0, _seconds(r.duration)) for n, r in runs]),
        ("Tokens per agent", [Bar(n, float(r.tokens or 0), f"{r.tokens or 0:,}") for n, r in runs]),
        ("Cost per agent", [Bar(n, r.cost or 0.0, f"${r.cost or 0:.4f}") for n, r in runs]),
    ]
    return [bar_chart(title, bars) for title, bars in drawn if any(bar.value > 0 for bar in bars)]


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
    """Each agent's diff, its first ``SHOWN_DIFF_LINES`` lines at most."""
    omitted: dict[str, int] = field(default_factory=dict)
    """How many lines of an agent's diff are not shown (only agents whose diff was cut)."""


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
    """What the review form carries back: ``Shown.token`` of the phase as this page shows it
    (its attempt, the digest of its outputs, the version of user_feedback.md)."""
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
    problems: list[Issue] = field(default_factory=list)
    """The mistakes of its files that do not read (a review file, an agent output), shown
    at the top; what does read is shown as it is."""

    @property
    def review_broken(self) -> bool:
        """Whether the current review file does not read: the page then shows its raw text
        beside the form, whose save rewrites it (keeping what the merge keeps)."""
        return self.feedback_text is not None and any(
            issue.path == self.directory / FEEDBACK_FILE for issue in self.problems
        )

    corrections: dict[str, list[DiffLine]] = field(default_factory=dict)
    """For each agent whose output a reviewer corrected in this attempt, the diff from the
    agent's own output to the output now (``SessionHandle.corrections``)."""
    tries: dict[str, str] = field(default_factory=dict)
    """For each agent whose output keeps its tries, them in words (``describe_tries``:
    ``succeeded on try 3 of 5 after 2 rate limits (waited 41 s)``)."""
    trace_links: dict[str, str] = field(default_factory=dict)
    """Each current output's link to its span in the tracing tool, by agent, when haytham.yaml
    has ``otel.trace_url`` (``OtelConfig.agent_trace_url``); empty without one."""

    @property
    def correctable(self) -> bool:
        """Whether a reviewer may correct the outputs now (``lifecycle.CORRECTABLE``)."""
        return self.checkpoint is not None and self.view.state in lifecycle.CORRECTABLE

    def edit_refusal(self, output: AgentOutput) -> str | None:
        """Why the page cannot offer ``output`` to correct (too long for a form), or None."""
        if self.cut_of(output.agent_name) is None and len(output.content) <= EDITABLE_OUTPUT_CHARS:
            return None
        return (
            f"This output is longer than the {EDITABLE_OUTPUT_CHARS:,} characters the page edits: "
            f"correct it with haytham feedback {self.project} {self.session} {self.view.number} "
            f"--edit {output.agent_name}"
        )

    @property
    def outcome(self) -> str:
        """What the review decided, in words (``lifecycle.outcome``: approved, modified, ...)."""
        return lifecycle.OUTCOME_LABELS[lifecycle.outcome(self.feedback)]

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
    otel: OtelConfig | None = None,
) -> PhasePage:
    """The phase page: outputs, their metadata, the review, earlier attempts with diffs, and
    with ``otel`` (haytham.yaml's ``otel.trace_url``) each output's link to its trace.

    A file that does not read (a review file, an agent output) locks nobody out: what reads is
    shown, and its mistake is in ``problems``.

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
    # what the reviewer is shown, read before the outputs are: a change in between makes a
    # decision from this page refused (the safe side), never applied to what was not shown
    handle = manager.session(project, session)
    seen = handle.shown(phase)
    records: dict[Path, AgentOutput] = {}
    cut: dict[Path, OutputCut] = {}
    problems: list[Issue] = []

    def read_output(path: Path) -> str | None:
        """Each output file read once (its first ``SHOWN_OUTPUT_BYTES``), its record kept
        for the page: reading it a second time could find it removed by a writer in between
        (a 404 for a session that exists)."""
        try:
            found = load_start(path, SHOWN_OUTPUT_BYTES) if path.is_file() else None
        except DocumentError as error:
            problems.append(Issue(error.path or path, error.line, error.field, error.message))
            return None
        if found is None:
            return None
        records[path], size, whole = found
        if not whole:
            cut[path] = OutputCut(path, size, None if path.parent == directory else int(path.parent.name))
        return records[path].content

    directory = manager.phase_dir(project, session, phase)
    attempts = handle.attempts(phase, read_output, problems=problems) if checkpoint else []
    outputs = [records[directory / f"{agent}.md"] for agent in attempts[-1].outputs] if attempts else []
    version, text = feedback_version(manager, project, session, phase)
    current = attempts[-1].outputs if attempts else {}
    earlier = []
    for attempt in reversed(attempts[:-1]):
        diffs: dict[str, list[DiffLine]] = {}
        omitted: dict[str, int] = {}
        for agent in sorted(set(attempt.outputs) | set(current)):
            lines = unified_diff(
                attempt.outputs.get(agent, ""),
                current.get(agent, ""),
                f"attempt {attempt.number}/{agent}.md",
                f"attempt {attempts[-1].number}/{agent}.md",
            )
            diffs[agent] = lines[:SHOWN_DIFF_LINES]
            if len(lines) > SHOWN_DIFF_LINES:
                omitted[agent] = len(lines) - SHOWN_DIFF_LINES
        earlier.append(EarlierAttempt(_attempt_line(attempt), attempt.outputs, diffs, omitted))
    moves = tuple(t.event for t in lifecycle.moves_from(view.state, "reviewer") if t.event in REVIEW_MOVES)
    # the history is read only for a phase an output of which says it was corrected: the
    # report makes every phase's page, and reading the history for each would be quadratic
    corrected = any(output.corrected for output in outputs)
    corrections = {
        c.agent: unified_diff(
            c.original, c.corrected, f"{c.agent}.md (the agent's)", f"{c.agent}.md (corrected)"
        )
        for c in (handle.corrections(phase) if corrected else [])
    }
    tries: dict[str, str] = {}
    if any(output.tries for output in outputs):  # the workflow is read only then, for "of 5"
        workflow = manager.session_workflow(project, session)
        for output in outputs:
            most = workflow.policy_of(output.agent_name).retry.max_attempts
            tries[output.agent_name] = describe_tries(output.tries, most)
    return PhasePage(
        project,
        session,
        view,
        state.state,
        checkpoint,
        outputs,
        attempts[-1].feedback if attempts else None,
        text,
        Shown(seen.attempt, seen.outputs, version).token,
        moves if checkpoint else (),
        _attempt_line(attempts[-1]) if attempts else None,
        earlier,
        manager.running(project, session),
        cut,
        directory,
        problems,
        corrections,
        tries,
        _trace_links(otel, project, session, phase, attempts[-1] if attempts else None),
    )


def _trace_links(
    otel: OtelConfig | None, project: str, session: str, phase: int, attempt: Attempt | None
) -> dict[str, str]:
    """The current attempt's outputs' links to their spans (``haytham.otel``), by agent."""
    if otel is None or attempt is None:
        return {}
    links = {
        agent: otel.agent_trace_url(project, session, phase, attempt.number, agent)
        for agent in attempt.outputs
    }
    return {agent: url for agent, url in links.items() if url is not None}


# ------------------------------------------------------------------- raw output


def raw_output(
    manager: CheckpointManager, project: str, session: str, phase: int, agent: str, attempt: int | None = None
) -> Iterator[bytes]:
    """The whole file of ``agent``'s output in phase ``phase`` (of earlier ``attempt``, or the
    current one), as pieces read through the guarded read (``guard.chunks``): memory stays one
    piece whatever the file's size.

    Only an agent output of this session is served: a name that is not an agent's
    (``check_agent_name``: the phase's own files and hidden names are not), a file that is not
    there or is a symlink, and a file the guard refuses (out of the tree, not a regular file)
    are each a NotFoundError, raised before the first piece is given, so a refusal is a whole
    answer."""
    check_names(project, session)
    try:
        check_agent_name(agent)
    except UnsafeNameError as error:
        raise NotFoundError(f"{agent!r} is not an agent output of {project}/{session}: {error}") from None
    directory = manager.phase_dir(project, session, phase)
    if attempt is not None:
        directory = directory / ATTEMPTS_DIR / str(attempt)
    path = directory / f"{agent}.md"
    try:  # an agent's name (no phase file's, no hidden one) and a regular file, not a link
        mode: int | None = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    if mode is None or not stat.S_ISREG(mode):
        where = f"phase {phase}" if attempt is None else f"attempt {attempt} of phase {phase}"
        raise NotFoundError(f"{agent!r} is not an agent output of {where} of {project}/{session}", path=path)
    pieces = chunks(path, MAX_OUTPUT_BYTES)
    try:
        first = next(pieces, b"")
    except (UnsafeFileError, FileNotFoundError) as error:
        raise NotFoundError(f"{path} cannot be served: {error}", path=path) from None
    return itertools.chain((first,), pieces)


# ----------------------------------------------------------------- sessions page


@dataclass(frozen=True)
class Column:
    """A sortable column of the sessions page: its name in the URL, its heading, and the
    summary fields it sorts by (``SessionSummary``'s, the first ones first)."""

    name: str
    heading: str
    fields: tuple[str, ...]
    numeric: bool = False


SESSION_COLUMNS = (
    Column("session", "Session", ("session_id", "project_id")),
    Column("project", "Project", ("project_id", "session_id")),
    Column("workflow", "Workflow", ("workflow_type",)),
    Column("user", "User", ("user_id",)),
    Column("state", "State", ("status",)),
    Column("phase", "Current phase", ("current_phase",)),
    Column("tokens", "Tokens", ("total_tokens",), numeric=True),
    Column("cost", "Cost", ("total_cost",), numeric=True),
    Column("updated", "Updated", ("last_updated",)),
)
"""The columns of the sessions page, in order; any of them sorts it (``?sort=NAME``), then
project and session break ties."""
SORT_ORDERS = ("asc", "desc")


@dataclass(frozen=True)
class ListFilter:
    """A filter of the sessions page: the query parameter, its label, the field of the
    listing's ``Match`` it sets, and the summary field whose values are its choices (joined
    by line breaks when a session has several)."""

    name: str
    label: str
    match: str
    column: str


SESSION_FILTERS = (
    ListFilter("project", "Project", "project_id", "project_id"),
    ListFilter("state", "State", "status", "status"),
    ListFilter("reviewer", "Reviewer", "reviewer", "current_reviewers"),
)
"""The filters of the sessions page, as data: a filter is one more entry here."""


@dataclass(frozen=True)
class SessionsQuery:
    """What the sessions page was asked for: a search, filters, a column and order, a page."""

    search: str = ""
    filters: dict[str, str] = field(default_factory=dict)
    sort: str = "updated"
    order: str = "desc"
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> SessionsQuery:
        """The query of a URL's parameters; InvalidArgumentError (a 400) names a bad one."""
        sort = params.get("sort") or "updated"
        if sort not in {c.name for c in SESSION_COLUMNS}:
            names = ", ".join(c.name for c in SESSION_COLUMNS)
            raise InvalidArgumentError(
                f"sort {sort!r} is not a column (expected one of {names})", field="sort"
            )
        order = params.get("order") or (
            "asc" if sort in ("session", "project", "workflow", "user") else "desc"
        )
        if order not in SORT_ORDERS:
            raise InvalidArgumentError(f"order {order!r} is not asc or desc", field="order")
        text = params.get("page") or "1"
        if not text.isdigit() or int(text) < 1:
            raise InvalidArgumentError(f"page {text!r} is not a page number (1, 2, ...)", field="page")
        chosen = {f.name: params[f.name] for f in SESSION_FILTERS if params.get(f.name)}
        return cls(params.get("q", "").strip(), chosen, sort, order, int(text))

    def link(self, **changes: object) -> str:
        """The query string of this query with ``changes`` (a sort, a page): a plain link."""
        values: dict[str, object] = {"q": self.search, **self.filters, "sort": self.sort, "order": self.order}
        values["page"] = self.page
        values.update(changes)
        shown = {k: str(v) for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)}
        return "?" + urlencode(shown)

    def sort_link(self, column: str) -> str:
        """The link of a column's heading: sort by it, or reverse the order when it sorts already."""
        if column == self.sort:
            return self.link(order="asc" if self.order == "desc" else "desc", page=1)
        return self.link(sort=column, order="", page=1)

    @property
    def match(self) -> Match:
        """The sessions the query keeps, as the listing's queries say it."""
        chosen: dict[str, Any] = {
            f.match: self.filters[f.name] for f in SESSION_FILTERS if f.name in self.filters
        }
        return Match(search=self.search, **chosen)

    @property
    def ordering(self) -> tuple[tuple[str, bool], ...]:
        """The listing's order of the query: its column's fields, then project and session."""
        column = next(c for c in SESSION_COLUMNS if c.name == self.sort)
        descending = self.order == "desc"
        return tuple((name, descending) for name in (*column.fields, "project_id", "session_id"))


@dataclass(frozen=True)
class SessionsPage:
    """One page of the sessions page: its rows, the choices of each filter, the page count."""

    query: SessionsQuery
    rows: list[SessionSummary]
    total: int
    """How many sessions match the query (all pages)."""
    pages: int
    choices: dict[str, list[str]]
    """Each filter's values among every session listed."""
    warnings: list[str]
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """How many of every session listed have each choice of each filter."""
    listed: int = 0
    """How many sessions are listed in all (no filter, no search)."""


def sessions_page(
    manager: CheckpointManager, query: SessionsQuery, watcher: Watcher | None = None
) -> SessionsPage:
    """Every session under the base directory as the store's listing knows it
    (``scan.iter_sessions``: the index, one ``stat`` a fact file of an unchanged session,
    nothing opened or parsed), searched, filtered, sorted and cut to one page of
    ``SESSIONS_PER_PAGE`` by the listing's queries: a summary is made for the rows of the
    page alone. ``watcher``: as ``inbox``'s."""
    with iter_sessions(manager.base_dir, workflows=manager.workflows, watcher=watcher) as listing:
        counts: dict[str, dict[str, int]] = {choice.name: {} for choice in SESSION_FILTERS}
        for values, number in listing.counts([choice.column for choice in SESSION_FILTERS]).items():
            for choice, joined in zip(SESSION_FILTERS, values, strict=True):
                counted = counts[choice.name]
                for value in str(joined).split(SEPARATOR) if joined else ():
                    counted[value] = counted.get(value, 0) + number
        match = query.match
        total = listing.count(match)
        pages = max(1, -(-total // SESSIONS_PER_PAGE))
        if query.page > pages:
            raise NotFoundError(f"page {query.page} of the sessions page does not exist (there are {pages})")
        start = (query.page - 1) * SESSIONS_PER_PAGE
        rows = list(listing.page(start, SESSIONS_PER_PAGE, where=match, order=query.ordering))
        warnings = [f"a session that cannot be read: {issue}" for issue in listing.issues]
        listed = len(listing)
    choices = {name: sorted(counted) for name, counted in counts.items()}
    return SessionsPage(query, rows, total, pages, choices, warnings, counts, listed)
