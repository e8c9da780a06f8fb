"""The inbox of ``haytham serve`` comes from the store's cached listing (issue 26).

A warm inbox over N sessions opens and parses no session file (one ``stat`` a fact file, as
``haytham list`` does); a review edited by hand in one session makes the next inbox read that
session's files alone, and the edit shows at once. The inbox is paginated, newest waiting
first (``?order=oldest`` for the longest wait first). Work is counted (tests/workcount.py),
never timed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from starlette.testclient import TestClient
from web_demo import grow
from workcount import WorkCounters

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.web import pages
from haytham.web.app import create_app

P = "demo"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A base directory whose files may be remembered by the index as soon as they are
    written (no count depends on the clock), with one session awaiting review to copy."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))
    base = tmp_path / "projects"
    assert run_demo(CheckpointManager(base), "s-000", review="manual").status == "awaiting_review"
    return base


@pytest.fixture
def client(base: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(base)), base_url="http://127.0.0.1") as test_client:
        yield test_client


def count_of(page: str) -> int:
    found = re.search(r'id="count">(\d+)<', page)
    assert found is not None, page
    return int(found.group(1))


def approve_by_hand(base: Path, session: str) -> None:
    """A person approves phase 1 of ``session`` in its review file, as an editor would."""
    review = base / P / "sessions" / session / "phase_1_concept" / "user_feedback.md"
    text = review.read_text("utf-8")
    assert "Reviewed: false" in text and "Approved: false" in text
    review.write_text(
        text.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")
    )


LISTING_VIEWS = (
    "/",
    f"/?project={P}",
    "/?kind=awaiting_review",
    "/?order=oldest",
    "/?reviewer=ada",
    "/sessions",
    "/sessions?state=awaiting_review",
    f"/sessions?project={P}",
    "/sessions?reviewer=ada",
    "/sessions?q=s-01",
    "/sessions?sort=tokens&order=asc",
)
"""The inbox and the sessions page with each of their filters, orders and sorts."""


def test_a_warm_inbox_reads_no_session_file(base: Path, client: TestClient, counters: WorkCounters) -> None:
    for count in (60, 120):
        grow(base, count)
        assert count_of(client.get("/").text) == count  # learns the new sessions
        _progress.DIGESTS.clear()
        counters.reset()
        page = client.get("/")
        assert page.status_code == 200 and count_of(page.text) == count
        assert counters.opened == 0 and counters.parsed == 0 and counters.hashed == 0
        for view in (*LISTING_VIEWS, "/?page=1"):
            counters.reset()
            assert client.get(view).status_code == 200
            assert counters.opened == 0 and counters.parsed == 0 and counters.hashed == 0, view


def test_a_hand_edited_review_is_shown_at_once_reading_that_session_alone(
    base: Path, client: TestClient, counters: WorkCounters
) -> None:
    session_files = sum(1 for p in (base / P / "sessions" / "s-000").rglob("*.md"))
    read = []
    for count, edited in ((60, "s-031"), (120, "s-091")):
        grow(base, count)
        client.get("/")
        approve_by_hand(base, edited)
        _progress.DIGESTS.clear()
        counters.reset()
        page = client.get("/").text
        assert count_of(page) == count - len(read) - 1  # seen on this very load
        assert f">{edited}</a>" not in page
        assert 0 < counters.opened <= session_files
        read.append(counters.opened)
        counters.reset()
        assert count_of(client.get("/").text) == count - len(read)
        assert counters.opened == 0 and counters.parsed == 0
    assert read[0] == read[1]  # one session's files, however many sessions there are


def test_the_inbox_is_paginated_newest_waiting_first(
    base: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = CheckpointManager(base)
    for session in ("s-001", "s-002"):  # each waits from later than the one before
        assert run_demo(manager, session, review="manual").status == "awaiting_review"
    monkeypatch.setattr(pages, "INBOX_PER_PAGE", 2)

    def rows(query: str) -> list[str]:
        page = client.get(f"/{query}")
        assert page.status_code == 200, page.text
        assert count_of(page.text) == 3  # every matching item, on every page
        return re.findall(r'<a class="phase-link" href="/p/demo/s/([^/]+)/phase/1"', page.text)

    assert rows("") == ["s-002", "s-001"]
    assert rows("?page=2") == ["s-000"]
    assert rows("?order=oldest") == ["s-000", "s-001"]
    assert rows("?order=oldest&page=2") == ["s-002"]
    first = client.get("/").text
    assert 'href="?page=2"' in first and 'rel="next"' in first and "page 1 of 2" in first
    assert client.get("/?page=3").status_code == 404
    assert client.get("/?page=0").status_code == 400
    assert client.get("/?order=sideways").status_code == 400


def test_the_waiting_phases_the_index_remembers_are_those_the_files_derive(base: Path) -> None:
    """Awaiting, failed and stale phases (two stale ones behind an earlier current phase): what
    the warm index gives back is what ``lifecycle.needs_a_person`` says of the files."""
    from haytham.store import lifecycle, scan

    manager = CheckpointManager(base)
    assert run_demo(manager, "done-1", review="approve").status == "completed"
    agent = manager.load_checkpoint(P, "done-1", 1).agents[0].agent_name
    manager.save_agent_output(P, "done-1", 1, agent, "# Different\n")
    manager.save_checkpoint(P, "done-1", 1, "completed", [{"agent_name": agent, "status": "completed"}])
    manager.create_session(P, "broken", "ada", "idea_validation")
    manager.save_checkpoint(P, "broken", 1, "failed", [], errors=["the model timed out"])
    grow(base, 60)  # enough sessions for an index

    def waiting() -> dict[str, list[tuple[int, str, str]]]:
        found, issues = scan.list_sessions(base, workflows=manager.workflows)
        assert issues == []
        return {s.session_id: [(w.phase, w.state, w.described) for w in s.waiting] for s in found}

    cold, warm = waiting(), waiting()
    assert cold == warm
    for session, phases in warm.items():
        derived = lifecycle.needs_a_person(manager.state(P, session))
        assert phases == [(v.number, v.state, v.describe()) for v in derived]
    assert [state for _, state, _ in warm["done-1"]].count("stale") >= 2
    assert warm["broken"] == [(1, "failed", "failed")] and warm["s-000"][0][1] == "awaiting_review"


def save_phase_2(base: Path, session: str) -> None:
    """Phase 1 of ``session`` approved and phase 2 saved, through the library (as a runner)."""
    from haytham.run.demo import DEMO_WORKFLOW

    manager = CheckpointManager(base)
    manager.save_user_feedback(P, session, 1, True, True)
    agents = DEMO_WORKFLOW.phases[1].agents
    for agent in agents:
        manager.save_agent_output(P, session, 2, agent, f"# Phase 2 by {agent}\n")
    manager.save_checkpoint(
        P, session, 2, "completed", [{"agent_name": a, "status": "completed"} for a in agents]
    )


@pytest.mark.parametrize(
    "change", [approve_by_hand, save_phase_2], ids=["review-edited-by-hand", "phase-saved"]
)
def test_every_listing_view_reads_only_the_session_that_changed(
    base: Path, client: TestClient, counters: WorkCounters, change: Callable[[Path, str], None]
) -> None:
    """Each view of the inbox and the sessions page, after one session of 60 changed (its
    review edited by hand, or a phase saved by a runner): only that session's files are
    read, and the next load reads none."""
    grow(base, 60)
    for number, view in enumerate(LISTING_VIEWS):
        assert client.get(view).status_code == 200, view
        session = f"s-{number + 10:03d}"
        folder = base / P / "sessions" / session
        change(base, session)
        _progress.DIGESTS.clear()
        counters.reset()
        assert client.get(view).status_code == 200, view
        assert counters.files, view  # the change was seen: its files read again
        assert all(path.startswith(f"{folder}{os.sep}") for path in counters.files), (view, counters.files)
        assert counters.opened <= sum(1 for p in folder.rglob("*.md")), view
        counters.reset()
        assert client.get(view).status_code == 200, view
        assert counters.opened == 0 and counters.parsed == 0, view
    sessions = client.get("/sessions?state=awaiting_review").text
    assert ">s-030<" in sessions  # unchanged: still awaiting review
    assert all(f">s-{n + 10:03d}<" not in sessions for n in range(len(LISTING_VIEWS)))  # every change shown


def test_a_page_makes_summaries_for_its_own_rows_alone(
    base: Path, client: TestClient, counters: WorkCounters, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paging is done in the index's queries: a page makes a summary for each of its own rows
    (the sessions page) or none (the inbox, whose items are the index's waiting rows), at 60
    sessions and at 120; the index rows read beyond the check's one a session and the page's
    own (the counts' groups) do not grow with the tree."""
    monkeypatch.setattr(pages, "SESSIONS_PER_PAGE", 50)
    monkeypatch.setattr(pages, "INBOX_PER_PAGE", 50)
    views = {  # the rows shown at 60 sessions and at 120 (every session waits for a review)
        "/sessions": (50, 50),
        "/sessions?page=2": (10, 50),
        "/sessions?sort=session&order=desc": (50, 50),
        "/sessions?q=s-0&page=2": (10, 50),
        "/": (50, 50),
        "/?order=oldest&page=2": (10, 50),
    }
    beyond: dict[str, list[int]] = {view: [] for view in views}
    for size, count in enumerate((60, 120)):
        grow(base, count)
        for view in views:
            client.get(view)
        for view, shown in views.items():
            _progress.DIGESTS.clear()
            counters.reset()
            page = client.get(view)
            assert page.status_code == 200, view
            assert counters.opened == 0 and counters.parsed == 0, view
            rows = len(re.findall(r'<tr class="session"|<a class="phase-link"', page.text))
            assert rows == shown[size], view
            assert counters.summaries == (rows if view.startswith("/sessions") else 0), view
            beyond[view].append(counters.index_rows - count - rows)
    for view, read in beyond.items():
        assert read[0] == read[1], (view, read)  # the counts: a few groups, not the tree
