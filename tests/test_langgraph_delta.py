"""``HaythamSaver.get_delta_channel_history`` against LangGraph's own answers, differentially.

LangGraph's spec for the capability lives on its main branch only (not in the conformance
release we use), so these tests ask the two implementations LangGraph ships: the
``BaseCheckpointSaver`` default (a walk by ``get_tuple``) on the same files, and
``SqliteSaver``'s override on a copy of the same checkpoints and writes. Real graphs with a
``DeltaChannel`` (parallel tasks writing one channel, an interrupt, ``update_state``, a fork,
several snapshot frequencies) must give the same history at every checkpoint of the thread,
and the same states as the graph run under ``SqliteSaver``; hypothesis adds random chains.
The walk's work is counted: it opens the chain's files and no other.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

try:
    from langgraph.channels.delta import DeltaChannel
    from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph is not installed: pip install 'haytham[langgraph]'", allow_module_level=True)

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workcount import WorkCounters

from haytham.format.layout import LANGGRAPH_DIR
from haytham.integrations.langgraph import HaythamSaver, cache, files

CHANNELS = ["log", "count", "never"]


def _extend(state: list[str] | None, writes: list[list[str]]) -> list[str]:
    """An order-sensitive reducer: a wrong write order rebuilds a different list."""
    out = list(state or [])
    for write in writes:
        out.extend(write)
    return out


def _graph(snapshot_frequency: int) -> StateGraph[Any]:
    log = Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=snapshot_frequency)]
    # the functional form: a class body would be resolved at module level, without snapshot_frequency
    State = TypedDict("State", {"log": log, "count": int}, total=False)  # type: ignore[misc]  # noqa: UP013

    def plan(state: Any) -> Any:
        return {"log": ["plan"], "count": state.get("count", 0) + 1}

    def left(state: Any) -> Any:
        return {"log": ["left"]}

    def right(state: Any) -> Any:
        return {"log": ["right", "right again"]}

    def gate(state: Any) -> Any:
        answer = interrupt({"question": "go on?", "log": len(state.get("log", []))})
        return {"log": [f"answer {answer}"]}

    graph = StateGraph(State)
    for node in (plan, left, right, gate):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "left")
    graph.add_edge("plan", "right")
    graph.add_edge(["left", "right"], "gate")
    graph.add_edge("gate", END)
    return graph


def _drive(saver: Any, snapshot_frequency: int) -> list[Any]:
    """Run the graph through an interrupt, a resume, an ``update_state``, a second run and a
    fork from an early checkpoint; the states of the thread's history, newest first."""
    app = _graph(snapshot_frequency).compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": ["start"], "count": 0}, config)
    app.invoke(Command(resume="yes"), config)
    app.update_state(config, {"log": ["edited by hand"]})
    app.invoke({"log": ["second run"]}, config)
    app.invoke(Command(resume="again"), config)
    history = list(app.get_state_history(config))
    early = history[-3].config  # after the first plan step: fork there
    app.update_state(early, {"log": ["forked"]}, as_node="plan")
    app.invoke(None, config)
    app.invoke(Command(resume="on the fork"), config)
    return [(s.values, s.metadata.get("step") if s.metadata else None) for s in app.get_state_history(config)]


def _sqlite() -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


def _copy_into(saver: HaythamSaver, target: BaseCheckpointSaver[Any], thread_id: str) -> list[Any]:
    """Every checkpoint and write of the thread, put into ``target`` unchanged (ids, task
    paths and indexes kept); the configs of the thread's checkpoints, oldest first."""
    tuples = list(saver.list({"configurable": {"thread_id": thread_id}}))[::-1]
    for found in tuples:
        parent: Any = found.parent_config or {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": found.config["configurable"]["checkpoint_ns"],
            }
        }
        target.put(parent, found.checkpoint, found.metadata, {})
        folder = (
            saver.session_dir(thread_id)
            / LANGGRAPH_DIR
            / files.namespace_folder(found.config["configurable"]["checkpoint_ns"])
        )
        path = folder / files.writes_file(found.checkpoint["id"])
        if not path.exists():
            continue
        by_task: dict[tuple[str, str], list[files.StoredWrite]] = defaultdict(list)
        for write in files.parse_writes(path.read_text("utf-8"), saver.serde, path):
            by_task[(write.task_id, write.task_path)].append(write)
        for (task_id, task_path), writes in by_task.items():
            writes.sort(key=lambda w: w.index)
            target.put_writes(found.config, [(w.channel, w.value) for w in writes], task_id, task_path)
    return [t.config for t in tuples]


def _assert_same_everywhere(saver: HaythamSaver, thread_id: str, channels: list[str]) -> int:
    """The override equals the base default on the same files and SQLite's override on a copy,
    at every checkpoint of the thread (and for the thread's newest); how many were compared."""
    sqlite = _sqlite()
    configs = _copy_into(saver, sqlite, thread_id)
    newest: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for config in [*configs, newest]:
        ours = saver.get_delta_channel_history(config=config, channels=channels)
        base = BaseCheckpointSaver.get_delta_channel_history(saver, config=config, channels=channels)
        theirs = sqlite.get_delta_channel_history(config=config, channels=channels)
        assert ours == base, config
        assert ours == theirs, config
    return len(configs)


