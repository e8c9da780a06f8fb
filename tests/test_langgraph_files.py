"""The markdown of LangGraph checkpoints: every value comes back exactly, in the most readable
form that allows it, and every thread id and namespace gets a name of its own.

Skipped only where LangGraph is not installed and CI is not set (in CI it must run).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_tiers import property_settings

try:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph is not installed: pip install 'haytham[langgraph]'", allow_module_level=True)

from haytham.errors import DocumentError, UnsafeNameError
from haytham.integrations.langgraph import HaythamSaver
from haytham.integrations.langgraph import files as lgfiles
from haytham.store.names import check_name

SERDE = JsonPlusSerializer()
PROPERTY = property_settings(150, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ------------------------------------------------------------------ strategies

PIECES = [
    "```",
    "~~~",
    "````python",
    "## Channel: x",
    "## ",
    "# Title",
    "- Type: json",
    "\r\n",
    "\r",
    "\n",
    " ",
    "\t",
]
markdown_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=12).map("".join)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    markdown_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(markdown_text, inner, max_size=4),
    max_leaves=12,
)
datetimes = st.datetimes(timezones=st.sampled_from([None, datetime.timezone.utc]))


def _messages() -> st.SearchStrategy[Any]:
    try:
        from langchain_core.messages import AIMessage, HumanMessage
    except ImportError:  # pragma: no cover - langgraph depends on langchain-core
        return st.nothing()
    message = st.builds(HumanMessage, content=markdown_text) | st.builds(AIMessage, content=markdown_text)
    return st.lists(message, max_size=3)


channel_values = st.one_of(markdown_text, json_values, st.binary(max_size=64), datetimes, _messages())
channel_names = st.one_of(
    st.sampled_from(["messages", "branch:to:draft", "__start__", "", "-", '"q"']), markdown_text
)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (True is not 1, a list not a tuple)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# ------------------------------------------------------------------ round trips


@PROPERTY
@given(values=st.dictionaries(channel_names, channel_values, max_size=5), metadata=json_values)
def test_every_channel_value_comes_back_exactly(values: dict[str, Any], metadata: Any) -> None:
    checkpoint: dict[str, Any] = dict(empty_checkpoint())
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {name: 1 for name in values}
    stored = lgfiles.StoredCheckpoint("t", "child:1", checkpoint, {"step": 1, "extra": metadata}, "parent")
    text = lgfiles.render_checkpoint(stored, SERDE)
    back = lgfiles.parse_checkpoint(text, SERDE)
    assert back.checkpoint["channel_values"].keys() == values.keys()
    for name, value in values.items():
        assert _same(back.checkpoint["channel_values"][name], value), name
    assert _same(back.metadata, stored.metadata)
    assert (back.thread_id, back.checkpoint_ns, back.parent_id) == ("t", "child:1", "parent")
    assert lgfiles.render_checkpoint(back, SERDE) == text


@PROPERTY
@given(writes=st.lists(st.tuples(channel_names, channel_values, markdown_text), max_size=4))
def test_pending_writes_come_back_exactly(writes: list[tuple[str, Any, str]]) -> None:
    stored = [
        lgfiles.StoredWrite("task", i, channel, value, path)
        for i, (channel, value, path) in enumerate(writes)
    ]
    text = lgfiles.render_writes("t", "", "c1", stored, SERDE)
    back = lgfiles.parse_writes(text, SERDE)
    expected = sorted(stored, key=lambda w: (w.task_path, w.task_id, w.index))
    assert [(w.task_id, w.index, w.channel, w.task_path) for w in back] == [
        (w.task_id, w.index, w.channel, w.task_path) for w in expected
    ]
    assert all(_same(a.value, b.value) for a, b in zip(back, expected, strict=True))


@settings(max_examples=25, deadline=None)
@given(value=channel_values)
def test_values_come_back_exactly_through_the_saver(value: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:  # each example its own store, not one shared tmp_path
        _round_trip_through_the_saver(Path(folder), value)


def _round_trip_through_the_saver(base: Path, value: Any) -> None:
    saver = HaythamSaver(base, "langgraph")
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"v": value}
    checkpoint["channel_versions"] = {"v": 1}
    stored = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {"v": 1})
    saver.put_writes(stored, [("w", value)], "task")
    found = saver.get_tuple(stored)
    assert found is not None
    assert _same(found.checkpoint["channel_values"]["v"], value)
    assert found.pending_writes is not None and _same(found.pending_writes[0][2], value)


# ------------------------------------------------------------------ the two parses


def _both_parses(text: str) -> tuple[list[lgfiles.Section] | None, list[lgfiles.Section] | DocumentError]:
    """What the canonical parse and the general one make of ``text`` (a DocumentError of the
    general one is returned, not raised)."""
    canonical = lgfiles._canonical_sections(text, text.find("\n"))
    try:
        general: list[lgfiles.Section] | DocumentError = lgfiles._general_sections(text, None)
    except DocumentError as error:
        general = error
    return canonical, general


def _rendered(values: dict[str, Any], writes: list[tuple[str, Any, str]]) -> list[str]:
    checkpoint: dict[str, Any] = dict(empty_checkpoint())
    checkpoint["channel_values"] = values
    stored = lgfiles.StoredCheckpoint("t", "", checkpoint, {"step": 1}, None)
    pending = [lgfiles.StoredWrite("task", i, c, v, p) for i, (c, v, p) in enumerate(writes)]
    return [
        lgfiles.render_checkpoint(stored, SERDE),
        lgfiles.render_writes("t", "", "c1", pending, SERDE),
    ]


@PROPERTY
@given(
    values=st.dictionaries(channel_names, channel_values, max_size=4),
    writes=st.lists(st.tuples(channel_names, channel_values, markdown_text), max_size=3),
)
def test_what_haytham_writes_is_read_by_the_canonical_parse_as_by_the_general_one(
    values: dict[str, Any], writes: list[tuple[str, Any, str]]
) -> None:
    """Every file haytham writes, except one holding a text value with a fence in it (left to
    the general parse, which knows fences), is read by the canonical parse, to the same
    sections."""
    fenced_text = any(
        type(v) is str and ("```" in v or "~~~" in v) for v in [*values.values(), *(w[1] for w in writes)]
    )
    for text in _rendered(values, writes):
        canonical, general = _both_parses(text)
        assert canonical == general or (canonical is None and fenced_text), text


@PROPERTY
@given(
    values=st.dictionaries(channel_names, channel_values, max_size=3),
    writes=st.lists(st.tuples(channel_names, channel_values, markdown_text), max_size=2),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 6), st.sampled_from(PIECES) | st.text(max_size=3)),
        min_size=1,
        max_size=3,
    ),
)
def test_a_hand_edited_file_is_read_as_the_general_parse_reads_it(
    values: dict[str, Any], writes: list[tuple[str, Any, str]], edits: list[tuple[float, int, str]]
) -> None:
    """Whatever a person changes, the canonical parse gives what the general one gives, or
    leaves the file to it (and to its error, which names the line)."""
    for text in _rendered(values, writes):
        for where, removed, inserted in edits:
            at = int(where * len(text))
            text = text[:at] + inserted + text[at + removed :]
        if not text.startswith("# "):
            continue  # not a document at all: split_sections refuses it before either parse
        canonical, general = _both_parses(text)
        if canonical is not None:
            assert canonical == general


def test_the_canonical_parse_leaves_what_is_not_in_its_shape_to_the_general_one() -> None:
    head = "# LangGraph Checkpoint: c\n\n## Metadata\n- Thread: t\n\n"
    for text in [
        head + "## V\n- Type: text\n\nA value\n```\n## not a section\n```\n",  # a fence in text
        head + "## V\n- Type: json\n\n```json\n1\n ```\n",  # an indented closing fence
        head + "## V\n- Type: json\n\n```json\n1\n```\nmore\n",  # text after the fence
        head + "## V\nnot a field\n",
        head + "## V\n- Type: text\n\nno line break at the end",
    ]:
        canonical, general = _both_parses(text)
        assert canonical is None, text
        assert isinstance(general, (list, DocumentError))
    same = head + "## V\n- Type: json\n\n```json\n[1]\n```\n\n## W\n- Type: text\n\nplain\n"
    canonical, general = _both_parses(same)
    assert canonical is not None and canonical == general
    assert [s.title for s in canonical] == ["Metadata", "V", "W"]
    assert [s.line for s in canonical] == [3, 6, 13]
    assert canonical[1].fence == ("json", "[1]") and canonical[2].body == "plain"


# ------------------------------------------------------------------ the forms people read


def _section(value: Any) -> str:
    fields, body = lgfiles.render_value(value, SERDE)
    return lgfiles.render_section("Channel: x", fields, body)


def test_text_is_verbatim_markdown_when_it_can_be_and_fenced_when_not() -> None:
    report = "A report\n\n```python\nprint('## not a heading')\n```\n\n### A sub-heading\n"
    assert _section(report) == f"## Channel: x\n- Type: text\n\n{report}\n"
    for awkward in ["two\r\nlines", "## Heading", "an open\n```\nfence", "x\n## y"]:
        assert "- Type: text, fenced\n\n```" in _section(awkward)


def test_data_is_json_and_other_values_name_their_type() -> None:
    assert (
        _section({"a": [1, "b"]})
        == '## Channel: x\n- Type: json\n\n```json\n{\n  "a": [\n    1,\n    "b"\n  ]\n}\n```\n'
    )
    assert _section(b"\x00\xff") == "## Channel: x\n- Type: bytes\n\n```base64\nAP8=\n```\n"
    moment = _section(datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc))
    assert "- Type: langgraph/msgpack\n- Python Type: datetime.datetime\n" in moment
    assert "- Python Type: tuple of int" in _section((1, 2))


def test_a_file_that_is_not_a_checkpoint_is_an_error_at_its_line() -> None:
    with pytest.raises(DocumentError, match=r":4: 'not a field' is not a '- Label: value' line"):
        lgfiles.parse_checkpoint("# LangGraph Checkpoint: x\n\n## Metadata\nnot a field\n", SERDE)
    text = lgfiles.render_checkpoint(
        lgfiles.StoredCheckpoint("t", "", dict(empty_checkpoint()), {}, None), SERDE
    ).replace("- Type: json", "- Type: yaml", 1)
    with pytest.raises(DocumentError, match="unknown Type 'yaml'"):
        lgfiles.parse_checkpoint(text, SERDE)


# ------------------------------------------------------------------ names


def test_thread_ids_that_are_names_stay_as_they_are() -> None:
    assert (
        lgfiles.session_id_for("6f1c5a4e-0b7e-4b0e-9a55-1f2d3c4b5a69")
        == "6f1c5a4e-0b7e-4b0e-9a55-1f2d3c4b5a69"
    )
    assert lgfiles.session_id_for("release-notes_1") == "release-notes_1"
    assert lgfiles.session_id_for("my thread") == "lg_my_20thread"
    assert lgfiles.session_id_for("lg_x") == "lg_lg_5Fx"
    assert lgfiles.session_id_for("CON") == "lg_CON"
    assert lgfiles.session_id_for("x" * 200).startswith("lg_sha256-")
    assert lgfiles.namespace_folder("") == "root"
    assert lgfiles.namespace_folder("draft:6f1c") == "ns-draft_3A6f1c"


@settings(max_examples=300, deadline=None)
@given(first=st.text(max_size=120), second=st.text(max_size=120))
def test_every_thread_id_gets_a_safe_session_id_of_its_own(first: str, second: str) -> None:
    one, two = lgfiles.session_id_for(first), lgfiles.session_id_for(second)
    assert check_name("session_id", one) == one
    assert (one == two) == (first == second)
    assert check_name("folder", lgfiles.namespace_folder(first))
    assert (lgfiles.namespace_folder(first) == lgfiles.namespace_folder(second)) == (first == second)


@PROPERTY
@given(
    text=st.text(alphabet="`a\n#", max_size=300),
    marker=st.sampled_from(["```", "````", "`````"]),
    start=st.integers(0, 300),
)
def test_the_fence_search_finds_what_str_find_finds(text: str, marker: str, start: int) -> None:
    """``_find_run`` (backtick to backtick, then ``str.find``) answers as ``str.find`` does,
    in values with few backticks and in values with more than it hops over."""
    assert lgfiles._find_run(text, marker, start) == text.find(marker, start)


def test_the_fence_search_past_its_hops_still_finds_the_closing_fence() -> None:
    text = "x`" * (lgfiles._BACKTICK_HOPS * 3) + "\n```\n"
    assert lgfiles._find_run(text, "```", 0) == text.find("```") == len(text) - 4


def _ids_by_definition(names: set[str]) -> list[str]:
    """The checkpoint ids of a folder as docs/langgraph.md defines them: ``{id}.md`` files,
    not pending writes, not hidden, oldest (least) first."""
    return sorted(
        n[:-3] for n in names if n.endswith(".md") and not n.endswith(".writes.md") and not n.startswith(".")
    )


folder_names = st.sets(
    st.lists(
        st.sampled_from(["a", "b", "0", ".", "-", "_", "md", ".md", ".writes", ".writes.md", "\n", "x.txt"]),
        min_size=1,
        max_size=4,
    ).map("".join),
    max_size=8,
)


@PROPERTY
@given(names=folder_names)
def test_a_folders_checkpoint_ids_and_its_newest_are_as_defined(names: set[str]) -> None:
    """The fast ways (the hidden names cut out after the sort; the newest found from the
    greatest name) give what the definition gives, whatever else the folder holds."""
    ids = _ids_by_definition(names)
    assert lgfiles.checkpoint_ids(names) == ids
    assert lgfiles.newest_checkpoint(sorted(names, reverse=True)) == _newest_by_definition(names)
    assert lgfiles.newest_checkpoint(list(names)) == _newest_by_definition(names)


def _newest_by_definition(names: set[str]) -> tuple[str | None, bool]:
    """The greatest checkpoint id of a folder that is a safe name (a file a person named
    otherwise is passed over), and whether its writes file is there."""
    safe = [i for i in _ids_by_definition(names) if _is_safe(i)]
    return (safe[-1], safe[-1] + ".writes.md" in names) if safe else (None, False)


def _is_safe(name: str) -> bool:
    try:
        check_name("checkpoint_id", name)
    except UnsafeNameError:
        return False
    return True


_STEMS = st.text(alphabet="ab-.", min_size=1, max_size=4)
"""Short names whose stems are prefixes of each other and sort around ``.md`` (``a-b.md`` <
``a-b`` < ``a.md``)."""


@PROPERTY
@given(
    ids=st.lists(_STEMS, min_size=17, max_size=40),
    writes=st.sets(st.integers(0, 39)),
    others=st.lists(_STEMS | st.sampled_from(["zzz", ".md", ".a.md.tmp", "zz by hand.md"]), max_size=8),
    order=st.randoms(use_true_random=False),
)
def test_the_newest_of_a_folder_of_many_names_in_any_order_is_as_defined(
    ids: list[str], writes: set[int], others: list[str], order: Any
) -> None:
    """Folders of more names than ``newest_checkpoint``'s sample, ids that are prefixes of
    each other among them and names of no checkpoint between theirs, listed in any order:
    the floor taken from the first names changes how many names the pass keeps, never the
    answer."""
    names = {f"{i}.md" for i in ids} | {f"{ids[n]}.writes.md" for n in writes if n < len(ids)} | set(others)
    listed = sorted(names)
    order.shuffle(listed)
    newest = _newest_by_definition(names)
    assert lgfiles.newest_checkpoint(listed) == newest
    assert (
        lgfiles.newest_checkpoint(sorted(names)) == newest == lgfiles.newest_checkpoint(sorted(names)[::-1])
    )


def test_the_newest_of_ids_that_are_prefixes_of_each_other_is_the_greatest_id() -> None:
    """``a-1`` is newer than ``a`` though ``a.md`` sorts after ``a-1.md``: the fast answer
    sees the other name starting with ``a`` and leaves it to the sort."""
    names = ["a.md", "a-1.md", "a-1.writes.md", "a.writes.md"]
    assert lgfiles.newest_checkpoint(names) == ("a-1", True)
    uuids = ["1f1e-0001.md", "1f1e-0001.writes.md", "1f1e-0002.md", ".1f1e-0003.md.tmp"]
    assert lgfiles.newest_checkpoint(uuids) == ("1f1e-0002", False)
    assert lgfiles.newest_checkpoint(["a.writes.md", "a.md", "a.writes.writes.md"]) == ("a", True)
    # the floor (the greatest of the first and last 8 names, here a-2, of no checkpoint) lies
    # above the stem of the greatest name (a.md): a-1.md, between them, was not kept, and a-1
    # is newer
    tricky = [
        "a-2",
        *(f"0{n:02d}.md" for n in range(7)),
        "a.md",
        "a-1.md",
        *(f"1{n:02d}.md" for n in range(8)),
    ]
    assert lgfiles.newest_checkpoint(tricky) == ("a-1", False)


@PROPERTY
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=6,
    ),
    before=st.sampled_from(["", " ", "\n"]),
    after=st.sampled_from(["", "\n", " \r\n", "\x0b", "x", " 1", "]"]),
)
def test_a_json_block_reads_as_json_loads_reads_it(value: Any, before: str, after: str) -> None:
    """The scanner's fast read of a JSON block gives json.loads's value, or its error: on the
    block's text alone, and in place in its file (``parse_value``)."""
    content = before + json.dumps(value, indent=2) + after
    text = f"# T\n\n## V\n- Type: json\n\n```json\n{content}\n```\n"
    section = lgfiles.split_sections(text, None)[1][0]
    try:
        expected: Any = json.loads(content)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            lgfiles._json(content)
        with pytest.raises(DocumentError, match=re.escape(f"does not parse: {error}")):
            lgfiles.parse_value(section, SERDE)
    else:
        assert lgfiles._json(content) == expected
        assert lgfiles.parse_value(section, SERDE) == expected
