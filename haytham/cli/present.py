"""How a session is told to a person, in the words of more than one command.

``status`` and ``demo`` print the same phase table; ``status``, ``feedback``, ``resume`` and
``demo`` end with the same advice (``next_step``); ``show`` and ``feedback`` describe a
feedback file alike. Those pieces live here, above ``haytham.cli.common`` and below the
command modules, so that no command module imports another.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING

import click

from haytham.cli.common import (
    cell,
    cell_text,
    new_console,
    on_terminal,
    plain_table,
    print_table,
    seconds,
    suggest,
    table,
    when,
)
from haytham.format import FEEDBACK
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.tries import describe_tries
from haytham.records import UserFeedback
from haytham.store.advice import Advice, advise
from haytham.store.lifecycle import RUNNING
from haytham.store.manager import CheckpointManager

if TYPE_CHECKING:  # rich is imported only to draw on a terminal (or an unusual piped table)
    from rich.text import Text

    from haytham.format.workflow import Workflow

NEXT_KEYS = {
    "next": "what to do next, an object",
    "next.action": "`review`, `resume`, `wait` (a runner is at work on it), `fix` or `done`",
    "next.phase": "the phase it concerns, or null when every phase is done",
    "next.message": "the same advice as a sentence with the command to run",
    "next.command": "the command line that does it, or null when the advice is to wait, to fix a file "
    "or to resume a graph or flow that another framework runs",
    "next.resume": "the Python that resumes the LangGraph graph or CrewAI flow that runs the session "
    "(docs/langgraph.md, docs/crewai.md), or null for haytham's own sessions",
}
"""The ``--json`` keys of ``next_step``'s advice, for the commands that print it."""

_STATUS_STYLES = {
    "completed": "green",
    "approved": "green",
    "failed": "red",
    "in_progress": "yellow",
    "running": "blue",
    "awaiting_review": "cyan",
    "sent_back": "yellow",
    "stale": "yellow",
    "requires_retry": "yellow",
}


def status_cell(status: str, style: str | None = None) -> Text:
    """A status cell, coloured on a terminal (a piped console drops the style): the colour
    of ``status``, or of ``style`` when the text says more than the status."""
    from rich.text import Text

    return Text(status, style=status_style(status) if style is None else style)


def status_style(status: str) -> str:
    """The rich style of ``status`` in tables (``""``: none)."""
    return _STATUS_STYLES.get(status, "")


def next_step(manager: CheckpointManager, project: str, session: str) -> Advice:
    """The library's next step for the session, said as a sentence with the command to run
    (``advice.advise``, the one wording the session page shows too)."""
    return advise(manager, project, session, command=suggest)


def declare_agents(project: str, session: str) -> list[str]:
    """The two ways to say which callables play a session's agents, each with its command."""
    once = suggest("resume", project, session, "--agents", "NAME=module:function")
    new = suggest("new", "PROJECT", "SESSION", "--user", "USER", "--workflow", "FILE")
    return [
        f"name them for a run: {once} (once per agent, or --agents module:MAPPING)",
        f"or name them once in a workflow file's agents: mapping (NAME: module:function, see "
        f"docs/formats.md) and create sessions from it: {new}",
    ]


