"""The sessions under a base directory: where they are (``session_dirs``) and their listing.

Sessions live in ``{project}/sessions/{session}`` folders that hold a manifest;
``session_dirs`` finds them with one listing of each ``sessions`` folder. ``list_sessions``
and ``iter_sessions`` (``haytham list``, the review inbox, ``prune``, ``stats``) make each
session's summary: the manifest's ids and times, the state derived from its files
(``haytham.store.derived``), remembered in the index (``haytham.store.index``) while the
files are unchanged, so a listing stays cheap for thousands of sessions. What a page shows of
the listing (filtered, ordered, counted, one page of it) is asked of the index's queries
(``haytham.store.listing``).

The walk of any paths for session files is in ``session_files``, the validation of many
sessions in ``validation``, and the checks that a path stays inside the base directory in
``names``.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import DocumentError, Issue
from haytham.format import MANIFEST
from haytham.format.guard import read_small
from haytham.format.layout import (
    MANIFEST_FILE,
    SESSIONS_DIR,
)
from haytham.format.reader import decode
from haytham.format.reviewer import Reviewer, is_assigned
from haytham.format.summary import ManifestSummary, read_summary, summary_of
from haytham.format.workflow import Workflow
from haytham.frozen import frozen
from haytham.records import SessionManifest
from haytham.store import derived as _derived
from haytham.store import index as _index
from haytham.store import orphans as _orphans
from haytham.store import progress as _progress
from haytham.store.disagreements import folder_disagreements
from haytham.store.listing import Match, Row, SessionListing, SessionSummary, waiting_rows

__all__ = [
    "Found",
    "SessionListing",
    "SessionSummary",
    "iter_sessions",
    "list_sessions",
    "session_dirs",
    "session_manifests",
]

if TYPE_CHECKING:
    from haytham.store.watch import Watcher


def session_dirs(root: Path) -> Iterator[Path]:
    """Session directories under ``root``: ``{project}/sessions/{session}`` with a manifest."""
    for directory, _, _ in session_manifests(root):
        yield directory


Found = tuple[Path, str, "os.stat_result | None"]
"""A session directory, the path of its manifest (as text) and the manifest's ``stat``."""


def session_manifests(root: Path) -> list[Found]:
    """``session_dirs(root)`` with the ``stat`` of each manifest, found with ``os.scandir``.

    The result is exactly what ``root.glob("*/sessions/*/session_manifest.md")`` and then
    ``"sessions/*/..."`` give, each sorted (or ``root`` alone when it holds a manifest);
    on an error other than a missing path the globs themselves run and the stats are None.
    """
    return [(Path(d), name, st) for d, name, st in _manifests(root)]


def _manifests(root: Path) -> list[tuple[str, str, os.stat_result | None]]:
    """``session_manifests`` with each directory as text (a listing of 100,000 sessions
    makes no ``Path`` it does not print)."""
    try:
        return _scan_manifests(root)
    except OSError:
        return [(os.fspath(d), os.path.join(d, MANIFEST_FILE), None) for d in _glob_session_dirs(root)]


def _glob_session_dirs(root: Path) -> Iterator[Path]:
    if (root / MANIFEST_FILE).is_file():
        yield root
        return
    patterns = ("*/sessions/*", "sessions/*")
    for pattern in patterns:
        for manifest in sorted(root.glob(f"{pattern}/{MANIFEST_FILE}")):
            if not any(part.startswith(".") for part in manifest.relative_to(root).parts):
                yield manifest.parent  # hidden: a folder being staged, replaced or deleted


_MISSING = (FileNotFoundError, NotADirectoryError)
"""A manifest shorter than this is read in one ``read`` (and one more that finds the end);
a longer one goes to ``MANIFEST.read_path``, which knows the size limit."""


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except _MISSING:
        return None


def _scan_manifests(root: Path) -> list[tuple[str, str, os.stat_result | None]]:
    top = os.fspath(root)
    own_name = os.path.join(top, MANIFEST_FILE)
    own = _stat_or_none(own_name)
    if own is not None and stat.S_ISREG(own.st_mode):
        return [(top, own_name, own)]
    found = _stat_or_none(top)
    if found is None or not stat.S_ISDIR(found.st_mode):
        return []
    result: list[tuple[str, str, os.stat_result | None]] = []
    with os.scandir(top) as entries:
        projects = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    for parent in [*((project, SESSIONS_DIR) for project in projects), (SESSIONS_DIR,)]:
        sessions = _scan_sessions(os.path.join(top, *parent))
        if sessions:
            prefix = os.path.join(top, *parent, "")
            result += ((prefix + name, manifest, st) for name, manifest, st in sessions)
    return result


