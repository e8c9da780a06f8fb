"""Issue 25, items 6 and 7: ``haytham serve`` as a real server.

Item 6: a start-up that cannot listen (a port another process holds, an address that is not
this machine's) is one ``Error:`` line naming the address and what to do, exit code 1, and
no "Serving ..." line, since nothing is served. Item 7: a request waiting on one session's
lock (a review POST while another process holds the lock, up to its timeout) does not stall
the other requests: the store is called off the event loop.

Both on real session files, real sockets and a real flock; no mocks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from test_web import HAYTHAM, WAIT, free_port

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
    done = serve(tmp_path / "projects", "--host", host, "--port", str(free_port()))
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
