"""Issue 26, "Nothing blocks the event loop": no request of ``haytham serve`` waits for another
request's computation or lock.

Pinned by where work runs and by the order in which answers come, never by timing:

- every route's endpoint is a plain function (Starlette runs it in its thread pool) or a
  coroutine whose store work is awaited in a thread, and every error page is a plain function;
- over every route (pages, raw files, static files, forms, error pages), nothing touches a
  file, takes a lock or sleeps on the event loop's thread, and no method of the manager runs
  there (an audit of the real functions, which still do the real work: no mock);
- a real ``haytham serve`` answers a session page, the inbox and the sessions page while a
  review POST waits on a lock that a real other process holds, then the review completes
  once it lets go; and a session page answers while an inbox computation is held in flight.
"""

from __future__ import annotations

import asyncio
import builtins
import fcntl
import functools
import http.cookiejar
import inspect
import io
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from starlette.routing import Mount, Route
from test_web import WAIT, form_fields
from web_demo import P, S, awaiting_demo, client_of, served_in_a_thread

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.store import fs
from haytham.web import app as web_app
from haytham.web import pages

OTHER = "idea-002"
ASYNC_ENDPOINTS = {"review", "correct", "fork", "rerun"}
"""The coroutine endpoints: the forms, which await the request's body, then their save."""


def on_the_event_loop() -> bool:
    """Whether the calling thread is running an event loop (a coroutine's step, not a worker),
    outside an import (a library's module loaded at its first use, once a process)."""
    if asyncio._get_running_loop() is None:
        return False
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return False
        frame = frame.f_back
    return True


class Audit:
    """Every call of the audited functions, split by whether it ran on the event loop."""

    def __init__(self) -> None:
        self.on_loop: list[str] = []
        self.off_loop = 0

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def audited(*args: Any, **kwargs: Any) -> Any:
            if on_the_event_loop():
                self.on_loop.append(f"{name}{args[:1]!r}")
            else:
                self.off_loop += 1
            return real(*args, **kwargs)

        return audited


@pytest.fixture
def audit(monkeypatch: pytest.MonkeyPatch) -> Audit:
    """The audit of what touches files, locks or sleeps, and of the manager's public methods."""
    found = Audit()
    for module, names in (
        (os, ("stat", "lstat", "open", "scandir", "listdir", "fstat")),
        (fcntl, ("flock",)),
        (time, ("sleep",)),
    ):
        for name in names:
            monkeypatch.setattr(module, name, found.wrap(f"{module.__name__}.{name}", getattr(module, name)))
    opened = found.wrap("open", builtins.open)
    monkeypatch.setattr(builtins, "open", opened)
    monkeypatch.setattr(io, "open", opened)
    for name, method in vars(CheckpointManager).items():
        if inspect.isfunction(method) and not name.startswith("_"):
            monkeypatch.setattr(CheckpointManager, name, found.wrap(f"CheckpointManager.{name}", method))
    return found


def test_every_endpoint_is_plain_or_a_form_that_saves_in_a_thread(tmp_path: Path) -> None:
    app = web_app.create_app(str(tmp_path))
    seen = set()
    for route in app.routes:
        if isinstance(route, Mount):
            continue  # StaticFiles: its stat and its file are read in anyio's threads
        assert isinstance(route, Route)
        name = route.endpoint.__name__
        if inspect.iscoroutinefunction(route.endpoint):
            seen.add(name)
            source = inspect.getsource(route.endpoint)
            assert "manager" in source and "await save(" in source, name  # its store work in a thread
        else:
            assert callable(route.endpoint), name
    assert seen == ASYNC_ENDPOINTS
    for handler in app.exception_handlers.values():
        assert not inspect.iscoroutinefunction(handler), handler  # its template renders in a thread


