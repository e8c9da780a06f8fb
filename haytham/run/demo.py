"""The demo: deterministic local agents for the built-in ``idea_validation`` workflow, and
``run_demo``, which runs a session with them and plays the reviewer.

The agents make no network calls: each writes plausible markdown from the phase it is in,
the outputs of the phases before it and any reviewer feedback, so the demo, the tests and a
newcomer's first run all see a real session without an API key. ``run_demo`` is shared by
``examples/idea_validation.py`` and ``haytham demo``; like the rest of the library it never
prints, it reports each step to a callback as a ``DemoEvent`` whose text is the line to show.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from haytham.errors import InvalidArgumentError
from haytham.format.layout import SESSIONS_DIR
from haytham.format.patterns import lazy
from haytham.format.workflow import IDEA_VALIDATION
from haytham.run.runner import AgentContext, AgentResult, PhaseRunner, RunResult
from haytham.store.manager import CheckpointManager

IDEA = "A marketplace that matches solo founders with fractional experts for a few hours a week"

_TOPICS = {
    "concept_expansion": (
        "Concept",
        [
            "The problem: solo founders lack senior help",
            "The offer: vetted experts by the hour",
            "Why now: remote work made fractional roles normal",
        ],
    ),
    "market_intelligence": (
        "Market size",
        ["About 4.2M solo founders in the US and EU", "Spend on freelance advice grows 12% a year"],
    ),
    "competitor_analysis": (
        "Competitors",
        ["Clarity.fm: calls, no continuity", "Upwork: broad, weak vetting for senior roles"],
    ),
    "niche_selector": ("Chosen niche", ["Pre-seed SaaS founders needing a fractional CTO"]),
    "product_strategist": ("Product strategy", ["Start with a matching concierge, automate later"]),
    "business_planner": ("Business plan", ["15% take rate; break-even at 400 monthly bookings"]),
    "validator": ("Validation plan", ["Interview 20 founders", "Pre-sell 10 packages before building"]),
    "synthesizer": ("Final synthesis", ["Go: the niche is reachable and willing to pay"]),
}


def demo_agent(context: AgentContext) -> AgentResult:
    """Write a short, plausible markdown report for ``context.agent_name``."""
    title, points = _TOPICS.get(
        context.agent_name, (context.agent_name.replace("_", " ").title(), ["Findings"])
    )
    lines = [f"# {title}", "", f"Idea: {IDEA}.", ""]
    lines += [f"- {point}" for point in points]
    if context.previous_outputs:
        last_phase = max(context.previous_outputs)
        agents = ", ".join(context.previous_outputs[last_phase])
        lines += ["", f"Builds on phase {last_phase} ({agents})."]
    if context.attempt > 1:
        lines += ["", f"## Changes in attempt {context.attempt}", ""]
        lines += [f"- Addressed: {change}" for change in context.requested_changes] or [
            "- Addressed the comments"
        ]
    content = "\n".join(lines) + "\n"
    input_tokens = 400 + 50 * sum(len(v) for v in context.previous_outputs.values())
    output_tokens = len(content.split()) * 4
    return AgentResult(
        content=content,
        model="demo-local-1",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=round((input_tokens * 3 + output_tokens * 15) / 1_000_000, 4),
        tools_used=("notes",),
        duration=1.0,
    )


DEMO_AGENTS = {name: demo_agent for phase in IDEA_VALIDATION.phases for name in phase.agents}
"""Every agent of the built-in workflow, played by ``demo_agent``."""
DEMO_WORKFLOW = dataclasses.replace(
    IDEA_VALIDATION, callables={name: f"{__name__}:{demo_agent.__name__}" for name in DEMO_AGENTS}
)
"""``idea_validation`` with every agent bound to ``haytham.run.demo:demo_agent``.

