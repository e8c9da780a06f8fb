"""Each document kind on its own: canonical text, the first implementation's files, errors.

The expected strings below are the formats of formats.md written out by hand; a change to
any of them is a change of the on-disk format and must be deliberate. The compat files in
tests/data/compat/proj-alpha were written by the first public implementation (see
tests/data/README.md) and must keep loading with the values they hold.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from haytham import (
    AgentOutput,
    AgentRun,
    CheckpointManager,
    CurrentPhase,
    DocumentError,
    HaythamError,
    PhaseCheckpoint,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
    UserFeedback,
)
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST
from haytham.format.reader import decode

COMPAT = Path(__file__).parent / "data" / "compat"
SESSION = COMPAT / "proj-alpha" / "sessions" / "sess-001"
P1 = SESSION / "phase_1_concept"
P2 = SESSION / "phase_2_market_research"
P3 = SESSION / "phase_3_niche_selection"

# ----------------------------------------------------------------- manifest

MANIFEST_RECORD = SessionManifest(
    session_id="sess-001",
    project_id="proj-alpha",
    user_id="user-789",
    workflow_type="idea_validation",
    execution_mode="mvp",
    created="2024-11-24T09:59:00Z",
    last_updated="2024-11-24T10:04:00Z",
    status="in_progress",
    phases=(
        PhaseRow(1, "Concept Expansion", "completed", "2024-11-24T10:00:00Z", "2024-11-24T10:02:00Z", 120.5),
        PhaseRow(2, "Market Research", "in_progress", "2024-11-24T10:03:00Z", None, None),
        PhaseRow(3, "Niche Selection", "pending"),
        PhaseRow(6, "Validation", "pending"),
        PhaseRow(7, "Final Synthesis", "pending"),
    ),
    current=CurrentPhase(2, "Market Research", "in_progress", True),
    metrics=SessionMetrics(120.5, 15000, 0.0375),
)
MANIFEST_TEXT = """\
# Session Manifest

## Metadata
- Session ID: sess-001
- Project ID: proj-alpha
- User ID: user-789
- Workflow Type: idea_validation
- Execution Mode: mvp
- Created: 2024-11-24T09:59:00Z
- Last Updated: 2024-11-24T10:04:00Z
- Status: in_progress
- Format: 1

## Phase Status

| Phase | Name | Status | Started | Completed | Duration |
|-------|------|--------|---------|-----------|----------|
| 1 | Concept Expansion | completed | 2024-11-24T10:00:00Z | 2024-11-24T10:02:00Z | 120.5s |
| 2 | Market Research | in_progress | 2024-11-24T10:03:00Z | - | - |
| 3 | Niche Selection | pending | - | - | - |
| 6 | Validation | pending | - | - | - |
| 7 | Final Synthesis | pending | - | - | - |

## Current Phase
- Phase: 2
- Name: Market Research
- Status: in_progress
- Can Resume: true

