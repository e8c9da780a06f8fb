"""A listing of sessions and its queries: filtered, ordered, counted and cut to a page in SQL.

``scan.iter_sessions`` checks every session's remembered summary against its files (or reads
the files) and gives a ``SessionListing``; the pages of ``haytham serve`` and ``haytham
list`` then ask it for what they show: a page of sessions in any column's order
(``page``), how many match (``count``), how many have each value of a column (``counts``),
and a page of the phases that wait for a person with their counts (``waiting``,
``waiting_counts``). Each is one query of the index (``store.index``: the ``summaries`` and
``waiting`` tables), so a page of 100 makes 100 summaries however many sessions match.

What the listing learnt from the files during its check is held beside the index in the
connection's own temporary tables (``Index.hold``): the rows it read again (``fresh``), the
remembered rows they replace or that are gone (``hidden``), and the folders it listed
(``scanned``). A listing without an index on disk holds every row so, in an index in
memory: one set of queries answers both, and both answer alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from haytham.errors import InvalidArgumentError, Issue
from haytham.format.reviewer import Reviewer, is_assigned
from haytham.frozen import frozen
from haytham.store import derived as _derived
from haytham.store import index as _index
from haytham.store.clock import sort_time
from haytham.store.lifecycle import NEEDS_A_PERSON

if TYPE_CHECKING:  # imported where a listing is queried: a command that lists nothing never pays
    import sqlite3


@frozen
class SessionSummary:
    """One line of ``haytham list``: a session as its files say it is now.

    Status, the Current Phase and the totals are derived from the checkpoints and review
    files (``lifecycle.derive``, as ``CheckpointManager.state``); the ids, user, workflow,
    mode and times are the manifest's."""

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
    """The Current Phase's lifecycle state (``awaiting_review``, ``stale``)."""
    current_reviewers: tuple[str, ...] = ()
    """Who the workflow assigns to review the Current Phase (its ``reviewers:``); none: anyone."""
    waiting: tuple[_derived.WaitingPhase, ...] = ()
    """The phases that wait for a person (``lifecycle.needs_a_person``: the Current Phase
    awaiting review or failed, every stale phase), as the review inbox shows them."""


_FIELDS = _index.SUMMARY_COLUMNS
"""The summary fields a listing keeps per session, in ``SessionSummary`` order (``path`` aside)."""
_REVIEWERS, _WAITING = _FIELDS.index("current_reviewers"), _FIELDS.index("waiting")
Row = tuple[Any, ...]
"""A listed session: its ``_FIELDS`` values, then its folder as ``parent`` and ``name`` (text)."""
_PARENT, _NAME = len(_FIELDS), len(_FIELDS) + 1
"""Where a ``Row`` (and a selected ``index.HELD_COLUMNS`` row) has the session's folder."""
assert _index.HELD_COLUMNS[_PARENT : _NAME + 1] == ("parent", "name")

SEPARATOR = _derived.SEPARATOR
"""What joins the reviewers of a summary's ``current_reviewers`` in a listing's ``counts``."""
SEARCHED = (
    "project_id",
    "session_id",
    "user_id",
    "workflow_type",
    "execution_mode",
    "status",
    "current_phase_name",
)
"""What a search (``Match.search``) looks in: what the listing knows of a session, joined by
line breaks (no file is read)."""
NEWEST_FIRST = (("last_updated", True), ("project_id", True), ("session_id", True), ("depth", True))
"""The listing's own order: newest update first, then project and session, then the deeper
folder (a project's before the root's own ``sessions``), each descending."""
_ORDERABLE = frozenset((*_FIELDS, "depth")) - {"waiting"}


@frozen
class Match:
    """Which listed sessions a query keeps: those with every value given (None: any)."""

    project_id: str | None = None
    user_id: str | None = None
    status: str | None = None
    reviewer: str | None = None
    """One of the Current Phase's assigned reviewers, as the workflow writes it."""
    assigned: Reviewer | None = None
    """Who may review the Current Phase (``format.reviewer.is_assigned``): a phase that
    names no reviewers is anyone's."""
    search: str = ""
    """A text in any of the ``SEARCHED`` values, compared case-folded."""


@frozen
class WaitingMatch:
    """Which waiting phases an inbox query keeps: those with every value given (None: any)."""

    project_id: str | None = None
    state: str | None = None
    """``awaiting_review``, ``failed`` or ``stale`` (``lifecycle.NEEDS_A_PERSON``)."""
    assigned: Reviewer | None = None
    """Who may review the phase: its workflow's ``reviewers:`` name them, or name nobody."""


WaitingItem = tuple[str, str, _derived.WaitingPhase]
"""A phase that waits for a person: its project, its session and the phase."""

