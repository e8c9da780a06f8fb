"""Concurrency: real processes saving to one session at once, readers alongside, and locks."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from workers import PHASES, PROJECT, SESSION, content

from haytham import CheckpointManager, HaythamError, LockTimeout
from haytham.store.session_files import kind_of
from haytham.store.validation import EDITED_FIELD

WORKER = Path(__file__).resolve().parent / "workers.py"


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize(
    ("processes", "saves"),
    [
        pytest.param(4, 20, id="4-processes"),
        pytest.param(8, 50, id="8-processes", marks=pytest.mark.slow),
    ],
)
def test_processes_saving_at_once_lose_nothing_and_tear_nothing(
    tmp_path: Path, processes: int, saves: int
) -> None:
    """Writers on every phase at once with a reader alongside; the slow tier runs 8 x 50 saves."""
    manager = CheckpointManager(base_dir=tmp_path)
    session = manager.create_session(PROJECT, SESSION, "u", execution_mode="mvp")
    stop = threading.Event()
    torn: list[str] = []
    reads = [0]

    def read_continuously() -> None:
        while not stop.is_set():
            for path in session.rglob("*.md"):
                kind = kind_of(path)
                assert kind is not None, path
                _, issues = kind.read_path(path)
                reads[0] += 1
                if issues:
                    torn.append(str(issues[0]))

    reader = threading.Thread(target=read_continuously)
    reader.start()
    workers = [_start("concurrent", str(tmp_path), str(w), str(saves)) for w in range(processes)]
    results = [w.communicate(timeout=300) for w in workers]
    stop.set()
    reader.join()

    for worker, (out, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err
        assert out.count("ack") == saves
    assert torn == []
    assert reads[0] > 0

    # Every agent file holds its writer's last output, and the manifest shows every checkpoint.
    for w in range(processes):
        last_output = max(i for i in range(saves) if i % 2 == 0)
        phase = PHASES[(w + last_output) % len(PHASES)]
        text = manager.get_phase_outputs(PROJECT, SESSION, [phase])[phase][f"w{w}"]
        outputs_of_w = [
            content(PHASES[(w + i) % len(PHASES)], f"w{w}", i)
            for i in range(saves)
            if i % 2 == 0 and PHASES[(w + i) % len(PHASES)] == phase
        ]
        assert text == outputs_of_w[-1]
    # The manifest agrees without repair. The only warnings allowed are stale phases and
    # changed outputs: a worker that saved a phase's outputs again after its checkpoint
    # recorded them changed them since (EDITED_FIELD at the output), and makes the later
    # phases built on them stale, which is true of the files.
    issues = manager.validate_session(PROJECT, SESSION)
    assert [i for i in issues if i.severity == "error"] == []
    assert {i.field for i in issues} <= {"Built From", EDITED_FIELD}
    manifest = manager.load_manifest(PROJECT, SESSION)
    saved = manager.load_checkpoints(PROJECT, SESSION)
    assert sorted(saved) == list(PHASES)
    assert {c.status for c in saved.values()} == {"completed"}
    view = manager.state(PROJECT, SESSION)
    rows = {row.number: row.status for row in manifest.phases if row.number in saved}
    assert rows == {number: view.phase(number).state for number in saved}
    assert set(rows.values()) <= {"completed", "stale"}
    assert len(issues) == len(view.stale) + sum(len(v.edited) for v in view.phases)
    assert manifest.metrics.total_tokens == sum(c.total_tokens or 0 for c in saved.values())


def test_a_held_lock_times_out_with_a_clear_error_and_a_dead_holder_frees_it(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path, lock_timeout=0.3)
    manager.create_session(PROJECT, SESSION, "u")
    holder = _start("hold", str(tmp_path))
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    before = (manager.session_dir(PROJECT, SESSION) / "session_manifest.md").read_bytes()
    with pytest.raises(
        LockTimeout
    ) as raised:  # while the holder still holds it (pytest-timeout bounds the wait)
        manager.save_checkpoint(PROJECT, SESSION, 1, "completed", [])
    assert holder.poll() is None
    assert isinstance(raised.value, TimeoutError)
    assert isinstance(raised.value, HaythamError)
    assert f"{PROJECT}/{SESSION}" in str(raised.value)
    assert (manager.session_dir(PROJECT, SESSION) / "session_manifest.md").read_bytes() == before
    assert not (manager.session_dir(PROJECT, SESSION) / "phase_1_concept" / "checkpoint.md").exists()

    holder.send_signal(signal.SIGKILL)  # the kernel releases a dead process's lock
    holder.communicate()
    manager.save_checkpoint(PROJECT, SESSION, 1, "completed", [])
    assert manager.load_session(PROJECT, SESSION)["completed_phases"] == [1]
