"""The kinds' canonical readers (``DocumentFormat._canonical``) are only shortcuts.

A text in exactly the shape ``render`` writes may be read by one compiled pattern instead of
the general reader. That is allowed only where it changes nothing: whenever the canonical
reader gives a record, the general reader (``fast=False``) gives the same record and no
issue; on every other text the canonical reader gives None and the general reader's record
and issues (file, line, field, message) are what ``read`` returns. Checked on rendered
records of generated values (plain ones, which the pattern takes, and any others), on those
texts edited the ways people and tools edit files (a character changed, inserted or
removed, a line removed, doubled, swapped, indented, a CR added), and on the corpora.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from history_order import reference_order
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from property_tiers import property_settings
from workcount import WorkCounters

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.format.layout import FORMAT_VERSION
from haytham.records import (
    FEEDBACK_ACTIONS,
    PHASE_STATES,
    PHASE_STATUSES,
    RUN_STYLES,
    SESSION_STATUSES,
    AgentOutput,
    AgentRun,
    CurrentPhase,
    HistoryEntry,
    PhaseCheckpoint,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
    UserFeedback,
)
from haytham.store import history

TESTS = Path(__file__).resolve().parent
CORPORA = [TESTS / "golden", TESTS / "data" / "compat", TESTS / "handedits", TESTS.parent / "projects"]
PROPERTY = property_settings(300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PATH = Path("doc.md")


def assert_same(kind: DocumentFormat[Any], text: str) -> bool:
    """``read`` gives what the general reader gives; return whether the canonical reader
    took the text (it then must be a record with no issue)."""
    taken = kind._canonical(text)
    slow = kind.read(text, PATH, fast=False)
    assert repr(kind.read(text, PATH)) == repr(slow)
    if taken is not None:
        assert slow == (taken, []), text
    return taken is not None


# ------------------------------------------------------------------ values

plain_words = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 _.,()/'+=?%;:@$!&-]{0,20}", fullmatch=True)
"""Values mostly in the plainest spelling (the canonical pattern takes most of them)."""
any_text = st.text(max_size=20)
texts = plain_words | any_text | st.sampled_from(["", "-", " a", "a ", '"q"', "a - b", "é", "x#", "`x`"])
blocks = st.text(max_size=60) | st.lists(
    st.sampled_from(["", "```", "````", "~~~", "## Feedback", "# Title", "- a: b", "x\ry", "\t", "<<<<<<< x"])
    | plain_words,
    max_size=8,
).map("\n".join)
ids = st.from_regex(r"[0-9a-f]{12}", fullmatch=True)
numbers = st.integers(1, 10**12) | st.sampled_from([1, 2, 7, 10**12 - 1])
timestamps = st.from_regex(
    r"20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?Z", fullmatch=True
)


counts = st.none() | st.integers(0, 10**12) | st.sampled_from([0, 1, 1500])
amounts = st.none() | st.floats(0, 10**12, allow_nan=False) | st.sampled_from([0.0, 1.5, 0.01, 10**12 - 0.01])
contents = blocks | st.sampled_from(
    ["", "\n", "a\n\n\n", "a\r\nb\r\n", "## Output\nx", "x\n## Error Details\n- Error Type: E"]
)
agent_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True) | st.sampled_from(
    ["a b", "-x"]
)
tools = st.lists(plain_words | st.sampled_from(["none", "a,b", "[x]", "web.search", "x:y"]), max_size=3)


@st.composite
def agent_outputs(draw: st.DrawFn) -> AgentOutput:
    failed = draw(st.booleans()) and draw(st.booleans())
    return AgentOutput(
        agent_name=draw(agent_names),
        phase_number=draw(numbers),
        phase_name=draw(texts),
        executed=draw(st.none() | timestamps),
        duration=draw(amounts),
        status="failed" if failed else draw(st.sampled_from(PHASE_STATUSES)),
        model=draw(st.none() | texts),
        input_tokens=draw(counts),
        output_tokens=draw(counts),
        tools_used=tuple(draw(tools)),
        content=draw(contents),
        error_type=draw(st.none() | texts) if failed else None,
        error_message=draw(st.none() | texts) if failed else None,
        stack_trace=draw(st.none() | blocks) if failed else None,
        cost=draw(amounts),
    )


comment_texts = (
    st.lists(plain_words, min_size=1, max_size=4).map("\n".join)
    | texts
    | blocks
    | st.sampled_from(["No comments provided", "a\n\nb", "## Action Taken", "- Change 1: x"])
)


@st.composite
def reviews(draw: st.DrawFn) -> UserFeedback:
    return UserFeedback(
        phase_name=draw(texts),
        reviewed=draw(st.booleans()),
        approved=draw(st.booleans()),
        timestamp=draw(st.none() | timestamps),
        comments=draw(comment_texts),
        requested_changes=tuple(draw(st.lists(texts | comment_texts, max_size=3))),
        action=draw(st.sampled_from(FEEDBACK_ACTIONS)),
        retry_count=draw(st.integers(0, 10**12) | st.sampled_from([0, 1, 2])),
    )


digests = st.from_regex(r"[0-9a-f]{16}", fullmatch=True)
optional_names = st.none() | texts | st.sampled_from(["None", "none", "-", ""])


@st.composite
def agent_runs(draw: st.DrawFn) -> AgentRun:
    name = draw(agent_names | st.sampled_from(["analyst", "critic"]))
    return AgentRun(
        agent_name=name,
        status=draw(st.sampled_from(PHASE_STATUSES)),
        output_file=draw(st.sampled_from([f"{name}.md", "x.md", "a b.md", "", "[x].md"])),
        duration=draw(amounts),
        tokens=draw(counts),
        cost=draw(amounts),
    )


@st.composite
def checkpoints(draw: st.DrawFn) -> PhaseCheckpoint:
    return PhaseCheckpoint(
        phase_number=draw(numbers),
        phase_name=draw(texts),
        status=draw(st.sampled_from(PHASE_STATUSES)),
        started=draw(st.none() | timestamps),
        completed=draw(st.none() | timestamps),
        duration=draw(amounts),
        retry_count=draw(st.integers(0, 10**12) | st.sampled_from([0, 1])),
        execution_mode=draw(st.sampled_from(RUN_STYLES)),
        agents=tuple(draw(st.lists(agent_runs(), max_size=4))),
        previous_phase=draw(optional_names),
        next_phase=draw(st.none() | numbers),
        next_phase_name=draw(optional_names),
        total_tokens=draw(counts),
        input_tokens=draw(counts),
        output_tokens=draw(counts),
        cost=draw(amounts),
        errors=tuple(draw(st.lists(texts, max_size=2))),
        required_context=draw(st.sampled_from(["[]", "[a, b]", "ctx"]) | texts),
        user_parameters=draw(st.sampled_from(["{}", '{"a": 1}', "p"]) | texts),
        user_feedback_file=draw(st.sampled_from(["user_feedback.md", "-", "x y.md"]) | texts),
        outputs_digest=draw(st.none() | digests),
        built_from=tuple(draw(st.lists(st.tuples(st.integers(1, 30), digests | texts), max_size=3))),
    )


@st.composite
def manifests(draw: st.DrawFn) -> SessionManifest:
    rows = draw(
        st.lists(
            st.builds(
                PhaseRow,
                numbers,
                texts | st.sampled_from(["a|b", "Phase 1"]),
                st.sampled_from((*PHASE_STATES, *PHASE_STATUSES)),
                st.none() | timestamps,
                st.none() | timestamps,
                amounts,
            ),
            max_size=4,
        )
    )
    return SessionManifest(
        session_id=draw(agent_names),
        project_id=draw(agent_names),
        user_id=draw(texts.filter(bool)),
        workflow_type=draw(texts.filter(bool)),
        execution_mode=draw(st.sampled_from(["full", "mvp"]) | texts.filter(bool)),
        created=draw(timestamps),
        last_updated=draw(timestamps),
        status=draw(st.sampled_from(SESSION_STATUSES)),
        phases=tuple(rows),
        current=CurrentPhase(
            draw(st.integers(0, 10**12)),
            draw(texts),
            draw(st.sampled_from(["pending"]) | texts),
            draw(st.booleans()),
        ),
        metrics=SessionMetrics(
            draw(st.floats(0, 10**12, allow_nan=False)),
            draw(st.integers(0, 10**12)),
            draw(st.floats(0, 10**12)),
        ),
        workflow_fingerprint=draw(st.none() | st.from_regex(r"sha256:[0-9a-f]{16}", fullmatch=True)),
        history_head=draw(st.none() | ids),
        forked_from=draw(st.none() | st.sampled_from(["s-1 at phase 2", "x at phase y"])),
    )


@st.composite
def history_entries(draw: st.DrawFn) -> HistoryEntry:
    review = draw(st.booleans())
    return HistoryEntry(
        entry_id=draw(ids),
        parent=draw(st.none() | ids),
        phase_number=draw(numbers),
        phase_name=draw(texts),
        attempt=draw(numbers),
        status=draw(st.sampled_from(PHASE_STATUSES)),
        timestamp=draw(timestamps),
        name=draw(st.none() | texts),
        reason=draw(st.none() | texts),
        checkpoint_text=draw(blocks),
        kind="review" if review else "checkpoint",
        feedback_text=draw(blocks) if review or draw(st.booleans()) else None,
    )


# ------------------------------------------------------------------ edits


@st.composite
def edited(draw: st.DrawFn, text: str) -> str:
    """``text`` with one to three edits of the kinds hand edits and tools make."""
    for _ in range(draw(st.integers(1, 3))):
        lines = text.split("\n")
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        position = draw(st.integers(0, len(text)))
        edit = draw(st.integers(0, 10))
        piece = draw(
            st.sampled_from(["", " ", "\t", "\r", "-", "#", "`", ":", "*", "x", "1", "\n", "\ufeff", "é"])
        )
        if edit == 0:
            text = text[:position] + piece + text[position:]
        elif edit == 1:
            text = text[:position] + text[position + 1 :]
        elif edit == 2:
            text = text[:position] + piece + text[position + 1 :]
        elif edit == 3:
            del lines[at]
            text = "\n".join(lines)
        elif edit == 4:
            lines.insert(at, lines[at])
            text = "\n".join(lines)
        elif edit == 5 and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
            text = "\n".join(lines)
        elif edit == 6:
            lines[at] = "  " + lines[at]
            text = "\n".join(lines)
        elif edit == 7:
            lines[at] = lines[at].upper()
            text = "\n".join(lines)
        elif edit == 8:
            text = text.replace("\n", "\r\n")
        elif edit == 9:
            lines[at] = lines[at] + " "
            text = "\n".join(lines)
        else:
            lines[at] = lines[at].replace(": ", ":", 1).replace("- ", "* ", 1)
            text = "\n".join(lines)
    return text


# ------------------------------------------------------------------ history entries


@PROPERTY
@given(entry=history_entries())
def test_rendered_history_entries(entry: HistoryEntry) -> None:
    text = HISTORY_ENTRY.render(entry)
    assert_same(HISTORY_ENTRY, text)
    if HISTORY_ENTRY._canonical(text) is not None:
        assert HISTORY_ENTRY._canonical(text) == entry


@PROPERTY
@given(data=st.data())
def test_edited_history_entries(data: st.DataObject) -> None:
    entry = data.draw(history_entries())
    text = data.draw(edited(HISTORY_ENTRY.render(entry)))
    assert_same(HISTORY_ENTRY, text)


def test_plain_history_entries_take_the_canonical_path(counters: WorkCounters) -> None:
    made = history.make_entry("0123456789ab", 3, "Build it", 2, "completed", "2024-01-02T03:04:05Z", "cp\n")
    review = dataclasses.replace(made, kind="review", feedback_text="ok", name="n 1", reason="why: this")
    for entry in (made, review):
        text = HISTORY_ENTRY.render(entry)
        assert HISTORY_ENTRY._canonical(text) == entry
        assert vars(HISTORY_ENTRY._canonical(text)) == vars(entry)  # made without __init__: same fields
        counters.reset()
        assert HISTORY_ENTRY.read(text, PATH) == (entry, [])
        assert counters.canonical == counters.parsed == 1


@pytest.mark.parametrize(
    "change",
    [
        ("- Format: 1", f"- Format: {FORMAT_VERSION + 1}"),  # a newer version is an error
        ("- Attempt: 2", "- Attempt: 0"),  # below the schema's minimum
        ("- Status: completed", "- Status: done"),
        ("- Entry: ", "- Entry:  "),
        ("## Checkpoint\n```verbatim", "## Checkpoint\n```verbatim crlf"),
        ("cp\n```", "cp\n````"),  # a longer closing fence
        ("# History Entry: ", "# History  Entry: "),
        ("\n- Name: -", "\n- Name: -\n- Name: again"),  # a label twice
        ("## Metadata", "## Metadata\n<<<<<<< HEAD"),
    ],
)
def test_near_canonical_history_entries_go_to_the_general_reader(change: tuple[str, str]) -> None:
    entry = history.make_entry("0123456789ab", 3, "Build it", 2, "completed", "2024-01-02T03:04:05Z", "cp")
    text = HISTORY_ENTRY.render(entry)
    assert change[0] in text
    changed = text.replace(change[0], change[1], 1)
    assert HISTORY_ENTRY._canonical(changed) is None
    assert_same(HISTORY_ENTRY, changed)


@PROPERTY
@given(data=st.data())
def test_a_history_edited_out_of_one_chain_is_ordered_as_specified(data: st.DataObject) -> None:
    """``in_order`` (a chain check, then Kahn's rounds) orders a chain, and a chain edited into
    forks, cycles, duplicates and clock skew, as the quadratic specification does, whatever
    the order the entries were read in."""
    count = data.draw(st.integers(0, 12))
    entries: list[HistoryEntry] = []
    parent = data.draw(st.none() | ids)
    for number in range(count):
        stamp = f"2024-01-01T00:00:{data.draw(st.integers(0, 59)):02d}Z"
        entry = history.make_entry(parent, 1, "P", 1, "completed", stamp, str(number))
        entries.append(entry)
        parent = entry.entry_id
    for _ in range(data.draw(st.integers(0, 2))):
        if entries:
            at = data.draw(st.integers(0, len(entries) - 1))
            other = data.draw(st.sampled_from([None, *(e.entry_id for e in entries)]))
            entries[at] = dataclasses.replace(entries[at], parent=other)
    if entries and data.draw(st.booleans()):
        entries.append(data.draw(st.sampled_from(entries)))
    shuffled = data.draw(st.permutations(entries))
    assert [id(e) for e in history.in_order(shuffled)] == [id(e) for e in reference_order(entries)]


def test_a_saved_history_is_one_chain() -> None:
    entries: list[HistoryEntry] = []
    parent = None
    for number in range(50):
        stamp = f"2024-01-01T00:{number // 60:02d}:{number % 60:02d}Z"
        entries.append(history.make_entry(parent, 1, "P", 1, "completed", stamp, str(number)))
        parent = entries[-1].entry_id
    known = {e.entry_id for e in entries}
    assert history._is_chain(entries, known)
    assert history.in_order(reversed(entries)) == entries == history._rounds(entries, known)


def test_an_entry_id_stays_what_earlier_versions_made_it() -> None:
    """Entry ids are in every history file and its parent links: the hash of the content
    spelt by ``json.dumps`` must not change (ids made before it replaced a hand-written
    spelling, in 2026-12)."""
    name = 'Build it — ünïcode "q"'
    made = history.make_entry("0123456789ab", 3, name, 2, "completed", "2024-01-02T03:04:05Z", "cp\n")
    assert made.entry_id == "92314d1ac704"
    reviewed = history.make_entry(
        None, 1, "P", 1, "completed", "2024-01-02T03:04:05Z", "cp", feedback_text="ok"
    )
    assert reviewed.entry_id == "15d325385aac"


def test_a_history_read_by_the_canonical_path_is_the_one_the_reader_gives(
    tmp_path: Path, counters: WorkCounters
) -> None:
    folder = tmp_path / "s" / history.HISTORY_DIR
    folder.mkdir(parents=True)
    plain = history.make_entry(None, 1, "Idea", 1, "completed", "2024-01-02T03:04:05Z", "cp")
    edited_by_hand = history.make_entry(plain.entry_id, 2, "Build", 1, "failed", "2024-01-02T03:04:06Z", "x")
    (folder / history.file_name(plain)).write_text(HISTORY_ENTRY.render(plain), "utf-8")
    hand = HISTORY_ENTRY.render(edited_by_hand).replace("- Attempt: 1", "* attempt:   1")
    (folder / history.file_name(edited_by_hand)).write_text(hand, "utf-8")
    (folder / "20240101T000000Z_000000000000.md").write_bytes(b"# History Entry: \xff\n")
    (folder / "20240101T000001Z_000000000001.md").mkdir()
    counters.reset()
    entries, issues = history.read_entries(tmp_path / "s")
    assert entries == [plain, edited_by_hand]
    assert counters.canonical == 1
    assert [(i.path.name if i.path else None, i.line) for i in issues] == [
        ("20240101T000000Z_000000000000.md", 1),
        ("20240101T000001Z_000000000001.md", None),
    ]


@pytest.mark.parametrize(
    "path",
    sorted(p for root in CORPORA for p in root.rglob("*.md") if p.parent.name == "history"),
    ids=lambda p: str(p.relative_to(TESTS.parent)),
)
def test_corpus_history_entries(path: Path) -> None:
    assert_same(HISTORY_ENTRY, path.read_bytes().decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ agent outputs


@PROPERTY
@given(output=agent_outputs())
def test_rendered_agent_outputs(output: AgentOutput) -> None:
    text = AGENT_OUTPUT.render(output)
    assert_same(AGENT_OUTPUT, text)


@PROPERTY
@given(data=st.data())
def test_edited_agent_outputs(data: st.DataObject) -> None:
    output = data.draw(agent_outputs())
    text = data.draw(edited(AGENT_OUTPUT.render(output)))
    assert_same(AGENT_OUTPUT, text)


def test_plain_agent_outputs_take_the_canonical_path() -> None:
    output = AgentOutput(
        "analyst",
        1,
        "Concept",
        "2024-01-02T03:04:05Z",
        1.5,
        "completed",
        "m",
        10,
        20,
        ("web", "x.y"),
        "# Out\n\n## Output\n```\n",
        cost=0.01,
    )
    for content in (output.content, "", "a\r\nb\r\n", "a\n\n\n"):
        changed = dataclasses.replace(output, content=content)
        assert AGENT_OUTPUT._canonical(AGENT_OUTPUT.render(changed)) == changed
        assert_same(AGENT_OUTPUT, AGENT_OUTPUT.render(changed))


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for root in CORPORA
        for p in root.rglob("*.md")
        if p.parent.name.startswith("phase_") and p.name not in ("checkpoint.md", "user_feedback.md")
    ),
    ids=lambda p: str(p.relative_to(TESTS.parent)),
)
def test_corpus_agent_outputs(path: Path) -> None:
    assert_same(AGENT_OUTPUT, path.read_bytes().decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ reviews


@PROPERTY
@given(review=reviews())
def test_rendered_reviews(review: UserFeedback) -> None:
    assert_same(FEEDBACK, FEEDBACK.render(review))


@PROPERTY
@given(data=st.data())
def test_edited_reviews(data: st.DataObject) -> None:
    review = data.draw(reviews())
    assert_same(FEEDBACK, data.draw(edited(FEEDBACK.render(review))))


def test_plain_reviews_take_the_canonical_path() -> None:
    review = UserFeedback(
        "Concept", True, False, "2024-01-02T03:04:05Z", "Fine.\nBut: more", ("a", "b c"), "retry", 1
    )
    approved = UserFeedback("Concept", True, True, None, "", (), "approved", 0)
    for record in (review, approved):
        text = FEEDBACK.render(record)
        assert FEEDBACK._canonical(text) == record
        assert_same(FEEDBACK, text)


@pytest.mark.parametrize(
    "change",
    [
        ("- Reviewed: true", "- Reviewed: false"),  # approved but not reviewed: a warning
        ("- Action: approved", "- Action: pending"),  # pending though reviewed: settled
        ("- No changes requested", "- Change 1: x"),  # approved with changes: a warning
        ("- Action: approved", "- Action: Approved"),
    ],
)
def test_reviews_the_reader_warns_about_or_settles_go_to_it(change: tuple[str, str]) -> None:
    text = FEEDBACK.render(UserFeedback("Concept", True, True, None, "", (), "approved", 0))
    changed = text.replace(change[0], change[1], 1)
    assert changed != text
    assert FEEDBACK._canonical(changed) is None
    assert_same(FEEDBACK, changed)


@pytest.mark.parametrize(
    "path",
    sorted(p for root in CORPORA for p in root.rglob("user_feedback*.md")),
    ids=lambda p: str(p.relative_to(TESTS.parent)),
)
def test_corpus_reviews(path: Path) -> None:
    assert_same(FEEDBACK, path.read_bytes().decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ checkpoints


@PROPERTY
@given(checkpoint=checkpoints())
def test_rendered_checkpoints(checkpoint: PhaseCheckpoint) -> None:
    assert_same(CHECKPOINT, CHECKPOINT.render(checkpoint))


@PROPERTY
@given(data=st.data())
def test_edited_checkpoints(data: st.DataObject) -> None:
    checkpoint = data.draw(checkpoints())
    assert_same(CHECKPOINT, data.draw(edited(CHECKPOINT.render(checkpoint))))


def test_plain_checkpoints_take_the_canonical_path() -> None:
    runs = (AgentRun("analyst", "completed", "analyst.md", 1.5, 10, 0.01), AgentRun("b.2", "failed", "x.md"))
    checkpoint = PhaseCheckpoint(
        2,
        "Build",
        "completed",
        "2024-01-02T03:04:05Z",
        None,
        3.0,
        1,
        "parallel",
        runs,
        "Concept",
        3,
        "Ship",
        100,
        None,
        7,
        0.25,
        ("one", "two: three"),
        outputs_digest="0123456789abcdef",
        built_from=((1, "ab"),),
    )
    for record in (checkpoint, dataclasses.replace(checkpoint, agents=(), errors=(), built_from=())):
        text = CHECKPOINT.render(record)
        assert CHECKPOINT._canonical(text) == record
        assert_same(CHECKPOINT, text)


@pytest.mark.parametrize(
    "change",
    [
        ("- analyst: completed\n", "- analyst: completed\n- analyst: failed\n"),  # named twice
        ("- Phase 1: ab\n", "- Phase 1: ab\n- Phase 1: cd\n"),
        ("- Phase Name: Build\n", "- Phase Name: Other\n"),
        ("- Status: completed", "- Status: done"),
    ],
)
def test_near_canonical_checkpoints_go_to_the_general_reader(change: tuple[str, str]) -> None:
    runs = (AgentRun("analyst", "completed", "analyst.md"),)
    checkpoint = PhaseCheckpoint(
        2,
        "Build",
        "completed",
        None,
        None,
        None,
        0,
        "single",
        runs,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        built_from=((1, "ab"),),
    )
    text = CHECKPOINT.render(checkpoint)
    assert change[0] in text
    changed = text.replace(change[0], change[1], 1)
    assert CHECKPOINT._canonical(changed) is None
    assert_same(CHECKPOINT, changed)


@pytest.mark.parametrize(
    "path",
    sorted(p for root in CORPORA for p in root.rglob("checkpoint*.md")),
    ids=lambda p: str(p.relative_to(TESTS.parent)),
)
def test_corpus_checkpoints(path: Path) -> None:
    assert_same(CHECKPOINT, path.read_bytes().decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ manifests


@PROPERTY
@given(manifest=manifests())
def test_rendered_manifests(manifest: SessionManifest) -> None:
    assert_same(MANIFEST, MANIFEST.render(manifest))


@PROPERTY
@given(data=st.data())
def test_edited_manifests(data: st.DataObject) -> None:
    manifest = data.draw(manifests())
    assert_same(MANIFEST, data.draw(edited(MANIFEST.render(manifest))))


def test_plain_manifests_take_the_canonical_path() -> None:
    rows = (
        PhaseRow(1, "Idea", "approved", "2024-01-02T03:04:05Z", None, 1.5),
        PhaseRow(2, "Build", "pending"),
    )
    manifest = SessionManifest(
        "s-1",
        "p",
        "ada",
        "idea",
        "full",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:06Z",
        "in_progress",
        rows,
        CurrentPhase(2, "Build", "pending", True),
        SessionMetrics(1.5, 10, 0.5),
        "sha256:0123456789abcdef",
        "0123456789ab",
        "s-0 at phase 2",
    )
    for record in (
        manifest,
        dataclasses.replace(manifest, phases=(), workflow_fingerprint=None, forked_from=None),
    ):
        text = MANIFEST.render(record)
        assert MANIFEST._canonical(text) == record
        assert_same(MANIFEST, text)


@pytest.mark.parametrize(
    "path",
    sorted(p for root in CORPORA for p in root.rglob("session_manifest*.md")),
    ids=lambda p: str(p.relative_to(TESTS.parent)),
)
def test_corpus_manifests(path: Path) -> None:
    assert_same(MANIFEST, path.read_bytes().decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ what haytham writes


def test_every_file_haytham_writes_takes_the_canonical_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """A session saved through the API is validated without the general reader: every file
    it wrote is in its kind's canonical shape (a change to ``render`` that leaves a pattern
    behind fails here, not only in a benchmark)."""
    from haytham.store.manager import CheckpointManager

    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    manager = CheckpointManager(tmp_path)
    manager.create_session("acme", "s-1", "ada")
    for phase in (1, 2):
        manager.save_agent_output("acme", "s-1", phase, "writer", f"phase {phase} text\n")
        manager.save_checkpoint("acme", "s-1", phase, "completed", [{"agent_name": "writer"}])
    manager.save_user_feedback("acme", "s-1", 1, True, True, "Fine.")
    counters.reset()
    assert CheckpointManager(tmp_path).validate_paths() == []
    assert counters.parsed > 0
    assert counters.canonical == counters.parsed
    counters.reset()
    assert len(CheckpointManager(tmp_path).history("acme", "s-1")) > 2
    assert counters.canonical == counters.parsed > 2
