"""Whole-tree operations: list the sessions under a base directory, validate any path.

Listing reads only manifests, so it stays cheap for thousands of sessions; validation
accepts what a linter would: the base dir, a project, a session or a single file.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haytham.errors import Issue
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.format.document import COUNTERS
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    FEEDBACK_FILE,
    HISTORY_DIR,
    HISTORY_ENTRY_NAME,
    MANIFEST_FILE,
    OWN_SESSION_FILES,
    PHASE_DIR_PREFIX,
    SESSIONS_DIR,
)
from haytham.records import SessionManifest
from haytham.store import index as _index
from haytham.store.disagreements import folder_disagreements
from haytham.store.fs import LOCK_NAME, TMP_SUFFIX
from haytham.store.names import check_inside


@dataclass(frozen=True)
class SessionSummary:
    """One line of ``haytham list``: a session as its manifest describes it."""

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
    path: Path
    current_state: str = ""
    """The Current Phase's lifecycle state in words (``stale (built on phase 2, ...)``)."""


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


def _stat_or_none(path: str) -> os.stat_result | None:
    COUNTERS.stated += 1
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
    COUNTERS.listed += 1
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
    COUNTERS.listed += 1
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


INDEX_MIN_SESSIONS = 50
"""A base directory gets an index (``haytham/_index.py``) once a listing finds this many
sessions; an index that exists is always used."""


_FIELDS = (
    "project_id",
    "session_id",
    "user_id",
    "workflow_type",
    "execution_mode",
    "status",
    "current_phase",
    "current_phase_name",
    "created",
    "last_updated",
    "total_tokens",
    "total_cost",
    "current_state",
)
"""The summary fields a listing keeps per session, in ``SessionSummary`` order (``path`` aside)."""
_UPDATED, _PROJECT, _SESSION = _FIELDS.index("last_updated"), 0, 1


class SessionListing:
    """The sessions under a base directory, newest update first: ``len``, and rows that are
    made one at a time as they are iterated.

    A listing must see every manifest before it can say which is newest, so it keeps one
    compact row a session (a tuple of the summary's values and the directory as text), and
    makes each ``SessionSummary`` (a dataclass with a ``Path``) only when it is reached:
    ``haytham list`` prints each row as it comes and never holds a table of them. Memory is
    still linear in the sessions: while the index's rows are read, about 3 KB a session
    (``benchmarks/bench.py`` S4). ``issues`` are the manifests that could not be read.
    """

    def __init__(self, rows: list[tuple[Any, ...]], issues: list[Issue]) -> None:
        self._rows = rows
        self.issues = issues

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[SessionSummary]:
        return self.page()

    def page(self, offset: int = 0, limit: int | None = None) -> Iterator[SessionSummary]:
        """The summaries from ``offset`` on, at most ``limit`` of them, made as they are reached."""
        stop = len(self._rows) if limit is None else min(len(self._rows), offset + limit)
        for position in range(offset, stop):
            row = self._rows[position]
            values = dict(zip(_FIELDS, row, strict=False))
            yield SessionSummary(**values, path=Path(row[-1]))


def list_sessions(
    base_dir: Path,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
) -> tuple[list[SessionSummary], list[Issue]]:
    """Summaries of the sessions under ``base_dir``, newest update first, and unreadable ones.

    ``iter_sessions`` as a list (every summary made at once).
    """
    listing = iter_sessions(base_dir, project_id=project_id, user_id=user_id, status=status)
    return list(listing), listing.issues