def test_the_audit_sees_a_store_call_made_on_the_event_loop(tmp_path: Path, audit: Audit) -> None:
    """The audit below can fail: a coroutine that reads the store itself is caught."""
    manager = awaiting_demo(tmp_path / "projects")

    async def blocking() -> None:
        manager.load_session(P, S)

    asyncio.run(blocking())
    assert "CheckpointManager.load_session" in "".join(audit.on_loop)
    assert any(call.startswith(("os.", "open")) for call in audit.on_loop), audit.on_loop


def test_no_request_touches_a_file_or_a_lock_on_the_event_loop(tmp_path: Path, audit: Audit) -> None:
    manager = awaiting_demo(tmp_path / "projects")
    assert run_demo(manager, OTHER, review="manual").status == "awaiting_review"
    base = f"/p/{P}/s/{S}"
    with client_of(manager) as client:
        phase = client.get(f"{base}/phase/1")
        fields = form_fields(phase.text)
        agent = manager.load_checkpoint(P, S, 1).agents[0].agent_name
        raw = f"{base}/phase/1/raw/{agent}"
        statuses = {
            url: client.get(url).status_code
            for url in (
                "/",
                "/?kind=failed&order=oldest",
                "/sessions",
                "/sessions?state=awaiting_review&q=idea",
                base,
                f"{base}?from_entry=nothing",
                f"{base}/version",
                f"{base}/report",
                f"{base}/phase/1",
                raw,
                f"{base}/phase/9",
                f"/p/{P}/s/no-such-session",
                "/p/.hidden/s/x",
                "/?page=0",
                "/favicon.ico",
                "/static/style.css",
                "/nowhere",
            )
        }
        assert statuses == {
            "/": 200,
            "/?kind=failed&order=oldest": 200,
            "/sessions": 200,
            "/sessions?state=awaiting_review&q=idea": 200,
            base: 200,
            f"{base}?from_entry=nothing": 404,
            f"{base}/version": 200,
            f"{base}/report": 200,
            f"{base}/phase/1": 200,
            raw: 200,
            f"{base}/phase/9": 404,
            f"/p/{P}/s/no-such-session": 404,
            "/p/.hidden/s/x": 400,
            "/?page=0": 400,
            "/favicon.ico": 204,
            "/static/style.css": 200,
            "/nowhere": 404,
        }
        review = {"csrf": fields["csrf"], "version": fields["version"], "decision": "approve"}
        other = form_fields(client.get(f"/p/{P}/s/{OTHER}/phase/1").text)
        correction = {"csrf": other["csrf"], "version": other["version"], "agent": agent}
        posts = [
            (f"{base}/phase/1/review", {**review, "csrf": "forged"}, 403),
            (f"{base}/phase/1/review", {**review, "version": "stale"}, 400),
            (f"{base}/phase/1/review", {**review, "version": fields["version"][:-1] + "0"}, 409),
            (f"/p/{P}/s/{OTHER}/phase/1/correct", {**correction, "content": "# Corrected\n"}, 303),
            (f"{base}/phase/1/review", review, 303),
            (f"{base}/fork", {"csrf": fields["csrf"], "new_session": "fork-1", "from_phase": "2"}, 303),
            (f"{base}/fork", {"csrf": fields["csrf"], "new_session": "fork-1", "from_phase": "2"}, 409),
            (f"{base}/rerun", {"csrf": fields["csrf"], "from_phase": "1"}, 303),
        ]
        for url, data, status in posts:
            answer = client.post(url, data=data, follow_redirects=False)
            assert answer.status_code == status, (url, answer.text)
    assert manager.load_session(P, "fork-1")["session_id"] == "fork-1"  # the saves happened
    assert audit.off_loop > 1000  # the work was seen, in the threads
    assert audit.on_loop == [], "\n".join(audit.on_loop)


# ------------------------------------------------------- a real server, real processes

