"""A listing's queries (``store.listing``) give what sorting and filtering every summary gives.

The inbox and the sessions page used to make a summary of every session and filter, sort and
cut them in Python; the listing now does it in SQL over the index (or over an index in
memory when there is none). These tests keep the Python way as the oracle: every page of
every order and filter, put together, is exactly the old result, with the index on disk, with
none, and with a session changed since the index learnt it. Nothing is timed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_demo import grow
from workcount import WorkCounters

from haytham import CheckpointManager
from haytham.errors import InvalidArgumentError
from haytham.format.reviewer import parse_reviewer
from haytham.run.demo import run_demo
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.store import scan
from haytham.store.clock import sort_time
from haytham.store.lifecycle import NEEDS_A_PERSON
from haytham.store.listing import Match, SessionSummary, WaitingMatch

P = "demo"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A varied tree of 60 sessions (awaiting review, completed, failed, stale, two users,
    tokens of every size) whose files the index may remember at once."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "s-000", review="manual").status == "awaiting_review"
    grow(base, 50)  # copies: equal in everything but their ids (ties to break)
    for number, review in enumerate(("approve", "manual", "reject", "manual", "approve")):
        run_demo(manager, f"run-{number}", review=review, project_id="other" if number % 2 else P)
    done = "run-0"
    agent = manager.load_checkpoint(P, done, 1).agents[0].agent_name
    manager.save_agent_output(P, done, 1, agent, "# Changed after its review\n")  # later phases stale
    manager.save_checkpoint(P, done, 1, "completed", [{"agent_name": agent, "status": "completed"}])
    for number, user in enumerate(("ada", "grace", "ada")):
        manager.create_session(P, f"broken-{number}", user, "idea_validation")
        manager.save_checkpoint(P, f"broken-{number}", 1, "failed", [], errors=["the model timed out"])
    return base


ORDERS = tuple(
    (*((column, descending) for column in columns), ("project_id", descending), ("session_id", descending))
    for columns, descending in (
        (("last_updated",), True),
        (("session_id", "project_id"), False),
        (("project_id", "session_id"), True),
        (("total_tokens",), False),
        (("total_cost",), True),
        (("status",), False),
        (("current_phase",), True),
        (("user_id",), False),
    )
)
"""Each column of the sessions page in its default direction, then project and session (as
``pages.SessionsQuery.ordering`` gives them)."""
MATCHES = (
    Match(),
    Match(project_id="other"),
    Match(status="awaiting_review"),
    Match(user_id="grace"),
    Match(search="RUN-"),
    Match(search="s-04"),
    Match(status="failed", search="broken"),
    Match(assigned=parse_reviewer("ada")),
)


def oracle(every: list[SessionSummary], match: Match, order: tuple[tuple[str, bool], ...]) -> list[str]:
    """The sessions page's old way: filter every summary (newest first), sort with Python's
    stable sort, one key at a time from the last."""
    kept = [
        s
        for s in every
        if (match.project_id is None or s.project_id == match.project_id)
        and (match.user_id is None or s.user_id == match.user_id)
        and (match.status is None or s.status == match.status)
        and (not match.search or match.search.casefold() in searched(s))
    ]
    for column, descending in reversed(order):
        kept.sort(key=lambda s: getattr(s, column), reverse=descending)
    return [f"{s.project_id}/{s.session_id}" for s in kept]


def searched(s: SessionSummary) -> str:
    fields = (s.project_id, s.session_id, s.user_id, s.workflow_type, s.execution_mode, s.status)
    return "\n".join((*fields, s.current_phase_name)).casefold()


def paged(listing: scan.SessionListing, match: Match, order: Any, size: int) -> Iterator[str]:
    total = listing.count(match)
    for offset in range(0, total + size, size):
        page = list(listing.page(offset, size, where=match, order=order))
        assert len(page) == max(0, min(size, total - offset))
        yield from (f"{s.project_id}/{s.session_id}" for s in page)


def sessions_answers(base: Path) -> dict[tuple[int, int], list[str]]:
    manager = CheckpointManager(base)
    with scan.iter_sessions(base, workflows=manager.workflows) as listing:
        return {
            (m, o): list(paged(listing, match, order, 7))
            for m, match in enumerate(MATCHES)
            for o, order in enumerate(ORDERS)
        }


def test_every_page_of_every_order_and_filter_is_what_sorting_every_summary_gives(base: Path) -> None:
    manager = CheckpointManager(base)
    every = scan.list_sessions(base, workflows=manager.workflows)[0]
    assert {s.status for s in every} >= {"awaiting_review", "completed", "failed"}
    for _ in range(2):  # the first listing learns the files, the second answers from the index
        answers = sessions_answers(base)
        for (m, o), found in answers.items():
            match, order = MATCHES[m], ORDERS[o]
            if match.assigned is None:
                assert found == oracle(every, match, order), (match, order)
    assert (base / _index.INDEX_DIR / _index.INDEX_FILE).is_file()


def test_the_index_in_memory_answers_as_the_index_on_disk(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions_answers(base)
    on_disk = sessions_answers(base)
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    assert sessions_answers(base) == on_disk


def test_a_changed_session_is_queried_as_its_files_say_now(base: Path) -> None:
    """A session read again during the check (held beside the index) and one gone sort and
    count among the remembered ones as they are now, not as the index remembered them."""
    manager = CheckpointManager(base)
    sessions_answers(base)
    manager.save_user_feedback(P, "s-007", 1, True, True)  # approved: no longer awaiting review
    os.rename(base / P / "sessions" / "s-008", base / P / "sessions" / ".s-008-aside")
    every = scan.list_sessions(base, workflows=manager.workflows)[0]
    with scan.iter_sessions(base, workflows=manager.workflows) as listing:
        awaiting = Match(status="awaiting_review")
        found = list(paged(listing, awaiting, ORDERS[1], 5))
        assert f"{P}/s-007" not in found and f"{P}/s-008" not in found
        assert found == oracle(every, awaiting, ORDERS[1])
        assert listing.count() == len(every) == len(listing)


def inbox_oracle(
    every: list[SessionSummary], where: WaitingMatch, newest: bool
) -> list[tuple[str, str, int]]:
    """The inbox's old way: every waiting phase of every summary, sorted three times."""
    items = [
        (s.project_id, s.session_id, w)
        for s in every
        for w in s.waiting
        if (where.project_id is None or s.project_id == where.project_id)
        and (where.state is None or w.state == where.state)
    ]
    items.sort(key=lambda i: (i[0], i[1], i[2].phase))
    items.sort(key=lambda i: sort_time(i[2].since), reverse=newest)
    items.sort(key=lambda i: NEEDS_A_PERSON.index(i[2].state))  # type: ignore[arg-type]
    return [(project, session, w.phase) for project, session, w in items]


