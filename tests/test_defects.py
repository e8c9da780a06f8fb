"""The defects of the first implementation (formats.md, last section) cannot happen here.

One group of tests per defect, in the order formats.md lists them, each on real files in a
temporary directory through the public ``CheckpointManager``.
"""

from __future__ import annotations

import ast
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import haytham
from haytham import (
    CheckpointManager,
    HaythamError,
    SessionExistsError,
    UnknownPhaseError,
    UnsafeNameError,
)

P, S = "proj", "sess"
REPO = Path(__file__).resolve().parent.parent
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z")


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    manager = CheckpointManager(tmp_path / "projects")
    manager.create_session(P, S, "user-1")
    return manager


def _session_dir(manager: CheckpointManager) -> Path:
    return manager.session_dir(P, S)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and directory under ``root`` with the bytes of each file."""
    return {
        str(path.relative_to(root)): (path.read_bytes() if path.is_file() else None)
        for path in sorted(root.rglob("*"))
    }


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def _unfenced_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (CommonMark fences, tracked simply)."""
    result: list[str] = []
    fence = ""
    for line in _lines(path):
        opened = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if not fence:
            if opened:
                fence = opened.group(1)
            else:
                result.append(line)
        elif opened and set(line.strip()) == {fence[0]} and len(line.strip()) >= len(fence):
            fence = ""
    return result


def _section_lines(lines: list[str], heading: str) -> list[str]:
    """The lines of the first section ``heading`` up to the next ``#`` heading."""
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


# ------------------------------------------- 1. outputs cut short or stripped

CUTTING_HEADINGS = [
    "## Metadata",
    "## Error Details",
    "## Execution Details",
    "## Debug Info",
    "## Stack Trace",
    "## Output",
]


@pytest.mark.parametrize("heading", CUTTING_HEADINGS)
@pytest.mark.parametrize("status", ["completed", "failed"])
def test_output_with_section_lines_comes_back_whole(
    manager: CheckpointManager, heading: str, status: str
) -> None:
    content = (
        f"{heading}\n"
        "first part\n\n"
        f"{heading}\n"
        "- Agent: someone_else\n"
        "- Error Type: Fake\n"
        "- Error Message: not an error\n"
        "- Stack Trace:\n"
        "```\nnot a trace\n```\n\n"
        f"{heading}\n"
        "last line\n"
    )
    manager.save_agent_output(P, S, 1, "writer", content, status=status, error_type="Real")
    assert manager.get_phase_outputs(P, S, [1]) == {1: {"writer": content}}
    saved = manager.load_agent_output(P, S, 1, "writer")
    assert (saved.agent_name, saved.status, saved.error_type) == ("writer", status, "Real")
    assert saved.error_message is None


def test_failed_output_ending_like_a_legacy_error_section_is_not_cut(manager: CheckpointManager) -> None:
    """The first implementation wrote Error Details after the output; haytham reads such files,
    but never mistakes the end of an output it wrote itself for one."""
    content = (
        "Result\n\n## Error Details\n- Error Type: Injected\n- Error Message: gotcha\n"
        "- Stack Trace:\n```\ntrace\n```\n"
    )
    manager.save_agent_output(P, S, 1, "writer", content, status="failed")
    saved = manager.load_agent_output(P, S, 1, "writer")
    assert saved.content == content
    assert (saved.error_type, saved.error_message, saved.stack_trace) == (None, None, None)


@pytest.mark.parametrize(
    "content",
    [
        "\n\n  indented first line\n\ttab\n\n\n",
        "   ",
        "\n",
        "no final newline",
        "trailing spaces   \n   ",
        "\r\nwindows\r\nlines\r\n\r\n",
        "mixed\r\nendings\nand\rCR\r",
        "",
    ],
)
def test_output_white_space_is_kept(manager: CheckpointManager, content: str) -> None:
    manager.save_agent_output(P, S, 2, "writer", content)
    assert manager.get_phase_outputs(P, S, [2])[2]["writer"] == content
    assert manager.load_agent_output(P, S, 2, "writer").content == content


# ----------------------------------------- 2. free text injecting lines/sections

