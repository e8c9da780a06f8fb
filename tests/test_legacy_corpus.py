"""The legacy corpus in tests/legacy: files as the first public implementation wrote them.

These tests keep the corpus honest; they do not read it through haytham (issue 14 adds that):
(a) the committed corpus and expected.json are exactly what tests/legacy/render.py produces now,
(b) expected.json describes every file and every session of the corpus, and the corpus covers
what its README promises, (c) render.py reproduces the one real session written by that
implementation (tests/data/compat) byte for byte from the same inputs.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from legacy import render

LEGACY = Path(__file__).parent / "legacy"
CORPUS = LEGACY / "corpus"
COMPAT = LEGACY.parent / "data" / "compat"


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((LEGACY / "expected.json").read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------- (a) committed == rendered


def test_committed_corpus_is_what_render_produces(tmp_path: Path) -> None:
    expected_text = render.render(tmp_path)
    rendered, committed = files_under(tmp_path), files_under(CORPUS)
    assert sorted(rendered) == sorted(committed)
    differing = [path for path in rendered if rendered[path] != committed[path]]
    assert differing == [], "stale corpus: run python tests/legacy/render.py"
    assert expected_text == (LEGACY / "expected.json").read_text(encoding="utf-8")


def test_render_is_deterministic(tmp_path: Path) -> None:
    first = render.render(tmp_path / "one")
    second = render.render(tmp_path / "two")
    assert first == second
    assert files_under(tmp_path / "one") == files_under(tmp_path / "two")


# ---------------------------------------------------------------- (b) expected.json covers the corpus


def test_expected_describes_every_file(expected: dict[str, Any]) -> None:
    assert sorted(files_under(CORPUS)) == sorted(expected["files"])
    kinds = {"manifest", "checkpoint", "agent_output", "feedback", "project", "changelog", "requirements"}
    assert {entry["kind"] for entry in expected["files"].values()} == kinds


def test_expected_describes_every_session(expected: dict[str, Any]) -> None:
    on_disk = sorted(p.parent.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("session_manifest.md"))
    assert on_disk == sorted(expected["sessions"])
    for info in expected["sessions"].values():
        assert set(info) == {"case", "approved_phases", "checkpoints"}


def test_agent_output_expectations_name_their_content(expected: dict[str, Any]) -> None:
    """Each intact agent output states the content a reader must return, and its file holds it verbatim."""
    outputs = {
        p: e for p, e in expected["files"].items() if e["kind"] == "agent_output" and "damaged" not in e
    }
    for path, entry in outputs.items():
        text = (CORPUS / path).read_bytes().decode("utf-8")
        assert f"## Output\n\n{entry['content']}\n" in text, path
        assert text.startswith(f"# Agent Output: {entry['agent_name']}\n"), path


def test_every_case_is_in_the_readme() -> None:
    readme = (LEGACY / "README.md").read_text(encoding="utf-8")
    for case in render.CASES:
        assert f"`{case.__name__}`" in readme, case.__name__


# ---------------------------------------------------------------- the corpus covers what it promises


def entries(expected: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in expected["files"].values() if e["kind"] == kind and "damaged" not in e]


def test_covers_every_feedback_action(expected: dict[str, Any]) -> None:
    actions = {e["action"] for e in entries(expected, "feedback")}
    assert actions >= {
        "approved",
        "retry",
        "rejected",
        "retry_with_changes",
        "skip_phase",
        "skip_stage",
        "max_retries_exceeded",
        "skipped",
    }
    assert any(e["comments"] == "" for e in entries(expected, "feedback"))
    assert any("\n" in c for e in entries(expected, "feedback") for c in e["requested_changes"])


def test_covers_modes_run_styles_and_failures(expected: dict[str, Any]) -> None:
    manifests = entries(expected, "manifest")
    assert {m["execution_mode"] for m in manifests} == {"mvp", "full"}
    styles = {c["execution_mode"] for c in entries(expected, "checkpoint")}
    assert styles == {"single", "parallel", "sequential_interactive", "sequential"}
    outputs = entries(expected, "agent_output")
    assert any(o["stack_trace"] and o["error_type"] for o in outputs)
    assert any(o["error_message"] and "\n" in o["error_message"] for o in outputs)
    assert any(o["status"] == "failed" and o["content"].count("```") % 2 == 1 for o in outputs)
    assert any("\r\n" in o["content"] for o in outputs)
    assert any(o["content"] == "" for o in outputs)
    assert max(len(o["content"]) for o in outputs) > 100_000


def test_covers_odd_ids_and_project_manager_sessions(expected: dict[str, Any]) -> None:
    projects = {e["config"]["project_id"]: e["config"] for e in entries(expected, "project")}
    assert {"café_finder_", "café_finder__1", "pet_food_subscriptions", "smart_home__v2_"} <= set(projects)
    assert {"grace@example.com", "user-zoë"} <= {c["user_id"] for c in projects.values()}
    assert any(c["current_version"] >= 2 for c in projects.values())
    pm_sessions = {s["session_id"] for c in projects.values() for s in c["sessions"]}
    started_only = [
        m
        for m in entries(expected, "manifest")
        if m["session_id"] in pm_sessions and m["current"]["number"] == 0
    ]
    assert len(started_only) >= 5
    for m in started_only:
        assert m["current"] == {"number": 0, "name": "Not Started", "status": "pending", "can_resume": False}
        session_dir = CORPUS / "projects" / m["project_id"] / "sessions" / m["session_id"]
        assert [p.name for p in session_dir.iterdir()] == ["session_manifest.md"]


def test_covers_a_phase_outside_the_mode(expected: dict[str, Any]) -> None:
    session = "projects/proj-legacy/sessions/sess-outside-mode"
    manifest = expected["files"][f"{session}/session_manifest.md"]
    assert manifest["execution_mode"] == "mvp"
    assert [row["number"] for row in manifest["phases"]] == [1, 2, 3, 6, 7]
    assert "4" in expected["sessions"][session]["checkpoints"]


def test_approved_phases_ignore_approved_lookalikes_in_comments(expected: dict[str, Any]) -> None:
    """The legacy reader counted phase 3 approved because its comments contain `- Approved: true`."""
    session = "projects/proj-legacy/sessions/sess-feedback-actions"
    text = (CORPUS / session / "phase_3_niche_selection" / "user_feedback.md").read_text(encoding="utf-8")
    assert "- Approved: false" in text and "- Approved: true" in text
    assert expected["sessions"][session]["approved_phases"] == [1]


# ---------------------------------------------------------------- facts, spelled out


def test_agent_output_error_details_follow_the_output() -> None:
    failed = {
        "content": "partial\n```py\nx = 1",
        "status": "failed",
        "duration": 0.0,
        "model": None,
        "input_tokens": 0,
        "output_tokens": None,
        "tools_used": [],
        "error_type": None,
        "error_message": "line one\nline two",
        "stack_trace": "Traceback\nError",
    }
    text = render.agent_output_text("a", 2, "2024-01-01T00:00:00Z", failed)
    assert text.endswith(
        "- Duration: -\n- Status: failed\n\n## Execution Details\n- Model: -\n- Input Tokens: -\n"
        "- Output Tokens: -\n- Tools Used: [none]\n\n## Output\n\npartial\n```py\nx = 1\n\n## Error Details\n"
        "- Error Type: Unknown\n- Error Message: line one\nline two\n"
        "- Stack Trace:\n```\nTraceback\nError\n```\n"
    )


def test_feedback_placeholders() -> None:
    f = {"reviewed": True, "approved": False, "comments": "", "changes": [], "action": "skip_stage"}
    text = render.feedback_text(6, {**f, "retry_count": 0}, "2024-01-01T00:00:00.000001Z")
    assert (
        "## User Comments\nNo comments provided\n\n## Requested Changes\n- No changes requested\n\n" in text
    )
    assert text.startswith("# User Feedback: Validation\n")


def test_clock_leaves_out_zero_microseconds() -> None:
    clock = render.Clock(datetime(2024, 1, 1), render.timedelta(microseconds=5))
    assert [clock.now(), clock.now()] == ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000005Z"]


# ---------------------------------------------------------------- (c) the real compat session


class ScriptedClock(render.Clock):
    """The timestamps the real run got, in call order (`None` where a later write overwrote it)."""

    def __init__(self, stamps: list[str | None]) -> None:
        super().__init__(datetime(2000, 1, 1))
        self.stamps = stamps

    def now(self) -> str:
        return self.stamps.pop(0) or "overwritten-later"


def compat_tree() -> render.LegacyTree:
    """The calls that wrote tests/data/compat/proj-alpha/sessions/sess-001, read off its files."""
    t = render.LegacyTree()
    t.clock = ScriptedClock(
        [
            "2026-11-25T22:57:49.296376Z",  # create_session
            None,  # manifest update of phase 1
            "2026-11-25T22:57:49.296488Z",  # concept_expansion
            "2026-11-25T22:57:49.296841Z",  # feedback 1
            None,  # manifest update of phase 2
            "2026-11-25T22:57:49.296945Z",  # market_intelligence
            "2026-11-25T22:57:49.297013Z",  # competitor_analysis
            "2026-11-25T22:57:49.297561Z",  # feedback 2
            "2026-11-25T22:57:49.297761Z",  # manifest update of phase 3
        ]
    )
    pid, sid = "proj-alpha", "sess-001"
    t.create_session(pid, sid, "user-789")
    t.save_checkpoint(
        pid,
        sid,
        1,
        "completed",
        [render.agent("concept_expansion", "completed", 15000, 12000, 3000, 0.0375, 120.5)],
        started="2024-11-24T10:00:00Z",
        completed="2024-11-24T10:02:00Z",
        duration=120.5,
    )
    t.save_agent_output(
        pid,
        sid,
        1,
        "concept_expansion",
        "# Concept\n\nA marketplace for **solo founders**.\n\n- point one\n- point two\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
        duration=120.5,
        model="anthropic.claude-3-sonnet-20240229-v1:0",
        input_tokens=12000,
        output_tokens=3000,
        tools_used=["file_write"],
    )
    t.save_user_feedback(pid, sid, 1, True, True, "Looks great!")
    names = ["market_intelligence", "competitor_analysis"]
    t.save_checkpoint(
        pid,
        sid,
        2,
        "completed",
        [render.agent(a, "completed", 1200, 800, 400, 0.01, 30.2) for a in names],
        started="2024-11-24T10:03:00Z",
        completed="2024-11-24T10:04:00Z",
        duration=60.0,
        execution_mode="parallel",
    )
    contents = [
        "## Market size\n\nTAM is $4B.\n\n```python\nprint('## Output')\n```\n",
        "Competitors:\n\n1. Foo\n2. Bar\n",
    ]
    for name, content in zip(names, contents, strict=True):
        t.save_agent_output(
            pid,
            sid,
            2,
            name,
            content,
            duration=30.2,
            model="gpt-4o",
            input_tokens=800,
            output_tokens=400,
            tools_used=["web_search", "file_write"],
        )
    t.save_user_feedback(
        pid,
        sid,
        2,
        True,
        False,
        "Please dig deeper into EU.\nAlso check pricing.",
        ["Add EU market data", "Compare pricing tiers"],
        "retry",
        1,
    )
    t.save_checkpoint(
        pid,
        sid,
        3,
        "in_progress",
        [render.agent("niche_selector", "in_progress")],
        started="2024-11-24T10:05:00Z",
    )
    return t


def test_compat_session_is_reproduced_byte_for_byte(tmp_path: Path) -> None:
    t = compat_tree()
    real = files_under(COMPAT)
    real.pop("README.md")
    ours = {path.removeprefix("projects/"): text.encode("utf-8") for path, text in t.files.items()}
    assert sorted(ours) == sorted(real)
    for path, data in real.items():
        assert ours[path] == data, path