def _scan_sessions(directory: str) -> list[tuple[str, str, os.stat_result]]:
    """Sorted ``(name, manifest path, manifest stat)`` of the directories in ``directory``
    that hold a session manifest."""
    found = _stat_or_none(directory)
    if found is None or not stat.S_ISDIR(found.st_mode):
        return []
    with os.scandir(directory) as entries:
        names = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    prefix = os.path.join(directory, "")
    suffix = os.sep + MANIFEST_FILE
    sessions = []
    for name in names:
        manifest = prefix + name + suffix
        st = _stat_or_none(manifest)
        if st is not None:
            sessions.append((name, manifest, st))
    return sessions


_FIELDS = _index.SUMMARY_COLUMNS
"""The summary fields a listing keeps per session, in ``SessionSummary`` order (``path`` aside)."""
_SESSION = 1
_USER, _STATUS = _FIELDS.index("user_id"), _FIELDS.index("status")
_WORKFLOW, _MODE = _FIELDS.index("workflow_type"), _FIELDS.index("execution_mode")
_CREATED, _TOKENS = _FIELDS.index("created"), _FIELDS.index("total_tokens")
_DERIVED_LAYOUT = ("status", "current_phase", "current_phase_name", "created", "last_updated", "total_tokens")
_REVIEWERS = _FIELDS.index("current_reviewers")
assert _FIELDS[_STATUS:] == (
    *_DERIVED_LAYOUT,
    "total_cost",
    "current_state",
    "current_reviewers",
    "waiting",
)  # as _know rebuilds a row
assert _FIELDS.index("session_id") == _SESSION


def list_sessions(
    base_dir: Path,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
    workflows: Mapping[str, Workflow] | None = None,
    reviewer: Reviewer | None = None,
) -> tuple[list[SessionSummary], list[Issue]]:
    """Summaries of the sessions under ``base_dir``, newest update first, and unreadable ones.

    ``iter_sessions`` as a list (every summary made at once).
    """
    with iter_sessions(
        base_dir,
        project_id=project_id,
        user_id=user_id,
        status=status,
        workflows=workflows,
        reviewer=reviewer,
    ) as listing:
        return list(listing), listing.issues


def iter_sessions(
    base_dir: Path,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
    workflows: Mapping[str, Workflow] | None = None,
    reviewer: Reviewer | None = None,
    watcher: Watcher | None = None,
) -> SessionListing:
    """The sessions under ``base_dir`` (optionally one project's, one user's, one status,
    those whose Current Phase ``reviewer`` may review), newest update first, as a
    ``SessionListing``; unreadable manifests are its ``issues``.

    ``reviewer`` keeps a session whose Current Phase names no ``reviewers:`` (anyone's, as a
    path with no CODEOWNERS line) or names this reviewer (``format.reviewer.is_assigned``).
    Who is assigned is remembered with the summary, so a warm listing reads no workflow.

    Each session's state (Status, Current Phase, totals) is derived from its checkpoints and
    review files through the lifecycle, as ``CheckpointManager.state`` derives it, with the
    ``workflows`` registered by name (default: the built-in ones; a session's own
    ``workflow.yaml`` comes first); ``status`` filters on that state. The manifest supplies
    the rest; a manifest in the exact shape haytham writes is read by
    ``haytham.format.summary`` (no parse), any other by the full reader.

    Each session's summary (or its issues) is remembered in the base directory's index under
    the stat signature of every fact file of the session (``haytham.store.derived``), so a
    listing of thousands of sessions derives only the sessions whose files changed: an
    unchanged session costs one ``stat`` a fact file and reads nothing.

    ``watcher`` (``haytham.store.watch``, a long-running server's): a remembered session this
    process checked already, with no file-system event for its folder since, costs no
    ``stat`` at all.
    """
    root = base_dir / project_id if project_id else base_dir
    wanted = _Filter(user_id or None, status or None, reviewer)
    deriver = _derived.Deriver(workflows)
    try:
        folders = _folders(root)
        if folders is not None:
            index = _index.Index.open(base_dir, create=False)
            if index is not None:
                import sqlite3

                try:
                    if watcher is None:
                        return _from_index(
                            index, root, folders, wanted, deriver, forget_others=root == base_dir
                        )
                    # The watcher's lock is held only to look and to settle, not while the
                    # sessions are checked: listings of a busy server overlap (issue 26).
                    look = watcher.look(deriver.salt)
                    seen = _Seen(look.changed, dict(look.verified), dict(look.recent))
                    try:
                        listing = _from_index(
                            index, root, folders, wanted, deriver, forget_others=root == base_dir, seen=seen
                        )
                    except BaseException:
                        watcher.abandon(look)
                        raise
                    watcher.settle(look, seen.verified, seen.recent)
                    return listing
                except (sqlite3.Error, OSError):
                    index.close()
        if watcher is not None:  # every file read below: the events so far are answered
            watcher.abandon(watcher.look(deriver.salt))
        return _from_files(base_dir, root, folders, wanted, deriver)
    except OSError:  # a folder that cannot be read: what the globs find, as the tree walks do
        return _from_files(base_dir, root, None, wanted, deriver, create=False)