SERVE_WATCHED = textwrap.dedent(
    """
    import runpy, sys
    from haytham.errors import LockTimeout
    from haytham.store import fs

    marker, real = sys.argv.pop(1), fs.flock_path

    def flock_path(path, timeout, what, directory, *, create=True):
        try:  # one try first; when the lock is held, say so, then wait as the store does
            return real(path, 0, what, directory, create=create)
        except LockTimeout:
            with open(marker, "a") as said:
                said.write(path + "\\n")
            return real(path, timeout, what, directory, create=create)

    fs.flock_path = flock_path
    sys.argv = ["haytham", *sys.argv[1:]]
    runpy.run_module("haytham", run_name="__main__")
    """
)
"""``python -c SERVE_WATCHED MARKER ARGS`` runs ``haytham ARGS`` and appends to MARKER the lock
file each time a lock it takes is held by someone else, before waiting for it as usual."""

HOLD_LOCK = textwrap.dedent(
    """
    import sys
    from haytham import CheckpointManager

    with CheckpointManager(sys.argv[1]).lock(sys.argv[2], sys.argv[3]):
        print("held", flush=True)
        sys.stdin.readline()
    """
)
"""``python -c HOLD_LOCK BASE P S`` holds the session's lock, prints ``held``, and lets go at
the first line of its standard input."""


