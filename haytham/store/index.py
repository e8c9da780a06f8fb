"""A rebuildable index of what reading session files taught, kept in SQLite beside them.

``{base_dir}/.haytham-cache/index.sqlite3`` remembers, for a file or a set of files, a result
that took reading and parsing them (a session's summary for ``list_sessions``, a session's
issues for ``validate_paths``), together with each file's identity: device, inode, size,
modification and change times in nanoseconds. A remembered result is used only while every
one of those is unchanged; otherwise the files are read again. The markdown files stay the
only source of truth: deleting the directory loses nothing, and any problem with the index
(a read-only base directory, a database that is locked, damaged or from other code) makes
haytham read the files as if there were no index.

Two rules keep a remembered result from ever hiding a change:

- A result is stored only for files whose last change is at least ``RACY_NS`` older than
  the file system's own clock (read from a marker file touched for the purpose). A file
  changed again later gets a later change time, even on a file system whose timestamps are
  coarse (FAT keeps two seconds), so its identity differs from the stored one. This is
  git's "racily clean" rule.
- The index is tied to what decides its contents (``stamp``), and to nothing else: an index
  whose stamp differs starts empty. An upgrade of haytham that changes none of them keeps
  the index, so a first ``validate`` after ``pip install -U haytham`` reads no more than the
  one before it.

What decides a remembered result, and so is in the stamp:

- ``LAYOUT_VERSION``: how the tables are laid out (bumped when a table or column changes);
- ``RULES_VERSION``: how haytham reads a session's files into a result, namely the markdown
  parsers of ``haytham.format``, the derivation of a session's state and summary
  (``haytham.store.lifecycle``, ``derived``, ``progress``) and the validation rules that are
  code (``haytham.store.validation``). Bump it in the change that makes any of these give
  another result for the same bytes;
- ``haytham.format.layout.FORMAT_VERSION``, the version of the files' format;
- the schemas and their generated predicates, by content, with the enumerations and bounds
  they are filled with (``haytham.format.schema.schemas_digest``): a changed schema or status
  list changes what is valid;
- the third-party parsers (mistune, PyYAML, jsonschema, fastjsonschema), each by its release
  (the version of the dist-info installed beside it; ``parser_identity``), found without
  importing it, and the Python version.

Not in the stamp: the rest of haytham's source. A fix in the command line, the web pages,
the runner or a message leaves every remembered result as true as it was. A workflow
definition is not in it either: what depends on one is keyed per entry
(``haytham.store.validation``).

``HAYTHAM_INDEX=0`` in the environment turns the index off.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import Issue
from haytham.format import layout
from haytham.format.layout import FORMAT_VERSION
from haytham.format.schema import schemas_digest

if TYPE_CHECKING:  # imported when an index is opened, so a run without one never pays
    import sqlite3

INDEX_DIR = layout.INDEX_DIR
INDEX_FILE = layout.INDEX_FILE
RACY_NS = 3_000_000_000
"""How much older than the file system's clock a file's last change must be to be remembered."""
LAYOUT_VERSION = 7
"""The layout of the tables; part of ``stamp``, so an index laid out by an older haytham
(whose ``summary`` entries were JSON, then rows keyed by the manifest alone, then stamped
with a hash of every source file, then rows without ``current_reviewers``, then without
``waiting``, then without the ``waiting`` table) starts empty here, and one of a newer
haytham there."""
RULES_VERSION = 2
"""The version of the rules that turn a session's bytes into what the index remembers: the
parsers, the state's derivation and the validation rules written as code (the module doc
lists them). Bump it with any change that gives another summary, digest or issue for the
same files; the schemas need no bump (``stamp`` hashes them). 2: a listing's keys digest the
stats packed as numbers, not written out (``derived.key_of``)."""
_LOCK = threading.Lock()


def enabled() -> bool:
    return os.environ.get("HAYTHAM_INDEX", "1") != "0"


def identity(st: os.stat_result) -> str:
    """What must be unchanged for a remembered result of a file to stand."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


_PARSERS = {
    "mistune": "mistune",
    "yaml": "pyyaml",
    "jsonschema": "jsonschema",
    "fastjsonschema": "fastjsonschema",
}
"""The third-party modules whose results the index keeps (markdown, YAML, the schemas'), each
with the distribution that ships it."""


