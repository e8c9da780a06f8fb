"""``session_manifest.md``: the session's identity, its phase table, where to resume, totals."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.markdown import iter_unfenced_lines, normalise_label
from haytham.format.reader import Reader
from haytham.records import CurrentPhase, PhaseRow, SessionManifest, SessionMetrics

TITLE = "Session Manifest"
TABLE_COLUMNS = ("Phase", "Name", "Status", "Started", "Completed", "Duration")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r":?-+:?")


class ManifestFormat(DocumentFormat[SessionManifest]):
    kind = "manifest"
    labels: ClassVar[Mapping[str, str]] = {
        "session_id": "Session ID",
        "project_id": "Project ID",
        "user_id": "User ID",
        "workflow_type": "Workflow Type",
        "workflow_fingerprint": "Workflow Fingerprint",
        "history_head": "History Head",
        "forked_from": "Forked From",
        "execution_mode": "Execution Mode",
        "created": "Created",
        "last_updated": "Last Updated",
        "status": "Status",
        "phases": "Phase Status",
        "number": "Phase",
        "name": "Name",
        "started": "Started",
        "completed": "Completed",
        "duration": "Duration",
        "current": "Current Phase",
        "can_resume": "Can Resume",
        "metrics": "Metrics",
        "total_duration": "Total Duration",
        "total_tokens": "Total Tokens",
        "total_cost": "Total Cost",
    }

    def _collect(self, reader: Reader) -> dict[str, Any]:
        reader.expect_title(TITLE)
        meta_section = reader.section("Metadata")
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

        current_section = reader.section("Current Phase")
        current = reader.fields(current_section)
        data["current"] = {
            "number": _take_in(reader, current, "current", "number", "Phase", v.read_int, 0),
            "name": _take_in(reader, current, "current", "name", "Name", v.read_text, "Not Started"),
            "status": _take_in(reader, current, "current", "status", "Status", v.read_text, "pending"),
            "can_resume": _take_in(
                reader, current, "current", "can_resume", "Can Resume", v.read_bool, False
            ),
        }
        metrics = reader.fields(reader.section("Metrics"))
        data["metrics"] = {
            "total_duration": _take_in(
                reader, metrics, "metrics", "total_duration", "Total Duration", v.read_seconds, 0.0
            ),
            "total_tokens": _take_in(
                reader, metrics, "metrics", "total_tokens", "Total Tokens", v.read_int, 0
            ),
            "total_cost": _take_in(reader, metrics, "metrics", "total_cost", "Total Cost", v.read_cost, 0.0),
        }
        return data

    def _build(self, data: dict[str, Any]) -> SessionManifest:
        return SessionManifest(
            **{k: data[k] for k in data if k not in ("phases", "current", "metrics")},
            phases=tuple(PhaseRow(**row) for row in data["phases"]),
            current=CurrentPhase(**data["current"]),
            metrics=SessionMetrics(**data["metrics"]),
        )

    def render(self, record: SessionManifest) -> str:
        lines = [
            f"# {TITLE}",
            "",
            "## Metadata",
            f"- Session ID: {record.session_id}",
            f"- Project ID: {record.project_id}",
            f"- User ID: {record.user_id}",
            f"- Workflow Type: {v.write_text(record.workflow_type)}",
            *(
                [f"- Workflow Fingerprint: {v.write_text(record.workflow_fingerprint)}"]
                if record.workflow_fingerprint
                else []
            ),
            f"- Execution Mode: {v.write_text(record.execution_mode)}",
            f"- Created: {record.created}",
            f"- Last Updated: {record.last_updated}",
            f"- Status: {record.status}",
            *([f"- History Head: {record.history_head}"] if record.history_head else []),
            *([f"- Forked From: {v.write_text(record.forked_from)}"] if record.forked_from else []),
            "",
            "## Phase Status",
            "",
            "| " + " | ".join(TABLE_COLUMNS) + " |",
            "|" + "|".join("-" * (len(c) + 2) for c in TABLE_COLUMNS) + "|",
        ]
        for row in record.phases:
            cells = [
                str(row.number),
                _cell(row.name),
                row.status,
                v.write_text(row.started),
                v.write_text(row.completed),
                v.write_seconds(row.duration),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        current = record.current
        metrics = record.metrics
        lines += [
            "",
            "## Current Phase",
            f"- Phase: {current.number}",
            f"- Name: {v.write_text(current.name)}",
            f"- Status: {v.write_text(current.status)}",
            f"- Can Resume: {v.write_bool(current.can_resume)}",
            "",
            "## Metrics",
            f"- Total Duration: {v.write_seconds(metrics.total_duration)}",
            f"- Total Tokens: {metrics.total_tokens}",
            f"- Total Cost: {v.write_cost(metrics.total_cost)}",
        ]
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return v.write_text(text).replace("|", "\\|")


def _take_in(
    reader: Reader, fields: Any, group: str, attr: str, label: str, convert: Any, default: Any
) -> Any:
    field = fields.get(normalise_label(label))
    if field is None:
        section = reader.document.find(reader.labels[group])
        where = section.line if section is not None else None
        reader.error(where, label, f"is missing from '## {reader.labels[group]}'")
        reader.missing.add((group, attr))
        return default
    reader.lines[(group, attr)] = field.line
    return convert(field.value)


def _read_table(reader: Reader) -> list[dict[str, Any]]:
    section = reader.section("Phase Status")
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
                reader.error(number, "Phase Status", f"the table has no column {', '.join(missing)}")
                return []
            continue
        if all(_RULE_CELL.fullmatch(c) for c in cells if c):
            continue
        if len(cells) != len(columns):
            reader.error(number, "Phase Status", f"row has {len(cells)} cells, the header {len(columns)}")
            continue
        cell = dict(zip(columns, cells, strict=True))
        reader.lines[("phases", len(rows))] = number
        rows.append(
            {
                "number": v.read_int(cell["phase"]),
                "name": v.read_text(cell["name"]) or "",
                "status": cell["status"],
                "started": v.read_text(cell["started"]),
                "completed": v.read_text(cell["completed"]),
                "duration": v.read_seconds(cell["duration"]),
            }
        )
    return rows


MANIFEST = ManifestFormat()
