"""CheckpointManager through its public API, on real files in temporary directories."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import haytham
from haytham import CheckpointManager
from haytham.errors import (
    HaythamError,
    InvalidArgumentError,
    PhaseNotFoundError,
    ProjectNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    UnknownPhaseError,
)

P, S = "acme", "s-001"
ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that moves one second per call, the same on every run."""
    moment = [start or datetime(2024, 11, 24, 10, 0, tzinfo=timezone.utc)]

    def clock() -> datetime:
        moment[0] += timedelta(seconds=1)
        return moment[0]

    return clock


def agent(name: str, **values: Any) -> dict[str, Any]:
    return {"agent_name": name, "status": "completed", **values}


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path / "projects", clock=ticking_clock())
    m.create_session(P, S, "user-1", execution_mode="mvp")
    return m


def complete(m: CheckpointManager, phase: int, **kwargs: Any) -> None:
    m.save_checkpoint(
        P, S, phase, "completed", [agent(f"agent{phase}", tokens=10, cost=0.5, duration=2.0)], **kwargs
    )


# ----------------------------------------------------------------------------- imports


def test_import_paths_of_the_product_document() -> None:
    from haytham.store.manager import CheckpointManager as FromModule

    assert FromModule is haytham.CheckpointManager
    assert {"CheckpointManager", "HaythamError", "Issue"} <= set(haytham.__all__)


# ----------------------------------------------------------------------------- create


@pytest.mark.parametrize(
    ("mode", "dirs"),
    [
        (
            "mvp",
            [
                "phase_1_concept",
                "phase_2_market_research",
                "phase_3_niche_selection",
                "phase_6_validation",
                "phase_7_synthesis",
            ],
        ),
        (
            "full",
            [
                "phase_1_concept",
                "phase_2_market_research",
                "phase_3_niche_selection",
                "phase_4_product_strategy",
                "phase_5_business_planning",
                "phase_6_validation",
                "phase_7_synthesis",
            ],
        ),
    ],
)
def test_create_session_makes_manifest_and_the_modes_phase_directories(
    tmp_path: Path, mode: str, dirs: list[str]
) -> None:
    m = CheckpointManager(base_dir=tmp_path)
    session_dir = m.create_session(P, S, "u", execution_mode=mode)
    assert session_dir == tmp_path / P / "sessions" / S
    assert sorted(p.name for p in session_dir.iterdir() if p.is_dir()) == sorted(dirs)
    state = m.load_session(P, S)
    assert state["execution_mode"] == mode
    assert state["current_phase"] == 0
    assert state["can_resume"] is False
    assert state["next_phase"] == 1
    assert state["status"] == "in_progress"
    assert list(state["phase_statuses"]) == [int(d.split("_")[1]) for d in dirs]


def test_create_session_twice_raises_and_leaves_the_session_untouched(manager: CheckpointManager) -> None:
    complete(manager, 1)
    root = manager.session_dir(P, S)
    before = snapshot(root)
    with pytest.raises(SessionExistsError) as raised:
        manager.create_session(P, S, "user-1", execution_mode="mvp")
    assert isinstance(raised.value, FileExistsError)
    assert isinstance(raised.value, HaythamError)
    assert "exist_ok" in str(raised.value)
    assert snapshot(root) == before


def test_create_session_exist_ok_returns_the_existing_session_unchanged(manager: CheckpointManager) -> None:
    complete(manager, 1)
    root = manager.session_dir(P, S)
    before = snapshot(root)
    assert manager.create_session(P, S, "user-1", execution_mode="mvp", exist_ok=True) == root
    assert snapshot(root) == before
    with pytest.raises(SessionExistsError, match=r"'mvp'"):
        manager.create_session(P, S, "user-1", execution_mode="full", exist_ok=True)
    assert snapshot(root) == before


# ------------------------------------------------------------------------- manifest


def test_manifest_rows_status_current_phase_and_metrics_follow_the_checkpoints(
    manager: CheckpointManager,
) -> None:
    complete(manager, 1, started="2024-11-24T10:00:00Z", completed="2024-11-24T10:02:00Z")
    manifest = manager.load_manifest(P, S)
    assert manifest.phases[0].status == "completed"  # gated, but no review file: nobody asked
    assert manifest.phases[0].started == "2024-11-24T10:00:00Z"
    assert manifest.phases[0].duration == 120.0
    assert manifest.current.number == 2
    assert manifest.current.can_resume is True
    assert manifest.metrics.total_tokens == 10
    assert manifest.metrics.total_cost == 0.5

    manager.save_checkpoint(P, S, 2, "in_progress", [agent("a", status="in_progress")])
    assert manager.load_manifest(P, S).current.number == 2
    assert manager.load_manifest(P, S).current.status == "in_progress"

    for phase in (2, 3, 6):
        complete(manager, phase)
    complete(manager, 1)  # re-saving an earlier phase never moves Current Phase back
    manifest = manager.load_manifest(P, S)
    assert manifest.current.number == 7
    assert manifest.status == "in_progress"
    complete(manager, 7)
    manifest = manager.load_manifest(P, S)
    assert manifest.status == "completed"
    assert manifest.current.can_resume is False
    assert manifest.metrics.total_tokens == 50
    assert manifest.metrics.total_cost == 2.5
    state = manager.load_session(P, S)
    assert state["completed_phases"] == [1, 2, 3, 6, 7]
    assert state["next_phase"] is None