def iter_sessions(
    base_dir: Path,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
) -> SessionListing:
    """The sessions under ``base_dir`` (optionally one project's, one user's, one status),
    newest update first, as a ``SessionListing``; unreadable manifests are its ``issues``.

    Each manifest's summary (or its issues) is remembered in the base directory's index and
    used again while the manifest file is unchanged, so a listing of thousands of sessions
    reads only the manifests that changed. The work is one ``stat`` a session, plus one read
    of each manifest the index does not know.
    """
    root = base_dir / project_id if project_id else base_dir
    found = _manifests(root)
    index = _index.Index.open(base_dir, create=len(found) >= INDEX_MIN_SESSIONS)
    known = index.entries("summary") if index is not None else {}
    learnt: list[tuple[str, str, str]] = []
    results: list[Any] = [None] * len(found)
    remembered: list[tuple[int, str]] = []
    for position, (directory, name, st) in enumerate(found):
        ident = ""
        if index is not None and st is not None:
            ident = _index.identity(st)
            kept = known.get(name)
            if kept is not None and kept[0] == ident:
                remembered.append((position, kept[1]))
                continue
        result = results[position] = _summary_data(Path(directory), *MANIFEST.read_path(Path(name)))
        if index is not None and st is not None and index.settled(st.st_mtime_ns, st.st_ctime_ns):
            learnt.append((name, ident, json.dumps(result)))
    if remembered:  # one json.loads for all of them is much cheaper than one each
        values = json.loads("[" + ",".join(value for _, value in remembered) + "]")
        for (position, _), value in zip(remembered, values, strict=True):
            results[position] = value
        del values, remembered
    if index is not None:
        listed = {name for _, name, _ in found}
        index.store("summary", learnt, forget=set(known) - listed if root == base_dir else ())
        index.close()
        del known, learnt
    rows: list[tuple[Any, ...]] = []
    issues: list[Issue] = []
    for position, (directory, _, _) in enumerate(found):
        result = results[position]
        results[position] = None  # the row replaces it: one copy at a time
        if "issues" in result:
            issues += [_issue(data) for data in result["issues"]]
            continue
        if (user_id and result["user_id"] != user_id) or (status and result["status"] != status):
            continue
        issues += [_issue(data) for data in result.get("problems", ())]
        rows.append((*(result.get(field, "") for field in _FIELDS), directory))
    rows.sort(key=lambda r: (r[_UPDATED], r[_PROJECT], r[_SESSION]), reverse=True)
    return SessionListing(rows, issues)


def _summary_data(directory: Path, manifest: SessionManifest | None, found: list[Issue]) -> dict[str, Any]:
    """What a listing needs of one manifest, as JSON data: its summary, or its issues.

    The ids are the folders' names, the ones every command opens the session by; a manifest
    that names other ids adds its disagreement as a warning (``problems``)."""
    if manifest is None:
        return {"issues": [_issue_data(issue) for issue in found]}
    problems = [
        dataclasses.replace(issue, severity="warning")
        for issue in folder_disagreements(directory / MANIFEST_FILE, manifest)
    ]
    return {
        **({"problems": [_issue_data(issue) for issue in problems]} if problems else {}),
        "project_id": directory.parent.parent.name,
        "session_id": directory.name,
        "user_id": manifest.user_id,
        "workflow_type": manifest.workflow_type,
        "execution_mode": manifest.execution_mode,
        "status": manifest.status,
        "current_phase": manifest.current.number,
        "current_phase_name": manifest.current.name,
        "current_state": manifest.current.status,
        "created": manifest.created,
        "last_updated": manifest.last_updated,
        "total_tokens": manifest.metrics.total_tokens,
        "total_cost": manifest.metrics.total_cost,
    }


def _issue_data(issue: Issue) -> list[Any]:
    where = None if issue.path is None else os.fspath(issue.path)
    return [where, issue.line, issue.field, issue.message, issue.severity]


def _issue(data: list[Any]) -> Issue:
    path, line, field, message, *severity = data  # no severity: remembered by an older haytham
    return Issue(None if path is None else Path(path), line, field, message, *severity)


def kind_of(path: Path) -> DocumentFormat[object] | None:
    """The document kind of a session file, judged by its name and place; None if not one."""
    if path.suffix != ".md" or path.name.startswith("."):
        return None
    if path.name == MANIFEST_FILE:
        return MANIFEST  # type: ignore[return-value]
    if path.parent.name == HISTORY_DIR:
        # A session's entries are named by time and id; a project's history/changelog.md is
        # not a session file.
        is_entry = HISTORY_ENTRY_NAME.fullmatch(path.name) is not None
        return HISTORY_ENTRY if is_entry else None  # type: ignore[return-value]
    if not (path.parent.name.startswith(PHASE_DIR_PREFIX) or path.parent.parent.name == ATTEMPTS_DIR):
        return None
    if path.name == CHECKPOINT_FILE:
        return CHECKPOINT  # type: ignore[return-value]
    if path.name == FEEDBACK_FILE:
        return FEEDBACK  # type: ignore[return-value]
    return AGENT_OUTPUT  # type: ignore[return-value]


