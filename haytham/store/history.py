"""A session's history: one immutable file per checkpoint or review saved, under ``history/``.

Entries are only ever added, one small file each, so saving costs the same however long
the history is, ``git clone`` carries it, and two machines adding entries never touch the
same file. The parent links give the order; the manifest's ``History Head`` names the
newest entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import operator
import os
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii
from pathlib import Path

from haytham.errors import DocumentError, Issue
from haytham.format import HISTORY_ENTRY, ReadCache, layout
from haytham.format.guard import open_folder, read_small, read_small_in
from haytham.records import HistoryEntry, PhaseStatus
from haytham.store.clock import parse_timestamp

HISTORY_DIR = layout.HISTORY_DIR


def make_entry(
    parent: str | None,
    phase_number: int,
    phase_name: str,
    attempt: int,
    status: PhaseStatus,
    timestamp: str,
    checkpoint_text: str,
    name: str | None = None,
    reason: str | None = None,
    feedback_text: str | None = None,
    *,
    original: tuple[str, str] | None = None,
) -> HistoryEntry:
    """A new entry whose id hashes everything it records, its parent included.

    With ``feedback_text`` it is a review entry (``Kind: review``); a checkpoint entry hashes
    what it did before reviews were recorded, so older ids stay the same. ``original``: for
    the checkpoint save of a correction, the corrected agent and its output file's text
    before (``HistoryEntry.original_output``), hashed too.
    """
    entry = HistoryEntry(
        "",  # the id, which hashes the rest: set below
        parent,
        phase_number,
        phase_name,
        attempt,
        status,
        timestamp,
        name,
        reason,
        checkpoint_text,
        "checkpoint" if feedback_text is None else "review",
        feedback_text,
        None if original is None else original[0],
        None if original is None else original[1],
    )
    return dataclasses.replace(entry, entry_id=_digest(entry))


def _digest(entry: HistoryEntry) -> str:
    """The 12 hex digits of an entry's id: a hash of everything it records (the JSON text of
    the list of its values, as ``json.dumps`` writes it), its own id aside."""
    content: list[object] = [
        entry.parent,
        entry.phase_number,
        entry.phase_name,
        entry.attempt,
        entry.status,
        entry.timestamp,
        entry.name,
        entry.reason,
        entry.checkpoint_text,
    ]
    if entry.kind == "review" and entry.feedback_text is not None:
        content += ["review", entry.feedback_text]
    original = _original(entry)
    if original is not None:
        content += ["correction", *original]
    return _id_of(content)


def _id_of(content: list[object]) -> str:
    """The 12 hex digits of the SHA-256 of ``json.dumps(content)`` (``_json_list``)."""
    return hashlib.sha256(_json_list(content).encode("utf-8")).hexdigest()[:12]


def _json_list(values: list[object]) -> str:
    """``json.dumps(values)``, written here for a list of texts, None and whole numbers without
    the encoder's set-up per call (every entry of a history is hashed each time it is read);
    anything else (a bool, which is "true" in JSON, a float) by ``json.dumps`` itself
    (``encode_basestring_ascii`` refuses a value that is not text)."""
    try:
        return (
            "["
            + ", ".join(
                "null" if value is None else f"{value:d}" if type(value) is int else _quoted(value)  # type: ignore[arg-type]
                for value in values
            )
            + "]"
        )
    except TypeError:
        return json.dumps(values)


_quoted: Callable[[str], str] = encode_basestring_ascii
"""A text as ``json.dumps`` writes it (quoted, every character past ASCII escaped)."""


def file_name(entry: HistoryEntry) -> str:
    """``20241124T100000Z_3f2a9c1b04de.md``: sorts by time in a listing, unique by id."""
    compact = entry.timestamp.replace("-", "").replace(":", "")
    return f"{compact}_{entry.entry_id}.md"


def read_entries(
    session_dir: Path, *, cache: ReadCache | None = None
) -> tuple[list[HistoryEntry], list[Issue]]:
    """Every entry of the session in history order (parents before children), and issues.

    An entry whose id is not the hash of its content (cut short or edited by hand) is listed
    and is also an issue: its id no longer says what it recorded."""
    directory = session_dir / HISTORY_DIR
    folder = os.fspath(directory)
    entries: list[HistoryEntry] = []
    issues: list[Issue] = []
    read_canonical = HISTORY_ENTRY.read_canonical
    with open_folder(folder) as opened:
        for name in _entry_names(folder):
            data = _small_file(folder, opened, name)
            entry = None if data is None else read_canonical(data)
            found: list[Issue] = []
            if entry is None:  # not in render's exact shape (or not read yet): the reader decides
                entry, found = _read_entry(directory / name, data, cache)
            if entry is None:
                issues += found
                continue
            entries.append(entry)
            if not verify(entry):
                issues.append(
                    Issue(
                        directory / name,
                        None,
                        "Entry",
                        f"the entry's id {entry.entry_id} is not the hash of what it records: it was "
                        "cut short or changed by hand (history entries are never edited)",
                    )
                )
    return in_order(entries), issues


def _entry_names(folder: str) -> list[str]:
    """The ``*.md`` names of the history folder, sorted (what ``sorted(glob("*.md"))``
    gives, hidden names included, with one listing and names compared as text)."""
    try:
        names = os.listdir(folder)
    except OSError:  # none, not a folder, or unreadable: no entries, as the glob gave
        return []
    return sorted(name for name in names if name.endswith(".md"))


def _small_file(folder: str, opened: int | None, name: str) -> bytes | None:
    """The bytes of the file ``name`` of ``folder`` when it has less than 64 KiB (every entry
    haytham writes but one of a huge checkpoint), in one guarded read (by name in the folder
    ``opened``, checked once, when there is one); None for a larger file or anything else,
    which ``read_path`` then meets and reports as it always does."""
    found = read_small(os.path.join(folder, name)) if opened is None else read_small_in(opened, name)
    return None if found is None else found[0]


def _read_entry(
    path: Path, data: bytes | None, cache: ReadCache | None
) -> tuple[HistoryEntry | None, list[Issue]]:
    """``HISTORY_ENTRY.read_path(path)``, from ``data`` when the file was read already."""
    if data is None:
        return HISTORY_ENTRY.read_path(path, cache=cache)
    try:
        return HISTORY_ENTRY.read_data(data, path, cache=cache)
    except DocumentError as error:  # not UTF-8: reported as read_path reports it
        return None, [Issue(error.path, error.line, error.field, error.message)]


def in_order(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    """Parents before children; siblings (a fork in the chain) by time, then id.

    Rounds, as Kahn's algorithm by depth: round 0 holds the roots (no parent, or a parent
    that is not among the entries), round k+1 the children of the ids placed in round k;
    each round is sorted by time, then id. Each id is placed once: of hand-made duplicates
    (one file copied under another name), the first placed stands for them all. When no
    entry is ready but some remain (a cycle, which only hand edits make), the earliest
    remaining one is placed alone and the rounds go on. Every
    entry is examined a bounded number of times, so this is O(n log n) in the history's
    length (``tests/test_work_counts.py`` pins it, counting the lines this module executes).
    """
    pending = sorted(entries, key=_order_key)
    known = {e.entry_id for e in pending}
    if _is_chain(pending, known):  # the usual history: the rounds would place one entry each
        return pending
    return _rounds(pending, known)


def _rounds(pending: list[HistoryEntry], known: set[str]) -> list[HistoryEntry]:
    """``in_order``'s rounds over ``pending`` (sorted by time, then id; ``known`` its ids)."""
    children: dict[str, list[HistoryEntry]] = {}
    ready: list[HistoryEntry] = []
    for entry in pending:
        if entry.parent is None or entry.parent not in known:
            ready.append(entry)
        else:
            children.setdefault(entry.parent, []).append(entry)
    placed: set[str] = set()
    ordered: list[HistoryEntry] = []
    earliest = 0  # every entry of pending before this one has its id placed
    while len(placed) < len(known):
        if not ready:  # a cycle can only come from hand edits; keep every entry anyway
            while pending[earliest].entry_id in placed:
                earliest += 1
            ready = [pending[earliest]]
        fresh: list[str] = []
        for entry in ready:
            if entry.entry_id not in placed:
                ordered.append(entry)
                placed.add(entry.entry_id)
                fresh.append(entry.entry_id)
        following = [c for parent in fresh for c in children.get(parent, ()) if c.entry_id not in placed]
        ready = sorted(following, key=_order_key)
    return ordered