@frozen
class _Filter:
    user_id: str | None
    status: str | None
    reviewer: Reviewer | None = None

    @property
    def everyone(self) -> bool:
        """Whether every listed session passes."""
        return self.user_id is None and self.status is None and self.reviewer is None

    @property
    def match(self) -> Match:
        """The same filter as a listing's queries apply it."""
        return Match(user_id=self.user_id, status=self.status, assigned=self.reviewer)

    def __call__(self, user: str, status: str, reviewers: str | None) -> bool:
        return (
            (self.user_id is None or user == self.user_id)
            and (self.status is None or status == self.status)
            and (
                self.reviewer is None
                or not reviewers
                or is_assigned(self.reviewer, reviewers.split(_derived.SEPARATOR))
            )
        )


_Folder = tuple[str, list[str], str]
"""A folder of sessions as text, the names of the folders in it (sorted), and the project
they belong to (the name of the folder above it)."""


def _folders(root: Path) -> list[_Folder] | None:
    """The folders of sessions under ``root`` in listing order (its projects' ``sessions``
    folders by name, then its own), each with its sorted session folder names, as
    ``session_manifests`` finds them; None when ``root`` is a session itself or cannot be
    listed (then ``session_manifests`` itself decides)."""
    top = os.fspath(root)
    own = _stat_or_none(os.path.join(top, MANIFEST_FILE))
    if own is not None and stat.S_ISREG(own.st_mode):
        return None
    found = _stat_or_none(top)
    if found is None or not stat.S_ISDIR(found.st_mode):
        return []
    try:
        with os.scandir(top) as entries:
            projects = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
        folders: list[_Folder] = []
        for parent in [*(os.path.join(top, project, SESSIONS_DIR) for project in projects), None]:
            directory = os.path.join(top, SESSIONS_DIR) if parent is None else parent
            names = _session_names(directory)
            if names:
                folders.append((directory, names, Path(directory).parent.name))
    except OSError:
        return None
    return folders


def _session_names(directory: str) -> list[str]:
    """The sorted names of the folders in ``directory`` that may be sessions (not hidden)."""
    found = _stat_or_none(directory)
    if found is None or not stat.S_ISDIR(found.st_mode):
        return []
    with os.scandir(directory) as entries:
        # the name first (a hidden one asks nothing more), a list rather than a generator:
        # a folder of 10,000 sessions is listed in 6.3 ms instead of 7.0
        return sorted([e.name for e in entries if e.name[0] != "." and e.is_dir()])


_Learnt = tuple[Row | None, list[Issue], "os.stat_result | None"]
"""What reading one manifest taught: the session's row (None when the manifest cannot be
read), its issues (errors without a row; warnings with one) and the ``stat`` of the file read."""
_Known = tuple[Row | None, list[Issue], "os.stat_result | None", "_derived.Facts | None"]
"""What learning one session taught: its row with the derived state, its issues, the
manifest's ``stat`` and the fact files whose stats key it (None: it cannot be remembered
under them, or it has no row)."""