def session_files(paths: Iterable[Path], *, outside: Collection[Path] = ()) -> Iterator[Path]:
    """Every session file under ``paths`` (a file is taken as it is), each once, in order.

    Files inside a directory of ``outside`` (some ``d in file.parents``) are left out, and
    such directories are not even walked.
    """
    skip = set(outside)
    seen: set[Path] = set()
    for path in paths:
        if skip and (path in skip or not skip.isdisjoint(path.parents)):
            continue
        candidates = [path] if path.is_file() else sorted(_markdown_files(path, skip))
        for candidate in candidates:
            if candidate not in seen and kind_of(candidate) is not None:
                seen.add(candidate)
                yield candidate


_IGNORED_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _markdown_files(root: Path, skip: set[Path]) -> list[Path]:
    """``root.rglob("*.md")`` (any entry named ``*.md``; symlinked directories are not
    entered, unreadable ones are passed over) without descending into ``skip``."""
    if not root.is_dir():
        return []
    found: list[Path] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        COUNTERS.listed += 1
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except PermissionError:
            continue
        for entry in entries:
            name = entry.name
            if name.endswith(".md"):
                found.append(directory / name)
            try:
                is_dir = entry.is_dir()
            except OSError as error:
                if error.errno not in _IGNORED_ERRNOS:
                    raise
                continue
            if is_dir and not entry.is_symlink():
                child = directory / name
                if child not in skip:
                    pending.append(child)
    return found


def validate_sessions(
    directories: Iterable[Path],
    validate: Callable[[Path], list[Issue]],
    workflows: str,
    *,
    progress: Callable[[int], None] | None = None,
) -> list[Issue]:
    """``validate(directory)`` for each session directory, in order, remembered in the
    index of its base directory while none of the session's files changes.

    ``workflows`` names the workflow definitions the validation used (a fingerprint): a
    result is used again only with the same definitions. A session holding a symlink is
    always validated afresh. Each base directory's index is opened and read once for the
    whole run; ``progress(done)`` is called after each session.
    """
    directories = list(directories)
    bases: dict[Path, list[Path]] = {}
    for directory in directories:
        bases.setdefault(_base_of(directory), []).append(directory)
    indexes = {
        base: _index.Index.open(base, create=len(group) >= INDEX_MIN_SESSIONS)
        for base, group in bases.items()
    }
    issues: list[Issue] = []
    known = {base: index.entries("validate") for base, index in indexes.items() if index is not None}
    learnt: dict[Path, list[tuple[str, str, str]]] = {base: [] for base in known}
    for done, directory in enumerate(directories, 1):
        issues += _validate_one(directory, validate, workflows, indexes, known, learnt)
        if progress is not None:
            progress(done)
    for base, index in indexes.items():
        if index is not None:
            seen = {os.fspath(d) for d in bases[base]}
            bulk = len(seen) >= INDEX_MIN_SESSIONS  # a big run also forgets sessions that are gone
            gone = [
                name for name in known.get(base, {}) if bulk and name not in seen and not os.path.isdir(name)
            ]
            index.store("validate", learnt.get(base, ()), forget=gone)
            index.close()
    return issues


def _validate_one(
    directory: Path,
    validate: Callable[[Path], list[Issue]],
    workflows: str,
    indexes: dict[Path, _index.Index | None],
    known: dict[Path, dict[str, tuple[str, str]]],
    learnt: dict[Path, list[tuple[str, str, str]]],
) -> list[Issue]:
    """One session of ``validate_sessions``: remembered, or validated (and learnt)."""
    base = _base_of(directory)
    index = indexes[base]
    name = os.fspath(directory)
    state = _session_state(name, workflows) if index is not None else None
    if index is not None and state is not None:
        kept = known[base].get(name)
        if kept is not None and kept[0] == state[0]:
            return [_issue(data) for data in json.loads(kept[1])]
    found = validate(directory)
    if index is not None and state is not None and index.settled(state[1]):
        learnt[base].append((name, state[0], json.dumps([_issue_data(i) for i in found])))
    return found


def _base_of(session_dir: Path) -> Path:
    """The base directory of ``{base}/{project}/sessions/{session}``."""
    parents = session_dir.parents
    return parents[2] if len(parents) > 2 else session_dir


