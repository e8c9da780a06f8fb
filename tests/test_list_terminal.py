"""``haytham list`` on a terminal streams (issue 26, "The terminal").

A listing of 10,000 sessions on a terminal used to build one rich table of every row before
printing the first: seconds of waiting and memory growing with the sessions. Now the rows
are printed as they are made, in columns whose widths come from the header and the first
rows (``common.STREAM_SAMPLE``) and are then kept, a longer cell cut with an ellipsis.

Every test runs ``python -m haytham list`` in a process of its own on a real
pseudo-terminal (``pty.openpty``), so ``isatty()`` is true exactly as in a person's shell.
The trees are cheap copies of one real session's manifest, each with its own id, user and
update time (newest first is the listing's order), as ``benchmarks/bench.py`` makes them.
None of them measures time: streaming is shown by what had been written when the last row
was made, flat memory by the peak resident memory of 4x the sessions.
"""

from __future__ import annotations

import datetime
import json
import os
import pty
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from workcount import HAYTHAM_PEAK_MEMORY

from haytham.cli import common
from haytham.format.layout import MANIFEST_FILE
from haytham.store.manager import CheckpointManager

P = "acme"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLUMNS = ("Project", "Session", "User", "Mode", "Status", "Current phase", "Updated", "Tokens", "Cost")
START = datetime.datetime(2024, 1, 1)
NUMERIC = 2
"""The last two columns (Tokens, Cost) are right-aligned."""


def make_tree(base: Path, count: int, users: tuple[str, ...] = ("ada", "grace-hopper", "al")) -> list[str]:
    """``count`` sessions under ``base``: one made by haytham, the others copies of its
    manifest with their own id, user (taken in turn from ``users``) and Last Updated, one
    minute apart, so the listing's order (newest first) is the ids' reverse order. Returns
    the ids, newest first."""
    manager = CheckpointManager(base)
    manager.create_session(P, "s-00000", "ada")
    template = (manager.session_dir(P, "s-00000") / MANIFEST_FILE).read_text("utf-8")
    stamp = re.search(r"- Last Updated: (.*)\n", template)
    assert stamp is not None
    sessions = base / P / "sessions"
    ids = [f"s-{number:05d}" for number in range(count)]
    for number, name in enumerate(ids):
        when = (START + datetime.timedelta(minutes=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = (
            template.replace("s-00000", name)
            .replace("- User ID: ada", f"- User ID: {users[number % len(users)]}")
            .replace(f"- Last Updated: {stamp.group(1)}", f"- Last Updated: {when}")
        )
        (sessions / name).mkdir(exist_ok=True)
        (sessions / name / MANIFEST_FILE).write_text(text, "utf-8")
    return ids[::-1]


def on_terminal(argv: list[str], columns: int = 200) -> tuple[int, str, str]:
    """Run ``argv`` with a pseudo-terminal ``columns`` wide as its stdout (stderr is a pipe):
    its exit code, what the terminal received (carriage returns dropped) and its stderr."""
    master, slave = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("HAYTHAM_BASE_DIR", "NO_COLOR")}
    environment.update({"COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"})
    process = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=environment, close_fds=True
    )
    os.close(slave)
    received = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    assert process.stderr is not None
    error = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    code = process.wait(timeout=300)
    return code, received.decode("utf-8").replace("\r", ""), error


def haytham(*args: str) -> list[str]:
    return [sys.executable, "-m", "haytham", *args]


