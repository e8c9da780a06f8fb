"""Piped tables written without rich are the bytes rich draws (``haytham.cli.common.plain_table``).

``haytham status`` piped prints its phase table as plain columns so that the command does not
import rich (about 25 ms of every process). The shortcut must print exactly what the rich
table printed: checked here against rich on generated cells (spaces, brackets that rich
could read as markup, wide and control characters, tables wider than a piped console), and
on ``haytham status`` of real sessions, drawn both ways.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from property_tiers import property_settings

from haytham.cli import present
from haytham.cli.common import cell, new_console, plain_table, print_table, table
from haytham.cli.main import cli
from haytham.store.manager import CheckpointManager

PROPERTY = property_settings(
    300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
simple_cells = st.text(alphabet=" -_.:()[]/abcXYZ019", max_size=12)
cells = st.one_of(
    simple_cells,
    st.text(max_size=6),
    st.sampled_from(["[bold]x[/]", "é", "宽字", "a\tb", "a\nb", "\x1b[31m", " ", "", "a" * 260]),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Headings and rows: half of them of printable ASCII only (what the shortcut writes)."""
    kind = simple_cells if draw(st.booleans()) else cells
    width = draw(st.integers(1, 6))
    row = st.lists(kind, min_size=width, max_size=width).map(tuple)
    return draw(row), draw(st.lists(row, max_size=4))


def drawn_by_rich(
    columns: tuple[str, ...], rows: list[tuple[str, ...]], capsys: pytest.CaptureFixture[str]
) -> str:
    """What ``print_table`` prints for the table on a piped console."""
    console = new_console(io.StringIO())
    assert not console.is_terminal
    drawn = table(console, *columns)
    for row in rows:
        drawn.add_row(*map(cell, row))
    capsys.readouterr()
    print_table(console, drawn)
    return capsys.readouterr().out


@PROPERTY
@given(tables())
def test_plain_tables_are_what_rich_draws(
    capsys: pytest.CaptureFixture[str], drawn: tuple[tuple[str, ...], list[tuple[str, ...]]]
) -> None:
    columns, rows = drawn
    lines = plain_table(columns, rows)
    if lines is not None:
        assert "\n".join(lines) + "\n" == drawn_by_rich(columns, rows, capsys)


def test_plain_tables_leave_unusual_cells_to_rich(capsys: pytest.CaptureFixture[str]) -> None:
    widest = (("a", "b"), [("x" * 249, "y" * 249)])  # exactly as wide as a piped console
    assert "\n".join(plain_table(*widest) or []) + "\n" == drawn_by_rich(*widest, capsys)
    assert plain_table(("a",), [("é",)]) is None
    assert plain_table(("a",), [("a\tb",)]) is None
    assert plain_table(("a", "b"), [("x" * 300, "y" * 300)]) is None
    assert plain_table(("Phase", "Name"), [("1", "Idea (x) [y]")]) == ["Phase  Name", "1      Idea (x) [y]"]


def test_piped_status_prints_what_rich_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``haytham status`` of sessions in several states, with plain columns and with the
    rich table (``plain_table`` refusing every table), gives the same bytes."""
    manager = CheckpointManager(tmp_path)
    manager.create_session("p", "s", "u", execution_mode="mvp")
    manager.save_checkpoint("p", "s", 1, "completed", [{"agent_name": "concept_expansion"}])
    manager.save_checkpoint("p", "s", 2, "failed", [{"agent_name": "market_intelligence"}], errors=["boom"])
    manager.create_session("p", "t", "u", execution_mode="full")
    runner = CliRunner()
    for session in ("s", "t"):
        args = ["status", "p", session, "--base-dir", str(tmp_path)]
        plain = runner.invoke(cli, args)
        with monkeypatch.context() as patched:
            patched.setattr(present, "plain_table", lambda columns, rows: None)
            drawn = runner.invoke(cli, args)
        assert plain.exit_code == drawn.exit_code == 0
        assert plain.output == drawn.output
        assert "Phase  Name" in plain.output