def parser_identity(module: str, origin: str) -> str:
    """What a parser's results are taken to depend on: its release, ``{module}=={version}``,
    when the folder it is installed in holds the one ``{distribution}-{version}.dist-info``
    of it that installers write, so that two environments with the same release (a pipx
    haytham and a project's venv over one tree) keep one index instead of throwing each
    other's away; else the path, size and modification time of ``origin``, the file that
    defines it. Found without importing it, nor ``importlib.metadata`` (18 ms of a start)."""
    package = os.path.dirname(origin) if os.path.basename(origin).startswith("__init__.") else origin
    wanted = _PARSERS[module]
    with contextlib.suppress(OSError):
        versions = [
            entry[: -len(".dist-info")].partition("-")[2]
            for entry in os.listdir(os.path.dirname(package))
            if entry.endswith(".dist-info") and entry.partition("-")[0].lower() == wanted
        ]
        if len(versions) == 1 and versions[0]:
            return f"{module}=={versions[0]}"
    st = os.stat(origin)
    return f"{module}={origin}:{st.st_size}:{st.st_mtime_ns}"


@functools.cache
def current_stamp() -> str:
    """This haytham's ``stamp``, worked out once a process (it reads the schemas)."""
    return stamp()


def stamp(format_dir: Path | None = None) -> str:
    """A hash of what decides the index's contents (the module doc lists it), and nothing else.

    ``format_dir`` is where the schemas ship (``haytham/format``, the default): a copy of
    that folder gives the stamp another haytham would have. The schemas are hashed by content
    (a few kilobytes, read once a process), so reinstalling the same schemas keeps the index;
    a parser by its release (``parser_identity``), so importing it is not needed.
    """
    import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

    digest = hashlib.sha256(
        f"{LAYOUT_VERSION}:{RULES_VERSION}:{FORMAT_VERSION}:{sys.version_info[:2]}".encode()
    )
    digest.update((schemas_digest() if format_dir is None else schemas_digest(format_dir)).encode())
    for name in _PARSERS:
        with contextlib.suppress(ImportError, ValueError, OSError, TypeError):
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            if origin:
                digest.update(f"{parser_identity(name, origin)};".encode())
    return digest.hexdigest()[:20]


