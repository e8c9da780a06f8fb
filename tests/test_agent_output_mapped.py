"""A large agent output is read mapped, and gives exactly what reading it whole gives.

``AgentOutputFormat.read_mapped`` decodes the start of a file until ``## Output`` is found
there as in the whole text, then decodes the content straight from the mapping
(haytham/format/agent_output.py). These tests compare it with ``read_data`` (the whole-text
path) on every agent output of the test corpora, on rendered records whose content is made
to confuse the scan (``## Output`` lines, fences left open, CR, BOM, bytes that are not UTF-8),
and on hand-mutated texts, with the first decoded window shrunk to a few bytes so that the
window's growth is exercised. The memory of a load is checked as a size bound: the peak of
traced memory is the content plus a fixed slack.
"""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from property_tiers import property_settings

from haytham import CheckpointManager
from haytham.errors import DocumentError
from haytham.format import AGENT_OUTPUT
from haytham.format import agent_output as agent_output_module
from haytham.format.agent_output import MAPPED_FROM, MAX_OUTPUT_BYTES
from haytham.records import AgentOutput

TESTS = Path(__file__).resolve().parent
CORPORA = [TESTS / "golden", TESTS / "data" / "compat", TESTS / "handedits", TESTS.parent / "projects"]
OUTPUTS = sorted(
    p
    for root in CORPORA
    for p in root.rglob("*.md")
    if p.is_file() and p.read_bytes().lstrip(b"\xef\xbb\xbf").startswith(b"# Agent Output")
)
WINDOWS = (1, 5, 17, 64, 1 << 16)
PROPERTY = property_settings(
    300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
RECORD = AgentOutput(
    agent_name="writer",
    phase_number=1,
    phase_name="Concept",
    executed="2025-01-01T00:00:00Z",
    duration=1.5,
    status="completed",
    model=None,
    input_tokens=None,
    output_tokens=None,
    tools_used=(),
    content="draft",
)
PATH = Path("writer.md")


def outcome(read: Any) -> str:
    """The record and issues of a read, or the error it raised (as text: NaN equals NaN)."""
    try:
        return repr(read())
    except DocumentError as error:
        return f"error: {error}"


def assert_same(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_mapped`` gives ``read_data``'s answer for every first window size."""
    whole = outcome(lambda: AGENT_OUTPUT.read_data(data, PATH))
    for window in WINDOWS:
        monkeypatch.setattr(agent_output_module, "_HEAD_BYTES", window)
        assert outcome(lambda: AGENT_OUTPUT.read_mapped(data, PATH)) == whole, window


@pytest.mark.parametrize("path", OUTPUTS, ids=lambda p: str(p.relative_to(TESTS.parent)))
def test_corpus_outputs_read_mapped_as_read_whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    assert_same(data, monkeypatch)
    assert_same(b"\xef\xbb\xbf" + data, monkeypatch)
    assert_same(data.replace(b"\n", b"\r\n"), monkeypatch)
    assert_same(data + b"\xff\n", monkeypatch)


def test_the_corpus_holds_agent_outputs() -> None:
    assert len(OUTPUTS) >= 5


pieces = st.sampled_from(
    [
        "## Output",
        "## output ##",
        "   ## Output  ",
        "```",
        "~~~",
        "````python",
        "    ```",
        "\n",
        "\n\n",
        "\r\n",
        "\r",
        "text",
        "é",
        "\u2028",
        "🙂",
        "## Error Details\n- Error Type: E\n- Error Message: m\n",
        "<<<<<<< ours",
        "- Final Newlines: 3",
    ]
)
contents = st.lists(st.one_of(pieces, st.text(max_size=5)), max_size=12).map("".join)


@PROPERTY
@given(content=contents, failed=st.booleans())
def test_rendered_records_read_mapped_as_read_whole(
    content: str, failed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = dataclasses.replace(RECORD, content=content)
    if failed:
        record = dataclasses.replace(record, status="failed", error_type="E", error_message="m")
    try:
        data = AGENT_OUTPUT.render(record).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file can hold it
        return
    assert_same(data, monkeypatch)


@PROPERTY
@given(content=contents, before=contents, at=st.integers(min_value=0), junk=st.binary(max_size=3))
def test_hand_edited_texts_read_mapped_as_read_whole(
    content: str, before: str, at: int, junk: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text pasted before ``## Output`` (an unclosed fence hides the line), bytes spliced in
    anywhere, a missing final line break."""
    text = AGENT_OUTPUT.render(dataclasses.replace(RECORD, content=content))
    text = text.replace("## Output", before + "\n## Output", 1)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return
    place = at % (len(data) + 1)
    assert_same(data[:place] + junk + data[place:], monkeypatch)
    assert_same(data.rstrip(b"\n"), monkeypatch)


def test_a_legacy_failed_output_reads_its_error_details_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "# Agent Output: writer\n\n## Metadata\n- Agent: writer\n- Phase: 1 - Concept\n"
        "- Executed: 2025-01-01T00:00:00Z\n- Status: failed\n\n## Output\n\nhalf\n\n"
        "## Error Details\n- Error Type: E\n- Error Message: broke\n- Stack Trace:\n```\ntb\n```\n"
    )
    assert_same(text.encode("utf-8"), monkeypatch)
    record = AGENT_OUTPUT.read_mapped(text.encode("utf-8"), PATH)[0]
    assert record is not None and (record.content, record.error_message) == ("half", "broke")


# ------------------------------------------------------------------ files and memory


def _write(path: Path, content: str) -> Path:
    path.write_text(AGENT_OUTPUT.render(dataclasses.replace(RECORD, content=content)), encoding="utf-8")
    return path


def test_a_large_file_is_loaded_mapped_with_the_same_record(tmp_path: Path) -> None:
    content = ("line é 🙂\n" * (MAPPED_FROM // 8)) + "end\n"
    path = _write(tmp_path / "writer.md", content)
    assert path.stat().st_size > MAPPED_FROM
    loaded = AGENT_OUTPUT.load(path)
    assert loaded == AGENT_OUTPUT.read_data(path.read_bytes(), path)[0]
    assert loaded.content == content
    assert AGENT_OUTPUT.read_path(path)[0] == loaded


def test_a_large_file_that_is_not_utf8_is_still_refused_at_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "writer.md", "ok\n" * MAPPED_FROM)
    with path.open("ab") as handle:
        handle.write(b"bad \xff byte\n")
    lines = path.read_bytes().count(b"\n")
    with pytest.raises(DocumentError) as caught:
        AGENT_OUTPUT.load(path)
    assert caught.value.line == lines
    assert "is not UTF-8" in str(caught.value)


def test_an_output_past_its_limit_is_refused_by_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "writer.md", "x" * 200_000)
    monkeypatch.setattr(AGENT_OUTPUT, "max_bytes", 100_000)
    with pytest.raises(DocumentError) as caught:
        AGENT_OUTPUT.load(path)
    assert str(caught.value) == (
        f"{path}: is {path.stat().st_size:,} bytes long: haytham reads session files of this kind of at "
        "most 100,000 bytes (docs/formats.md, Limits)"
    )
    assert MAX_OUTPUT_BYTES >= 100 * 1000 * 1000  # the 100 MB output is read


SIZE = 20 * 1000 * 1000
SLACK = 2 * 1000 * 1000
"""What a load may hold beside the content: the decoded header, the first window, the
record. A size bound (deterministic), not a timing: a load that held the file's text and
the content at once would need ``SIZE`` more."""


@pytest.mark.parametrize("ending", ["\n", ""])
def test_loading_a_20_mb_output_holds_the_content_and_a_fixed_slack(tmp_path: Path, ending: str) -> None:
    content = "x" * SIZE + ending
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session("p", "s", "u")
    manager.save_agent_output("p", "s", 1, "writer", content)
    del content
    fresh = CheckpointManager(base_dir=tmp_path)
    tracemalloc.start()
    try:
        outputs = fresh.get_phase_outputs("p", "s", [1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outputs[1]["writer"] == "x" * SIZE + ending
    assert peak <= SIZE + SLACK, peak


def test_an_output_line_in_a_fence_that_closes_later_is_skipped_as_in_the_whole_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first window ends inside a fence that holds ``## Output``: no answer there; the
    grown window sees the fence close and finds the real line after it."""
    text = AGENT_OUTPUT.render(dataclasses.replace(RECORD, content="real\n"))
    text = text.replace("## Output", "```\n## Output\nnot this\n" + "x\n" * 50 + "```\n\n## Output", 1)
    data = text.encode("utf-8")
    assert_same(data, monkeypatch)
    monkeypatch.setattr(agent_output_module, "_HEAD_BYTES", 200)
    assert data.find(b"```", data.find(b"```") + 1) > 200  # the fence closes past the first window
    record = AGENT_OUTPUT.read_mapped(data, PATH)[0]
    assert record is not None and record.content == "real\n"