def _know(
    parent: str, name: str, project: str, deriver: _derived.Deriver, *, identify: bool
) -> _Known | None:
    """The session in folder ``{parent}/{name}`` (of ``project``): its manifest's row with
    the state its files derive (``derived.Deriver``); None when the folder holds no manifest.
    With ``identify`` the stats of its fact files come too, for the index."""
    got = _learn(parent, name, project, identify=identify)
    if got is None:
        return None
    row, found, st = got
    if row is None:
        return row, found, st, None
    directory = os.path.join(parent, name)
    try:
        facts = _derived.gather(directory, st if identify else None, deriver.salt)
    except OSError as error:  # a folder that cannot be listed: the manifest says it all
        why = f"{error.strerror or error}; listed as its manifest says"
        return row, [*found, Issue(Path(directory), None, None, why, "warning")], st, None
    values, problem = deriver.derive(directory, row[_WORKFLOW], row[_MODE], facts)
    if problem is not None:
        found = [*found, problem]
    if values is not None:
        status, number, phase, state, tokens, cost, reviewers, waiting = values
        row = (
            *row[:_STATUS],
            status,
            number,
            phase,
            *row[_CREATED:_TOKENS],
            tokens,
            cost,
            state,
            reviewers,
            waiting,
            *row[-2:],
        )
    return row, found, st, facts


def _learn(parent: str, name: str, project: str, *, identify: bool) -> _Learnt | None:
    """Read the manifest of session folder ``{parent}/{name}`` (of ``project``); None when
    the folder holds none. With ``identify`` the file's ``stat`` comes too (from the open file)."""
    if parent and not parent.endswith(os.sep):  # what os.path.join gives, made faster
        manifest = f"{parent}{os.sep}{name}{os.sep}{MANIFEST_FILE}"
    else:
        manifest = os.path.join(parent, name, MANIFEST_FILE)
    found = read_small(manifest)
    if found is None:  # none, large, a link out, a FIFO, an error: the full reader says which
        return _learn_slowly(parent, name, project, manifest, identify=identify)
    data, st = found
    try:
        text = decode(data, None)
    except DocumentError:
        return _learn_slowly(parent, name, project, manifest, identify=identify)
    del data
    summary = read_summary(text)
    if summary is not None and summary.session_id == name and summary.project_id == project:
        return (project, name, *summary[2:], "", "", parent, name), [], st
    return (*_from_record(parent, name, project, manifest, *MANIFEST.read(text, Path(manifest))), st)


def _learn_slowly(parent: str, name: str, project: str, manifest: str, *, identify: bool) -> _Learnt | None:
    """``_learn`` through ``MANIFEST.read_path``, which reports why a file cannot be read."""
    st = _stat_or_none(manifest)
    if st is None:
        return None
    read = MANIFEST.read_path(Path(manifest))
    return (*_from_record(parent, name, project, manifest, *read), st if identify else None)


assert (*ManifestSummary._fields, "current_reviewers", "waiting") == _FIELDS  # nobody, nothing: files say


def _from_record(
    parent: str, name: str, project: str, manifest: str, record: SessionManifest | None, found: list[Issue]
) -> tuple[Row | None, list[Issue]]:
    """The row of a manifest the full reader read, or its issues. The ids are the folders'
    names, the ones every command opens the session by; a manifest that names other ids
    comes with its disagreement as a warning."""
    if record is None:
        return None, found
    problems = [
        dataclasses.replace(issue, severity="warning")
        for issue in folder_disagreements(Path(manifest), record)
    ]
    return (project, name, *summary_of(record)[2:], "", "", parent, name), problems


def _from_files(
    base_dir: Path,
    root: Path,
    folders: list[_Folder] | None,
    wanted: _Filter,
    deriver: _derived.Deriver,
    *,
    create: bool = True,
) -> SessionListing:
    """The listing read from the files alone, one compact row a session sorted in memory;
    with ``create``, a listing that finds ``index.INDEX_MIN_SESSIONS`` or more makes the
    index and fills it."""
    identify = _index.enabled()
    digests = deriver.digests = _progress.IndexedDigests(None) if create and identify else deriver.digests
    rows: list[Row] = []
    issues: list[Issue] = []
    learnt: list[tuple[str, str, os.stat_result, Row | None, list[Issue], _derived.Facts | None]] = []
    count = 0
    everyone = wanted.everyone
    for parent, name, project in _sessions_of(root, folders):
        got = _know(parent, name, project, deriver, identify=identify)
        if got is None:  # no manifest: a folder that holds files anyway is an orphan
            issues += _orphans.issues_of(parent, name)
            continue
        count += 1
        row, found, st, facts = got
        if st is not None:
            learnt.append((parent, name, st, row, found, facts))
        if row is None:
            issues += found
        elif everyone or wanted(row[_USER], row[_STATUS], row[_REVIEWERS]):
            issues += found
            rows.append(row)
    if create and count >= _index.INDEX_MIN_SESSIONS and learnt:
        index = _index.Index.open(base_dir, create=True)
        if index is not None:
            settled = index.settled
            storing = [
                stored
                for parent, name, st, row, found, facts in learnt
                if _settled(settled, st, row, facts)
                and _storable(stored := _stored(parent, name, st, row, found, facts))
            ]
            index.write_summaries(
                storing,
                (),
                entries=(_progress.DIGEST_KIND, digests.learnt(settled)),
                waiting=_waiting_of(storing),
            )
            index.close()
            del storing
    del learnt
    return SessionListing(_index.Index.in_memory(), len(rows), issues, remembered=False, fresh=rows)