def _session_state(directory: str, workflows: str) -> tuple[str, int] | None:
    """A digest of every file of a session directory (name, device, inode, size, times) and
    the newest change time among them; None when the directory holds a symlink."""
    entries: list[tuple[str, str]] = []
    newest = 0
    pending = [("", directory)]
    while pending:
        relative, path = pending.pop()
        COUNTERS.listed += 1
        with os.scandir(path) as listing:
            for entry in listing:
                name = entry.name
                if name == LOCK_NAME or (name.startswith(".") and name.endswith(TMP_SUFFIX)):
                    continue  # the lock and temporary files are never read by a validation
                if entry.is_symlink():
                    return None
                child = f"{relative}/{name}"
                if entry.is_dir():
                    entries.append((child, "dir"))
                    pending.append((child, entry.path))
                    continue
                st = entry.stat()
                COUNTERS.stated += 1
                entries.append((child, _index.identity(st)))
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    entries.sort()
    digest = hashlib.sha256(f"{workflows}\n{entries!r}".encode()).hexdigest()
    return digest, newest


def check_below(base_dir: Path, path: Path) -> Path:
    """``check_inside(base_dir, path)`` for a ``path`` built as ``base_dir`` joined with plain
    names: one ``lstat`` per name below ``base_dir`` instead of resolving every component of
    both paths. When none of those names is a symlink the path resolves to the resolved base
    directory plus the names, so it is inside; otherwise ``check_inside`` itself decides."""
    base_parts = base_dir.parts
    parts = path.parts
    if parts[: len(base_parts)] != base_parts or ".." in parts:
        return check_inside(base_dir, path)
    current = os.fspath(base_dir)
    for name in parts[len(base_parts) :]:
        current = os.path.join(current, name)
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            continue  # resolving goes on with the name as it is, as realpath does
        if stat.S_ISLNK(mode):
            return check_inside(base_dir, path)
    return path


class PhaseDirs:
    """A session's phase directories, each checked as ``check_inside`` checks it, without
    resolving the session directory again for every phase.

    ``check_inside(base, session / name)`` resolves every component of the path. When ``name``
    is one plain component that is not a symlink, the result is the resolved session
    directory plus ``name``, so it is inside ``base`` exactly when the session directory is;
    anything else (a symlink, an odd name, a session outside) takes ``check_inside`` itself.
    ``session_checked`` says the caller has just checked the session directory itself.
    """

    def __init__(self, base_dir: Path, session_dir: Path, *, session_checked: bool = False) -> None:
        self.base_dir = base_dir
        self.session_dir = session_dir
        if session_checked:
            self._inside = True
        else:
            root = base_dir.resolve()
            home = session_dir.resolve()
            self._inside = home == root or root in home.parents

    def get(self, name: str) -> tuple[Path, bool]:
        """The phase directory ``name`` (checked) and whether it is an existing directory."""
        path = self.session_dir / name
        plain = name not in ("", ".", "..") and "/" not in name and (os.altsep or "/") not in name
        if self._inside and plain:
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return path, False
            if not stat.S_ISLNK(mode):
                return path, stat.S_ISDIR(mode)
        checked = check_inside(self.base_dir, path)
        return checked, checked.is_dir()


def agent_files(directory: Path, order: Sequence[str] = ()) -> list[Path]:
    """Agent output files of a phase directory: ``*.md`` except the phase's own and hidden
    files, those named in ``order`` first, then the rest by name.

    Read with one ``os.scandir`` (whose entries know their type), not a ``stat`` per file.
    """
    with os.scandir(directory) as entries:
        return agents_among(directory, list(entries), order)


def agents_among(
    directory: Path, entries: Sequence[os.DirEntry[str]], order: Sequence[str] = ()
) -> list[Path]:
    """``agent_files`` of ``directory`` from its ``entries``, listed already by the caller."""
    rank = {name: index for index, name in enumerate(order)}
    names = [
        e.name
        for e in entries
        if e.name.endswith(".md")
        and not e.name.startswith(".")
        and e.name not in OWN_SESSION_FILES
        and e.is_file()
    ]
    names.sort(key=lambda n: (rank.get(n[:-3], len(rank)), n))
    return [directory / name for name in names]
