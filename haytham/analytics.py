"""Analytics from the files alone: what the phases and agents of some sessions cost.

``summarize`` reads the checkpoints, agent outputs and feedback of one session, a project
or a user's sessions across projects, and adds up tokens, cost and duration per phase and
per agent, the attempts and retries of each phase, how long phases waited for their review,
and how many sessions are in each status. Archived attempts (``attempts/{k}/``) count:
the tokens they spent were spent. Nothing is cached or stored; the files are the truth.

Where a value comes from, per agent and attempt: tokens, cost and duration from the
checkpoint's agent entry, else from the agent's output file; input and output tokens from
the agent's output file. A phase's duration is its checkpoint's Duration, the time it ran
(``durations.phase_seconds``: phases running agents in parallel take less than the sum of
their agents, and the time a phase waited for a review or a retry is not in it). Review
wait is the review's time minus the Completed time of the checkpoint of the same attempt.
A review's time is its recorded Timestamp; for a hand review without one, the commit that
last changed the file when ``summarize`` is given a ``commits`` lookup (``haytham stats``
passes git's, asked once for all such files) and the file is committed unchanged since,
else the file's modification time (``store/review_time.py``). Each phase says how many of
its review times came from each source (``review_times_from``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import HaythamError, InvalidArgumentError, ProjectNotFoundError
from haytham.format import AGENT_OUTPUT
from haytham.format.layout import FEEDBACK_FILE
from haytham.records import (
    REVIEW_TIME_SOURCES,
    AgentOutput,
    AgentRun,
    Attempt,
    PhaseCheckpoint,
    ReviewTimeSource,
)
from haytham.store import durations
from haytham.store.clock import parse_timestamp
from haytham.store.names import check_user_id
from haytham.store.review_time import CommitLookup, from_commit
from haytham.store.scan import SessionSummary, list_sessions

if TYPE_CHECKING:
    from haytham.store.manager import CheckpointManager

SESSION_STATUSES = ("in_progress", "completed", "failed")


@dataclass(frozen=True)
class Usage:
    """Tokens, dollars and seconds spent; unknown values count as nothing."""

    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    duration: float = 0.0
    """Seconds."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.tokens + other.tokens,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            round(self.cost + other.cost, 6),
            round(self.duration + other.duration, 3),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys."""
        return {
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "duration": self.duration,
        }


@dataclass(frozen=True)
class PhaseStats:
    """One phase (by number and name) over the sessions summarized."""

    phase: int
    name: str
    sessions: int
    """Sessions in which the phase has run."""
    attempts: int
    """Attempts kept on disk, the current ones included (a cleanup may have removed some)."""
    retries: int
    """The sum of the latest attempts' Retry Count: how often reviewers sent the phase back."""
    usage: Usage
    reviews: int
    """Reviews whose waiting time is known."""
    review_wait: float
    """Seconds between a checkpoint's Completed and its review's time, summed."""
    review_times_from: dict[str, int] = dataclasses.field(default_factory=dict)
    """How many of the ``reviews`` took their time from each source (``REVIEW_TIME_SOURCES``:
    ``recorded``, ``git``, ``file``); every source is a key."""

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys (the usage fields inline)."""
        return {
            "phase": self.phase,
            "name": self.name,
            "sessions": self.sessions,
            "attempts": self.attempts,
            "retries": self.retries,
            **self.usage.to_dict(),
            "reviews": self.reviews,
            "review_wait": self.review_wait,
            "review_times_from": dict(self.review_times_from),
        }


@dataclass(frozen=True)
class AgentStats:
    """One agent of one phase over the sessions summarized."""

    phase: int
    agent: str
    runs: int
    """Attempts in which the agent ran (has an output or a checkpoint entry past pending)."""
    usage: Usage

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys (the usage fields inline)."""
        return {"phase": self.phase, "agent": self.agent, "runs": self.runs, **self.usage.to_dict()}