A demo session keeps it in its workflow.yaml, so ``haytham resume`` runs it like any session
whose workflow names its agents; its fingerprint is ``IDEA_VALIDATION``'s (bindings are not
part of it), so sessions made before the bindings existed still run with ``run_demo``."""


DEMO_PROJECT = "demo"
"""The project the demo writes its sessions into."""
DEMO_USER = "demo-user"
REVIEW_MODES = ("approve", "reject", "manual")
"""How the demo treats a review gate: approve it, send it back once first, or stop for a person."""
CRASH_EXIT_CODE = 3
"""The exit code of a process that ``crash_after`` ends."""
_SESSION_ID = lazy(r"idea-(\d{3,})")

EventKind = Literal["start", "saved", "reviewed", "crash", "result"]


@dataclass(frozen=True)
class DemoEvent:
    """One step of a demo run. ``str(event)`` is the line the demo shows for it."""

    kind: EventKind
    message: str
    phase: int | None = None
    agent: str | None = None
    """The agent whose output was just saved (``saved`` events)."""
    result: RunResult | None = None
    """Where the run stopped (the ``result`` event, always the last one)."""

    def __str__(self) -> str:
        return self.message


def next_session_id(manager: CheckpointManager, project_id: str = DEMO_PROJECT) -> str:
    """The first free demo session id, ``idea-001``, ``idea-002``, ..."""
    number = 1
    while manager.session_dir(project_id, f"idea-{number:03d}").exists():
        number += 1
    return f"idea-{number:03d}"


def last_session_id(manager: CheckpointManager, project_id: str = DEMO_PROJECT) -> str | None:
    """The highest-numbered existing demo session (what a bare ``--resume`` continues), or None."""
    sessions = manager.project_dir(project_id) / SESSIONS_DIR
    found = [p.name for p in sessions.iterdir() if _SESSION_ID.fullmatch(p.name)] if sessions.is_dir() else []
    return max(found, key=lambda name: int(name[5:]), default=None)


def run_demo(
    manager: CheckpointManager,
    session_id: str,
    mode: str = "mvp",
    review: str = "approve",
    *,
    resume: bool = False,
    crash_after: int | None = None,
    on_event: Callable[[DemoEvent], None] | None = None,
    project_id: str = DEMO_PROJECT,
) -> RunResult:
    """Run (or with ``resume`` continue) a demo session of ``DEMO_WORKFLOW``; return where it stopped.

    ``review`` decides what happens at a review gate: ``approve`` approves it, ``reject`` sends
    each phase back once with comments before approving it, ``manual`` stops so that a person
    can write the feedback file. ``crash_after=N`` ends the process with ``os._exit(3)`` right
    after the Nth agent output of this run is saved, the way a kill would (no clean-up), so
    that a later ``resume=True`` can show that nothing is lost or done twice. Each step is
    reported to ``on_event``; the ``crash`` event comes before the exit, so a caller that
    prints should flush.
    """
    if review not in REVIEW_MODES:
        raise InvalidArgumentError(
            f"review {review!r} is not valid (expected one of {', '.join(REVIEW_MODES)})", field="review"
        )
    if crash_after is not None and (
        not isinstance(crash_after, int) or isinstance(crash_after, bool) or crash_after < 1
    ):
        raise InvalidArgumentError(
            f"crash_after {crash_after!r} is not a whole number >= 1", field="crash_after"
        )
    emit = on_event or _ignore
    if resume:
        mode = manager.load_session(project_id, session_id)["execution_mode"]
    else:
        manager.create_session(project_id, session_id, DEMO_USER, DEMO_WORKFLOW, execution_mode=mode)
    saved = 0

    def after_output(phase: int, agent: str) -> None:
        nonlocal saved
        saved += 1
        emit(DemoEvent("saved", f"  saved phase {phase} {agent}", phase, agent))
        if crash_after is not None and saved >= crash_after:
            emit(
                DemoEvent(
                    "crash", f"  crashing on purpose after {saved} outputs (--crash-after)", phase, agent
                )
            )
            os._exit(CRASH_EXIT_CODE)

    runner = PhaseRunner(manager, DEMO_WORKFLOW, DEMO_AGENTS, on_output_saved=after_output)
    verb = "Resuming" if resume else "Running"
    emit(DemoEvent("start", f"{verb} {project_id}/{session_id} ({mode} mode)"))
    sent_back: set[int] = set()
    result = runner.run(project_id, session_id)
    while result.status == "awaiting_review" and result.phase is not None and review != "manual":
        emit(_review(manager, project_id, session_id, result.phase, review, sent_back))
        result = runner.run(project_id, session_id)
    emit(DemoEvent("result", f"Result: {result}", result.phase, result=result))
    return result


def _review(
    manager: CheckpointManager, project_id: str, session_id: str, phase: int, review: str, sent_back: set[int]
) -> DemoEvent:
    """Play the reviewer of ``phase``: send it back once (``reject``) or approve it."""
    if review == "reject" and phase not in sent_back:
        sent_back.add(phase)
        manager.save_user_feedback(
            project_id,
            session_id,
            phase,
            reviewed=True,
            approved=False,
            action="retry",
            comments="Good start. Be concrete about who pays.",
            requested_changes=["Name the paying customer"],
            retry_count=1,
        )
        return DemoEvent("reviewed", f"  reviewer: phase {phase} sent back with comments", phase)
    manager.save_user_feedback(
        project_id, session_id, phase, reviewed=True, approved=True, comments="Approved."
    )
    return DemoEvent("reviewed", f"  reviewer: phase {phase} approved", phase)


def _ignore(event: DemoEvent) -> None:
    """The default ``on_event``: a caller that shows nothing."""
