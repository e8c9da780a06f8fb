"""``history/{timestamp}_{id}.md``: one entry of a session's history, the state one
checkpoint save, or one saved review, recorded.

An entry is written for every checkpoint and every review haytham writes, never changed afterwards, and
never shared between sessions, so git only ever adds these files: clean diffs, no conflicts.
Its id is a hash of its content and its parent, so the same saves with the same clock give
the same ids on every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FORMAT_VERSION
from haytham.format.markdown import first_fence, plain_characters
from haytham.format.patterns import lazy
from haytham.format.reader import Reader
from haytham.format.sections import VERSION_FIELD, FieldSpec, SectionSpec, labels_of, write_fields
from haytham.records import PHASE_STATUSES, HistoryEntry

TITLE = "History Entry: "
METADATA = SectionSpec(
    "Metadata",
    (
        FieldSpec("entry_id", "Entry"),
        FieldSpec("parent", "Parent"),
        FieldSpec("phase_number", "Phase"),
        FieldSpec("attempt", "Attempt"),
        FieldSpec("status", "Status"),
        FieldSpec("timestamp", "Timestamp"),
        FieldSpec("name", "Name"),
        FieldSpec("reason", "Reason"),
        FieldSpec("kind", "Kind"),
        FieldSpec("corrected_agent", "Corrected Agent"),
        VERSION_FIELD,
    ),
)
"""``- Phase: {number} - {name}`` holds both phase_number and phase_name; ``Kind`` is written
only for a review (an entry without it records a checkpoint save), ``Corrected Agent`` only
for the checkpoint save of a correction."""
CHECKPOINT_SECTION = SectionSpec("Checkpoint", attr="checkpoint_text")
FEEDBACK_SECTION = SectionSpec("Feedback", required=False, attr="feedback_text")
"""A review entry's user_feedback.md, fenced."""
ORIGINAL_SECTION = SectionSpec("Original Output", required=False, attr="original_output")
"""A correction's original agent output file (its whole text before), fenced."""
SECTIONS = (METADATA, CHECKPOINT_SECTION, FEEDBACK_SECTION, ORIGINAL_SECTION)


_ID = "[0-9a-f]{12}"
_LINES = r"(?:[^\n]*+\n)*?[^\n]*+"
"""A fenced block's content, up to the first line that can end it: taken a line at a time."""
_TEXT = v.PLAIN_TEXT
_CANONICAL = lazy(
    rf"# {TITLE}(?P<entry_id>{_ID})\n"
    r"\n"
    r"## Metadata\n"
    r"- Entry: (?P=entry_id)\n"
    rf"- Parent: (?:-|(?P<parent>{_ID}))\n"
    rf"- Phase: (?P<phase_number>{v.WHOLE_NUMBER}) - (?P<phase_name>{_TEXT})\n"
    rf"- Attempt: (?P<attempt>{v.WHOLE_NUMBER})\n"
    rf"- Status: (?P<status>{'|'.join(PHASE_STATUSES)})\n"
    rf"- Timestamp: (?P<timestamp>{v.TIMESTAMP})\n"
    rf"- Name: (?:-|(?P<name>{_TEXT}))\n"
    rf"- Reason: (?:-|(?P<reason>{_TEXT}))\n"
    r"(?:- Kind: (?P<review>review)\n)?"
    rf"- Format: {FORMAT_VERSION}\n"
    r"\n"
    r"## Checkpoint\n"
    rf"(?P<fence>`{{3,}})verbatim\n(?P<checkpoint_text>{_LINES})\n(?P=fence)\n"
    r"(?:\n## Feedback\n"
    rf"(?P<feedback_fence>`{{3,}})verbatim\n(?P<feedback_text>{_LINES})\n(?P=feedback_fence)\n)?",
)
"""An entry exactly as ``render`` writes it, with values in their plainest spelling: what
``HistoryEntryFormat._canonical`` reads. Anything else goes to the general reader."""


_METADATA_GROUPS = (
    "entry_id",
    "parent",
    "phase_number",
    "phase_name",
    "attempt",
    "status",
    "timestamp",
    "name",
    "reason",
    "review",
)
"""``_CANONICAL``'s groups of the metadata, in the order ``_canonical`` takes them."""