T = TypeVar("T")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def waiting_rows(parent: str, name: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The ``index.WAITING_COLUMNS`` rows of a listed session (``values``: its
    ``SUMMARY_COLUMNS``), one a phase that waits for a person: what the inbox queries."""
    text = values[_WAITING]
    if not text:
        return []
    project, session = values[0], values[1]
    return [
        (
            parent,
            name,
            phase.phase,
            NEEDS_A_PERSON.index(phase.state),
            (sort_time(phase.since) - _EPOCH) // _MICROSECOND,
            project,
            session,
            phase.state,
            _derived.SEPARATOR.join(phase.reviewers),
            _derived.waiting_text((phase,)),
        )
        for phase in _derived.waiting_from_text(text)
        if phase.state in NEEDS_A_PERSON
    ]


def make_summary(row: Sequence[Any], folder: Path, name: str) -> SessionSummary:
    """The summary of a listed row (``_FIELDS`` first; what follows them is not read) of
    session folder ``name`` in ``folder``."""
    # SessionSummary(*row, path) without the frozen dataclass's __init__, which sets each of
    # its fields through object.__setattr__: the same object, field for field (the tests
    # compare them), made once a session.
    summary: SessionSummary = object.__new__(SessionSummary)
    fields = summary.__dict__
    fields.update(zip(_FIELDS, row, strict=False))  # stops after _FIELDS: the row is not copied
    fields["path"] = folder / name
    reviewers = row[_REVIEWERS]  # kept as text in a row (and the index): a tuple here
    fields["current_reviewers"] = tuple(reviewers.split(_derived.SEPARATOR)) if reviewers else ()
    waiting = row[_WAITING]  # JSON text in a row (and the index), "" for none
    fields["waiting"] = _derived.waiting_from_text(waiting) if waiting else ()
    return summary


class SessionListing:
    """The sessions under a base directory: ``len`` (how many the listing's own filter
    keeps), ``issues`` (the manifests that could not be read, and warnings of listed ones),
    and queries answered by the index (see the module doc), each summary made as it is
    reached. Iterating gives every session newest update first. ``close`` (or leaving a
    ``with`` block) lets the index go.

    With an index on disk the queries read it inside the read transaction the check took
    (``Index.snapshot``), so a page is exactly what was checked; what the check read from
    the files is held beside it. A query that fails on the index (``sqlite3.Error``) is
    answered by ``fallback``: the listing made again from the files alone.
    """

    def __init__(
        self,
        index: _index.Index,
        total: int,
        issues: list[Issue],
        *,
        remembered: bool,
        fresh: Sequence[Row] = (),
        hidden: Sequence[tuple[str, str]] = (),
        scanned: Sequence[str] | None = None,
        wanted: Match | None = None,
        fallback: Callable[[], SessionListing] | None = None,
    ) -> None:
        """``remembered``: whether the index's own ``summaries`` are listed (a listing made
        from the files alone has only ``fresh``); ``hidden``, ``scanned`` (None: every folder
        of the index): see ``Index.hold``; ``wanted``: the filter every query applies."""
        self.issues = issues
        self._index: _index.Index | None = index
        self._total = total
        self._fallback = fallback
        self._wanted = wanted or Match()
        self._remembered = remembered
        self._hiding = bool(hidden)
        self._scanned_only = scanned is not None
        self._fresh = bool(fresh)
        self._held: dict[int, Row] = {}
        self._functions: dict[Reviewer, str] = {}
        """The query function of each reviewer a query asked about (``_assigned``)."""
        index.define("haytham_casefold", 1, _casefold)
        if self._fresh or self._hiding or self._scanned_only:
            index.hold(
                (self._held_row(position, row) for position, row in enumerate(fresh)),
                (_storable(w) for row in fresh for w in waiting_rows(row[-2], row[-1], row)),
                hidden,
                scanned or (),
            )

    def _held_row(self, position: int, row: Row) -> tuple[Any, ...]:
        """``index.HELD_COLUMNS`` of a row read from the files; one whose text SQLite cannot
        keep (not valid Unicode) is kept escaped, and made from the row itself."""
        held = (*row, row[-2].count(os.sep))
        kept = _storable(held)
        if kept is held:
            return (*held, None)
        self._held[position] = row
        return (*kept, position)

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[SessionSummary]:
        return self.page()

    def __enter__(self) -> SessionListing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Let the index go."""
        if self._index is not None:
            self._index.close()
            self._index = None

    # --------------------------------------------------------------------- queries

    def page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        where: Match | None = None,
        order: Sequence[tuple[str, bool]] = NEWEST_FIRST,
    ) -> Iterator[SessionSummary]:
        """The summaries that ``where`` keeps in ``order`` (``(column, descending)`` pairs,
        then the listing's own order), from ``offset`` on, at most ``limit`` of them, made
        as they are reached. InvalidArgumentError names a column that cannot order."""
        for column, _ in order:
            if column not in _ORDERABLE:
                raise InvalidArgumentError(f"a listing cannot be ordered by {column!r}", field="order")
        named = {column for column, _ in order}
        terms = [*order, *(term for term in NEWEST_FIRST if term[0] not in named)]
        ordering = ", ".join(f"{column} {'DESC' if descending else 'ASC'}" for column, descending in terms)
        return self._page(offset, limit, where, ordering)

    def _page(
        self, offset: int, limit: int | None, where: Match | None, ordering: str
    ) -> Iterator[SessionSummary]:
        import sqlite3

        made = 0
        while True:
            try:
                params: list[Any] = []
                # _FIELDS, parent and name, then where a held row is (none are: not selected;
                # each column read costs every row of a page of 10,000 sessions)
                fresh = self._fresh
                columns = ", ".join((*_FIELDS, "parent", "name", *(("held",) if fresh else ())))
                sql = (
                    f"SELECT {columns} FROM ({self._sessions()})"
                    f" WHERE {self._where(where, params)} ORDER BY {ordering} LIMIT ? OFFSET ?"
                )
                cursor = self._db.select(sql, [*params, -1 if limit is None else limit - made, offset + made])
                folders: dict[str, Path] = {}
                for selected in cursor:
                    held = selected[-1] if fresh else None
                    row = self._held[held] if held is not None else selected
                    parent = row[_PARENT]
                    folder = folders.get(parent)
                    if folder is None:
                        folder = folders[parent] = Path(parent)
                    made += 1
                    yield make_summary(row, folder, row[_NAME])
                return
            except sqlite3.Error as error:
                self._fall_back(error)

    def count(self, where: Match | None = None) -> int:
        """How many listed sessions ``where`` keeps (``len`` when it keeps every one)."""
        if where is None or where == Match():
            return self._total
        return self._answer(self._count, where)

    def counts(self, columns: Sequence[str], where: Match | None = None) -> dict[tuple[Any, ...], int]:
        """How many listed sessions ``where`` keeps have each combination of values of
        ``columns``, by those values (one pass over the sessions, however many columns)."""
        for column in columns:
            if column not in _ORDERABLE:
                raise InvalidArgumentError(f"a listing cannot count by {column!r}", field="columns")
        return self._answer(self._counts, tuple(columns), where)

    def waiting(
        self,
        where: WaitingMatch | None = None,
        *,
        newest: bool = True,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[WaitingItem]:
        """The phases that wait for a person that ``where`` keeps, in the inbox's order: by
        state (``NEEDS_A_PERSON``), then newest waiting first (or oldest), then project,
        session and phase; from ``offset`` on, at most ``limit``."""
        return self._answer(self._waiting, where or WaitingMatch(), newest, offset, limit)

    def waiting_counts(self, where: WaitingMatch | None = None) -> dict[str, int]:
        """How many phases that ``where`` keeps wait in each state, by state."""
        return self._answer(self._waiting_counts, where or WaitingMatch())

    # ----------------------------------------------------------------- composition

    @property
    def _db(self) -> _index.Index:
        if self._index is None:
            raise InvalidArgumentError("the listing is closed: query it inside its with block")
        return self._index

    def _answer(self, query: Callable[..., T], *args: Any) -> T:
        import sqlite3

        try:
            return query(*args)
        except sqlite3.Error as error:
            self._fall_back(error)
            return query(*args)

    def _fall_back(self, error: sqlite3.Error) -> None:
        """The index failed under the listing: the files decide from now on (``error`` is
        raised when they cannot: the listing was made from them)."""
        if self._fallback is None:
            raise error
        again = self._fallback()
        self.close()
        self.__dict__.update(again.__dict__)
        self._fallback = None

    def _sessions(self) -> str:
        """The listed sessions as one query, ``HELD_COLUMNS`` each."""
        columns = ", ".join(_index.LISTED_COLUMNS)
        parts = []
        if self._remembered:
            where = " AND ".join(["listed = 1", *self._remembered_here("summaries")])
            parts.append(f"SELECT {columns}, NULL AS held FROM main.summaries WHERE {where}")
        if self._fresh:
            parts.append(f"SELECT {columns}, held FROM temp.fresh")
        return " UNION ALL ".join(parts) or f"SELECT {columns}, NULL AS held FROM main.summaries WHERE 0"

    def _remembered_here(self, table: str) -> list[str]:
        """The conditions a remembered row of ``table`` meets to be listed: its folder was
        listed, and the check did not replace it (``Index.hold``)."""
        conditions = ["parent IN (SELECT parent FROM temp.scanned)"] if self._scanned_only else []
        if self._hiding:
            conditions.append(
                "NOT EXISTS (SELECT 1 FROM temp.hidden h"
                f" WHERE h.parent = {table}.parent AND h.name = {table}.name)"
            )
        return conditions

    def _where(self, where: Match | None, params: list[Any]) -> str:
        """The SQL condition of the listing's own filter and ``where``, its values in ``params``."""
        clauses: list[str] = []
        for match in (self._wanted, where or Match()):
            for column in ("project_id", "user_id", "status"):
                value = getattr(match, column)
                if value is not None:
                    clauses.append(f"{column} = ?")
                    params.append(value)
            if match.reviewer is not None:
                clauses.append("instr(? || current_reviewers || ?, ?) > 0")
                separator = _derived.SEPARATOR
                params += [separator, separator, f"{separator}{match.reviewer}{separator}"]
            if match.assigned is not None:
                assigned = self._assigned(match.assigned)
                clauses.append(f"(current_reviewers = '' OR {assigned}(current_reviewers))")
            if match.search:
                clauses.append(f"instr(haytham_casefold({' || char(10) || '.join(SEARCHED)}), ?) > 0")
                params.append(match.search.casefold())
        return " AND ".join(clauses) or "1"

    def _assigned(self, reviewer: Reviewer) -> str:
        """The name of a query function telling whether ``reviewer`` is among reviewers
        joined by ``SEPARATOR``."""
        name = self._functions.get(reviewer)
        if name is None:
            name = self._functions[reviewer] = f"haytham_assigned_{len(self._functions)}"
            self._db.define(name, 1, lambda text: is_assigned(reviewer, text.split(_derived.SEPARATOR)))
        return name

    def _count(self, where: Match | None) -> int:
        params: list[Any] = []
        sql = f"SELECT count(*) FROM ({self._sessions()}) WHERE {self._where(where, params)}"
        return sum(int(found) for (found,) in self._db.select(sql, params))

    def _counts(self, columns: tuple[str, ...], where: Match | None) -> dict[tuple[Any, ...], int]:
        params: list[Any] = []
        named = ", ".join(columns)
        sql = (
            f"SELECT {named}, count(*) FROM ({self._sessions()}) WHERE {self._where(where, params)}"
            f" GROUP BY {named}"
        )
        return {tuple(found[:-1]): found[-1] for found in self._db.select(sql, params)}

    def _phases(self, where: WaitingMatch, params: list[Any]) -> str:
        """The waiting phases ``where`` keeps, as one query (``WAITING_COLUMNS``)."""
        columns = ", ".join(_index.WAITING_COLUMNS)
        parts = []
        if self._remembered:
            here = " AND ".join(self._remembered_here("waiting")) or "1"
            parts.append(f"SELECT {columns} FROM main.waiting WHERE {here}")
        if self._fresh:
            parts.append(f"SELECT {columns} FROM temp.fresh_waiting")
        phases = " UNION ALL ".join(parts) or f"SELECT {columns} FROM main.waiting WHERE 0"
        clauses = []
        for column in ("project_id", "state"):
            value = getattr(where, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if where.assigned is not None:
            clauses.append(f"(reviewers = '' OR {self._assigned(where.assigned)}(reviewers))")
        if self._wanted != Match():
            inner: list[Any] = []
            clauses.append(
                f"(parent, name) IN (SELECT parent, name FROM ({self._sessions()})"
                f" WHERE {self._where(None, inner)})"
            )
            params += inner
        return f"SELECT {columns} FROM ({phases}) WHERE {' AND '.join(clauses) or '1'}"

    def _waiting(
        self, where: WaitingMatch, newest: bool, offset: int, limit: int | None
    ) -> list[WaitingItem]:
        params: list[Any] = []
        direction = "DESC" if newest else "ASC"
        sql = (
            f"SELECT project_id, session_id, item FROM ({self._phases(where, params)})"
            f" ORDER BY rank, since_key {direction}, project_id, session_id, phase, parent LIMIT ? OFFSET ?"
        )
        rows = self._db.select(sql, [*params, -1 if limit is None else limit, offset])
        return [(project, session, _derived.waiting_from_text(item)[0]) for project, session, item in rows]

    def _waiting_counts(self, where: WaitingMatch) -> dict[str, int]:
        params: list[Any] = []
        sql = f"SELECT state, count(*) FROM ({self._phases(where, params)}) GROUP BY state"
        return dict(self._db.select(sql, params))


def _casefold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def _storable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` as SQLite can keep them: each text that is not valid Unicode (a folder named
    in bytes that are not UTF-8, a lone surrogate) with the invalid characters escaped."""
    try:
        for value in values:
            if type(value) is str:
                value.encode("utf-8")
    except UnicodeEncodeError:
        return tuple(
            value.encode("utf-8", "backslashreplace").decode("utf-8") if type(value) is str else value
            for value in values
        )
    return values
