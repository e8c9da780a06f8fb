"""``session_manifest.md``: the session's identity, its phase table, where to resume, totals."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FORMAT_VERSION
from haytham.format.markdown import iter_unfenced_lines, normalise_label, plain_characters
from haytham.format.patterns import lazy
from haytham.format.reader import Reader
from haytham.format.sections import VERSION_FIELD, FieldSpec, SectionSpec, labels_of, write_fields
from haytham.records import (
    PHASE_STATES,
    PHASE_STATUSES,
    SESSION_STATUSES,
    CurrentPhase,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
)

TITLE = "Session Manifest"
METADATA = SectionSpec(
    "Metadata",
    (
        FieldSpec("session_id", "Session ID"),
        FieldSpec("project_id", "Project ID"),
        FieldSpec("user_id", "User ID"),
        FieldSpec("workflow_type", "Workflow Type"),
        FieldSpec("workflow_fingerprint", "Workflow Fingerprint"),
        FieldSpec("execution_mode", "Execution Mode"),
        FieldSpec("created", "Created"),
        FieldSpec("last_updated", "Last Updated"),
        FieldSpec("status", "Status"),
        FieldSpec("history_head", "History Head"),
        FieldSpec("forked_from", "Forked From"),
        VERSION_FIELD,
    ),
)
"""Workflow Fingerprint, History Head and Forked From are written only when set."""
PHASE_STATUS = SectionSpec(
    "Phase Status",
    (
        FieldSpec("number", "Phase"),
        FieldSpec("name", "Name"),
        FieldSpec("status", "Status"),
        FieldSpec("started", "Started"),
        FieldSpec("completed", "Completed"),
        FieldSpec("duration", "Duration"),
    ),
    attr="phases",
)
"""A table: one row per phase, these columns."""
CURRENT_PHASE = SectionSpec(
    "Current Phase",
    (
        FieldSpec("number", "Phase"),
        FieldSpec("name", "Name"),
        FieldSpec("status", "Status"),
        FieldSpec("can_resume", "Can Resume"),
    ),
    attr="current",
)
METRICS = SectionSpec(
    "Metrics",
    (
        FieldSpec("total_duration", "Total Duration"),
        FieldSpec("total_tokens", "Total Tokens"),
        FieldSpec("total_cost", "Total Cost"),
    ),
    attr="metrics",
)
SECTIONS = (METADATA, PHASE_STATUS, CURRENT_PHASE, METRICS)
TABLE_COLUMNS = tuple(field.label for field in PHASE_STATUS.fields)
_COLUMN_KEYS = {field.attr: normalise_label(field.label) for field in PHASE_STATUS.fields}
_CELL_SPLIT = lazy(r"(?<!\\)\|")
_RULE_CELL = lazy(r":?-+:?")


_ROW_STATUS = "|".join(dict.fromkeys((*PHASE_STATES, *PHASE_STATUSES)))


def _canonical_row(named: bool) -> str:
    """A pattern for a row of the phase table as ``render`` writes it (groups named or not)."""

    def group(name: str) -> str:
        return f"(?P<{name}>" if named else "(?:"

    return (
        rf"\| {group('number')}{v.WHOLE_NUMBER}) \| {group('name')}{v.PLAIN_TEXT}) "
        rf"\| {group('status')}{_ROW_STATUS}) "
        rf"\| (?:-|{group('started')}{v.TIMESTAMP})) \| (?:-|{group('completed')}{v.TIMESTAMP})) "
        rf"\| (?:-|{group('duration')}{v.SECONDS})) \|\n"
    )


_CANONICAL = lazy(
    rf"# {TITLE}\n"
    r"\n"
    r"## Metadata\n"
    rf"- Session ID: (?P<session_id>{v.NAME})\n"
    rf"- Project ID: (?P<project_id>{v.NAME})\n"
    rf"- User ID: (?P<user_id>{v.PLAIN_TEXT})\n"
    rf"- Workflow Type: (?P<workflow_type>{v.PLAIN_TEXT})\n"
    r"(?:- Workflow Fingerprint: (?P<workflow_fingerprint>sha256:[0-9a-f]{16,64})\n)?"
    rf"- Execution Mode: (?P<execution_mode>{v.PLAIN_TEXT})\n"
    rf"- Created: (?P<created>{v.TIMESTAMP})\n"
    rf"- Last Updated: (?P<last_updated>{v.TIMESTAMP})\n"
    rf"- Status: (?P<status>{'|'.join(SESSION_STATUSES)})\n"
    r"(?:- History Head: (?P<history_head>[0-9a-f]{12})\n)?"
    rf"(?:- Forked From: (?P<forked_from>{v.NAME} at phase [0-9]+)\n)?"
    rf"- Format: {FORMAT_VERSION}\n"
    r"\n"
    r"## Phase Status\n"
    r"\n"
    + re.escape("| " + " | ".join(TABLE_COLUMNS) + " |\n")
    + re.escape("|" + "|".join("-" * (len(c) + 2) for c in TABLE_COLUMNS) + "|\n")
    + rf"(?P<rows>(?:{_canonical_row(named=False)})*)"
    r"\n"
    r"## Current Phase\n"
    rf"- Phase: (?P<current_number>{v.COUNT})\n"
    rf"- Name: (?P<current_name>{v.PLAIN_TEXT})\n"
    rf"- Status: (?P<current_status>{v.PLAIN_TEXT})\n"
    r"- Can Resume: (?P<can_resume>true|false)\n"
    r"\n"
    r"## Metrics\n"
    rf"- Total Duration: (?P<total_duration>{v.SECONDS})\n"
    rf"- Total Tokens: (?P<total_tokens>{v.COUNT})\n"
    rf"- Total Cost: (?P<total_cost>{v.COST})\n"
)
"""A manifest exactly as ``render`` writes it, with values in their plainest spelling:
what ``ManifestFormat._canonical`` reads. Anything else goes to the general reader."""
_CANONICAL_ROW = lazy(_canonical_row(named=True))


def canonical_match(text: str) -> re.Match[str] | None:
    """The match of ``_CANONICAL`` on a text in exactly ``render``'s shape, else None. Such a
    text is one the general reader reads with no issue (tests/test_canonical_read.py); the
    manifest is made from its groups (``ManifestFormat._canonical``), and so is a listing's
    summary (``haytham.format.summary``)."""
    found = _CANONICAL.fullmatch(text)
    if found is None or not plain_characters(text) or len(found["user_id"]) > 1000:
        return None
    return found


class ManifestFormat(DocumentFormat[SessionManifest]):
    kind = "manifest"
    labels: ClassVar[Mapping[str, str]] = labels_of(SECTIONS)
    version_section: ClassVar[SectionSpec] = METADATA
    sections: ClassVar[tuple[SectionSpec, ...]] = SECTIONS

    def _collect(self, reader: Reader) -> dict[str, Any]:
        reader.expect_title(TITLE)
        meta_section = reader.section(METADATA)
        meta = reader.fields(meta_section)
        data: dict[str, Any] = {}
        for attr in ("session_id", "project_id", "user_id", "workflow_type", "execution_mode"):
            data[attr] = reader.take(meta, attr, v.read_text, default="", section=meta_section)
        for attr in ("created", "last_updated", "status"):
            data[attr] = reader.take(meta, attr, v.read_text, default="", section=meta_section)
        data["workflow_fingerprint"] = reader.take(meta, "workflow_fingerprint", v.read_text, required=False)
        data["history_head"] = reader.take(meta, "history_head", v.read_text, required=False)
        data["forked_from"] = reader.take(meta, "forked_from", v.read_text, required=False)
        data["phases"] = _read_table(reader)

        current = _Group(reader, CURRENT_PHASE)
        data["current"] = {
            "number": current.take("number", v.read_int, 0),
            "name": current.take("name", v.read_text, "Not Started"),
            "status": current.take("status", v.read_text, "pending"),
            "can_resume": current.take("can_resume", v.read_bool, False),
        }
        metrics = _Group(reader, METRICS)
        data["metrics"] = {
            "total_duration": metrics.take("total_duration", v.read_seconds, 0.0),
            "total_tokens": metrics.take("total_tokens", v.read_int, 0),
            "total_cost": metrics.take("total_cost", v.read_cost, 0.0),
        }
        return data

    def _build(self, data: dict[str, Any]) -> SessionManifest:
        return SessionManifest(
            **{k: data[k] for k in data if k not in ("phases", "current", "metrics")},
            phases=tuple(PhaseRow(**row) for row in data["phases"]),
            current=CurrentPhase(**data["current"]),
            metrics=SessionMetrics(**data["metrics"]),
        )

    def _canonical(self, text: str) -> SessionManifest | None:
        """The manifest of a text in exactly ``render``'s shape (``_CANONICAL``), else None."""
        found = canonical_match(text)
        if found is None:
            return None
        rows = tuple(
            PhaseRow(
                int(row["number"]),
                row["name"],
                row["status"],  # type: ignore[arg-type]  # one of the table's statuses
                row["started"],
                row["completed"],
                None if row["duration"] is None else float(row["duration"][:-1]),
            )
            for row in _CANONICAL_ROW.finditer(found["rows"])
        )
        return SessionManifest(
            session_id=found["session_id"],
            project_id=found["project_id"],
            user_id=found["user_id"],
            workflow_type=found["workflow_type"],
            execution_mode=found["execution_mode"],
            created=found["created"],
            last_updated=found["last_updated"],
            status=found["status"],  # type: ignore[arg-type]  # one of SESSION_STATUSES
            phases=rows,
            current=CurrentPhase(
                int(found["current_number"]),
                found["current_name"],
                found["current_status"],
                found["can_resume"] == "true",
            ),
            metrics=SessionMetrics(
                float(found["total_duration"][:-1]),
                int(found["total_tokens"]),
                float(found["total_cost"][1:]),
            ),
            workflow_fingerprint=found["workflow_fingerprint"],
            history_head=found["history_head"],
            forked_from=found["forked_from"],
        )

    def render(self, record: SessionManifest) -> str:
        metadata = {
            "session_id": v.write_text(record.session_id),
            "project_id": v.write_text(record.project_id),
            "user_id": v.write_text(record.user_id),
            "workflow_type": v.write_text(record.workflow_type),
            "workflow_fingerprint": (
                v.write_text(record.workflow_fingerprint) if record.workflow_fingerprint else None
            ),
            "execution_mode": v.write_text(record.execution_mode),
            "created": record.created,
            "last_updated": record.last_updated,
            "status": record.status,
            "history_head": record.history_head or None,
            "forked_from": v.write_text(record.forked_from) if record.forked_from else None,
        }
        lines = [
            f"# {TITLE}",
            "",
            *write_fields(METADATA, metadata),
            "",
            PHASE_STATUS.heading,
            "",
            "| " + " | ".join(TABLE_COLUMNS) + " |",
            "|" + "|".join("-" * (len(c) + 2) for c in TABLE_COLUMNS) + "|",
        ]
        for row in record.phases:
            cells = {
                "number": str(row.number),
                "name": _cell(row.name),
                "status": row.status,
                "started": v.write_text(row.started),
                "completed": v.write_text(row.completed),
                "duration": v.write_seconds(row.duration),
            }
            lines.append("| " + " | ".join(cells[f.attr] for f in PHASE_STATUS.fields) + " |")
        current = record.current
        metrics = record.metrics
        current_values = {
            "number": str(current.number),
            "name": v.write_text(current.name),
            "status": v.write_text(current.status),
            "can_resume": v.write_bool(current.can_resume),
        }
        metrics_values = {
            "total_duration": v.write_seconds(metrics.total_duration),
            "total_tokens": str(metrics.total_tokens),
            "total_cost": v.write_cost(metrics.total_cost),
        }
        lines += [
            "",
            *write_fields(CURRENT_PHASE, current_values),
            "",
            *write_fields(METRICS, metrics_values),
        ]
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return v.write_text(text).replace("|", "\\|")


