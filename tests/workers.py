"""Subprocess workers for the crash and concurrency tests (and benchmarks/crash_cycles.py).

Run as ``python tests/workers.py MODE BASE_DIR ...``. Each worker prints one ``ack`` line,
flushed, after every save call returns, so the parent knows exactly which saves were
acknowledged before it killed the process.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from haytham import CheckpointManager
from haytham.store import lifecycle

PROJECT, SESSION = "crash", "s-1"
PHASES = (1, 2, 3)
AGENTS = ("alpha", "beta")


def content(phase: int, agent: str, iteration: int) -> str:
    """Output text that names its writer and grows, so a torn write cannot look whole."""
    return f"## iteration {iteration}\n\n{agent} in phase {phase}\n" + ("x" * 200 + "\n") * (iteration % 7)


def crash_loop(base_dir: str, start: int) -> None:
    """Save outputs, checkpoints and feedback round-robin, from ``start``, until killed."""
    manager = CheckpointManager(base_dir=base_dir)
    manager.create_session(PROJECT, SESSION, "u", execution_mode="mvp", exist_ok=True)
    iteration = start
    while True:
        phase = PHASES[iteration % len(PHASES)]
        for agent in AGENTS:
            manager.save_agent_output(PROJECT, SESSION, phase, agent, content(phase, agent, iteration))
            print(f"ack output {phase} {agent} {iteration}", flush=True)
        status = "completed" if iteration % 2 else "in_progress"
        agents = [{"agent_name": a, "status": status, "tokens": iteration, "cost": 0.01} for a in AGENTS]
        manager.save_checkpoint(PROJECT, SESSION, phase, status, agents, retry_count=iteration)
        print(f"ack checkpoint {phase} - {iteration}", flush=True)
        done = bool(iteration % 2)  # a review approves a completed phase; a running one gets the blank file
        if done:  # a completed phase built on outputs rewritten since is stale: no reviewer approves it
            state = manager.state(PROJECT, SESSION).phase(phase).state
            done = not isinstance(lifecycle.check_move("approve", state, "reviewer"), str)
        manager.save_user_feedback(
            PROJECT,
            SESSION,
            phase,
            done,
            done,
            comments=f"iteration {iteration}",
            retry_count=iteration,
        )
        print(f"ack feedback {phase} - {iteration}", flush=True)
        iteration += 1


def concurrent_saver(base_dir: str, worker: int, saves: int) -> None:
    """Make ``saves`` saves to the shared session: own agents, own and shared phases."""
    manager = CheckpointManager(base_dir=base_dir, lock_timeout=60)
    for index in range(saves):
        phase = PHASES[(worker + index) % len(PHASES)]
        agent = f"w{worker}"
        if index % 2 == 0:
            manager.save_agent_output(PROJECT, SESSION, phase, agent, content(phase, agent, index))
        else:
            agents = [{"agent_name": agent, "tokens": worker * 1000 + index, "cost": 0.001}]
            manager.save_checkpoint(PROJECT, SESSION, phase, "completed", agents, retry_count=index)
        print(f"ack {phase} {agent} {index}", flush=True)


def hold_lock(base_dir: str) -> None:
    """Take the session's lock, say so, then wait to be killed."""
    from haytham.store import fs as _storage

    manager = CheckpointManager(base_dir=base_dir)
    with _storage.locked(manager.session_dir(PROJECT, SESSION), 5, "test"):
        print("locked", flush=True)
        time.sleep(600)


if __name__ == "__main__":
    mode, base = sys.argv[1], sys.argv[2]
    if mode == "crash":
        crash_loop(base, int(sys.argv[3]))
    elif mode == "concurrent":
        concurrent_saver(base, int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "hold":
        hold_lock(base)
    else:
        raise SystemExit(f"unknown mode {mode}")
