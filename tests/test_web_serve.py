"""Issue 25, items 6 and 7: ``haytham serve`` as a real server.

Item 6: a start-up that cannot listen (a port another process holds, an address that is not
this machine's) is one ``Error:`` line naming the address and what to do, exit code 1, and
no "Serving ..." line, since nothing is served. Item 7: a request waiting on one session's
lock (a review POST while another process holds the lock, up to its timeout) does not stall
the other requests: the store is called off the event loop.

Both on real session files, real sockets and a real flock; no mocks.
"""

from __future__ import annotations

import http.cookiejar
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from test_web import HAYTHAM, WAIT, P, S, form_fields
from web_demo import served_in_a_thread

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.store import fs

OTHER = "idea-002"


# ------------------------------------------------------------ item 6: start-up


def serve(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``haytham serve ARGS`` run to its end (it must end by itself: it cannot listen)."""
    return subprocess.run(
        [str(HAYTHAM), "serve", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        cwd=base.parent,
        timeout=WAIT,
    )


def test_a_busy_port_is_one_error_line_and_exit_1_without_serving(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    with socket.socket() as other:  # another server on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        done = serve(base, "--port", str(port))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Serving" not in done.stdout, done.stdout
    assert done.stderr.splitlines() == [
        f"Error: port {port} on 127.0.0.1 is in use: stop the other server or pass another --port"
    ], done.stderr


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("192.0.2.1", "192.0.2.1 is not an address of this machine"),  # TEST-NET-1, never local
        ("no-such-host.invalid", "no-such-host.invalid is not an address of this machine"),
    ],
)
def test_an_address_that_is_not_this_machines_is_one_error_line_and_exit_1(
    tmp_path: Path, host: str, said: str
) -> None:
    done = serve(tmp_path / "projects", "--host", host, "--port", "0")  # never bound: not this machine
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Serving" not in done.stdout, done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: cannot listen on {host}: {said}"), done.stderr
    assert "--host" in lines[0]


def test_port_0_serves_on_the_port_the_system_chose_and_prints_it(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(HAYTHAM), "serve", "--port", "0", "--base-dir", str(base)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
        try:
            deadline = time.monotonic() + WAIT
            while "http://" not in log_path.read_text():
                assert process.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "haytham serve printed no address"
                time.sleep(0.05)
            printed = log_path.read_text()
            url = printed[printed.index("http://") :].split()[0]
            assert not url.endswith(":0/"), printed
            with urllib.request.urlopen(url, timeout=WAIT) as response:  # bound before it was printed
                assert response.status == 200
        finally:
            process.terminate()
            process.wait(timeout=WAIT)


# ------------------------------------------------------ item 7: off the event loop


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, CheckpointManager]]:
    """uvicorn serving two demo sessions awaiting review, in a thread of this process (so the
    test can see where its threads wait); (its address, the manager) once it has started."""
    manager = CheckpointManager(tmp_path / "projects")
    for session in (S, OTHER):
        assert run_demo(manager, session, review="manual").status == "awaiting_review"
    with served_in_a_thread(manager, WAIT) as address:
        yield address, manager


def waiting_on_a_lock() -> bool:
    """Whether a thread other than this one is inside the store's wait for a flock."""
    me = threading.get_ident()

    def waits(frame: FrameType | None) -> bool:
        while frame is not None:
            if frame.f_code is fs.flock_path.__code__:
                return True
            frame = frame.f_back
        return False

    return any(waits(frame) for ident, frame in sys._current_frames().items() if ident != me)


def test_a_review_waiting_on_a_session_lock_does_not_stall_other_pages(
    server: tuple[str, CheckpointManager],
) -> None:
    url, manager = server
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    phase = f"{url}/p/{P}/s/{S}/phase/1"
    with browser.open(phase, timeout=WAIT) as response:
        fields = form_fields(response.read().decode())
    body = urllib.parse.urlencode({**fields, "decision": "approve", "comments": "", "changes": ""})
    posted: list[int] = []

    def post() -> None:
        with browser.open(phase + "/review", data=body.encode(), timeout=2 * WAIT) as answer:
            posted.append(answer.status)

    with manager.lock(P, S):  # another process saving this session, as far as the server knows
        poster = threading.Thread(target=post, daemon=True)
        poster.start()
        deadline = time.monotonic() + WAIT
        while not waiting_on_a_lock():  # the review is now waiting for the lock we hold
            assert poster.is_alive() and time.monotonic() < deadline, f"the review never waited: {posted}"
            time.sleep(0.01)
        with urllib.request.urlopen(f"{url}/p/{P}/s/{OTHER}", timeout=2 * WAIT) as other:
            assert other.status == 200
        # The other page answered while the review still waits: the lock is still ours.
        assert poster.is_alive() and not posted, "the other page waited for the review's lock"
    poster.join(timeout=WAIT)
    assert posted == [200]  # the review went through once the lock was free (after its 303)
    assert manager.load_session(P, S)["status"] != "awaiting_review"
