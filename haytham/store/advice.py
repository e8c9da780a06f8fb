"""What a session needs next, and the command a person types for it: the one home of the
"Next:" advice that ``haytham status``, ``feedback``, ``resume`` and the session page show.

``next_step`` reads the lifecycle's state (``CheckpointManager.state``) and says where the
next run would start or stop, and why; ``advise`` says it as a sentence with the exact
command line. Each caller builds its command lines its own way (the CLI adds the
``--base-dir`` it was given), so every view words the same advice alike. Nothing here runs
or writes anything.

A session that another framework runs (``run_by_of``: a LangGraph thread, a CrewAI flow run)
is never resumed by haytham: its advice says to answer the review with haytham and to resume
the graph or flow with that framework's own snippet (``haytham.format.run_by``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from haytham.errors import InvalidArgumentError
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.run_by import RunBy, recognise, run_by
from haytham.frozen import frozen
from haytham.records import AgentOutput
from haytham.store import interrupted
from haytham.store.manager import CheckpointManager


@frozen
class NextStep:
    """Where the next ``run`` of a session would stop or start, and why."""

    action: Literal["review", "resume", "wait", "fix", "done"]
    phase: int | None
    reason: Literal[
        "awaiting_review",
        "tries_ran_out",
        "sent_back",
        "stale",
        "failed",
        "interrupted",
        "ready",
        "running",
        "invalid_feedback",
        "done",
    ]
    detail: str = ""
    """The agents whose tries ran out (``tries_ran_out``: the phase awaits a person under
    ``on_exhausted: await_review``), the phase's errors, what is wrong with its feedback
    file, what a stale phase was built on, or who is running the session (``LeaseHolder.describe``)."""
    feedback_file: Path | None = None


def next_step(manager: CheckpointManager, project_id: str, session_id: str) -> NextStep:
    """What the session needs next, read from ``manager.state`` (the lifecycle): the phase the
    next run starts with or stops at, and why. Nothing is run or written.

    While a runner holds the session's run lease (``manager.running``), a phase it is to run
    is ``running``: the advice is to wait, never to resume what is not interrupted.
    """
    view = manager.state(project_id, session_id)
    current = view.current
    if current is None:
        return NextStep("done", None, "done")
    number = current.number
    if view.next_action == "run":
        holder = manager.running(project_id, session_id)
        if holder is not None:
            return NextStep("wait", number, "running", holder.describe())
    path = manager.phase_dir(project_id, session_id, number) / FEEDBACK_FILE
    if view.next_action == "fix":
        return NextStep("fix", number, "invalid_feedback", current.problem or "", path)
    if current.state == "awaiting_review":
        checkpoint = manager.load_checkpoints(project_id, session_id).get(number)
        if checkpoint is not None and checkpoint.status == "failed":  # on_exhausted: await_review
            failed = ", ".join(a.agent_name for a in checkpoint.agents if a.status == "failed")
            return NextStep("review", number, "tries_ran_out", failed, path)
        return NextStep("review", number, "awaiting_review", feedback_file=path)
    if current.state == "sent_back":
        return NextStep("resume", number, "sent_back", feedback_file=path)
    if current.state == "stale":
        return NextStep("resume", number, "stale", current.describe())
    if current.state == "failed":
        errors = manager.load_checkpoint(project_id, session_id, number).errors
        return NextStep("resume", number, "failed", "; ".join(errors))
    if current.state != "in_progress":
        return NextStep("resume", number, "ready")
    return NextStep("resume", number, "interrupted", _uncertain(manager, project_id, session_id, number))


def _uncertain(manager: CheckpointManager, project_id: str, session_id: str, number: int) -> str:
    """The agents of an interrupted phase that may have run (``store.interrupted``), named as a
    person reads them; empty when every started agent's output is complete, or none started."""
    checkpoint = manager.load_checkpoints(project_id, session_id).get(number)
    outputs: dict[str, AgentOutput | None] = {}
    for name in interrupted.started_agents(checkpoint):
        try:
            outputs[name] = manager.load_agent_output(project_id, session_id, number, name)
        except FileNotFoundError:
            outputs[name] = None
    found = interrupted.may_have_run(checkpoint, outputs)
    if not found:
        return ""
    return f"{', '.join(found)} {interrupted.MAY_HAVE_RUN} (started, never completed)"


@frozen
class Advice:
    """What a person should do next with a session, and the command for it."""

    action: str
    """``review``, ``resume``, ``wait``, ``fix`` or ``done``."""
    phase: int | None
    message: str
    """The advice as a sentence, with the command to type."""
    command: str | None = None
    """The one command line that does it (None when the advice is to wait, to fix a file or
    to resume a graph or flow that another framework runs)."""
    resume: str | None = None
    """The Python that resumes the framework that runs the session (``RunBy.resume``), when
    the advice names it; None for haytham's own sessions."""


def run_by_of(manager: CheckpointManager, project: str, session: str) -> RunBy | None:
    """The framework that runs the session in haytham's stead: the one its workflow copy's
    ``run_by`` names, or, for a session written before that mark, the one whose workflow
    name and folder it has (``run_by.recognise``: one ``stat``, only for such a name); None
    for haytham's own sessions."""
    workflow = manager.session_workflow(project, session)
    if workflow.run_by is not None:
        return run_by(workflow.run_by)
    directory = manager.session_dir(project, session)
    return recognise(workflow.name, lambda folder: (directory / folder).is_dir())