def test_a_failed_phase_fails_the_session(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "failed", [agent("a", status="failed")], errors=["boom"])
    state = manager.load_session(P, S)
    assert state["status"] == "failed"
    assert state["current_phase"] == 1
    assert state["can_resume"] is True
    assert manager.load_checkpoint(P, S, 1).errors == ("boom",)


def test_last_updated_is_refreshed_by_each_save(manager: CheckpointManager) -> None:
    first = manager.load_manifest(P, S).last_updated
    complete(manager, 1)
    second = manager.load_manifest(P, S).last_updated
    assert second > first
    assert manager.load_manifest(P, S).created < second


def test_load_session_derives_a_manifest_left_behind_by_a_crash_and_repair_writes_it(
    manager: CheckpointManager,
) -> None:
    manifest_path = manager.session_dir(P, S) / "session_manifest.md"
    stale = manifest_path.read_bytes()
    complete(manager, 1)
    manifest_path.write_bytes(stale)  # as if the process died before the manifest update
    mtime = manifest_path.stat().st_mtime_ns
    assert manager.validate_session(P, S)  # the disagreement is reported
    state = manager.load_session(P, S)
    assert state["completed_phases"] == [1]
    assert state["metrics"]["total_tokens"] == 10
    assert state["phases"][0]["status"] == "completed"
    assert manifest_path.read_bytes() == stale  # reads never write
    assert manifest_path.stat().st_mtime_ns == mtime
    assert manager.validate_session(P, S)  # still reported, until a write repairs it
    manager.repair(P, S)
    assert manifest_path.read_bytes() != stale
    assert manager.load_manifest(P, S).phases[0].status == "completed"
    assert manager.validate_session(P, S) == []
    assert {k: v for k, v in manager.load_session(P, S).items() if k != "last_updated"} == {
        k: v for k, v in state.items() if k != "last_updated"
    }


# --------------------------------------------------------------------------- reading


def test_get_phase_outputs_defaults_to_completed_phases_in_checkpoint_order(
    manager: CheckpointManager,
) -> None:
    for name in ("zeta", "alpha"):
        manager.save_agent_output(P, S, 2, name, f"output of {name}")
    manager.save_agent_output(P, S, 3, "draft", "not finished")
    manager.save_checkpoint(P, S, 2, "completed", [agent("zeta"), agent("alpha")])
    manager.save_checkpoint(P, S, 3, "in_progress", [agent("draft", status="in_progress")])
    outputs = manager.get_phase_outputs(P, S)
    assert outputs == {2: {"zeta": "output of zeta", "alpha": "output of alpha"}}
    assert list(outputs[2]) == ["zeta", "alpha"]
    assert manager.get_phase_outputs(P, S, [3]) == {3: {"draft": "not finished"}}
    assert manager.get_phase_outputs(P, S, [1]) == {1: {}}


def test_agent_output_record_keeps_every_field(manager: CheckpointManager) -> None:
    manager.save_agent_output(
        P,
        S,
        1,
        "writer",
        "text",
        status="failed",
        duration=0.0,
        model="m-1",
        input_tokens=0,
        output_tokens=7,
        tools_used=["search", "a, b"],
        error_type="ValueError",
        error_message="bad\nthing",
        stack_trace="Traceback:\n  line 1\n```\n",
    )
    record = manager.load_agent_output(P, S, 1, "writer")
    assert (record.status, record.duration, record.model) == ("failed", 0.0, "m-1")
    assert (record.input_tokens, record.output_tokens) == (0, 7)
    assert record.tools_used == ("search", "a, b")
    assert (record.error_type, record.error_message) == ("ValueError", "bad\nthing")
    assert record.stack_trace == "Traceback:\n  line 1\n```\n"
    assert record.content == "text"


def test_feedback_and_approved_phases(manager: CheckpointManager) -> None:
    complete(manager, 1)
    complete(manager, 2)
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True, comments="Looks great!")
    manager.save_user_feedback(
        P,
        S,
        2,
        reviewed=True,
        approved=False,
        comments="More EU data",
        action="retry",
        requested_changes=["Add EU market data", "Compare pricing tiers"],
        retry_count=1,
    )
    assert manager.get_approved_phases(P, S) == [1]
    feedback = manager.load_feedback(P, S, 2)
    assert feedback is not None
    assert feedback.requested_changes == ("Add EU market data", "Compare pricing tiers")
    assert (feedback.action, feedback.retry_count, feedback.approved) == ("retry", 1, False)
    assert manager.load_feedback(P, S, 3) is None