## Metrics
- Total Duration: 120.5s
- Total Tokens: 15000
- Total Cost: $0.0375
"""


def test_manifest_renders_canonically() -> None:
    assert MANIFEST.render(MANIFEST_RECORD) == MANIFEST_TEXT
    assert MANIFEST.parse(MANIFEST_TEXT) == MANIFEST_RECORD


def test_manifest_cells_with_pipes_and_dashes() -> None:
    record = dataclasses.replace(
        MANIFEST_RECORD,
        phases=(PhaseRow(1, "R|D \\| x", "pending"), PhaseRow(2, "-", "pending")),
        current=CurrentPhase(0, "-", "pending", False),
    )
    text = MANIFEST.render(record)
    assert "| 1 | R\\|D \\\\| x | pending | - | - | - |" in text.split("\n")
    assert '| 2 | "-" | pending | - | - | - |' in text.split("\n")
    assert '- Name: "-"' in text.split("\n")
    assert MANIFEST.parse(text) == record


def test_compat_manifest_parses() -> None:
    manifest = MANIFEST.load(SESSION / "session_manifest.md")
    assert (manifest.session_id, manifest.project_id, manifest.user_id) == (
        "sess-001",
        "proj-alpha",
        "user-789",
    )
    assert (manifest.workflow_type, manifest.execution_mode) == ("idea_validation", "mvp")
    assert (manifest.created, manifest.last_updated) == (
        "2026-11-25T22:57:49.296376Z",
        "2026-11-25T22:57:49.297761Z",
    )
    assert manifest.status == "in_progress"
    assert manifest.phases == (
        PhaseRow(1, "Concept Expansion", "completed", "2024-11-24T10:00:00Z", "2024-11-24T10:02:00Z", 120.0),
        PhaseRow(2, "Market Research", "completed", "2024-11-24T10:03:00Z", "2024-11-24T10:04:00Z", 60.0),
        PhaseRow(3, "Niche Selection", "in_progress", "2024-11-24T10:05:00Z", None, None),
        PhaseRow(6, "Validation", "pending"),
        PhaseRow(7, "Final Synthesis", "pending"),
    )
    assert manifest.current == CurrentPhase(3, "Niche Selection", "in_progress", True)
    assert manifest.metrics == SessionMetrics(0.0, 0, 0.0)


# --------------------------------------------------------------- checkpoint

CHECKPOINT_RECORD = PhaseCheckpoint(
    phase_number=2,
    phase_name="Market Research",
    status="failed",
    started="2024-11-24T10:03:00Z",
    completed="2024-11-24T10:04:00Z",
    duration=60.0,
    retry_count=1,
    execution_mode="parallel",
    agents=(
        AgentRun("market_intelligence", "completed", "market_intelligence.md", 30.2, 1200, 0.01),
        AgentRun("competitor_analysis", "failed", "competitor_analysis.md", 0.0, 0, None),
    ),
    previous_phase="Concept Expansion",
    next_phase=3,
    next_phase_name="Niche Selection",
    total_tokens=1200,
    input_tokens=800,
    output_tokens=400,
    cost=0.01,
    errors=("rate limited", "timeout, twice"),
)
CHECKPOINT_TEXT = """\
# Phase Checkpoint: Market Research

## Metadata
- Phase Number: 2
- Phase Name: Market Research
- Status: failed
- Started: 2024-11-24T10:03:00Z
- Completed: 2024-11-24T10:04:00Z
- Duration: 60.0s
- Retry Count: 1
- Execution Mode: parallel
- Format: 1

## Agents in Phase
- market_intelligence: completed
- competitor_analysis: failed

## Inputs
- Previous Phase: Concept Expansion
- Required Context: []
- User Parameters: {}

## Outputs
- Agent Outputs: [market_intelligence.md, competitor_analysis.md]
- User Feedback: user_feedback.md

## Metrics
- Total Tokens: 1200
- Input Tokens: 800
- Output Tokens: 400
- Cost: $0.0100
- Agent Execution Times: market_intelligence: 30.2s, competitor_analysis: 0.0s
- Agent Tokens: market_intelligence: 1200, competitor_analysis: 0
- Agent Costs: market_intelligence: $0.0100, competitor_analysis: -

## Next Phase
- Phase Number: 3
- Phase Name: Niche Selection
- Ready to Execute: false
- Blocking Issues: rate limited, timeout, twice

