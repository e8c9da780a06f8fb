#!/usr/bin/env python3
"""Quick timings of the two everyday operations (medians of repeated runs, not asserted).

    .venv/bin/python benchmarks/timings.py

- save one phase: 3 agent outputs of about 8 KB, the checkpoint, the feedback;
- load_session + get_phase_outputs for a full 7-phase session (3 agents per phase).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from haytham import CheckpointManager

OUTPUT = ("Lorem ipsum dolor sit amet, **consectetur** adipiscing elit.\n\n" * 130)[:8192]
AGENTS = ("analyst", "critic", "writer")


def median_ms(action: Callable[[int], None], repeats: int) -> float:
    times = []
    for index in range(repeats):
        started = time.perf_counter()
        action(index)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def save_phase(manager: CheckpointManager, session: str, phase: int) -> None:
    for agent in AGENTS:
        manager.save_agent_output(
            "bench",
            session,
            phase,
            agent,
            OUTPUT,
            duration=1.5,
            model="m",
            input_tokens=100,
            output_tokens=200,
            tools_used=["search"],
        )
    manager.save_checkpoint(
        "bench",
        session,
        phase,
        "completed",
        [{"agent_name": a, "tokens": 300, "cost": 0.01, "duration": 1.5} for a in AGENTS],
    )
    manager.save_user_feedback("bench", session, phase, True, True, comments="Fine.")


def main() -> None:
    with tempfile.TemporaryDirectory() as base:
        manager = CheckpointManager(base_dir=Path(base))

        def one_phase(index: int) -> None:
            manager.create_session("bench", f"s{index}", "u", execution_mode="full")
            save_phase(manager, f"s{index}", 1)

        save = median_ms(one_phase, 50)
        manager.create_session("bench", "full", "u", execution_mode="full")
        for phase in range(1, 8):
            save_phase(manager, "full", phase)

        def load(_: int) -> None:
            manager.load_session("bench", "full")
            manager.get_phase_outputs("bench", "full")

        loaded = median_ms(load, 50)
    print(f"save one phase (3 x 8 KB outputs, checkpoint, feedback): {save:.2f} ms (median of 50)")
    print(f"load_session + get_phase_outputs, 7 phases x 3 agents:  {loaded:.2f} ms (median of 50)")


if __name__ == "__main__":
    main()
