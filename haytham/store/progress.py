"""Where a session stands, as its files say: the lifecycle's facts, the manifest built from them.

``phase_facts`` reads what ``lifecycle.derive`` needs from a session's checkpoints and review
files (never an agent output); ``derive`` writes the resulting ``SessionView`` into the
manifest's phase table, Status and Current Phase, with the metrics summed over the
checkpoints. Saving a phase, saving a review, repairing a manifest after a crash, validation
and the doctor all go through here, so they agree; the rule itself lives in the lifecycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from haytham.errors import HaythamError
from haytham.format import FEEDBACK, ReadCache
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.workflow import PhaseDefinition
from haytham.records import (
    CurrentPhase,
    PhaseCheckpoint,
    PhaseRow,
    PhaseState,
    SessionManifest,
    SessionMetrics,
    SessionStatus,
)
from haytham.store import durations, lifecycle

NOT_STARTED = CurrentPhase(number=0, name="Not Started", status="pending", can_resume=False)

Review = tuple[lifecycle.Verdict, str | None]
"""What a phase's review file says, and why it cannot be read when it cannot."""


def read_reviews(
    directory: Path,
    phases: tuple[PhaseDefinition, ...],
    cache: ReadCache | None = None,
    read: Callable[[Path], bytes | None] | None = None,
) -> dict[int, Review]:
    """The verdict of each phase's ``user_feedback.md`` (the phases without one are left out).

    ``read``: how a writer holding the lock reads a file (its bytes, None when there is
    none), so that a file it read already for its save is not read again."""
    found: dict[int, Review] = {}
    for phase in phases:
        path = directory / phase.directory / FEEDBACK_FILE
        try:
            if read is None:
                feedback = FEEDBACK.load_optional(path, cache=cache)
            else:
                data = read(path)
                feedback = None if data is None else FEEDBACK.load_data(data, path, cache=cache)
        except HaythamError as error:
            found[phase.number] = ("awaiting", str(error))
            continue
        if feedback is not None:
            found[phase.number] = (lifecycle.verdict(feedback), None)
    return found


def phase_facts(
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    reviews: Mapping[int, Review],
) -> list[lifecycle.PhaseFacts]:
    """The lifecycle's facts of every phase of the mode, in order."""
    facts = []
    for phase in phases:
        saved = checkpoints.get(phase.number)
        verdict, problem = reviews.get(phase.number, ("none", None))
        facts.append(
            lifecycle.PhaseFacts(
                number=phase.number,
                name=phase.name,
                review=phase.review,
                status=saved.status if saved else None,
                attempt=saved.retry_count + 1 if saved else 1,
                outputs_digest=saved.outputs_digest if saved else None,
                built_from=dict(saved.built_from) if saved else {},
                verdict=verdict,
                problem=problem,
                waiting_since=saved.completed if saved else None,
            )
        )
    return facts


def view_of(
    directory: Path,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    cache: ReadCache | None = None,
) -> lifecycle.SessionView:
    """``lifecycle.derive`` over the session at ``directory``."""
    return lifecycle.derive(phase_facts(phases, checkpoints, read_reviews(directory, phases, cache)))


def phase_rows(
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    view: lifecycle.SessionView | None = None,
) -> tuple[PhaseRow, ...]:
    """One row per phase of the mode: its lifecycle state and its checkpoint's times (the
    duration is ``durations.phase_seconds``, as every view shows it).

    Without ``view`` the reviews are taken as unread (a checkpoint's own status).
    """
    view = view or lifecycle.derive(phase_facts(phases, checkpoints, {}))
    rows = []
    for phase in phases:
        saved = checkpoints.get(phase.number)
        state = view.phase(phase.number).state
        if saved is None:
            rows.append(PhaseRow(phase.number, phase.name, state))
        else:
            rows.append(
                PhaseRow(
                    phase.number,
                    phase.name,
                    state,
                    saved.started,
                    saved.completed,
                    durations.phase_seconds(saved),
                )
            )
    return tuple(rows)


def row_state(row: PhaseRow) -> PhaseState:
    """A row's lifecycle state; an older manifest's ``requires_retry`` is ``sent_back``."""
    return "sent_back" if row.status == "requires_retry" else row.status


def session_status(rows: tuple[PhaseRow, ...]) -> SessionStatus:
    """The session's state from its phase table: that of the first phase not done."""
    first = next((row_state(r) for r in rows if row_state(r) not in lifecycle.DONE_STATES), None)
    return lifecycle.session_state(first)


def current_phase(rows: tuple[PhaseRow, ...]) -> CurrentPhase:
    """The manifest's Current Phase: the first phase not done, with its lifecycle state.

    Before any phase has started it is ``NOT_STARTED``; when every phase is done it is the
    last one, which cannot be resumed. A phase awaiting review cannot be resumed either: it
    needs a reviewer. The merge driver computes it from merged rows the same way, so the
    status is the state's value (``in_progress``), never words.
    """
    if all(row.status == "pending" for row in rows):
        return NOT_STARTED
    for row in rows:
        state = row_state(row)
        if state not in lifecycle.DONE_STATES:
            return CurrentPhase(row.number, row.name, state, can_resume=state != "awaiting_review")
    last = rows[-1]
    return CurrentPhase(last.number, last.name, last.status, can_resume=False)


def metrics(checkpoints: Mapping[int, PhaseCheckpoint]) -> SessionMetrics:
    """Sums over the checkpoints; unknown values count as nothing (the durations are
    ``durations.total_seconds``: the time the phases ran, not the time they waited)."""
    saved = list(checkpoints.values())
    return SessionMetrics(
        total_duration=durations.total_seconds(saved),
        total_tokens=sum(c.total_tokens or 0 for c in saved),
        total_cost=round(sum(c.cost or 0.0 for c in saved), 6),
    )


def derive(
    manifest: SessionManifest,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    view: lifecycle.SessionView | None = None,
) -> SessionManifest:
    """``manifest`` with everything that depends on the session's files recomputed from
    ``view`` (``lifecycle.derive``; without it, from the checkpoints alone)."""
    view = view or lifecycle.derive(phase_facts(phases, checkpoints, {}))
    rows = phase_rows(phases, checkpoints, view)
    return dataclasses.replace(
        manifest,
        phases=rows,
        status=view.state,
        current=current_phase(rows),
        metrics=metrics(checkpoints),
    )


def same_progress(a: SessionManifest, b: SessionManifest) -> bool:
    """True when two manifests agree on everything but Last Updated."""
    return dataclasses.replace(a, last_updated=b.last_updated) == b