## Errors
- rate limited
- timeout, twice
"""


def test_checkpoint_renders_canonically() -> None:
    assert CHECKPOINT.render(CHECKPOINT_RECORD) == CHECKPOINT_TEXT
    assert CHECKPOINT.parse(CHECKPOINT_TEXT) == CHECKPOINT_RECORD


def test_last_checkpoint_has_no_next_phase() -> None:
    record = dataclasses.replace(
        CHECKPOINT_RECORD, status="completed", next_phase=None, next_phase_name=None, errors=(), agents=()
    )
    lines = CHECKPOINT.render(record).split("\n")
    assert "- Phase Number: -" in lines
    assert "- Phase Name: None" in lines
    assert "- Ready to Execute: true" in lines
    assert "- Blocking Issues: none" in lines
    assert "## Errors" not in lines
    assert CHECKPOINT.parse("\n".join(lines)) == record


def test_agent_names_that_differ_only_in_case_stay_apart() -> None:
    record = dataclasses.replace(
        CHECKPOINT_RECORD,
        agents=(
            AgentRun("writer", "completed", "writer.md", 1.0, 10, 0.1),
            AgentRun("Writer", "failed", "Writer.md", 2.0, 20, 0.2),
        ),
    )
    text = CHECKPOINT.render(record)
    assert "- writer: completed\n- Writer: failed\n" in text
    assert CHECKPOINT.parse(text) == record
    duplicated = text.replace("- Writer: failed", "- writer: failed")
    with pytest.raises(DocumentError, match=r":16: writer: appears again \(first at line 15\)"):
        CHECKPOINT.parse(duplicated)


def test_compat_checkpoints_parse() -> None:
    first = CHECKPOINT.load(P1 / "checkpoint.md")
    assert first == PhaseCheckpoint(
        phase_number=1,
        phase_name="Concept Expansion",
        status="completed",
        started="2024-11-24T10:00:00Z",
        completed="2024-11-24T10:02:00Z",
        duration=120.5,
        retry_count=0,
        execution_mode="single",
        agents=(AgentRun("concept_expansion", "completed", "concept_expansion.md", 120.5),),
        previous_phase=None,
        next_phase=2,
        next_phase_name="Market Research",
        total_tokens=15000,
        input_tokens=12000,
        output_tokens=3000,
        cost=0.0375,
    )
    second = CHECKPOINT.load(P2 / "checkpoint.md")
    assert (second.execution_mode, second.previous_phase, second.total_tokens, second.cost) == (
        "parallel",
        "Concept Expansion",
        2400,
        0.02,
    )
    assert [(a.agent_name, a.status, a.output_file, a.duration) for a in second.agents] == [
        ("market_intelligence", "completed", "market_intelligence.md", 30.2),
        ("competitor_analysis", "completed", "competitor_analysis.md", 30.2),
    ]
    third = CHECKPOINT.load(P3 / "checkpoint.md")
    assert (third.status, third.completed, third.duration, third.total_tokens, third.cost) == (
        "in_progress",
        None,
        None,
        0,
        0.0,
    )
    assert third.agents == (AgentRun("niche_selector", "in_progress", "niche_selector.md", 0.0),)
    assert (third.next_phase, third.next_phase_name) == (4, "Product Strategy")


# ------------------------------------------------------------- agent output

AGENT_RECORD = AgentOutput(
    agent_name="competitor_analysis",
    phase_number=2,
    phase_name="Market Research",
    executed="2024-11-24T10:04:00Z",
    duration=0.0,
    status="failed",
    model="gpt-4o",
    input_tokens=800,
    output_tokens=0,
    tools_used=("web_search", "a, b"),
    content="Partial\r\nresult\r\n\r\n",
    error_type="TimeoutError",
    error_message="took > 30s",
    stack_trace='Traceback:\n  File "x.py", line 1\n```\n',
)
AGENT_TEXT = """\
# Agent Output: competitor_analysis

## Metadata
- Agent: competitor_analysis
- Phase: 2 - Market Research
- Executed: 2024-11-24T10:04:00Z
- Duration: 0.0s
- Status: failed
- Final Newlines: 2
- Line Endings: crlf
- Format: 1

## Execution Details
- Model: gpt-4o
- Input Tokens: 800
- Output Tokens: 0
- Tools Used: [web_search, "a, b"]
- Cost: -

