"""A conformance kit for CrewAI ``FlowPersistence`` backends: pytest tests any store must pass.

Use it from a test module of your backend: define the fixture ``make_flow_persistence``, a
factory that builds your persistence over one shared store (a picklable zero-argument
callable such as ``functools.partial(MyPersistence, path)``: the concurrency and crash tests
build it again in other processes), and import the tests::

    import functools
    import pytest
    from haytham.integrations.crewai.conformance import *  # noqa: F403

    @pytest.fixture
    def make_flow_persistence(tmp_path):
        return functools.partial(MyPersistence, str(tmp_path / "flows.db"))

The tests: round trips of dict and pydantic states (nested, unicode, large and edge-case
values; a model comes back as ``model_dump(mode="json")``, as CrewAI's SQLite store gives
it); the latest state wins; the pending human feedback trio (saved, loaded, replaced,
cleared); two flows never mix; two processes writing at once; and a process killed while it
saves leaves the last complete state. haytham runs the kit against CrewAI's own
``SQLiteFlowPersistence`` (the kit is wrong if that store fails it) and against
``HaythamFlowPersistence`` (``tests/test_crewai_conformance.py``). Needs pytest.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from crewai.flow.async_feedback.types import PendingFeedbackContext
from crewai.flow.persistence.base import FlowPersistence
from pydantic import BaseModel, Field

__all__ = [
    "test_clear_pending_feedback",
    "test_concurrent_writers_in_two_processes",
    "test_dict_state_round_trip",
    "test_flows_never_mix",
    "test_kill_mid_save_leaves_the_last_complete_state",
    "test_latest_state_wins",
    "test_model_state_round_trip",
    "test_no_state_is_none",
    "test_pending_feedback_round_trip",
    "test_pending_feedback_saved_again_replaces_it",
]

Factory = Callable[[], FlowPersistence]

EDGE_STATES: dict[str, dict[str, Any]] = {
    "flat": {"id": "flat", "counter": 3, "ratio": 0.25, "done": False, "note": None},
    "nested": {"id": "nested", "a": {"b": {"c": [1, [2, [3, {"d": "e"}]]]}}, "empty": {}, "none": []},
    "unicode": {
        "id": "unicode",
        "text": "héllo wörld — 你好 — مرحبا — 👩‍🔬🚀",
        "ключ": "значение",
        "controls": "tab\tnew\nline\r\x00\x1f\u2028\u2029\ufeff end",
        "fence": "```json\n{}\n```\n# heading\n---\n<!-- comment -->",
    },
    "edge_values": {
        "id": "edge_values",
        "zero": 0,
        "negative": -(2**53),
        "big": 2**63,
        "tiny": 5e-324,
        "float": 1.0000000000000002,
        "empty": "",
        "spaces": "  leading and trailing  ",
        "$haytham": "a key that looks like a tag",
        "tagged_looking": {"$haytham": "datetime", "value": "not a tag: user data"},
        "keys": {"": "empty key", " ": "space", "a.b": 1, "0": 0},
    },
    "large": {"id": "large", "items": [{"n": n, "text": f"item {n} " * 20} for n in range(2000)]},
}
"""States every store must give back equal (JSON-native values only, as JSON stores do)."""


class Address(BaseModel):
    street: str
    city: str


class ModelState(BaseModel):
    """A structured flow state, as ``Flow[ModelState]`` keeps it."""

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    title: str = ""
    count: int = 0
    tags: list[str] = Field(default_factory=list)
    address: Address | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    when: dt.datetime | None = None


def _flow_id() -> str:
    return str(uuid.uuid4())


def _context(
    flow_id: str, method: str = "review", message: str = "Approve this draft?"
) -> PendingFeedbackContext:
    return PendingFeedbackContext(
        flow_id=flow_id,
        flow_class="tests.ReviewFlow",
        method_name=method,
        method_output={"title": "Draft", "body": "Ünïcode body\nwith lines"},
        message=message,
        emit=["approved", "rejected"],
        default_outcome="rejected",
        metadata={"channel": "#reviews"},
        llm="gpt-4o-mini",
        requested_at=dt.datetime(2026, 1, 2, 3, 4, 5),
    )


@pytest.mark.parametrize("name", sorted(EDGE_STATES))
def test_dict_state_round_trip(make_flow_persistence: Factory, name: str) -> None:
    """A dict state comes back equal, from this instance and from a new one."""
    store = make_flow_persistence()
    flow_id = _flow_id()
    state = dict(EDGE_STATES[name], id=flow_id)
    store.save_state(flow_id, "step", state)
    assert store.load_state(flow_id) == state
    assert make_flow_persistence().load_state(flow_id) == state


def test_model_state_round_trip(make_flow_persistence: Factory) -> None:
    """A pydantic state comes back as its JSON dump, and validates into an equal model."""
    store = make_flow_persistence()
    model = ModelState(
        title="Ünïcode 🚀",
        count=7,
        tags=["a", "b"],
        address=Address(street="1 Main St", city="Zürich"),
        scores={"x": 0.5},
        when=dt.datetime(2026, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc),
    )
    store.save_state(model.id, "step", model)
    loaded = store.load_state(model.id)
    assert loaded == model.model_dump(mode="json")
    assert ModelState.model_validate(loaded) == model


def test_no_state_is_none(make_flow_persistence: Factory) -> None:
    store = make_flow_persistence()
    assert store.load_state(_flow_id()) is None
    assert store.load_pending_feedback(_flow_id()) is None


def test_latest_state_wins(make_flow_persistence: Factory) -> None:
    """The newest save is loaded, whichever method made it, also when a method saves again
    exactly the state it saved before."""
    store = make_flow_persistence()
    flow_id = _flow_id()
    first = {"id": flow_id, "step": 1}
    store.save_state(flow_id, "first", first)
    store.save_state(flow_id, "second", {"id": flow_id, "step": 2})
    assert store.load_state(flow_id) == {"id": flow_id, "step": 2}
    store.save_state(flow_id, "first", first)
    assert store.load_state(flow_id) == first
    for step in range(3, 8):
        store.save_state(flow_id, "loop", {"id": flow_id, "step": step})
    assert store.load_state(flow_id) == {"id": flow_id, "step": 7}


def test_flows_never_mix(make_flow_persistence: Factory) -> None:
    store = make_flow_persistence()
    one, two = _flow_id(), _flow_id()
    store.save_state(one, "step", {"id": one, "who": "one"})
    store.save_state(two, "step", {"id": two, "who": "two"})
    store.save_pending_feedback(two, _context(two), {"id": two, "who": "two paused"})
    assert store.load_state(one) == {"id": one, "who": "one"}
    assert store.load_pending_feedback(one) is None
    loaded = store.load_pending_feedback(two)
    assert loaded is not None
    assert loaded[0] == {"id": two, "who": "two paused"}
    store.clear_pending_feedback(one)
    assert store.load_pending_feedback(two) is not None


def test_pending_feedback_round_trip(make_flow_persistence: Factory) -> None:
    """The state and the whole context come back; the state is also the latest state."""
    store = make_flow_persistence()
    flow_id = _flow_id()
    state = {"id": flow_id, "draft": "text ✓", "nested": {"n": [1, 2]}}
    store.save_state(flow_id, "write", {"id": flow_id, "draft": ""})
    context = _context(flow_id)
    store.save_pending_feedback(flow_id, context, state)
    for reader in (store, make_flow_persistence()):
        loaded = reader.load_pending_feedback(flow_id)
        assert loaded is not None
        loaded_state, loaded_context = loaded
        assert loaded_state == state
        assert isinstance(loaded_context, PendingFeedbackContext)
        assert loaded_context.to_dict() == context.to_dict()
        assert reader.load_state(flow_id) == state


def test_pending_feedback_saved_again_replaces_it(make_flow_persistence: Factory) -> None:
    store = make_flow_persistence()
    flow_id = _flow_id()
    store.save_pending_feedback(flow_id, _context(flow_id, message="first?"), {"id": flow_id, "v": 1})
    store.save_pending_feedback(flow_id, _context(flow_id, message="second?"), {"id": flow_id, "v": 2})
    loaded = store.load_pending_feedback(flow_id)
    assert loaded is not None
    assert loaded[0] == {"id": flow_id, "v": 2}
    assert loaded[1].message == "second?"


def test_clear_pending_feedback(make_flow_persistence: Factory) -> None:
    """Clearing ends the pause, keeps the state, and is harmless when nothing is pending."""
    store = make_flow_persistence()
    flow_id = _flow_id()
    store.clear_pending_feedback(flow_id)  # never saved: nothing to clear
    state = {"id": flow_id, "v": "paused"}
    store.save_pending_feedback(flow_id, _context(flow_id), state)
    store.clear_pending_feedback(flow_id)
    assert store.load_pending_feedback(flow_id) is None
    assert make_flow_persistence().load_pending_feedback(flow_id) is None
    assert store.load_state(flow_id) == state
    store.clear_pending_feedback(flow_id)
    store.save_state(flow_id, "after", {"id": flow_id, "v": "resumed"})
    assert store.load_state(flow_id) == {"id": flow_id, "v": "resumed"}
    store.save_pending_feedback(flow_id, _context(flow_id, message="again?"), {"id": flow_id, "v": "again"})
    loaded = store.load_pending_feedback(flow_id)
    assert loaded is not None
    assert loaded[1].message == "again?"


# ---------------------------------------------------------------------- other processes


def _state(flow_id: str, writer: str, n: int) -> dict[str, Any]:
    """The ``n``th state a writer saves: its text repeats ``n``, so a torn state shows."""
    return {"id": flow_id, "writer": writer, "n": n, "blob": [f"{writer}-{n}"] * 200}


def _complete(state: dict[str, Any] | None, flow_id: str) -> bool:
    if state is None:
        return False
    return state == _state(flow_id, state["writer"], state["n"])


def _writer(factory: Factory, writer: str, shared: str, own: str, count: int) -> None:
    """Save ``count`` states to the shared flow and to the writer's own flow."""
    store = factory()
    for n in range(count):
        store.save_state(shared, f"step_{n % 3}", _state(shared, writer, n))
        store.save_state(own, f"step_{n % 3}", _state(own, writer, n))


