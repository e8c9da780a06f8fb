"""The browser commands: ``serve`` (the review pages, a local web application) and ``report``
(a session as one self-contained HTML file).

Both need the ``web`` extra (Starlette, Jinja2, uvicorn). It is imported only when one of
them runs, so the rest of the command line works without it, and without it both say in
one line how to install it.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from types import ModuleType

import click

from haytham.cli.common import base_dir_option, command, notify_config, otel_config, reviewer_option
from haytham.errors import Issue
from haytham.format.reviewer import Reviewer
from haytham.store import fs
from haytham.store.manager import CheckpointManager
from haytham.store.names import check_path_name
from haytham.web import EXTRA_HINT

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _web(module: str) -> ModuleType:
    """``haytham.web.<module>``, or a one-line error saying how to install the web extra when
    a module from outside haytham is missing (whichever of the extra's packages, or of theirs,
    the pages import first)."""
    import importlib

    try:
        return importlib.import_module(f"haytham.web.{module}")
    except ModuleNotFoundError as error:
        if (error.name or "haytham").split(".")[0] == "haytham":
            raise  # a module of haytham's own is missing: a broken install, not the extra
        raise click.ClickException(
            f"this command needs the web extra, which is not installed (no module {error.name!r}): "
            f"{EXTRA_HINT}"
        ) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@command()
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="The port to listen on.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the inbox in a web browser.")
@reviewer_option
@base_dir_option
def serve(host: str, port: int, open_browser: bool, reviewer: Reviewer | None, base_dir: Path) -> None:
    """Review in the browser: the inbox, session and phase pages, and the review form.

    Serves the sessions under the base directory until Ctrl-C. A review saved on a page is
    written into the phase's user_feedback.md as haytham feedback writes it (lines a person
    added stay), and only over what the page showed (the phase's attempt, its outputs and
    the version of the file: otherwise nothing is saved and the page says what changed). It listens on
    127.0.0.1 by default; any other --host needs an access token, which is printed in the
    address to open (as Jupyter does). The inbox filters by reviewer (?reviewer=NAME), and
    by --reviewer's identity with its "mine" box; it lists 100 phases a page (?page=N),
    newest waiting first (?order=oldest: the longest wait first). A review saved on a page records its time,
    --reviewer (else HAYTHAM_REVIEWER, haytham.yaml's review.reviewer, git's author) and the
    optional justification typed into the form; the notify hook of haytham.yaml is told of
    it. With otel.trace_url in haytham.yaml each agent output links to its trace (docs/otel.md).
    Needs the web extra: pip install 'haytham[web]'.
    """
    app_module = _web("app")
    security = _web("security")
    uvicorn = _import_uvicorn()
    sock = listen(host, port)
    port = sock.getsockname()[1]  # the one the system chose for --port 0
    if is_loopback(host):
        guard = security.Guard(hosts=(*security.LOOPBACK_HOSTS, host))
        url = f"http://{_netloc(host, port)}/"
    else:
        token = security.new_token()
        guard = security.Guard(token=token, hosts=("*",))
        url = f"http://{_netloc(host, port)}/?token={token}"
        click.echo(f"Listening on {host}, not only this machine: every request needs the token below.")
    app = app_module.create_app(
        str(base_dir), guard=guard, reviewer=reviewer, notify=notify_config(), otel=otel_config(), watch=True
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    click.echo(f"Serving the sessions under {base_dir} at {url}  (Ctrl-C to stop)")
    sys.stdout.flush()
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    with sock:
        server.run(sockets=[sock])
    if not server.started:
        raise click.ClickException(f"the server on {_netloc(host, port)} did not start (see above)")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, for uvicorn to serve on; a start-up that cannot
    listen (the port is taken, the address is not this machine's, no permission) is one
    ``click.ClickException`` naming the address and what to do, before anything is printed
    as served. Bound here rather than by uvicorn, which logs its own lines and exits 3."""
    where = _netloc(host, port)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror:
        raise click.ClickException(
            f"cannot listen on {host}: {host} is not an address of this machine "
            f"(the name does not resolve): pass --host with one that is, such as {DEFAULT_HOST}"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: restart at once
        sock.bind(address)
        sock.listen(2048)  # uvicorn's backlog: a browser may connect as soon as it is printed
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            message = f"port {port} on {host} is in use: stop the other server or pass another --port"
        elif error.errno == errno.EADDRNOTAVAIL:
            message = (
                f"cannot listen on {host}: {host} is not an address of this machine: "
                f"pass --host with one that is, such as {DEFAULT_HOST}"
            )
        elif error.errno in (errno.EACCES, errno.EPERM):
            message = (
                f"not allowed to listen on {where} ({error.strerror}): "
                f"pass a --port above 1023, such as {DEFAULT_PORT}"
            )
        else:
            message = f"cannot listen on {where}: {error.strerror or error}"
        raise click.ClickException(message) from None
    return sock


def _import_uvicorn() -> ModuleType:
    try:
        import uvicorn
    except ModuleNotFoundError:
        raise click.ClickException(
            f"this command needs the web extra, which is not installed (no module 'uvicorn'): {EXTRA_HINT}"
        ) from None
    return uvicorn


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


@command()
@click.argument("project")
@click.argument("session")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file to write ('-' for standard output); default PROJECT-SESSION-report.html.",
)
@base_dir_option
def report(project: str, session: str, output: Path | None, base_dir: Path) -> None:
    """Write a session as one self-contained HTML file, to attach to a pull request or an e-mail.

    It holds the timeline, every phase's outputs rendered, the reviews and their comments,
    earlier attempts with diffs, and the costs, with the same pages as haytham serve (an
    output longer than 1 MiB is shown in part, with its size and file). Styles
    and charts are inline, there is no script, and it loads nothing from the network. Needs
    the web extra: pip install 'haytham[web]'. A file with a mistake (a review that does not
    read) is shown at the top of the report and printed as a warning; the rest is reported
    as it reads, and the exit code is 0.
    """
    check_path_name("project", project)
    check_path_name("session", session)
    problems: list[Issue] = []
    html = _web("report").report_html(CheckpointManager(base_dir), project, session, problems=problems)
    for issue in problems:  # the report shows them at its top too; a readable session is exit 0
        click.echo(f"warning: {issue}", err=True)
    if output is not None and str(output) == "-":
        click.echo(html, nl=False)
        return
    target = output or Path(f"{project}-{session}-report.html")
    fs.atomic_write(target, html.encode("utf-8"))
    click.echo(f"Wrote {target}")


JSON_OUTPUT: dict[str, dict[str, str]] = {}
"""``serve`` and ``report`` have no ``--json``: one serves pages, the other writes a file."""
COMMANDS: list[click.Command] = [serve, report]
"""The commands for ``haytham.cli.main`` to register."""