class _Group:
    """The fields of a section that holds one nested record (``current``, ``metrics``)."""

    def __init__(self, reader: Reader, section: SectionSpec) -> None:
        assert section.attr is not None
        self.reader = reader
        self.spec = section
        self.group = section.attr
        self.section = reader.section(section)
        self.fields = reader.fields(self.section)

    def take(self, attr: str, convert: Any, default: Any) -> Any:
        label = self.spec.label(attr)
        field = self.fields.get(normalise_label(label))
        if field is None:
            where = self.section.line if self.section is not None else None
            self.reader.error(where, label, f"is missing from '{self.spec.heading}'")
            self.reader.missing.add((self.group, attr))
            return default
        self.reader.lines[(self.group, attr)] = field.line
        return convert(field.value)


def _read_table(reader: Reader) -> list[dict[str, Any]]:
    section = reader.section(PHASE_STATUS)
    if section is None:
        return []
    rows: list[dict[str, Any]] = []
    columns: list[str] | None = None
    for number, line in iter_unfenced_lines(section.body, section.body_line):
        stripped = line.strip()
        if not stripped.startswith("|"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(stripped.strip("|"))]
        if columns is None:
            columns = [normalise_label(c) for c in cells]
            missing = [c for c in TABLE_COLUMNS if normalise_label(c) not in columns]
            if missing:
                reader.error(number, PHASE_STATUS.title, f"the table has no column {', '.join(missing)}")
                return []
            continue
        if all(_RULE_CELL.fullmatch(c) for c in cells if c):
            continue
        if len(cells) != len(columns):
            reader.error(number, PHASE_STATUS.title, f"row has {len(cells)} cells, the header {len(columns)}")
            continue
        by_label = dict(zip(columns, cells, strict=True))
        cell = {attr: by_label[label] for attr, label in _COLUMN_KEYS.items()}
        reader.lines[("phases", len(rows))] = number
        rows.append(
            {
                "number": v.read_int(cell["number"]),
                "name": v.read_text(cell["name"]) or "",
                "status": cell["status"],
                "started": v.read_text(cell["started"]),
                "completed": v.read_text(cell["completed"]),
                "duration": v.read_seconds(cell["duration"]),
            }
        )
    return rows


MANIFEST = ManifestFormat()
