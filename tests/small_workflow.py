"""A small custom workflow for lifecycle tests: four phases, phase 2 gated, deterministic
agents whose output depends on the attempt, the comments they were given and the outputs
of the phases before them (so a changed upstream changes every output after it)."""

from __future__ import annotations

from pathlib import Path

from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.run.runner import AgentContext, PhaseRunner
from haytham.store.manager import CheckpointManager

PROJECT = "acme"
PHASES = (
    PhaseDefinition(1, "Idea", "phase_1_idea", ("writer",)),
    PhaseDefinition(2, "Research", "phase_2_research", ("scout", "analyst"), "parallel", review=True),
    PhaseDefinition(3, "Plan", "phase_3_plan", ("planner",)),
    PhaseDefinition(4, "Pitch", "phase_4_pitch", ("pitcher", "editor")),
)
SMALL = Workflow("small", PHASES, {"full": (1, 2, 3, 4)}, max_retries=50)


class Killed(Exception):
    """What an agent raises to simulate a process killed in the middle of a phase."""


class Agents:
    """The agents of SMALL. ``kill_at`` makes call number ``kill_at`` (counted from 1) raise."""

    def __init__(self) -> None:
        self.calls = 0
        self.kill_at: int | None = None

    def __call__(self, context: AgentContext) -> str:
        self.calls += 1
        if self.kill_at is not None and self.calls == self.kill_at:
            self.kill_at = None
            raise Killed(f"killed in phase {context.phase.number} at {context.agent_name}")
        upstream = "|".join(
            f"{number}:{agent}={len(text)}:{sum(map(ord, text)) % 997}"
            for number, outputs in sorted(context.previous_outputs.items())
            for agent, text in sorted(outputs.items())
        )
        return (
            f"# {context.agent_name}\n\nattempt {context.attempt}; comments: {context.comments or '-'}\n"
            f"upstream: {upstream or '-'}\n"
        )

    def mapping(self) -> dict[str, object]:
        return {agent: self for phase in PHASES for agent in phase.agents}


def manager_for(base_dir: Path) -> CheckpointManager:
    return CheckpointManager(base_dir, workflows=[SMALL])


def runner_for(manager: CheckpointManager, agents: Agents) -> PhaseRunner:
    return PhaseRunner(manager, SMALL, agents.mapping())  # type: ignore[arg-type]


def new_session(manager: CheckpointManager, session: str) -> None:
    manager.create_session(PROJECT, session, "ada", SMALL, "full")
