"""Budgets: a phase does not start once its session or itself has spent its budget.

A workflow's ``budget:`` limits the whole session, a phase's ``budget:`` that phase, each in
tokens and/or dollars. What was spent is summed from the agents' recorded usage: the Total
Tokens and Cost of every checkpoint, the current attempt's and every archived attempt's
(``attempts/{n}/``: a re-run spent its tokens too), except an archived attempt that was held
(its completed outputs were carried into the next attempt, which counts them).

Before a phase starts (no checkpoint yet, or one that is still ``pending``), the runner
checks the session's budget, then the phase's: when what was spent has reached a limit the
phase is held (``haytham.store.lifecycle``'s ``hold``) with the figures as its reason,
``session budget: spent 200,310 of 200,000 tokens``, and the session awaits review. A
reviewer's approval raises the limit for the rest of the run: to the review's ``Raised
Budget`` when it names one, else by one more of the workflow's budget (``limit``). The runner
then keeps the held attempt, with that review, under ``attempts/{n}/``, where every later
check finds it (``ledger``), and runs the phase as its next attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from haytham.format.budget import read_budget
from haytham.format.policy import Budget
from haytham.records import PhaseCheckpoint
from haytham.store.manager import CheckpointManager

SESSION = "session budget"
"""The start of a hold's reason when the session's budget held the phase."""
PHASE = "phase budget"
"""The start of a hold's reason when the phase's own budget held it."""


@dataclass(frozen=True)
class Spent:
    """Tokens and dollars spent, summed from checkpoints."""

    tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Spent) -> Spent:
        return Spent(self.tokens + other.tokens, round(self.cost + other.cost, 4))


def spent_by(checkpoint: PhaseCheckpoint | None) -> Spent:
    """What one checkpoint records as spent (its Total Tokens and Cost; unknown is nothing)."""
    if checkpoint is None:
        return Spent()
    return Spent(checkpoint.total_tokens or 0, round(checkpoint.cost or 0.0, 4))


Raise = Budget | None
"""What one approval of a budget hold raised: its review's Raised Budget, None for none given."""


@dataclass(frozen=True)
class Ledger:
    """What a session spent, by phase, and the raises its reviewers approved."""

    by_phase: dict[int, Spent]
    session_raises: tuple[Raise, ...]
    phase_raises: dict[int, tuple[Raise, ...]]

    @property
    def total(self) -> Spent:
        return sum(self.by_phase.values(), Spent())


def ledger(manager: CheckpointManager, project_id: str, session_id: str, phases: Iterable[int]) -> Ledger:
    """Read every attempt of ``phases`` (their checkpoints and reviews, no output's content)."""
    by_phase: dict[int, Spent] = {}
    session_raises: list[Raise] = []
    phase_raises: dict[int, tuple[Raise, ...]] = {}
    for number in phases:
        total = Spent()
        raises: list[Raise] = []
        attempts = manager.load_attempts(project_id, session_id, number, read_output=lambda _path: None)
        for index, attempt in enumerate(attempts):
            checkpoint, feedback = attempt.checkpoint, attempt.feedback
            if checkpoint is None:
                continue
            archived = index < len(attempts) - 1
            if not (archived and checkpoint.held):
                total += spent_by(checkpoint)
            if not archived or not checkpoint.held or feedback is None or not feedback.approved:
                continue  # only an approval that released a hold raises a budget
            found = read_budget(feedback.raised_budget) if feedback.raised_budget else None
            raised = found if isinstance(found, Budget) else None
            kinds = {reason.split(":", 1)[0] for reason in checkpoint.held}
            if SESSION in kinds:
                session_raises.append(raised)
            if PHASE in kinds:
                raises.append(raised)
        by_phase[number] = total
        phase_raises[number] = tuple(raises)
    return Ledger(by_phase, tuple(session_raises), phase_raises)


def limit(given: Budget | None, raises: Sequence[Raise]) -> Budget | None:
    """The limit in force: the workflow's, raised by one more of it for each approval that
    named no figure, and at least the highest figure an approval named."""
    if given is None or not given:
        return None
    more = 1 + sum(1 for raised in raises if raised is None)
    named = [raised for raised in raises if raised is not None]
    tokens = None if given.tokens is None else given.tokens * more
    cost = None if given.cost is None else round(given.cost * more, 4)
    for raised in named:
        if tokens is not None and raised.tokens is not None:
            tokens = max(tokens, raised.tokens)
        if cost is not None and raised.cost is not None:
            cost = max(cost, raised.cost)
    return Budget(tokens, cost)


def passed(kind: str, spent: Spent, limit_now: Budget | None) -> list[str]:
    """The reasons to hold when ``spent`` has reached ``limit_now``: ``session budget: spent
    200,310 of 200,000 tokens``, ``phase budget: spent $1.2000 of $1.0000``."""
    if limit_now is None:
        return []
    reasons = []
    if limit_now.tokens is not None and spent.tokens >= limit_now.tokens:
        reasons.append(f"{kind}: spent {spent.tokens:,} of {limit_now.tokens:,} tokens")
    if limit_now.cost is not None and spent.cost >= limit_now.cost:
        reasons.append(f"{kind}: spent ${spent.cost:,.4f} of ${limit_now.cost:,.4f}")
    return reasons


def holds(
    manager: CheckpointManager,
    project_id: str,
    session_id: str,
    phase: int,
    phases: Sequence[int],
    session_budget: Budget | None,
    phase_budget: Budget | None,
) -> list[str]:
    """Why ``phase`` must not start (empty: it may): the session's budget, then its own.
    ``phases``: the session's phases in its mode, whose spending counts for the session."""
    if not session_budget and not phase_budget:
        return []
    found = ledger(manager, project_id, session_id, phases)
    reasons = passed(SESSION, found.total, limit(session_budget, found.session_raises))
    own = limit(phase_budget, found.phase_raises.get(phase, ()))
    return reasons + passed(PHASE, found.by_phase.get(phase, Spent()), own)