@dataclass(frozen=True)
class Analytics:
    """What ``summarize`` found for its sessions."""

    project_id: str | None
    session_id: str | None
    user_id: str | None
    sessions: int
    by_status: dict[str, int]
    """Sessions per manifest Status; every status is a key."""
    totals: Usage
    phases: tuple[PhaseStats, ...]
    agents: tuple[AgentStats, ...]
    reviews: int
    review_wait: float
    """Seconds, summed over every review whose waiting time is known."""
    problems: tuple[str, ...] = ()
    """Files that could not be read (their sessions are counted but not added up)."""
    review_times_from: dict[str, int] = dataclasses.field(default_factory=dict)
    """How many of the ``reviews`` took their time from each source, over every phase."""

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys."""
        return {
            "project_id": self.project_id,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "sessions": self.sessions,
            "by_status": dict(self.by_status),
            "totals": self.totals.to_dict(),
            "reviews": self.reviews,
            "review_wait": self.review_wait,
            "review_times_from": dict(self.review_times_from),
            "phases": [p.to_dict() for p in self.phases],
            "agents": [a.to_dict() for a in self.agents],
            "problems": list(self.problems),
        }


def summarize(
    manager: CheckpointManager,
    *,
    project_id: str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    commits: CommitLookup | None = None,
) -> Analytics:
    """Add up the sessions under ``manager.base_dir``: all, a project's, one, or a user's.

    ``session_id`` needs ``project_id``; ``user_id`` alone covers that user's sessions in
    every project. A session whose files cannot be read is counted by status and named in
    ``problems``; the others are still added up. ``commits`` (``haytham.git.reviews.
    last_commits``) is asked once, for every hand review without a time of its own.
    """
    if session_id is not None and project_id is None:
        raise InvalidArgumentError(
            "session_id needs project_id (session ids are per project)", field="session_id"
        )
    if user_id is not None:
        check_user_id(user_id)
    if project_id is not None:
        directory = manager.project_dir(project_id)
        if not directory.is_dir():
            raise ProjectNotFoundError(
                f"project {project_id!r} does not exist under {manager.base_dir}", path=directory
            )
    summaries, unreadable = list_sessions(
        manager.base_dir, project_id=project_id, user_id=user_id, workflows=manager.workflows
    )
    problems = [str(issue) for issue in unreadable]
    if session_id is not None:
        assert project_id is not None
        wanted = manager.session_dir(project_id, session_id)
        manager.load_manifest(project_id, session_id)  # SessionNotFoundError when there is none
        summaries = [s for s in summaries if s.path == wanted]
        problems = [p for p in problems if p.startswith(str(wanted))]
    totals = _Totals()
    by_status = dict.fromkeys(SESSION_STATUSES, 0)
    for summary in sorted(summaries, key=lambda s: (s.project_id, s.session_id)):
        by_status[summary.status] = by_status.get(summary.status, 0) + 1
        session = _Totals()
        try:
            _add_session(manager, summary, session)
        except HaythamError as error:
            problems.append(f"{summary.project_id}/{summary.session_id}: {error}")
            continue
        totals.merge(session)
    totals.add_hand_reviews(commits)
    return totals.freeze(project_id, session_id, user_id, len(summaries), by_status, problems)


# ------------------------------------------------------------------- adding up


class _PhaseSums:
    def __init__(self) -> None:
        self.sessions = 0
        self.attempts = 0
        self.retries = 0
        self.usage = Usage()
        self.reviews = 0
        self.review_wait = 0.0
        self.review_times_from: dict[str, int] = dict.fromkeys(REVIEW_TIME_SOURCES, 0)

    def add_review(self, attempt: Attempt, source: ReviewTimeSource) -> None:
        """Add the attempt's review wait, when it is known, and where its time came from."""
        wait = _review_wait(attempt)
        if wait is not None:
            self.reviews += 1
            self.review_wait = round(self.review_wait + wait, 3)
            self.review_times_from[source] += 1


