#!/usr/bin/env python3
"""HaythamSaver beside LangGraph's SqliteSaver on the same graph (medians, not asserted).

    pip install 'haytham[langgraph]' langgraph-checkpoint-sqlite
    .venv/bin/python benchmarks/langgraph_peers.py [THREADS]

The graph writes a draft of about 2 KB of markdown over 10 steps, with a list of messages
and a counter. Its checkpoints are captured once, then replayed into each saver:

- put: one checkpoint (the whole 12-checkpoint thread, per checkpoint);
- put_writes: one task's writes;
- get_tuple: the thread's newest checkpoint, and one by id;
- list: every checkpoint of a thread, and ``limit=1``;
- invoke: the whole graph run end to end with the saver.

Both savers write durably: haytham fsyncs each file, SQLite (WAL, synchronous=FULL) each commit.
"""

from __future__ import annotations

import operator
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from haytham.integrations.langgraph import HaythamSaver

STEPS = 10
PARAGRAPH = "A paragraph of the report, with **markdown** and a [link](https://example.com). " * 3


class State(TypedDict, total=False):
    draft: str
    notes: Annotated[list[str], operator.add]
    step: int


def write(state: State) -> State:
    step = state.get("step", 0) + 1
    return {
        "draft": state.get("draft", "# Report\n") + f"\n## Part {step}\n\n{PARAGRAPH}\n",
        "notes": [f"part {step}"],
        "step": step,
    }


def route(state: State) -> str:
    return "write" if state["step"] < STEPS else END


def graph(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", route, ["write", END])
    return builder.compile(checkpointer=saver)


class Recorder(InMemorySaver):
    """An in-memory saver that keeps the arguments of every put and put_writes."""

    def __init__(self) -> None:
        super().__init__()
        self.put_calls: list[tuple[Any, ...]] = []
        self.write_calls: list[tuple[Any, ...]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.put_calls.append((config, checkpoint, metadata, new_versions))
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.write_calls.append((config, writes, task_id, task_path))
        super().put_writes(config, writes, task_id, task_path)


def median_ms(times: Sequence[float]) -> float:
    return statistics.median(times) * 1000


def timed(action: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    """Seconds one call of ``action(*args, **kwargs)`` takes."""
    started = time.perf_counter()
    action(*args, **kwargs)
    return time.perf_counter() - started


def listed(saver: BaseCheckpointSaver[Any], config: Any, limit: int | None = None) -> list[Any]:
    return list(saver.list(config, limit=limit))


def on_thread(config: Any, thread: str) -> Any:
    return {"configurable": {**config["configurable"], "thread_id": thread}}


def measure(saver: BaseCheckpointSaver[Any], recorded: Recorder, threads: int) -> dict[str, float]:
    put_times, write_times = [], []
    for index in range(threads):
        thread = f"bench-{index}"
        for config, checkpoint, metadata, versions in recorded.put_calls:
            put_times.append(timed(saver.put, on_thread(config, thread), checkpoint, metadata, versions))
        for config, writes, task_id, task_path in recorded.write_calls:
            write_times.append(timed(saver.put_writes, on_thread(config, thread), writes, task_id, task_path))
    middle = recorded.put_calls[len(recorded.put_calls) // 2][1]["id"]
    latest, by_id, every, first = [], [], [], []
    for index in range(threads):
        config = {"configurable": {"thread_id": f"bench-{index}", "checkpoint_ns": ""}}
        latest.append(timed(saver.get_tuple, config))
        by_id.append(
            timed(saver.get_tuple, {"configurable": {**config["configurable"], "checkpoint_id": middle}})
        )
        every.append(timed(listed, saver, config))
        first.append(timed(listed, saver, config, 1))
    runs = [
        timed(graph(saver).invoke, {"step": 0}, {"configurable": {"thread_id": f"run-{index}"}})
        for index in range(max(3, threads // 4))
    ]
    return {
        "put (one checkpoint)": median_ms(put_times),
        "put_writes (one task)": median_ms(write_times),
        "get_tuple (newest)": median_ms(latest),
        "get_tuple (by id)": median_ms(by_id),
        f"list (all {len(recorded.put_calls)})": median_ms(every),
        "list (limit=1)": median_ms(first),
        f"invoke ({STEPS} steps)": median_ms(runs),
    }


def main(argv: list[str]) -> int:
    threads = int(argv[0]) if argv else 20
    recorded = Recorder()
    graph(recorded).invoke({"step": 0}, {"configurable": {"thread_id": "record"}})
    with tempfile.TemporaryDirectory() as directory:
        haytham = measure(HaythamSaver(Path(directory) / "projects"), recorded, threads)
        connection = sqlite3.connect(Path(directory) / "checkpoints.sqlite", check_same_thread=False)
        sqlite = measure(SqliteSaver(connection), recorded, threads)
        connection.close()
    print(f"median ms over {threads} threads of {len(recorded.put_calls)} checkpoints each")
    print("| operation | HaythamSaver | SqliteSaver | ratio |\n|---|---:|---:|---:|")
    for name in haytham:
        print(f"| {name} | {haytham[name]:.2f} | {sqlite[name]:.2f} | {haytham[name] / sqlite[name]:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
