"""The fast paths give exactly what the slow ones give.

``haytham/format/markdown.py`` finds the sections of a file in the simple shape haytham writes
with a line scanner and sends everything else to mistune; ``haytham/format/schema.py`` answers
"certainly valid" with a fastjsonschema predicate compiled from each schema before
jsonschema is asked.
Both are only shortcuts: with and without them every document must give the same
``Document`` and the same record and issues, for every document kind. Checked on every file
of the test corpora (tests/golden, tests/data/compat, tests/handedits and the example
project), on rendered records whose free text is each CommonMark spec example, on those
examples inserted by hand into documents, and on generated documents.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from commonmark_cases import sampled_examples
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from property_tiers import property_settings

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.format.document import to_json
from haytham.format.markdown import _fast_headings, parse_document, parse_with_mistune
from haytham.format.schema import SCHEMA_KINDS, certainly_valid, compile_schema, validator
from haytham.records import AgentOutput, HistoryEntry, PhaseCheckpoint, SessionManifest, UserFeedback

TESTS = Path(__file__).resolve().parent
CORPORA = [TESTS / "golden", TESTS / "data" / "compat", TESTS / "handedits", TESTS.parent / "projects"]
CORPUS = sorted(
    p for root in CORPORA for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".json")
)

KINDS: tuple[DocumentFormat[Any], ...] = (AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST)
PROPERTY = property_settings(300, suppress_health_check=[HealthCheck.too_slow])


def read_with(kind: DocumentFormat[Any], text: str, *, fast: bool) -> str:
    """The record and issues of ``text`` (as a repr, so that NaN equals NaN)."""
    return repr(kind.read(text, Path("doc.md"), fast=fast))


def assert_same(text: str, kinds: tuple[DocumentFormat[Any], ...] = KINDS) -> None:
    """The same Document, and the same record and issues for each of ``kinds``."""
    assert parse_document(text) == parse_with_mistune(text) == parse_document(text, fast=False)
    for kind in kinds:
        assert read_with(kind, text, fast=True) == read_with(kind, text, fast=False), kind.kind


# ------------------------------------------------------------------ corpora


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(TESTS.parent)))
def test_corpus_files_give_the_same_documents_and_records(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert_same(text)
    crlf_free = text.replace("\r\n", "\n")
    if crlf_free != text:
        assert_same(crlf_free)


def test_the_scanner_takes_most_files_haytham_writes() -> None:
    written = [p for p in CORPUS if p.suffix == ".md" and "handedits" not in p.parts]
    taken = [p for p in written if _fast_headings(p.read_text("utf-8")) is not None]
    assert len(taken) >= 0.9 * len(written)


# ------------------------------------------------------------------ CommonMark examples

GOLDEN = TESTS / "golden" / "project-123" / "sessions"


def _golden(kind: DocumentFormat[Any], name: str) -> Any:
    path = next(p for p in sorted(GOLDEN.rglob(name)) if "attempts" not in p.parts)
    return kind.load(path)


def _records() -> dict[str, Any]:
    output_path = next(
        p
        for p in sorted(GOLDEN.rglob("*.md"))
        if p.parent.name.startswith("phase_") and p.name not in ("checkpoint.md", "user_feedback.md")
    )
    return {
        "output": AGENT_OUTPUT.load(output_path),
        "checkpoint": _golden(CHECKPOINT, "checkpoint.md"),
        "feedback": _golden(FEEDBACK, "user_feedback.md"),
        "manifest": _golden(MANIFEST, "session_manifest.md"),
        "history": HISTORY_ENTRY.load(next(iter(sorted(GOLDEN.rglob("history/*.md"))))),
    }


RECORDS = _records()


Placed = tuple[DocumentFormat[Any], str]


def rendered_with(text: str) -> Iterator[Placed]:
    """Documents of every kind rendered with ``text`` in each free-text field."""
    output: AgentOutput = RECORDS["output"]
    yield AGENT_OUTPUT, AGENT_OUTPUT.render(dataclasses.replace(output, content=text))
    failed = dataclasses.replace(
        output, status="failed", error_type="E", error_message=text, stack_trace=text
    )
    yield AGENT_OUTPUT, AGENT_OUTPUT.render(failed)
    feedback: UserFeedback = RECORDS["feedback"]
    yield (
        FEEDBACK,
        FEEDBACK.render(dataclasses.replace(feedback, comments=text, requested_changes=(text, "x"))),
    )
    checkpoint: PhaseCheckpoint = RECORDS["checkpoint"]
    changed = dataclasses.replace(checkpoint, phase_name=text, errors=(text,))
    yield CHECKPOINT, CHECKPOINT.render(changed)
    entry: HistoryEntry = RECORDS["history"]
    yield (
        HISTORY_ENTRY,
        HISTORY_ENTRY.render(
            dataclasses.replace(entry, checkpoint_text=CHECKPOINT.render(changed), reason=text)
        ),
    )
    manifest: SessionManifest = RECORDS["manifest"]
    yield MANIFEST, MANIFEST.render(dataclasses.replace(manifest, workflow_type=text or "w"))


def inserted_by_hand(text: str) -> Iterator[Placed]:
    """``text`` pasted as it is into the places people type in: comments, a change, after
    the output, between sections."""
    feedback = FEEDBACK.render(RECORDS["feedback"])
    yield FEEDBACK, re.sub(r"(## User Comments\n)", lambda m: m.group(1) + text + "\n", feedback, count=1)
    yield FEEDBACK, feedback.replace("## Action Taken", text + "\n## Action Taken")
    yield FEEDBACK, feedback + text
    yield AGENT_OUTPUT, AGENT_OUTPUT.render(RECORDS["output"]).replace("## Output", text + "\n## Output")
    yield AGENT_OUTPUT, AGENT_OUTPUT.render(RECORDS["output"]) + "\n## Error Details\n" + text
    yield CHECKPOINT, CHECKPOINT.render(RECORDS["checkpoint"]).replace("## Metrics", "## Metrics\n" + text)
    yield (
        MANIFEST,
        MANIFEST.render(RECORDS["manifest"]).replace("## Current Phase", text + "\n## Current Phase"),
    )


@pytest.mark.parametrize("example", sampled_examples())
def test_commonmark_examples_in_documents(example: dict[str, Any]) -> None:
    markdown = example["markdown"]
    assert_same(markdown)
    for kind, document in [*rendered_with(markdown), *inserted_by_hand(markdown)]:
        assert_same(document, (kind,))


# ------------------------------------------------------------------ generated documents

PIECES = [
    "# Agent Output: a",
    "# User Feedback: Concept",
    "## Metadata",
    "## Output",
    "## User Comments",
    "## Review Status",
    "## Action Taken",
    "## Phase Status",
    "### Sub heading",
    "#### deeper",
    "#",
    "##",
    "#no space",
    "## Trailing #",
    "## Title ##",
    "## *emphasis*",
    "## a_b_c",
    "## _under_",
    "## Q&A",
    "##\tTab",
    " ## indented",
    "    ## code",
    "\t## tab code",
    "- Approved: true",
    "- Reviewed: yes",
    "* Status: completed",
    "+ Action: retry",
    "1. Change one",
    "2) Change two",
    "- [x] Approved",
    "- [ ] Reviewed",
    "- # heading in a list",
    "- ```",
    "  - nested: item",
    "  continuation",
    "> quoted",
    "> ## quoted heading",
    "<div>",
    "</div>",
    "<!-- comment",
    "-->",
    "```",
    "```verbatim",
    "```py`x",
    "````",
    "~~~",
    "~~~ info",
    "  ```",
    "   ~~~",
    "---",
    "===",
    "***",
    "___",
    "-",
    "=",
    "| Phase | Name |",
    "|-------|------|",
    "[ref]: /url 'title",
    "'",
    "text with `code` and *stars*",
    "2024 was a year",
    "10. ten",
    "",
    "   ",
    "\t",
    "\r",
    "a\rb",
    "\x00",
    "\ufeff# BOM",
    "\u00a0nbsp",
    "ünïcödé text",
]
documents = st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=25).map("\n".join)
endings = st.sampled_from(["", "\n", "\n\n"])
SIMPLE = [p for p in PIECES if p and _fast_headings(p + "\n") is not None]
simple_headings = st.from_regex(r"#{1,3} [A-Za-z0-9][A-Za-z0-9 _:.,()'\"/+=?%;@$-]{0,15}", fullmatch=True)
mostly_simple = st.lists(
    st.sampled_from(SIMPLE) | simple_headings | st.sampled_from(PIECES), max_size=30
).map("\n".join)


def test_the_generated_documents_reach_the_scanner() -> None:
    assert len(SIMPLE) >= 25


@PROPERTY
@given(body=documents, ending=endings)
def test_generated_documents(body: str, ending: str) -> None:
    assert_same(body + ending)


@PROPERTY
@given(body=mostly_simple, ending=endings)
def test_generated_documents_mostly_in_the_simple_shape(body: str, ending: str) -> None:
    assert_same(body + ending)


@property_settings(100, suppress_health_check=[HealthCheck.too_slow])
@given(body=documents)
def test_generated_bodies_inside_documents(body: str) -> None:
    for kind, document in [*inserted_by_hand(body), *rendered_with(body)]:
        assert_same(document, (kind, AGENT_OUTPUT))


@PROPERTY
@given(title=st.text(max_size=20), level=st.sampled_from(["#", "##"]))
def test_heading_titles(title: str, level: str) -> None:
    for text in (f"{level} {title}\n- a: b\n", f"{level} {title}", f"x\n\n{level} {title}\n\n## Next\n"):
        assert_same(text)


# ------------------------------------------------------------------ the schema predicate


def _json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-3, 10**6)
        | st.floats(allow_nan=True)
        | st.text(max_size=10)
        | st.sampled_from(["completed", "pending", "2024-11-24T10:00:00Z", "sha256:0123456789abcdef", "a-1"])
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )


def _valid_instances() -> dict[str, Any]:
    return {
        "agent_output": to_json(RECORDS["output"]),
        "checkpoint": to_json(RECORDS["checkpoint"]),
        "feedback": to_json(RECORDS["feedback"]),
        "manifest": to_json(RECORDS["manifest"]),
        "history_entry": to_json(RECORDS["history"]),
    }


VALID = _valid_instances()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@PROPERTY
@given(data=st.data())
def test_certainly_valid_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(VALID)))
    instance = json.loads(json.dumps(VALID[kind]))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(instance))))
        new = data.draw(_json_values())
        if not path:
            instance = new
            continue
        parent = instance
        for step in path[:-1]:
            parent = parent[step]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = new
    if certainly_valid(kind)(instance):
        assert list(validator(kind).iter_errors(instance)) == []


def test_certainly_valid_accepts_valid_records() -> None:
    for kind, instance in VALID.items():
        assert certainly_valid(kind)(instance), kind


def test_every_shipped_schema_compiles() -> None:
    for kind in SCHEMA_KINDS:
        schema = validator(kind).schema
        check = compile_schema(schema)
        assert check.__name__ != "_never", kind


def test_a_schema_fastjsonschema_cannot_compile_leaves_the_answer_to_jsonschema() -> None:
    for schema in ({"type": "string", "pattern": "("}, {"$ref": "https://example.com/remote.json"}):
        assert not compile_schema(schema)("x")


def test_formats_are_left_unchecked_as_jsonschema_leaves_them() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}
    assert compile_schema(schema)({"a": "x"})
    assert list(Draft202012Validator(schema).iter_errors({"a": "x"})) == []


def test_the_fast_check_never_writes_defaults_into_the_instance() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "default": "d"}}}
    instance: dict[str, Any] = {}
    assert compile_schema(schema)(instance)
    assert instance == {}
