"""Where a session stands, derived only from its phase checkpoints.

The manifest's phase table, Status, Current Phase and Metrics are a pure function of the
checkpoints, so saving a phase, repairing a manifest after a crash and the doctor all agree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from haytham.format.workflow import PhaseDefinition
from haytham.records import (
    DONE_STATUSES,
    CurrentPhase,
    PhaseCheckpoint,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
    SessionStatus,
)

NOT_STARTED = CurrentPhase(number=0, name="Not Started", status="pending", can_resume=False)


def phase_rows(
    phases: tuple[PhaseDefinition, ...], checkpoints: Mapping[int, PhaseCheckpoint]
) -> tuple[PhaseRow, ...]:
    """One row per phase of the mode: from its checkpoint, or pending when it has none."""
    rows = []
    for phase in phases:
        saved = checkpoints.get(phase.number)
        if saved is None:
            rows.append(PhaseRow(phase.number, phase.name, "pending"))
        else:
            rows.append(
                PhaseRow(
                    phase.number,
                    phase.name,
                    saved.status,
                    saved.started,
                    saved.completed,
                    saved.duration,
                )
            )
    return tuple(rows)


def session_status(rows: tuple[PhaseRow, ...]) -> SessionStatus:
    """``failed`` if a phase failed, ``completed`` when every phase is done."""
    if any(row.status == "failed" for row in rows):
        return "failed"
    if all(row.status in DONE_STATUSES for row in rows):
        return "completed"
    return "in_progress"


def current_phase(rows: tuple[PhaseRow, ...]) -> CurrentPhase:
    """The phase a resume runs next: the first one not yet done (never moves back on a re-save
    of a done phase)."""
    if all(row.status == "pending" for row in rows):
        return NOT_STARTED
    for row in rows:
        if row.status not in DONE_STATUSES:
            return CurrentPhase(row.number, row.name, row.status, can_resume=True)
    last = rows[-1]
    return CurrentPhase(last.number, last.name, last.status, can_resume=False)


def next_phase(rows: tuple[PhaseRow, ...]) -> int | None:
    """The number of the first phase not yet done, or None when all are."""
    for row in rows:
        if row.status not in DONE_STATUSES:
            return row.number
    return None


def metrics(checkpoints: Mapping[int, PhaseCheckpoint]) -> SessionMetrics:
    """Sums over the checkpoints; unknown values count as nothing."""
    saved = list(checkpoints.values())
    return SessionMetrics(
        total_duration=round(sum(c.duration or 0.0 for c in saved), 6),
        total_tokens=sum(c.total_tokens or 0 for c in saved),
        total_cost=round(sum(c.cost or 0.0 for c in saved), 6),
    )


def derive(
    manifest: SessionManifest,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
) -> SessionManifest:
    """``manifest`` with everything that depends on the checkpoints recomputed."""
    rows = phase_rows(phases, checkpoints)
    return dataclasses.replace(
        manifest,
        phases=rows,
        status=session_status(rows),
        current=current_phase(rows),
        metrics=metrics(checkpoints),
    )


def same_progress(a: SessionManifest, b: SessionManifest) -> bool:
    """True when two manifests agree on everything but Last Updated."""
    return dataclasses.replace(a, last_updated=b.last_updated) == b