class _Totals:
    """Mutable sums while reading; ``freeze`` turns them into the frozen records."""

    def __init__(self) -> None:
        self.phases: dict[tuple[int, str], _PhaseSums] = defaultdict(_PhaseSums)
        self.agents: dict[tuple[int, str], tuple[int, Usage]] = {}
        self.hand_reviews: list[tuple[tuple[int, str], Attempt]] = []
        """Reviews whose time is the file's (``review_time_from == "file"``): added once git
        was asked about all of them (``add_hand_reviews``)."""

    def add_hand_reviews(self, commits: CommitLookup | None) -> None:
        """Add the hand reviews, each at its commit's time when ``commits`` knows it."""
        paths = [attempt.directory / FEEDBACK_FILE for _, attempt in self.hand_reviews]
        found = commits(paths) if commits is not None and paths else {}
        for (key, attempt), path in zip(self.hand_reviews, paths, strict=True):
            commit = found.get(path)
            if commit is None or attempt.feedback is None:
                self.phases[key].add_review(attempt, "file")
                continue
            dated = dataclasses.replace(attempt, feedback=from_commit(attempt.feedback, commit))
            self.phases[key].add_review(dated, "git")
        self.hand_reviews = []

    def add_agent(self, phase: int, agent: str, usage: Usage) -> None:
        runs, sums = self.agents.get((phase, agent), (0, Usage()))
        self.agents[(phase, agent)] = (runs + 1, sums + usage)

    def merge(self, other: _Totals) -> None:
        for key, theirs in other.phases.items():
            mine = self.phases[key]
            mine.sessions += theirs.sessions
            mine.attempts += theirs.attempts
            mine.retries += theirs.retries
            mine.usage += theirs.usage
            mine.reviews += theirs.reviews
            mine.review_wait = round(mine.review_wait + theirs.review_wait, 3)
            for source, count in theirs.review_times_from.items():
                mine.review_times_from[source] += count
        self.hand_reviews += other.hand_reviews
        for (phase, agent), (runs, usage) in other.agents.items():
            old_runs, old_usage = self.agents.get((phase, agent), (0, Usage()))
            self.agents[(phase, agent)] = (old_runs + runs, old_usage + usage)

    def freeze(
        self,
        project_id: str | None,
        session_id: str | None,
        user_id: str | None,
        sessions: int,
        by_status: dict[str, int],
        problems: Iterable[str],
    ) -> Analytics:
        phases = tuple(
            PhaseStats(
                number,
                name,
                s.sessions,
                s.attempts,
                s.retries,
                s.usage,
                s.reviews,
                s.review_wait,
                dict(s.review_times_from),
            )
            for (number, name), s in sorted(self.phases.items())
        )
        agents = tuple(
            AgentStats(phase, agent, runs, usage)
            for (phase, agent), (runs, usage) in sorted(self.agents.items())
        )
        return Analytics(
            project_id=project_id,
            session_id=session_id,
            user_id=user_id,
            sessions=sessions,
            by_status=by_status,
            totals=sum((p.usage for p in phases), Usage()),
            phases=phases,
            agents=agents,
            reviews=sum(p.reviews for p in phases),
            review_wait=round(sum(p.review_wait for p in phases), 3),
            problems=tuple(problems),
            review_times_from={
                s: sum(p.review_times_from.get(s, 0) for p in phases) for s in REVIEW_TIME_SOURCES
            },
        )


def _add_session(manager: CheckpointManager, summary: SessionSummary, totals: _Totals) -> None:
    project, session = summary.project_id, summary.session_id
    workflow = manager.session_workflow(project, session)
    for phase in workflow.phases_for(summary.execution_mode):
        attempts = manager.load_attempts(project, session, phase.number, _not_read)
        if not attempts:
            continue
        sums = totals.phases[(phase.number, phase.name)]
        sums.sessions += 1
        sums.attempts += len(attempts)
        latest = attempts[-1]
        sums.retries += latest.checkpoint.retry_count if latest.checkpoint else latest.number - 1
        for attempt in attempts:
            sums.usage += _add_attempt(phase.number, attempt, totals)
            if attempt.review_time_from == "file":
                totals.hand_reviews.append(((phase.number, phase.name), attempt))
            elif attempt.review_time_from is not None:
                sums.add_review(attempt, attempt.review_time_from)


