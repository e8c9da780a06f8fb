"""Hostile input: names and paths that try to escape, and arbitrary text thrown at parsers."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haytham import (
    CheckpointManager,
    DocumentError,
    HaythamError,
    NotFoundError,
    UnsafeNameError,
    UnsafePathError,
)
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, guard
from haytham.format.agent_output import MAX_FINAL_NEWLINES

P, S = "acme", "s-1"
BAD_NAMES = [
    ("..", "not a safe name"),
    ("../../x", "not a safe name"),
    ("/etc/passwd", "not a safe name"),
    ("a/b", "not a safe name"),
    ("a\\b", "not a safe name"),
    ("a\x00b", "not a safe name"),
    ("", "is empty"),
    ("x" * 101, "characters long"),
    ("CON", "Windows reserves"),
    ("aux.md", "Windows reserves"),
    ("com1", "Windows reserves"),
    ("name.", "not a safe name"),
    (".hidden", "not a safe name"),
]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path / "base")
    m.create_session(P, S, "u")
    return m


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES)
def test_every_unsafe_name_is_refused_naming_the_rule(
    manager: CheckpointManager, tmp_path: Path, name: str, rule: str
) -> None:
    before = tree(tmp_path)
    calls = [
        lambda: manager.create_session(name, S, "u"),
        lambda: manager.create_session(P, name, "u"),
        lambda: manager.save_agent_output(P, S, 1, name, "x"),
        lambda: manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": name}]),
    ]
    for call in calls:
        with pytest.raises(UnsafeNameError, match=rule) as raised:
            call()
        assert isinstance(raised.value, ValueError)
        if rule == "not a safe name":
            assert "letters, digits" in str(raised.value)
    assert tree(tmp_path) == before


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES)
def test_reading_refuses_only_names_unsafe_as_a_path(
    manager: CheckpointManager, tmp_path: Path, name: str, rule: str
) -> None:
    """Reading reaches any folder name the first implementation could make (``CON``, a long
    or Unicode id); a name that could leave its folder or hide a file is refused."""
    before = tree(tmp_path)
    path_unsafe = name == "" or name.startswith(".") or any(c in name for c in "/\\\x00")
    for call in (lambda: manager.load_session(name, S), lambda: manager.load_session(P, name)):
        with pytest.raises(UnsafeNameError if path_unsafe else NotFoundError):
            call()
    assert tree(tmp_path) == before


@pytest.mark.parametrize("name", ["checkpoint", "user_feedback", "session_manifest", "Checkpoint"])
def test_agents_cannot_take_the_names_of_the_phase_files(manager: CheckpointManager, name: str) -> None:
    with pytest.raises(UnsafeNameError, match="reserved"):
        manager.save_agent_output(P, S, 1, name, "x")
    assert not (manager.session_dir(P, S) / "phase_1_concept" / "checkpoint.md").exists()


def test_names_differing_only_by_case_from_a_sibling_are_refused(manager: CheckpointManager) -> None:
    with pytest.raises(UnsafePathError, match="differs only by letter case"):
        manager.create_session("ACME", "s-9", "u")
    with pytest.raises(UnsafePathError, match="differs only by letter case"):
        manager.create_session(P, "S-1", "u")
    manager.save_agent_output(P, S, 1, "writer", "x")
    with pytest.raises(UnsafePathError, match="differs only by letter case"):
        manager.save_agent_output(P, S, 1, "Writer", "y")
    manager.save_agent_output(P, S, 1, "writer", "again")  # the same name is fine
    assert not (manager.base_dir / "ACME").exists()
    assert not (manager.session_dir(P, S) / "phase_1_concept" / "Writer.md").exists()


def test_a_session_directory_symlinked_outside_base_dir_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    m = CheckpointManager(base_dir=tmp_path / "base")
    m.create_session(P, S, "u")
    real = m.session_dir(P, S)
    real.rename(outside)
    os.symlink(outside, real)
    before = tree(outside)
    with pytest.raises(UnsafePathError, match="leads outside"):
        m.save_agent_output(P, S, 1, "a", "x")
    with pytest.raises(UnsafePathError, match="leads outside"):
        m.load_session(P, S)
    evil = tmp_path / "evil"
    evil.mkdir()
    os.symlink(evil, m.base_dir / P / "sessions" / "s-2")
    with pytest.raises(UnsafePathError):
        m.create_session(P, "s-2", "u")
    assert tree(outside) == before
    assert list(evil.iterdir()) == []


def test_a_phase_directory_symlinked_outside_base_dir_is_refused(
    manager: CheckpointManager, tmp_path: Path
) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    phase = manager.session_dir(P, S) / "phase_1_concept"
    phase.rmdir()
    os.symlink(evil, phase)
    for call in (
        lambda: manager.save_agent_output(P, S, 1, "a", "x"),
        lambda: manager.save_checkpoint(P, S, 1, "completed", []),
        lambda: manager.save_user_feedback(P, S, 1, True, True),
    ):
        with pytest.raises(UnsafePathError):
            call()
    assert list(evil.iterdir()) == []


def test_a_tree_registered_inside_another_owns_its_files_at_once(tmp_path: Path) -> None:
    """``tree_of`` remembers each folder's tree: registering a tree below one that answered
    for a folder already changes the answer at once, and a file outside every tree has none."""
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "projects" / "inner"
    inner.mkdir(parents=True)
    file = inner / P / "sessions" / S / "session_manifest.md"
    guard.guard_tree(outer)
    assert guard.tree_of(file) == (str(outer), os.path.realpath(outer))
    assert guard.tree_of(inner / "x.md") == (str(outer), os.path.realpath(outer))
    guard.guard_tree(inner)
    assert guard.tree_of(file) == (str(inner), os.path.realpath(inner))
    assert guard.tree_of(inner) == (str(inner), os.path.realpath(inner))
    assert guard.tree_of(outer / "projects" / "y.md") == (str(outer), os.path.realpath(outer))
    assert guard.tree_of(tmp_path / "elsewhere" / "z.md") is None


# ------------------------------------------------------------------------ parser fuzzing

LINES = st.sampled_from(
    [
        "# Session Manifest",
        "# Phase Checkpoint: X",
        "# Agent Output: a",
        "# User Feedback: X",
        "## Metadata",
        "## Output",
        "## Error Details",
        "## Review Status",
        "## User Comments",
        "## Requested Changes",
        "## Action Taken",
        "## Phase Status",
        "## Current Phase",
        "## Metrics",
        "## Agents in Phase",
        "- Status: completed",
        "- Approved: maybe",
        "- Phase Number: 1",
        "- Phase: 1 - X",
        "- Final Newlines: 99999999999",
        "- Final Newlines: 30000000000",
        "| Phase | Name | Status | Started | Completed | Duration |",
        "|---|---|",
        "| 1 | a | b |",
        "```",
        "~~~verbatim crlf",
        "- [x] Reviewed",
        "> ## quoted",
        "",
        "\x00",
        '- Tools Used: [a, "b',
        "- Agent Execution Times: a: 1s, b",
        "Title\n=====",
        "<!--",
    ]
)
STRUCTURED = st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=40).map("\n".join)
RANDOM_BYTES = st.binary(max_size=2000).map(lambda b: b.decode("utf-8", errors="replace"))
DEEP = st.sampled_from(["> ", "- ", "* ", "1. ", "[", "`", "<div>", "    "]).flatmap(
    lambda piece: st.integers(1, 3000).map(lambda n: piece * n + "x")
)
HUGE = st.integers(10_000, 300_000).map(lambda n: "## Metadata\n- Status: " + "y" * n)
ANY_TEXT = st.one_of(st.text(), STRUCTURED, RANDOM_BYTES, DEEP, HUGE)


FUZZ_EXAMPLES = 200
"""Examples per parser in the default run; hypothesis also replays every failure it ever found first."""
EXHAUSTIVE_FUZZ_EXAMPLES = 1000
"""Examples per parser in the slow tier (``-m slow``, run by CI)."""

KINDS = pytest.mark.parametrize(
    "kind", [MANIFEST, CHECKPOINT, AGENT_OUTPUT, FEEDBACK, HISTORY_ENTRY], ids=lambda k: k.kind
)


def _record_or_located_error(text: str, kind: object) -> None:
    path = Path("fuzz.md")
    record, issues = kind.read(text, path)  # type: ignore[attr-defined]
    if record is not None:
        assert issues == []
        return
    assert issues
    for issue in issues:
        assert issue.path == path
        assert issue.line is not None
        assert issue.line >= 1
    with pytest.raises(DocumentError) as raised:
        kind.parse(text, path)  # type: ignore[attr-defined]
    assert isinstance(raised.value, HaythamError)
    assert raised.value.line == issues[0].line
    assert str(raised.value).startswith(f"{path}:{issues[0].line}: ")


# ------------------------------------------------------------------------ bounds

HUGE_FINAL_NEWLINES = """# Agent Output: a

