"""What a listing needs of a session manifest, read by one regular expression when it can be.

``haytham list`` over thousands of sessions needs a dozen values of each manifest (its ids,
status, current phase, times and totals), and the full reader (the section parser, the
field reader, the phase table, the schema check) costs far more than reading the file. A
manifest in the exact shape haytham writes is matched by the manifest's own canonical
pattern (``manifest.canonical_match``, the one that ``MANIFEST`` reads such a text with),
and only the listing's values are taken from it, without building the whole record.

So a text this reader accepts is one the full reader reads with no issue at all, and the
summary is the same (``tests/test_summary.py`` proves it on rendered records and on hand-edited
and mutated texts). Anything else (a hand edit, a first-implementation file, a quoted value,
an error) returns None, and the caller reads the file with ``MANIFEST``, which reports its
issues exactly as before.
"""

from __future__ import annotations

from typing import NamedTuple

from haytham.format.manifest import canonical_match
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
    found = canonical_match(text)
    if found is None:
        return None
    return ManifestSummary(
        found["project_id"],
        found["session_id"],
        found["user_id"],
        found["workflow_type"],
        found["execution_mode"],
        found["status"],
        int(found["current_number"]),
        found["current_name"],
        found["created"],
        found["last_updated"],
        int(found["total_tokens"]),
        float(found["total_cost"][1:]),
        found["current_status"],
    )
