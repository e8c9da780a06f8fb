"""The lifecycle as data: every state derives from the files' facts by one rule set, every
move is listed once (and in docs/lifecycle.md), and a session's state follows its first
phase that is not done."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from haytham.store import lifecycle
from haytham.store.lifecycle import DONE_STATES, PhaseFacts, check_move, derive, outputs_digest

DOCS = Path(__file__).resolve().parent.parent / "docs" / "lifecycle.md"


def facts(number: int, status: str | None, **extra: object) -> PhaseFacts:
    return PhaseFacts(number, f"Phase {number}", bool(extra.pop("review", False)), status, **extra)  # type: ignore[arg-type]


def test_a_phase_without_checkpoint_is_pending_and_the_session_needs_a_runner() -> None:
    view = derive([facts(1, None), facts(2, None)])
    assert [p.state for p in view.phases] == ["pending", "pending"]
    assert (view.state, view.next_action, view.current and view.current.number) == ("in_progress", "run", 1)


@pytest.mark.parametrize(
    ("review", "verdict", "expected"),
    [
        (True, "none", "completed"),  # no review file: nobody asked for one
        (True, "awaiting", "awaiting_review"),
        (True, "approved", "approved"),
        (True, "sent_back", "sent_back"),
        (False, "none", "completed"),
        (False, "approved", "approved"),
        (False, "sent_back", "sent_back"),
    ],
)
def test_a_completed_phase_takes_its_state_from_its_review(review: bool, verdict: str, expected: str) -> None:
    view = derive([facts(1, "completed", review=review, verdict=verdict)])
    assert view.phases[0].state == expected


def test_a_rejection_of_a_phase_without_gate_is_honoured() -> None:
    """Item 1 of the lifecycle issue: a sent-back phase without a gate is run again."""
    phases = [
        facts(1, "completed", review=True, verdict="approved"),
        facts(3, "completed", verdict="sent_back"),
    ]
    view = derive(phases)
    assert (view.state, view.next_action, view.current and view.current.number) == ("in_progress", "run", 3)


def test_a_sent_back_first_phase_reopens_a_completed_session() -> None:
    """Item 2: every view says in_progress, and the current phase is phase 1."""
    done = [facts(n, "completed", outputs_digest=f"d{n}") for n in (2, 3)]
    phase_1 = facts(1, "completed", review=True, verdict="sent_back", outputs_digest="d1")
    view = derive([phase_1, *done])
    assert view.state == "in_progress"
    assert view.current is not None and view.current.number == 1
    assert view.current.state == "sent_back"


def test_phases_built_on_changed_outputs_are_stale_with_the_reason() -> None:
    """Item 3: after a merge brought phase 2's second attempt, phases 3.. built on attempt 1 are stale."""
    phases = [
        facts(1, "completed", review=True, verdict="approved", outputs_digest="a1"),
        facts(2, "completed", outputs_digest="b2", built_from={1: "a1"}),
        facts(3, "completed", outputs_digest="c1", built_from={1: "a1", 2: "b1"}),
        facts(4, "completed", outputs_digest="d1", built_from={1: "a1", 2: "b1", 3: "c1"}),
    ]
    view = derive(phases)
    assert [p.state for p in view.phases] == ["approved", "completed", "stale", "stale"]
    assert view.phase(3).stale_because == (2,)
    assert view.phase(3).describe() == "stale (built on phase 2, which changed since)"
    assert (view.state, view.current and view.current.number) == ("in_progress", 3)


def test_a_phase_running_again_makes_the_phases_built_on_it_stale() -> None:
    phases = [
        facts(1, "in_progress", attempt=2),
        facts(2, "completed", outputs_digest="b1", built_from={1: "a1"}),
    ]
    assert derive(phases).phase(2).state == "stale"


def test_checkpoints_without_digests_are_never_called_stale() -> None:
    """Sessions written before digests were recorded cannot be compared: they stay as they are."""
    phases = [facts(1, "completed"), facts(2, "completed", built_from={1: "whatever"})]
    assert derive(phases).phase(2).state == "completed"


def test_a_review_file_that_cannot_be_read_needs_a_person() -> None:
    view = derive([facts(1, "completed", review=True, problem="Approved: 'nope' is not a boolean")])
    assert (view.state, view.next_action) == ("awaiting_review", "fix")
    assert view.phases[0].describe() == "awaiting review (Approved: 'nope' is not a boolean)"


def test_a_failed_phase_fails_the_session_until_retried() -> None:
    view = derive([facts(1, "completed"), facts(2, "failed"), facts(3, None)])
    assert (view.state, view.next_action) == ("failed", "run")


