"""``haytham serve`` keeps its listing pages current from file-system events (issue 26).

``haytham.store.watch.Watcher`` reads Linux inotify's queue, without blocking, at each
listing: only the sessions with events since the last one are checked against their files
(a ``stat`` a fact file); the rest answer from the index with no ``stat`` at all. Every
change made before a page load (a write in place, an editor's write and rename, a new or
removed session, a ``git checkout``, a queue that overflowed) shows on that load. Real files,
real inotify; work is counted, never timed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.platform != "linux":  # pragma: no cover - inotify is Linux's
    pytest.skip("inotify is Linux's; elsewhere the listing keeps its stat check", allow_module_level=True)

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.store.watch import Watcher

P = "demo"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A base directory with one session awaiting review (copied by ``grow``), remembered by
    the index as soon as written (no count depends on the clock)."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.delenv("HAYTHAM_WATCH", raising=False)
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))
    base = tmp_path / "projects"
    assert run_demo(CheckpointManager(base), "s-000", review="manual").status == "awaiting_review"
    return base


def review_file(base: Path, session: str) -> Path:
    return base / P / "sessions" / session / "phase_1_concept" / "user_feedback.md"


def approved(text: str) -> str:
    assert "Reviewed: false" in text and "Approved: false" in text
    return text.replace("Reviewed: false", "Reviewed: true").replace("Approved: false", "Approved: true")


def folder(base: Path, session: str) -> str:
    return os.fspath(base / P / "sessions" / session)


@pytest.fixture
def watcher(base: Path) -> Iterator[Watcher]:
    grow(base, 5)
    found = Watcher(base)
    assert found.active
    assert found.changed_sessions() is None  # the first look: check everything
    assert found.changed_sessions() == set()
    yield found
    found.close()


@pytest.mark.parametrize("spelling", ["as given", "with a trailing slash"])
def test_a_base_given_either_way_reports_the_session_written_to(base: Path, spelling: str) -> None:
    """The session an event is in is found by cutting the base off its path (a fifth of a
    busy listing's time went on ``os.path.relpath``); a base spelt with a trailing slash,
    which no path joined from it starts with, is still understood."""
    grow(base, 2)
    given = os.fspath(base) + ("/" if spelling != "as given" else "")
    watching = Watcher(Path(given)) if spelling == "as given" else Watcher(given)  # type: ignore[arg-type]
    try:
        assert watching.changed_sessions() is None
        review = review_file(base, "s-001")
        review.write_text(approved(review.read_text("utf-8")), "utf-8")
        changed = watching.changed_sessions()
        assert changed is not None
        assert {os.path.normpath(f) for f in changed} == {folder(base, "s-001")}
    finally:
        watching.close()


def test_a_write_in_place_and_an_editors_write_and_rename_are_reported(base: Path, watcher: Watcher) -> None:
    review = review_file(base, "s-001")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert watcher.changed_sessions() == {folder(base, "s-001")}
    assert watcher.changed_sessions() == set()
    review = review_file(base, "s-002")
    temporary = review.with_name(".user_feedback.md.swp")
    temporary.write_text(approved(review.read_text("utf-8")), "utf-8")
    os.replace(temporary, review)
    assert watcher.changed_sessions() == {folder(base, "s-002")}
    os.utime(base / P / "sessions" / "s-003" / "session_manifest.md")  # a touch: a new ctime
    assert watcher.changed_sessions() == {folder(base, "s-003")}


def test_new_and_removed_sessions_are_reported_and_new_folders_watched(base: Path, watcher: Watcher) -> None:
    sessions = base / P / "sessions"
    copy_session(sessions / "s-000", sessions / "new-1")
    assert folder(base, "new-1") in watcher.changed_sessions()  # type: ignore[operator]
    review = review_file(base, "new-1")  # a folder made after the start is watched too
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert watcher.changed_sessions() == {folder(base, "new-1")}
    staged = sessions / ".staging"  # made hidden, then renamed into place, as a copy tool does
    copy_session(sessions / "s-000", staged)
    watcher.changed_sessions()
    os.rename(staged, sessions / "moved-in")
    assert folder(base, "moved-in") in watcher.changed_sessions()  # type: ignore[operator]
    review = review_file(base, "moved-in")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert watcher.changed_sessions() == {folder(base, "moved-in")}  # watched under its new name
    shutil.rmtree(sessions / "s-004")
    assert folder(base, "s-004") in watcher.changed_sessions()  # type: ignore[operator]
    os.rename(sessions / "s-003", base / "elsewhere")  # moved out of the tree
    assert folder(base, "s-003") in watcher.changed_sessions()  # type: ignore[operator]
    (base / "elsewhere" / "session_manifest.md").touch()  # no longer a session here
    assert watcher.changed_sessions() == set()


def test_a_new_project_is_watched(base: Path, watcher: Watcher) -> None:
    target = base / "other" / "sessions" / "x-1"
    target.parent.mkdir(parents=True)
    copy_session(base / P / "sessions" / "s-000", target)
    assert os.fspath(target) in watcher.changed_sessions()  # type: ignore[operator]
    review = target / "phase_1_concept" / "user_feedback.md"
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert watcher.changed_sessions() == {os.fspath(target)}


def test_an_overflowed_queue_means_check_everything_and_watch_again(base: Path, watcher: Watcher) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    crowd = base / P / "sessions" / "s-001" / "phase_1_concept"
    for number in range(limit // 2 + 10):  # a create and a close-after-write each: past the limit
        (crowd / f"note-{number}.txt").write_bytes(b"")
    resets = watcher.resets
    assert watcher.changed_sessions() is None
    assert watcher.resets == resets + 1 and watcher.active
    review = review_file(base, "s-002")  # the new watches report again
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert watcher.changed_sessions() == {folder(base, "s-002")}


def test_a_check_learnt_before_a_later_look_read_an_event_is_not_kept(base: Path, watcher: Watcher) -> None:
    """Listings overlap (the lock is held to look and to settle only): what a listing found
    of a folder is dropped when a later look read an event for it meanwhile, since the
    files may have changed after the check; another folder's is kept."""
    changed, quiet = os.path.split(folder(base, "s-001")), os.path.split(folder(base, "s-002"))
    first = watcher.look("salt")
    review = review_file(base, "s-001")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    second = watcher.look("salt")
    assert second.changed == {folder(base, "s-001")} and first.number < second.number
    watcher.settle(second, {}, {})
    watcher.settle(first, {changed: "key checked before the write", quiet: "key of s-002"}, {})
    assert watcher.verified == {quiet: "key of s-002"}
    third = watcher.look("salt")  # an event read forgets what was verified of its folder
    watcher.settle(third, {**third.verified, changed: "key checked after the write"}, {})
    review.write_text(review.read_text("utf-8") + "\n", "utf-8")
    fourth = watcher.look("salt")
    assert changed not in fourth.verified and fourth.verified == {quiet: "key of s-002"}
    watcher.abandon(fourth)
    assert watcher.look("other salt").verified == {}  # other workflows: nothing is trusted


def test_a_listing_checking_sessions_does_not_hold_up_another(
    base: Path, watcher: Watcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing paused while it reads a changed session (as a busy server's thread is) does
    not keep another listing waiting: the watcher's lock is not held while sessions are
    checked (issue 26: the listing pages' p99 under load was their wait for that lock)."""
    from haytham.store import scan

    grow(base, 60)

    def listed() -> int:
        with scan.iter_sessions(base, watcher=watcher) as listing:
            return len(listing)

    assert listed() == listed() == 60  # remembered by the index, then verified
    review = review_file(base, "s-001")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    reading, release = threading.Event(), threading.Event()
    real_know = scan._know

    def paused_know(*args: object, **kwargs: object) -> object:
        if threading.current_thread().name == "paused":
            reading.set()
            release.wait(30)
        return real_know(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan, "_know", paused_know)
    paused = threading.Thread(target=listed, name="paused")
    paused.start()
    try:
        assert reading.wait(30)  # the first listing reads s-001, changed, and waits there
        done: list[int] = []
        other = threading.Thread(target=lambda: done.append(listed()))
        other.start()
        other.join(30)
        assert done == [60]  # finished while the first one waits
    finally:
        release.set()
        paused.join(30)
    assert not paused.is_alive()


def test_the_watcher_is_off_with_haytham_watch_0(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_WATCH", "0")
    off = Watcher(base)
    assert not off.active
    assert off.changed_sessions() is None and off.changed_sessions() is None


def test_a_base_directory_that_does_not_exist_yet_turns_the_watcher_off(tmp_path: Path) -> None:
    later = tmp_path / "not-yet"
    off = Watcher(later)
    later.mkdir()  # made after: its changes would raise no event here
    assert not off.active and off.changed_sessions() is None


def test_a_linked_base_directory_is_watched_through_its_link(base: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(base)
    linked = Watcher(link)
    assert linked.active and linked.changed_sessions() is None
    review = review_file(base, "s-000")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    assert linked.changed_sessions() == {os.path.join(link, P, "sessions", "s-000")}
    linked.close()
    assert not linked.active and linked.changed_sessions() is None


def test_a_linked_sessions_folder_turns_the_watcher_off(base: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (base / "linked").mkdir()
    (base / "linked" / "sessions").symlink_to(tmp_path / "outside")
    linked = Watcher(base)
    assert not linked.active and linked.changed_sessions() is None


# ---------------------------------------------------------------- the pages of haytham serve

starlette = pytest.importorskip(
    "starlette", reason="the web extra is not installed: pip install 'haytham[web]'"
)

from starlette.testclient import TestClient  # noqa: E402
from web_demo import copy_session, grow  # noqa: E402

from haytham.web.app import create_app  # noqa: E402


@pytest.fixture
def client(base: Path) -> Iterator[TestClient]:
    app = create_app(str(base), watch=True)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        assert app.state.watcher.active
        yield test_client
    assert not app.state.watcher.active  # its inotify instance given back at shutdown


class Stats:
    """Every ``os.stat`` and ``os.lstat`` of a path inside the sessions folder, recorded."""

    def __init__(
        self, base: Path, monkeypatch: pytest.MonkeyPatch, calls: tuple[str, ...] = ("stat", "lstat")
    ) -> None:
        self.inside = os.path.join(base, P, "sessions", "")
        self.paths: list[str] = []
        for name in calls:
            real = getattr(os, name)

            def recording(path: object, *args: object, _real: object = real, **kwargs: object) -> object:
                text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
                if isinstance(text, str) and text.startswith(self.inside):
                    self.paths.append(text)
                return _real(path, *args, **kwargs)  # type: ignore[operator]

            monkeypatch.setattr(os, name, recording)

    def sessions(self) -> set[str]:
        return {p[len(self.inside) :].split(os.sep)[0] for p in self.paths}


def awaiting(page: str, session: str) -> bool:
    return f'href="/p/{P}/s/{session}/phase/1"' in page


def test_a_warm_inbox_stats_no_file_and_one_sessions_files_after_one_changed(
    base: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    grow(base, 60)
    assert client.get("/").status_code == 200  # the first load reads every session into the index
    assert client.get("/").status_code == 200  # the next one checks every session against it
    stats = Stats(base, monkeypatch)
    for view in ("/", "/sessions", "/?kind=awaiting_review", "/sessions?state=awaiting_review"):
        page = client.get(view)
        assert page.status_code == 200 and awaiting(page.text, "s-031"), view
        assert stats.paths == [], view
    review = review_file(base, "s-031")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    page = client.get("/").text
    assert not awaiting(page, "s-031") and awaiting(page, "s-030")  # shown on this very load
    assert stats.sessions() == {"s-031"}
    stats.paths.clear()
    assert not awaiting(client.get("/").text, "s-031")
    assert stats.paths == []


def test_the_server_keeps_the_index_open_so_a_listing_never_closes_it_last(
    base: Path, client: TestClient
) -> None:
    """The last connection to close a WAL database checkpoints it, syncs it and deletes its
    log: inside a page request when each listing's connection was the last (issue 26, S14's
    listing tail). The server's watcher keeps the index open (``Watcher.index``), so the log
    outlives every page load."""
    grow(base, 60)
    log = base / _index.INDEX_DIR / (_index.INDEX_FILE + "-wal")
    assert client.get("/").status_code == 200  # the first load makes the index
    for view in ("/sessions", "/", "/sessions?state=awaiting_review"):
        assert client.get(view).status_code == 200
        assert log.exists() and client.app.state.watcher.index.open, view  # type: ignore[attr-defined]


def test_new_removed_and_hand_edited_sessions_show_on_the_next_load(base: Path, client: TestClient) -> None:
    grow(base, 60)
    sessions = base / P / "sessions"
    assert awaiting(client.get("/").text, "s-005")
    copy_session(sessions / "s-000", sessions / "brand-new")
    shutil.rmtree(sessions / "s-005")
    review = review_file(base, "s-006")
    temporary = review.with_name("user_feedback.md~")
    temporary.write_text(approved(review.read_text("utf-8")), "utf-8")
    os.replace(temporary, review)
    page = client.get("/").text
    assert awaiting(page, "brand-new") and not awaiting(page, "s-005") and not awaiting(page, "s-006")
    listing = client.get("/sessions").text
    assert ">brand-new<" in listing and ">s-005<" not in listing


def git(base: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=base, check=True, capture_output=True)


@pytest.mark.usefixtures("isolated_git")
def test_a_git_checkout_changing_many_sessions_shows_on_the_next_load(base: Path, client: TestClient) -> None:
    if shutil.which("git") is None:  # pragma: no cover - git is part of the dev environment
        pytest.fail("git is needed for this test")
    grow(base, 60)
    git(base, "init", "-q", "-b", "main")
    git(base, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(base, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "all waiting")
    git(base, "checkout", "-qb", "reviewed")
    edited = [f"s-{n:03d}" for n in range(10, 40)]
    for session in edited:
        review = review_file(base, session)
        review.write_text(approved(review.read_text("utf-8")), "utf-8")
    shutil.rmtree(base / P / "sessions" / "s-050")
    git(base, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "reviewed")
    git(base, "checkout", "-q", "main")
    page = client.get("/").text  # the first load: every session as on main
    assert all(awaiting(page, s) for s in (*edited, "s-050"))
    git(base, "checkout", "-q", "reviewed")
    page = client.get("/").text
    assert not any(awaiting(page, s) for s in (*edited, "s-050")) and awaiting(page, "s-041")
    git(base, "checkout", "-q", "main")
    page = client.get("/").text
    assert all(awaiting(page, s) for s in (*edited, "s-050"))


def test_a_change_the_index_could_not_remember_yet_is_checked_until_it_is(
    base: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session changed too recently to be remembered (the racy rule) keeps its old row in
    the index; the watcher must not trust that row once the event is read."""
    grow(base, 60)
    assert awaiting(client.get("/").text, "s-020")
    monkeypatch.setattr(_index, "RACY_NS", 10**15)  # nothing settles from now on
    monkeypatch.setattr(_progress, "RACY_NS", 10**15)
    review = review_file(base, "s-020")
    review.write_text(approved(review.read_text("utf-8")), "utf-8")
    for _ in range(3):  # the event was read by the first of these loads
        assert not awaiting(client.get("/").text, "s-020")


def test_a_session_too_new_to_remember_is_read_once_a_change_not_on_every_load(
    base: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session being written stays too new for the index for seconds (the racy rule); the
    server reads its files once after each change (the event says when), not on every load."""
    grow(base, 60)
    assert awaiting(client.get("/").text, "s-020")  # every session read into the index
    assert awaiting(client.get("/").text, "s-020")  # and checked against it
    monkeypatch.setattr(_index, "RACY_NS", 10**15)  # no listing row settles from now on
    files = Stats(base, monkeypatch, ("stat", "lstat", "open"))
    review = review_file(base, "s-020")
    waiting = review.read_text("utf-8")
    review.write_text(approved(waiting), "utf-8")
    assert not awaiting(client.get("/").text, "s-020")  # read on this load
    assert files.sessions() == {"s-020"}
    assert any(path.endswith("user_feedback.md") for path in files.paths)
    files.paths.clear()
    for view in ("/", "/sessions", "/", "/sessions?state=awaiting_review"):
        page = client.get(view).text
        assert ">s-020<" not in page if "state=" in view else not awaiting(page, "s-020"), view
        assert files.paths == [], view  # no event since: what was read stands
    review.write_text(waiting, "utf-8")
    assert awaiting(client.get("/").text, "s-020")  # the next change: read again, once
    assert files.sessions() == {"s-020"}
    files.paths.clear()
    assert awaiting(client.get("/").text, "s-020")
    assert files.paths == []
    before = review.stat()
    same_size = approved(waiting).replace("Reviewed: true", "Reviewed: true  ")
    assert len(same_size) == len(waiting)
    review.write_text(same_size, "utf-8")  # same size, same modification time: still an event
    os.utime(review, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not awaiting(client.get("/").text, "s-020")
    assert files.sessions() == {"s-020"}
    review.write_text(waiting, "utf-8")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # settled: remembered by the index
    assert awaiting(client.get("/").text, "s-020")
    assert client.app.state.watcher.recent == {}  # type: ignore[attr-defined]


def test_folders_made_and_removed_leave_no_watch_or_entry_behind(base: Path, watcher: Watcher) -> None:
    """A writer makes and removes folders all the time: the watches and what the watcher
    keeps of them (each folder's watched folders, for ``_forget``) come back to the same."""
    sessions = base / P / "sessions"
    before = (dict(watcher._paths), dict(watcher._watches), {k: set(v) for k, v in watcher._below.items()})
    assert len(before[0]) == len(before[1]) > 5
    for number in range(5):
        copy_session(sessions / "s-000", sessions / f"new-{number}")
        assert folder(base, f"new-{number}") in watcher.changed_sessions()  # type: ignore[operator]
        assert len(watcher._paths) > len(before[0])
        staged = sessions / f"new-{number}" / "phase_9"
        staged.mkdir()
        os.rename(staged, sessions / f"new-{number}" / "phase_9_moved")
        assert watcher.changed_sessions() == {folder(base, f"new-{number}")}
        shutil.rmtree(sessions / f"new-{number}")
        assert folder(base, f"new-{number}") in watcher.changed_sessions()  # type: ignore[operator]
    assert len(watcher._paths) == len(before[0])
    assert watcher._watches == before[1]
    assert watcher._below == before[2]


def test_without_events_a_session_too_new_to_remember_is_read_on_every_load(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no events to say when it changes (``HAYTHAM_WATCH=0``), what was read of a session
    too new for the index is not trusted: every load reads it again."""
    monkeypatch.setenv("HAYTHAM_WATCH", "0")
    grow(base, 60)
    app = create_app(str(base), watch=True)
    with TestClient(app, base_url="http://127.0.0.1") as off:
        assert not app.state.watcher.active
        assert awaiting(off.get("/").text, "s-020")
        assert awaiting(off.get("/").text, "s-020")
        monkeypatch.setattr(_index, "RACY_NS", 10**15)
        review = review_file(base, "s-020")
        review.write_text(approved(review.read_text("utf-8")), "utf-8")
        files = Stats(base, monkeypatch, ("open",))
        for _ in range(3):
            assert not awaiting(off.get("/").text, "s-020")
            assert any(path.endswith("s-020/phase_1_concept/user_feedback.md") for path in files.paths)
            files.paths.clear()
