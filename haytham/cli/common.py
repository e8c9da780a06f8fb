"""What every haytham command shares: how errors read, where the base directory is, how output looks.

The command modules (sessions, review, running, checks, history, ops, git) import this and
``haytham.cli.present`` (what several commands print about a session, itself built on this),
never each other nor ``haytham.cli.main``, which imports them to register their commands.
Every convention of the command line has its one home here:

- errors: ``Command`` and ``Group`` turn library and OS errors into one ``Error: ...`` line
  and exit code 1, whether a command runs under the ``haytham`` group or on its own; usage
  mistakes keep click's exit code 2;
- output that cannot be written: while a command runs, stdout and stderr are
  ``GuardedStream``s, so a closed pipe (``haytham demo | head -1``) or a failing terminal
  stops the printing, never the work; the exit code is the work's;
- the base directory: ``base_dir_option``, resolved as ``--base-dir``, else
  ``HAYTHAM_BASE_DIR``, else ``storage.base_dir`` of ``./haytham.yaml``, else ``./projects``;
- output: ``new_console()`` (colour, live display and wrapping only on a terminal), tables
  (``stream_table`` for one that may be long: printed a row at a time on a terminal),
  ``--json`` with ``emit_json``, and the small formats (``seconds``, ``when``) and
  ``suggest`` for the command lines that messages recommend.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from haytham.errors import HaythamError, InvalidArgumentError, StorageError, storage_error
from haytham.format import layout
from haytham.format.reviewer import Reviewer, parse_reviewer

if TYPE_CHECKING:  # rich is imported by the functions that draw, so a command that prints
    # plain lines (``--version``, ``validate`` in a hook) does not pay for it
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    from rich.text import Text

    from haytham.notify import NotifyConfig
    from haytham.otel import OtelConfig
    from haytham.store.manager import CheckpointManager

CONFIG_FILE = layout.CONFIG_FILE
DEFAULT_BASE_DIR = layout.DEFAULT_BASE_DIR
BASE_DIR_ENVVAR = layout.BASE_DIR_VARIABLE
REVIEWER_ENVVAR = layout.REVIEWER_VARIABLE
F = TypeVar("F", bound=Callable[..., Any])

# ------------------------------------------------------------------------- errors


def describe_error(error: BaseException) -> str:
    """One line for an error: the library's message, or an OS error's file and reason in
    the plain words of ``haytham.errors.storage_error`` ("... is a folder where a file
    should be"), never a traceback."""
    if isinstance(error, OSError) and not isinstance(error, HaythamError) and error.strerror:
        if error.filename:
            plain = storage_error(error, os.fsdecode(error.filename), "access")
            if isinstance(plain, StorageError):
                return str(plain)
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    return str(error)


@contextlib.contextmanager
def expected_errors() -> Iterator[None]:
    """Library and OS errors become ``click.ClickException``: ``Error: ...`` and exit code 1."""
    try:
        yield
    except (HaythamError, OSError) as error:
        raise click.ClickException(describe_error(error)) from None


class GuardedStream(io.TextIOBase):
    """A text stream that stops writing, silently, the first time the stream under it fails.

    A command that is running agents or walking reviews must not die half-way because the
    reader of its output went away (``| head -1``) or its terminal did: the first OSError of
    a write or flush is swallowed and every later write is dropped. The file descriptor is
    then pointed at the null device, so that what the stream's own buffer still holds does
    not fail again when Python flushes it at exit (which would change the exit code).
    """

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream
        self.failed = False
        """True once a write or flush failed: nothing more is written."""

    @property
    def encoding(self) -> str:  # type: ignore[override]  # click reads it to trust the stream
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return not self.failed and self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                self.stream.write(text)
            except OSError:
                self._stop()
        return len(text)

    def flush(self) -> None:
        if not self.failed:
            try:
                self.stream.flush()
            except OSError:
                self._stop()

    def _stop(self) -> None:
        self.failed = True
        with contextlib.suppress(AttributeError, ValueError, OSError, io.UnsupportedOperation):
            descriptor = self.stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, descriptor)
            os.close(null)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """Run the block with stdout and stderr guarded (see ``GuardedStream``); nesting is a no-op."""
    if isinstance(sys.stdout, GuardedStream):
        yield
        return
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GuardedStream(stdout), GuardedStream(stderr)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = stdout, stderr