## Metadata
- Agent: a
- Phase: 1 - Concept
- Executed: -
- Duration: -
- Status: completed
- Final Newlines: 30000000000

## Output
text
"""


def test_a_huge_final_newlines_is_a_located_error_not_an_allocation(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text(HUGE_FINAL_NEWLINES, encoding="utf-8")
    record, issues = AGENT_OUTPUT.read_path(path)
    assert record is None
    assert [(i.path, i.line, i.field) for i in issues] == [(path, 9, "Final Newlines")]
    assert "30000000000 is more line breaks than an output may end with" in issues[0].message
    with pytest.raises(DocumentError) as raised:
        AGENT_OUTPUT.load(path)
    assert str(raised.value).startswith(f"{path}:9: Final Newlines: 30000000000 is more line breaks")


def test_final_newlines_up_to_the_bound_read_back() -> None:
    text = HUGE_FINAL_NEWLINES.replace("30000000000", str(MAX_FINAL_NEWLINES))
    assert AGENT_OUTPUT.parse(text).content == "text" + "\n" * MAX_FINAL_NEWLINES


def test_an_output_past_the_bound_is_refused_before_it_is_written(manager: CheckpointManager) -> None:
    with pytest.raises(DocumentError, match="line breaks"):
        manager.save_agent_output(P, S, 1, "writer", "x" + "\n" * (MAX_FINAL_NEWLINES + 1))
    manager.save_agent_output(P, S, 1, "writer", "x" + "\n" * MAX_FINAL_NEWLINES)
    (written,) = manager.session_dir(P, S).rglob("writer.md")
    assert AGENT_OUTPUT.load(written).content == "x" + "\n" * MAX_FINAL_NEWLINES


@KINDS
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ANY_TEXT)
def test_parsers_return_a_record_or_a_located_haytham_error(text: str, kind: object) -> None:
    _record_or_located_error(text, kind)


@pytest.mark.slow
@KINDS
@settings(max_examples=EXHAUSTIVE_FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ANY_TEXT)
def test_parsers_return_a_record_or_a_located_haytham_error_exhaustively(text: str, kind: object) -> None:
    _record_or_located_error(text, kind)


# Every number a file holds is bounded (haytham.format.values.MAX_WHOLE_NUMBER and
# MAX_AMOUNT, filled into the schemas): an absurd one is an error at its line.
LEGACY = Path(__file__).parent / "legacy" / "corpus" / "projects" / "proj-legacy" / "sessions"
NUMBER_SAMPLES = {
    "manifest": LEGACY / "sess-retry" / "session_manifest.md",
    "checkpoint": LEGACY / "sess-failed-trace" / "phase_1_concept" / "checkpoint.md",
    "agent_output": LEGACY / "sess-mvp-complete" / "phase_1_concept" / "concept_expansion.md",
    "feedback": LEGACY / "sess-retry" / "phase_1_concept" / "user_feedback.md",
}
NUMBER_LINE = re.compile(r"- (?P<label>[^:]+): (?P<value>\$?[0-9][0-9.]*s?)")
ABSURD = ["99999999999999999999", "1e999", "9" * 5000]


def _number_lines() -> list[tuple[str, int]]:
    found = []
    for kind, path in NUMBER_SAMPLES.items():
        for index, line in enumerate(path.read_text("utf-8").splitlines()):
            if NUMBER_LINE.fullmatch(line):
                found.append((kind, index))
    return found


@pytest.mark.parametrize(("kind_name", "index"), _number_lines())
@pytest.mark.parametrize("absurd", ABSURD, ids=["20-digits", "1e999", "5000-digits"])
def test_an_absurd_number_is_an_error_at_its_line(kind_name: str, index: int, absurd: str) -> None:
    kind = {k.kind: k for k in (MANIFEST, CHECKPOINT, AGENT_OUTPUT, FEEDBACK)}[kind_name]
    lines = NUMBER_SAMPLES[kind_name].read_text("utf-8").splitlines()
    found = NUMBER_LINE.fullmatch(lines[index])
    assert found is not None
    lines[index] = f"- {found['label']}: {absurd}"
    path = Path("absurd.md")
    record, issues = kind.read("\n".join(lines) + "\n", path)
    assert record is None, lines[index]
    assert [i.line for i in issues] == [index + 1], issues
    assert issues[0].path == path


@pytest.mark.parametrize("absurd", ABSURD, ids=["20-digits", "1e999", "5000-digits"])
def test_an_absurd_duration_in_a_manifest_row_is_an_error_at_its_line(absurd: str) -> None:
    text = NUMBER_SAMPLES["manifest"].read_text("utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    cells = row.split(" | ")
    cells[-1] = f"{absurd}s |"
    record, issues = MANIFEST.read(text.replace(row, " | ".join(cells)), Path("m.md"))
    assert record is None
    assert [i.line for i in issues] == [text.splitlines().index(row) + 1]
