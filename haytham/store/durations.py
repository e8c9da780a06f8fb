"""A phase's duration: the time it ran, never the time it waited for a review or a retry.

The one home of the rule. A checkpoint's Duration is worked out here when a save finishes the
phase (or a run of it) and the saver gives none (``checkpoint_seconds``), and every view reads
it here (``phase_seconds``, ``total_seconds``): the manifest's phase rows and Total Duration,
``status``, ``stats`` and the session page's charts, so they all say the same number, and a
Duration a person wrote by hand is the one they all show. A file is never rewritten to change
its Duration: what was written earlier (by an older haytham, or the first implementation)
reads as it says.

The rule, for a save that finishes a phase (docs/formats.md, the checkpoint's Duration):

1. the Duration the saver gives;
2. else, when the saver gives both Started and Completed, the span between them: it said when
   its run began and ended;
3. else the time the phase's agents ran in its current attempt, from the agent rows of the
   checkpoint: their sum, or the longest for a phase that runs its agents side by side
   (``parallel``). Each agent counts once, with its latest run: after a failed phase is
   retried, the re-run agent's new time counts and the agents that had finished keep theirs,
   so the time between the failure and the retry never does;
4. else (no agent row has a time) the span from Started to Completed as haytham filled them in.

Started stays when the attempt first started and Completed when it finished, so Completed
minus Started may be longer than Duration: the difference is waiting.
"""

from __future__ import annotations

from collections.abc import Iterable

from haytham.records import AgentRun, PhaseCheckpoint, RunStyle
from haytham.store.clock import parse_timestamp

SIDE_BY_SIDE: frozenset[RunStyle] = frozenset({"parallel"})
"""The run styles whose agents run at the same time: the phase takes as long as its longest."""


def agents_seconds(agents: Iterable[AgentRun], execution_mode: str) -> float | None:
    """The time a phase's agents ran, from their rows (None when no row has a time): the
    sum, or the longest when the phase runs them side by side; one decimal, as written."""
    times = [run.duration for run in agents if run.duration is not None]
    if not times:
        return None
    return round(max(times) if execution_mode in SIDE_BY_SIDE else sum(times), 1)


def span_seconds(started: str, completed: str) -> float | None:
    """Seconds from ``started`` to ``completed`` (one decimal); None when they run backwards."""
    seconds = (parse_timestamp(completed) - parse_timestamp(started)).total_seconds()
    return round(seconds, 1) if seconds >= 0 else None


def checkpoint_seconds(
    given: float | None,
    started: str | None,
    completed: str | None,
    agents: Iterable[AgentRun],
    execution_mode: str,
    *,
    span_given: bool,
) -> float | None:
    """The Duration a checkpoint is saved with (the module's rule).

    ``given``: the saver's Duration; ``started``/``completed``: the checkpoint's times, as the
    saver gave them or haytham filled them in; ``span_given``: the saver gave both times.
    A phase that has not finished (no Completed) has no Duration yet.
    """
    if given is not None:
        return given
    if completed is None:
        return None
    if not span_given:
        ran = agents_seconds(agents, execution_mode)
        if ran is not None:
            return ran
    return span_seconds(started, completed) if started else None


def phase_seconds(checkpoint: PhaseCheckpoint | None) -> float | None:
    """A phase's duration as every view shows it: its checkpoint's Duration (None: unknown,
    or the phase has not run)."""
    return None if checkpoint is None else checkpoint.duration


def total_seconds(checkpoints: Iterable[PhaseCheckpoint]) -> float:
    """The manifest's Total Duration: the phases' durations added up, unknown ones as nothing."""
    return round(sum(phase_seconds(c) or 0.0 for c in checkpoints), 6)
