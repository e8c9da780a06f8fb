"""What every haytham command shares: ``--base-dir`` and ``--json``, and how errors read.

The command modules (cli, cli_history, cli_ops, cli_git) import this instead of each other,
so none of them depends on the module that registers them.
"""

from __future__ import annotations

import errno
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from rich import box
from rich.console import Console
from rich.table import Table

from haytham.errors import HaythamError
from haytham.format import layout

DEFAULT_BASE_DIR = layout.DEFAULT_BASE_DIR
BASE_DIR_ENVVAR = "HAYTHAM_BASE_DIR"
F = TypeVar("F", bound=Callable[..., Any])


def describe_error(error: BaseException) -> str:
    """One line for an error: the library's message, or an OS error's file and reason."""
    if isinstance(error, OSError) and not isinstance(error, HaythamError) and error.strerror:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    return str(error)


def errors_as_messages(function: F) -> F:
    """Library and OS errors become ``Error: ...`` and exit code 1, never a traceback.

    The group in ``haytham.cli.main`` does this too; doing it per command keeps a command right
    when it is invoked on its own.
    """

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (HaythamError, OSError) as error:
            if isinstance(error, OSError) and error.errno == errno.EPIPE:
                raise  # click ends quietly when the reader of a pipe has gone
            raise click.ClickException(describe_error(error)) from None

    return cast(F, wrapper)


def base_dir_option(function: F) -> F:
    """``--base-dir``, defaulting to ./projects or ``HAYTHAM_BASE_DIR``."""
    return click.option(
        "--base-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=DEFAULT_BASE_DIR,
        envvar=BASE_DIR_ENVVAR,
        show_default=True,
        show_envvar=True,
        help="The directory that holds the projects.",
    )(function)


def json_option(function: F) -> F:
    """``--json``: print one JSON object with the keys documented in docs/cli.md."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts (keys in docs/cli.md)."
    )(function)


def emit_json(data: object) -> None:
    """Print ``data`` as indented JSON (paths and other objects as strings)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def table(console: Console, *columns: str, numeric: int = 0) -> Table:
    """A table with a box on a terminal, plain aligned columns when piped; the last
    ``numeric`` columns are right-aligned."""
    if console.is_terminal:
        result = Table(box=box.SIMPLE_HEAD, header_style="bold")
    else:
        result = Table(box=None, pad_edge=False, show_edge=False, header_style="")
    for index, column in enumerate(columns):
        result.add_column(column, justify="right" if index >= len(columns) - numeric else "left")
    return result


def print_table(console: Console, table: Table) -> None:
    """Print a table; piped, without the padding rich leaves at the end of each line."""
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))
