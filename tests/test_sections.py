"""Each document kind declares its sections and labels once, and its files follow it.

The rendered files of every golden record have their ``##`` headings in the declared order,
and in each section the ``- Label:`` lines of the declared fields in the declared order.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from haytham.format import agent_output, checkpoint, feedback, history_entry, manifest
from haytham.format.document import DocumentFormat
from haytham.format.sections import SectionSpec, labels_of

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"
MODULES = {
    "agent_output": agent_output,
    "checkpoint": checkpoint,
    "feedback": feedback,
    "history_entry": history_entry,
    "manifest": manifest,
}


def format_of(name: str) -> DocumentFormat[Any]:
    """The DocumentFormat instance of the module of kind ``name``."""
    return next(v for v in vars(MODULES[name]).values() if isinstance(v, DocumentFormat))


def kind_of(path: Path) -> str:
    if path.parent.name == "history":
        return "history_entry"
    if path.name == "session_manifest.md":
        return "manifest"
    return {"checkpoint.md": "checkpoint", "user_feedback.md": "feedback"}.get(path.name, "agent_output")


FILES = sorted(
    p for p in GOLDEN.rglob("*.md") if p.parent.name.startswith("phase_") or p.parent.name == "history"
) + sorted(GOLDEN.rglob("session_manifest.md"))


def check_follows(text: str, sections: tuple[SectionSpec, ...]) -> None:
    order = [s.title for s in sections]
    body_of_output = text.split("\n## Output\n", 1)[0] if "\n## Output\n" in text else text
    headings = re.findall(r"^## (.+)$", body_of_output.split("\n```", 1)[0], re.M)
    assert headings == [t for t in order if t in headings]
    for section in sections:
        if section.title not in headings or not section.fields:
            continue
        chunk = body_of_output.split(f"\n{section.heading}\n", 1)[1].split("\n## ", 1)[0]
        labels = [m.group(1) for m in re.finditer(r"^- ([^:\n]+):", chunk, re.M)]
        declared = [f.label for f in section.fields]
        if section is manifest.PHASE_STATUS:
            assert chunk.strip().splitlines()[0] == "| " + " | ".join(declared) + " |"
            continue
        assert labels == [label for label in declared if label in labels], section.title


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_golden_files_follow_the_declaration(path: Path) -> None:
    module: Any = MODULES[kind_of(path)]
    text = path.read_text("utf-8")
    check_follows(text, module.SECTIONS)
    kind = format_of(kind_of(path))
    assert kind.render(kind.load(path)) == text


def test_every_kind_declares_sections_and_takes_its_labels_from_them() -> None:
    for name, module in MODULES.items():
        sections = module.SECTIONS
        assert sections and all(isinstance(s, SectionSpec) for s in sections), name
        derived = labels_of(sections)
        kind = format_of(name)
        for attr, label in derived.items():
            assert kind.labels[attr] == label, (name, attr)


def test_a_failed_output_writes_every_error_detail_in_order() -> None:
    path = next(p for p in FILES if kind_of(p) == "agent_output")
    record = agent_output.AGENT_OUTPUT.load(path)
    failed = dataclasses.replace(record, status="failed", error_type="E", error_message="m", stack_trace="t")
    text = agent_output.AGENT_OUTPUT.render(failed)
    check_follows(text, agent_output.SECTIONS)
    assert (
        "## Error Details\n- Error Type: E\n- Error Message: m\n- Stack Trace:\n```verbatim\nt\n```\n" in text
    )
