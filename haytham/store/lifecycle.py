"""The review lifecycle, modelled once: the states of a phase and of a session, the moves
between them and who may make each, and the one function that derives where a session
stands from what its files say.

Every view reads ``derive``: the manifest's phase table, Status and Current Phase,
``load_session``, ``list``, ``status``, the runner's next step and every message of the
command line. None of them computes a state of its own. ``docs/lifecycle.md`` draws it.

A phase's files say three things, and the state is a function of them alone:

* its checkpoint: whether it ran and how it ended (``pending`` without one);
* its review, if someone wrote one: approved, or sent back with comments;
* what it was built from: the digest of every earlier phase's outputs that its agents were
  given. When an earlier phase's outputs have changed since (a re-run, a merge that brought
  another attempt, a correction made by hand in an output file), the phase is ``stale`` and
  the next resume runs it again.

A completed phase's outputs as its files say now can differ from the digest its checkpoint
recorded: a person corrected an output by hand (or a merge brought another text). That
correction is a fact the phase keeps (``EDITED``): its state does not change, the next resume
does not run it again, and every phase built on the old outputs is ``stale``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Literal, get_args

from haytham.frozen import frozen
from haytham.records import (
    ACTION_VERDICTS,
    APPROVAL_ACTIONS,
    SESSION_STATUSES,
    FeedbackAction,
    PhaseState,
    SessionStatus,
    UserFeedback,
)
from haytham.records import PHASE_STATES as _PHASE_STATES

if TYPE_CHECKING:  # named in an annotation: hashlib is imported where a digest is made
    import hashlib

SessionState = SessionStatus
"""Where a whole session stands: the state of its first phase that is not done."""
Actor = Literal["runner", "reviewer", "editor", "merge"]
"""Who changes a phase: a workflow runner, a reviewer through haytham (CLI, library, page),
a person editing the files, or a git merge bringing another clone's files."""
Verdict = Literal["none", "awaiting", "approved", "skipped", "sent_back"]
"""What a phase's review file says: no file, not yet reviewed, approved, skipped (moved on
without approving, as the first implementation's ``skip_phase`` did), or sent back."""
NextAction = Literal["run", "review", "fix", "done"]
"""What the session needs next: a runner, a reviewer, a person to fix a file, or nothing."""

PHASE_STATES: tuple[PhaseState, ...] = _PHASE_STATES
SESSION_STATES: tuple[SessionState, ...] = SESSION_STATUSES
ACTORS: tuple[Actor, ...] = get_args(Actor)

RUNNING = "running"
"""What a view shows for a session a runner is at work on (its run lease is held, see
``haytham.store.lease``), in place of its state: never written to a file, since the files
say where a run got to and the lease only whether it is still going."""

DONE_STATES: frozenset[PhaseState] = frozenset({"completed", "approved", "skipped"})
"""States after which a resume moves on to the next phase."""

EDITED = "edited by hand since it completed"
"""The flag of a phase whose output files no longer match the digest its checkpoint recorded
(``PhaseView.edited``): a person's correction, kept as the phase's output. It changes no
state: a done phase stays done (a resume keeps the correction), and the phases built on the
old outputs become ``stale``. Shown by ``status``, ``validate`` and every ``describe``."""
CORRECTABLE: frozenset[PhaseState] = frozenset({"awaiting_review", "completed", "approved"})
"""The states in which a reviewer may correct a phase's output (``correct_output``): the
phase finished and stands, so its outputs are the ones a reviewer decides on. Any other
phase is about to run again, or has not run."""
Outcome = Literal["none", "awaiting", "approved", "modified", "changes_requested", "skipped"]
"""What a review decided (``outcome``), in the words the pages and the report show: the
lifecycle's verdict, with an approval of a corrected output told apart as ``modified``."""
OUTCOME_LABELS: Mapping[Outcome, str] = {
    "none": "no review",
    "awaiting": "not reviewed yet",
    "approved": "approved",
    "modified": "modified",
    "changes_requested": "changes requested",
    "skipped": "skipped",
}
"""Each outcome as a person reads it."""
CORRECTED_ACTION: FeedbackAction = "modified"
"""The ``Action`` of a review whose phase's output a reviewer corrected (``records``'s
``modified``): approved as corrected once ``Approved: true``."""


