"""Running a phase again: keep its current attempt under ``attempts/{n}/`` and open the next.

``start_attempt`` does it for one phase (a send-back or a stale phase about to run again),
``archive_from`` for a phase and every later one (``haytham rerun``); either is one
journaled change, so a crash leaves every phase archived and reopened, or none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from haytham.errors import PhaseNotFoundError
from haytham.format import CHECKPOINT
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE
from haytham.format.workflow import PhaseDefinition
from haytham.records import PhaseCheckpoint
from haytham.store import attempts as _attempts
from haytham.store import journal
from haytham.store import progress as _progress
from haytham.store.lease import refuse_if_running
from haytham.store.saving import built_from
from haytham.store.transaction import Transaction


def start_attempt(tx: Transaction, phase_num: int) -> int:
    """Archive the phase's current attempt and open the next; return the new attempt number."""
    with tx.change("start_attempt") as change:
        numbers = stage_attempts(tx, change, [tx.session.phase(phase_num)], strict=True)
    return numbers[0] + 1


def archive_from(tx: Transaction, from_phase: int) -> list[int]:
    """Archive ``from_phase`` and every later phase of the mode that has a checkpoint; return
    those phases. Refused (SessionBusyError) while another process runs the session: the
    page's "run again" and ``haytham rerun`` alike (a runner's own rerun holds the lease)."""
    session = tx.session
    refuse_if_running(session.directory, f"{tx.project_id}/{tx.session_id}")
    start = session.phase(from_phase)
    checkpoints = tx.checkpoints()
    later = [p for p in session.phases[session.phases.index(start) :] if p.number in checkpoints]
    with tx.change("archive_from") as change:
        stage_attempts(tx, change, later, strict=False)
    return [p.number for p in later]


def stage_attempts(
    tx: Transaction, change: journal.Change, phases: Sequence[PhaseDefinition], *, strict: bool
) -> list[int]:
    """Stage archiving the current attempt of each of ``phases`` (in the mode's order) and
    opening the next, with one history entry each and the manifest once; return the
    archived attempt numbers. ``strict``: a phase without a checkpoint is an error."""
    session = tx.session
    checkpoints = tx.checkpoints()
    planned: dict[int, PhaseCheckpoint] = {}
    reviews: dict[int, _progress.Review | None] = {}
    numbers = []
    for phase in phases:
        directory = session.phase_dir(phase.number)
        current = checkpoints.get(phase.number)
        if current is None:
            if strict:
                tx.store.load(
                    CHECKPOINT,
                    directory / CHECKPOINT_FILE,
                    PhaseNotFoundError,
                    f"phase {phase.number} has no checkpoint",
                )
            continue
        number = current.retry_count + 1
        _attempts.stage_archive(change, directory, number)
        now = tx.store.now()
        fresh = dataclasses.replace(  # not started: the runner starts it (rerun: one at a time)
            current,
            status="pending",
            retry_count=number,
            started=None,
            completed=None,
            duration=None,
            agents=tuple(
                dataclasses.replace(run, status="pending", duration=None, tokens=None, cost=None)
                for run in current.agents
            ),
            total_tokens=None,
            input_tokens=None,
            output_tokens=None,
            cost=None,
            errors=(),
            held=(),  # the decision that released a hold stays with the attempt it decided
            outputs_digest=None,
            built_from=built_from(tx.store, session, phase, {**checkpoints, **planned}),
        )
        manifest = tx.stage_checkpoint(
            change,
            session,
            directory / CHECKPOINT_FILE,
            fresh,
            now,
            reason=f"attempt {number + 1} after review",
            stage_manifest=False,
        )
        session = dataclasses.replace(session, manifest=manifest)  # the next entry's parent
        change.remove(directory / FEEDBACK_FILE)
        planned[phase.number] = fresh
        reviews[phase.number] = None
        numbers.append(number)
    if numbers:
        head = session.manifest.history_head
        tx.stage_manifest(change, session, checkpoints=planned, reviews=reviews, head=head)
    return numbers