def test_validate_checkpoint_and_session_point_at_file_line_and_field(manager: CheckpointManager) -> None:
    complete(manager, 1)
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True)
    assert manager.validate_checkpoint(P, S, 1) == (True, [])
    assert manager.validate_session(P, S) == []
    feedback = manager.session_dir(P, S) / "phase_1_concept" / "user_feedback.md"
    feedback.write_text(feedback.read_text().replace("Approved: true", "Approved: maybe"))
    ok, errors = manager.validate_checkpoint(P, S, 1)
    assert not ok
    assert errors == [f"{feedback}:5: Approved: 'maybe' is not a boolean (expected true/false, yes/no)"]
    [issue] = manager.validate_session(P, S)
    assert (issue.path, issue.line, issue.field) == (feedback, 5, "Approved")
    ok, errors = manager.validate_checkpoint(P, S, 2)
    assert not ok
    assert "checkpoint.md is missing" in errors[0]


# ---------------------------------------------------------------------------- errors


def test_missing_things_raise_file_not_found_subclasses(manager: CheckpointManager) -> None:
    cases: list[tuple[Callable[[], object], type[Exception]]] = [
        (lambda: manager.load_session("nobody", S), ProjectNotFoundError),
        (lambda: manager.load_session(P, "nothing"), SessionNotFoundError),
        (lambda: manager.save_checkpoint(P, "nothing", 1, "completed", []), SessionNotFoundError),
        (lambda: manager.load_checkpoint(P, S, 1), PhaseNotFoundError),
    ]
    for call, expected in cases:
        with pytest.raises(expected) as raised:
            call()
        assert isinstance(raised.value, FileNotFoundError)
        assert isinstance(raised.value, HaythamError)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.save_checkpoint(P, S, 1, "done", []), "status"),
        (lambda m: m.save_checkpoint(P, S, 1, "completed", [], execution_mode="fast"), "execution_mode"),
        (lambda m: m.save_checkpoint(P, S, 1, "completed", [], retry_count=-1), "retry_count"),
        (lambda m: m.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokns": 1}]), "agents"),
        (lambda m: m.save_checkpoint(P, S, 1, "completed", [], started="yesterday"), "started"),
        (lambda m: m.save_user_feedback(P, S, 1, True, True, action="maybe"), "action"),
        (lambda m: m.save_user_feedback(P, S, 1, "yes", True), "reviewed"),
        (lambda m: m.save_agent_output(P, S, 1, "a", "x", status="weird"), "status"),
        (lambda m: m.save_agent_output(P, S, 4, "a", "x"), "phase_num"),
        (lambda m: m.create_session(P, "s-2", "u", execution_mode="huge"), "execution_mode"),
        (lambda m: m.create_session(P, "s-2", "u", workflow_type="nope"), "workflow_type"),
    ],
)
def test_bad_arguments_raise_value_errors_and_change_nothing(
    manager: CheckpointManager, call: Callable[[CheckpointManager], object], field: str
) -> None:
    before = snapshot(manager.base_dir)
    with pytest.raises(InvalidArgumentError) as raised:
        call(manager)
    assert isinstance(raised.value, ValueError)
    assert raised.value.field == field
    assert snapshot(manager.base_dir) == before


def test_phase_outside_the_mode_names_the_modes_phases(manager: CheckpointManager) -> None:
    with pytest.raises(UnknownPhaseError, match=r"not run in 'mvp' mode \(its phases are 1, 2, 3, 6, 7\)"):
        manager.save_checkpoint(P, S, 4, "completed", [])
    assert not (manager.session_dir(P, S) / "phase_4_product_strategy").exists()


# ---------------------------------------------------------------------- determinism


def test_same_data_and_clock_give_the_same_bytes_with_lf_and_one_final_newline(tmp_path: Path) -> None:
    trees = []
    for name in ("one", "two"):
        m = CheckpointManager(base_dir=tmp_path / name, clock=ticking_clock())
        m.create_session(P, S, "u")
        m.save_agent_output(P, S, 1, "a", "x\r\ny\r\n\r\n", tools_used=[])
        complete(m, 1)
        m.save_user_feedback(P, S, 1, True, False, comments="\n## not a heading\n")
        trees.append(snapshot(tmp_path / name))
    assert trees[0] == trees[1]
    for name, data in trees[0].items():
        if name.endswith(".md"):
            assert b"\r" not in data, name
            assert data.endswith(b"\n") and not data.endswith(b"\n\n"), name


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "example", ROOT / "examples" / "checkpoint_manager_example.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["example"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("committed", [GOLDEN, ROOT / "projects"], ids=["golden", "projects-example"])
def test_golden_session_is_reproduced_byte_for_byte(tmp_path: Path, committed: Path) -> None:
    example = _load_example()
    manager = example.run(tmp_path, fixed_clock=True)
    session = Path(manager.load_session(example.PROJECT, example.SESSION)["session_dir"])
    produced = {k: v for k, v in snapshot(session).items() if k.endswith(".md")}
    expected_root = committed / example.PROJECT / "sessions" / example.SESSION
    expected = {k: v for k, v in snapshot(expected_root).items() if k.endswith(".md")}
    assert produced == expected
    assert len(produced) == 12  # 8 session files, 2 checkpoint and 2 review history entries