def served(command: list[str], log: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``command`` (a ``haytham serve --port 0``) started; the process and its printed address."""
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
    deadline = time.monotonic() + WAIT
    while "http://" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "haytham serve printed no address"
        time.sleep(0.02)
    printed = log.read_text()
    return process, printed[printed.index("http://") :].split()[0].rstrip("/")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[str, CheckpointManager, Path]]:
    """A real ``haytham serve`` over two demo sessions awaiting review: its address, the
    manager, and the file it names each lock it finds held in."""
    manager = awaiting_demo(tmp_path / "projects")
    assert run_demo(manager, OTHER, review="manual").status == "awaiting_review"
    marker = tmp_path / "lock-waits"
    command = [sys.executable, "-c", SERVE_WATCHED, str(marker), "serve", "--port", "0"]
    process, url = served([*command, "--base-dir", str(manager.base_dir)], tmp_path / "serve.log", tmp_path)
    try:
        yield url, manager, marker
    finally:
        process.terminate()
        process.wait(timeout=WAIT)


def test_pages_answer_while_a_review_waits_on_a_lock_another_process_holds(
    serve: tuple[str, CheckpointManager, Path],
) -> None:
    url, manager, marker = serve
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    phase = f"{url}/p/{P}/s/{S}/phase/1"
    with browser.open(phase, timeout=WAIT) as response:
        fields = form_fields(response.read().decode())
    body = urllib.parse.urlencode({**fields, "decision": "approve", "comments": "", "changes": ""})
    answered: list[int] = []

    def post() -> None:
        with browser.open(phase + "/review", data=body.encode(), timeout=2 * WAIT) as answer:
            answered.append(answer.status)

    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(manager.base_dir), P, S],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        poster = threading.Thread(target=post, daemon=True)
        poster.start()
        deadline = time.monotonic() + WAIT
        while not (marker.exists() and marker.read_text()):  # the review now waits for the lock
            assert poster.is_alive() and time.monotonic() < deadline, f"the review never waited: {answered}"
            time.sleep(0.01)
        assert marker.read_text().splitlines() == [str(manager.session_dir(P, S) / ".haytham.lock")]
        for page in (f"/p/{P}/s/{S}", f"/p/{P}/s/{S}/phase/1", "/", "/sessions", f"/p/{P}/s/{OTHER}"):
            with urllib.request.urlopen(url + page, timeout=WAIT) as other:
                assert other.status == 200, page
        # Every page answered while the review still waits: the other process holds the lock.
        assert holder.poll() is None and poster.is_alive() and not answered
        assert holder.stdin is not None
        holder.stdin.write(b"go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=WAIT) == 0
        poster.join(timeout=2 * WAIT)
    assert answered == [200]  # the review went through once the lock was free (after its 303)
    assert manager.load_session(P, S)["status"] != "awaiting_review"


@pytest.fixture
def threaded(tmp_path: Path) -> Iterator[tuple[str, CheckpointManager]]:
    """uvicorn serving two demo sessions in a thread of this process (so that the test can hold
    a page's computation in flight); its address and the manager once it has started."""
    manager = awaiting_demo(tmp_path / "projects")
    assert run_demo(manager, OTHER, review="manual").status == "awaiting_review"
    with served_in_a_thread(manager, WAIT) as address:
        yield address, manager


def test_a_session_page_answers_while_an_inbox_is_being_computed(
    threaded: tuple[str, CheckpointManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = threaded
    computing, finish = threading.Event(), threading.Event()
    real = pages.inbox

    def held_inbox(*args: Any, **kwargs: Any) -> pages.Inbox:
        inbox = real(*args, **kwargs)  # computed, then held until the test lets it answer
        computing.set()
        assert finish.wait(timeout=2 * WAIT)
        return inbox

    monkeypatch.setattr(pages, "inbox", held_inbox)
    answered: list[int] = []

    def get_inbox() -> None:
        with urllib.request.urlopen(url + "/", timeout=3 * WAIT) as page:
            answered.append(page.status)

    getter = threading.Thread(target=get_inbox, daemon=True)
    getter.start()
    try:
        assert computing.wait(timeout=WAIT)
        for page in (f"/p/{P}/s/{S}", f"/p/{P}/s/{S}/phase/1", "/sessions"):
            with urllib.request.urlopen(url + page, timeout=WAIT) as other:
                assert other.status == 200, page
        assert getter.is_alive() and not answered  # they answered while the inbox was in flight
    finally:
        finish.set()
    getter.join(timeout=WAIT)
    assert answered == [200]


def test_a_page_is_answered_with_every_write_thread_waiting_on_a_lock(
    threaded: tuple[str, CheckpointManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More reviews than ``WRITE_THREADS`` waiting on one held lock take the writes' threads
    only: the pages' pool still answers, and every review completes once the lock is free."""
    url, manager = threaded
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    phase = f"{url}/p/{P}/s/{S}/phase/1"
    with browser.open(phase, timeout=WAIT) as response:
        fields = form_fields(response.read().decode())
    body = urllib.parse.urlencode({**fields, "decision": "approve"}).encode()
    waiting = threading.Semaphore(0)
    real, held = fs.flock_path, str(manager.session_dir(P, S) / ".haytham.lock")

    def watched(path: str, timeout: float, what: str, directory: Path, *, create: bool = True) -> Any:
        if path == held:
            waiting.release()  # a write thread is about to wait for the session's lock
        return real(path, timeout, what, directory, create=create)

    statuses: list[int] = []

    def post() -> None:
        try:
            with browser.open(phase + "/review", data=body, timeout=3 * WAIT) as answer:
                statuses.append(answer.status)
        except urllib.error.HTTPError as refused:
            statuses.append(refused.code)

    posters = [threading.Thread(target=post, daemon=True) for _ in range(web_app.WRITE_THREADS + 5)]
    with manager.lock(P, S):
        monkeypatch.setattr(fs, "flock_path", watched)  # the server's waits from here on
        for poster in posters:
            poster.start()
        for _ in range(web_app.WRITE_THREADS):  # every write thread is waiting on our lock
            assert waiting.acquire(timeout=WAIT)
        for page in (f"/p/{P}/s/{S}", f"/p/{P}/s/{OTHER}/phase/1", "/", "/sessions"):
            with urllib.request.urlopen(url + page, timeout=WAIT) as other:
                assert other.status == 200, page
        assert not statuses and not waiting.acquire(blocking=False)  # no 21st write thread
    for poster in posters:
        poster.join(timeout=3 * WAIT)
    assert len(statuses) == len(posters)
    assert statuses.count(200) == 1 and set(statuses) <= {200, 409}  # one approval; the rest see it done
    assert manager.load_session(P, S)["status"] != "awaiting_review"