def expected_rows(base: Path) -> list[tuple[str, ...]]:
    """The cells each session's row must show, from ``list --json`` (piped)."""
    done = subprocess.run(haytham("list", "--json", "--base-dir", str(base)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = []
    for s in json.loads(done.stdout)["sessions"]:
        current = f"{s['current_phase']} {s['current_phase_name']}"
        rows.append(
            (
                s["project_id"],
                s["session_id"],
                s["user_id"],
                s["execution_mode"],
                s["status"],
                current,
                common.when(s["last_updated"]),
                str(s["total_tokens"]),
                f"${s['total_cost']:.4f}",
            )
        )
    return rows


def table_lines(output: str) -> tuple[str, list[str]]:
    """The header line and the data lines of a terminal listing, ANSI styling removed."""
    lines = [ANSI.sub("", line) for line in output.splitlines()]
    header = next(index for index, line in enumerate(lines) if line.lstrip().startswith("Project"))
    assert set(lines[header + 1].strip()) == {"─"}, lines[header + 1]  # a rule under the header
    data = [line for line in lines[header + 2 :] if line.strip() and not line.startswith("Showing")]
    return lines[header], data


def assert_aligned(header: str, data: list[str]) -> list[tuple[str, ...]]:
    """Every data line has its cells where the header has its labels (text columns start
    under their label, numbers end under theirs); returns the cells of each line (two
    spaces apart, as no cell holds two spaces)."""
    starts = [header.index(column) for column in COLUMNS]
    for line in data:
        for index, column in enumerate(COLUMNS):
            if index < len(COLUMNS) - NUMERIC:
                start = starts[index]
                assert line[start] != " " and (start == 0 or line[start - 1] == " "), (line, column)
            else:
                end = starts[index] + len(column)
                assert line[end - 1] != " " and (end == len(line) or line[end] == " "), (line, column)
    return [tuple(re.split(r" {2,}", line.strip())) for line in data]


def test_every_session_is_listed_once_in_aligned_columns(tmp_path: Path) -> None:
    base = tmp_path / "base"
    ids = make_tree(base, 130)
    code, output, error = on_terminal(haytham("list", "--base-dir", str(base)))
    assert code == 0, error
    assert "\x1b[1mProject\x1b[0m" in output  # the headings bold, as rich drew them
    assert output.count("\x1b[33min_progress\x1b[0m") == 130  # each status in its colour
    header, data = table_lines(output)
    rows = assert_aligned(header, data)
    assert Counter(row[1] for row in rows) == Counter(ids)
    assert rows == expected_rows(base)


def test_a_cell_wider_than_its_column_is_cut_with_an_ellipsis(tmp_path: Path) -> None:
    """The widths come from the first rows; an older session's longer user is cut to fit,
    and its row keeps the columns of the others."""
    base = tmp_path / "base"
    long_user = "someone-with-a-very-long-user-name"
    make_tree(base, 60, users=("ada",))
    manifest = base / P / "sessions" / "s-00000" / MANIFEST_FILE  # the oldest: listed last
    manifest.write_text(
        manifest.read_text("utf-8").replace("- User ID: ada", f"- User ID: {long_user}"), "utf-8"
    )
    code, output, error = on_terminal(haytham("list", "--base-dir", str(base)))
    assert code == 0, error
    header, data = table_lines(output)
    rows = assert_aligned(header, data)
    assert len(rows) == 60
    assert rows[-1][1] == "s-00000"
    assert rows[-1][2] != long_user and rows[-1][2].endswith("…")
    assert long_user.startswith(rows[-1][2][:-1])
    assert all(len(line) <= len(data[0]) for line in data)


def test_a_narrow_terminal_gets_lines_that_fit(tmp_path: Path) -> None:
    base = tmp_path / "base"
    make_tree(base, 5)
    code, output, error = on_terminal(haytham("list", "--limit", "4", "--base-dir", str(base)), columns=80)
    assert code == 0, error
    header, data = table_lines(output)
    assert len(data) == 4
    assert output.endswith("Showing 1-4 of 5 sessions\n")
    assert all(len(line) <= 80 for line in [header, *data])
    assert_aligned(header, data)


STREAMING = """
import io, json, runpy, sys

class Counting(io.TextIOBase):
    '''stdout, counting the lines written through it (a terminal's stdout is line-buffered:
    a line written is a line on the screen).'''
    def __init__(self, inner):
        self.inner, self.lines = inner, 0
    @property
    def encoding(self):
        return self.inner.encoding
    def writable(self):
        return True
    def isatty(self):
        return self.inner.isatty()
    def fileno(self):
        return self.inner.fileno()
    def write(self, text):
        self.lines += text.count("\\n")
        return self.inner.write(text)
    def flush(self):
        self.inner.flush()

sys.stdout = counting = Counting(sys.stdout)
from haytham.cli import sessions
made = []
list_row = sessions._list_row
def counted_row(summary):
    made.append(counting.lines)
    return list_row(summary)
sessions._list_row = counted_row
record = sys.argv[1]
sys.argv = ["haytham", *sys.argv[2:]]
try:
    runpy.run_module("haytham", run_name="__main__")
finally:
    with open(record, "w") as written:
        json.dump(made, written)
"""
"""``python -m haytham`` that records, as each row of ``list`` is made, how many lines its
stdout had received (in the JSON file named by its first argument)."""


def test_the_first_rows_are_on_the_terminal_before_the_last_is_made(tmp_path: Path) -> None:
    base = tmp_path / "base"
    make_tree(base, 3 * common.STREAM_SAMPLE)
    record = tmp_path / "record.json"
    argv = [sys.executable, "-c", STREAMING, str(record), "list", "--base-dir", str(base)]
    code, output, error = on_terminal(argv)
    assert code == 0, error
    made = json.loads(record.read_text("utf-8"))
    assert len(made) == 3 * common.STREAM_SAMPLE
    assert made[0] == 0  # nothing before the first row is made
    # when the last row is made, the header, its rule and every sampled row are on the screen
    assert made[-1] >= 2 + common.STREAM_SAMPLE, made
    assert made == sorted(made)
    _, data = table_lines(output)
    assert len(data) == 3 * common.STREAM_SAMPLE


WARM = """
import sys
from pathlib import Path
from haytham.store import index
from haytham.store.scan import list_sessions
index.RACY_NS = -(10**15)  # the copies were written just now: remember them anyway
list_sessions(Path(sys.argv[1]))
"""
"""Builds the base directory's index, as a first listing would once the files are settled."""


def peak_on_terminal(base: Path) -> int:
    """The peak resident memory, in bytes, of a warm ``haytham list`` of ``base`` on a terminal."""
    subprocess.run([sys.executable, "-c", WARM, str(base)], check=True)
    code, output, error = on_terminal(
        [sys.executable, "-c", HAYTHAM_PEAK_MEMORY, "list", "--base-dir", str(base)]
    )
    assert code == 0, error
    assert output.count("s-") >= 2, output[-500:]
    return int(error.split()[-1]) * 1024


GROWTH = 4 * 2**20
"""What 4x the sessions may add to the peak: the sorted names of the session folders (about
a hundred bytes a session) and the index's pages, far from a table of every row (the old
path took about 15 KB a session)."""


@pytest.mark.parametrize(
    ("small", "large"), [(500, 2_000), pytest.param(2_000, 8_000, marks=pytest.mark.slow)], ids=str
)
def test_memory_stays_flat_however_many_sessions(tmp_path: Path, small: int, large: int) -> None:
    peaks = {}
    for count in (small, large):
        base = tmp_path / f"base-{count}"
        make_tree(base, count)
        peaks[count] = peak_on_terminal(base)
    growth = peaks[large] - peaks[small]
    assert growth < GROWTH, (
        f"{small:,}: {peaks[small] / 2**20:.1f} MiB, {large:,}: {peaks[large] / 2**20:.1f} MiB"
    )


def test_wide_characters_are_measured_in_terminal_cells(tmp_path: Path) -> None:
    """A user named in CJK takes two cells a character: the columns after it stay aligned
    on the screen (not in characters), and a cut cell is cut in cells."""
    from rich.cells import cell_len

    base = tmp_path / "base"
    make_tree(base, 4, users=("ada", "名前さん"))
    code, output, error = on_terminal(haytham("list", "--base-dir", str(base)))
    assert code == 0, error
    header, data = table_lines(output)
    mode = header.index("Mode")
    assert sum("名前さん" in line for line in data) == 2
    for line in data:
        cells = re.split(r" {2,}", line)
        assert cell_len(line[: line.index(cells[3])]) == mode, line  # Mode starts under its heading
    code, output, error = on_terminal(haytham("list", "--base-dir", str(base)), columns=80)
    assert code == 0, error
    header, data = table_lines(output)
    assert all(cell_len(line) <= 80 for line in [header, *data]), data
    mode = header.index("Mode")
    for line in data:
        assert cell_len(line[: line.index("  mvp  ") + 2]) == mode, line


def drawn(
    capsys: pytest.CaptureFixture[str],
    width: int,
    rows: list[tuple[str, ...]],
    encoding: str = "utf-8",
    **options: object,
) -> list[str]:
    """The lines ``common.stream_table`` prints for ``rows`` on a ``width``-column terminal
    console in ``encoding`` (rich's, on a byte buffer: the table itself writes with
    click.echo, to the captured stdout)."""
    import io

    from rich.console import Console

    screen = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    console = Console(file=screen, force_terminal=True, width=width, color_system=None)
    common.stream_table(console, ("Name", "Note", "Count"), rows, numeric=1, **options)  # type: ignore[arg-type]
    return capsys.readouterr().out.splitlines()


def test_a_number_is_never_cut_and_a_control_character_never_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Later rows: a longer note is cut, a longer number is printed whole (a cut number is a
    wrong one) and pushes its own row only; a tab or an escape shows as ``?``."""
    sample = [("ada", "short", "1")] * common.STREAM_SAMPLE
    later = [("bob", "a much longer note", "123456789"), ("c\x1bd", "tab\there", "2")]
    lines = drawn(capsys, 80, [*sample, *later])
    assert lines[0] == "Name  Note   Count"
    assert lines[2] == "ada   short      1"
    assert lines[-2] == "bob   a mu…  123456789"
    assert lines[-1] == "c?d   tab?…      2"
    assert "\x1b" not in "".join(lines)


def test_narrow_first_gives_way_before_the_widest_column(capsys: pytest.CaptureFixture[str]) -> None:
    """Too wide for 40 columns: by default the widest text column gives way first (then the
    two in turn); a column named in ``narrow_first`` gives way alone, down to its heading."""
    rows = [("a-rather-long-name", "a note that is longer still", "7")]
    assert drawn(capsys, 40, rows)[2] == "a-rather-long-…  a note that is …      7"
    assert drawn(capsys, 40, rows, narrow_first=(0,))[2] == "a-r…  a note that is longer still      7"


def test_a_terminal_that_is_not_utf8_gets_ascii_marks(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [("a-rather-long-name", "a note that is longer still", "7")]
    lines = drawn(capsys, 40, rows, encoding="latin-1")
    assert lines[1] == "-" * 40
    assert lines[2] == "a-rather-long-~  a note that is ~      7"
