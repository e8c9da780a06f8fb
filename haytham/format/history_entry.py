"""``history/{timestamp}_{id}.md``: one entry of a session's history, the state one
checkpoint save recorded.

An entry is written for every checkpoint haytham writes, never changed afterwards, and
never shared between sessions, so git only ever adds these files: clean diffs, no conflicts.
Its id is a hash of its content and its parent, so the same saves with the same clock give
the same ids on every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.markdown import first_fence
from haytham.format.reader import Reader
from haytham.records import HistoryEntry

TITLE = "History Entry: "


class HistoryEntryFormat(DocumentFormat[HistoryEntry]):
    kind = "history_entry"
    labels: ClassVar[Mapping[str, str]] = {
        "entry_id": "Entry",
        "parent": "Parent",
        "phase_number": "Phase",
        "phase_name": "Phase",
        "attempt": "Attempt",
        "status": "Status",
        "timestamp": "Timestamp",
        "name": "Name",
        "reason": "Reason",
        "checkpoint_text": "Checkpoint",
    }

    def _collect(self, reader: Reader) -> dict[str, Any]:
        title = reader.expect_title(TITLE)
        section = reader.section("Metadata")
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
        }
        checkpoint = reader.section("Checkpoint")
        if checkpoint is not None:
            reader.lines[("checkpoint_text",)] = checkpoint.line
            fence = first_fence(checkpoint.body, checkpoint.body_line)
            if fence is None:
                reader.error(checkpoint.line, "Checkpoint", "has no fenced block holding checkpoint.md")
            else:
                data["checkpoint_text"] = v.read_fenced(fence[0], fence[1])
        return data

    def _build(self, data: dict[str, Any]) -> HistoryEntry:
        return HistoryEntry(**data)

    def render(self, record: HistoryEntry) -> str:
        lines = [
            f"# {TITLE}{record.entry_id}",
            "",
            "## Metadata",
            f"- Entry: {record.entry_id}",
            f"- Parent: {v.write_text(record.parent)}",
            f"- Phase: {record.phase_number} - {v.write_text(record.phase_name)}",
            f"- Attempt: {record.attempt}",
            f"- Status: {record.status}",
            f"- Timestamp: {record.timestamp}",
            f"- Name: {v.write_text(record.name)}",
            f"- Reason: {v.write_text(record.reason)}",
            "",
            "## Checkpoint",
            v.write_fenced(record.checkpoint_text),
        ]
        return "\n".join(lines) + "\n"


HISTORY_ENTRY = HistoryEntryFormat()
