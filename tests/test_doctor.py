"""CheckpointManager.check: findings about the session on disk, and safe repairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from haytham import CheckpointManager

P, S = "acme", "s-1"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path)
    m.create_session(P, S, "u")
    return m


def kinds(findings: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(f.kind for f in findings)


def test_a_clean_session_has_no_findings(manager: CheckpointManager) -> None:
    manager.save_agent_output(P, S, 1, "a", "x")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}])
    assert manager.check(P, S) == []


def test_doctor_reports_then_repairs_a_stale_manifest_and_leftovers(manager: CheckpointManager) -> None:
    session = manager.session_dir(P, S)
    manifest = session / "session_manifest.md"
    stale = manifest.read_bytes()
    manager.save_checkpoint(P, S, 1, "completed", [])
    manifest.write_bytes(stale)
    leftover = session / "phase_1_concept" / ".checkpoint.md.123.abcd.haytham-tmp"
    leftover.write_text("half a file")

    findings = manager.check(P, S)
    # The stale manifest also names the entry before the save as History Head.
    assert kinds(findings) == ["checkpoint_not_in_manifest", "history_head_behind", "temporary_leftover"]
    assert all(not f.fixed for f in findings)
    assert manifest.read_bytes() == stale  # a check alone changes nothing
    assert leftover.exists()

    repaired = manager.check(P, S, fix=True)
    assert all(f.fixed for f in repaired)
    assert not leftover.exists()
    assert manager.load_manifest(P, S).phases[0].status == "completed"
    assert manager.load_manifest(P, S).history_head == manager.history(P, S)[-1].entry_id
    assert manager.check(P, S) == []


def test_doctor_reports_a_completed_row_without_checkpoint(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    (manager.session_dir(P, S) / "phase_1_concept" / "checkpoint.md").unlink()
    [finding] = manager.check(P, S)
    assert finding.kind == "row_without_checkpoint"
    assert "phase 1" in finding.message
    manager.check(P, S, fix=True)
    assert manager.load_manifest(P, S).phases[0].status == "pending"


def test_doctor_never_deletes_a_persons_content(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    notes = manager.session_dir(P, S) / "phase_1_concept" / "my_notes.md"
    notes.write_text("# Agent Output: my_notes\n\nnot an agent file at all\n")
    broken = manager.session_dir(P, S) / "phase_1_concept" / "user_feedback.md"
    broken.write_text("# User Feedback: Concept Expansion\n\n## Review Status\n- Reviewed: perhaps\n")
    extra = manager.session_dir(P, S) / "phase_4_product_strategy"
    extra.mkdir()
    findings = manager.check(P, S, fix=True)
    assert {"unlisted_agent_file", "invalid_file", "unexpected_directory"} <= set(kinds(findings))
    assert not any(f.fixed for f in findings if f.kind in ("unlisted_agent_file", "invalid_file"))
    assert notes.exists() and broken.exists() and extra.exists()
    about_broken = [str(f) for f in findings if f.path == broken]
    assert any("line 4: Reviewed: 'perhaps' is not a boolean" in text for text in about_broken)
