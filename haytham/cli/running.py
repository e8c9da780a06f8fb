"""The commands that run agents: ``demo`` (built-in demo agents), ``resume`` and ``rerun``
(the session's own), and ``runner`` (a worker host's loop over a shared git remote).

Each saves every agent output as it arrives, stops at review gates, and ends with the
session's status and what to do next; exit code 1 when the run fails, is refused (another
process runs the session), or a commit asked for with --commit fails.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from haytham.cli.common import base_dir_option, command, emit_json, json_option, notified, plain, suggest
from haytham.cli.git import Commits, commit_options
from haytham.cli.present import NEXT_KEYS, declare_agents, next_step, print_status
from haytham.errors import HaythamError
from haytham.format.tries import describe_tries
from haytham.format.workflow import IDEA_VALIDATION, Workflow
from haytham.git.repository import DEFAULT_REMOTE
from haytham.run.demo import (
    DEMO_PROJECT,
    REVIEW_MODES,
    DemoEvent,
    last_session_id,
    next_session_id,
    run_demo,
)
from haytham.run.runner import Agent, PhaseRunner, load_callable, missing_agents, resolve_agents
from haytham.run.worker import Worker
from haytham.store.advice import refuse_outside
from haytham.store.manager import CheckpointManager

JSON_OUTPUT: dict[str, dict[str, str]] = {
    "rerun": {
        "status": "`completed`, `awaiting_review` or `failed`",
        "phase": "the phase the run stopped at, or null",
        "feedback_file": "the file to edit when a phase awaits review, or null",
        "error": "why the run failed, or null",
        "ran_agents": "`phase:agent` for every agent this run called, in order",
        **NEXT_KEYS,
    },
    "resume": {
        "status": "`completed`, `awaiting_review` or `failed`",
        "phase": "the phase the run stopped at, or null",
        "feedback_file": "the file to edit when a phase awaits review, or null",
        "error": "why the run failed, or null",
        "ran_agents": "`phase:agent` for every agent this run called, in order",
        **NEXT_KEYS,
    },
    "runner": {
        "worker": "this worker's name (host:pid unless --worker names it)",
        "runs": "every session run, in order: [project, session, how the run ended]",
        "agents_run": "how many agents this worker ran",
        "claims_lost": "claims lost to another worker (it pushed its claim first)",
        "takeovers": "sessions taken over from a worker whose claim had expired",
        "push_retries": "pushes rejected because another machine pushed first, then retried",
        "commits": "commits this worker made",
        "syncs": "syncs with the remote",
        "stopped": "true when the loop ended on SIGTERM",
    },
}
"""The ``--json`` keys of ``resume``, ``rerun`` and ``runner``, in the form of
``haytham.cli.main.JSON_OUTPUT``."""


@command()
@base_dir_option
@click.option(
    "--mode",
    type=click.Choice(sorted(IDEA_VALIDATION.modes)),
    default="mvp",
    show_default=True,
    help="mvp runs phases 1, 2, 3, 6 and 7; full runs all seven.",
)
@click.option(
    "--review",
    type=click.Choice(REVIEW_MODES),
    default="approve",
    show_default=True,
    help="At a review gate: approve, send back once with comments first, or stop for you.",
)
@click.option("--session", help="The session id (default: the next free idea-NNN).")
@click.option("--resume", is_flag=True, help="Continue --session or the latest demo session (in its mode).")
@click.option(
    "--crash-after",
    type=click.IntRange(min=1),
    metavar="N",
    help="Kill the process (exit 3) right after the Nth saved output.",
)
@commit_options
def demo(
    base_dir: Path,
    mode: str,
    review: str,
    session: str | None,
    resume: bool,
    crash_after: int | None,
    commit: bool,
    push: bool,
    remote: str,
) -> None:
    """Run the built-in idea_validation workflow with local demo agents.

    The agents are deterministic and make no network calls. The session goes into project
    "demo". Exit codes: 0 done or awaiting review, 1 failed, 3 crashed on purpose.
    """
    manager = notified(CheckpointManager(base_dir))
    session_id = session or (last_session_id(manager) if resume else next_session_id(manager))
    if session_id is None:
        raise click.ClickException(f"there is no demo session under {base_dir} to resume")

    def show(event: DemoEvent) -> None:
        click.echo(str(event))  # click.echo flushes: the line is out before a crash_after exit

    commits = Commits(manager, commit, push, remote)
    commits.pull()
    result = run_demo(
        manager, session_id, mode, review, resume=resume, crash_after=crash_after, on_event=show
    )
    click.echo()
    print_status(manager, DEMO_PROJECT, session_id)
    committed = commits.finish()
    click.get_current_context().exit(1 if result.status == "failed" or not committed else 0)


_AGENTS_OPTION = click.option(
    "--agents",
    "agent_specs",
    multiple=True,
    metavar="NAME=MODULE:FUNCTION",
    help="The callable that plays agent NAME (repeatable). Also MODULE:OBJECT: a mapping of "
    "agent names to callables, or one callable for every agent no other --agents names. "
    "Overrides the agents: of the session's workflow.",
)


@command()
@click.argument("project")
@click.argument("session")
@_AGENTS_OPTION
@commit_options
@base_dir_option
@json_option
def resume(
    project: str,
    session: str,
    agent_specs: tuple[str, ...],
    commit: bool,
    push: bool,
    remote: str,
    base_dir: Path,
    as_json: bool,
) -> None:
    """Continue a session until it is done or stops for review.

    Each agent is played by the callable that --agents names, else by the one the session's
    workflow names in its agents: mapping (module:function, imported now). A session with
    an agent that neither names is refused before anything is written. Agent outputs saved
    by an earlier run are kept, not redone; a phase sent back or stale (built on outputs
    that changed since) runs again, its previous run kept as an attempt. Exit code 1 when
    the run fails or is refused; a session another process is running is refused, naming
    that process. With --commit each phase finished and attempt archived is one commit;
    with --push the commits are pushed at the end (haytham sync).
    """
    _run(project, session, agent_specs, base_dir, as_json, from_phase=None, git=(commit, push, remote))


@command()
@click.argument("project")
@click.argument("session")
@click.option(
    "--from-phase",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="The first phase to run again; every later phase runs again too.",
)
@_AGENTS_OPTION
@commit_options
@base_dir_option
@json_option
def rerun(
    project: str,
    session: str,
    from_phase: int,
    agent_specs: tuple[str, ...],
    commit: bool,
    push: bool,
    remote: str,
    base_dir: Path,
    as_json: bool,
) -> None:
    """Run phase N and every later phase again, keeping their runs as attempts.

    The agents are found as resume finds them, and a session with an agent that has none
    is refused before anything is written. Exit code 1 when the run fails or is refused.
    """
    _run(project, session, agent_specs, base_dir, as_json, from_phase=from_phase, git=(commit, push, remote))


def _run(
    project: str,
    session: str,
    agent_specs: tuple[str, ...],
    base_dir: Path,
    as_json: bool,
    *,
    from_phase: int | None,
    git: tuple[bool, bool, str] = (False, False, DEFAULT_REMOTE),
) -> None:
    """``resume`` and ``rerun``: resolve the agents, run, say where the run stopped."""
    manager = notified(CheckpointManager(base_dir))
    commits = Commits(manager, *git)
    commits.pull()
    manager.recover(project, session)  # the workflow and mode read next are the whole change's
    workflow = manager.session_workflow(project, session)
    refuse_outside(manager, project, session, "be run", command=suggest)
    mode = manager.load_manifest(project, session).execution_mode
    if from_phase is not None:
        workflow.phase_in_mode(from_phase, mode)
    if os.getcwd() not in sys.path:  # a project's own agents module, as python -m would find it
        sys.path.insert(0, os.getcwd())
    agents = resolve_agents(workflow, _given_agents(agent_specs, workflow))
    missing = missing_agents(workflow, agents, mode)
    if missing:
        raise click.ClickException(
            f"{project}/{session} was not run: its workflow {workflow.name!r} names no callable for "
            f"{', '.join(missing)}; {'; '.join(declare_agents(project, session))}"
        )

    def saved(phase: int, agent: str) -> None:
        if not as_json:
            said = _tries_said(manager, project, session, workflow, phase, agent)
            click.echo(f"  saved phase {phase} {agent}{said}")

    runner = PhaseRunner(manager, workflow, agents, on_output_saved=saved, autocommit=commits.auto)
    if not as_json:
        again = f" from phase {from_phase}" if from_phase is not None else ""
        click.echo(f"{'Re-running' if from_phase is not None else 'Resuming'} {project}/{session}{again}")
    if from_phase is None:
        result = runner.run(project, session)
    else:
        result = runner.rerun(project, session, from_phase)
    step = next_step(manager, project, session)
    if as_json:
        emit_json({**plain(result), "next": plain(step)})
    else:
        click.echo(f"Result: {result}")
        click.echo(f"Next: {step.message}")
    committed = commits.finish()
    click.get_current_context().exit(1 if result.status == "failed" or not committed else 0)


def _given_agents(specs: Sequence[str], workflow: Workflow) -> dict[str, Agent]:
    """The agents ``--agents`` names: ``NAME=module:function`` first, then mappings, then a
    callable for every agent still without one."""
    names = missing_agents(workflow, {})
    named: dict[str, Agent] = {}
    mapped: dict[str, Agent] = {}
    everyone: Agent | None = None
    for spec in specs:
        name, equals, target = spec.partition("=")
        if not equals:
            name, target = "", spec
        elif name not in names:
            raise click.BadParameter(
                f"{name!r} is not an agent of workflow {workflow.name!r} (agents are {', '.join(names)})",
                param_hint="--agents",
            )
        try:
            found = load_callable(target)
        except HaythamError as error:
            raise click.BadParameter(str(error), param_hint="--agents") from None
        if name and callable(found):
            named[name] = found
        elif not name and isinstance(found, Mapping):
            mapped.update(found)
        elif not name and callable(found):
            everyone = found
        else:
            wanted = "a function" if name else "a mapping of agent names to callables, or a function"
            raise click.BadParameter(
                f"{target!r} is a {type(found).__name__}, not {wanted}", param_hint="--agents"
            )
    agents = {**mapped, **named}
    if everyone is not None:
        agents.update({name: everyone for name in names if name not in agents})
    return agents


@command()
@click.option(
    "--remote", default=DEFAULT_REMOTE, show_default=True, metavar="NAME", help="The shared remote."
)
@click.option("--project", help="Only sessions of this project.")
@click.option("--max", "max_sessions", type=click.IntRange(min=1), metavar="N", help="Stop after N runs.")
@_AGENTS_OPTION
@click.option(
    "--claim-seconds",
    type=click.FloatRange(min=1),
    default=3600.0,
    show_default=True,
    metavar="S",
    help="How long a claim holds; after it another worker may take the session over.",
)
@click.option(
    "--poll",
    "poll_seconds",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    metavar="S",
    help="Seconds to wait before looking again when no session has work.",
)
@click.option(
    "--worker",
    help="This worker's name in claims and commits (default: host:pid). Names may repeat: each "
    "runner also claims with a random id of its own, so two runners never share a claim.",
)
@click.option("--until-idle", is_flag=True, help="Stop when no session has work for a runner.")
@click.option(
    "--setup-driver", is_flag=True, help="Configure haytham's merge driver in this clone if needed."
)
@base_dir_option
@json_option
def runner(
    remote: str,
    project: str | None,
    max_sessions: int | None,
    agent_specs: tuple[str, ...],
    claim_seconds: float,
    poll_seconds: float,
    worker: str | None,
    until_idle: bool,
    setup_driver: bool,
    base_dir: Path,
    as_json: bool,
) -> None:
    """Work through sessions as one worker host of many sharing a git remote.

    Each turn: sync with the remote; claim a session that has work for a runner (not
    awaiting review, not complete) by pushing a claim file; run it until it stops; release
    the claim and push. The push decides which worker wins a session; a loser is told who
    holds it and until when. A claim older than --claim-seconds may be taken over. SIGTERM
    stops the loop cleanly at the next safe point, releasing its claim. Agents are found as
    resume finds them. See docs/many-machines.md.
    """
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    manager = notified(CheckpointManager(base_dir))

    def agents_for(workflow: Workflow) -> Mapping[str, Agent]:
        return resolve_agents(workflow, _given_agents(agent_specs, workflow))

    loop = Worker(
        manager,
        agents_for,
        remote=remote,
        project=project,
        max_sessions=max_sessions,
        claim_seconds=claim_seconds,
        poll_seconds=poll_seconds,
        worker=worker,
        set_up_driver=setup_driver,
        until_idle=until_idle,
        on_message=None if as_json else click.echo,
    )
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: loop.stop())
    try:
        report = loop.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        emit_json(plain(report))
        return
    click.echo(
        f"Runner {report.worker} stopped{' (SIGTERM)' if report.stopped else ''}: {len(report.runs)} runs, "
        f"{report.agents_run} agents, {report.commits} commits, {report.claims_lost} claims lost, "
        f"{report.takeovers} takeovers, {report.push_retries} push retries"
    )


COMMANDS: list[click.Command] = [demo, resume, rerun, runner]
"""The commands for ``haytham.cli.main`` to register."""


def _tries_said(
    manager: CheckpointManager, project: str, session: str, workflow: Workflow, phase: int, agent: str
) -> str:
    """`` (succeeded on try 3 of 5 after 2 rate limits (waited 4 s))`` for an agent that
    needed more than one try or whose tries ran out; empty otherwise (and without a read
    for an agent under no retry policy or timeout)."""
    policy = workflow.policy_of(agent)
    if not policy.keeps_tries:
        return ""
    tries = manager.load_agent_output(project, session, phase, agent).tries
    if len(tries) < 2 and all(found.outcome == "completed" for found in tries):
        return ""
    return f" ({describe_tries(tries, policy.retry.max_attempts)})"
