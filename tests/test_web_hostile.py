"""Issue 24, hostile trees and requests against ``haytham serve`` and ``haytham report``.

An address that sends a browser elsewhere (an open redirect), a Host header that only looks
like the loopback (DNS rebinding), a session name that breaks out of the download's
Content-Disposition, a read racing a writer, and an agent output of hundreds of megabytes:
each on real session files in a tmp dir, through Starlette's test client, the real command
line, or a real writer process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

import anyio
from starlette.applications import Starlette
from starlette.testclient import TestClient

from haytham import CheckpointManager
from haytham.run.demo import run_demo
from haytham.web.app import create_app
from haytham.web.security import LOOPBACK_HOSTS, Guard

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


# ------------------------------------------------------------ item 10: host names


@pytest.fixture
def loopback(manager: CheckpointManager) -> Iterator[TestClient]:
    """The app as plain ``haytham serve`` makes it: the loopback names only, no token."""
    with TestClient(create_app(str(manager.base_dir)), base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(
    "host",
    [
        "[::1].evil.example",
        "[::1].evil.example:8765",
        "127.0.0.1.evil.example",
        "localhost.evil.example:8765",
        "evil.localhost",
        "[::1]evil",
        "[::2]:8765",
        "::1",
        "localhost:8765:1",
        "localhost@evil.example",
        "",
    ],
)
def test_a_host_that_only_looks_like_the_loopback_is_refused(loopback: TestClient, host: str) -> None:
    answer = loopback.get("/", headers={"host": host})
    assert answer.status_code == 403, answer.text
    assert answer.headers["x-frame-options"] == "DENY"  # refused with the security headers


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:8765", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8765", "[0::1]:8765"]
)
def test_the_loopback_names_with_any_port_are_answered(loopback: TestClient, host: str) -> None:
    assert loopback.get("/", headers={"host": host}).status_code == 200


def test_the_configured_host_is_answered_and_no_other(manager: CheckpointManager) -> None:
    cases = (
        ("127.0.0.2", "127.0.0.2:8765", "127.0.0.2.evil.example"),
        ("::1", "[::1]:9000", "[::1].evil.example:9000"),
        ("[::1]", "[::1]", "[::1].evil.example"),
        ("review.local", "REVIEW.local:8765", "review.local.evil.example"),
    )
    for configured, host, lookalike in cases:
        guard = Guard(hosts=(*LOOPBACK_HOSTS, configured))
        with TestClient(
            create_app(str(manager.base_dir), guard=guard), base_url="http://127.0.0.1"
        ) as client:
            assert client.get("/", headers={"host": host}).status_code == 200, host
            assert client.get("/", headers={"host": lookalike}).status_code == 403, lookalike
            assert client.get("/", headers={"host": "evil.example"}).status_code == 403


def test_off_localhost_any_host_name_is_answered_with_the_token(off_localhost: TestClient) -> None:
    """``--host 0.0.0.0`` answers whatever name reaches it (docs: the token guards it instead)."""
    assert off_localhost.get("/", headers={"host": "reviews.example:8765"}).status_code == 403  # no token
    entered = off_localhost.get(f"/?token={TOKEN}", headers={"host": "reviews.example:8765"})
    assert entered.status_code == 200


# -------------------------------------------------- item 13: the download's file name

HOSTILE_PROJECT = "x\"; filename*=UTF-8''evil.exe; a=\"é"


def test_the_report_download_name_cannot_add_parameters(
    manager: CheckpointManager, loopback: TestClient
) -> None:
    """A project folder whose name holds a quote: the header names the report, nothing else."""
    (manager.base_dir / P).rename(manager.base_dir / HOSTILE_PROJECT)
    answer = loopback.get(f"/p/{quote(HOSTILE_PROJECT, safe='')}/s/{S}/report")
    assert answer.status_code == 200, answer.text
    header = answer.headers["content-disposition"]
    params = header.split(";")
    assert params[0] == "attachment" and len(params) == 3, header
    fallback, extended = (p.strip() for p in params[1:])
    assert re.fullmatch(r'filename="[\x20-\x7e]*"', fallback) and fallback.count('"') == 2, header
    assert "\\" not in fallback and ";" not in fallback and "=" not in fallback.removeprefix("filename=")
    assert extended.startswith("filename*=UTF-8''")
    assert unquote(extended.removeprefix("filename*=UTF-8''")) == f"{HOSTILE_PROJECT}-{S}-report.html"
    assert re.fullmatch(r"[A-Za-z0-9%!#$&+.^_`|~-]*", extended.removeprefix("filename*=UTF-8''")), header