class HistoryEntryFormat(DocumentFormat[HistoryEntry]):
    kind = "history_entry"
    labels: ClassVar[Mapping[str, str]] = labels_of(SECTIONS, {"phase_name": "phase_number"})
    version_section: ClassVar[SectionSpec] = METADATA

    def _collect(self, reader: Reader) -> dict[str, Any]:
        title = reader.expect_title(TITLE)
        section = reader.section(METADATA)
        fields = reader.fields(section)
        take = reader.take
        phase = take(fields, "phase_number", str, default="", section=section)
        number, _, name = phase.partition(" - ")
        data: dict[str, Any] = {
            "entry_id": take(fields, "entry_id", v.read_text, default=title, required=False),
            "parent": take(fields, "parent", v.read_text, required=False),
            "phase_number": v.read_int(number),
            "phase_name": v.read_text(name) or "",
            "attempt": take(fields, "attempt", v.read_int, section=section),
            "status": take(fields, "status", v.read_text, section=section),
            "timestamp": take(fields, "timestamp", v.read_text, section=section),
            "name": take(fields, "name", v.read_text, required=False),
            "reason": take(fields, "reason", v.read_text, required=False),
            "checkpoint_text": "",
            "kind": take(fields, "kind", v.read_text, default="checkpoint", required=False),
            "feedback_text": None,
            "corrected_agent": take(fields, "corrected_agent", v.read_text, required=False),
            "original_output": None,
        }
        original = reader.section(ORIGINAL_SECTION)
        if original is not None:
            reader.lines[("original_output",)] = original.line
            block = first_fence(original.body, original.body_line)
            if block is None:
                reader.error(original.line, ORIGINAL_SECTION.title, "has no fenced block holding the output")
            else:
                data["original_output"] = v.read_fenced(block[0], block[1])
        feedback = reader.section(FEEDBACK_SECTION)
        if feedback is not None:
            reader.lines[("feedback_text",)] = feedback.line
            found = first_fence(feedback.body, feedback.body_line)
            if found is None:
                reader.error(
                    feedback.line, FEEDBACK_SECTION.title, "has no fenced block holding user_feedback.md"
                )
            else:
                data["feedback_text"] = v.read_fenced(found[0], found[1])
        checkpoint = reader.section(CHECKPOINT_SECTION)
        if checkpoint is not None:
            reader.lines[("checkpoint_text",)] = checkpoint.line
            fence = first_fence(checkpoint.body, checkpoint.body_line)
            if fence is None:
                reader.error(
                    checkpoint.line, CHECKPOINT_SECTION.title, "has no fenced block holding checkpoint.md"
                )
            else:
                data["checkpoint_text"] = v.read_fenced(fence[0], fence[1])
        return data

    def _build(self, data: dict[str, Any]) -> HistoryEntry:
        return HistoryEntry(**data)

    def _canonical(self, text: str) -> HistoryEntry | None:
        """The entry of a text in exactly ``render``'s shape (``_CANONICAL``), else None.

        Made with one update of its ``__dict__``, not through ``__init__``: a frozen
        dataclass's ``__init__`` sets each field through ``object.__setattr__``, half the CPU
        of this read when a history of a hundred thousand entries is read.

        The pattern fixes every line outside the fenced blocks, and every value in it is
        one the schema accepts; a block is taken only when no line of its content can
        close it (no run of backticks as long as its fence), and the text only when it
        holds no character the section parser treats specially (``plain_characters``)."""
        found = _CANONICAL.fullmatch(text)
        if found is None or not plain_characters(text):
            return None
        entry_id, parent, number, phase_name, attempt, status, timestamp, name, reason, review = found.group(
            *_METADATA_GROUPS
        )
        fence, checkpoint_text, feedback_fence, feedback_text = found.group(
            "fence", "checkpoint_text", "feedback_fence", "feedback_text"
        )
        if fence in checkpoint_text:
            return None
        if feedback_text is not None and feedback_fence in feedback_text:
            return None
        entry = HistoryEntry.__new__(HistoryEntry)
        entry.__dict__.update(  # every field, as __init__ sets them (tests/test_canonical_read.py)
            entry_id=entry_id,
            parent=parent,
            phase_number=int(number),
            phase_name=phase_name,
            attempt=int(attempt),
            status=status,  # one of PHASE_STATUSES
            timestamp=timestamp,
            name=name,
            reason=reason,
            checkpoint_text=checkpoint_text,
            kind="checkpoint" if review is None else "review",
            feedback_text=feedback_text,
            corrected_agent=None,
            original_output=None,
        )
        return entry

    def read_canonical(self, data: bytes) -> HistoryEntry | None:
        """The entry of a file's bytes when they are UTF-8 text in exactly ``render``'s shape,
        else None (the caller then reads them with ``read_data``, which says what is wrong).

        What ``read_data`` gives for such bytes, without a path or a read cache: a history of
        a hundred thousand entries is read with no per-entry path object or cache entry."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return self._canonical(text)  # a BOM or a CR is refused here, so decode() would agree

    def render(self, record: HistoryEntry) -> str:
        metadata = {
            "entry_id": record.entry_id,
            "parent": v.write_text(record.parent),
            "phase_number": f"{record.phase_number} - {v.write_text(record.phase_name)}",
            "attempt": str(record.attempt),
            "status": record.status,
            "timestamp": record.timestamp,
            "name": v.write_text(record.name),
            "reason": v.write_text(record.reason),
            "kind": record.kind if record.kind != "checkpoint" else None,
            "corrected_agent": record.corrected_agent,
        }
        lines = [
            f"# {TITLE}{record.entry_id}",
            "",
            *write_fields(METADATA, metadata),
            "",
            CHECKPOINT_SECTION.heading,
            v.write_fenced(record.checkpoint_text),
        ]
        if record.feedback_text is not None:
            lines += ["", FEEDBACK_SECTION.heading, v.write_fenced(record.feedback_text)]
        if record.original_output is not None:
            lines += ["", ORIGINAL_SECTION.heading, v.write_fenced(record.original_output)]
        return "\n".join(lines) + "\n"


HISTORY_ENTRY = HistoryEntryFormat()
