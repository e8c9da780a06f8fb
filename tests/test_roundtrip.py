"""Round-trip properties: whatever text goes in comes back out exactly.

Two levels. Through the real ``CheckpointManager`` on real files in a temporary directory,
every free-text argument (agent output, model, error type and message, stack trace, tools,
feedback comments, requested changes, checkpoint errors) is saved and read back. And for
each document kind, ``parse(render(record)) == record`` for generated records, including
the fields the manager fills in itself (phase names of custom workflows, agent file names).

The text strategies mix hypothesis' full text (every code point but surrogates) with lines
chosen to break a markdown file: the file's own section headings, list items that look like
fields, fences, CR/CRLF/NUL and blank lines at either end.
"""

from __future__ import annotations

import itertools
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_tiers import property_settings

from haytham import (
    AgentOutput,
    AgentRun,
    CheckpointManager,
    CurrentPhase,
    PhaseCheckpoint,
    PhaseDefinition,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
    UserFeedback,
    Workflow,
)
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST, ReadCache
from haytham.format.feedback import settle
from haytham.records import APPROVAL_ACTIONS, FEEDBACK_ACTIONS, PHASE_STATUSES, RUN_STYLES
from haytham.store.clock import format_timestamp

PROPERTY = property_settings(
    150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

# ------------------------------------------------------------------ strategies

LINE_BREAKS = ["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"]
NASTY_LINES = [
    "## Metadata",
    "## Output",
    "## Error Details",
    "## Execution Details",
    "## Debug Info",
    "## Stack Trace",
    "## Review Status",
    "## User Comments",
    "## Requested Changes",
    "## Action Taken",
    "## Agents in Phase",
    "## Next Phase",
    "## Errors",
    "# Agent Output: other",
    "# User Feedback: other",
    "- Approved: true",
    "- Reviewed: false",
    "- Phase Number: 9",
    "- Status: failed",
    "- Final Newlines: 7",
    "- Line Endings: crlf",
    "- Change 1: sneaky",
    "- No changes requested",
    "No comments provided",
    "```",
    "````verbatim",
    "```verbatim crlf",
    "~~~",
    "    ```",
    "<div>",
    "<!--",
    "-->",
    "===",
    "---",
    "> ## quoted",
    "| a | b |",
    "-",
    '"quoted"',
    "\x00",
    "\t",
    " ",
    "\ufeff",
    "\u2028",
    "\x85",
    "\\",
]

tricky_text = st.lists(
    st.one_of(
        st.sampled_from(NASTY_LINES),
        st.sampled_from(LINE_BREAKS),
        st.text(max_size=8),
    ),
    max_size=14,
).map("".join)
free_text = st.one_of(st.text(), tricky_text)
optional_text = st.none() | free_text
text_lists = st.lists(free_text, max_size=4)

names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True)
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.just(timezone.utc),
).map(format_timestamp)
optional_timestamps = st.none() | timestamps
seconds = st.none() | st.integers(0, 10**9).map(lambda n: n / 10)
costs = st.none() | st.integers(0, 10**10).map(lambda n: n / 10_000)
counts = st.none() | st.integers(0, 10**12)
phase_statuses = st.sampled_from(PHASE_STATUSES)

# ------------------------------------------------------------------ fixtures

_counter = itertools.count()


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> CheckpointManager:
    made = CheckpointManager(tmp_path_factory.mktemp("roundtrip"))
    # Keep nothing in the read cache: every load parses the file, so the round trip goes
    # through the bytes (the manager remembers what it writes, which would skip the parse).
    made.cache = ReadCache(max_chars=0, max_item_chars=0)
    return made


@pytest.fixture
def session(manager: CheckpointManager) -> tuple[str, str]:
    """A fresh session for one property; its examples overwrite the same files."""
    ids = ("rt", f"s{next(_counter)}")
    manager.create_session(*ids, "tester")
    return ids


def _save_output(manager: CheckpointManager, session: tuple[str, str], **kwargs: Any) -> AgentOutput:
    arguments: dict[str, Any] = {"output_content": "body"}
    arguments.update(kwargs)
    manager.save_agent_output(*session, 2, "agent", **arguments)
    return manager.load_agent_output(*session, 2, "agent")