class Command(click.Command):
    """A command whose expected errors read ``Error: ...``, never a traceback.

    Both parsing (the ``--base-dir`` option reads ``haytham.yaml``) and running are covered,
    so a command behaves the same under the ``haytham`` group and invoked on its own.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with expected_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with guarded_output(), expected_errors():
            return super().invoke(ctx)


class Group(Command, click.Group):
    """A command group whose commands and subgroups are ``Command`` and ``Group`` too."""

    command_class = Command
    group_class = type  # subgroups are of this class


def command(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], Command]:
    """``click.command`` making a ``Command``."""
    return click.command(name, cls=Command, **attrs)


# ----------------------------------------------------------------- the base directory


def _resolve_base_dir(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """The option's or the variable's value, else haytham.yaml's ``storage.base_dir``.

    ``find_config`` gives ``./projects`` when there is no haytham.yaml, and a located
    DocumentError when there is a broken one.
    """
    if value is not None:
        return value
    from haytham.config import find_base_dir  # reads YAML: only without --base-dir and the variable

    return find_base_dir()


def _resolve_reviewer(ctx: click.Context, param: click.Parameter, value: str | None) -> Reviewer | None:
    """The option's or the variable's reviewer, else haytham.yaml's ``review.reviewer``, else
    git's author here, else None (a review that names nobody)."""
    if value is not None:
        try:
            return parse_reviewer(value)
        except InvalidArgumentError as error:
            raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    from haytham.config import find_config  # reads YAML: only when no reviewer is given
    from haytham.git.repository import author

    configured = find_config().reviewer
    if configured is not None:
        return configured
    found = author(Path.cwd())
    return None if found is None else parse_reviewer(found)


def reviewer_option(function: F) -> F:
    """``--reviewer``: the option, else ``HAYTHAM_REVIEWER``, else haytham.yaml's
    ``review.reviewer``, else git's author (``git var GIT_AUTHOR_IDENT``)."""
    return click.option(
        "--reviewer",
        callback=_resolve_reviewer,
        envvar=REVIEWER_ENVVAR,
        show_envvar=True,
        help="Who reviews: 'Name <email>', a name or an address; without the option or the "
        f"variable, review.reviewer of ./{CONFIG_FILE}, else git's author.",
    )(function)


def _resolve_mine(ctx: click.Context, param: click.Parameter, value: str | None) -> Reviewer | None:
    """``--reviewer`` of a listing: resolved as ``reviewer_option`` resolves it, but only when
    the listing is filtered by it (``--mine``, or ``--reviewer`` on the command line), so a
    plain listing neither reads haytham.yaml nor asks git who the author is."""
    given = ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.COMMANDLINE
    if not (ctx.params.get("mine") or given):
        return None
    return _resolve_reviewer(ctx, param, value)


def mine_options(function: F) -> F:
    """``--mine`` and ``--reviewer``: keep only what the current reviewer (found as
    ``reviewer_option`` finds them) may review; ``--reviewer`` on the command line implies
    ``--mine``. The command receives ``mine`` and ``reviewer`` (None: no such filter)."""
    function = click.option(
        "--reviewer",
        callback=_resolve_mine,
        envvar=REVIEWER_ENVVAR,
        show_envvar=True,
        help="Who --mine is: 'Name <email>', a name or an address (given here, it implies --mine); "
        f"without the option or the variable, review.reviewer of ./{CONFIG_FILE}, else git's author.",
    )(function)
    return click.option(
        "--mine",
        is_flag=True,
        is_eager=True,
        help="Only what the current reviewer may review: a phase whose workflow names them in its "
        "reviewers:, or names no reviewers (anyone's).",
    )(function)