def _not_read(path: Path) -> str:
    """An attempt's output as analytics needs it from ``load_attempts``: not at all (its
    tokens and cost come from ``_usage_of``), so no output's text is held while another is read."""
    return ""


def _usage_of(path: Path) -> AgentOutput:
    """The output at ``path`` without its content: what it used is all analytics adds up, and
    a 256 MB text is let go as soon as it was read (docs/formats.md, "Limits")."""
    return dataclasses.replace(AGENT_OUTPUT.load(path), content="")


def _add_attempt(phase: int, attempt: Attempt, totals: _Totals) -> Usage:
    """Add the attempt's agents to ``totals``; return the attempt's usage as a phase."""
    checkpoint = attempt.checkpoint
    runs = {run.agent_name: run for run in checkpoint.agents} if checkpoint else {}
    outputs = {name: _usage_of(attempt.directory / f"{name}.md") for name in attempt.outputs}
    phase_usage = Usage()
    for name in [*runs, *(n for n in outputs if n not in runs)]:
        run, output = runs.get(name), outputs.get(name)
        if output is None and (run is None or run.status == "pending"):
            continue  # listed for an attempt that has not run it yet
        usage = _agent_usage(run, output)
        totals.add_agent(phase, name, usage)
        phase_usage += usage
    if checkpoint is not None:
        phase_usage = _phase_usage(
            checkpoint, phase_usage, any(o.input_tokens is not None for o in outputs.values())
        )
    return phase_usage


def _agent_usage(run: AgentRun | None, output: AgentOutput | None) -> Usage:
    def first(*values: float | None) -> float:
        return next((v for v in values if v is not None), 0)

    from_file = None
    if output is not None and (output.input_tokens is not None or output.output_tokens is not None):
        from_file = (output.input_tokens or 0) + (output.output_tokens or 0)
    return Usage(
        tokens=int(first(run.tokens if run else None, from_file)),
        input_tokens=(output.input_tokens or 0) if output else 0,
        output_tokens=(output.output_tokens or 0) if output else 0,
        cost=round(float(first(run.cost if run else None, output.cost if output else None)), 6),
        duration=round(float(first(run.duration if run else None, output.duration if output else None)), 3),
    )


def _phase_usage(checkpoint: PhaseCheckpoint, agents: Usage, files_have_split: bool) -> Usage:
    """The phase's usage: its agents' sums, with the checkpoint's own Duration (the time the
    phase ran, ``durations.phase_seconds``).

    When no agent file records input/output tokens, the checkpoint's totals of them are used.
    """
    return Usage(
        tokens=agents.tokens,
        input_tokens=agents.input_tokens if files_have_split else checkpoint.input_tokens or 0,
        output_tokens=agents.output_tokens if files_have_split else checkpoint.output_tokens or 0,
        cost=agents.cost,
        duration=round(durations.phase_seconds(checkpoint) or 0.0, 3),
    )


def _review_wait(attempt: Attempt) -> float | None:
    """Seconds from the attempt's completion to its review, when both are known."""
    feedback, checkpoint = attempt.feedback, attempt.checkpoint
    if feedback is None or checkpoint is None or not feedback.reviewed:
        return None
    if not feedback.timestamp or not checkpoint.completed:
        return None
    try:
        seconds = (
            parse_timestamp(feedback.timestamp) - parse_timestamp(checkpoint.completed)
        ).total_seconds()
    except ValueError:
        return None
    return round(seconds, 3) if seconds >= 0 else None