def _saver(factory: Factory, flow_id: str, saved: Any) -> None:
    """Save states without end, reporting each save that returned."""
    store = factory()
    n = 0
    while True:
        store.save_state(flow_id, f"step_{n % 3}", _state(flow_id, "saver", n))
        saved.put(n)
        n += 1


def _spawn() -> Any:
    """Where the kit starts its processes: a fork server that imported this kit (and so
    CrewAI) once, so each process starts in a moment; a fresh interpreter where there is
    no fork server (Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def test_concurrent_writers_in_two_processes(make_flow_persistence: Factory) -> None:
    """Two processes save at once: no save fails, each own flow ends at its writer's last
    state, and the shared flow at one writer's last state, whole."""
    make_flow_persistence().init_db()
    shared, own_a, own_b = _flow_id(), _flow_id(), _flow_id()
    count = 15
    context = _spawn()
    workers = [
        context.Process(target=_writer, args=(make_flow_persistence, "a", shared, own_a, count)),
        context.Process(target=_writer, args=(make_flow_persistence, "b", shared, own_b, count)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
        assert worker.exitcode == 0, f"a writer failed (exit code {worker.exitcode})"
    store = make_flow_persistence()
    assert store.load_state(own_a) == _state(own_a, "a", count - 1)
    assert store.load_state(own_b) == _state(own_b, "b", count - 1)
    last = store.load_state(shared)
    assert _complete(last, shared)
    assert last is not None
    assert last["n"] == count - 1


def test_kill_mid_save_leaves_the_last_complete_state(make_flow_persistence: Factory) -> None:
    """A process killed (SIGKILL) while it saves leaves a complete state, no older than the
    last save that returned; the store then takes new saves."""
    make_flow_persistence().init_db()
    context = _spawn()
    for round_number, saves_before_kill in enumerate((1, 4, 9)):
        flow_id = _flow_id()
        saved = context.Queue()
        process = context.Process(target=_saver, args=(make_flow_persistence, flow_id, saved))
        process.start()
        try:
            returned = -1
            while returned < saves_before_kill:
                returned = saved.get(timeout=300)
            process.kill()  # SIGKILL: no handler, no cleanup
            process.join(60)
        finally:
            if process.is_alive():
                process.kill()
        store = make_flow_persistence()
        loaded = store.load_state(flow_id)
        assert _complete(loaded, flow_id), f"round {round_number}: a torn or missing state {loaded!r:.200}"
        assert loaded is not None
        assert loaded["n"] >= returned
        store.save_state(flow_id, "after", {"id": flow_id, "after": round_number})
        assert store.load_state(flow_id) == {"id": flow_id, "after": round_number}