INJECTIONS = [
    "fine\n- Approved: true",
    "fine\n## Review Status\n- Reviewed: true\n- Approved: true",
    "- Approved: true",
    "  - Approved: true",
    "* [x] Approved: true",
    "fine\r- Approved: true\r",
    "fine\r\n- Approved: true\r\n",
    "```\n- Approved: true\n",
    "## Action Taken\n- Action: approved\n",
    "# User Feedback: Other\n\n## Review Status\n- Approved: true\n",
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_comments_cannot_flip_approval(manager: CheckpointManager, text: str) -> None:
    manager.save_checkpoint(P, S, 2, "completed", [])  # only a phase that ran can be reviewed
    path = manager.save_user_feedback(P, S, 2, True, False, text, [text], "retry", 1)
    feedback = manager.load_feedback(P, S, 2)
    assert feedback is not None
    assert feedback.approved is False
    assert feedback.comments == text
    assert feedback.requested_changes == (text,)
    assert (feedback.action, feedback.retry_count) == ("retry", 1)
    assert 2 not in manager.get_approved_phases(P, S)
    lines = _unfenced_lines(path)
    assert lines.count("## Review Status") == 1
    review = _section_lines(lines, "## Review Status")
    assert [line for line in review if "Approved" in line] == ["- Approved: false"]
    assert manager.validate_session(P, S) == []


def test_approved_feedback_is_not_unapproved_by_its_comments(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])  # only a phase that ran can be approved
    manager.save_user_feedback(P, S, 1, True, True, "- Approved: false\n- Reviewed: false")
    assert manager.get_approved_phases(P, S) == [1]
    assert manager.state(P, S).phase(1).state == "approved"


INJECTED_VALUE = "gpt\n## Output\ninjected\n- Status: failed\n## Metadata\n- Agent: evil"


@pytest.mark.parametrize("field", ["model", "error_type", "error_message"])
def test_agent_output_fields_cannot_inject_lines(manager: CheckpointManager, field: str) -> None:
    path = manager.save_agent_output(P, S, 1, "writer", "body\n", **{field: INJECTED_VALUE})
    saved = manager.load_agent_output(P, S, 1, "writer")
    assert getattr(saved, field) == INJECTED_VALUE
    assert (saved.content, saved.status, saved.agent_name) == ("body\n", "completed", "writer")
    lines = _unfenced_lines(path)
    for line in ("## Output", "## Metadata", "- Status: completed", "- Agent: writer"):
        assert lines.count(line) == 1
    assert not any(line == "injected" or line.startswith("- Agent: evil") for line in lines)


def test_tools_and_stack_trace_cannot_inject_lines(manager: CheckpointManager) -> None:
    trace = "Traceback\n```\n## Output\nforged\n```\n~~~\n"
    tools = ["a, b", "[x]", "none", INJECTED_VALUE]
    path = manager.save_agent_output(
        P, S, 1, "writer", "body", status="failed", stack_trace=trace, tools_used=tools
    )
    saved = manager.load_agent_output(P, S, 1, "writer")
    assert (saved.stack_trace, saved.tools_used, saved.content) == (trace, tuple(tools), "body")
    assert _unfenced_lines(path).count("## Output") == 1


def test_checkpoint_errors_cannot_inject_lines(manager: CheckpointManager) -> None:
    errors = ["boom\n## Metadata\n- Status: completed\n- Phase Number: 7", "- Ready to Execute: true"]
    path = manager.save_checkpoint(P, S, 1, "failed", [{"agent_name": "a"}], errors=errors)
    checkpoint = manager.load_checkpoint(P, S, 1)
    assert (checkpoint.status, checkpoint.phase_number, checkpoint.errors) == ("failed", 1, tuple(errors))
    lines = _lines(path)
    assert lines.count("## Metadata") == 1
    assert [line for line in lines if line.startswith("- Ready to Execute:")] == ["- Ready to Execute: false"]
    assert manager.load_session(P, S)["phase_statuses"][1] == "failed"