def corrected_reason(agent: str) -> str:
    """The reason of the history entry of a correction (``correct_output``) of ``agent``."""
    return f"output of {agent} corrected by a person"


EDIT_KEPT = "outputs edited by hand, kept"
"""The reason of the history entry of a checkpoint that records a phase's corrected outputs as
its own (``CheckpointManager.keep_edited_outputs``, which a resume calls before it runs the
phases built on the old outputs): the correction is then the phase's output of record."""


@frozen
class Transition:
    """One move of a phase from one state to another."""

    event: str
    """What happens, in the words messages use (``send back``)."""
    sources: frozenset[PhaseState]
    target: PhaseState
    actors: frozenset[Actor]
    """Who may make it."""
    meaning: str


def _move(event: str, sources: str, target: PhaseState, actors: str, meaning: str) -> Transition:
    return Transition(
        event,
        frozenset(sources.split()),  # type: ignore[arg-type]
        target,
        frozenset(actors.split()),  # type: ignore[arg-type]
        meaning,
    )


TRANSITIONS: tuple[Transition, ...] = (
    _move("start", "pending", "in_progress", "runner", "the runner saves the phase's first checkpoint"),
    _move("finish", "in_progress", "completed", "runner", "every agent's output is saved; no review gate"),
    _move(
        "finish for review",
        "in_progress",
        "awaiting_review",
        "runner",
        "every agent's output is saved and the phase has a review gate",
    ),
    _move("fail", "in_progress", "failed", "runner", "an agent raised; its error is saved"),
    _move(
        "park for review",
        "in_progress",
        "awaiting_review",
        "runner",
        "an agent's tries ran out under on_exhausted: await_review; its error is saved and a person "
        "decides: send it back, approve a hand-written output, or skip it",
    ),
    _move(
        "hold",
        "pending in_progress failed",
        "awaiting_review",
        "runner",
        "the runner stops the phase for a person's decision before it runs it (again): the "
        "budget is spent, or an agent with side effects may have run (the checkpoint's Held); "
        "an approval lets it run, sending it back runs a new attempt, a skip moves on",
    ),
    _move("retry", "failed", "in_progress", "runner", "a resume runs the failed agents again"),
    _move(
        "skip",
        "pending awaiting_review completed approved sent_back skipped",
        "skipped",
        "runner reviewer editor",
        "the phase is not to be run, or a review skips it and moves on (a reviewed phase: the "
        "reviewer changes their mind before the next run)",
    ),
    _move(
        "approve",
        "awaiting_review completed approved sent_back",
        "approved",
        "reviewer editor",
        "a reviewer accepts the phase's outputs (an approved phase: the review is saved again, "
        "its comments changed; a sent-back one: the reviewer changes their mind before the next run)",
    ),
    _move(
        "send back",
        "awaiting_review completed approved sent_back stale",
        "sent_back",
        "reviewer editor",
        "a reviewer asks for another attempt, with comments and changes (a sent-back phase: the "
        "review is saved again, its comments or changes changed)",
    ),
    _move(
        "re-run",
        "sent_back stale completed approved awaiting_review failed",
        "pending",
        "runner",
        "the current attempt is archived under attempts/{n}/; the phase waits, not started, "
        "until the runner starts it",
    ),
    _move(
        "upstream changed",
        "completed approved awaiting_review",
        "stale",
        "runner reviewer editor merge",
        "an earlier phase's outputs changed after this phase was built on them",
    ),
)
"""Every move a phase can make. A move not listed here is refused (``check_move``)."""


REVIEW_EVENTS: Mapping[Verdict, str] = {"approved": "approve", "sent_back": "send back", "skipped": "skip"}
"""The move a review makes, by its verdict (``verdict``). A review file that decides nothing
(``none``, ``awaiting``: the blank template before anyone reviewed) makes no move."""


def review_event(feedback: UserFeedback | None) -> str | None:
    """The move that writing ``feedback`` makes on its phase (``REVIEW_EVENTS``), or None."""
    return REVIEW_EVENTS.get(verdict(feedback))