# --------------------------------------------------- through the real manager


@PROPERTY
@given(content=free_text, status=phase_statuses)
def test_agent_output_content(
    manager: CheckpointManager, session: tuple[str, str], content: str, status: str
) -> None:
    manager.save_agent_output(*session, 1, "writer", content, status=status)
    assert manager.get_phase_outputs(*session, [1]) == {1: {"writer": content}}
    saved = manager.load_agent_output(*session, 1, "writer")
    assert (saved.content, saved.status) == (content, status)


@PROPERTY
@given(content=free_text)
def test_failed_agent_output_content_and_error(
    manager: CheckpointManager, session: tuple[str, str], content: str
) -> None:
    saved = _save_output(
        manager,
        session,
        output_content=content,
        status="failed",
        error_type="ValueError",
        error_message="boom",
        stack_trace="Traceback\n  line 1",
    )
    assert saved.content == content
    assert (saved.error_type, saved.error_message, saved.stack_trace) == (
        "ValueError",
        "boom",
        "Traceback\n  line 1",
    )


@PROPERTY
@given(model=optional_text)
def test_model(manager: CheckpointManager, session: tuple[str, str], model: str | None) -> None:
    saved = _save_output(manager, session, model=model)
    assert saved.model == model
    assert saved.content == "body"


@PROPERTY
@given(error_type=optional_text, status=phase_statuses)
def test_error_type(
    manager: CheckpointManager, session: tuple[str, str], error_type: str | None, status: str
) -> None:
    saved = _save_output(manager, session, error_type=error_type, status=status)
    assert saved.error_type == error_type
    assert saved.status == status
    assert saved.content == "body"


@PROPERTY
@given(error_message=optional_text, status=phase_statuses)
def test_error_message(
    manager: CheckpointManager, session: tuple[str, str], error_message: str | None, status: str
) -> None:
    saved = _save_output(manager, session, error_message=error_message, status=status)
    assert saved.error_message == error_message
    assert saved.content == "body"


@PROPERTY
@given(stack_trace=optional_text, status=phase_statuses)
def test_stack_trace(
    manager: CheckpointManager, session: tuple[str, str], stack_trace: str | None, status: str
) -> None:
    saved = _save_output(manager, session, stack_trace=stack_trace, status=status, output_content="out\n")
    assert saved.stack_trace == stack_trace
    assert saved.content == "out\n"


@PROPERTY
@given(tools=text_lists)
def test_tools_used(manager: CheckpointManager, session: tuple[str, str], tools: list[str]) -> None:
    saved = _save_output(manager, session, tools_used=tools)
    assert saved.tools_used == tuple(tools)


@PROPERTY
@given(comments=free_text, approved=st.booleans())
def test_feedback_comments(
    manager: CheckpointManager, session: tuple[str, str], comments: str, approved: bool
) -> None:
    manager.save_checkpoint(*session, 3, "completed", [])  # the lifecycle approves only a phase that ran
    manager.save_user_feedback(*session, 3, True, approved, comments, ["one"], "retry", 1)
    feedback = manager.load_feedback(*session, 3)
    assert feedback is not None
    assert feedback.comments == comments
    assert feedback.approved is approved
    assert feedback.requested_changes == ("one",)
    assert (feedback.action, feedback.retry_count) == ("retry", 1)
    assert (3 in manager.get_approved_phases(*session)) is approved
    assert manager.state(*session).phase(3).state == ("approved" if approved else "sent_back")


@PROPERTY
@given(changes=text_lists, comments=free_text)
def test_requested_changes(
    manager: CheckpointManager, session: tuple[str, str], changes: list[str], comments: str
) -> None:
    manager.save_checkpoint(*session, 3, "completed", [])  # only a phase that ran is reviewed
    manager.save_user_feedback(*session, 3, True, False, comments, changes, "rejected")
    feedback = manager.load_feedback(*session, 3)
    assert feedback is not None
    assert feedback.requested_changes == tuple(changes)
    assert feedback.comments == comments
    assert feedback.approved is False


