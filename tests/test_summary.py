"""The listing's fast manifest reader (``haytham.format.summary``) is the full reader, faster.

Whenever ``read_summary`` accepts a text, the full reader (``MANIFEST.read``: section parser,
fields, phase table, version, schema) must find no issue at all in it and give the same
summary. Checked on records haytham renders (many values it writes bare, some it quotes,
some the schema refuses) and on those texts hand-edited and mutated a character or a line
at a time. Then the same for whole listings: with the fast reader, without it (everything
through the full reader), with and without the index, ``list_sessions`` and ``haytham list``
give the same answer.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_tiers import property_settings

from haytham.cli import main as cli_main
from haytham.format import MANIFEST
from haytham.format import summary as fast
from haytham.format import values as v
from haytham.format.layout import MANIFEST_FILE
from haytham.records import (
    PHASE_STATES,
    PHASE_STATUSES,
    SESSION_STATUSES,
    CurrentPhase,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
)
from haytham.store import index as _index
from haytham.store import scan
from haytham.store.clock import format_timestamp
from haytham.store.manager import CheckpointManager

PROPERTY = property_settings(150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def agrees(text: str) -> bool:
    """The property: an accepted text is read by the full reader with no issue and the same
    summary. Returns whether the fast reader accepted it."""
    found = fast.read_summary(text)
    if found is None:
        return False
    record, issues = MANIFEST.read(text)
    assert issues == [], (text, issues)
    assert record is not None
    assert fast.summary_of(record) == found
    assert MANIFEST.read(text, fast=False)[1] == []  # mistune agrees as well
    return True


# ------------------------------------------------------------------ values

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
nasty = st.sampled_from(
    ["-", "- x", '"x"', " x", "x ", "", "a|b", "a\\b", "\ufeff", "x\u00a0", "\u2028", "a\tb", "#", "`x`"]
)
texts = st.one_of(words, nasty, st.text(max_size=12))
ids = st.one_of(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True), texts)
timestamps = st.one_of(
    st.datetimes(timezones=st.just(timezone.utc)).map(format_timestamp),
    st.sampled_from(["2024-01-01T00:00:00Z", "2024-01-01 00:00:00", "yesterday", "-", ""]),
)
optional_timestamps = st.none() | timestamps
amounts = st.one_of(
    st.integers(0, 10**9).map(lambda n: n / 10),
    st.sampled_from([0.0, 10.0**12, 10.0**12 - 0.05, 2e12, 1e300, -0.0, -1.0]),
)
whole = st.one_of(st.integers(0, 10**6), st.sampled_from([10**12 - 1, 10**12, 10**13, -1]))

manifests = st.builds(
    SessionManifest,
    session_id=ids,
    project_id=ids,
    user_id=ids,
    workflow_type=texts,
    execution_mode=texts,
    created=timestamps,
    last_updated=timestamps,
    status=st.sampled_from([*SESSION_STATUSES, "maybe", ""]),
    phases=st.lists(
        st.builds(
            PhaseRow,
            number=whole,
            name=texts,
            status=st.sampled_from([*PHASE_STATES, *PHASE_STATUSES, "done", ""]),
            started=optional_timestamps,
            completed=optional_timestamps,
            duration=st.none() | amounts,
        ),
        max_size=5,
    ).map(tuple),
    current=st.builds(CurrentPhase, number=whole, name=texts, status=texts, can_resume=st.booleans()),
    metrics=st.builds(SessionMetrics, total_duration=amounts, total_tokens=whole, total_cost=amounts),
    workflow_fingerprint=st.none() | st.sampled_from(["sha256:0123456789abcdef", "sha256:XYZ", "x"]),
    history_head=st.none() | st.sampled_from(["0123456789ab", "0123", "-"]),
    forked_from=st.none() | st.sampled_from(["s1 at phase 2", "s1", " at phase 1"]),
)


@PROPERTY
@given(record=manifests)
def test_an_accepted_rendering_reads_the_same_with_no_issue(record: SessionManifest) -> None:
    agrees(MANIFEST.render(record))


plain = st.from_regex(v.PLAIN_TEXT, fullmatch=True).filter(lambda text: len(text) <= 40)
"""Free text in the plainest spelling the canonical pattern takes (``values.PLAIN_TEXT``)."""
valid_times = st.datetimes(min_value=datetime(1000, 1, 1), timezones=st.just(timezone.utc)).map(
    format_timestamp
)
valid_manifests = st.builds(
    SessionManifest,
    session_id=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True),
    project_id=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,12}", fullmatch=True),
    user_id=plain,
    workflow_type=plain,
    execution_mode=plain,
    created=valid_times,
    last_updated=valid_times,
    status=st.sampled_from(SESSION_STATUSES),
    phases=st.lists(
        st.builds(
            PhaseRow,
            number=st.integers(1, 10**6),
            name=plain.filter(lambda name: "|" not in name and "\\" not in name),
            status=st.sampled_from([*PHASE_STATES, *PHASE_STATUSES]),
            started=st.none() | valid_times,
            completed=st.none() | valid_times,
            duration=st.none() | st.integers(0, 10**9).map(lambda n: n / 10),
        ),
        max_size=7,
    ).map(tuple),
    current=st.builds(
        CurrentPhase, number=st.integers(0, 10**6), name=plain, status=plain, can_resume=st.booleans()
    ),
    metrics=st.builds(
        SessionMetrics,
        total_duration=st.integers(0, 10**9).map(lambda n: n / 10),
        total_tokens=st.integers(0, 10**11),
        total_cost=st.integers(0, 10**10).map(lambda n: n / 10_000),
    ),
    workflow_fingerprint=st.none() | st.just("sha256:0123456789abcdef"),
    history_head=st.none() | st.just("0123456789ab"),
    forked_from=st.none() | st.just("s-1 at phase 2"),
)


@PROPERTY
@given(record=valid_manifests)
def test_a_rendering_of_bare_values_is_accepted(record: SessionManifest) -> None:
    """The fast reader is not vacuous: what haytham writes with bare values, it takes."""
    assert agrees(MANIFEST.render(record))


CANONICAL = MANIFEST.render(
    SessionManifest(
        session_id="s1",
        project_id="acme",
        user_id="ada",
        workflow_type="idea_validation",
        execution_mode="mvp",
        created="2024-11-24T10:00:00Z",
        last_updated="2024-11-24T10:05:00.123456Z",
        status="awaiting_review",
        phases=(
            PhaseRow(
                1, "Concept Expansion", "approved", "2024-11-24T10:00:00Z", "2024-11-24T10:01:00Z", 60.0
            ),
            PhaseRow(2, "Market Research", "awaiting_review", "2024-11-24T10:02:00Z", None, None),
            PhaseRow(3, "Niche Selection", "pending", None, None, None),
        ),
        current=CurrentPhase(2, "Market Research", "awaiting_review", True),
        metrics=SessionMetrics(61.5, 1234, 0.0123),
        workflow_fingerprint="sha256:0123456789abcdef",
        history_head="0123456789ab",
    )
)
MUTATION_CHARS = [
    " ",
    "\t",
    "|",
    "\\",
    '"',
    "-",
    "#",
    ":",
    "0",
    "9",
    "x",
    "\n",
    "\r",
    "\ufeff",
    "\u00a0",
    "`",
    "*",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """CANONICAL with one to three edits: a character replaced, inserted or deleted, a line
    deleted, repeated or moved."""
    text = CANONICAL
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "drop line", "repeat line", "move line"]))
        if kind in ("replace", "insert", "delete"):
            at = draw(st.integers(0, len(text) - 1))
            char = draw(st.sampled_from(MUTATION_CHARS))
            text = {
                "replace": text[:at] + char + text[at + 1 :],
                "insert": text[:at] + char + text[at:],
                "delete": text[:at] + text[at + 1 :],
            }[kind]
            continue
        lines = text.split("\n")
        at = draw(st.integers(0, len(lines) - 1))
        line = lines.pop(at)
        if kind == "repeat line":
            lines[at:at] = [line, line]
        elif kind == "move line":
            lines.insert(draw(st.integers(0, len(lines))), line)
        text = "\n".join(lines)
    return text


def test_the_canonical_text_is_accepted() -> None:
    assert agrees(CANONICAL)
    assert fast.read_summary(CANONICAL) == fast.ManifestSummary(
        "acme", "s1", "ada", "idea_validation", "mvp", "awaiting_review", 2, "Market Research",
        "2024-11-24T10:00:00Z", "2024-11-24T10:05:00.123456Z", 1234, 0.0123, "awaiting_review",
    )  # fmt: skip


@PROPERTY
@given(text=mutated())
def test_an_accepted_mutation_reads_the_same_with_no_issue(text: str) -> None:
    agrees(text)


HAND_EDITS = [
    ("- User ID: ada", "- user id: ada"),
    ("- User ID: ada", "- User ID:  ada"),
    ("- User ID: ada", "- User ID: ada "),
    ("- User ID: ada", '- User ID: "ada"'),
    ("- User ID: ada", "* User ID: ada"),
    ("- User ID: ada", "- **User ID:** ada"),
    ("- Status: awaiting_review", "- Status: maybe"),
    ("- Format: 1", "- Format: 2"),
    ("- Format: 1\n", ""),
    ("| 3 | Niche Selection | pending | - | - | - |\n", "| 3 | Niche Selection | pending | - | - |\n"),
    ("| 3 | Niche Selection | pending |", "| 0 | Niche Selection | pending |"),
    ("| 3 | Niche Selection | pending |", "| 3 | Niche \\| Selection | pending |"),
    ("| 3 | Niche Selection | pending |", "| 3 | Niche Selection | done |"),
    ("- Total Tokens: 1234", "- Total Tokens: 1,234"),
    ("- Total Cost: $0.0123", "- Total Cost: 0.0123"),
    ("- Total Cost: $0.0123", "- Total Cost: $1000000000000.0000"),
    ("## Metrics", "## Notes\n\nmine\n\n## Metrics"),
    ("\n## Metrics", "\n## Metric"),
    ("- Can Resume: true", "- Can Resume: yes"),
    ("- Created: 2024-11-24T10:00:00Z", "- Created: 2024-11-24 10:00"),
    ("# Session Manifest", "# Session manifest"),
    ("- Session ID: s1", "- Session ID: ../s1"),
]


@pytest.mark.parametrize(("old", "new"), HAND_EDITS)
def test_a_hand_edit_goes_to_the_full_reader(old: str, new: str) -> None:
    assert old in CANONICAL
    edited = CANONICAL.replace(old, new, 1)
    assert fast.read_summary(edited) is None
    assert fast.read_summary(edited + "\n") is None and fast.read_summary(edited.rstrip("\n")) is None


def test_crlf_and_a_bom_are_decoded_first() -> None:
    from haytham.format.reader import decode

    data = ("\ufeff" + CANONICAL.replace("\n", "\r\n")).encode("utf-8")
    assert fast.read_summary(decode(data, None)) == fast.read_summary(CANONICAL)


# ------------------------------------------------------------------ whole listings


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """57 manifests: 56 sessions in two projects (past ``INDEX_MIN_SESSIONS``) and one in the
    base directory's own ``sessions`` folder, many updated at the same moment; some
    hand-edited, two that cannot be read, two that name another session or project."""
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    manager.create_session("acme", "s00", "ada")
    manager.save_agent_output("acme", "s00", 1, "writer", "text\n")
    manager.save_checkpoint("acme", "s00", 1, "completed", [{"agent_name": "writer", "tokens": 7}])
    text = manager.session_dir("acme", "s00").joinpath(MANIFEST_FILE).read_text("utf-8")
    edits = {
        3: ("- User ID: ada", "- user id:   bob"),
        4: ("- Status: in_progress", "- Status: maybe"),
        5: ("- Session ID: s05", "- Session ID: other"),
        6: ("## Metrics", "## Notes\n\nmine\n\n## Metrics"),
        7: ("- Format: 1", "- Format: 9"),
        8: ("- User ID: ada", '- User ID: "e\\u0301ve"'),
    }
    for number in range(55):
        project = "acme" if number % 3 else "beta"
        name = f"s{number:02d}"
        folder = base / project / "sessions" / name
        folder.mkdir(parents=True, exist_ok=True)
        own = text.replace("- Session ID: s00", f"- Session ID: {name}")
        own = own.replace("- Project ID: acme", f"- Project ID: {project}")
        moment = f"2024-05-0{number % 7 + 1}T00:00:00Z"  # many ties: the order needs every key
        own = re.sub(r"- Last Updated: .*", f"- Last Updated: {moment}", own)
        old, new = edits.get(number, ("", ""))
        folder.joinpath(MANIFEST_FILE).write_text(own.replace(old, new) if old else own, "utf-8")
    (base / "sessions" / "loose").mkdir(parents=True)
    (base / "sessions" / "loose" / MANIFEST_FILE).write_text(text.replace("s00", "loose"), "utf-8")
    return base


def _listing(base: Path, **filters: str) -> tuple[list[scan.SessionSummary], list[object]]:
    summaries, issues = scan.list_sessions(base, **filters)  # type: ignore[arg-type]
    for summary in summaries:  # made without __init__: the same as one made with it
        made = scan.SessionSummary(**{f.name: getattr(summary, f.name) for f in dataclasses.fields(summary)})
        assert made == summary and hash(made) == hash(summary) and repr(made) == repr(summary)
    return summaries, list(issues)


FILTERS: list[dict[str, str]] = [{}, {"project_id": "acme"}, {"user_id": "bob"}, {"status": "in_progress"}]


def test_a_listing_is_the_same_with_and_without_the_fast_reader_and_the_index(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    expected = {}
    with monkeypatch.context() as patch:
        patch.setattr(scan, "read_summary", lambda text: None)  # everything through the full reader
        for number, filters in enumerate(FILTERS):
            expected[number] = _listing(tree, **filters)
    assert {i.path.parent.name for i in expected[0][1]} == {  # type: ignore[attr-defined]
        "loose",
        "s04",
        "s05",
        "s07",
    }
    for number, filters in enumerate(FILTERS):
        assert _listing(tree, **filters) == expected[number]
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    assert _listing(tree) == expected[0]  # makes the index
    assert (tree / _index.INDEX_DIR).is_dir()
    for _ in range(2):  # the index learns what it did not know, then answers alone
        for number, filters in enumerate(FILTERS):
            assert _listing(tree, **filters) == expected[number]


def test_the_command_prints_the_same_bytes_with_and_without_the_index(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = [
        ["list"],
        ["list", "--json"],
        ["list", "--limit", "5", "--offset", "3"],
        ["list", "--project", "beta"],
    ]

    def run() -> list[tuple[str, str]]:
        outputs = []
        for command in commands:
            result = CliRunner().invoke(cli_main.cli, [*command, "--base-dir", str(tree)])
            assert result.exit_code == 0, result.output
            outputs.append((result.stdout, result.stderr))
        return outputs

    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    with monkeypatch.context() as patch:
        patch.setattr(scan, "read_summary", lambda text: None)
        expected = run()
    assert json.loads(expected[1][0])["total"] == 55  # 57 manifests, two that cannot be read
    assert run() == expected
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    assert run() == expected  # makes the index
    assert run() == expected  # from the index


def test_changes_under_a_remembered_listing_show_at_once(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    _listing(tree)
    _listing(tree)
    (tree / "beta" / "sessions" / "s00" / MANIFEST_FILE).unlink()
    edited = tree / "acme" / "sessions" / "s01" / MANIFEST_FILE
    edited.write_text(edited.read_text("utf-8").replace("- User ID: ada", "- User ID: zed"), "utf-8")
    fixed = tree / "acme" / "sessions" / "s04" / MANIFEST_FILE
    fixed.write_text(fixed.read_text("utf-8").replace("- Status: maybe", "- Status: failed"), "utf-8")
    import shutil

    shutil.copytree(tree / "acme", tree / "gamma")
    found = _listing(tree)
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    assert found == _listing(tree)
    by_path = {s.path: s for s in found[0]}
    assert by_path[edited.parent].user_id == "zed"
    # listed again, with the state its files derive (a manifest's Status is not the truth)
    assert by_path[fixed.parent].status == "in_progress"
    assert tree / "beta" / "sessions" / "s00" not in by_path
    assert tree / "gamma" / "sessions" / "s01" in by_path


def test_an_index_laid_out_by_an_older_haytham_is_rebuilt(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    expected = _listing(tree)
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    folder = tree / _index.INDEX_DIR
    folder.mkdir()
    with sqlite3.connect(folder / _index.INDEX_FILE) as connection:  # the layout of format 1
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID")
        connection.execute(
            "CREATE TABLE entries (kind TEXT, path TEXT, identity TEXT, value TEXT, PRIMARY KEY (kind, path))"
            " WITHOUT ROWID"
        )
        connection.execute("CREATE TABLE summaries (parent TEXT, name TEXT, value TEXT)")  # another layout
        connection.execute("INSERT INTO meta VALUES ('stamp', 'older')")
        connection.execute("INSERT INTO summaries VALUES ('x', 'y', 'z')")
    assert _listing(tree) == expected
    assert _listing(tree) == expected
    with sqlite3.connect(folder / _index.INDEX_FILE) as connection:
        assert connection.execute("SELECT count(*) FROM summaries").fetchone()[0] == 57  # every manifest


def test_iterating_a_remembered_listing_holds_one_row_at_a_time(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory while the rows are iterated is flat in the number of sessions: the rows come
    from the index one at a time (the old listing held every summary, about 3 KB each)."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    peaks = []
    for copies in (1, 4):
        for copy in range(1, copies):
            target = tree / f"copy{copy}"
            if not target.exists():
                import shutil

                shutil.copytree(tree / "acme", target)
        _listing(tree)
        _listing(tree)
        with scan.iter_sessions(tree) as listing:
            tracemalloc.start()
            count = sum(1 for _ in listing)
            peaks.append((count, tracemalloc.get_traced_memory()[1]))
            tracemalloc.stop()
    (small, small_peak), (large, large_peak) = peaks
    assert large > 3 * small // 2
    assert large_peak - small_peak < 20 * (large - small)  # bytes a session: far below one row


EXHAUSTIVE = settings(
    max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.slow
@EXHAUSTIVE
@given(text=st.one_of(mutated(), manifests.map(MANIFEST.render), valid_manifests.map(MANIFEST.render)))
def test_exhaustively_an_accepted_text_reads_the_same_with_no_issue(text: str) -> None:
    agrees(text)