def notify_config() -> NotifyConfig | None:
    """``notify`` of ./haytham.yaml, or None. A haytham.yaml that cannot be read was already
    an error unless ``--base-dir`` was given; then it is a warning, and nobody is notified."""
    from haytham.config import find_config

    try:
        return find_config().notify
    except HaythamError as error:
        click.echo(f"warning: {error}; the notify hook is off", err=True)
        return None


def otel_config() -> OtelConfig | None:
    """``otel`` of ./haytham.yaml (trace exports and the pages' trace links), or None; a
    haytham.yaml that cannot be read is a warning here, and the pages have no trace links."""
    from haytham.config import find_config

    try:
        return find_config().otel
    except HaythamError as error:
        click.echo(f"warning: {error}; the trace links are off", err=True)
        return None


def notified(manager: CheckpointManager) -> CheckpointManager:
    """``manager`` with the ``notify:`` hook of ./haytham.yaml attached (``haytham.notify``),
    its deliveries waited for (at most their timeout) when the command ends, so none is cut
    off by the process's exit (``notify_config``)."""
    from haytham.notify import Notifier

    config = notify_config()
    if config is not None:
        notifier = Notifier(config, manager.base_dir).attach(manager)
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.call_on_close(notifier.flush)
    return manager


def base_dir_option(function: F) -> F:
    """``--base-dir``: the option, else ``HAYTHAM_BASE_DIR``, else haytham.yaml, else ./projects."""
    return click.option(
        "--base-dir",
        type=click.Path(file_okay=False, path_type=Path),
        callback=_resolve_base_dir,
        envvar=BASE_DIR_ENVVAR,
        show_envvar=True,
        help="The directory that holds the projects; without the option or the variable, "
        f"storage.base_dir of ./{CONFIG_FILE}, else ./{DEFAULT_BASE_DIR}.",
    )(function)


def suggest(*words: str) -> str:
    """A haytham command line to suggest, with ``--base-dir`` when it was given on this one."""
    line = ["haytham", *words]
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.get_parameter_source("base_dir") == click.core.ParameterSource.COMMANDLINE:
        line += ["--base-dir", str(ctx.params["base_dir"])]
    return shlex.join(line)


# --------------------------------------------------------------------------- JSON


def json_option(function: F) -> F:
    """``--json``: print one JSON object with the keys documented in docs/cli.md."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts (keys in docs/cli.md)."
    )(function)


def plain(value: Any) -> Any:
    """A record as JSON data: dataclasses become objects, tuples lists, paths strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def emit_json(data: object) -> None:
    """Print ``data`` as indented JSON (paths and other objects as strings)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


# ------------------------------------------------------------------ people's output


def on_terminal(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (stdout) is a terminal: what ``new_console(stream).is_terminal``
    is, known without importing rich."""
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def new_console(stream: IO[str] | None = None) -> Console:
    """A rich console on stdout: colour and live display only on a terminal.

    Off a terminal it is told so explicitly (whatever FORCE_COLOR says), and it is wide, so
    that piped tables are not wrapped to 80 columns.
    """
    from rich.console import Console

    stream = stream or sys.stdout
    terminal = on_terminal(stream)
    return Console(
        file=stream,
        force_terminal=terminal,
        force_interactive=terminal,
        highlight=False,
        emoji=False,  # a name like ":a:" is printed as written, never as an emoji
        width=None if terminal else 500,
    )