@PROPERTY
@given(errors=text_lists, status=phase_statuses)
def test_checkpoint_errors(
    manager: CheckpointManager, session: tuple[str, str], errors: list[str], status: str
) -> None:
    manager.save_checkpoint(*session, 2, status, [{"agent_name": "a", "tokens": 5}], errors=errors)
    checkpoint = manager.load_checkpoint(*session, 2)
    assert checkpoint.errors == tuple(errors)
    assert checkpoint.status == status
    assert checkpoint.total_tokens == 5
    assert manager.validate_checkpoint(*session, 2) == (True, [])


# A workflow's phase names are one line without "|" (its schema); anything else goes.
phase_names = st.one_of(
    st.text(
        st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="|"),
        min_size=1,
    ),
    st.sampled_from(
        ["C #", "R&D *beta*", "a \\# b", "`code`", "_x_", "[link](y)", "-", "None", '"q"', " pad ", "#"]
    ),
)


@settings(max_examples=40, deadline=None)
@given(phase_name=phase_names, comments=free_text)
def test_custom_workflow_phase_names(phase_name: str, comments: str) -> None:
    """Phase names come from a workflow, and a custom workflow may name them (almost) anything."""
    workflow = Workflow(
        "custom",
        (
            PhaseDefinition(1, phase_name, "phase_1_x", ("a",)),
            PhaseDefinition(2, "Two", "phase_2_y", ("b",)),
        ),
        modes={"all": (1, 2)},
    )
    with tempfile.TemporaryDirectory() as base:
        manager = CheckpointManager(base, workflows=[workflow])
        manager.cache = ReadCache(max_chars=0, max_item_chars=0)  # every load parses the file
        manager.create_session("p", "s", "u", "custom", "all")
        manager.save_checkpoint("p", "s", 1, "in_progress", [{"agent_name": "a"}])
        manager.save_agent_output("p", "s", 1, "a", comments)
        manager.save_user_feedback("p", "s", 1, False, False, comments, action="pending")  # still running
        assert manager.load_checkpoint("p", "s", 1).phase_name == phase_name
        assert manager.load_agent_output("p", "s", 1, "a").phase_name == phase_name
        feedback = manager.load_feedback("p", "s", 1)
        assert feedback is not None
        assert (feedback.phase_name, feedback.comments) == (phase_name, comments)
        state = manager.load_session("p", "s")
        assert state["current_phase_name"] == phase_name
        assert state["phases"][0]["name"] == phase_name
        manager.save_checkpoint("p", "s", 2, "in_progress", [])
        assert manager.load_checkpoint("p", "s", 2).previous_phase == phase_name
        issues = manager.validate_session("p", "s")  # comments while Reviewed: false: a note, no error
        assert [i.severity for i in issues] == (["warning"] if feedback.comments else [])
        assert all("does not count yet" in i.message for i in issues)


# ------------------------------------------------------------- record level

agent_names = st.one_of(st.sampled_from(["a", "A", "agent", "Agent", "none", "1.", "x_y-z.md"]), names)
agent_runs = st.lists(
    st.builds(
        AgentRun,
        agent_name=agent_names,
        status=phase_statuses,
        output_file=free_text,
        duration=seconds,
        tokens=counts,
        cost=costs,
    ),
    max_size=4,
    unique_by=lambda run: run.agent_name,
).map(tuple)

checkpoints = st.builds(
    PhaseCheckpoint,
    phase_number=st.integers(1, 10**6),
    phase_name=free_text,
    status=phase_statuses,
    started=optional_timestamps,
    completed=optional_timestamps,
    duration=seconds,
    retry_count=st.integers(0, 10**6),
    execution_mode=st.sampled_from(RUN_STYLES),
    agents=agent_runs,
    previous_phase=optional_text,
    next_phase=st.none() | st.integers(1, 10**6),
    next_phase_name=optional_text,
    total_tokens=counts,
    input_tokens=counts,
    output_tokens=counts,
    cost=costs,
    errors=text_lists.map(tuple),
    required_context=free_text,
    user_parameters=free_text,
    user_feedback_file=free_text,
)

