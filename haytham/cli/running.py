"""The commands that run agents: ``demo`` (built-in demo agents) and ``resume`` (any agents).

Both save every agent output as it arrives, stop at review gates, and end with the session's
status and what to do next; exit code 1 when the run fails.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from haytham.cli.common import base_dir_option, command, emit_json, json_option, new_console, plain
from haytham.cli.present import NEXT_KEYS, next_step, print_status
from haytham.format.workflow import IDEA_VALIDATION
from haytham.run.demo import (
    DEMO_AGENTS,
    DEMO_PROJECT,
    REVIEW_MODES,
    DemoEvent,
    last_session_id,
    next_session_id,
    run_demo,
)
from haytham.run.runner import Agent, PhaseRunner
from haytham.store.manager import CheckpointManager

JSON_OUTPUT: dict[str, dict[str, str]] = {
    "resume": {
        "status": "`completed`, `awaiting_review` or `failed`",
        "phase": "the phase the run stopped at, or null",
        "feedback_file": "the file to edit when a phase awaits review, or null",
        "error": "why the run failed, or null",
        "ran_agents": "`phase:agent` for every agent this run called, in order",
        **NEXT_KEYS,
    },
}
"""The ``--json`` keys of ``resume``, in the form of ``haytham.cli.main.JSON_OUTPUT``."""


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
def demo(
    base_dir: Path, mode: str, review: str, session: str | None, resume: bool, crash_after: int | None
) -> None:
    """Run the built-in idea_validation workflow with local demo agents.

    The agents are deterministic and make no network calls. The session goes into project
    "demo". Exit codes: 0 done or awaiting review, 1 failed, 3 crashed on purpose.
    """
    manager = CheckpointManager(base_dir)
    session_id = session or (last_session_id(manager) if resume else next_session_id(manager))
    if session_id is None:
        raise click.ClickException(f"there is no demo session under {base_dir} to resume")

    def show(event: DemoEvent) -> None:
        click.echo(str(event))  # click.echo flushes: the line is out before a crash_after exit

    result = run_demo(
        manager, session_id, mode, review, resume=resume, crash_after=crash_after, on_event=show
    )
    click.echo()
    print_status(new_console(), manager, DEMO_PROJECT, session_id)
    click.get_current_context().exit(1 if result.status == "failed" else 0)


@command()
@click.argument("project")
@click.argument("session")
@click.option(
    "--agents",
    "agents_spec",
    metavar="MODULE:OBJECT",
    help="A mapping of agent name to agent callable (default: the local demo agents).",
)
@base_dir_option
@json_option
def resume(project: str, session: str, agents_spec: str | None, base_dir: Path, as_json: bool) -> None:
    """Continue a session until it is done or stops for review.

    The session runs until it completes, fails, or a phase awaits review; agent outputs
    saved by an earlier run are kept, not redone. Exit code 1 when the run
    fails.
    """
    agents = _load_agents(agents_spec) if agents_spec else DEMO_AGENTS
    manager = CheckpointManager(base_dir)
    workflow = manager.session_workflow(project, session)

    def saved(phase: int, agent: str) -> None:
        if not as_json:
            click.echo(f"  saved phase {phase} {agent}")

    runner = PhaseRunner(manager, workflow, agents, on_output_saved=saved)
    if not as_json:
        click.echo(f"Resuming {project}/{session}")
    result = runner.run(project, session)
    step = next_step(manager, project, session)
    if as_json:
        emit_json({**plain(result), "next": plain(step)})
    else:
        click.echo(f"Result: {result}")
        click.echo(f"Next: {step.message}")
    click.get_current_context().exit(1 if result.status == "failed" else 0)


def _load_agents(spec: str) -> Mapping[str, Agent]:
    """Import ``module:object`` (the current directory first on the path) as an agent mapping."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise click.BadParameter(f"{spec!r} is not MODULE:OBJECT", param_hint="--agents")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as error:  # the user's module may fail in any way; say how
        raise click.BadParameter(
            f"cannot load {spec!r}: {type(error).__name__}: {error}", param_hint="--agents"
        ) from None
    if not isinstance(found, Mapping):
        raise click.BadParameter(
            f"{spec!r} is a {type(found).__name__}, not a mapping", param_hint="--agents"
        )
    return found


COMMANDS: list[click.Command] = [demo, resume]
"""The commands for ``haytham.cli.main`` to register."""