## Error Details
- Error Type: TimeoutError
- Error Message: took > 30s
- Stack Trace:
````verbatim
Traceback:
  File "x.py", line 1
```

````

## Output

Partial
result
"""


def test_agent_output_renders_canonically() -> None:
    assert AGENT_OUTPUT.render(AGENT_RECORD) == AGENT_TEXT
    assert AGENT_OUTPUT.parse(AGENT_TEXT) == AGENT_RECORD


def test_plain_agent_output_has_no_optional_lines() -> None:
    record = dataclasses.replace(
        AGENT_RECORD,
        status="completed",
        content="# Done",
        tools_used=(),
        error_type=None,
        error_message=None,
        stack_trace=None,
        duration=None,
        model=None,
    )
    text = AGENT_OUTPUT.render(record)
    assert text.endswith(
        "- Model: -\n- Input Tokens: 800\n- Output Tokens: 0\n- Tools Used: [none]\n- Cost: -\n\n"
        "## Output\n\n# Done\n"
    )
    assert "Final Newlines" not in text
    assert "Line Endings" not in text
    assert "## Error Details" not in text
    assert AGENT_OUTPUT.parse(text) == record


def test_compat_agent_outputs_parse() -> None:
    concept = AGENT_OUTPUT.load(P1 / "concept_expansion.md")
    assert concept == AgentOutput(
        agent_name="concept_expansion",
        phase_number=1,
        phase_name="Concept Expansion",
        executed="2026-11-25T22:57:49.296488Z",
        duration=120.5,
        status="completed",
        model="anthropic.claude-3-sonnet-20240229-v1:0",
        input_tokens=12000,
        output_tokens=3000,
        tools_used=("file_write",),
        content=(
            "# Concept\n\nA marketplace for **solo founders**.\n\n- point one\n- point two\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n"
        ),
    )
    market = AGENT_OUTPUT.load(P2 / "market_intelligence.md")
    assert market.content == "## Market size\n\nTAM is $4B.\n\n```python\nprint('## Output')\n```\n"
    assert market.tools_used == ("web_search", "file_write")
    competitor = AGENT_OUTPUT.load(P2 / "competitor_analysis.md")
    assert (competitor.content, competitor.model, competitor.input_tokens) == (
        "Competitors:\n\n1. Foo\n2. Bar\n",
        "gpt-4o",
        800,
    )


LEGACY_FAILED = """\
# Agent Output: validator

## Metadata
- Agent: validator
- Phase: 6 - Validation
- Executed: 2024-11-24T10:00:00Z
- Duration: 1.5s
- Status: failed

## Execution Details
- Model: gpt-4o
- Input Tokens: 10
- Output Tokens: 0
- Tools Used: [none]

## Output

Partial answer

## Error Details
- Error Type: TimeoutError
- Error Message: took too long
- Stack Trace:
```
Traceback (most recent call last):
  boom
```
"""


def test_legacy_error_details_after_the_output_are_read() -> None:
    record = AGENT_OUTPUT.parse(LEGACY_FAILED)
    assert record.content == "Partial answer"
    assert (record.error_type, record.error_message, record.stack_trace) == (
        "TimeoutError",
        "took too long",
        "Traceback (most recent call last):\n  boom",
    )
    rewritten = AGENT_OUTPUT.render(record)
    assert rewritten.index("## Error Details") < rewritten.index("## Output")
    assert AGENT_OUTPUT.parse(rewritten) == record


def test_completed_output_ending_in_error_details_keeps_them() -> None:
    text = LEGACY_FAILED.replace("- Status: failed", "- Status: completed")
    record = AGENT_OUTPUT.parse(text)
    assert record.content.startswith("Partial answer\n\n## Error Details\n- Error Type: TimeoutError")
    assert record.error_type is None


# ---------------------------------------------------------------- feedback

FEEDBACK_RECORD = UserFeedback(
    phase_name="Market Research",
    reviewed=True,
    approved=False,
    timestamp="2024-11-24T10:05:00Z",
    comments="Please dig deeper into EU.\nAlso check pricing.",
    requested_changes=("Add EU market data", "Compare pricing tiers"),
    action="retry",
    retry_count=1,
)
FEEDBACK_TEXT = """\
# User Feedback: Market Research

## Review Status
- Reviewed: true
- Approved: false
- Timestamp: 2024-11-24T10:05:00Z
- Format: 1

## User Comments
Please dig deeper into EU.
Also check pricing.

## Requested Changes
- Change 1: Add EU market data
- Change 2: Compare pricing tiers

## Action Taken
- Action: retry
- Retry Count: 1
"""
FENCED_FEEDBACK_TEXT = """\
# User Feedback: Market Research

## Review Status
- Reviewed: true
- Approved: true
- Timestamp: -
- Format: 1

## User Comments
```verbatim
## Not a heading
- Approved: false

