"""Workflows as data: the phases, their agents and review gates, and which modes run which.

The store knows phases only through a ``Workflow``; the seven phases of ``idea_validation``
live here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from haytham.errors import InvalidArgumentError, UnknownPhaseError
from haytham.records import RunStyle


@dataclass(frozen=True)
class PhaseDefinition:
    """One phase of a workflow."""

    number: int
    name: str
    directory: str
    """The phase's directory inside the session, ``phase_{n}_{slug}``."""
    agents: tuple[str, ...] = ()
    run_style: RunStyle = "single"
    review: bool = False
    """True when a person must approve the phase before the next one runs."""


@dataclass(frozen=True)
class Workflow:
    """A named, ordered set of phases and the execution modes that select among them."""

    name: str
    phases: tuple[PhaseDefinition, ...]
    modes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_retries: int = 3

    def phase(self, number: object) -> PhaseDefinition:
        """The phase with this number, or UnknownPhaseError naming the valid numbers."""
        if isinstance(number, int) and not isinstance(number, bool):
            for phase in self.phases:
                if phase.number == number:
                    return phase
        valid = ", ".join(str(p.number) for p in self.phases)
        raise UnknownPhaseError(
            f"phase {number!r} is not a phase of workflow {self.name!r} (expected one of {valid})",
            field="phase_num",
        )

    def phases_for(self, mode: str) -> tuple[PhaseDefinition, ...]:
        """The phases an execution mode runs, in order."""
        if mode not in self.modes:
            raise InvalidArgumentError(
                f"execution_mode {mode!r} is not a mode of workflow {self.name!r} "
                f"(expected one of {', '.join(self.modes)})",
                field="execution_mode",
            )
        return tuple(self.phase(n) for n in self.modes[mode])

    def phase_in_mode(self, number: object, mode: str) -> PhaseDefinition:
        """The phase, refusing one that exists but that ``mode`` does not run."""
        phase = self.phase(number)
        selected = self.phases_for(mode)
        if phase not in selected:
            numbers = ", ".join(str(p.number) for p in selected)
            raise UnknownPhaseError(
                f"phase {phase.number} ({phase.name}) is not run in {mode!r} mode (its phases are {numbers})",
                field="phase_num",
            )
        return phase


IDEA_VALIDATION = Workflow(
    name="idea_validation",
    phases=(
        PhaseDefinition(1, "Concept Expansion", "phase_1_concept", ("concept_expansion",), review=True),
        PhaseDefinition(
            2,
            "Market Research",
            "phase_2_market_research",
            ("market_intelligence", "competitor_analysis"),
            run_style="parallel",
        ),
        PhaseDefinition(3, "Niche Selection", "phase_3_niche_selection", ("niche_selector",)),
        PhaseDefinition(4, "Product Strategy", "phase_4_product_strategy", ("product_strategist",)),
        PhaseDefinition(5, "Business Planning", "phase_5_business_planning", ("business_planner",)),
        PhaseDefinition(6, "Validation", "phase_6_validation", ("validator",)),
        PhaseDefinition(7, "Final Synthesis", "phase_7_synthesis", ("synthesizer",)),
    ),
    modes={"mvp": (1, 2, 3, 6, 7), "full": (1, 2, 3, 4, 5, 6, 7)},
)

BUILTIN_WORKFLOWS: Mapping[str, Workflow] = {IDEA_VALIDATION.name: IDEA_VALIDATION}
