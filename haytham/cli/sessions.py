"""The commands that create and read sessions: ``new``, ``list``, ``status`` and ``show``.

Each parses its arguments, calls the library and prints: tables and rendered markdown on a
terminal, plain text (agent outputs exactly as saved) when piped, and with ``--json`` one
object whose keys are in ``JSON_OUTPUT`` (and docs/cli.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from haytham.cli.common import (
    base_dir_option,
    command,
    emit_json,
    json_option,
    mine_options,
    new_console,
    on_terminal,
    plain,
    seconds,
    stream_table,
    suggest,
    when,
)
from haytham.cli.present import (
    NEXT_KEYS,
    declare_agents,
    describe_feedback,
    next_step,
    print_status,
    status_style,
)
from haytham.errors import Issue
from haytham.format.reviewer import Reviewer
from haytham.format.tries import describe_tries
from haytham.format.workflow import IDEA_VALIDATION, Workflow, load_workflow
from haytham.records import SESSION_STATUSES, AgentOutput, PhaseCheckpoint, UserFeedback
from haytham.store import durations
from haytham.store.lease import LeaseHolder
from haytham.store.lease import holder as lease_holder
from haytham.store.lifecycle import RUNNING
from haytham.store.manager import CheckpointManager

if TYPE_CHECKING:  # rich is imported only to draw on a terminal, the listing only by `list`
    from rich.console import Console

    from haytham.store.scan import SessionListing, SessionSummary

# Each read command's --json keys. ``a[].b`` is key ``b`` of each item of list ``a``; keys in
# JSON_RECORDS hold a record of haytham.records with its fields as keys (null when absent).
_SESSION_KEYS = {
    "project_id": "the project id",
    "session_id": "the session id",
    "user_id": "who the session belongs to",
    "workflow_type": "the workflow's name, e.g. `idea_validation`",
    "execution_mode": "the workflow mode, e.g. `mvp` or `full`",
    "status": "`in_progress`, `awaiting_review`, `completed` or `failed`",
    "current_phase": "the first phase not done, as the files say (0 before any phase started)",
    "current_phase_name": "that phase's name",
    "current_state": "that phase's lifecycle state as its files say it, e.g. `awaiting_review` or `stale`",
    "created": "ISO 8601 UTC timestamp",
    "last_updated": "ISO 8601 UTC timestamp",
}
_RUNNING_KEY = (
    "who is running the session now (a runner holds its run lease; the table then shows its "
    "status as `running`), null when nobody is"
)
JSON_OUTPUT: dict[str, dict[str, str]] = {
    "list": {
        "total": "how many sessions match the filters, before `--offset` and `--limit`",
        "offset": "the `--offset` given",
        "limit": "the `--limit` given, or null",
        "sessions": "the sessions shown, most recently updated first",
        **{f"sessions[].{k}": v for k, v in _SESSION_KEYS.items()},
        "sessions[].current_reviewers": "who the current phase's workflow assigns to review it "
        "(its `reviewers:`); empty: anyone",
        "sessions[].total_tokens": "tokens over every phase",
        "sessions[].total_cost": "cost in dollars over every phase",
        "sessions[].path": "the session directory",
        "sessions[].running": _RUNNING_KEY,
        "warnings": "the first problem of each session whose manifest is missing or could not be read, "
        "`path:line: field: message`",
    },
    "status": {
        **_SESSION_KEYS,
        "can_resume": "the manifest's Can Resume",
        "next_phase": "the first phase that is not done, or null",
        "next_action": "`run`, `review`, `fix` or `done`: what the session needs next",
        "completed_phases": "numbers of the completed or approved phases",
        "stale_phases": "each stale phase's number with the earlier phases it was built on that changed",
        "edited_outputs": "each phase whose output files changed by hand since it completed, with "
        "those files (relative to the session folder): kept as its output, a resume records them",
        "phases": "the manifest's phase table, one object per phase of the mode",
        "phases[].number": "phase number",
        "phases[].name": "phase name",
        "phases[].status": "the phase's lifecycle state: `pending`, `in_progress`, `failed`, `skipped`, "
        "`completed`, `awaiting_review`, `approved`, `sent_back` or `stale` (docs/lifecycle.md)",
        "phases[].started": "ISO 8601 UTC timestamp or null",
        "phases[].completed": "ISO 8601 UTC timestamp or null",
        "phases[].duration": "seconds or null",
        "metrics": "totals over the phases",
        "metrics.total_duration": "seconds",
        "metrics.total_tokens": "tokens",
        "metrics.total_cost": "dollars",
        "session_dir": "the session directory",
        "running": _RUNNING_KEY,
        **NEXT_KEYS,
    },
    "show": {
        "project_id": "the project id",
        "session_id": "the session id",
        "phases": "the phases shown: every phase that has a checkpoint, or the one `--phase` names",
        "phases[].number": "phase number",
        "phases[].name": "phase name",
        "phases[].checkpoint": "the phase's checkpoint.md",
        "phases[].feedback": "the phase's user_feedback.md, or null (also when it does not read: "
        "see `problems`)",
        "phases[].outputs": "the agent outputs (only `--agent`'s with that option), in checkpoint order",
        "phases[].problems": "the mistakes of the phase's review file when it does not read, each "
        "an object with `path`, `line`, `field` and `message` (also printed as warnings); empty "
        "when it reads",
    },
}
JSON_RECORDS: dict[str, dict[str, type]] = {
    "list": {"sessions[].running": LeaseHolder},
    "status": {"running": LeaseHolder},
    "show": {
        "phases[].checkpoint": PhaseCheckpoint,
        "phases[].feedback": UserFeedback,
        "phases[].outputs[]": AgentOutput,
    },
}


@command()
@click.argument("project")
@click.argument("session")
@click.option("--user", required=True, help="Who the session belongs to.")
@click.option("--mode", help="The execution mode (default: the workflow's first, mvp for idea_validation).")
@click.option(
    "--workflow",
    "workflow_spec",
    default=IDEA_VALIDATION.name,
    show_default=True,
    metavar="NAME|FILE",
    help="A known workflow's name, or a YAML workflow file.",
)
@base_dir_option
def new(project: str, session: str, user: str, mode: str | None, workflow_spec: str, base_dir: Path) -> None:
    """Create a session: its manifest and the phase folders of its mode.

    An existing session is never touched. A workflow read from FILE is kept in the
    session's workflow.yaml, so later commands need no --workflow.
    """
    manager = CheckpointManager(base_dir)
    workflow = manager.workflows.get(workflow_spec)
    if workflow is None:
        if not workflow_spec.endswith((".yaml", ".yml")) and not Path(workflow_spec).is_file():
            known = ", ".join(sorted(manager.workflows))
            raise click.BadParameter(
                f"{workflow_spec!r} is neither a known workflow ({known}) nor a YAML file",
                param_hint="--workflow",
            )
        workflow = load_workflow(workflow_spec)
    mode = mode or next(iter(workflow.modes))
    if mode not in workflow.modes:
        raise click.BadParameter(
            f"{mode!r} is not a mode of workflow {workflow.name!r} "
            f"(expected one of {', '.join(workflow.modes)})",
            param_hint="--mode",
        )
    directory = manager.create_session(project, session, user, workflow, mode)
    numbers = ", ".join(str(p.number) for p in workflow.phases_for(mode))
    click.echo(f"Created {project}/{session} ({workflow.name}, {mode} mode: phases {numbers}) in {directory}")
    from haytham.run.runner import missing_agents  # the runner (asyncio) only for `new`

    missing = missing_agents(workflow, workflow.callables, mode)
    if not missing:
        click.echo(f"Next: run {suggest('resume', project, session)}")
        return
    first, second = declare_agents(project, session)
    click.echo(f"Its workflow {workflow.name!r} names no callable for {', '.join(missing)}.")
    click.echo(
        f"Next: {first};\n  {second}.\n  To watch a whole run with demo agents first: {suggest('demo')}"
    )


@command("list")
@click.option("--project", help="Only this project's sessions.")
@click.option("--user", help="Only this user's sessions.")
@click.option("--status", type=click.Choice(SESSION_STATUSES), help="Only sessions with this status.")
@click.option(
    "--awaiting-review", is_flag=True, help="Only sessions waiting for a reviewer (--status awaiting_review)."
)
@click.option("--limit", type=click.IntRange(min=0), help="Show at most N sessions.", metavar="N")
@click.option(
    "--offset", type=click.IntRange(min=0), default=0, help="Skip the first N sessions.", metavar="N"
)
@mine_options
@base_dir_option
@json_option
def list_command(
    project: str | None,
    user: str | None,
    status: str | None,
    awaiting_review: bool,
    limit: int | None,
    offset: int,
    mine: bool,
    reviewer: Reviewer | None,
    base_dir: Path,
    as_json: bool,
) -> None:
    """List the sessions, most recently updated first.

    Each session's status and current phase are what its checkpoints and review files say
    now (a review written by hand or brought by git pull shows at once), remembered in an
    index while the files are unchanged, so this stays fast for many sessions; a manifest
    that cannot be read, and a session folder that holds files but no manifest, is reported
    as a warning (run haytham validate for the details, haytham doctor --fix to rebuild a
    missing manifest).
    Rows are printed as they are made: on a terminal, in columns as wide as the first 50
    rows need (narrowed to fit the terminal; a longer cell is cut with an ellipsis); piped,
    as plain aligned columns; with --json, as one JSON object whose sessions array holds one
    session a line.

    --mine (usually with --awaiting-review: your review inbox) keeps the sessions whose
    current phase the current reviewer may review: its workflow's reviewers: name them, or
    name nobody (like a path without a CODEOWNERS line, such a phase is anyone's).
    """
    if awaiting_review:
        if status not in (None, "awaiting_review"):
            raise click.UsageError(f"--awaiting-review lists awaiting_review sessions, not {status}")
        status = "awaiting_review"
    if mine and reviewer is None:
        raise click.UsageError(
            "--mine needs to know who you are: give --reviewer, set HAYTHAM_REVIEWER or "
            "review.reviewer in haytham.yaml, or configure git's user.name"
        )
    from haytham.store.scan import iter_sessions

    manager = CheckpointManager(base_dir)
    if project is not None:
        manager.project_dir(project)  # refuses an unsafe project id
    with iter_sessions(
        manager.base_dir,
        project_id=project,
        user_id=user,
        status=status,
        workflows=manager.workflows,
        reviewer=reviewer,
    ) as listing:
        filtered = bool(project or user or status or reviewer)
        _print_listing(listing, base_dir, offset, limit, as_json, filtered=filtered)


def _print_listing(
    listing: SessionListing, base_dir: Path, offset: int, limit: int | None, as_json: bool, *, filtered: bool
) -> None:
    """``haytham list``'s output, each row printed as it is made."""
    unreadable = listing.issues
    total = len(listing)
    shown = max(0, min(total - offset, total if limit is None else limit))
    first_issues = {issue.path: issue for issue in reversed(unreadable)}  # one warning a manifest
    problems = [first_issues[path] for path in dict.fromkeys(i.path for i in unreadable)]
    warnings = [str(issue) for issue in problems]
    if as_json:
        _stream_json(listing, total, offset, limit, warnings)
        return
    for issue in problems:  # an error skipped the session; a warning comes with its row
        skipped = "skipped a session whose manifest cannot be read: " if issue.is_error else ""
        click.echo(f"warning: {skipped}{issue}", err=True)
    if not shown:
        click.echo(f"No sessions under {base_dir}" + (" match" if filtered else ""))
        return
    columns = ("Project", "Session", "User", "Mode", "Status", "Current phase", "Updated", "Tokens", "Cost")
    rows = (_list_row(s) for s in listing.page(offset, limit))
    if on_terminal():  # streamed in columns fixed by the first rows: never one table of all
        stream_table(
            new_console(),
            columns,
            rows,
            numeric=2,
            styles={columns.index("Status"): status_style},
            narrow_first=(columns.index("Current phase"),),
        )
    else:  # piped: plain aligned columns, the rows made once (kept as one text each)
        widths = [len(c) for c in columns]
        made: list[str | tuple[str, ...]] = []
        for row in rows:
            widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
            joined = _CELL.join(row)
            made.append(row if joined.count(_CELL) != len(row) - 1 else joined)
        click.echo(_plain_line(columns, widths))
        for kept in made:
            click.echo(_plain_line(kept.split(_CELL) if isinstance(kept, str) else kept, widths))
    if shown < total:
        click.echo(f"Showing {offset + 1}-{offset + shown} of {total} sessions")


_CELL = "\0"
"""Between the cells of a piped row kept as one text until the widths are known (a row
with a cell that holds it is kept as it is)."""


def _running(summary: SessionSummary) -> LeaseHolder | None:
    """Who runs a listed session now (``store.lease.holder``). Only a session its files call
    ``in_progress`` can be: a runner stops at a review, a failure or the end, so the others
    cost no ``stat``."""
    return lease_holder(summary.path) if summary.status == "in_progress" else None


def _list_row(s: SessionSummary) -> tuple[str, ...]:
    """The cells of one ``haytham list`` row, as text: a session a runner is at work on is
    ``running`` (``_running``)."""
    running = _running(s) is not None
    return (
        s.project_id,
        s.session_id,
        s.user_id,
        s.execution_mode,
        RUNNING if running else s.status,
        _current(s, running),
        when(s.last_updated),
        str(s.total_tokens),
        f"${s.total_cost:.4f}",
    )


def _plain_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line of the piped listing: columns two spaces apart, the last two (numbers)
    right-aligned, as the piped table used to be drawn."""
    numeric = len(cells) - 2
    parts = [
        c.rjust(w) if i >= numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    ]
    return "  ".join(parts).rstrip()


def _stream_json(
    listing: SessionListing, total: int, offset: int, limit: int | None, warnings: list[str]
) -> None:
    """The ``--json`` object of ``list``, written a session at a time: the same keys as one
    ``json.dumps`` would give, with each session on its own line of the ``sessions`` array,
    so memory stays flat however many sessions are listed."""
    head = {"total": total, "offset": offset, "limit": limit}
    click.echo(json.dumps(head, ensure_ascii=False)[:-1] + ', "sessions": [')
    for position, summary in enumerate(listing.page(offset, limit)):
        line = json.dumps(_summary_json(summary), ensure_ascii=False, default=str)
        click.echo(("  " if position == 0 else ", ") + line)
    click.echo('], "warnings": ' + json.dumps(warnings, ensure_ascii=False) + "}")


def _current(summary: SessionSummary, running: bool = False) -> str:
    """``3 Niche Selection (stale (built on phase 2, ...))``: the phase and, unless done, its
    state (``running`` while a runner is at work on the session)."""
    text = f"{summary.current_phase} {summary.current_phase_name}".strip()
    if running and summary.status != "awaiting_review":
        return f"{text} ({RUNNING})"
    if summary.status == "completed" or summary.current_phase == 0 or not summary.current_state:
        return text
    return f"{text} ({summary.current_state})"


_LIST_KEYS = tuple(k.split(".", 1)[1] for k in JSON_OUTPUT["list"] if k.startswith("sessions[]."))
"""The keys of each session of ``list --json``: fields of ``SessionSummary``."""


def _summary_json(summary: SessionSummary) -> dict[str, Any]:
    """``plain(summary)`` limited to ``_LIST_KEYS``, made directly (one a session)."""
    data = {key: getattr(summary, key) for key in _LIST_KEYS if key != "running"}
    data["path"] = str(data["path"])
    holder = _running(summary)
    data["running"] = dataclasses.asdict(holder) if holder else None
    return data


@command()
@click.argument("project")
@click.argument("session")
@base_dir_option
@json_option
def status(project: str, session: str, base_dir: Path, as_json: bool) -> None:
    """Show a session's phases, its current phase and what to do next."""
    manager = CheckpointManager(base_dir)
    if not as_json:
        print_status(manager, project, session)
        return
    state = manager.load_session(project, session)
    data = {
        key: state[key] for key in JSON_OUTPUT["status"] if "." not in key and "[" not in key and key in state
    }
    holder = manager.running(project, session)
    data["running"] = plain(holder) if holder else None
    data["next"] = plain(next_step(manager, project, session))
    emit_json(data)


@command()
@click.argument("project")
@click.argument("session")
@click.option("--phase", type=int, metavar="N", help="Only this phase (default: every phase that has run).")
@click.option("--agent", help="Only this agent's output; piped, it is printed exactly as saved.")
@base_dir_option
@json_option
def show(
    project: str, session: str, phase: int | None, agent: str | None, base_dir: Path, as_json: bool
) -> None:
    """Show checkpoints, feedback and agent outputs.

    On a terminal the outputs are rendered as markdown; piped, they are left raw. A review
    file with a mistake does not stop it: everything else is shown, and the mistake (file,
    line, field, message) is printed as a warning on standard error; the exit code is 0.
    """
    manager = CheckpointManager(base_dir)
    workflow = manager.session_workflow(project, session)
    if phase is None and agent is not None:
        mode = manager.load_manifest(project, session).execution_mode
        owners = [p.number for p in workflow.phases_for(mode) if agent in p.agents]
        if not owners:
            raise click.ClickException(f"no phase of {project}/{session} runs agent {agent!r}")
        phase = owners[0]
    if phase is None:
        numbers = sorted(manager.load_checkpoints(project, session))
    else:
        manager.load_checkpoint(project, session, phase)  # a phase that never ran is an error here
        numbers = [phase]
    shown = []
    problems: dict[int, list[Issue]] = {}
    handle = manager.session(project, session)
    for number in numbers:
        checkpoint = manager.load_checkpoint(project, session, number)
        names = [agent] if agent else list(manager.get_phase_outputs(project, session, [number])[number])
        outputs = [manager.load_agent_output(project, session, number, name) for name in names]
        feedback = handle.review(number, problems.setdefault(number, []))  # a mistake is shown, not fatal
        shown.append((checkpoint, feedback, outputs))
    for issue in (issue for found in problems.values() for issue in found):
        click.echo(f"warning: {issue}", err=True)
    if as_json:
        phases = [
            {
                "number": c.phase_number,
                "name": c.phase_name,
                "checkpoint": plain(c),
                "feedback": plain(f),
                "outputs": plain(o),
                "problems": [
                    {"path": str(i.path), "line": i.line, "field": i.field, "message": i.message}
                    for i in problems.get(c.phase_number, [])
                ],
            }
            for c, f, o in shown
        ]
        emit_json({"project_id": project, "session_id": session, "phases": phases})
        return
    console = new_console()
    if agent is not None and not console.is_terminal:
        click.echo(shown[0][2][0].content, nl=False)  # byte for byte, for redirecting to a file
        return
    if not shown:
        click.echo(f"No phase of {project}/{session} has run yet")
    for checkpoint, feedback, outputs in shown:
        _print_phase(console, checkpoint, feedback, outputs, with_details=agent is None, workflow=workflow)


def _print_phase(
    console: Console,
    checkpoint: PhaseCheckpoint,
    feedback: UserFeedback | None,
    outputs: Sequence[AgentOutput],
    *,
    with_details: bool,
    workflow: Workflow,
) -> None:
    """One phase for people: its checkpoint in a few lines, its feedback, then its outputs."""
    title = f"Phase {checkpoint.phase_number}: {checkpoint.phase_name} ({checkpoint.status})"
    _heading(console, title, "=")
    if with_details:
        click.echo(
            f"Attempt {checkpoint.retry_count + 1}; started {when(checkpoint.started)}, "
            f"completed {when(checkpoint.completed)}, {seconds(durations.phase_seconds(checkpoint))}; "
            f"tokens {checkpoint.total_tokens or 0}, cost ${checkpoint.cost or 0:.4f}"
        )
        click.echo("Agents: " + ", ".join(f"{a.agent_name} {a.status}" for a in checkpoint.agents))
        for error in checkpoint.errors:
            click.echo(f"Error: {error}")
        if feedback is not None:
            click.echo(describe_feedback(feedback, indent=""))
    for output in outputs:
        facts = [output.status, output.model or "model unknown"]
        if output.input_tokens is not None or output.output_tokens is not None:
            facts.append(f"{output.input_tokens or 0} in / {output.output_tokens or 0} out tokens")
        _heading(console, f"{output.agent_name}: {', '.join(facts)}", "-")
        if output.tries:
            most = workflow.policy_of(output.agent_name).retry.max_attempts
            click.echo(f"Tries: {describe_tries(output.tries, most)}")
        if output.error_message is not None:
            click.echo(f"Error: {output.error_type}: {output.error_message}")
        if console.is_terminal:
            from rich.markdown import Markdown  # imported here: it is slow to load and only show needs it

            console.print(Markdown(output.content))
        else:
            click.echo(output.content, nl=not output.content.endswith("\n"))


def _heading(console: Console, title: str, rule: str) -> None:
    if console.is_terminal:
        from rich.text import Text

        console.rule(Text(title, style="bold" if rule == "=" else ""), characters="═" if rule == "=" else "─")
    else:
        click.echo(f"{rule * 3} {title} {rule * 3}")


COMMANDS: list[click.Command] = [new, list_command, status, show]
"""The commands for ``haytham.cli.main`` to register."""
