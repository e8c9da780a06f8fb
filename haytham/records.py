"""The typed records that session files parse into and render from.

Each record is frozen: a file is read into a record, a record is written as a file, and
nothing in between can change one behind the manager's back. The dict API of
``CheckpointManager`` is a view of these records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, get_args

from haytham.frozen import frozen

# Each enumeration is written once, here, as a Literal. The tuples below are derived from
# them, and the JSON schemas take their ``enum`` lists from ENUMERATIONS when loaded.
PhaseStatus = Literal["pending", "in_progress", "completed", "failed", "skipped", "requires_retry"]
"""Status of a phase, and of an agent within a phase."""
SessionStatus = Literal["in_progress", "awaiting_review", "completed", "failed"]
"""Status of a whole session: the state of its first phase not done (``haytham.store.lifecycle``)."""
PhaseState = Literal[
    "pending",
    "in_progress",
    "failed",
    "skipped",
    "completed",
    "awaiting_review",
    "approved",
    "sent_back",
    "stale",
]
"""Where one phase stands in the review lifecycle (the manifest's phase table): its checkpoint's
status, its review and whether what it was built from changed since (``haytham.store.lifecycle``)."""
RunStyle = Literal["single", "parallel", "sequential_interactive", "sequential"]
"""How a phase ran its agents (``Execution Mode`` in checkpoint.md); ``sequential`` (one
agent after another, no review between them) is a style the first implementation wrote."""
FeedbackAction = Literal[
    "pending",
    "approved",
    "retry",
    "rejected",
    "skipped",
    "retry_with_changes",
    "skip_phase",
    "skip_stage",
    "max_retries_exceeded",
    "modified",
]
"""What was done about a reviewer's feedback (``pending`` until someone has reviewed).
``modified``: the reviewer corrected an agent's output (``correct_output``) and, once
``Approved: true``, approved the correction. ``retry_with_changes`` to
``max_retries_exceeded`` are the first implementation's words, read from files it wrote; see
``ACTION_VERDICTS`` for what each means to a run."""
ActionVerdict = Literal["awaiting", "approved", "sent_back", "stopped"]
"""What a feedback action says a run does with its phase: wait for a review, go on, run the
phase again with the comments and changes, or stop (no retries are left)."""
ProjectStatus = Literal["active", "completed", "archived"]
"""Status of a project (``status`` in project.yaml)."""
HistoryKind = Literal["checkpoint", "review"]

TryOutcome = Literal[
    "completed", "rate_limit", "server_error", "timeout", "connection", "transient", "permanent"
]
"""How one try of an agent ended (``AgentTry.outcome``): completed, or the kind of failure:
transient ones (a rate limit, a 408 or 5xx answer, a timeout, a dropped connection, or
one a ``retry_on`` predicate called transient) are tried again while the policy allows;
a permanent one never is (``haytham.run.retry`` classifies them)."""

OnExhausted = Literal["fail", "await_review"]
"""What happens when an agent's tries run out (``on_exhausted:`` of workflow.yaml): the phase
fails, or it stops awaiting a person's review with the error shown."""
"""What a history entry records: a checkpoint save or a saved review."""

PHASE_STATUSES: tuple[PhaseStatus, ...] = get_args(PhaseStatus)
SESSION_STATUSES: tuple[SessionStatus, ...] = get_args(SessionStatus)
PHASE_STATES: tuple[PhaseState, ...] = get_args(PhaseState)
RUN_STYLES: tuple[RunStyle, ...] = get_args(RunStyle)
FEEDBACK_ACTIONS: tuple[FeedbackAction, ...] = get_args(FeedbackAction)
PROJECT_STATUSES: tuple[ProjectStatus, ...] = get_args(ProjectStatus)
HISTORY_KINDS: tuple[HistoryKind, ...] = get_args(HistoryKind)
ON_EXHAUSTED: tuple[OnExhausted, ...] = get_args(OnExhausted)
TRY_OUTCOMES: tuple[TryOutcome, ...] = get_args(TryOutcome)
ENUMERATIONS: Mapping[str, tuple[str, ...]] = {
    "PhaseStatus": PHASE_STATUSES,
    "SessionStatus": SESSION_STATUSES,
    "PhaseState": PHASE_STATES,
    "RunStyle": RUN_STYLES,
    "FeedbackAction": FEEDBACK_ACTIONS,
    "ProjectStatus": PROJECT_STATUSES,
    "HistoryKind": HISTORY_KINDS,
    "OnExhausted": ON_EXHAUSTED,
    "TryOutcome": TRY_OUTCOMES,
}
"""Every enumeration by the name of its Literal; a schema's ``$defs`` entry of that name
gets these values as its ``enum`` (``haytham.format.schema``)."""
ACTION_VERDICTS: Mapping[FeedbackAction, ActionVerdict] = {
    "pending": "awaiting",
    "approved": "approved",
    "skipped": "approved",
    "skip_phase": "approved",
    "skip_stage": "approved",
    "retry": "sent_back",
    "rejected": "sent_back",
    "retry_with_changes": "sent_back",
    "max_retries_exceeded": "stopped",
    "modified": "approved",
}
"""Each action's verdict, as data: skipping a phase (or the first implementation's stage)
moves the run on like an approval; every way of sending a phase back runs it again;
``max_retries_exceeded`` ends the run as failed, as exhausting the workflow's retries does."""
APPROVAL_ACTIONS: frozenset[FeedbackAction] = frozenset({"approved", "modified"})
"""The actions that say a reviewer approved the phase (``modified``: approved as corrected).
``Approved:`` is the reviewer's decision and the action only records what was done about it,
so these agree with
``Approved: true`` alone: a reviewed file that says ``Approved: false`` with one of them
contradicts itself in a way nothing can settle safely (approve, or run the phase again?),
and is an error at its Action line (formats.md, "Hand edits")."""
DONE_STATUSES: frozenset[str] = frozenset({"completed", "skipped"})
"""Phase statuses after which a resume moves on to the next phase."""


@frozen
class PhaseRow:
    """One row of the manifest's Phase Status table."""

    number: int
    name: str
    status: PhaseState | PhaseStatus
    """The phase's lifecycle state; older manifests may hold a checkpoint status
    (``requires_retry``), which is read as written."""
    started: str | None = None
    completed: str | None = None
    duration: float | None = None
    """Seconds, or None when unknown."""


@frozen
class CurrentPhase:
    """The manifest's Current Phase: the phase a resume would run next."""

    number: int
    """0 before any phase has started."""
    name: str
    status: str
    can_resume: bool


@frozen
class SessionMetrics:
    """Totals over the session's phase checkpoints."""

    total_duration: float = 0.0
    total_tokens: int = 0
    total_cost: float = 0.0


@frozen
class SessionManifest:
    """``session_manifest.md``: who, what, and how far each phase has got."""

    session_id: str
    project_id: str
    user_id: str
    workflow_type: str
    execution_mode: str
    created: str
    last_updated: str
    status: SessionStatus
    phases: tuple[PhaseRow, ...]
    current: CurrentPhase
    metrics: SessionMetrics
    workflow_fingerprint: str | None = None
    """``sha256:...`` of the workflow definition the session was created with (None in
    sessions written before haytham recorded it)."""
    history_head: str | None = None
    """The id of the newest history entry, the parent of the next one."""
    forked_from: str | None = None
    """``{session_id} at phase {n}`` for a session made by ``fork_session``, else None."""


@frozen
class AgentRun:
    """One agent's entry in a phase checkpoint."""

    agent_name: str
    status: PhaseStatus
    output_file: str
    duration: float | None = None
    tokens: int | None = None
    cost: float | None = None


@frozen
class PhaseCheckpoint:
    """``phase_{n}_{slug}/checkpoint.md``: the state of one phase."""

    phase_number: int
    phase_name: str
    status: PhaseStatus
    started: str | None
    completed: str | None
    duration: float | None
    retry_count: int
    execution_mode: RunStyle
    agents: tuple[AgentRun, ...]
    previous_phase: str | None
    """Name of the phase before this one in the session's mode, or None for the first."""
    next_phase: int | None
    next_phase_name: str | None
    total_tokens: int | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    errors: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    """Why the runner stopped this phase for a person's decision before running it (or on):
    a budget passed, an agent with side effects that may have run. Empty unless held; a
    phase held and not decided is ``awaiting_review`` (``haytham.store.lifecycle``)."""
    required_context: str = "[]"
    """Kept as written; haytham itself always writes ``[]``."""
    user_parameters: str = "{}"
    """Kept as written; haytham itself always writes ``{}``."""
    user_feedback_file: str = "user_feedback.md"
    outputs_digest: str | None = None
    """``lifecycle.outputs_digest`` of the phase's agent outputs, recorded when it completed."""
    built_from: tuple[tuple[int, str], ...] = ()
    """``(phase, outputs digest)`` of every earlier phase whose outputs this attempt's agents
    were given, as they were when it started; empty in checkpoints that predate it."""


@frozen
class AgentTry:
    """One try of an agent (``## Tries`` of its output file): when it ran, how it ended,
    and how long the runner waited before the next try."""

    number: int
    """1 for the first try of this run of the agent."""
    started: str
    """ISO 8601 UTC."""
    ended: str | None
    """ISO 8601 UTC; None when the try never ended (its process was killed)."""
    outcome: TryOutcome
    wait: float | None = None
    """Seconds waited after this try before the next one; None after the last."""
    error_type: str | None = None
    """The exception's class name, for a try that failed."""
    error_message: str | None = None

    @property
    def transient(self) -> bool:
        """Whether the try failed in a way that is tried again."""
        return self.outcome not in ("completed", "permanent")


@frozen
class AgentOutput:
    """``phase_{n}_{slug}/{agent_name}.md``: what one agent produced, verbatim."""

    agent_name: str
    phase_number: int
    phase_name: str
    executed: str | None
    duration: float | None
    status: PhaseStatus
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    tools_used: tuple[str, ...]
    content: str
    """Exactly the text the agent returned."""
    error_type: str | None = None
    error_message: str | None = None
    stack_trace: str | None = None
    cost: float | None = None
    """What the agent's model calls cost, in dollars (kept here so a resume never loses it)."""
    corrected: str | None = None
    """When a person last corrected the content (``correct_output``), ISO 8601 UTC; None for
    the agent's own text. The other fields (model, tokens, cost, duration) stay those of the
    agent's run: the person's correction spent none."""
    tries: tuple[AgentTry, ...] = ()
    """Every try of the run that wrote this output (``## Tries``), when the agent runs under
    a retry policy or a timeout (``haytham.format.policy``); empty otherwise, and in every
    file written before tries were kept."""
    trace_id: str | None = None
    """The agent's own trace id (``AgentResult.trace_id``: its tracing tool's run or trace),
    so a page can link to the trace; None when the agent gave none."""


@frozen
class UserFeedback:
    """``phase_{n}_{slug}/user_feedback.md``: a person's review of a phase."""

    phase_name: str
    reviewed: bool
    approved: bool
    timestamp: str | None
    comments: str
    requested_changes: tuple[str, ...]
    action: FeedbackAction
    retry_count: int
    reviewer: str | None = None
    """Who reviewed, as written (``Name <email>``, a name or an address:
    ``haytham.format.reviewer``); None when the file names nobody (older files)."""
    justification: str | None = None
    """Why the reviewer decided as they did, one line; None when not given."""
    raised_budget: str | None = None
    """For the approval of a phase held for its budget: the budget the run may spend from
    then on (``400000 tokens, $10.0000``; ``haytham.run.budget``); None otherwise."""
    notes: str = field(default="", compare=False, metadata={"derived": True})
    """What the reviewer wrote outside haytham's fields and comments: each of their own
    sections as ``### Title`` and its text, and text left in ``## Review Status`` (comments
    whose ``## User Comments`` heading was deleted). Passed on to the agents after the
    comments (``AgentContext.comments``); read from the file, never written by haytham (a
    rewrite keeps those lines as they are), so it takes no part in comparing reviews."""


@frozen
class HistoryEntry:
    """One checkpoint or review saved, as the session's history keeps it (``history/*.md``)."""

    entry_id: str
    """A 12-hex-digit hash of the entry's content and parent: stable across machines."""
    parent: str | None
    """The entry saved just before this one in the session, None for the first."""
    phase_number: int
    phase_name: str
    attempt: int
    """1 for the first run of the phase, 2 after its first retry, ..."""
    status: PhaseStatus
    timestamp: str
    name: str | None
    """An optional name given to this save, to find it again (``history(name=...)``)."""
    reason: str | None
    """An optional note on why the save was made."""
    checkpoint_text: str
    """The checkpoint.md this save wrote, exactly (for a review: the phase's checkpoint then)."""
    kind: HistoryKind = "checkpoint"
    """``checkpoint`` for a checkpoint save, ``review`` for a saved review."""
    feedback_text: str | None = None
    """The user_feedback.md a review wrote, exactly; None for a checkpoint save."""
    corrected_agent: str | None = None
    """For the checkpoint save of a correction (``correct_output``): the agent whose output a
    person corrected; else None."""
    original_output: str | None = None
    """For a correction: that agent's output file as it was before, exactly (its whole text,
    header included), so the original stays readable and diffable; else None."""


ReviewTimeSource = Literal["recorded", "git", "file"]
"""Where a review's time comes from: the Timestamp the review recorded; for a hand review
without one, the author time of the commit that last changed the file (``git``, when the file
is committed unchanged since), else the file's modification time (``file``)."""
REVIEW_TIME_SOURCES: tuple[ReviewTimeSource, ...] = get_args(ReviewTimeSource)


@frozen
class Attempt:
    """One attempt at a phase: what its checkpoint, agents and reviewer said.

    ``CheckpointManager.load_attempts`` returns them; ``haytham.compare.compare`` compares two.
    """

    number: int
    """1 for the first run, 2 after the first retry, ..."""
    directory: Path
    """The phase directory for the current attempt, ``attempts/{n}/`` for an archived one."""
    checkpoint: PhaseCheckpoint | None
    feedback: UserFeedback | None
    outputs: dict[str, str]
    """``{agent: content}``, in the checkpoint's agent order, then by name."""
    review_time_from: ReviewTimeSource | None = None
    """Where ``feedback.timestamp`` came from: ``recorded`` (the file's Timestamp) or ``file``
    (a hand review's, the file's modification time); None without a review."""


@frozen
class LeaseHolder:
    """Who holds a session's run lease."""

    host: str
    pid: int
    user: str
    since: str
    """When the run began, ISO 8601 UTC."""

    def describe(self) -> str:
        return f"process {self.pid} of {self.user} on {self.host} since {self.since}"


CLAIM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""How a claim file writes its times (UTC, to the second)."""


@frozen
class Claim:
    """A worker's claim of a session."""

    worker: str
    host: str
    pid: int
    since: str
    expires: str
    """Until when the claim holds, ISO 8601 UTC; after it another worker may take over."""
    took_over: str | None = None
    """The expired claim this one replaced (``describe()`` of it), or None."""
    worker_id: str = ""
    """A random id of the worker process that claimed, unique even when two workers share a
    name, a host name and a process id (containers); empty in a claim written before it."""

    def mine(self, worker: str, worker_id: str) -> bool:
        """Whether this claim is the one of the worker named ``worker`` whose id is ``worker_id``:
        the name alone is not enough (two runners may share it)."""
        return self.worker == worker and self.worker_id == worker_id

    def expired(self, now: datetime | None = None) -> bool:
        moment = now or datetime.now(timezone.utc)
        try:
            until = datetime.strptime(self.expires, CLAIM_TIME_FORMAT).replace(tzinfo=timezone.utc)
        except ValueError:
            return True  # an unreadable expiry protects nothing
        return moment >= until

    def describe(self) -> str:
        who = f"process {self.pid} on {self.host}" + (f", id {self.worker_id[:8]}" if self.worker_id else "")
        return f"worker {self.worker} ({who}) until {self.expires}"
