"""The session most web tests start from, and a client of the app serving it: one home for
how both are made (the demo workflow stopped at phase 1's review gate, the app on a loopback
host name)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.web.app import create_app

P, S = "demo", "idea-001"


def awaiting_demo(base: Path) -> CheckpointManager:
    """A demo session (``P``/``S``) under ``base`` stopped at phase 1's review gate (attempt 1)."""
    manager = CheckpointManager(base)
    assert run_demo(manager, S, review="manual").status == "awaiting_review"
    return manager


@contextmanager
def client_of(manager: CheckpointManager, **app_options: Any) -> Iterator[TestClient]:
    """A client of ``create_app`` over the manager's base directory, as a browser on 127.0.0.1."""
    with TestClient(create_app(str(manager.base_dir), **app_options), base_url="http://127.0.0.1") as client:
        yield client


@contextmanager
def served_in_a_thread(manager: CheckpointManager, wait: float = 60) -> Iterator[str]:
    """uvicorn serving ``create_app`` over the manager's base directory in a thread of this
    process (so a test can see where the server's threads wait, or hold a page in flight);
    its address once it has started, stopped at the end."""
    import socket
    import threading
    import time

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(str(manager.base_dir)), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + wait
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=wait)
        sock.close()


def copy_session(source: Path, target: Path) -> None:
    """The session folder ``source`` copied to ``target``, its manifest naming the new id."""
    import shutil

    shutil.copytree(source, target)
    manifest = target / "session_manifest.md"
    manifest.write_text(manifest.read_text("utf-8").replace(source.name, target.name), "utf-8")


def grow(base: Path, count: int) -> None:
    """Copies of session ``s-000`` of project ``P`` up to ``count`` sessions, each its own id."""
    sessions = base / P / "sessions"
    for number in range(1, count):
        target = sessions / f"s-{number:03d}"
        if not target.exists():
            copy_session(sessions / "s-000", target)