@pytest.mark.parametrize("snapshot_frequency", [1, 2, 100])
def test_a_real_graph_gives_langgraphs_history_at_every_checkpoint(
    tmp_path: Path, snapshot_frequency: int
) -> None:
    saver = HaythamSaver(tmp_path, review=False)
    states = _drive(saver, snapshot_frequency)
    compared = _assert_same_everywhere(saver, "t", CHANNELS)
    assert compared == len(states) > 10
    assert states == _drive(_sqlite(), snapshot_frequency)  # the same run under SqliteSaver
    final = states[0][0]["log"]
    assert final[:2] == ["start", "plan"] and final[-1] == "answer on the fork" and "forked" in final
    assert "second run" not in final  # the fork left the second run's branch behind


def test_the_async_walk_and_the_edge_cases_answer_as_langgraph(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, review=False)
    _drive(saver, 2)
    newest: Any = {"configurable": {"thread_id": "t"}}
    expected = BaseCheckpointSaver.get_delta_channel_history(saver, config=newest, channels=["log"])
    assert expected["log"]["writes"] or "seed" in expected["log"]
    assert asyncio.run(saver.aget_delta_channel_history(config=newest, channels=["log"])) == expected
    assert saver.get_delta_channel_history(config=newest, channels=[]) == {}
    for missing in (
        {"configurable": {"thread_id": "no such thread"}},
        {"configurable": {"thread_id": "t", "checkpoint_id": "1f0-no-such-checkpoint"}},
        {"configurable": {"thread_id": "../escape"}},
    ):
        assert saver.get_delta_channel_history(config=missing, channels=["log", "count"]) == {
            "log": {"writes": []},
            "count": {"writes": []},
        }


# ---------------------------------------------------------------- random chains

_steps = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=50),  # which earlier checkpoint is the parent (a fork)
        st.sets(st.sampled_from(CHANNELS)),  # the channels the checkpoint holds a value of
        st.lists(  # the writes stored at it: channel, task path, task number, value
            st.tuples(
                st.sampled_from(CHANNELS),
                st.sampled_from(["", "~__pregel_pull, a", "~__pregel_push, 0"]),
                st.integers(0, 3),
                st.integers(0, 99),
            ),
            max_size=5,
        ),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps)
def test_random_chains_of_writes_give_langgraphs_history(
    tmp_path_factory: pytest.TempPathFactory, steps: Any
) -> None:
    saver = HaythamSaver(tmp_path_factory.mktemp("random"), review=False)
    thread: Any = {"configurable": {"thread_id": "r", "checkpoint_ns": ""}}
    configs: list[Any] = []
    for number, (parent, held, writes) in enumerate(steps):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {c: f"value of {c} at {number}" for c in sorted(held)}
        base = (
            configs[parent % len(configs)]
            if configs and parent < 40
            else (configs[-1] if configs else thread)
        )
        config = saver.put(base, checkpoint, {"step": number}, {})
        by_task: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)
        for channel, task_path, task, value in writes:
            by_task[(f"task-{task} of {task_path}", task_path)].append((channel, value))  # ids hash paths
        for (task_id, task_path), task_writes in by_task.items():
            saver.put_writes(config, task_writes, task_id, task_path)
        configs.append(config)
    assert _assert_same_everywhere(saver, "r", CHANNELS) == len(steps)


# ---------------------------------------------------------------- work


def test_the_walk_opens_the_chain_and_no_other_file(
    tmp_path: Path, counters: WorkCounters, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "RACY_NS", -(10**15))  # every file counts as settled at once
    writer = HaythamSaver(tmp_path, review=False)
    config: Any = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    chain: list[Any] = []
    for step in range(120):  # a seed of "log" every 30th checkpoint; a fork of 60 off step 10
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"log": [f"seed {step}"]} if step % 30 == 0 else {}
        parent = chain[10] if step == 60 else config
        config = writer.put(parent, checkpoint, {"step": step}, {})
        writer.put_writes(config, [("log", [f"write {step}"])], f"task-{step}")
        chain.append(config)
    target = chain[100]  # its chain: 99..60 on the fork, then 10 and back to the seed at 0
    saver = HaythamSaver(tmp_path, review=False)  # a new process's saver: nothing kept
    counters.reset()
    history = saver.get_delta_channel_history(config=target, channels=["log"])
    assert history["log"]["seed"] == ["seed 90"]
    assert [w[2] for w in history["log"]["writes"]] == [[f"write {s}"] for s in range(90, 100)]
    assert counters.opened == 1 + 2 * 10  # the target, and 90..99 with their writes
    assert counters.listed == 1

    counters.reset()
    far = saver.get_delta_channel_history(config=chain[59], channels=["log"])  # seed at 30
    assert far["log"]["seed"] == ["seed 30"] and len(far["log"]["writes"]) == 29
    assert counters.opened == 1 + 2 * 29
    counters.reset()
    assert saver.get_delta_channel_history(config=chain[59], channels=["log"]) == far
    assert counters.opened == 0  # read once: the files are unchanged

    counters.reset()
    never = saver.get_delta_channel_history(config=chain[100], channels=["unseeded"])
    assert "seed" not in never["unseeded"] and never["unseeded"]["writes"] == []
    assert counters.opened == 2 * 30 + 2 * 11  # the chain files not read before: 60..89 and 0..10