def _is_chain(pending: list[HistoryEntry], known: set[str]) -> bool:
    """Whether ``pending`` (sorted by time, then id; ``known`` its ids) is one chain in that
    order: ids unique, the first entry's parent none of them, and every other entry's
    parent the entry before it. ``in_order``'s rounds then give ``pending`` itself: each
    round holds exactly the next entry."""
    if len(known) != len(pending) or (pending and pending[0].parent in known):
        return False
    return all(entry.parent == before.entry_id for before, entry in itertools.pairwise(pending))


def newest(entries: Iterable[HistoryEntry], head: str | None) -> HistoryEntry | None:
    """The entry History Head should name: ``head`` itself when no entry descends from it,
    else the newest entry that does (a writer was killed after adding it, before the
    manifest). None when there are no entries."""
    ordered = in_order(entries)
    if not ordered:
        return None
    by_id = {e.entry_id: e for e in ordered}
    if head is not None and head not in by_id:
        return by_id.get(head)
    descendants = ordered if head is None else _descendants(ordered, head)
    if not descendants:
        return by_id[head] if head is not None else None
    return max(descendants, key=lambda e: (e.timestamp, e.entry_id))


def _descendants(entries: list[HistoryEntry], ancestor: str) -> list[HistoryEntry]:
    """The entries whose chain of parents reaches ``ancestor``: one walk down from it over
    the children, so a long history costs linear time, not one walk up per entry."""
    children: dict[str, list[HistoryEntry]] = {}
    for entry in entries:
        if entry.parent is not None:
            children.setdefault(entry.parent, []).append(entry)
    found: dict[int, HistoryEntry] = {}
    reached = {ancestor}
    pending = [ancestor]
    while pending:
        for child in children.get(pending.pop(), ()):
            found[id(child)] = child
            if child.entry_id not in reached:
                reached.add(child.entry_id)
                pending.append(child.entry_id)
    return [entry for entry in entries if id(entry) in found]


