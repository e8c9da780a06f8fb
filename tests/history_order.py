"""The specification of ``history.in_order``, written the slow, obvious way: each round places
every remaining entry whose parent is placed, missing or none, each id once (the first by
time, then id), and a round with nothing ready places the earliest remaining entry alone.
Tests compare the fast ordering (a chain check, then Kahn's rounds over a children map)
with it on chains, forks, cycles, duplicate ids and unknown parents."""

from __future__ import annotations

from collections.abc import Iterable

from haytham.records import HistoryEntry


def reference_order(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    """``entries`` ordered as the specification above says, in quadratic time."""
    pending = sorted(entries, key=lambda e: (e.timestamp, e.entry_id))
    known = {e.entry_id for e in pending}
    placed: set[str] = set()
    ordered: list[HistoryEntry] = []
    while pending:
        ready = [e for e in pending if e.parent is None or e.parent in placed or e.parent not in known]
        if not ready:
            ready = pending[:1]
        for entry in ready:
            if entry.entry_id not in placed:
                ordered.append(entry)
                placed.add(entry.entry_id)
        pending = [e for e in pending if e.entry_id not in placed]
    return ordered