def moves_from(state: PhaseState, actor: Actor) -> tuple[Transition, ...]:
    """The moves ``actor`` may make on a phase in ``state``."""
    return tuple(t for t in TRANSITIONS if state in t.sources and actor in t.actors)


def check_move(event: str, state: PhaseState, actor: Actor) -> Transition | str:
    """The transition for ``event`` from ``state`` by ``actor``, or why it is not allowed."""
    named = [t for t in TRANSITIONS if t.event == event]
    if not named:
        raise ValueError(f"{event!r} is not a lifecycle event")
    for transition in named:
        if state in transition.sources and actor in transition.actors:
            return transition
    allowed = sorted({s for t in named if actor in t.actors for s in t.sources})
    if not allowed:
        return f"a {actor} cannot {event} a phase"
    return f"a phase that is {state.replace('_', ' ')} cannot be {_past(event)} (only one that is " + (
        ", ".join(s.replace("_", " ") for s in allowed) + ")"
    )


def _past(event: str) -> str:
    return {"approve": "approved", "send back": "sent back", "re-run": "re-run", "skip": "skipped"}.get(
        event, f"{event}ed"
    )


@frozen
class PhaseFacts:
    """What a phase's files say, read without opening any agent output."""

    number: int
    name: str
    review: bool
    """Whether the workflow stops for a review after this phase."""
    status: str | None
    """The checkpoint's Status, or None when the phase has no checkpoint."""
    attempt: int = 1
    """1 for the first run, 2 after the first re-run, ..."""
    outputs_digest: str | None = None
    """The digest of the phase's outputs as its checkpoint recorded them (``outputs_digest``)."""
    outputs_now: str | None = None
    """The digest of the phase's output files as they are now (``lifecycle.outputs_digest``
    over their content), or None when they were not read: the phase recorded no digest to
    compare with (not completed, or a checkpoint older than digests), or the caller only has
    the checkpoints."""
    edited_files: tuple[str, ...] = ()
    """When ``outputs_now`` differs from ``outputs_digest``: the output files that changed,
    as paths relative to the session folder (``phase_1_idea/writer.md``)."""
    built_from: Mapping[int, str] = field(default_factory=dict)
    """For each earlier phase whose outputs the agents were given, the digest of those
    outputs then. Empty for a first phase and for checkpoints that predate this record."""
    verdict: Verdict = "none"
    problem: str | None = None
    """Why the review file cannot be read, when it cannot."""
    waiting_since: str | None = None
    """When the phase began to wait for its review (the checkpoint's Completed)."""
    held: tuple[str, ...] = ()
    """Why the runner holds the phase for a person's decision (the checkpoint's Held)."""


@frozen
class PhaseView:
    """Where one phase stands, and why."""

    number: int
    name: str
    state: PhaseState
    attempt: int
    stale_because: tuple[int, ...] = ()
    """The earlier phases whose outputs changed after this phase was built on them."""
    problem: str | None = None
    """A file a person must fix before the session can go on."""
    waiting_since: str | None = None
    edited: tuple[str, ...] = ()
    """The phase's output files that no longer match the digest its checkpoint recorded
    (``EDITED``), relative to the session folder; empty when they all match."""
    stale_files: tuple[str, ...] = ()
    """For a stale phase: the edited output files of the phases in ``stale_because``, when
    the change was an edit (empty for a re-run or an attempt a merge brought)."""
    held: tuple[str, ...] = ()
    """For a phase the runner holds for a person's decision (``hold``): why, in words
    (``budget: spent 182,000 of 200,000 tokens``); empty otherwise."""

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES

    def describe(self) -> str:
        """The state in words, with its reason: ``stale (built on phase 2, which changed)``,
        ``completed (edited by hand since it completed: phase_1_idea/writer.md)``."""
        words = self.state.replace("_", " ")
        reasons = []
        if self.stale_because:
            phases = ", ".join(str(n) for n in self.stale_because)
            plural = "s" if len(self.stale_because) > 1 else ""
            reason = f"built on phase{plural} {phases}, which changed since"
            if self.stale_files:
                reason += f": {', '.join(self.stale_files)}"
            reasons.append(reason)
        elif self.problem:
            reasons.append(self.problem)
        reasons.extend(self.held)
        if self.edited:
            reasons.append(f"{EDITED}: {', '.join(self.edited)}")
        return f"{words} ({'; '.join(reasons)})" if reasons else words