```

## Requested Changes
- No changes requested

## Action Taken
- Action: approved
- Retry Count: 0
"""


def test_feedback_renders_canonically() -> None:
    assert FEEDBACK.render(FEEDBACK_RECORD) == FEEDBACK_TEXT
    assert FEEDBACK.parse(FEEDBACK_TEXT) == FEEDBACK_RECORD


def test_feedback_comments_that_are_not_plain_markdown_are_fenced() -> None:
    record = dataclasses.replace(
        FEEDBACK_RECORD,
        approved=True,
        timestamp=None,
        comments="## Not a heading\n- Approved: false\n",
        requested_changes=(),
        action="approved",
        retry_count=0,
    )
    assert FEEDBACK.render(record) == FENCED_FEEDBACK_TEXT
    assert FEEDBACK.parse(FENCED_FEEDBACK_TEXT) == record


def test_feedback_empty_comments_and_quoted_changes() -> None:
    record = dataclasses.replace(FEEDBACK_RECORD, comments="", requested_changes=("-", " x", "Change 3: y"))
    text = FEEDBACK.render(record)
    lines = text.split("\n")
    assert lines[lines.index("## User Comments") + 1] == "No comments provided"
    assert [line for line in lines if line.startswith("- Change")] == [
        '- Change 1: "-"',
        '- Change 2: " x"',
        "- Change 3: Change 3: y",
    ]
    assert FEEDBACK.parse(text) == record


def test_compat_feedback_parses() -> None:
    first = FEEDBACK.load(P1 / "user_feedback.md")
    assert first == UserFeedback(
        phase_name="Concept Expansion",
        reviewed=True,
        approved=True,
        timestamp="2026-11-25T22:57:49.296841Z",
        comments="Looks great!",
        requested_changes=(),
        action="approved",
        retry_count=0,
    )
    second = FEEDBACK.load(P2 / "user_feedback.md")
    assert second == dataclasses.replace(FEEDBACK_RECORD, timestamp="2026-11-25T22:57:49.297561Z")


HAND_EDITED = (
    "\ufeff# User Feedback: Market Research\r\n\r\n## Review Status\r\n* Reviewed: yes\r\n"
    "- [x] Approved\r\n\r\n## User Comments\r\n\r\nHand written.\r\n\r\n  Second paragraph.\r\n\r\n"
    "## Requested Changes\r\n* Add EU data\r\n1. Change: compare tiers\r\n2) Change 7: more\r\n"
    "   continued here\r\n"
)


def test_hand_edited_feedback_is_read_leniently() -> None:
    record = FEEDBACK.parse(decode(HAND_EDITED.encode("utf-8"), None))
    assert record == UserFeedback(
        phase_name="Market Research",
        reviewed=True,
        approved=True,
        timestamp=None,
        comments="Hand written.\n\n  Second paragraph.",
        requested_changes=("Add EU data", "compare tiers", "more continued here"),
        action="approved",
        retry_count=0,
    )


def test_titles_are_read_as_written_not_as_markdown() -> None:
    for name in ("R&D *beta*", "a \\# b", "C #", "#", "`x`", "[l](u)"):
        record = dataclasses.replace(FEEDBACK_RECORD, phase_name=name)
        assert FEEDBACK.parse(FEEDBACK.render(record)).phase_name == name
        checkpoint = dataclasses.replace(CHECKPOINT_RECORD, phase_name=name)
        assert CHECKPOINT.parse(CHECKPOINT.render(checkpoint)).phase_name == name
    assert FEEDBACK.render(dataclasses.replace(FEEDBACK_RECORD, phase_name="C #")).startswith(
        '# User Feedback: "C #"\n'
    )
    assert FEEDBACK.parse(FEEDBACK_TEXT.replace("Research\n", "Research ##\n", 1)).phase_name == (
        "Market Research"
    )


# ---------------------------------------------------------- errors, located


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "old", "new", "line", "message"),
    [
        (
            "user_feedback.md",
            FEEDBACK_TEXT,
            "- Approved: false",
            "- Approved: maybe",
            5,
            "Approved: 'maybe' is not a boolean (expected true/false, yes/no)",
        ),
        (
            "user_feedback.md",
            FEEDBACK_TEXT,
            "- Retry Count: 1",
            "- Retry Count: once",
            19,
            "Retry Count: 'once' is not a whole number",
        ),
        (
            "checkpoint.md",
            CHECKPOINT_TEXT,
            "- Status: failed",
            "- Status: broken",
            6,
            "Status: 'broken' is not one of pending, in_progress, completed, failed, skipped, requires_retry",
        ),
        (
            "checkpoint.md",
            CHECKPOINT_TEXT,
            "- Started: 2024-11-24T10:03:00Z",
            "- Started: last tuesday",
            7,
            "Started: 'last tuesday' is not an ISO 8601 UTC timestamp (expected like 2024-11-24T10:00:00Z)",
        ),
        (
            "checkpoint.md",
            CHECKPOINT_TEXT,
            "- market_intelligence: completed",
            "- market_intelligence: done",
            15,
            "market_intelligence: 'done' is not one of pending, in_progress, completed, failed, skipped, "
            "requires_retry",
        ),
        (
            "a.md",
            AGENT_TEXT,
            "- Input Tokens: 800",
            "- Input Tokens: lots",
            15,
            "Input Tokens: 'lots' is not a whole number",
        ),
        (
            "a.md",
            AGENT_TEXT,
            "- Final Newlines: 2",
            "- Final Newlines: two",
            9,
            "Final Newlines: 'two' is not a whole number of line breaks",
        ),
        (
            "session_manifest.md",
            MANIFEST_TEXT,
            "| 3 | Niche Selection | pending |",
            "| 3 | Niche Selection | waiting |",
            20,
            "Status: 'waiting' is not one of pending, in_progress, failed, skipped, completed, "
            "awaiting_review, approved, sent_back, stale",
        ),
        (
            "session_manifest.md",
            MANIFEST_TEXT,
            "- Total Tokens: 15000",
            "- Total Tokens: -5",
            32,
            "Total Tokens: -5 is below the minimum 0",
        ),
    ],
)
def test_a_bad_value_is_located(
    tmp_path: Path, name: str, text: str, old: str, new: str, line: int, message: str
) -> None:
    assert old in text
    path = _write(tmp_path, name, text.replace(old, new, 1))
    assert path.read_text(encoding="utf-8").split("\n")[line - 1].startswith(new)
    kind = {"user_feedback.md": FEEDBACK, "checkpoint.md": CHECKPOINT, "a.md": AGENT_OUTPUT}.get(
        name, MANIFEST
    )
    with pytest.raises(DocumentError) as caught:
        kind.load(path)
    error = caught.value
    assert str(error) == f"{path}:{line}: {message}"
    assert (error.path, error.line) == (path, line)
    assert isinstance(error, ValueError)
    assert isinstance(error, HaythamError)
    record, issues = kind.read_path(path)
    assert record is None
    assert [str(issue) for issue in issues] == [str(error)]


def test_every_problem_of_a_file_is_listed_in_order(tmp_path: Path) -> None:
    text = FEEDBACK_TEXT.replace("- Approved: false", "- Approved: maybe").replace(
        "- Action: retry", "- Action: shrug"
    )
    path = _write(tmp_path, "user_feedback.md", text)
    _, issues = FEEDBACK.read_path(path)
    assert [(issue.line, issue.field) for issue in issues] == [(5, "Approved"), (18, "Action")]


def test_missing_sections_and_fields_are_named(tmp_path: Path) -> None:
    start, end = CHECKPOINT_TEXT.index("## Metadata"), CHECKPOINT_TEXT.index("## Agents in Phase")
    path = _write(tmp_path, "checkpoint.md", CHECKPOINT_TEXT[:start] + CHECKPOINT_TEXT[end:])
    _, issues = CHECKPOINT.read_path(path)
    messages = [str(issue) for issue in issues]
    assert f"{path}:1: section '## Metadata' is missing" in messages
    assert f"{path}:1: Phase Number: is missing" in messages
    assert f"{path}:1: Status: is missing" in messages
    assert not any("None" in m for m in messages), messages  # no follow-on schema noise


def test_a_file_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "user_feedback.md"
    path.write_bytes(FEEDBACK_TEXT.encode("utf-8").replace(b"Also", b"Als\xe9"))
    with pytest.raises(DocumentError) as caught:
        FEEDBACK.load(path)
    assert str(caught.value) == f"{path}:11: byte 0xe9 is not UTF-8 (save the file as UTF-8)"


def test_a_wrong_title_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, "checkpoint.md", FEEDBACK_TEXT)
    with pytest.raises(
        DocumentError, match=r":1: title 'User Feedback: Market Research' does not start with"
    ):
        CHECKPOINT.load(path)


# ---------------------------------------------- the compat session, end to end


@pytest.fixture
def compat(tmp_path: Path) -> CheckpointManager:
    """A copy of the compat tree: loading may repair its manifest."""
    shutil.copytree(COMPAT, tmp_path / "compat")
    return CheckpointManager(tmp_path / "compat")


def test_compat_session_loads_with_its_values(compat: CheckpointManager) -> None:
    state = compat.load_session("proj-alpha", "sess-001")
    assert (state["session_id"], state["project_id"], state["user_id"]) == (
        "sess-001",
        "proj-alpha",
        "user-789",
    )
    assert (state["workflow_type"], state["execution_mode"], state["status"]) == (
        "idea_validation",
        "mvp",
        "in_progress",
    )
    assert state["created"] == "2026-11-25T22:57:49.296376Z"
    # Phase 2's review sent it back (Approved: false, Action: retry) and it has not run
    # again since (Retry Count: 0): the next resume runs it, so it is the current phase.
    assert (state["current_phase"], state["current_phase_name"], state["can_resume"]) == (
        2,
        "Market Research",
        True,
    )
    assert state["next_phase"] == 2
    assert state["completed_phases"] == [1]
    assert state["phase_statuses"] == {
        1: "approved",
        2: "sent_back",
        3: "in_progress",
        6: "pending",
        7: "pending",
    }
    assert [row["duration"] for row in state["phases"]] == [120.5, 60.0, None, None, None]
    # The old manifest's Metrics are all zero; the checkpoints hold the real sums.
    assert state["metrics"]["total_tokens"] == 15000 + 2400 + 0 == 17400
    assert state["metrics"]["total_duration"] == pytest.approx(180.5)
    assert state["metrics"]["total_cost"] == pytest.approx(0.0575)
    assert compat.get_approved_phases("proj-alpha", "sess-001") == [1]


def test_compat_session_outputs_and_feedback(compat: CheckpointManager) -> None:
    outputs = compat.get_phase_outputs("proj-alpha", "sess-001")
    assert outputs == {
        1: {"concept_expansion": AGENT_OUTPUT.load(P1 / "concept_expansion.md").content},
        2: {
            "competitor_analysis": "Competitors:\n\n1. Foo\n2. Bar\n",
            "market_intelligence": "## Market size\n\nTAM is $4B.\n\n```python\nprint('## Output')\n```\n",
        },
    }
    assert outputs[1]["concept_expansion"].startswith("# Concept\n\nA marketplace for **solo founders**.")
    assert compat.get_phase_outputs("proj-alpha", "sess-001", [3]) == {3: {}}
    feedback = compat.load_feedback("proj-alpha", "sess-001", 2)
    assert feedback is not None
    assert feedback.requested_changes == ("Add EU market data", "Compare pricing tiers")
    assert compat.load_feedback("proj-alpha", "sess-001", 3) is None


def test_compat_session_validates_and_doctor_repairs_the_manifest(compat: CheckpointManager) -> None:
    manifest_path = compat.session_dir("proj-alpha", "sess-001") / "session_manifest.md"
    before = compat.validate_session("proj-alpha", "sess-001")
    assert before, "the old manifest's rows and metrics disagree with its checkpoints"
    assert all(issue.path == manifest_path for issue in before)
    for phase in (1, 2, 3):
        assert compat.validate_checkpoint("proj-alpha", "sess-001", phase) == (True, [])
    stale = manifest_path.read_bytes()
    loaded = compat.load_session("proj-alpha", "sess-001")
    assert manifest_path.read_bytes() == stale  # reads never write
    assert loaded["metrics"]["total_tokens"] == 17400  # derived in memory
    compat.repair("proj-alpha", "sess-001")  # haytham doctor --fix
    assert compat.validate_session("proj-alpha", "sess-001") == []
    repaired = MANIFEST.load(manifest_path)
    assert repaired.metrics == SessionMetrics(180.5, 17400, 0.0575)
    assert [row.duration for row in repaired.phases[:2]] == [120.5, 60.0]
    # Nothing but the manifest changed.
    for path in sorted(SESSION.rglob("*.md")):
        if path.name != "session_manifest.md":
            copy = compat.base_dir / path.relative_to(COMPAT)
            assert copy.read_bytes() == path.read_bytes()


def test_compat_disagreement_messages_say_what_differs(compat: CheckpointManager) -> None:
    """Before the repair, phase 1's row says 120s and its checkpoint 120.5s: a message about
    that row must not read "says 'completed' but its checkpoint says 'completed'"."""
    messages = [str(issue) for issue in compat.validate_session("proj-alpha", "sess-001")]
    contradictions = [m for m in messages if re.search(r"says '(\w+)' but its checkpoint says '\1'", m)]
    assert contradictions == []


def test_compat_session_keeps_going(compat: CheckpointManager) -> None:
    compat.save_agent_output(
        "proj-alpha", "sess-001", 3, "niche_selector", "Niche: solo founders\n", model="gpt-4o"
    )
    compat.save_checkpoint(
        "proj-alpha", "sess-001", 3, "completed", [{"agent_name": "niche_selector", "tokens": 600}]
    )
    state = compat.load_session("proj-alpha", "sess-001")
    assert state["completed_phases"] == [1, 3]
    assert state["phase_statuses"][3] == "completed"
    assert (state["current_phase"], state["status"]) == (2, "in_progress")  # phase 2 is sent back
    assert state["metrics"]["total_tokens"] == 18000
    assert compat.load_checkpoint("proj-alpha", "sess-001", 3).started == "2024-11-24T10:05:00Z"
    assert compat.validate_session("proj-alpha", "sess-001") == []