class Index:
    """One base directory's index. Use ``Index.open``; every method swallows SQLite errors."""

    def __init__(self, connection: sqlite3.Connection, clock_ns: int, file: Path | None) -> None:
        self._connection = connection
        self._file = file
        self.clock_ns = clock_ns
        """The file system's time when the index was opened."""

    @classmethod
    def open(cls, base_dir: Path, *, create: bool = True) -> Index | None:
        """The index of ``base_dir`` (made first when ``create``); None when it cannot be had."""
        import sqlite3

        if not enabled():
            return None
        directory = base_dir / INDEX_DIR
        if directory.is_symlink():
            return None  # never written through: the index is optional, a symlink is foreign
        try:
            if not directory.is_dir():
                if not create or not base_dir.is_dir():
                    return None
                directory.mkdir(exist_ok=True)
                (directory / ".gitignore").write_text("# haytham's rebuildable index\n*\n", encoding="utf-8")
            marker = directory / "clock"
            with open(marker, "a", encoding="utf-8"):
                pass
            os.utime(marker)
            clock_ns = os.stat(marker).st_mtime_ns
            connection = sqlite3.connect(
                directory / INDEX_FILE, timeout=1.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error):
            return None
        try:
            with _LOCK:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")  # a cache: no fsync per commit
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID"
                )
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS entries (kind TEXT, path TEXT, identity TEXT, value TEXT,"
                    " PRIMARY KEY (kind, path)) WITHOUT ROWID"
                )
                kept = "SELECT value FROM meta WHERE key = 'stamp'"
                if connection.execute(kept).fetchone() != (current_stamp(),):
                    connection.execute("BEGIN IMMEDIATE")
                    if connection.execute(kept).fetchone() != (current_stamp(),):  # another process did it
                        # Other code's rows are never read; its tables may be laid out otherwise.
                        connection.execute("DELETE FROM entries")
                        connection.execute("DROP TABLE IF EXISTS summaries")
                        connection.execute("DROP TABLE IF EXISTS waiting")
                        for statement in _LISTING_TABLES:
                            connection.execute(statement)
                        connection.execute(
                            "INSERT OR REPLACE INTO meta VALUES ('stamp', ?)", (current_stamp(),)
                        )
                    connection.execute("COMMIT")
        except sqlite3.Error:
            connection.close()
            return None
        return cls(connection, clock_ns, directory / INDEX_FILE)

    @classmethod
    def in_memory(cls) -> Index:
        """An index of the listing's tables alone, in memory: where a listing without an index
        on disk keeps its rows, so that every listing is queried alike (``store.listing``)."""
        import sqlite3

        connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        for statement in _LISTING_TABLES:
            connection.execute(statement)
        return cls(connection, 0, None)

    def settled(self, *change_times_ns: int) -> bool:
        """Whether files last changed at these times may be remembered (see the module doc)."""
        return max(change_times_ns, default=0) < self.clock_ns - RACY_NS

    def entries(self, kind: str) -> dict[str, tuple[str, str]]:
        """Every remembered ``path: (identity, value)`` of one kind."""
        import sqlite3

        try:
            with _LOCK:
                rows = self._connection.execute(
                    "SELECT path, identity, value FROM entries WHERE kind = ?", (kind,)
                ).fetchall()
        except sqlite3.Error:
            return {}
        return {path: (ident, value) for path, ident, value in rows}

    def entry(self, kind: str, path: str) -> tuple[str, str] | None:
        """The remembered ``(identity, value)`` of one path of one kind, or None (also when
        the index cannot be read)."""
        import sqlite3

        try:
            with _LOCK:
                return self._connection.execute(  # type: ignore[no-any-return]
                    "SELECT identity, value FROM entries WHERE kind = ? AND path = ?", (kind, path)
                ).fetchone()
        except sqlite3.Error:
            return None

    def store(self, kind: str, rows: Iterable[tuple[str, str, str]], *, forget: Iterable[str] = ()) -> None:
        """Remember ``(path, identity, value)`` rows and forget entries of ``forget`` paths."""
        import sqlite3

        rows = list(rows)
        gone = [(kind, path) for path in forget]
        if not rows and not gone:
            return
        try:
            with _LOCK:
                self._connection.execute("BEGIN IMMEDIATE")
                try:
                    self._connection.executemany("DELETE FROM entries WHERE kind = ? AND path = ?", gone)
                    self._connection.executemany(
                        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
                        [(kind, path, ident, value) for path, ident, value in rows],
                    )
                    self._connection.execute("COMMIT")
                except BaseException:
                    self._connection.execute("ROLLBACK")
                    raise
        except sqlite3.Error:
            return

    # ------------------------------------------------------------ session summaries
    #
    # A listing's rows are kept as columns (``SUMMARY_COLUMNS``), one row a session folder, and
    # the phases that wait for a person one row each (``WAITING_COLUMNS``), so that a listing's
    # queries (``select``) read back only the rows of the page they show (newest first
    # straight from ``summaries_newest``) and never hold them all. These methods raise
    # ``sqlite3.Error``: the listing falls back to the files (``haytham.store.scan``).

    def snapshot(self) -> None:
        """Start a read transaction: every read until ``close`` sees the index as it is now.
        Writes through ``write_summaries`` go on meanwhile, which needs WAL mode (without it
        this raises, and the listing reads the files)."""
        mode = self._connection.execute("PRAGMA journal_mode").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise _sqlite_error("the index is not in WAL mode")
        self._connection.execute("BEGIN")

    def summaries_in(self, parent: str, *, facts: bool = True, filtered: bool = True) -> sqlite3.Cursor:
        """``(name, identity, listed, issues, facts, user_id, status, current_reviewers)`` of
        each remembered session folder in ``parent``, by name (the order of Python's
        ``sorted``: SQLite compares text by its UTF-8 bytes, which order as the code points
        do). Without ``facts`` their column is NULL (a listing that will check few rows asks
        ``facts_of`` for those: the longest column is then not read for every row); without
        ``filtered`` the last three are left out (a listing of every session filters on none
        of them, and each column read costs every row)."""
        kept = ", user_id, status, current_reviewers" if filtered else ""
        return self._connection.execute(
            f"SELECT name, identity, listed, issues, {'facts' if facts else 'NULL'}{kept}"
            " FROM summaries WHERE parent = ? ORDER BY name",
            (parent,),
        )

    def facts_of(self, parent: str, name: str) -> str | None:
        """The remembered fact files of session folder ``{parent}/{name}`` (``summaries_in``'s
        ``facts``), or None."""
        for (found,) in self._connection.execute(
            "SELECT facts FROM summaries WHERE parent = ? AND name = ?", (parent, name)
        ):
            return found  # type: ignore[no-any-return]
        return None

    def summary_parents(self) -> list[str]:
        """Every folder of sessions the index remembers a session of (a few: one a project),
        found by stepping through the primary key rather than reading every row."""
        found: list[str] = []
        row = self._connection.execute("SELECT min(parent) FROM summaries").fetchone()
        while row is not None and row[0] is not None:
            found.append(row[0])
            row = self._connection.execute(
                "SELECT min(parent) FROM summaries WHERE parent > ?", (row[0],)
            ).fetchone()
        return found

    def write_summaries(
        self,
        rows: Iterable[tuple[Any, ...]],
        gone: Iterable[tuple[str, str]],
        gone_parents: Iterable[str] = (),
        entries: tuple[str, Iterable[tuple[str, str, str]]] | None = None,
        waiting: Iterable[tuple[Any, ...]] = (),
    ) -> bool:
        """Remember ``(parent, name, identity, facts, listed, issues, depth, *SUMMARY_COLUMNS)`` rows and
        forget the ``(parent, name)`` of ``gone`` and every row of ``gone_parents``: in one
        transaction, through a connection of its own (this one may hold a ``snapshot``).
        ``waiting``: the ``WAITING_COLUMNS`` rows of the sessions of ``rows`` (each written
        session's waiting phases replace those it had).
        ``entries``: a kind and its ``(path, identity, value)`` rows to remember too (as
        ``store``); the entries of that kind below a folder forgotten are forgotten with it.
        Errors are swallowed: a row not remembered is read again next time. Returns whether
        the rows were written (or there were none)."""
        import sqlite3

        rows, gone, gone_parents, waiting = list(rows), list(gone), list(gone_parents), list(waiting)
        kind, kept = entries if entries is not None else ("", ())
        kept = [entry for entry in kept if _valid_text(entry)]  # a path SQLite cannot keep: read again
        if not rows and not gone and not gone_parents and not kept:
            return True
        below = [os.path.join(parent, name, "") for parent, name in gone] + [
            os.path.join(parent, "") for parent in gone_parents
        ]
        marks = ", ".join("?" * (7 + len(SUMMARY_COLUMNS)))
        waiting_marks = ", ".join("?" * len(WAITING_COLUMNS))
        if self._file is None:
            raise _sqlite_error("an index in memory is filled with fill_listing")
        try:
            writer = sqlite3.connect(self._file, timeout=1.0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return False
        try:
            with _LOCK:
                writer.execute("BEGIN IMMEDIATE")
                try:
                    writer.executemany("DELETE FROM summaries WHERE parent = ? AND name = ?", gone)
                    writer.executemany("DELETE FROM summaries WHERE parent = ?", [(p,) for p in gone_parents])
                    writer.executemany(f"INSERT OR REPLACE INTO summaries VALUES ({marks})", rows)
                    writer.executemany(
                        "DELETE FROM waiting WHERE parent = ? AND name = ?",
                        [*gone, *((row[0], row[1]) for row in rows)],
                    )
                    writer.executemany("DELETE FROM waiting WHERE parent = ?", [(p,) for p in gone_parents])
                    writer.executemany(f"INSERT OR REPLACE INTO waiting VALUES ({waiting_marks})", waiting)
                    if kind:
                        writer.executemany(
                            "DELETE FROM entries WHERE kind = ? AND path >= ? AND path < ?",
                            [(kind, prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)) for prefix in below],
                        )
                        writer.executemany(
                            "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
                            [(kind, path, ident, value) for path, ident, value in kept],
                        )
                    writer.execute("COMMIT")
                except BaseException:
                    writer.execute("ROLLBACK")
                    raise
        except sqlite3.Error:
            return False
        finally:
            writer.close()
        return True

    # ------------------------------------------------------------ listing queries
    #
    # ``haytham.store.listing`` composes the queries of a listing (its filters, orders, pages
    # and counts) over ``summaries`` and ``waiting`` and what a listing holds beside them in
    # this connection's own temporary tables (``hold``). They raise ``sqlite3.Error``.

    def select(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        """The rows of one query of the listing's tables, a row at a time."""
        return self._connection.execute(sql, parameters)

    def define(self, name: str, arguments: int, function: Callable[..., Any]) -> None:
        """Make ``function`` callable in this connection's queries as ``name`` (a Python test
        of a row, such as who may review it, that SQL cannot say)."""
        self._connection.create_function(name, arguments, function, deterministic=True)

    def hold(
        self,
        fresh: Iterable[tuple[Any, ...]],
        fresh_waiting: Iterable[tuple[Any, ...]],
        hidden: Iterable[tuple[str, str]] = (),
        scanned: Iterable[str] = (),
    ) -> None:
        """Fill this connection's temporary tables (seen by no other connection, written
        without a write lock, so inside a ``snapshot`` too): ``fresh``, rows of
        ``HELD_COLUMNS`` (sessions read from their files during this listing), their
        ``waiting`` rows, the ``hidden`` ``(parent, name)`` whose remembered rows must not
        be listed, and the ``scanned`` folders whose remembered rows may be."""
        for statement in _HELD_TABLES:
            self._connection.execute(statement)
        marks = ", ".join("?" * len(HELD_COLUMNS))
        self._connection.executemany(f"INSERT INTO temp.fresh VALUES ({marks})", fresh)
        marks = ", ".join("?" * len(WAITING_COLUMNS))
        self._connection.executemany(f"INSERT INTO temp.fresh_waiting VALUES ({marks})", fresh_waiting)
        self._connection.executemany("INSERT OR IGNORE INTO temp.hidden VALUES (?, ?)", hidden)
        self._connection.executemany("INSERT OR IGNORE INTO temp.scanned VALUES (?)", ((p,) for p in scanned))

    def close(self) -> None:
        import sqlite3

        with contextlib.suppress(sqlite3.Error):
            self._connection.close()


class Keeper:
    """A connection to a base directory's index that a long-running process (``haytham
    serve``) keeps open, idle, between its listings.

    Each listing opens its own connection (``Index.open``) and closes it. When the last
    connection to a WAL database closes, SQLite checkpoints the log into the database, syncs
    it and deletes the log, and the next writer makes it again: on a busy server that was a
    sync inside a page request, and a tail of S14's listing pages (issue 26). While this
    connection stays open no listing's connection is the last one. It holds no lock and no
    transaction: writers and checkpoints go on as before. It reads one number of the
    database's header, to open it, and writes nothing."""

    def __init__(self, base_dir: Path) -> None:
        self._file = base_dir / INDEX_DIR / INDEX_FILE
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self._connection is not None

    def keep(self) -> None:
        """Open the connection if it is not open and the index exists (it is made by the
        first listing of enough sessions, ``INDEX_MIN_SESSIONS``); cheap when open."""
        if self._connection is not None or not enabled():
            return
        import sqlite3

        with self._lock:  # the pages' threads: one connection
            if self._connection is not None or self._file.parent.is_symlink() or not self._file.is_file():
                return
            try:
                connection = sqlite3.connect(
                    self._file, timeout=1.0, isolation_level=None, check_same_thread=False
                )
                connection.execute("PRAGMA user_version").fetchone()  # the log and its shared memory
            except sqlite3.Error:
                return
            self._connection = connection

    def close(self) -> None:
        import sqlite3

        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None


SUMMARY_COLUMNS = (
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
    "current_reviewers",
    "waiting",
)
"""A listed session's values, in ``haytham.store.scan.SessionSummary`` order."""
_SUMMARIES_TABLE = (
    "CREATE TABLE IF NOT EXISTS summaries (parent TEXT, name TEXT, identity TEXT, facts TEXT,"
    " listed INTEGER, issues TEXT, depth INTEGER, "
    + ", ".join(SUMMARY_COLUMNS)
    + ", PRIMARY KEY (parent, name)) WITHOUT ROWID"
)
"""One row a session folder ``{parent}/{name}`` whose manifest was read: its identity (a
listed session's: the key of its fact files, ``haytham.store.derived``; an unreadable
manifest's: its own ``identity``), the fact files' paths below the folder (NULL for an
unreadable manifest), whether it is listed (0: the manifest cannot be read, ``issues`` says
why), its issues as JSON (or NULL), how deep ``parent`` is (its separators: the last key of
the listing's order) and its summary, state derived from the files."""
_NEWEST_INDEX = (
    "CREATE INDEX IF NOT EXISTS summaries_newest ON summaries (last_updated DESC, project_id DESC,"
    " session_id DESC, depth DESC, listed, parent, name, "
    + ", ".join(c for c in SUMMARY_COLUMNS if c not in ("last_updated", "project_id", "session_id"))
    + ")"
)
"""The listing's order, covering every column a listing reads, so that rows come newest first
straight from it: no sort, no lookup in the table. Two listed sessions can tie on time,
project and session only when one is in the listing root's own ``sessions`` folder and the
other in a project folder named like the root; the deeper one comes first, as in the files'
order (``haytham.store.scan``)."""


WAITING_COLUMNS = (
    "parent",
    "name",
    "phase",
    "rank",
    "since_key",
    "project_id",
    "session_id",
    "state",
    "reviewers",
    "item",
)
"""A phase of a listed session that waits for a person, one row each (the review inbox's
items): its session folder, its number, the rank of its state in the inbox's order
(``lifecycle.NEEDS_A_PERSON``), when it began to wait as a number to sort by (microseconds
since the epoch, ``clock.sort_time``), the session's ids, its state, who is assigned to
review it (joined by a line break, "" for anyone) and the phase as the summary's ``waiting``
keeps it (JSON)."""
_WAITING_TABLE = (
    "CREATE TABLE IF NOT EXISTS waiting (parent TEXT, name TEXT, phase INTEGER, rank INTEGER,"
    " since_key INTEGER, project_id TEXT, session_id TEXT, state TEXT, reviewers TEXT, item TEXT,"
    " PRIMARY KEY (parent, name, phase)) WITHOUT ROWID"
)
_WAITING_INDEX = (
    "CREATE INDEX IF NOT EXISTS waiting_order ON waiting (rank, since_key, project_id, session_id, phase)"
)
_LISTING_TABLES = (_SUMMARIES_TABLE, _NEWEST_INDEX, _WAITING_TABLE, _WAITING_INDEX)
LISTED_COLUMNS = (*SUMMARY_COLUMNS, "parent", "name", "depth")
"""What a listing's query reads of a listed session: its summary, then its folder."""
HELD_COLUMNS = (*LISTED_COLUMNS, "held")
"""A row a listing holds (``Index.hold``): ``LISTED_COLUMNS`` and the position of the row it
was made from in the listing's own list, for a row whose text SQLite cannot keep exactly
(not valid Unicode: it is kept with the invalid characters escaped; NULL for the others)."""
_HELD_TABLES = (
    "CREATE TEMP TABLE fresh (" + ", ".join(HELD_COLUMNS) + ")",
    "CREATE TEMP TABLE fresh_waiting (" + ", ".join(WAITING_COLUMNS) + ")",
    "CREATE TEMP TABLE hidden (parent TEXT, name TEXT, PRIMARY KEY (parent, name)) WITHOUT ROWID",
    "CREATE TEMP TABLE scanned (parent TEXT PRIMARY KEY) WITHOUT ROWID",
)

INDEX_MIN_SESSIONS = 50
"""A base directory gets an index once a listing (or a validation) finds this many sessions;
an index that exists is always used."""


def issues_to_json(issues: Iterable[Issue]) -> str:
    """Issues as the index keeps them (a listed session's warnings, a validation's result)."""
    return json.dumps([_issue_data(issue) for issue in issues])


def issues_from_json(data: str) -> list[Issue]:
    """The issues ``issues_to_json`` kept."""
    return [_issue(item) for item in json.loads(data)]


def _issue_data(issue: Issue) -> list[Any]:
    where = None if issue.path is None else os.fspath(issue.path)
    return [where, issue.line, issue.field, issue.message, issue.severity]


def _issue(data: list[Any]) -> Issue:
    path, line, field, message, *severity = data  # no severity: remembered by an older haytham
    return Issue(None if path is None else Path(path), line, field, message, *severity)


def _valid_text(values: tuple[str, ...]) -> bool:
    """Whether every text of ``values`` is valid Unicode, as SQLite keeps text (a path of a
    folder named in bytes that are not UTF-8 is not)."""
    try:
        for value in values:
            value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sqlite_error(message: str) -> Exception:
    import sqlite3

    return sqlite3.OperationalError(message)
