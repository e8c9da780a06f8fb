"""The Starlette application of ``haytham serve``: the inbox, the sessions page, the session
and phase pages, their forms, and each agent output's raw file (streamed as plain text).

Handlers only parse the request, call ``pages`` (to read) or ``actions`` (to write, through
the manager under its locks) and render a template; ``security.GuardMiddleware`` stands in
front of all of them. A form's POST is answered with a redirect to the page it came from
(303, so a reload never posts twice). Every error a request can cause is a page with a 4xx
status and a sentence: an unsafe name or a bad argument 400, a missing project, session or
phase 404, a review of what the page no longer shows, a move the lifecycle refuses or a
run again while a runner holds the session 409, a file that does not
parse 422; anything unexpected is a 500 page without a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import mimetypes
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import anyio
import anyio.to_thread
import python_multipart  # noqa: F401  # the forms' parser, which Starlette imports at the first form
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from haytham.errors import (
    AlreadyExistsError,
    DocumentError,
    HaythamError,
    InvalidArgumentError,
    LockTimeout,
    MoveRefusedError,
    NotFoundError,
    ReviewConflictError,
    SessionBusyError,
    UnknownPhaseError,
)
from haytham.format.patterns import lazy
from haytham.format.reviewer import Reviewer
from haytham.notify import Notifier, NotifyConfig
from haytham.otel import OtelConfig
from haytham.store.manager import CheckpointManager
from haytham.store.watch import Watcher
from haytham.web import actions, pages
from haytham.web.report import report_html
from haytham.web.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    Guard,
    GuardMiddleware,
    TrustedHosts,
    browser_csrf_cookie,
)
from haytham.web.templating import STATIC, render

MAX_FORM_FIELD = 100_000
"""The longest comment or list of changes a form may send (characters)."""
WRITE_THREADS = 20
"""How many saves of the forms (review, correction, fork, run again) run at once, in threads
of their own: a save waiting on a session's lock (up to the lock timeout) holds one of these,
never one of the 40 of anyio's default limiter, in which the pages are read. A form sent while
all of them are taken waits, without a thread, for one to be free."""

T = TypeVar("T")


def create_app(
    base_dir: str,
    *,
    guard: Guard | None = None,
    reviewer: Reviewer | None = None,
    notify: NotifyConfig | None = None,
    otel: OtelConfig | None = None,
    watch: bool = False,
) -> Starlette:
    """The application serving the sessions under ``base_dir`` (loopback hosts, no token by default).

    ``reviewer`` is who reviews from this server (the inbox's "mine"); ``notify`` the hook told
    of the reviews its pages save (``haytham.notify``); ``otel`` (haytham.yaml's ``otel``) makes
    each agent output on a phase page link to its span when it has a ``trace_url``; ``watch``
    (a long-running ``haytham serve``) keeps the listing pages current from file-system
    events (``haytham.store.watch``) rather than a ``stat`` of every session's files, and
    keeps the index open between them (``Watcher.index``)."""
    guard = guard or Guard()
    mimetypes.init()  # the system's MIME table read now, not on the event loop by the first static file
    manager = CheckpointManager(base_dir)
    watcher = Watcher(manager.base_dir) if watch else None
    if notify is not None:
        Notifier(notify, manager.base_dir).attach(manager)

    writers: list[anyio.CapacityLimiter] = []  # made in the event loop (anyio 3 needs one)

    async def save(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``func`` run in a thread of the writes' limiter (``WRITE_THREADS``)."""
        if not writers:
            writers.append(anyio.CapacityLimiter(WRITE_THREADS))
        return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs), limiter=writers[0])

    def csrf(request: Request) -> str:
        return guard.csrf_token(browser_csrf_cookie(request))

    def _back(path: str, said: str) -> Response:
        """The 303 after a form, to ``path`` with a notice of what was done (signed)."""
        return RedirectResponse(
            f"{path}?{urlencode({'said': said, 'sig': guard.sign(said)})}", status_code=303
        )

    def _messages(request: Request) -> list[str]:
        said, signature = request.query_params.get("said"), request.query_params.get("sig", "")
        return [said] if said and guard.signed(said, signature) else []

    def inbox(request: Request) -> Response:
        query = pages.InboxQuery.parse(request.query_params, reviewer)
        return _page(
            "inbox.html",
            inbox=pages.inbox(manager, query, watcher),
            query=query,
            kinds=pages.INBOX_KINDS,
            orders=pages.INBOX_ORDERS,
            identity=reviewer,
            needs=pages.INBOX_NEEDS,
        )

    def session(request: Request) -> Response:
        project, session_id = _names(request)
        page = pages.session_page(manager, project, session_id)
        from_entry = request.query_params.get("from_entry") or None
        if from_entry is not None and all(e.entry_id != from_entry for e in page.history):
            raise NotFoundError(f"{project}/{session_id} has no history entry {from_entry!r} to fork from")
        return _page(
            "session.html", page=page, csrf=csrf(request), messages=_messages(request), from_entry=from_entry
        )

    def sessions(request: Request) -> Response:
        query = pages.SessionsQuery.parse(request.query_params)
        return _page(
            "sessions.html",
            page=pages.sessions_page(manager, query, watcher),
            columns=pages.SESSION_COLUMNS,
            filters=pages.SESSION_FILTERS,
        )

    def raw(request: Request) -> Response:
        """An agent output's whole file as plain text, streamed (``pages.raw_output``)."""
        project, session_id = _names(request)
        text = request.query_params.get("attempt")
        if text is not None and not text.isdigit():
            raise NotFoundError(f"attempt {text!r} is not an attempt number")
        number, agent = request.path_params["phase"], request.path_params["agent"]
        pieces = pages.raw_output(
            manager, project, session_id, number, agent, None if text is None else int(text)
        )
        return StreamingResponse(pieces, media_type="text/plain; charset=utf-8")

    def phase(request: Request, **extra: Any) -> Response:
        project, session_id = _names(request)
        number = request.path_params["phase"]
        page = pages.phase_page(manager, project, session_id, number, otel=otel)
        version = pages.session_version(manager, project, session_id)
        context: dict[str, Any] = {"conflict": None, "draft": None, "messages": _messages(request)}
        context.update(extra)
        status = context.pop("status", 200)
        return _page(
            "phase.html",
            status=status,
            phase=page,
            version=version,
            csrf=csrf(request),
            reviewer=reviewer,
            **context,
        )

    async def review(request: Request) -> Response:
        project, session_id = _names(request)
        number = request.path_params["phase"]
        form = await _form(request)
        decision = form.get("decision")
        if decision not in ("approve", "changes"):
            raise InvalidArgumentError("the form must say approve or changes")
        submitted = actions.Review(
            approve=decision == "approve",
            comments=form.get("comments", "").replace("\r\n", "\n"),
            changes=actions.parse_changes(form.get("changes", "")),
            version=form.get("version", ""),
            justification=form.get("justification", "").strip() or None,
            reviewer=reviewer,
        )
        try:
            await save(actions.submit_review, manager, project, session_id, number, submitted)
        except ReviewConflictError as conflict:
            return await run_in_threadpool(phase, request, conflict=conflict, draft=submitted, status=409)
        said = "approved" if submitted.approve else "sent back with your comments"
        return _back(f"/p/{_q(project)}/s/{_q(session_id)}/phase/{number}", f"Saved: {said}.")

    async def correct(request: Request) -> Response:
        project, session_id = _names(request)
        number = request.path_params["phase"]
        form = await _form(request)
        agent = form.get("agent", "")
        approve = form.get("approve") == "yes"
        try:
            changed = await save(
                actions.submit_correction,
                manager,
                project,
                session_id,
                number,
                agent,
                form.get("content", ""),
                approve=approve,
                version=form.get("version", ""),
                reviewer=reviewer,
            )
        except ReviewConflictError as conflict:
            return await run_in_threadpool(phase, request, conflict=conflict, draft=None, status=409)
        if not changed:
            said = f"No change: the output of {agent} is as it was; nothing was recorded."
        else:
            said = f"Saved: your correction of {agent}" + (", approved (modified)." if approve else ".")
        return _back(f"/p/{_q(project)}/s/{_q(session_id)}/phase/{number}", said)

    async def fork(request: Request) -> Response:
        project, session_id = _names(request)
        form = await _form(request)
        new_session = form.get("new_session", "")
        entry = form.get("from_entry") or None
        from_phase = None if entry else _number(form.get("from_phase", ""), "from_phase")
        await save(
            actions.fork, manager, project, session_id, new_session, from_phase=from_phase, from_entry=entry
        )
        return _back(f"/p/{_q(project)}/s/{_q(new_session)}", f"Forked from {session_id}.")

    async def rerun(request: Request) -> Response:
        project, session_id = _names(request)
        form = await _form(request)
        from_phase = _number(form.get("from_phase", ""), "from_phase")
        archived = await save(actions.rerun, manager, project, session_id, from_phase)
        said = ", ".join(str(n) for n in archived) or "none"
        return _back(
            f"/p/{_q(project)}/s/{_q(session_id)}",
            f"Phases {said} will run again: run haytham resume {project} {session_id}.",
        )

    def version(request: Request) -> Response:
        project, session_id = _names(request)
        return JSONResponse({"version": pages.session_version(manager, project, session_id)})

    def report(request: Request) -> Response:
        project, session_id = _names(request)
        body = report_html(manager, project, session_id)
        disposition = attachment(f"{project}-{session_id}-report.html")
        return HTMLResponse(body, headers={"content-disposition": disposition})

    async def _form(request: Request) -> dict[str, str]:
        form = await request.form(max_files=0, max_fields=20)
        values = {key: value for key, value in form.items() if isinstance(value, str)}
        if not guard.csrf_ok(request.cookies.get(CSRF_COOKIE), values.get(CSRF_FIELD)):
            raise HTTPException(
                403, "the form's CSRF token is missing or wrong: reload the page and try again"
            )
        if any(len(value) > MAX_FORM_FIELD for value in values.values()):
            raise HTTPException(413, f"a field of the form is longer than {MAX_FORM_FIELD:,} characters")
        return values

    base = "/p/{project}/s/{session}"
    routes = [
        Route("/", inbox),
        Route("/sessions", sessions),
        Route(base, session),
        Route(base + "/version", version),
        Route(base + "/report", report),
        Route(base + "/fork", fork, methods=["POST"]),
        Route(base + "/rerun", rerun, methods=["POST"]),
        Route(base + "/phase/{phase:int}", phase),
        Route(base + "/phase/{phase:int}/review", review, methods=["POST"]),
        Route(base + "/phase/{phase:int}/correct", correct, methods=["POST"]),
        Route(base + "/phase/{phase:int}/raw/{agent}", raw),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    handlers: dict[Any, Any] = {
        HTTPException: _http_error,
        HaythamError: _library_error,
        Exception: _server_error,
    }

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:  # the inotify instance back to the system (a user has 128)
            if watcher is not None:
                watcher.close()

    app = Starlette(
        lifespan=lifespan,
        routes=routes,
        middleware=[Middleware(TrustedHosts, guard=guard), Middleware(GuardMiddleware, guard=guard)],
        exception_handlers=handlers,
    )
    app.state.watcher = watcher
    return app


_FALLBACK_SAFE = lazy(r"[^A-Za-z0-9 ._~()+!#$&-]")
"""What the plain ``filename=`` of a download replaces with ``_`` (quotes, backslashes,
``;``, ``=``, anything not ASCII): it stays one quoted parameter for every browser."""
_ATTR_CHARS = "!#$&+.^_`|~-"
"""RFC 5987's attr-chars besides letters and digits: left as they are in ``filename*``."""


def attachment(filename: str) -> str:
    """A ``Content-Disposition`` that downloads as ``filename`` (RFC 6266): an ASCII
    ``filename="..."`` for old clients, then ``filename*=UTF-8''...`` percent-encoded (RFC
    5987), which a browser prefers. Whatever ``filename`` holds (a project folder may hold a
    quote), it is these two parameters and nothing else. Starlette's ``FileResponse`` has
    no helper for it, and writes the name unescaped in ``filename="..."``."""
    fallback = _FALLBACK_SAFE.sub("_", filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe=_ATTR_CHARS)}"