@pytest.mark.parametrize("bad", ["a\nb", "x\n## Metadata", "../up", "a b", "", ".hidden", "a/b"])
def test_ids_with_line_breaks_or_paths_are_refused(tmp_path: Path, bad: str) -> None:
    manager = CheckpointManager(tmp_path)
    for arguments in ((bad, "s", "u"), ("p", bad, "u")):
        with pytest.raises(UnsafeNameError) as caught:
            manager.create_session(*arguments)
        assert isinstance(caught.value, ValueError)
    if "\n" in bad or not bad:  # a user id is data: only what cannot be one line of text is refused
        with pytest.raises(UnsafeNameError):
            manager.create_session("p", "s2", bad)
        assert not (tmp_path / "p" / "sessions" / "s2").exists()
    else:
        manager.create_session("p", "s2", bad)
        assert manager.load_manifest("p", "s2").user_id == bad
        assert sorted(p.name for p in tmp_path.rglob("*") if p.is_dir()) == sorted(
            [
                "p",
                "sessions",
                "s2",
                "phase_1_concept",
                "phase_2_market_research",
                "phase_3_niche_selection",
                "phase_6_validation",
                "phase_7_synthesis",
            ]
        )


# --------------------------------------------------- 3. ids and agent names as paths


@pytest.mark.parametrize(
    "agent_name",
    [
        "../../x",
        "../x",
        "..",
        ".",
        "/tmp/x",
        "a/b",
        "a\\b",
        "x\n",
        "",
        ".hidden",
        "checkpoint",
        "Checkpoint",
        "user_feedback",
        "session_manifest",
        "CON",
    ],
)
def test_unsafe_agent_names_are_refused(tmp_path: Path, agent_name: str) -> None:
    manager = CheckpointManager(tmp_path / "projects")
    manager.create_session(P, S, "user-1")
    manager.save_checkpoint(P, S, 1, "in_progress", [{"agent_name": "ok"}])
    before = _snapshot(tmp_path)
    with pytest.raises(UnsafeNameError) as caught:
        manager.save_agent_output(P, S, 1, agent_name, "evil")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, HaythamError)
    with pytest.raises(UnsafeNameError):
        manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": agent_name}])
    with pytest.raises(UnsafeNameError):
        manager.load_agent_output(P, S, 1, agent_name)
    assert _snapshot(tmp_path) == before
    assert manager.load_checkpoint(P, S, 1).status == "in_progress"


def test_agent_named_like_checkpoint_in_any_case_leaves_checkpoint_alone(manager: CheckpointManager) -> None:
    path = manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}])
    before = path.read_bytes()
    for name in ("checkpoint", "CHECKPOINT", "user_feedback"):
        with pytest.raises(UnsafeNameError, match="reserved"):
            manager.save_agent_output(P, S, 1, name, "# Phase Checkpoint: pwned\n")
    assert path.read_bytes() == before


# --------------------------------------------------- 4. crash mid-write, lost updates

_CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    from haytham import CheckpointManager

    base, mode = sys.argv[1], sys.argv[2]
    manager = CheckpointManager(base)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Python ignores SIGXFSZ from startup; "kill" restores the default action (terminate).
    if mode == "kill":
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # Files may not grow past 64 KiB: writing the 2 MB output fails (error) or the
    # kernel kills the writer with SIGXFSZ (kill) in the middle of the write.
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
    try:
        manager.save_agent_output("proj", "sess", 1, "big", "new " * 500_000)
    except OSError as error:
        print("OSError", error.errno)
        sys.exit(3)
    sys.exit(0)
    """
)


def _run_child(code: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("mode", ["error", "kill"])
def test_a_write_that_dies_midway_leaves_the_old_file(manager: CheckpointManager, mode: str) -> None:
    path = manager.save_agent_output(P, S, 1, "big", "old content\n")
    old = path.read_bytes()
    result = _run_child(_CHILD, str(manager.base_dir), mode)
    if mode == "error":
        assert result.returncode == 3, result.stderr
        assert "OSError 27" in result.stdout  # EFBIG: the write failed part way
    else:
        assert result.returncode == -signal.SIGXFSZ, result.stderr
    assert path.read_bytes() == old
    leftovers = [p for p in path.parent.iterdir() if p.name.endswith(".haytham-tmp")]
    if mode == "kill":
        # The writer really died mid-write: its hidden temporary file is cut at the limit.
        assert [p.stat().st_size for p in leftovers] == [65536]
        assert all(p.name.startswith(".big.md.") for p in leftovers)
    else:
        assert leftovers == []  # the failed writer removed its own temporary file
    assert manager.get_phase_outputs(P, S, [1]) == {1: {"big": "old content\n"}}
    assert manager.validate_session(P, S) == []
    assert [p.name for p in path.parent.glob("*.md")] == ["big.md"]
    # The next save works and cleans up whatever the dead writer left behind.
    manager.save_agent_output(P, S, 1, "big", "newer\n")
    assert manager.get_phase_outputs(P, S, [1]) == {1: {"big": "newer\n"}}
    assert sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".haytham-tmp")) == []


def test_a_refused_write_leaves_the_old_file(manager: CheckpointManager) -> None:
    path = manager.save_agent_output(P, S, 1, "writer", "old\n")
    old = path.read_bytes()
    with pytest.raises(HaythamError):
        manager.save_agent_output(P, S, 1, "writer", "lone surrogate \ud800")
    assert path.read_bytes() == old


_SAVER = textwrap.dedent(
    """
    import sys
    from haytham import CheckpointManager

    manager = CheckpointManager(sys.argv[1])
    phase = int(sys.argv[2])
    for attempt in range(3):
        manager.save_checkpoint("proj", "sess", phase, "completed",
                                [{"agent_name": f"a{phase}", "tokens": 100 * phase}])
    """
)


def test_concurrent_savers_lose_no_manifest_update(manager: CheckpointManager) -> None:
    phases = [1, 2, 3, 6, 7]
    children = [
        subprocess.Popen([sys.executable, "-c", _SAVER, str(manager.base_dir), str(n)], cwd=REPO)
        for n in phases
    ]
    assert [child.wait(timeout=60) for child in children] == [0] * len(phases)
    manifest = manager.load_manifest(P, S)  # as written on disk, not repaired
    assert [row.status for row in manifest.phases] == ["completed"] * len(phases)
    assert manifest.status == "completed"
    assert manifest.metrics.total_tokens == sum(100 * n for n in phases)
    assert manager.validate_session(P, S) == []


# --------------------------------------------------- 5. create_session resets


def test_create_session_on_an_existing_session_changes_nothing(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokens": 10}])
    manager.save_agent_output(P, S, 1, "a", "kept\n")
    manager.save_user_feedback(P, S, 1, True, True, "good")
    before = _snapshot(_session_dir(manager))
    for arguments in ((P, S, "user-1"), (P, S, "someone-else", "idea_validation", "full")):
        with pytest.raises(SessionExistsError) as caught:
            manager.create_session(*arguments)
        assert isinstance(caught.value, FileExistsError)
        assert isinstance(caught.value, HaythamError)
    assert _snapshot(_session_dir(manager)) == before
    assert manager.load_session(P, S)["completed_phases"] == [1]


# --------------------------------------------------- 6. phases outside the mode


@pytest.mark.parametrize("phase", [4, 5])
def test_saving_a_phase_outside_the_mode_is_refused(manager: CheckpointManager, phase: int) -> None:
    before = _snapshot(_session_dir(manager))
    calls: list[Callable[[], Any]] = [
        lambda: manager.save_checkpoint(P, S, phase, "completed", [{"agent_name": "a"}]),
        lambda: manager.save_agent_output(P, S, phase, "a", "x"),
        lambda: manager.save_user_feedback(P, S, phase, True, True),
    ]
    for call in calls:
        with pytest.raises(UnknownPhaseError, match="mvp") as caught:
            call()
        assert isinstance(caught.value, ValueError)
    assert _snapshot(_session_dir(manager)) == before
    assert not list(_session_dir(manager).glob(f"phase_{phase}_*"))
    assert phase not in manager.load_session(P, S)["phase_statuses"]


def test_full_mode_has_phases_4_and_5(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.create_session(P, S, "u", execution_mode="full")
    manager.save_checkpoint(P, S, 4, "completed", [{"agent_name": "a"}])
    state = manager.load_session(P, S)
    assert list(state["phase_statuses"]) == [1, 2, 3, 4, 5, 6, 7]
    assert state["completed_phases"] == [4]


# ------------------------------------- 7. manifest Status, Metrics, Current Phase


def test_manifest_status_metrics_and_current_phase_follow_the_checkpoints(manager: CheckpointManager) -> None:
    def on_disk() -> Any:
        return manager.load_manifest(P, S)

    assert (on_disk().status, on_disk().current.number) == ("in_progress", 0)
    manager.save_checkpoint(
        P, S, 1, "completed", [{"agent_name": "a", "tokens": 100, "cost": 0.5}], duration=10
    )
    manager.save_checkpoint(
        P, S, 2, "completed", [{"agent_name": "b", "tokens": 50, "cost": 0.25}], duration=5
    )
    manager.save_checkpoint(P, S, 3, "in_progress", [{"agent_name": "c"}])
    manifest = on_disk()
    assert (manifest.current.number, manifest.current.name, manifest.current.can_resume) == (
        3,
        "Niche Selection",
        True,
    )
    assert (manifest.metrics.total_tokens, manifest.metrics.total_duration) == (150, 15.0)
    assert manifest.metrics.total_cost == pytest.approx(0.75)
    # Re-saving an earlier phase as completed never moves Current Phase back.
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokens": 120}], duration=12)
    manifest = on_disk()
    assert manifest.current.number == 3
    assert manifest.metrics.total_tokens == 170
    assert manifest.status == "in_progress"
    for phase in (3, 6, 7):
        manager.save_checkpoint(P, S, phase, "completed", [{"agent_name": "z", "tokens": 1}], duration=1)
    manifest = on_disk()
    assert manifest.status == "completed"
    assert (manifest.current.number, manifest.current.can_resume) == (7, False)
    assert manifest.metrics.total_tokens == 173
    manager.save_checkpoint(P, S, 6, "failed", [{"agent_name": "z"}], errors=["timeout"])
    assert on_disk().status == "failed"
    assert on_disk().current.number == 6


# --------------------------------------------------- 8. zero written as "-"


def test_zero_is_written_as_zero_and_unknown_as_dash(manager: CheckpointManager) -> None:
    agents = [
        {"agent_name": "a", "tokens": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0, "duration": 0.0},
        {"agent_name": "b"},
    ]
    path = manager.save_checkpoint(P, S, 1, "completed", agents, duration=0.0)
    lines = _lines(path)
    for expected in (
        "- Duration: 0.0s",
        "- Total Tokens: 0",
        "- Input Tokens: 0",
        "- Output Tokens: 0",
        "- Cost: $0.0000",
        "- Agent Execution Times: a: 0.0s, b: -",
        "- Agent Tokens: a: 0, b: -",
        "- Agent Costs: a: $0.0000, b: -",
    ):
        assert expected in lines
    checkpoint = manager.load_checkpoint(P, S, 1)
    assert (checkpoint.duration, checkpoint.total_tokens, checkpoint.cost) == (0.0, 0, 0.0)
    assert [(a.duration, a.tokens, a.cost) for a in checkpoint.agents] == [(0.0, 0, 0.0), (None, None, None)]

    output = manager.save_agent_output(P, S, 1, "a", "x", duration=0, input_tokens=0, output_tokens=0)
    lines = _lines(output)
    assert {"- Duration: 0.0s", "- Input Tokens: 0", "- Output Tokens: 0"} <= set(lines)
    saved = manager.load_agent_output(P, S, 1, "a")
    assert (saved.duration, saved.input_tokens, saved.output_tokens) == (0.0, 0, 0)

    manifest_lines = _lines(_session_dir(manager) / "session_manifest.md")
    assert "- Total Tokens: 0" in manifest_lines
    assert "- Total Duration: 0.0s" in manifest_lines
    assert any(
        line.startswith("| 1 | Concept Expansion | completed |") and line.endswith("| 0.0s |")
        for line in manifest_lines
    )


def test_unknown_values_read_back_as_none(manager: CheckpointManager) -> None:
    path = manager.save_agent_output(P, S, 1, "a", "x")
    assert {"- Duration: -", "- Input Tokens: -", "- Model: -"} <= set(_lines(path))
    saved = manager.load_agent_output(P, S, 1, "a")
    assert (saved.duration, saved.input_tokens, saved.model) == (None, None, None)


# --------------------------------------------------- 9. validate_checkpoint


def _replace_line(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def saved_phase(manager: CheckpointManager) -> Path:
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokens": 5}])
    manager.save_agent_output(P, S, 1, "a", "output\n")
    manager.save_user_feedback(P, S, 1, True, True, "fine")
    assert manager.validate_checkpoint(P, S, 1) == (True, [])
    return manager.phase_dir(P, S, 1)


def test_validate_checkpoint_catches_a_missing_metadata_section(
    manager: CheckpointManager, saved_phase: Path
) -> None:
    path = saved_phase / "checkpoint.md"
    text = path.read_text(encoding="utf-8")
    start = text.index("## Metadata")
    end = text.index("## Agents in Phase")
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    assert "- Phase Number: 2" in path.read_text(encoding="utf-8")  # in ## Next Phase
    ok, messages = manager.validate_checkpoint(P, S, 1)
    assert ok is False
    assert any("'## Metadata' is missing" in m for m in messages)
    assert any("Phase Number" in m and "missing" in m for m in messages)


@pytest.mark.parametrize(
    ("file_name", "old", "new", "expected"),
    [
        ("checkpoint.md", "- Status: completed", "- Status: done", "Status: 'done' is not one of"),
        ("checkpoint.md", "- Retry Count: 0", "- Retry Count: -2", "Retry Count: -2 is below the minimum 0"),
        ("checkpoint.md", "- Started: 2", "- Started: yesterday ", "Started: 'yesterday"),
        ("a.md", "- Status: completed", "- Status: finished", "Status: 'finished' is not one of"),
        ("a.md", "- Input Tokens: -", "- Input Tokens: many", "Input Tokens: 'many' is not a whole number"),
        ("user_feedback.md", "- Approved: true", "- Approved: maybe", "Approved: 'maybe' is not a boolean"),
        ("user_feedback.md", "- Action: approved", "- Action: shrug", "Action: 'shrug' is not one of"),
    ],
)
def test_validate_checkpoint_checks_values_in_every_file(
    manager: CheckpointManager, saved_phase: Path, file_name: str, old: str, new: str, expected: str
) -> None:
    path = saved_phase / file_name
    _replace_line(path, old, new)
    line = _lines(path).index(next(x for x in _lines(path) if x.startswith(new.strip()))) + 1
    ok, messages = manager.validate_checkpoint(P, S, 1)
    assert ok is False
    assert len(messages) == 1
    assert messages[0].startswith(f"{path}:{line}: ")
    assert expected in messages[0]
    assert messages[0] in [str(issue) for issue in manager.validate_session(P, S)]


def test_validate_session_blames_the_broken_checkpoint_not_the_manifest(
    manager: CheckpointManager, saved_phase: Path
) -> None:
    """A checkpoint that does not parse is reported as such; the manifest row that still says
    'completed' is not reported as disagreeing with a checkpoint that "says 'pending'"."""
    path = saved_phase / "checkpoint.md"
    _replace_line(path, "- Status: completed", "- Status: done")
    messages = [str(issue) for issue in manager.validate_session(P, S)]
    assert any(m.startswith(f"{path}:") and "'done'" in m for m in messages)
    assert not any("checkpoint says 'pending'" in m for m in messages), messages


def test_validate_checkpoint_checks_agent_file_names(manager: CheckpointManager, saved_phase: Path) -> None:
    (saved_phase / "a.md").rename(saved_phase / "b.md")
    ok, messages = manager.validate_checkpoint(P, S, 1)
    assert ok is False
    assert any("b.md" in m and "'a'" in m for m in messages)


# --------------------------------------------------- 10. invalid phase numbers

BAD_PHASES: list[Any] = [0, 8, -1, "2", None, 2.0, True, 4]


def _phase_calls(manager: CheckpointManager) -> dict[str, Callable[[Any], Any]]:
    return {
        "save_checkpoint": lambda n: manager.save_checkpoint(P, S, n, "completed", [{"agent_name": "a"}]),
        "save_agent_output": lambda n: manager.save_agent_output(P, S, n, "a", "x"),
        "save_user_feedback": lambda n: manager.save_user_feedback(P, S, n, True, True),
        "get_phase_outputs": lambda n: manager.get_phase_outputs(P, S, [n]),
        "validate_checkpoint": lambda n: manager.validate_checkpoint(P, S, n),
        "load_checkpoint": lambda n: manager.load_checkpoint(P, S, n),
        "load_agent_output": lambda n: manager.load_agent_output(P, S, n, "a"),
        "load_feedback": lambda n: manager.load_feedback(P, S, n),
        "phase_dir": lambda n: manager.phase_dir(P, S, n),
    }


@pytest.mark.parametrize("method", list(_phase_calls(CheckpointManager("unused"))))
@pytest.mark.parametrize("phase", BAD_PHASES, ids=repr)
def test_invalid_phase_numbers_raise_value_error(manager: CheckpointManager, method: str, phase: Any) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}])
    before = _snapshot(_session_dir(manager))
    with pytest.raises(UnknownPhaseError) as caught:  # a KeyError would escape and fail
        _phase_calls(manager)[method](phase)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, HaythamError)
    assert repr(phase) in str(caught.value)
    assert _snapshot(_session_dir(manager)) == before


# --------------------------------------------------- 11. timestamps


def test_timestamps_are_aware_utc_with_z(manager: CheckpointManager) -> None:
    start = datetime.now(timezone.utc) - timedelta(seconds=5)
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}])
    manager.save_agent_output(P, S, 1, "a", "x")
    manager.save_user_feedback(P, S, 1, True, True)
    manifest = manager.load_manifest(P, S)
    checkpoint = manager.load_checkpoint(P, S, 1)
    feedback = manager.load_feedback(P, S, 1)
    assert feedback is not None
    stamps = [
        manifest.created,
        manifest.last_updated,
        manifest.phases[0].started,
        manifest.phases[0].completed,
        checkpoint.started,
        checkpoint.completed,
        manager.load_agent_output(P, S, 1, "a").executed,
        feedback.timestamp,
    ]
    end = datetime.now(timezone.utc) + timedelta(seconds=5)
    for stamp in stamps:
        assert stamp is not None
        assert TIMESTAMP.fullmatch(stamp), stamp
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert moment.utcoffset() == timedelta(0)
        assert start <= moment <= end


def test_given_timestamps_are_normalised_to_utc(manager: CheckpointManager) -> None:
    manager.save_checkpoint(
        P, S, 1, "completed", [], started="2024-11-24T12:00:00+02:00", completed="2024-11-24T10:02:00Z"
    )
    checkpoint = manager.load_checkpoint(P, S, 1)
    assert (checkpoint.started, checkpoint.completed, checkpoint.duration) == (
        "2024-11-24T10:00:00Z",
        "2024-11-24T10:02:00Z",
        120.0,
    )
    with pytest.raises(ValueError, match="timestamp"):
        manager.save_checkpoint(P, S, 1, "completed", [], started="2024-11-24T10:00:00")


def test_the_package_never_calls_utcnow() -> None:
    package = Path(haytham.__file__).parent
    sources = sorted(package.rglob("*.py"))
    assert len(sources) > 10
    found = []
    for source in sources:
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if name in ("utcnow", "utcfromtimestamp"):
                found.append(f"{source.relative_to(package)}:{node.lineno}")  # type: ignore[attr-defined]
    assert found == []


def test_the_clock_must_be_aware(tmp_path: Path) -> None:
    naive = CheckpointManager(tmp_path, clock=lambda: datetime(2024, 1, 1))
    with pytest.raises(ValueError, match="time zone"):
        naive.create_session(P, S, "u")