def _waiting_of(stored: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The ``index.WAITING_COLUMNS`` rows of the listed sessions of ``stored`` rows (``_stored``)."""
    for parent, name, _, _, listed, _, _, *values in stored:
        if listed:
            yield from waiting_rows(parent, name, values)


def _sessions_of(root: Path, folders: list[_Folder] | None) -> Iterator[tuple[str, str, str]]:
    """``(parent, name, project)`` of each folder under ``root`` that may be a session."""
    if folders is None:
        for directory, _, _ in _manifests(root):
            path = Path(directory)
            yield os.fspath(path.parent), path.name, path.parent.parent.name
        return
    for parent, names, project in folders:
        for name in names:
            yield parent, name, project


def _settled(
    settled: Callable[..., bool], st: os.stat_result, row: Row | None, facts: _derived.Facts | None
) -> bool:
    """Whether the index may remember what was learnt of a session: a row with its fact
    files' key (no symlink among them), or a manifest that cannot be read, every file of it
    settled (``Index.settled``)."""
    if row is None:
        return settled(st.st_mtime_ns, st.st_ctime_ns)
    return facts is not None and facts.storable and settled(st.st_mtime_ns, st.st_ctime_ns, facts.newest_ns)


def _stored(
    parent: str,
    name: str,
    st: os.stat_result,
    row: Row | None,
    found: list[Issue],
    facts: _derived.Facts | None,
) -> tuple[Any, ...]:
    """The index row (``Index.write_summaries``) of what learning one session taught: a
    listed session under the key of its fact files (their names kept beside it), a manifest
    that cannot be read under its own identity."""
    values = (None,) * len(_FIELDS) if row is None else row[:-2]
    issues = _index.issues_to_json(found) if found else None
    if row is None or facts is None:
        key, names = _index.identity(st), None
    else:
        key, names = facts.key, _derived.SEPARATOR.join(facts.names)
    return (parent, name, key, names, int(row is not None), issues, parent.count(os.sep), *values)


def _storable(stored: tuple[Any, ...]) -> bool:
    """Whether SQLite can keep the row: every text of it is valid Unicode (a folder named in
    bytes that are not UTF-8, or a value quoted with a lone surrogate, is read every time)."""
    try:
        for value in stored:
            if type(value) is str:
                value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class _Seen:
    """What a ``Watcher`` told a listing: the session folders with events since the last
    listing (None: every one), and the key each session's files had when last checked."""

    changed: set[str] | None
    verified: dict[tuple[str, str], str]
    recent: dict[str, tuple[Any, ...]]
    """What was learnt of each session folder too new for the index (``Watcher.recent``)."""


def _from_index(
    index: _index.Index,
    root: Path,
    folders: list[_Folder],
    wanted: _Filter,
    deriver: _derived.Deriver,
    *,
    forget_others: bool,
    seen: _Seen | None = None,
) -> SessionListing:
    """The listing with an index: each remembered session whose fact files are unchanged
    (one ``stat`` each, ``derived.still``) is counted and left in the index; the others are
    read and derived, remembered (once settled) and held beside the index as rows
    (``Index.hold``); the listing's queries then read the index with them, inside one read
    transaction (``listing.SessionListing``).
    With ``seen``, a remembered session whose row is the one last checked, and whose folder
    had no event since, is not checked again (no ``stat``); nor is a session read by an
    earlier listing while its files were too new to remember (``Watcher.recent``): what was
    learnt of it then stands until an event comes for its folder, or until it settles and is
    remembered.
    Raises ``sqlite3.Error``."""
    index.snapshot()
    changed_folders = None if seen is None else seen.changed
    verified: dict[tuple[str, str], str] = {} if seen is None else seen.verified
    trusted = verified.get if changed_folders is not None else None
    recent: dict[str, tuple[Any, ...]] = {} if seen is None else seen.recent
    if changed_folders is None:
        recent.clear()
    else:
        for folder in changed_folders:
            recent.pop(folder, None)
    checked: list[tuple[tuple[str, str], str]] = []
    digests = deriver.digests = _progress.IndexedDigests(index)
    issues: list[Issue] = []
    fresh: list[Row] = []
    learnt: list[tuple[Any, ...]] = []
    gone: list[tuple[str, str]] = []
    changed: set[tuple[str, str]] = set()
    total = 0
    identity = _index.identity
    still, salt = _derived.still, deriver.salt
    everyone = wanted.everyone
    stat_of = os.stat
    lazy = trusted is not None  # most rows trusted: the facts of the few checked are asked for
    for parent, names, project in folders:
        known = (
            index.summaries_in(parent, facts=not lazy, filtered=not everyone)
            if _storable((parent,))
            else iter(())
        )
        kept = next(known, None)
        prefix = os.path.join(parent, "")
        suffix = os.sep + MANIFEST_FILE
        for name in names:  # the hot loop of a warm listing: a stat a fact file, one comparison
            while kept is not None and kept[0] < name:
                gone.append((parent, kept[0]))
                kept = next(known, None)
            remembered = None
            if kept is not None and kept[0] == name:
                remembered, kept = kept, next(known, None)
                folder = prefix + name
                if recent and folder in recent:
                    now = ""  # learnt since this row, no event since: the learnt one stands
                elif (
                    trusted is not None
                    and trusted((parent, name)) == remembered[1]
                    and folder not in changed_folders
                ):
                    now = remembered[1]  # checked before, no event since: unchanged
                else:
                    if seen is not None:
                        verified.pop((parent, name), None)
                    try:
                        st = stat_of(folder + suffix)
                    except _MISSING:
                        gone.append((parent, name))
                        issues += _orphans.issues_of(parent, name)
                        continue
                    facts = index.facts_of(parent, name) if lazy else remembered[4]
                    now = identity(st) if facts is None else still(folder, st, facts, salt)
                    if now == remembered[1] and seen is not None:
                        verified[(parent, name)] = now
                if now == remembered[1]:
                    if remembered[3] is None and remembered[2] and everyone:
                        total += 1
                    elif not remembered[2]:
                        issues += _index.issues_from_json(remembered[3])
                    elif everyone or wanted(remembered[5], remembered[6], remembered[7]):
                        total += 1
                        if remembered[3]:
                            issues += _index.issues_from_json(remembered[3])
                    continue
                changed.add((parent, name))
            got = recent.pop(prefix + name, None) or _know(parent, name, project, deriver, identify=True)
            if got is None:
                issues += _orphans.issues_of(parent, name)
                if remembered is not None:
                    gone.append((parent, name))
                continue
            row, found, st, learnt_facts = got
            stored = None
            if st is not None and _settled(index.settled, st, row, learnt_facts):
                stored = _stored(parent, name, st, row, found, learnt_facts)
                if _storable(stored):
                    learnt.append(stored)
                    if seen is not None:
                        checked.append(((parent, name), stored[2]))
                else:
                    stored = None
            if stored is None and seen is not None:
                recent[prefix + name] = got  # not remembered yet: trusted until an event
            if row is None:
                issues += found
            elif wanted(row[_USER], row[_STATUS], row[_REVIEWERS]):
                total += 1
                issues += found
                fresh.append(row)
        while kept is not None:
            gone.append((parent, kept[0]))
            kept = next(known, None)
    scanned = {parent for parent, _, _ in folders}
    others = [p for p in index.summary_parents() if p not in scanned] if forget_others else []
    written = index.write_summaries(
        learnt,
        gone,
        others,
        (_progress.DIGEST_KIND, digests.learnt(index.settled)),
        waiting=_waiting_of(learnt),
    )
    if written:  # trusted from now on only as the index remembers it
        verified.update(checked)
    del learnt
    hidden = sorted(changed.union(gone))
    every = forget_others and not others  # the index holds rows of the scanned folders alone
    return SessionListing(
        index,
        total,
        issues,
        remembered=True,
        fresh=fresh,
        hidden=hidden,
        scanned=None if every else sorted(scanned),
        wanted=wanted.match,
        fallback=lambda: _from_files(root, root, folders, wanted, deriver, create=False),
    )
