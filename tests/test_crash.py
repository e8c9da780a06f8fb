"""Crash safety: a real saving process is killed with SIGKILL at random moments.

The default run kills it 10 times; the slow tier (``-m slow``, run by CI) 50 times, and
``benchmarks/crash_cycles.py`` 1,000 times. Every cycle checks every file, so the short run
covers every check and the long ones only widen the sample of kill moments.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from crash_harness import PHASE_DIRS, PROJECT, SESSION, Counts, run_cycle

from haytham import CheckpointManager
from haytham.store.fs import temporary_leftovers


@pytest.mark.parametrize(
    "cycles", [pytest.param(10, id="10-kills"), pytest.param(50, id="50-kills", marks=pytest.mark.slow)]
)
def test_sigkill_at_random_moments_never_breaks_or_loses_anything(tmp_path: Path, cycles: int) -> None:
    rng = random.Random(20261125)
    counts = Counts()
    for cycle in range(cycles):
        run_cycle(tmp_path, cycle, rng, counts)
    assert counts.problems == []
    assert counts.kills == cycles
    assert counts.acknowledged_saves >= cycles
    assert counts.corrupt_files == 0
    assert counts.lost_acknowledged_saves == 0
    assert counts.visible_temporary_files == 0
    assert counts.lost_manifest_rows == 0

    # Leftovers of killed writers go away with the next write to their directory.
    manager = CheckpointManager(base_dir=tmp_path)
    for phase in PHASE_DIRS:
        manager.save_agent_output(PROJECT, SESSION, phase, "alpha", "final")
        manager.save_checkpoint(PROJECT, SESSION, phase, "completed", [])
    session = tmp_path / PROJECT / "sessions" / SESSION
    for directory in [session, *(session / d for d in PHASE_DIRS.values())]:
        assert temporary_leftovers(directory) == []
