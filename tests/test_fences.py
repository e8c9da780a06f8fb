"""There is one fence implementation (``markdown.iter_fences``) and it is mistune's view.

Every reader that must skip fenced code (fields, the manifest table, requested changes,
``## Output``, conflict markers) or take a fenced block (stack traces, verbatim comments,
a history entry's checkpoint) goes through ``iter_fences``. Here it is compared with the
fenced code blocks mistune itself finds at the top level of a text: on generated texts and
on every CommonMark spec example. The comparison covers every text whose top level holds
no container or HTML block (lists, block quotes, HTML, link reference definitions), where a
fence's meaning depends on more than its own lines; haytham's files keep fences at the top
level.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mistune
import pytest
from commonmark_cases import EXAMPLES, sampled_examples
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from mistune.block_parser import BlockParser
from mistune.core import BlockState
from property_tiers import property_settings

from haytham.format.agent_output import split_output
from haytham.format.markdown import fence_lines, first_fence, iter_fences, iter_unfenced_lines

TESTS = Path(__file__).resolve().parent

PROPERTY = property_settings(500, suppress_health_check=[HealthCheck.too_slow])
TOP_LEVEL_ONLY = frozenset({"paragraph", "heading", "blank_line", "block_code", "thematic_break"})
"""Block types whose presence leaves a fence's meaning to its own lines."""

View = list[tuple[int, int, str, str]]
"""Each fence as (start, end, info, content)."""


class _FenceRecorder(BlockParser):
    """mistune's block parser, noting where each top-level fenced code block starts and ends."""

    def parse_method(self, m: re.Match[str], state: BlockState) -> int | None:
        before = len(state.tokens)
        end = super().parse_method(m, state)
        if state.parent is None and m.lastgroup == "fenced_code" and len(state.tokens) > before:
            token = state.tokens[-1]
            if token["type"] == "block_code":
                info = m.group("fenced_3").strip()
                state.env.setdefault("fences", []).append((m.start(), end, info, token["raw"]))
        return end


_MISTUNE = mistune.Markdown(renderer=None, block=_FenceRecorder(), plugins=[])


def mistune_view(text: str) -> View | None:
    """mistune's top-level fences in ``text``, or None when the text is outside the domain."""
    state = BlockState()
    source = text.replace("\r", " ")
    _MISTUNE.parse(source, state)
    if {token["type"] for token in state.tokens} - TOP_LEVEL_ONLY or state.env.get("ref_links"):
        return None
    size = len(text)
    return [
        (start, min(end or size, size), info, raw) for start, end, info, raw in state.env.get("fences", [])
    ]


def our_view(text: str) -> View:
    """Our fences; the content as mistune gives it (each line ended by a line break, a CR
    read as a space: offsets are the same)."""
    seen = text.replace("\r", " ")
    return [
        (fence.start, fence.end, fence.info, "".join(line + "\n" for line in fence_lines(seen, fence)))
        for fence in iter_fences(text)
    ]


def unfenced_reference(text: str, first_line: int) -> list[tuple[int, str]]:
    """The lines of ``text`` (as ``str.split`` gives them) that start outside every fence,
    found the slow way. The empty piece after a final line break belongs to a fence that
    runs to the end of the text without a closing line break."""
    fences = list(iter_fences(text))
    kept = []
    offset = 0
    for index, line in enumerate(text.split("\n")):
        covered = any(f.start <= offset < f.end for f in fences)
        if offset == len(text) and fences and fences[-1].end == len(text):
            covered = not (fences[-1].closed and text.endswith("\n"))
        if not covered:
            kept.append((first_line + index, line))
        offset += len(line) + 1
    return kept


def assert_same(text: str) -> bool:
    """Our fences are mistune's; True when the text was in the domain compared."""
    theirs = mistune_view(text)
    if theirs is not None:
        assert our_view(text) == theirs
    assert list(iter_unfenced_lines(text, 3)) == unfenced_reference(text, 3)
    return theirs is not None


@pytest.mark.parametrize("example", sampled_examples())
def test_commonmark_examples(example: dict[str, Any]) -> None:
    assert_same(example["markdown"])


def test_the_commonmark_examples_with_fences_are_compared() -> None:
    compared = [e for e in EXAMPLES if "```" in e["markdown"] or "~~~" in e["markdown"]]
    inside = [e for e in compared if assert_same(e["markdown"]) and our_view(e["markdown"])]
    assert len(inside) >= 25


PIECES = [
    "```",
    "````",
    "```verbatim",
    "```verbatim crlf",
    "```py`x",
    "~~~",
    "~~~~",
    "~~~ info `ok`",
    " ```",
    "  ~~~",
    "   ```",
    "    ```",
    "\t```",
    "``` ",
    "```\t",
    "``",
    "```\r",
    "\r```",
    "## Output",
    "- Status: completed",
    "text",
    "    indented code",
    "---",
    "===",
    "",
    " ",
]
TEXTS = st.lists(st.sampled_from(PIECES) | st.text(alphabet="`~ \ta\n", max_size=6), max_size=20).map(
    "\n".join
)


@PROPERTY
@given(text=TEXTS, ending=st.sampled_from(["", "\n"]))
def test_generated_texts(text: str, ending: str) -> None:
    assert_same(text + ending)


def test_first_fence_takes_the_first_after_a_line() -> None:
    body = "- Stack Trace:\n```verbatim\none\n```\n~~~\ntwo\n  three\n~~~\n"
    assert first_fence(body, 10) == ("verbatim", ["one"])
    assert first_fence(body, 10, after_line=11) == ("", ["two", "  three"])
    assert first_fence(body, 10, after_line=14) is None
    assert first_fence("  ```x\n  a\n   b\nc\n  ```\n", 1) == ("x", ["a", " b", "c"])


def test_a_fence_hides_what_looks_like_fields() -> None:
    body = "- a: 1\n```\n- b: 2\n```\n- c: 3\n````\n```\n- d: 4\n"
    assert [line for _, line in iter_unfenced_lines(body, 1)] == ["- a: 1", "- c: 3"]


def test_the_output_heading_inside_a_fence_is_not_the_output() -> None:
    text = "# Agent Output: a\n\n## Metadata\n```\n## Output\n```\n## Output\nbody\n"
    split = split_output(text)
    assert split is not None
    assert split[2] == 8
    assert text[split[1] :] == "body\n"
    assert split_output("# Agent Output: a\n~~~\n## Output\n") is None