def _names(request: Request) -> tuple[str, str]:
    """The project and session of the URL, through the store's name checks (400 if unsafe)."""
    project, session = request.path_params["project"], request.path_params["session"]
    pages.check_names(project, session)
    return project, session


def _number(text: str, field: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError(f"{field} must be a whole number, got {text!r}", field=field) from None


def _page(template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, standalone=False, **context), status_code=status)


def _error_page(status: int, reason: str, message: str) -> HTMLResponse:
    return _page("error.html", status=status, code=status, reason=reason, message=message, messages=[])


def _http_error(request: Request, error: Exception) -> Response:
    """An HTTP error as its page (a plain function: Starlette renders it in the thread pool)."""
    assert isinstance(error, HTTPException)
    reasons = {404: "Not found", 405: "Method not allowed", 403: "Forbidden", 413: "Too large"}
    detail = error.detail
    if error.status_code == 404 and detail == "Not Found":
        detail = f"There is no page at {request.url.path}."
    return _error_page(error.status_code, reasons.get(error.status_code, "Bad request"), str(detail))


def _library_error(request: Request, error: Exception) -> Response:
    """A library error as a 4xx page: what the library said, never a traceback."""
    if isinstance(error, (NotFoundError, UnknownPhaseError)):
        return _error_page(404, "Not found", str(error))
    if isinstance(error, (MoveRefusedError, AlreadyExistsError)):
        return _error_page(409, "Conflict", str(error))
    if isinstance(error, SessionBusyError):
        return _error_page(409, "Busy", str(error))
    if isinstance(error, LockTimeout):
        return _error_page(409, "Busy", f"{error} Try again in a moment.")
    if isinstance(error, DocumentError):
        return _error_page(422, "A file cannot be read", str(error))
    return _error_page(400, "Bad request", str(error))


def _server_error(request: Request, error: Exception) -> Response:
    return _error_page(500, "Server error", "Something went wrong on the server (its log says what).")


def _q(name: str) -> str:
    """A project or session name as one URL path segment."""
    return quote(name, safe="")