def progress(console: Console, label: str, *, disable: bool = False) -> Progress:
    """A transient progress bar ``label [bar] done/total``, shown only on a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        disable=disable or not console.is_terminal,
    )


def table(console: Console, *columns: str, numeric: int = 0) -> Table:
    """A table with a box on a terminal, plain aligned columns when piped; the last
    ``numeric`` columns are right-aligned."""
    from rich import box
    from rich.table import Table

    if console.is_terminal:
        result = Table(box=box.SIMPLE_HEAD, header_style="bold")
    else:
        result = Table(box=None, pad_edge=False, show_edge=False, header_style="")
    for index, column in enumerate(columns):
        result.add_column(column, justify="right" if index >= len(columns) - numeric else "left")
    return result


def cell_text(value: object) -> str:
    """The text of a table cell: ``-`` for None."""
    return "-" if value is None else str(value)


def cell(value: object) -> Text:
    """A table cell; Text so that brackets in ids or names are never read as markup."""
    from rich.text import Text

    return Text(cell_text(value))


def print_table(console: Console, table: Table) -> None:
    """Print a table; piped, without the padding rich leaves at the end of each line."""
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


STREAM_SAMPLE = 50
"""How many rows ``stream_table`` reads before it fixes its column widths and prints."""
STREAM_BATCH = 100
STREAM_LATENCY = 0.1
"""After its first rows, ``stream_table`` writes the rows made since its last write once it
holds ``STREAM_BATCH`` of them or ``STREAM_LATENCY`` seconds have passed: a write to a
terminal costs about as much as making a row, and a tenth of a second is not seen."""
STREAM_GAP = "  "
"""Between two columns of ``stream_table``."""
STREAM_FLOOR = 3
"""The narrowest ``stream_table`` makes a text column to fit the terminal: two characters
and the ellipsis."""


def stream_table(
    console: Console,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numeric: int = 0,
    styles: Mapping[int, Callable[[str], str]] | None = None,
    narrow_first: Sequence[int] = (),
) -> None:
    """Print a table on a terminal a row at a time, in columns fixed after the first rows.

    ``table`` and ``print_table`` build one rich Table of every row and measure it before
    printing anything: seconds and memory in proportion to the rows (issue 26: 9.8 s and
    152 MiB for 10,000 sessions). Here the widths come from the headings and the first
    ``STREAM_SAMPLE`` rows, narrowed to the console's width (``_fit``: the columns of
    ``narrow_first`` first, say a free-text one, then the widest), and are then kept:
    every later row is printed as soon as it is made, and nothing but the sample is held.
    (After the first rows, the later ones are written in batches: ``STREAM_BATCH``.)
    A text cell wider than its column is cut with an ellipsis; a number (the last
    ``numeric`` columns, right-aligned) is never cut, since a cut number would be a wrong
    one: that row alone is pushed to the right. ``styles`` maps a column's index to the
    rich style of a cell's text (``present.status_style``); the headings are bold, as
    ``table``'s. Characters that are not printable (a line break in a hand-edited name)
    are shown as ``?``, so a row stays one line. A terminal whose encoding is not UTF-8
    gets ``-`` for the rule under the headings and ``~`` for the ellipsis.
    """
    from rich.cells import cell_len, set_cell_size

    rows = iter(rows)
    first = [tuple(map(_printable, row)) for row in itertools.islice(rows, STREAM_SAMPLE)]
    headings = tuple(map(_printable, columns))
    right = len(columns) - numeric
    floors = [_cells(c, cell_len) for c in headings]
    sizes = floors
    for row in first:
        sizes = [max(size, _cells(c, cell_len)) for size, c in zip(sizes, row, strict=True)]
    widths = _fit(sizes, floors, right, console.width, narrow_first)
    codes: dict[str, tuple[str, str]] = {}
    rule, ellipsis = ("─", "…") if console.encoding.lower().startswith("utf") else ("-", "~")

    def line(cells: Sequence[str], styled: Mapping[int, Callable[[str], str]]) -> str:
        parts = []
        for index, (text, width) in enumerate(zip(cells, widths, strict=True)):
            style = styled[index](text) if index in styled else ""  # of the whole text
            size = _cells(text, cell_len)
            if size > width and index < right:
                text = (text[: width - 1] if text.isascii() else set_cell_size(text, width - 1)) + ellipsis
                size = width
            if style:
                if style not in codes:
                    codes[style] = _ansi_codes(console, style)
                before, after = codes[style]
                text = before + text + after
            pad = " " * (width - size)
            parts.append(pad + text if index >= right else text + pad)
        return STREAM_GAP.join(parts).rstrip()

    bold = {index: (lambda _: "bold") for index in range(len(columns))}
    under = rule * (sum(widths) + len(STREAM_GAP) * (len(widths) - 1))
    click.echo("\n".join([line(headings, bold), under, *(line(row, styles or {}) for row in first)]))
    del first
    batch: list[str] = []
    written = time.monotonic()
    for later in rows:
        batch.append(line(tuple(map(_printable, later)), styles or {}))
        if len(batch) >= STREAM_BATCH or time.monotonic() - written >= STREAM_LATENCY:
            click.echo("\n".join(batch))
            batch.clear()
            written = time.monotonic()
    if batch:
        click.echo("\n".join(batch))


def _printable(text: str) -> str:
    """``text`` with each character that is not printable (a line break, an escape) as ``?``."""
    return text if text.isprintable() else "".join(c if c.isprintable() else "?" for c in text)


def _cells(text: str, cell_len: Callable[[str], int]) -> int:
    """How many terminal cells ``text`` takes (rich's ``cell_len``, skipped for ASCII)."""
    return len(text) if text.isascii() else cell_len(text)


def _fit(
    sizes: list[int], headings: list[int], right: int, available: int, narrow_first: Sequence[int] = ()
) -> list[int]:
    """Column widths no wider in all than ``available`` where they can be. A text column
    (one before ``right``) is narrowed a character at a time, the widest of those allowed
    first: the ``narrow_first`` ones down to their heading's width, then any down to its
    heading's width, then any down to ``STREAM_FLOOR``. Numbers keep their width."""
    widths = list(sizes)
    total = sum(widths) + len(STREAM_GAP) * (len(widths) - 1)
    text = range(right)
    passes = ((narrow_first, headings), (text, headings), (text, [STREAM_FLOOR] * len(widths)))
    for allowed, floors in passes:
        while total > available:
            shrinkable = [i for i in allowed if i < right and widths[i] > max(floors[i], STREAM_FLOOR)]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
            total -= 1
    return widths


def _ansi_codes(console: Console, style: str) -> tuple[str, str]:
    """What ``console`` writes before and after a text in ``style`` (nothing without colour:
    ``NO_COLOR``, a dumb terminal), found once by printing one letter to a capture."""
    from rich.text import Text

    with console.capture() as captured:
        console.print(Text("x", style=style), end="")
    before, _, after = captured.get().partition("x")
    return before, after


PIPED_WIDTH = 500
"""The width of a piped console (``new_console``): a wider table is folded by rich."""


def plain_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str] | None:
    """The lines ``print_table`` prints for a piped ``table(console, *columns)`` of these
    cells, made without rich: columns two spaces apart, each as wide as its widest cell, no
    space at the ends of lines.

    None when rich might draw it otherwise, for the caller to draw it with rich: a cell
    that is not printable ASCII (wide characters, tabs, line breaks), a heading with a
    ``[`` (rich reads headings as markup) or a table wider than a piped console.
    tests/test_cli_plain.py checks this against rich.
    """
    lines = [tuple(columns), *(tuple(row) for row in rows)]
    if not all(c.isascii() and c.isprintable() for line in lines for c in line):
        return None
    if any("[" in column for column in columns):
        return None
    widths = [max(len(c) for c in column) for column in zip(*lines, strict=True)]
    if sum(widths) + 2 * (len(widths) - 1) > PIPED_WIDTH:
        return None
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines]


def seconds(value: float | None) -> str:
    """A duration as ``12.3s``; ``-`` when unknown."""
    return "-" if value is None else f"{value:.1f}s"


def duration(value: float) -> str:
    """A duration in the largest fitting unit: ``12.3s``, ``4.5m`` or ``1.2h``."""
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 60:
        return f"{value / 60:.1f}m"
    return seconds(value)


def when(value: str | None) -> str:
    """A timestamp shortened for a table: ``2024-11-24 10:00``."""
    return "-" if not value else value[:16].replace("T", " ")