@frozen
class SessionView:
    """Where a session stands: every phase, the first one not done, and what it needs."""

    state: SessionState
    phases: tuple[PhaseView, ...]
    current: PhaseView | None
    """The first phase that is not done, or None when every phase is."""
    next_action: NextAction

    @cached_property
    def _by_number(self) -> dict[int, PhaseView]:
        """Each phase's view by its number (the first, were a number given twice), made once:
        asking for every phase in turn stays linear in the phases."""
        found: dict[int, PhaseView] = {}
        for view in self.phases:
            found.setdefault(view.number, view)
        return found

    def phase(self, number: int) -> PhaseView:
        return self._by_number[number]

    @property
    def stale(self) -> tuple[PhaseView, ...]:
        return tuple(view for view in self.phases if view.state == "stale")

    @property
    def awaiting_review(self) -> tuple[PhaseView, ...]:
        return tuple(view for view in self.phases if view.state == "awaiting_review")


def phase_state(facts: PhaseFacts, by_number: Mapping[int, PhaseFacts]) -> PhaseView:
    """The state of one phase from its own facts and those of the phases it was built on."""
    status = facts.status

    edited = edited_files(facts)

    def view(state: PhaseState, **extra: object) -> PhaseView:
        return PhaseView(facts.number, facts.name, state, facts.attempt, edited=edited, **extra)  # type: ignore[arg-type]

    if facts.held and status in (None, "pending", "in_progress", "failed"):
        if facts.verdict == "sent_back":
            return view("sent_back")
        if facts.verdict == "skipped":
            return view("skipped")
        if facts.verdict != "approved":  # the runner acts on an approval: the phase runs
            return view("awaiting_review", held=facts.held, waiting_since=facts.waiting_since)
    if status is None or status == "pending":
        return view("pending")
    if status == "in_progress":
        return view("in_progress")
    if status == "failed" and facts.verdict == "none" and facts.problem is None:
        return view("failed")
    # a failed phase with a review file was parked for a person (on_exhausted: await_review):
    # from here on it reads as a phase awaiting its review, which decides it
    if status == "skipped":
        return view("skipped")
    if status == "requires_retry" or facts.verdict == "sent_back":
        return view("sent_back")
    changed = tuple(
        number
        for number, digest in sorted(facts.built_from.items())
        if _changed(by_number.get(number), digest)
    )
    if changed:
        files = tuple(name for number in changed for name in edited_files(by_number.get(number)))
        return view("stale", stale_because=changed, stale_files=files)
    if facts.problem is not None:
        return view("awaiting_review", problem=facts.problem, waiting_since=facts.waiting_since)
    if facts.verdict in ("approved", "skipped"):
        return view(facts.verdict)
    if (facts.review or status == "failed") and facts.verdict == "awaiting":
        return view("awaiting_review", waiting_since=facts.waiting_since)
    return view("completed")


def _changed(upstream: PhaseFacts | None, seen: str) -> bool:
    """Whether an earlier phase no longer has the outputs a later phase was built on.

    Its outputs are what its files say now (``outputs_now``) when they were read, else what
    its checkpoint recorded. A phase whose checkpoint predates output digests cannot be
    compared and counts as unchanged; a phase that is running again, or was reset, has
    changed.
    """
    if upstream is None:
        return False
    if upstream.outputs_digest is not None:
        return (upstream.outputs_now or upstream.outputs_digest) != seen
    return upstream.status not in ("completed", "skipped")


def edited_files(facts: PhaseFacts | None) -> tuple[str, ...]:
    """The output files of a phase that changed since its checkpoint recorded their digest
    (``EDITED``); empty when they match, or when either digest is unknown."""
    if facts is None or facts.outputs_now is None or facts.outputs_digest is None:
        return ()
    if facts.outputs_now == facts.outputs_digest:
        return ()
    return facts.edited_files or (f"the outputs of phase {facts.number}",)


