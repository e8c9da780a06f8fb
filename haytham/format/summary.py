"""What a listing needs of a session manifest, read by one regular expression when it can be.

``haytham list`` over thousands of sessions needs a dozen values of each manifest (its ids,
status, current phase, times and totals), and the full reader (the section parser, the
field reader, the phase table, the schema check) costs far more than reading the file. A
manifest in the exact shape haytham writes (``ManifestFormat.render``) is read here by one
compiled regular expression that matches only such text, every value included:

- the lines, headings, labels and their order are exactly ``render``'s, built from the
  manifest's ``SectionSpec`` declarations (one optional line where ``render`` leaves one out);
- each free-text value is one that ``write_text`` writes bare (``values.bare_text``), so
  ``read_text`` gives it back as written; a value that needed quotes falls to the full reader;
- each value the schema constrains matches the schema's own pattern or enumeration
  (``schema.load_schema``), and numbers are written as ``render`` writes them, below the
  schema's bounds (``values.MAX_WHOLE_NUMBER``, ``values.MAX_AMOUNT``);
- the Phase Status table is matched row by row with the same rules, so a manifest whose
  table the full reader would refuse is never accepted here.

So a text this reader accepts is one the full reader reads with no issue at all, and the
summary is the same (``tests/test_summary.py`` proves it on rendered records and on hand-edited
and mutated texts). Anything else (a hand edit, a first-implementation file, a quoted value,
an error) returns None, and the caller reads the file with ``MANIFEST``, which reports its
issues exactly as before.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from haytham.format import values as v
from haytham.format.layout import FORMAT_VERSION
from haytham.format.manifest import CURRENT_PHASE, METADATA, METRICS, PHASE_STATUS, TABLE_COLUMNS, TITLE
from haytham.format.schema import load_schema
from haytham.format.sections import VERSION_FIELD, SectionSpec
from haytham.records import SessionManifest


class ManifestSummary(NamedTuple):
    """The values of a manifest that a listing shows, as the full reader gives them."""

    project_id: str
    session_id: str
    user_id: str
    workflow_type: str
    execution_mode: str
    status: str
    current_phase: int
    current_phase_name: str
    created: str
    last_updated: str
    total_tokens: int
    total_cost: float
    current_state: str
    """The Current Phase's Status."""


def summary_of(manifest: SessionManifest) -> ManifestSummary:
    """The summary of a manifest the full reader read."""
    return ManifestSummary(
        manifest.project_id,
        manifest.session_id,
        manifest.user_id,
        manifest.workflow_type,
        manifest.execution_mode,
        manifest.status,
        manifest.current.number,
        manifest.current.name,
        manifest.created,
        manifest.last_updated,
        manifest.metrics.total_tokens,
        manifest.metrics.total_cost,
        manifest.current.status,
    )


def read_summary(text: str) -> ManifestSummary | None:
    """The summary of a manifest's decoded ``text`` when it is in the exact shape haytham
    writes (then the full reader finds no issue in it and the same values); None otherwise."""
    found = _pattern().fullmatch(text)
    if found is None:
        return None
    project, session, user, workflow, mode, status, number, name, created, updated, tokens, cost, state = (
        found.group(*_GROUPS)
    )
    return ManifestSummary(
        project,
        session,
        user,
        workflow,
        mode,
        status,
        int(number),
        name,
        created,
        updated,
        int(tokens),
        float(cost),
        state,
    )


# ------------------------------------------------------------------ the expression

_DIGITS = len(str(v.MAX_WHOLE_NUMBER)) - 1
"""Whole numbers of at most this many digits are below ``MAX_WHOLE_NUMBER`` (and
``MAX_AMOUNT``, the same bound): a longer one falls to the full reader and its schema."""
assert 10**_DIGITS <= v.MAX_WHOLE_NUMBER
assert 10**_DIGITS <= v.MAX_AMOUNT
_WHOLE = rf"(?:0|[1-9][0-9]{{0,{_DIGITS - 1}}})"
"""``str(n)`` of a whole number below the bound."""
_POSITIVE = rf"[1-9][0-9]{{0,{_DIGITS - 1}}}"
_SECONDS = rf"{_WHOLE}\.[0-9]s"
"""``write_seconds`` of an amount below the bound."""
_COST = rf"\$(?P<cost>{_WHOLE}\.[0-9]{{4}})"
"""``write_cost`` of an amount below the bound (the group is what ``read_cost`` converts)."""
_CELL_EXCLUDED = r"|\\"
"""A bare table cell holds no ``|`` (written escaped) and no backslash (which escapes it)."""
_GROUPS = (
    *ManifestSummary._fields[:6],
    "number",
    "name",
    "created",
    "last_updated",
    "tokens",
    "cost",
    "state",
)
"""The expression's group of each summary field."""
EMBEDDED_PATTERNS = (
    "session_id",
    "user_id",
    "created",
    "workflow_fingerprint",
    "history_head",
    "forked_from",
)
"""The schema properties whose patterns are embedded (``project_id`` and ``last_updated``
share theirs); none matches a line break, and the timestamp's (a table cell's too) no ``|``
(the tests check), so each stays within its line or cell."""