def refuse_outside(
    manager: CheckpointManager,
    project: str,
    session: str,
    what: str,
    *,
    command: Callable[..., str] | None = None,
) -> None:
    """InvalidArgumentError when another framework runs the session (``run_by_of``):
    haytham cannot ``what`` it (resume, re-run and fork run haytham's phases, which such a
    session is not run by); the message says how to go on instead (``advise``)."""
    outside = run_by_of(manager, project, session)
    if outside is not None:
        advice = advise(manager, project, session, command=command or command_line)
        raise InvalidArgumentError(
            f"{project}/{session} is run by {outside.label}, not haytham: it cannot {what} here. "
            f"Next: {advice.message}",
            field="session",
        )


def command_line(*words: str) -> str:
    """``haytham`` with ``words``, quoted for a POSIX shell: the command a person types."""
    return shlex.join(["haytham", *words])


def advise(
    manager: CheckpointManager,
    project: str,
    session: str,
    *,
    command: Callable[..., str] = command_line,
) -> Advice:
    """``next_step`` said as a sentence with the exact command to type (``command(*words)``
    makes each command line: the CLI's adds the ``--base-dir`` it was given)."""
    step = next_step(manager, project, session)
    number = step.phase
    outside = run_by_of(manager, project, session)
    if outside is not None and step.reason not in ("invalid_feedback", "running"):
        return _advise_outside(manager, project, session, step, outside, command)
    resume = command("resume", project, session)
    run: str | None = resume
    if step.reason == "invalid_feedback":
        message, run = f"phase {number}'s feedback has a mistake: {step.detail}", None
    elif step.reason == "awaiting_review":
        run = command("feedback", project, session, str(number), "--approve")
        message = f"phase {number} awaits review: edit {step.feedback_file} or run {run}"
    elif step.reason == "tries_ran_out":
        run = command("feedback", project, session, str(number), "--reject")
        edit = command(
            "feedback", project, session, str(number), "--edit", step.detail.split(", ")[0], "--approve"
        )
        message = (
            f"phase {number} awaits review: the tries of {step.detail} ran out; run {run} to run it "
            f"again, or write the output yourself and approve it with {edit}, or skip it in "
            f"{step.feedback_file}"
        )
    elif step.reason == "sent_back":
        message = f"phase {number} was sent back: run {resume} to run it again with the comments"
    elif step.reason == "stale":
        message = f"phase {number} is {step.detail}: run {resume} to run it again"
    elif step.reason == "running":
        name = manager.session_workflow(project, session).phase(number).name
        watch = command("status", project, session)
        message = (
            f"phase {number} ({name}) is being run by {step.detail}: "
            f"wait for the run to stop ({watch} shows where it is)"
        )
        run = None
    elif step.reason == "failed":
        why = f" ({step.detail})" if step.detail else ""
        message = f"phase {number} failed{why}: fix the cause, then run {resume}"
    elif step.reason in ("interrupted", "ready"):
        name = manager.session_workflow(project, session).phase(number).name
        verb = "was interrupted" if step.reason == "interrupted" else "is ready to run"
        why = f" ({step.detail})" if step.detail else ""
        message = f"phase {number} ({name}) {verb}{why}: run {resume}"
    else:
        run = command("show", project, session)
        message = f"every phase is done: read the results with {run}"
    return Advice(step.action, number, message, run)


def _advise_outside(
    manager: CheckpointManager,
    project: str,
    session: str,
    step: NextStep,
    outside: RunBy,
    command: Callable[..., str],
) -> Advice:
    """The advice for a session another framework runs: a review is answered with haytham,
    and the graph or flow is resumed with the framework's own code, never ``haytham resume``."""
    number = step.phase
    snippet = outside.resume
    resume = f"resume the {outside.runs} with {snippet}"
    if step.reason in ("awaiting_review", "tries_ran_out"):
        run = command("feedback", project, session, str(number), "--approve")
        message = f"phase {number} awaits review: edit {step.feedback_file} or run {run}; then {resume}"
        return Advice("review", number, message, run, snippet)
    if step.reason == "sent_back":
        message = (
            f"phase {number} was sent back: {resume}, which hands it the comments "
            f"({outside.label} runs this session, not haytham)"
        )
        return Advice("resume", number, message, None, snippet)
    if step.reason == "done":
        show = command("show", project, session)
        message = (
            f"every phase is done: if the {outside.runs} still waits for its last review, {resume}; "
            f"read the results with {show}"
        )
        return Advice("done", None, message, show, snippet)
    name = manager.session_workflow(project, session).phase(number).name
    if step.reason == "stale":
        verb, why = f"is {step.detail}", ""
    else:
        verbs = {"ready": "is not reached yet", "interrupted": "was interrupted", "failed": "failed"}
        verb = verbs.get(step.reason, f"is {step.reason}")
        why = f" ({step.detail})" if step.detail else ""
    message = (
        f"phase {number} ({name}) {verb}{why}: {outside.label} runs this session, not haytham: "
        f"run the {outside.runs} (a paused one resumes with {snippet})"
    )
    return Advice(step.action, number, message, None, snippet)