def verify(entry: HistoryEntry) -> bool:
    """Whether the entry's id is the hash of what it records (it was not cut or changed)."""
    return _digest(entry) == entry.entry_id


def _original(entry: HistoryEntry) -> tuple[str, str] | None:
    """A correction entry's agent and original output (``make_entry``'s ``original``)."""
    if entry.corrected_agent is None or entry.original_output is None:
        return None
    return entry.corrected_agent, entry.original_output


_order_key: Callable[[HistoryEntry], tuple[str, str]] = operator.attrgetter("timestamp", "entry_id")
"""An entry's place among its siblings: by time, then id."""


def select(
    entries: Iterable[HistoryEntry],
    *,
    phase: int | None = None,
    status: str | None = None,
    name: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[HistoryEntry]:
    """The entries that match every criterion given; times are ISO 8601, ``until`` inclusive."""
    low = parse_timestamp(since) if since else None
    high = parse_timestamp(until) if until else None
    chosen = []
    for entry in entries:
        if phase is not None and entry.phase_number != phase:
            continue
        if status is not None and entry.status != status:
            continue
        if name is not None and entry.name != name:
            continue
        if low or high:  # parsed only when asked for: a plain history() parses no time
            moment = parse_timestamp(entry.timestamp)
            if (low and moment < low) or (high and moment > high):
                continue
        chosen.append(entry)
    return chosen