def print_status(manager: CheckpointManager, project: str, session: str) -> None:
    """The session's phase table, current phase, totals and next step, for people: the
    table drawn by rich on a terminal, written as plain columns when piped."""
    state = manager.load_session(project, session)
    view = manager.state(project, session)
    holder = manager.running(project, session)
    shown = f"{RUNNING} ({holder.describe()})" if holder else state["status"]
    click.echo(
        f"Session {project}/{session}: user {state['user_id']}, {state['workflow_type']} "
        f"({state['execution_mode']} mode), {shown}"
    )
    running_phase = view.current.number if holder and view.current and view.next_action == "run" else None
    columns = ("Phase", "Name", "Status", "Started", "Completed", "Duration")
    rows = [
        (
            cell_text(row["number"]),
            cell_text(row["name"]),
            RUNNING if row["number"] == running_phase else view.phase(row["number"]).describe(),
            when(row["started"]),
            when(row["completed"]),
            seconds(row["duration"]),
        )
        for row in state["phases"]
    ]
    styles = [
        _STATUS_STYLES.get(RUNNING if row["number"] == running_phase else row["status"], "")
        for row in state["phases"]
    ]
    lines = None if on_terminal() else plain_table(columns, rows)
    if lines is not None:
        click.echo("\n".join(lines))
    else:
        console = new_console()
        phases = table(console, *columns)
        for (number, name, described, *times), style in zip(rows, styles, strict=True):
            phases.add_row(cell(number), cell(name), status_cell(described, style), *map(cell, times))
        print_table(console, phases)
    current = "none: every phase is done"
    if view.current is not None:
        described = RUNNING if view.current.number == running_phase else view.current.describe()
        current = f"{view.current.number} {view.current.name} ({described})"
    advice = next_step(manager, project, session)
    metrics = state["metrics"]
    click.echo(f"Current phase: {current}")
    for line in tries_lines(manager, project, session):
        click.echo(line)
    if view.current is not None and view.current.state == "awaiting_review":
        path = manager.phase_dir(project, session, view.current.number) / FEEDBACK_FILE
        for issue in FEEDBACK.read_path(path)[1] if path.is_file() else ():
            if not issue.is_error:  # e.g. comments written while Reviewed: false do not count yet
                click.echo(f"Note: {issue}")
    click.echo(
        f"Totals: {metrics['total_tokens']} tokens, ${metrics['total_cost']:.4f}, "
        f"{seconds(metrics['total_duration'])}"
    )
    click.echo(f"Next: {advice.message}")


def tries_lines(
    manager: CheckpointManager, project: str, session: str, phases: Container[int] | None = None
) -> list[str]:
    """``Tries: phase 1 writer succeeded on try 3 of 5 after 2 rate limits (waited 41 s)``
    for every agent (of ``phases``, when given) that needed more than one try or whose
    tries ran out. Only the outputs of agents that run under a retry policy or a timeout
    are read."""
    workflow = manager.session_workflow(project, session)
    if not any(workflow.policy_of(agent).keeps_tries for agent in _agents(workflow)):
        return []  # no checkpoint read for a workflow without retry policies
    lines = []
    for number, checkpoint in sorted(manager.load_checkpoints(project, session).items()):
        if phases is not None and number not in phases:
            continue
        for run in checkpoint.agents:
            policy = workflow.policy_of(run.agent_name)
            if not policy.keeps_tries or run.status == "pending":
                continue
            try:
                output = manager.load_agent_output(project, session, number, run.agent_name)
            except FileNotFoundError:
                continue
            if len(output.tries) > 1 or (output.tries and output.tries[-1].outcome != "completed"):
                described = describe_tries(output.tries, policy.retry.max_attempts)
                lines.append(f"Tries: phase {number} {run.agent_name} {described}")
    return lines


def _agents(workflow: Workflow) -> list[str]:
    return list(dict.fromkeys(agent for phase in workflow.phases for agent in phase.agents))


def describe_feedback(feedback: UserFeedback, *, indent: str = "  ") -> str:
    """What was understood from a feedback file, one fact a line (comments indented)."""
    yes_no = {True: "yes", False: "no"}
    comments = feedback.comments.split("\n") if feedback.comments else ["none"]
    lines = [
        f"Reviewed: {yes_no[feedback.reviewed]}; approved: {yes_no[feedback.approved]}; "
        f"action: {feedback.action}; retry count: {feedback.retry_count}",
        f"Comments: {comments[0]}",
        *(f"  {line}" if line else "" for line in comments[1:]),
        "Requested changes: " + ("none" if not feedback.requested_changes else ""),
        *(f"  - {change}" for change in feedback.requested_changes),
    ]
    if feedback.notes:
        notes = feedback.notes.split("\n")
        at = lines.index("Requested changes: " + ("none" if not feedback.requested_changes else ""))
        lines[at:at] = [
            "Your own text (passed to the agents after the comments):",
            *(f"  {line}" if line else "" for line in notes),
        ]
    if feedback.reviewer is not None:
        lines.insert(1, f"Reviewer: {feedback.reviewer}")
    if feedback.justification is not None:
        lines.insert(1 + (feedback.reviewer is not None), f"Justification: {feedback.justification}")
    if feedback.raised_budget is not None:
        at = 1 + (feedback.reviewer is not None) + (feedback.justification is not None)
        lines.insert(at, f"Raised budget: {feedback.raised_budget}")
    return "\n".join(indent + line if line else "" for line in lines)
