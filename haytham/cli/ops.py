"""The ``prune`` and ``stats`` commands: keeping a store tidy, and what its sessions cost.

Besides ``storage.base_dir`` (which every command's ``--base-dir`` falls back to), ``prune``
takes its rules from the ``retention`` settings of ``./haytham.yaml`` when there is one,
unless an option overrides them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from haytham.analytics import Analytics, summarize
from haytham.cli.common import (
    base_dir_option,
    command,
    duration,
    emit_json,
    json_option,
    new_console,
    print_table,
    progress,
    table,
)
from haytham.config import find_config
from haytham.format.patterns import lazy
from haytham.git.reviews import last_commits
from haytham.retention import CleanupReport, Removal, cleanup
from haytham.store.manager import CheckpointManager

_USAGE_KEYS = {
    "tokens": "tokens (from the checkpoints, else the agent output files)",
    "input_tokens": "input tokens (from the agent output files)",
    "output_tokens": "output tokens (from the agent output files)",
    "cost": "dollars",
    "duration": "seconds (a phase's Duration: the time it ran, without review or retry waits; "
    "an agent's own run time)",
}
JSON_OUTPUT: dict[str, dict[str, str]] = {
    "prune": {
        "dry_run": "true when nothing was removed because of `--dry-run`",
        "removed": "what was removed (with `--dry-run`: exactly what a real run removes)",
        "removed[].kind": "`session` or `attempt`",
        "removed[].path": "the directory",
        "removed[].reason": "why, as a sentence",
        "removed[].rule": "`max_age_days`, `max_sessions_per_project`, `max_sessions_per_user`, "
        "`max_attempts_per_phase` or `leftover` (debris of an interrupted cleanup)",
        "removed[].project_id": "the project id",
        "removed[].session_id": "the session id",
        "removed[].phase": "the phase of an attempt, or null",
        "removed[].attempt": "the attempt number, or null",
        "skipped": "what a rule selected but was kept (in progress, unreadable, changed meanwhile)",
        "skipped[].path": "the directory or file",
        "skipped[].reason": "why it was kept",
        "skipped[].project_id": "the project id, or null",
        "skipped[].session_id": "the session id, or null",
    },
    "stats": {
        "project_id": "the `--project` given, or null",
        "session_id": "the `--session` given, or null",
        "user_id": "the `--user` given, or null",
        "sessions": "how many sessions were summarized",
        "by_status": "sessions per status: `in_progress`, `completed`, `failed`",
        "totals": "over every phase",
        **{f"totals.{k}": v for k, v in _USAGE_KEYS.items()},
        "reviews": "reviews whose waiting time is known",
        "review_wait": "seconds between phases completing and their review, summed",
        "review_times_from": "how many review times were recorded, came from git or from the file's time",
        "phases": "per phase, by number and name",
        "phases[].phase": "phase number",
        "phases[].name": "phase name",
        "phases[].sessions": "sessions in which the phase ran",
        "phases[].attempts": "attempts kept on disk, the current ones included",
        "phases[].retries": "times reviewers sent the phase back (Retry Count)",
        **{f"phases[].{k}": v for k, v in _USAGE_KEYS.items()},
        "phases[].reviews": "reviews whose waiting time is known",
        "phases[].review_wait": "seconds waited for those reviews, summed",
        "phases[].review_times_from": "where the phase's review times came from: recorded, git, file",
        "agents": "per agent of each phase",
        "agents[].phase": "phase number",
        "agents[].agent": "agent name",
        "agents[].runs": "attempts in which the agent ran",
        **{f"agents[].{k}": v for k, v in _USAGE_KEYS.items()},
        "problems": "files that could not be read (their sessions are counted, not added up)",
    },
}
"""Each command's ``--json`` keys, in the form of ``haytham.cli.main.JSON_OUTPUT``."""

_AGE = lazy(r"^\s*(\d+(?:\.\d+)?)\s*([hdw])\s*$")
_DAYS_PER_UNIT = {"h": 1 / 24, "d": 1.0, "w": 7.0}


