"""``CheckpointManager.save_phase``: a whole phase as one journaled operation (issue 15, S8).

It must write exactly the files the per-call API writes (with a fixed clock, the same bytes),
announce the same events, and be one durability point: one journal record and fewer fsyncs
than the calls one by one. Its kill points are in tests/test_fault_injection.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from workcount import WorkCounters

from haytham import CheckpointManager
from haytham.errors import InvalidArgumentError
from haytham.store import journal
from haytham.store.events import Event

P, S = "acme", "s-1"
AGENTS = ("analyst", "critic", "writer")
RUNS = [{"agent_name": a, "tokens": 1500, "cost": 0.01, "duration": 1.5} for a in AGENTS]
REVIEW = {"reviewed": True, "approved": True, "comments": "Looks good; ship it."}


def clock() -> datetime:
    return datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def manager(base: Path) -> CheckpointManager:
    m = CheckpointManager(base, clock=clock)
    m.create_session(P, S, "ada", execution_mode="mvp")
    return m


def files(base: Path) -> dict[str, bytes]:
    """Every file a reader sees, with its bytes."""
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(base).parts)
    }


def per_call(m: CheckpointManager, phase: int, text: str = "text of {}\n") -> None:
    for agent in AGENTS:
        m.save_agent_output(P, S, phase, agent, text.format(agent), duration=1.5, model="m")
    m.save_checkpoint(P, S, phase, "completed", RUNS)
    m.save_user_feedback(P, S, phase, **REVIEW)


def batch(m: CheckpointManager, phase: int, text: str = "text of {}\n") -> Path:
    outputs = {a: {"output_content": text.format(a), "duration": 1.5, "model": "m"} for a in AGENTS}
    return m.save_phase(P, S, phase, outputs, "completed", REVIEW, agents=RUNS)


def recorded(m: CheckpointManager) -> list[Event]:
    seen: list[Event] = []
    for kind in ("agent_output_saved", "checkpoint_saved", "phase_completed", "session_completed"):
        m.on(kind, seen.append)
    m.on("feedback_saved", seen.append)
    return seen


def test_save_phase_writes_the_bytes_and_events_of_the_calls_one_by_one(tmp_path: Path) -> None:
    calls, one = manager(tmp_path / "calls"), manager(tmp_path / "batch")
    by_calls, by_batch = recorded(calls), recorded(one)
    for phase in (1, 2):
        per_call(calls, phase)
        path = batch(one, phase)
        assert path == one.phase_dir(P, S, phase) / "checkpoint.md"
    written = files(tmp_path / "batch")
    assert written == files(tmp_path / "calls")
    assert any(name.startswith(f"{P}/sessions/{S}/history/") for name in written)
    assert [(e.name, e.phase, e.path and e.path.name, dict(e.data)) for e in by_batch] == [
        (e.name, e.phase, e.path and e.path.name, dict(e.data)) for e in by_calls
    ]
    assert "session_completed" not in [e.name for e in by_batch]  # mvp has three phases
    loaded, expected = one.load_session(P, S), calls.load_session(P, S)
    assert {**loaded, "session_dir": None} == {**expected, "session_dir": None}
    assert one.validate_session(P, S) == []


@pytest.mark.parametrize("redo", [True, False], ids=["redo-record", "staged-files"])
def test_save_phase_is_one_journal_record_with_fewer_fsyncs(
    tmp_path: Path, counters: WorkCounters, redo: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "REDO_LOG", redo)
    calls, one = manager(tmp_path / "calls"), manager(tmp_path / "batch")
    for m, save in ((calls, per_call), (one, batch)):
        save(m, 1)  # the history folder exists from here on
        counters.reset()
        save(m, 2)
        if m is calls:
            call_fsyncs = counters.fsyncs
            continue
        assert counters.records == 1
        if redo:
            assert journal.redo_available()  # Linux: syncfs and a boot id
            # the record, holding the 8 files' contents (3 outputs, checkpoint, 2 history
            # entries, feedback, manifest), fsynced; then one syncfs once they are renamed
            assert counters.fsyncs == 1 + 1
        else:
            # 8 staged files, the record, and each touched folder once: the phase,
            # history/ and the session
            assert counters.fsyncs == 8 + 1 + 3
        assert counters.fsyncs < call_fsyncs


def test_saving_the_same_phase_again_changes_nothing(tmp_path: Path, counters: WorkCounters) -> None:
    m = manager(tmp_path)
    batch(m, 1)
    before = files(tmp_path)
    seen = recorded(m)
    counters.reset()
    batch(m, 1)
    assert files(tmp_path) == before
    assert counters.records == 0 and seen == []


def test_outputs_alone_and_default_agent_rows(tmp_path: Path) -> None:
    m = manager(tmp_path)
    m.save_phase(P, S, 1, {"writer": "draft\n"}, "in_progress")
    checkpoint = m.load_checkpoint(P, S, 1)
    assert [(r.agent_name, r.status) for r in checkpoint.agents] == [("writer", "completed")]
    assert m.load_agent_output(P, S, 1, "writer").content == "draft\n"
    assert m.load_feedback(P, S, 1) is None
    m.save_phase(P, S, 1, {"writer": "final\n"}, "completed")
    digest = m.load_checkpoint(P, S, 1).outputs_digest
    m.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer"}], name="again")
    assert m.load_checkpoint(P, S, 1).outputs_digest == digest  # the staged text counted


@pytest.mark.parametrize(
    ("outputs", "feedback"),
    [
        ({"writer": 3}, None),
        ({"writer": {"content": "x"}}, None),
        ({"../x": "text"}, None),
        ({"writer": "text"}, {"reviewed": True}),
        ({"writer": "text"}, {"reviewed": True, "approved": True, "action": "maybe"}),
    ],
)
def test_bad_arguments_change_nothing(tmp_path: Path, outputs: dict[str, object], feedback: object) -> None:
    m = manager(tmp_path)
    before = files(tmp_path)
    with pytest.raises(InvalidArgumentError):
        m.save_phase(P, S, 1, outputs, "completed", feedback)  # type: ignore[arg-type]
    assert files(tmp_path) == before