def test_every_phase_done_completes_the_session() -> None:
    view = derive(
        [facts(1, "completed", review=True, verdict="approved"), facts(2, "skipped"), facts(3, "completed")]
    )
    assert (view.state, view.next_action, view.current) == ("completed", "done", None)


def test_moves_are_checked_against_the_table() -> None:
    assert not isinstance(check_move("approve", "awaiting_review", "reviewer"), str)
    refusal = check_move("approve", "pending", "reviewer")
    assert (
        refusal == "a phase that is pending cannot be approved "
        "(only one that is approved, awaiting review, completed, sent back)"
    )
    assert check_move("re-run", "stale", "reviewer") == "a reviewer cannot re-run a phase"
    with pytest.raises(ValueError, match="'explode' is not a lifecycle event"):
        check_move("explode", "pending", "runner")


def test_every_state_is_reachable_and_every_target_is_a_state() -> None:
    reached = {"pending"} | {t.target for t in lifecycle.TRANSITIONS}
    assert reached == set(lifecycle.PHASE_STATES)
    for transition in lifecycle.TRANSITIONS:
        assert transition.sources <= set(lifecycle.PHASE_STATES)
        assert transition.actors <= set(lifecycle.ACTORS)


def test_the_docs_list_every_move_as_the_module_defines_it() -> None:
    table = DOCS.read_text().split("## Moves", 1)[1].split("\n\n")[1]
    rows = set(re.findall(r"^\| ([a-z][a-z -]*) \| ([a-z_, ]+) \| ([a-z_]+) \| ([a-z, ]+) \|", table, re.M))
    rows.discard(("event", "from", "to", "who"))
    expected = {
        (t.event, ", ".join(sorted(t.sources)), t.target, ", ".join(sorted(t.actors)))
        for t in lifecycle.TRANSITIONS
    }
    assert rows == expected


def test_the_docs_diagram_draws_every_move() -> None:
    """The mermaid diagram of docs/lifecycle.md has one arrow for each source of each move,
    labelled with the move, and no other arrow."""
    diagram = DOCS.read_text().split("```mermaid\n", 1)[1].split("```", 1)[0]
    arrows = re.findall(r"^\s*([a-z_]+) --> ([a-z_]+): ([a-z -]+)$", diagram, re.M)
    assert len(arrows) == len(set(arrows))
    expected = {(source, t.target, t.event) for t in lifecycle.TRANSITIONS for source in t.sources}
    assert set(arrows) == expected


def test_the_outputs_digest_ignores_order_and_separates_names_from_text() -> None:
    assert outputs_digest({"a": "x", "b": "y"}) == outputs_digest({"b": "y", "a": "x"})
    assert outputs_digest({"a": "bc"}) != outputs_digest({"ab": "c"})
    assert outputs_digest({"a": "x\r\n"}) != outputs_digest({"a": "x\n"})
    assert re.fullmatch(r"[0-9a-f]{16}", outputs_digest({}))


STATUSES = st.sampled_from([None, "pending", "in_progress", "completed", "failed", "skipped"])
VERDICTS = st.sampled_from(["none", "awaiting", "approved", "sent_back"])


@st.composite
def sessions(draw: st.DrawFn) -> list[PhaseFacts]:
    count = draw(st.integers(1, 6))
    phases = []
    for number in range(1, count + 1):
        built = {n: draw(st.sampled_from(["x", "y"])) for n in range(1, number)}
        phases.append(
            facts(
                number,
                draw(STATUSES),
                review=draw(st.booleans()),
                verdict=draw(VERDICTS),
                outputs_digest=draw(st.sampled_from([None, "x", "y"])),
                built_from=built,
            )
        )
    return phases


@given(sessions())
def test_the_session_state_is_its_first_unfinished_phase(phases: list[PhaseFacts]) -> None:
    view = derive(phases)
    unfinished = [p for p in view.phases if p.state not in DONE_STATES]
    assert view.current == (unfinished[0] if unfinished else None)
    assert (view.state == "completed") == (not unfinished)
    if view.state == "awaiting_review":
        assert view.current is not None and view.current.state == "awaiting_review"
    for phase in view.phases:
        if phase.state in ("completed", "approved"):  # nothing reported done is built on changed outputs
            source = next(p for p in phases if p.number == phase.number)
            for number, digest in source.built_from.items():
                upstream = next(p for p in phases if p.number == number)
                assert upstream.outputs_digest in (None, digest)