agent_outputs = st.builds(
    AgentOutput,
    agent_name=names,
    phase_number=st.integers(1, 10**6),
    phase_name=free_text,
    executed=optional_timestamps,
    duration=seconds,
    status=phase_statuses,
    model=optional_text,
    input_tokens=counts,
    output_tokens=counts,
    tools_used=text_lists.map(tuple),
    content=free_text,
    error_type=optional_text,
    error_message=optional_text,
    stack_trace=optional_text,
)

feedbacks = st.builds(
    UserFeedback,
    phase_name=free_text,
    reviewed=st.booleans(),
    approved=st.booleans(),
    timestamp=optional_timestamps,
    comments=free_text,
    requested_changes=text_lists.map(tuple),
    action=st.sampled_from(FEEDBACK_ACTIONS),
    retry_count=st.integers(0, 10**6),
).map(settle)  # a file holds settled reviews: an approval implies a review (formats.md, "Hand edits")
feedbacks = feedbacks.filter(  # and no review that does not approve with an approving action (an error)
    lambda r: not (r.reviewed and not r.approved and r.action in APPROVAL_ACTIONS)
)

manifests = st.builds(
    SessionManifest,
    session_id=names,
    project_id=names,
    user_id=names,
    workflow_type=free_text.filter(bool),
    execution_mode=free_text.filter(bool),
    created=timestamps,
    last_updated=timestamps,
    status=st.sampled_from(["in_progress", "completed", "failed"]),
    phases=st.lists(
        st.builds(
            PhaseRow,
            number=st.integers(1, 10**6),
            name=free_text,
            status=phase_statuses,
            started=optional_timestamps,
            completed=optional_timestamps,
            duration=seconds,
        ),
        max_size=7,
    ).map(tuple),
    current=st.builds(
        CurrentPhase,
        number=st.integers(0, 10**6),
        name=free_text,
        status=free_text,
        can_resume=st.booleans(),
    ),
    metrics=st.builds(
        SessionMetrics,
        total_duration=st.integers(0, 10**9).map(lambda n: n / 10),
        total_tokens=st.integers(0, 10**12),
        total_cost=st.integers(0, 10**10).map(lambda n: n / 10_000),
    ),
)


def _through_a_file(kind: Any, record: Any) -> Any:
    """Render, write, read back with the same decoding the manager uses, parse."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "document.md"
        path.write_bytes(kind.render(record).encode("utf-8"))
        return kind.load(path)


@PROPERTY
@given(record=checkpoints)
def test_checkpoint_record(record: PhaseCheckpoint) -> None:
    CHECKPOINT.check_record(record)
    assert CHECKPOINT.parse(CHECKPOINT.render(record)) == record
    assert _through_a_file(CHECKPOINT, record) == record


@PROPERTY
@given(record=agent_outputs)
def test_agent_output_record(record: AgentOutput) -> None:
    AGENT_OUTPUT.check_record(record)
    assert AGENT_OUTPUT.parse(AGENT_OUTPUT.render(record)) == record
    assert _through_a_file(AGENT_OUTPUT, record) == record


@PROPERTY
@given(record=feedbacks)
def test_feedback_record(record: UserFeedback) -> None:
    FEEDBACK.check_record(record)
    assert FEEDBACK.parse(FEEDBACK.render(record)) == record
    assert _through_a_file(FEEDBACK, record) == record


@PROPERTY
@given(record=manifests)
def test_manifest_record(record: SessionManifest) -> None:
    MANIFEST.check_record(record)
    assert MANIFEST.parse(MANIFEST.render(record)) == record
    assert _through_a_file(MANIFEST, record) == record


@PROPERTY
@given(record=st.one_of(checkpoints, agent_outputs, feedbacks, manifests))
def test_render_is_canonical(record: Any) -> None:
    """Rendering a parsed record gives the same text: one canonical spelling, LF, one final LF."""
    kind = {
        PhaseCheckpoint: CHECKPOINT,
        AgentOutput: AGENT_OUTPUT,
        UserFeedback: FEEDBACK,
        SessionManifest: MANIFEST,
    }[type(record)]
    text = kind.render(record)
    assert kind.render(kind.parse(text)) == text
    assert text.endswith("\n")
