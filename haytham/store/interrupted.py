"""What a crash leaves unknown: an agent recorded as started that never recorded an end.

The runner saves an agent's checkpoint row as ``in_progress`` (through the journal) before it
calls the agent, and the agent's completed output file records that it finished. A row still
``in_progress`` without a completed output, found when no runner holds the session's run
lease, is an agent that **may have run**: its calls to the world may or may not have gone
out. ``haytham status`` says so as soon as the runner is gone; the next run decides what to
do about it (``haytham.run.effects``: run it again, or hold the phase for a person when the
agent has side effects).
"""

from __future__ import annotations

from collections.abc import Mapping

from haytham.records import AgentOutput, PhaseCheckpoint

MAY_HAVE_RUN = "may have run"
"""How every view names an agent that started and never recorded an end."""


def started_agents(checkpoint: PhaseCheckpoint | None) -> tuple[str, ...]:
    """The agents a checkpoint records as started and not finished (row ``in_progress``)."""
    if checkpoint is None:
        return ()
    return tuple(run.agent_name for run in checkpoint.agents if run.status == "in_progress")


def may_have_run(
    checkpoint: PhaseCheckpoint | None, outputs: Mapping[str, AgentOutput | None]
) -> tuple[str, ...]:
    """The agents that started and never completed: recorded as started in ``checkpoint`` and
    without a completed output in ``outputs`` (name -> the output as saved, None when there
    is no file). Only meaningful when no runner is running the session: a live run's started
    agents are running."""
    found = []
    for name in started_agents(checkpoint):
        output = outputs.get(name)
        if output is None or output.status != "completed":
            found.append(name)
    return tuple(found)