def parse_age(text: str) -> float:
    """``30d``, ``12h`` or ``2w`` (decimals allowed) as a number of days; ValueError otherwise."""
    found = _AGE.match(text)
    if found is None:
        raise ValueError(f"{text!r} is not an age such as 30d, 12h or 2w")
    return float(found.group(1)) * _DAYS_PER_UNIT[found.group(2)]


def _age_option(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx, param) from None


# ----------------------------------------------------------------------- commands


@command()
@click.option("--project", help="Only this project's sessions.")
@click.option(
    "--older-than",
    callback=_age_option,
    metavar="AGE",
    help="Remove sessions last updated more than AGE ago: 30d, 12h or 2w (only completed or "
    "failed ones, as their files say, unless --include-in-progress).",
)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep the N most recently created sessions of each project (of the user, with --user).",
)
@click.option(
    "--keep-attempts",
    type=click.IntRange(min=1),
    metavar="N",
    help="Keep the newest N attempts of each phase (the current one always stays).",
)
@click.option("--user", help="Only this user's sessions.")
@click.option("--dry-run", is_flag=True, help="List what would be removed and remove nothing.")
@click.option(
    "--include-in-progress",
    is_flag=True,
    help="Let every rule remove unfinished sessions too (in progress or awaiting review).",
)
@base_dir_option
@json_option
def prune(
    project: str | None,
    older_than: float | None,
    keep: int | None,
    keep_attempts: int | None,
    user: str | None,
    dry_run: bool,
    include_in_progress: bool,
    base_dir: Path,
    as_json: bool,
) -> None:
    """Remove old sessions and old attempts by rule.

    Options left out take their value from the retention settings of ./haytham.yaml, if
    there is one. Unfinished sessions (in progress, or awaiting review: a person is about to
    act on them) and the current attempt of every phase are never removed (unfinished
    sessions only with --include-in-progress); a session's state is what its checkpoints and
    review files say now, not its manifest. A session disappears in
    one step: it is renamed to a hidden name under its lock, then deleted. --dry-run lists
    exactly what the same command without it removes.
    """
    manager, config = CheckpointManager(base_dir), find_config()
    changes: dict[str, Any] = {
        "max_age_days": older_than,
        "max_attempts_per_phase": keep_attempts,
        "max_sessions_per_user" if user else "max_sessions_per_project": keep,
    }
    if include_in_progress:
        changes.update(include_in_progress=True, only_finished=False)
    policy = dataclasses.replace(config.retention, **{k: v for k, v in changes.items() if v is not None})
    if policy.is_empty:
        raise click.UsageError(
            "nothing to prune: give --older-than, --keep or --keep-attempts "
            "(or set retention in haytham.yaml)"
        )
    console = new_console()
    with progress(console, "Removing", disable=as_json or dry_run) as bar:
        task = bar.add_task("prune", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = cleanup(manager, policy, project_id=project, user_id=user, dry_run=dry_run, progress=advance)
    if as_json:
        emit_json(report.to_dict())
        return
    _print_report(report)


def _print_report(report: CleanupReport) -> None:
    verb = "Would remove" if report.dry_run else "Removed"
    for removal in report.removed:
        click.echo(f"{verb} {_what(removal)}: {removal.reason}")
    for kept in report.skipped:
        where = f"{kept.project_id}/{kept.session_id}" if kept.session_id else str(kept.path)
        click.echo(f"Kept {where}: {kept.reason}")
    sessions = sum(1 for r in report.removed if r.kind == "session")
    attempts = len(report.removed) - sessions
    summary = f"{sessions} session{'s' * (sessions != 1)} and {attempts} attempt{'s' * (attempts != 1)}"
    if report.dry_run:
        click.echo(f"Dry run: would remove {summary}; nothing was removed")
    else:
        click.echo(f"Removed {summary}")


def _what(removal: Removal) -> str:
    session = f"{removal.project_id}/{removal.session_id}"
    if removal.rule == "leftover":
        return f"leftover {removal.path}"
    if removal.kind == "session":
        return f"session {session}"
    return f"attempt {removal.attempt} of phase {removal.phase} of {session}"


@command()
@click.option("--project", help="Only this project's sessions.")
@click.option("--session", help="Only this session (needs --project).")
@click.option("--user", help="Only this user's sessions, across projects.")
@base_dir_option
@json_option
def stats(project: str | None, session: str | None, user: str | None, base_dir: Path, as_json: bool) -> None:
    """Show tokens, cost and duration per phase and per agent, read from the files.

    Every attempt counts, archived ones included; review wait is the time between a phase
    completing and its review. A review's time is the Timestamp it recorded; for a review
    made by hand without one, the commit that last changed its file (when the base dir is in
    a git repository and the file is committed unchanged since), else the file's modification
    time: "Review time from" says how many came from each (recorded, git, file time).
    Sessions are also counted by status.
    """
    if session is not None and project is None:
        raise click.UsageError("--session needs --project (session ids are per project)")
    manager = CheckpointManager(base_dir)
    analytics = summarize(manager, project_id=project, session_id=session, user_id=user, commits=last_commits)
    if as_json:
        emit_json(analytics.to_dict())
        return
    _print_stats(analytics)


def _print_stats(analytics: Analytics) -> None:
    for problem in analytics.problems:
        click.echo(f"warning: not added up: {problem}", err=True)
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in analytics.by_status.items())
    click.echo(f"{analytics.sessions} session{'s' * (analytics.sessions != 1)}: {counts}")
    if not analytics.phases:
        click.echo("No phase has run yet")
        return
    console = new_console()
    phases = table(
        console,
        "Phase",
        "Name",
        "Sessions",
        "Attempts",
        "Retries",
        "Tokens",
        "In",
        "Out",
        "Cost",
        "Duration",
        "Review wait",
        "Review time from",
        numeric=9,
    )
    for p in analytics.phases:
        u = p.usage
        wait = duration(p.review_wait) if p.reviews else "-"
        cells = (
            p.phase,
            p.name,
            p.sessions,
            p.attempts,
            p.retries,
            u.tokens,
            u.input_tokens,
            u.output_tokens,
        )
        phases.add_row(
            *(Text(str(c)) for c in cells),
            f"${u.cost:.4f}",
            duration(u.duration),
            wait,
            _sources(p.review_times_from),
        )
    print_table(console, phases)
    agents = table(console, "Phase", "Agent", "Runs", "Tokens", "In", "Out", "Cost", "Duration", numeric=6)
    for a in analytics.agents:
        u = a.usage
        row = (a.phase, a.agent, a.runs, u.tokens, u.input_tokens, u.output_tokens)
        agents.add_row(*(Text(str(c)) for c in row), f"${u.cost:.4f}", duration(u.duration))
    click.echo()
    print_table(console, agents)
    t = analytics.totals
    click.echo(
        f"\nTotals: {t.tokens} tokens ({t.input_tokens} in, {t.output_tokens} out), ${t.cost:.4f}, "
        f"{duration(t.duration)}; {analytics.reviews} review{'s' * (analytics.reviews != 1)}, "
        f"{duration(analytics.review_wait)} waiting"
        + (f" (review time from: {_sources(analytics.review_times_from)})" if analytics.reviews else "")
    )


SOURCE_WORDS = {"recorded": "recorded", "git": "git", "file": "file time"}
"""How ``stats`` names where a review's time came from (``records.REVIEW_TIME_SOURCES``)."""


def _sources(counts: dict[str, int]) -> str:
    """``recorded 2, git 1``: where the review times came from, the sources that gave any."""
    said = [f"{SOURCE_WORDS.get(source, source)} {n}" for source, n in counts.items() if n]
    return ", ".join(said) or "-"


COMMANDS: list[click.Command] = [prune, stats]
"""The commands to register on the ``haytham`` group (``cli.add_command``)."""
