"""Issue 24, hostile trees and requests against ``haytham serve`` and ``haytham report``.

An address that sends a browser elsewhere (an open redirect), a Host header that only looks
like the loopback (DNS rebinding), a session name that breaks out of the download's
Content-Disposition, a read racing a writer, and an agent output of hundreds of megabytes:
each on real session files in a tmp dir, through Starlette's test client, the real command
line, or a real writer process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

import anyio
from starlette.applications import Starlette
from starlette.testclient import TestClient

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.web.app import create_app
from haytham.web.security import Guard

P, S = "demo", "idea-001"
TOKEN = "s3cret-token"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """A demo session stopped at phase 1's review gate."""
    manager = CheckpointManager(tmp_path / "projects")
    assert run_demo(manager, S, review="manual").status == "awaiting_review"
    return manager


@pytest.fixture
def off_localhost(manager: CheckpointManager) -> Iterator[TestClient]:
    """The app as ``haytham serve --host 0.0.0.0`` makes it: any host name, a token."""
    guard = Guard(token=TOKEN, hosts=("*",))
    app = create_app(str(manager.base_dir), guard=guard)
    with TestClient(app, base_url="http://10.0.0.5:8765") as client:
        yield client


# ------------------------------------------------------------- item 10: redirects


def raw_get(
    app: Starlette, raw_path: bytes, query: bytes, host: bytes = b"10.0.0.5:8765"
) -> tuple[int, dict[str, str]]:
    """GET of exactly ``raw_path`` (which an HTTP client would read as another host) straight
    through the ASGI interface, as uvicorn passes a request line on; (status, headers)."""
    answer: dict[str, object] = {}

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode("latin-1"): v.decode("latin-1") for k, v in message["headers"]}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(raw_path.decode("latin-1")),
        "raw_path": raw_path,
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", host)],
        "client": ("10.0.0.9", 5000),
        "server": ("10.0.0.5", 8765),
    }
    anyio.run(app, scope, receive, send)
    return int(str(answer["status"])), dict(answer["headers"])  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "path",
    [
        "//evil.example/",
        "///evil.example/",
        "/\\evil.example/",
        "//evil.example/%2F..",
        "/\\/evil.example/",
        "/\t/evil.example/",
    ],
)
def test_the_token_redirect_stays_on_this_server(manager: CheckpointManager, path: str) -> None:
    app = create_app(str(manager.base_dir), guard=Guard(token=TOKEN, hosts=("*",)))
    status, headers = raw_get(app, path.encode(), f"token={TOKEN}&kind=failed".encode())
    assert status == 303
    location = headers["location"]
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
    assert "\\" not in location and "\t" not in location and ":" not in location.split("?")[0]
    assert location.endswith("?kind=failed") and "evil.example" in location  # the same path, made local


def test_the_token_redirect_keeps_an_ordinary_path(off_localhost: TestClient) -> None:
    answer = off_localhost.get(f"/p/{P}/s/{S}?token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == f"/p/{P}/s/{S}"
