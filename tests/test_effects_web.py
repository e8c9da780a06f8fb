"""The phase page shows why a phase is held (an agent that may have run, a budget spent) and
links the trace an agent gave (issue 27)."""

from __future__ import annotations

from pathlib import Path

from web_demo import P, S, awaiting_demo, client_of


def test_the_phase_page_shows_a_hold_and_links_an_agents_trace(tmp_path: Path) -> None:
    manager = awaiting_demo(tmp_path)
    manager.save_agent_output(P, S, 2, "market_intelligence", "found", trace_id="https://traces.example/r/42")
    manager.save_agent_output(P, S, 2, "competitor_analysis", "found", trace_id="4bf92f3577b34da6")
    reason = "competitor_analysis may have run: it started and never completed, and it has side effects"
    manager.save_checkpoint(P, S, 2, "in_progress", [], execution_mode="parallel", held=[reason])
    with client_of(manager) as client:
        page = client.get(f"/p/{P}/s/{S}/phase/2").text
    assert f"awaiting review ({reason})" in page
    assert (
        '<p class="trace" id="trace-2-market_intelligence">Trace: <a href="https://traces.example/r/42" '
        'rel="noopener noreferrer">https://traces.example/r/42</a></p>'
    ) in page
    assert (
        '<p class="trace" id="trace-2-competitor_analysis">Trace: <code>4bf92f3577b34da6</code></p>' in page
    )


def test_the_inbox_lists_a_phase_held_for_its_budget_with_the_figures(tmp_path: Path) -> None:
    from haytham import CheckpointManager
    from haytham.format.policy import Budget
    from haytham.format.workflow import PhaseDefinition, Workflow
    from haytham.run.runner import AgentContext, AgentResult, PhaseRunner

    phases = (
        PhaseDefinition(1, "One", "phase_1_one", ("a",)),
        PhaseDefinition(2, "Two", "phase_2_two", ("b",)),
    )
    workflow = Workflow("budgeted", phases, {"all": (1, 2)}, budget=Budget(cost=1.0))
    manager = CheckpointManager(tmp_path)
    manager.create_session("acme", "s-1", "ann", workflow, "all")

    def agent(context: AgentContext) -> AgentResult:
        return AgentResult("done", cost=1.25)

    assert PhaseRunner(manager, workflow, {"a": agent, "b": agent}).run("acme", "s-1").phase == 2
    with client_of(manager) as client:
        inbox = client.get("/").text
    assert "session budget: spent $1.2500 of $1.0000" in inbox, inbox