def _schema_pattern(schema: dict[str, Any], name: str) -> str:
    """The schema's pattern for the property ``name``, unanchored."""
    assert name in EMBEDDED_PATTERNS
    properties = schema["properties"]
    assert isinstance(properties, dict)
    pattern = properties[name]["pattern"]
    assert isinstance(pattern, str)
    assert pattern.startswith("^")
    assert pattern.endswith("$")
    return f"(?:{pattern[1:-1]})"


def _enum(schema: dict[str, Any], node: dict[str, Any]) -> tuple[str, ...]:
    """The values of an enumeration the schema refers to (``{"$ref": "#/$defs/Name"}``),
    filled in from ``haytham.records`` by ``load_schema``."""
    reference = node["$ref"]
    assert isinstance(reference, str)
    assert reference.startswith("#/$defs/")
    return tuple(schema["$defs"][reference.removeprefix("#/$defs/")]["enum"])


def _one_of(words: tuple[str, ...]) -> str:
    return "(?:" + "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)) + ")"


def _line(section: SectionSpec, attr: str, value: str) -> str:
    """``- Label: value`` and its line break."""
    return f"- {re.escape(section.label(attr))}: {value}\n"


def _checked(pattern: str, bare: str) -> str:
    """A bare value that also matches ``pattern`` (a schema's), the whole line."""
    return rf"(?=(?:{pattern})\n){bare}"


@functools.cache
def _pattern() -> re.Pattern[str]:
    """The expression of a manifest in the exact shape ``ManifestFormat.render`` writes."""
    schema = load_schema("manifest")
    properties = schema["properties"]
    bare = v.bare_text("\ufeff")  # no BOM either, so the text stays in the section parser's fast path
    cell = v.bare_text("\ufeff" + _CELL_EXCLUDED)
    identifier = _schema_pattern(schema, "session_id")
    assert properties["project_id"]["pattern"] == properties["session_id"]["pattern"]
    timestamp = _schema_pattern(schema, "created")
    assert properties["last_updated"]["pattern"] == properties["created"]["pattern"]
    session_statuses = _one_of(_enum(schema, properties["status"]))
    row_status = properties["phases"]["items"]["properties"]["status"]["anyOf"]
    phase_statuses = _one_of(tuple(word for branch in row_status for word in _enum(schema, branch)))
    meta = {
        "session_id": f"(?P<session_id>{_checked(identifier, bare)})",
        "project_id": f"(?P<project_id>{_checked(identifier, bare)})",
        "user_id": f"(?P<user_id>{_checked(_schema_pattern(schema, 'user_id'), bare)})",
        "workflow_type": f"(?P<workflow_type>{bare})",
        "workflow_fingerprint": _checked(_schema_pattern(schema, "workflow_fingerprint"), bare),
        "execution_mode": f"(?P<execution_mode>{bare})",
        "created": f"(?P<created>{timestamp})",
        "last_updated": f"(?P<last_updated>{timestamp})",
        "status": f"(?P<status>{session_statuses})",
        "history_head": _schema_pattern(schema, "history_head"),
        "forked_from": _checked(_schema_pattern(schema, "forked_from"), bare),
        VERSION_FIELD.attr: str(FORMAT_VERSION),
    }
    optional = {"workflow_fingerprint", "history_head", "forked_from"}
    assert set(meta) == {field.attr for field in METADATA.fields}
    metadata = "".join(
        f"(?:{_line(METADATA, f.attr, meta[f.attr])})?"
        if f.attr in optional
        else _line(METADATA, f.attr, meta[f.attr])
        for f in METADATA.fields
    )
    optional_time = f"(?:-|{timestamp})"
    row_cells = {
        "number": _POSITIVE,
        "name": cell,
        "status": phase_statuses,
        "started": optional_time,
        "completed": optional_time,
        "duration": f"(?:-|{_SECONDS})",
    }
    assert tuple(row_cells) == tuple(f.attr for f in PHASE_STATUS.fields)
    row = r"\| " + r" \| ".join(row_cells.values()) + r" \|\n"
    header = "| " + " | ".join(TABLE_COLUMNS) + " |\n"
    rule = "|" + "|".join("-" * (len(c) + 2) for c in TABLE_COLUMNS) + "|\n"
    current = {
        "number": f"(?P<number>{_WHOLE})",
        "name": f"(?P<name>{bare})",
        "status": f"(?P<state>{bare})",
        "can_resume": f"(?:{v.write_bool(True)}|{v.write_bool(False)})",
    }
    metrics = {
        "total_duration": _SECONDS,
        "total_tokens": f"(?P<tokens>{_WHOLE})",
        "total_cost": _COST,
    }
    assert tuple(current) == tuple(f.attr for f in CURRENT_PHASE.fields)
    assert tuple(metrics) == tuple(f.attr for f in METRICS.fields)
    text = (
        re.escape(f"# {TITLE}\n\n{METADATA.heading}\n")
        + metadata
        + re.escape(f"\n{PHASE_STATUS.heading}\n\n{header}{rule}")
        + f"(?:{row})*"
        + re.escape(f"\n{CURRENT_PHASE.heading}\n")
        + "".join(_line(CURRENT_PHASE, attr, value) for attr, value in current.items())
        + re.escape(f"\n{METRICS.heading}\n")
        + "".join(_line(METRICS, attr, value) for attr, value in metrics.items())
    )
    return re.compile(text)
