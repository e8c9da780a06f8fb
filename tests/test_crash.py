"""Crash safety: a real saving process is killed with SIGKILL at random moments, 50 times."""

from __future__ import annotations

import random
from pathlib import Path

from crash_harness import PHASE_DIRS, PROJECT, SESSION, Counts, run_cycle

from haytham import CheckpointManager
from haytham.store.fs import temporary_leftovers

CYCLES = 50


def test_sigkill_at_random_moments_never_breaks_or_loses_anything(tmp_path: Path) -> None:
    rng = random.Random(20261125)
    counts = Counts()
    for cycle in range(CYCLES):
        run_cycle(tmp_path, cycle, rng, counts)
    assert counts.problems == []
    assert counts.kills == CYCLES
    assert counts.acknowledged_saves >= CYCLES
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