@pytest.mark.parametrize("index", ["1", "0"], ids=["index", "no-index"])
def test_every_page_of_the_inbox_is_what_sorting_every_waiting_phase_gives(
    base: Path, monkeypatch: pytest.MonkeyPatch, index: str
) -> None:
    manager = CheckpointManager(base)
    scan.list_sessions(base)
    monkeypatch.setenv("HAYTHAM_INDEX", index)
    every = scan.list_sessions(base, workflows=manager.workflows)[0]
    kinds = {w.state for s in every for w in s.waiting}
    assert kinds == set(NEEDS_A_PERSON)
    with scan.iter_sessions(base, workflows=manager.workflows) as listing:
        for where in (WaitingMatch(), WaitingMatch(project_id="other"), WaitingMatch(state="stale")):
            counts = listing.waiting_counts(where)
            for newest in (True, False):
                expected = inbox_oracle(every, where, newest)
                assert sum(counts.values()) == len(expected)
                found = [
                    (project, session, w.phase)
                    for offset in range(0, len(expected) + 6, 6)
                    for project, session, w in listing.waiting(where, newest=newest, offset=offset, limit=6)
                ]
                assert found == expected, (where, newest)


def test_a_damaged_index_under_a_listing_is_answered_from_the_files(
    base: Path, counters: WorkCounters
) -> None:
    """The index turns unreadable after the check (a listing's queries come later): the
    queries give what the files say (read again), as a listing without an index would."""
    manager = CheckpointManager(base)
    scan.list_sessions(base)
    expected = sessions_answers(base)
    with scan.iter_sessions(base, workflows=manager.workflows) as listing:
        counters.reset()
        index_file = base / _index.INDEX_DIR / _index.INDEX_FILE
        index_file.write_bytes(b"not a database" * 100_000)
        (base / _index.INDEX_DIR / f"{_index.INDEX_FILE}-wal").unlink(missing_ok=True)
        with pytest.raises(sqlite3.DatabaseError):
            sqlite3.connect(index_file).execute("SELECT count(*) FROM summaries").fetchall()
        got = {
            (m, o): list(paged(listing, match, order, 7))
            for m, match in enumerate(MATCHES)
            for o, order in enumerate(ORDERS)
        }
        assert listing.waiting_counts() != {}
        assert counters.opened > 0  # the files decided
    assert got == expected


@pytest.mark.parametrize("index", ["1", "0"], ids=["index", "no-index"])
def test_a_folder_named_in_bytes_that_are_not_utf8_is_listed_as_it_is_named(
    base: Path, monkeypatch: pytest.MonkeyPatch, index: str
) -> None:
    """SQLite keeps only valid Unicode: such a session is held with its name escaped for the
    queries, and its summary made from the row itself (its real name and path)."""
    monkeypatch.setenv("HAYTHAM_INDEX", index)
    sessions = base / P / "sessions"
    odd = os.fsdecode(b"s-\xff")
    shutil.copytree(sessions / "s-000", sessions / odd)
    for _ in range(2):
        with scan.iter_sessions(base) as listing:
            found = [s for s in listing.page(where=Match(search="s-")) if s.session_id == odd]
            assert [s.path for s in found] == [sessions / odd]
            assert listing.count(Match(search="s-")) == listing.count(Match(search="s-0")) + 1


def test_a_listing_orders_and_counts_by_summary_fields_alone(base: Path) -> None:
    """A column name goes into the query's SQL: only a summary's fields are accepted."""
    with scan.iter_sessions(base) as listing:
        for column in ("facts", "identity", "waiting", "status; DROP TABLE summaries"):
            with pytest.raises(InvalidArgumentError, match="cannot"):
                listing.page(order=[(column, True)])
            with pytest.raises(InvalidArgumentError, match="cannot"):
                listing.counts([column])
        assert sum(listing.counts(["status"]).values()) == len(listing) > 0