def derive(phases: Sequence[PhaseFacts]) -> SessionView:
    """Where a session stands: the one function every view reads.

    ``phases`` are the phases of the session's mode, in order.
    """
    by_number = {facts.number: facts for facts in phases}
    views = tuple(phase_state(facts, by_number) for facts in phases)
    current = next((view for view in views if not view.done), None)
    state = session_state(current.state if current else None)
    if current is None:
        return SessionView(state, views, None, "done")
    if current.problem is not None:
        return SessionView(state, views, current, "fix")
    return SessionView(state, views, current, "review" if state == "awaiting_review" else "run")


NEEDS_A_PERSON: tuple[PhaseState, ...] = ("awaiting_review", "failed", "stale")
"""The phase states that wait for a person (the review inbox lists them, in this order): the
session's current phase awaiting review or failed, and every stale phase."""


def needs_a_person(view: SessionView) -> tuple[PhaseView, ...]:
    """The phases of ``view`` that wait for a person (``NEEDS_A_PERSON``), in order."""
    current = view.current
    return tuple(
        phase
        for phase in view.phases
        if phase.state == "stale"
        or (current is not None and phase.number == current.number and phase.state in NEEDS_A_PERSON[:2])
    )


def session_state(first_not_done: PhaseState | None) -> SessionState:
    """A session's state from the state of its first phase not done (None: every phase is)."""
    if first_not_done is None:
        return "completed"
    if first_not_done in ("awaiting_review", "failed"):
        return first_not_done
    return "in_progress"


def verdict(feedback: UserFeedback | None) -> Verdict:
    """What a review file says: the one rule the runner, the CLI and ``derive`` share.

    Not reviewed yet is ``awaiting``; ``Approved:`` is the reviewer's decision, so reviewed
    and approved is ``approved`` whatever the action, and ``Approved: false`` is never an
    approval: an action that moves the run on without approving (``records.ACTION_VERDICTS``:
    a skip) is ``skipped``, an approving action (``records.APPROVAL_ACTIONS``) contradicts the
    decision and decides nothing (``awaiting``: the reader refuses such a file, the library
    such a review), and any other review sends the phase back.
    """
    if feedback is None:
        return "none"
    if not feedback.reviewed:
        return "awaiting"
    if feedback.approved:
        return "approved"
    if feedback.action in APPROVAL_ACTIONS:
        return "awaiting"
    if ACTION_VERDICTS.get(feedback.action) == "approved":
        return "skipped"
    return "sent_back"


def outcome(feedback: UserFeedback | None) -> Outcome:
    """What a review decided: its ``verdict``, with an approval whose action is ``modified``
    (the reviewer corrected an output, then approved) read as ``modified``."""
    found = verdict(feedback)
    if found == "approved" and feedback is not None and feedback.action == CORRECTED_ACTION:
        return "modified"
    if found == "sent_back":
        return "changes_requested"
    return found


def outputs_digest(outputs: Mapping[str, str]) -> str:
    """A short, stable digest of a phase's outputs (agent name -> text), in any order.

    Equal outputs give equal digests on every machine, so a re-run that produces the same
    text leaves the phases after it current.
    """
    import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

    digest = hashlib.sha256()
    for name in sorted(outputs):
        for part in (name, outputs[name]):
            _hash_text(digest, part)
    return digest.hexdigest()[:16]


_PIECE = 1 << 20


def _hash_text(digest: hashlib._Hash, text: str) -> None:
    """Add ``text``'s UTF-8 length and bytes to ``digest``, a piece at a time: a 256 MB
    output is hashed without a second copy of it in memory."""
    if text.isascii():  # known without a scan: the length in bytes is the length
        size = len(text)
    else:
        size = sum(len(_utf8(text[i : i + _PIECE])) for i in range(0, len(text), _PIECE))
    digest.update(size.to_bytes(8, "big"))
    for start in range(0, len(text), _PIECE):
        digest.update(_utf8(text[start : start + _PIECE]))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
