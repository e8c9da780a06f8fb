"""The guards of ``haytham serve``: an ASGI middleware in front of every request.

- **Headers.** Every response carries a Content-Security-Policy that allows scripts only from
  the server's own files (``script-src 'self'``, so no inline script runs, even one that
  slipped into a page), no plugins, no framing, forms posting only to the server, plus
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin`` (no address leaves
  for another site, and a form's Origin is still sent for the CSRF check).
- **Hosts.** The Host header must name exactly a host the server was started for (the
  loopback names ``localhost``, ``127.0.0.1`` and ``[::1]`` by default, with any port), so a
  web page elsewhere cannot reach it by DNS rebinding: ``[::1].evil.example`` or
  ``127.0.0.1.evil.example`` is another host. ``TrustedHosts`` is Starlette's
  ``TrustedHostMiddleware`` with an IPv6-aware reading of the header.
- **Access token.** A server started with a token (any ``--host`` other than the loopback)
  answers only a request that brings it, as ``?token=`` once (then kept in an HttpOnly
  cookie), the way Jupyter does; the comparison takes the same time for every guess.
- **CSRF.** Every browser gets a random cookie; every form carries the HMAC of that cookie
  under a secret made when the server starts, and a POST whose field does not match the
  cookie (or whose Origin is another site) is refused with 403 before any handler runs.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote_from_bytes, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from haytham.format.patterns import lazy

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every served page: no inline script, nothing from elsewhere."""
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""The host names ``haytham serve`` answers for by default (any port)."""
TOKEN_COOKIE = "haytham_token"
CSRF_COOKIE = "haytham_csrf"
CSRF_FIELD = "csrf"


def new_token() -> str:
    """A fresh access token, as ``haytham serve`` prints it for a non-loopback host."""
    return secrets.token_urlsafe(24)


class Guard:
    """The server's secrets and the checks made with them."""

    def __init__(self, *, token: str | None = None, hosts: Iterable[str] = LOOPBACK_HOSTS) -> None:
        self.token = token
        self.hosts = frozenset(allowed_host(h) for h in hosts)
        """The Host names answered (``allowed_host``'s form), ``*`` for any."""
        self.secret = secrets.token_bytes(32)

    def csrf_token(self, cookie: str) -> str:
        """What a form of a browser with CSRF cookie ``cookie`` must carry back."""
        return hmac.new(self.secret, cookie.encode("utf-8"), hashlib.sha256).hexdigest()

    def sign(self, text: str) -> str:
        """A signature of a notice the server puts in a URL after a form (``?said=...&sig=...``),
        so that a link from elsewhere cannot make a page say what the server did not."""
        return hmac.new(self.secret, b"said:" + text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def signed(self, text: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(text), signature)

    def csrf_ok(self, cookie: str | None, field: str | None) -> bool:
        if not cookie or not field:
            return False
        return hmac.compare_digest(self.csrf_token(cookie), field)

    def token_ok(self, given: str | None) -> bool:
        if self.token is None:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


_HOST = lazy(r"(?P<name>[a-z0-9._~%!$&'()*+,;=-]+|\[(?P<ipv6>[0-9a-f:.]+)\])(?::[0-9]*)?", re.IGNORECASE)
"""A Host header (RFC 9110): a name or IPv4 address, or an IPv6 address in brackets, then a
port; nothing else (no user, no second colon, no bare IPv6)."""


def host_name(header: str | None) -> str | None:
    """The host of a Host header, written as ``allowed_host`` writes the hosts it is compared
    with (lowercase, an IPv6 address in brackets in its short form, no port); None when the
    header is not a host at all."""
    match = _HOST.fullmatch(header or "")
    if match is None:
        return None
    if match["ipv6"] is not None:
        try:
            return f"[{ipaddress.IPv6Address(match['ipv6']).compressed}]"
        except ValueError:
            return None
    return match["name"].lower()


def allowed_host(host: str) -> str:
    """A host the server answers for (``--host``), as ``host_name`` writes a Host header's:
    ``::1`` and ``[0::1]`` are ``[::1]``."""
    host = host.strip().lower()
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return host
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


class TrustedHosts(TrustedHostMiddleware):
    """Starlette's ``TrustedHostMiddleware`` over the guard's hosts, reading the Host header
    with ``host_name``: Starlette before 1.10 (``pyproject.toml`` allows 0.40) cut the header
    at its first colon, so ``[::1]:8765`` became ``[`` and a server on ``::1`` refused its own
    pages. A host matches a configured one exactly (or a ``*.example`` pattern, as in
    Starlette), never by a prefix or a suffix; ``*`` (``--host 0.0.0.0``, where the token
    guards) lets every host through. A refusal is a 403 with the security headers, and there
    is no redirect to ``www.``."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        super().__init__(app, allowed_hosts=sorted(guard.hosts), www_redirect=False)

    def allows(self, host: str) -> bool:
        """Whether ``host`` (``host_name``'s form) is one the server answers for."""
        return self.allow_any or any(
            host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))
            for pattern in self.allowed_hosts
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = host_name(Headers(scope=scope).get("host"))
            if host is None or not self.allows(host):
                await _plain(403, "This server does not answer for that host name.", send)
                return
        await self.app(scope, receive, send)


def csrf_cookie(request: Request) -> str | None:
    return request.cookies.get(CSRF_COOKIE)


class GuardMiddleware:
    """Access token, CSRF and the security headers, for every HTTP request (behind ``TrustedHosts``)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        new_cookies: list[str] = []
        if self.guard.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            given = query.get("token")
            if given is not None and self.guard.token_ok(given):
                new_cookies.append(f"{TOKEN_COOKIE}={given}; Path=/; HttpOnly; SameSite=Strict")
                rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
                path = scope.get("raw_path") or scope["path"].encode("utf-8")
                await _redirect(local_path(path) + (f"?{rest}" if rest else ""), new_cookies, send)
                return
            if not self.guard.token_ok(request.cookies.get(TOKEN_COOKIE)):
                await _plain(
                    403,
                    "This server needs its access token: open the address haytham serve printed "
                    "(it ends in ?token=...).",
                    send,
                )
                return
        if request.method == "POST" and not _same_origin(request):
            await _plain(403, "Refused: the form was sent from another site.", send)
            return
        if not csrf_cookie(request):
            new_cookies.append(
                f"{CSRF_COOKIE}={secrets.token_urlsafe(24)}; Path=/; HttpOnly; SameSite=Strict"
            )
            scope = dict(scope)
            scope["haytham.csrf_cookie"] = new_cookies[-1].split(";")[0].split("=", 1)[1]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
                for cookie in new_cookies:
                    headers.append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def browser_csrf_cookie(request: Request) -> str:
    """The CSRF cookie of this browser: the one it sent, or the one set on this response."""
    return request.cookies.get(CSRF_COOKIE) or str(request.scope.get("haytham.csrf_cookie", ""))


def _same_origin(request: Request) -> bool:
    """Whether a POST's Origin (when the browser sent one) is this server."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
"""The characters ``local_path`` leaves as they are; every other one is percent-encoded."""


def local_path(path: bytes) -> str:
    """``path`` as a ``Location`` that can only name a page of this server: one leading slash
    (``//evil.example/`` would be another host to a browser, and so would ``/\\evil.example``,
    which browsers read as ``//``), with backslashes, control characters and spaces
    percent-encoded, so nothing a browser strips or turns into a slash is left."""
    encoded = quote_from_bytes(path, safe=_PATH_SAFE)
    return "/" + encoded.lstrip("/")


async def _plain(status: int, text: str, send: Send) -> None:
    body = text.encode("utf-8")
    headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]
    headers += [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect(location: str, cookies: list[str], send: Send) -> None:
    """A 303 to ``location``, a path of this server (``local_path``), never another host."""
    headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]
    headers += [(b"location", location.encode("latin-1")), (b"content-length", b"0")]
    headers += [(b"set-cookie", c.encode("latin-1")) for c in cookies]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
