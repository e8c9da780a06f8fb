"""How much work haytham does, observed from outside it, for tests that pin a complexity class.

A test runs an operation on a tree of N and of 2N sessions (or a history of N and 2N
entries) and compares the counts: a path that does quadratic work fails deterministically,
with no timing involved. haytham itself keeps no counter: every count here is taken around
the real calls, which still run on the real files (nothing is mocked).

``counting(root)`` switches the counting on for a block and gives the ``WorkCounters``
(``reset`` starts again from zero); the ``counters`` fixture of ``conftest.py`` counts for a
whole test under its ``tmp_path``. Three ways of observing are used:

- Python's audit hooks (``sys.addaudithook``: the ``open``, ``os.scandir`` and
  ``os.listdir`` events) for files opened and folders listed. A hook cannot be removed, so
  one is installed when this module is imported and does nothing unless a ``counting``
  block is running; it sees only paths inside that block's ``root``.
- Counting wrappers that call the real ``os.stat``, ``os.lstat``, ``os.fsync`` (and
  ``os.fdatasync``, ``journal.sync_filesystem``), set on
  the ``os`` module for the block (``pytest.MonkeyPatch``): haytham calls them as
  ``os.stat(...)`` (or ``stat_of = os.stat`` inside the function), and so do ``pathlib``
  and ``os.path``, so every stat of a path is seen.
- A line tracer (``sys.settrace``) for the CPU work that touches no file: the lines of
  haytham's own code executed (``lines``), only in a block that asks for it
  (``counting(root, lines=True)``), as tracing slows every call down.
- Counting wrappers around the haytham functions and methods that do the work (a parse, a
  canonical read, a digest's read of an output, an index query, the ordering of a history,
  a recovery), set on every haytham module attribute and class that holds the original
  (``from x import f`` makes a copy, and each copy is replaced).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import stat
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from haytham.format import document as _document
from haytham.format import guard as _guard
from haytham.format.layout import JOURNAL_FILE
from haytham.integrations.langgraph import files as _lg_files
from haytham.store import history as _history
from haytham.store import index as _index
from haytham.store import journal as _journal
from haytham.store import listing as _listing
from haytham.store import progress as _progress

_REAL_STAT = os.stat
"""The real ``os.stat``, for the hook's own look at a path (never counted)."""


@dataclasses.dataclass
class WorkCounters:
    """What an operation did, counted while a ``counting`` block runs."""

    opened: int = 0
    """Regular files inside the root opened for reading only: the ``open`` audit event
    (``os.open``, ``open``, ``Path.read_bytes``) whose flags ask for no write, for a path
    that is a regular file when the event is raised (the event comes before the open: a
    missing file, which the open will not find, is no file read; a folder opened to be
    fsynced is none either), and calls of ``guard.read_small_in`` for a regular file (it
    opens the file by name in an open folder: its event names no folder)."""
    parsed: int = 0
    """Texts parsed into a record: calls of ``DocumentFormat._read_with`` (the general
    reader) and canonical reads that gave a record (below), and LangGraph checkpoint and
    writes files split into sections (``integrations.langgraph.files.split_sections``). A
    read-cache hit is not a parse."""
    canonical: int = 0
    """Parses that took a kind's canonical path: calls of a kind's ``_canonical`` (the one
    compiled pattern a text in exactly the shape haytham renders is read by) that gave a
    record. Counted in ``parsed`` too."""
    stated: int = 0
    """``os.stat`` and ``os.lstat`` calls on paths inside the root (``Path.stat``,
    ``is_file``, ``exists``, ``is_dir`` and ``os.path``'s tests go through them too).
    ``os.fstat`` of an open file is not counted, nor ``DirEntry.stat`` (a C method that
    cannot be wrapped; only ``validation._session_state``, which keys a validation in the index,
    calls it, once a file of each session it looks at)."""
    listed: int = 0
    """Folders inside the root listed: the ``os.scandir`` and ``os.listdir`` audit events
    (``Path.iterdir`` and ``glob`` raise them too), for a path that is a folder when the
    event is raised."""
    steps: int = 0
    """The work of putting a history in order: lines of ``haytham/store/history.py``
    executed while ``history.in_order`` runs (``sys.settrace`` line events, comprehensions
    and the sort key included; each pass of a loop is at least one line, the sort itself
    one). Any loop over the entries shows here, so quadratic ordering grows quadratically."""
    index_rows: int = 0
    """Rows read from a base directory's index: the size of what ``Index.entries`` returns,
    each row ``Index.summaries_in`` and ``Index.select`` (a listing's queries) yield, and each
    row ``Index.entry`` finds."""
    summaries: int = 0
    """Session summaries a listing made for what it shows: calls of ``listing.make_summary``
    (one a row of the page asked for, however many sessions match)."""
    hashed: int = 0
    """Agent output files read to compute a phase's outputs digest as the files say now:
    calls of ``progress._output_text`` (``progress.outputs_of``; a digest remembered by the
    files' identity reads none)."""
    fsyncs: int = 0
    """Durability calls: ``os.fsync`` and ``os.fdatasync`` of any file or folder, and
    ``journal.sync_filesystem`` (one ``syncfs``, a redo record's batched flush)."""
    records: int = 0
    """Journal records written: ``open`` audit events that create a file named
    ``JOURNAL_FILE`` inside the root (``journal.Operation.commit`` writes one for an
    operation of more than one step)."""
    recovered: int = 0
    """Operations finished by recovery: calls of ``journal.recover`` on a folder that held
    a journal record when it was called."""
    lines: int = 0
    """Lines of haytham's own code executed, counted only under ``counting(root,
    lines=True)``: ``sys.settrace`` line events in frames whose code is in a file of the
    ``haytham`` package (its modules, and its Jinja templates, whose compiled code is named
    by the template's file). Pure CPU work shows here: a loop inside a loop over the phases
    (or a lookup that walks them all, called once per phase) grows quadratically. The
    lines ``history.in_order`` runs are in ``steps``, not here."""

    def __post_init__(self) -> None:
        self.files: list[str] = []
        """The paths counted in ``opened``, in order (not a count: left out of ``snapshot``)."""

    def reset(self) -> None:
        """Start counting from zero."""
        for field in dataclasses.fields(self):
            setattr(self, field.name, 0)
        self.files.clear()

    def snapshot(self) -> dict[str, int]:
        """The counts now, by name."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class _Active:
    counts: WorkCounters
    root: str
    """The root as text, with a trailing separator."""

    def inside(self, path: Any) -> str | None:
        """``path`` as text when it names something inside the root (or the root itself)."""
        if isinstance(path, int) or path is None:
            return None
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return None
        if not os.path.isabs(text):
            text = os.path.abspath(text)
        if text.startswith(self.root) or text + os.sep == self.root:
            return text
        return None


_ACTIVE: list[_Active] = []
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _is(path: str, kind: Callable[[int], bool]) -> bool:
    try:
        return kind(_REAL_STAT(path).st_mode)
    except (OSError, ValueError):
        return False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _ACTIVE:
        return
    active = _ACTIVE[-1]
    if event == "open":
        path = active.inside(args[0])
        if path is None:
            return
        flags = args[2] if isinstance(args[2], int) else 0
        if flags & _WRITES:
            if flags & os.O_CREAT and os.path.basename(path) == JOURNAL_FILE:
                active.counts.records += 1
        elif _is(path, stat.S_ISREG):
            active.counts.opened += 1
            active.counts.files.append(path)
    elif event in ("os.scandir", "os.listdir"):
        path = active.inside(args[0] if args else None)
        if path is not None and _is(path, stat.S_ISDIR):
            active.counts.listed += 1


sys.addaudithook(_hook)


def _counting_read_in(real: Callable[..., Any]) -> Callable[..., Any]:
    """``guard.read_small_in``, its file counted as the ``open`` hook counts a file opened by
    path: it opens the file by name in an open folder, and the audit event then names the
    file alone, which says nothing of where it is."""

    @functools.wraps(real)
    def counted(folder: int, name: str, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE:
            path = _ACTIVE[-1].inside(os.path.join(os.readlink(f"/proc/self/fd/{folder}"), name))
            if path is not None and _is(path, stat.S_ISREG):
                _ACTIVE[-1].counts.opened += 1
                _ACTIVE[-1].counts.files.append(path)
        return real(folder, name, *args, **kwargs)

    return counted


def _counting_stat(real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
    @functools.wraps(real)
    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if _ACTIVE and _ACTIVE[-1].inside(path) is not None:
            _ACTIVE[-1].counts.stated += 1
        return real(path, *args, **kwargs)

    return counted


def _counting_fsync(real: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(real)
    def counted(fd: Any) -> None:
        if _ACTIVE:
            _ACTIVE[-1].counts.fsyncs += 1
        real(fd)

    return counted


def _found(row: object) -> int:
    return 0 if row is None else 1


def _count(field: str, amount: Callable[[Any], int] = lambda _: 1) -> Callable[[Callable[..., Any]], Any]:
    """A wrapper maker: the wrapped call, then ``field += amount(result)``."""

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def counted(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if _ACTIVE:
                counts = _ACTIVE[-1].counts
                setattr(counts, field, getattr(counts, field) + amount(result))
            return result

        return counted

    return wrap


def _counting_canonical(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def counted(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if found is not None and _ACTIVE:
            _ACTIVE[-1].counts.canonical += 1
            _ACTIVE[-1].counts.parsed += 1
        return found

    return counted


def _counting_rows(real: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
    """A query's rows, each counted in ``index_rows`` as it is read."""

    @functools.wraps(real)
    def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for row in real(*args, **kwargs):
            if _ACTIVE:
                _ACTIVE[-1].counts.index_rows += 1
            yield row

    return counted


_HISTORY_FILE = _history.__file__
_HAYTHAM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(_history.__file__))), "")
"""The folder of the ``haytham`` package, with a trailing separator."""


def _line_tracer(counts: WorkCounters) -> Callable[[types.FrameType, str, Any], Any]:
    """A ``sys.settrace`` function counting the lines of haytham's code in ``counts.lines``."""

    def lines(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            counts.lines += 1
        return lines

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename.startswith(_HAYTHAM_DIR):
            return lines
        return None

    return calls


def _counting_lines(real: Callable[..., Any]) -> Callable[..., Any]:
    """``real`` run under a line tracer that counts the lines of ``history.py`` it executes."""

    @functools.wraps(real)
    def counted(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE:
            return real(*args, **kwargs)
        counts = _ACTIVE[-1].counts

        def lines(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                counts.steps += 1
            return lines

        def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "call" and frame.f_code.co_filename == _HISTORY_FILE:
                return lines
            return None

        before = sys.gettrace()
        sys.settrace(calls)
        try:
            return real(*args, **kwargs)
        finally:
            sys.settrace(before)

    return counted


def _counting_recover(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def counted(folder: Path, *args: Any) -> Any:
        held = _is(os.fspath(Path(folder) / JOURNAL_FILE), stat.S_ISREG)
        result = real(folder, *args)
        if held and _ACTIVE:
            _ACTIVE[-1].counts.recovered += 1
        return result

    return counted


def _everywhere(patch: pytest.MonkeyPatch, original: object, replacement: object) -> None:
    """``replacement`` in place of ``original`` in every haytham module that holds it."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "haytham" or name.startswith("haytham.")):
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                patch.setattr(module, attribute, replacement)


def _kinds() -> Iterator[type]:
    pending: list[type] = [_document.DocumentFormat]
    while pending:
        kind = pending.pop()
        yield kind
        pending += kind.__subclasses__()


@contextlib.contextmanager
def counting(root: Path, *, lines: bool = False) -> Iterator[WorkCounters]:
    """Count the work done inside the block on ``root`` (files and folders below it) and in
    haytham's parsing, index and ordering code, from zero; with ``lines``, the lines of
    haytham's code executed too (``WorkCounters.lines``)."""
    import haytham.format  # noqa: F401 - every document kind, so that each one is counted

    counts = WorkCounters()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "stat", _counting_stat(os.stat))
        patch.setattr(os, "lstat", _counting_stat(os.lstat))
        patch.setattr(os, "fsync", _counting_fsync(os.fsync))
        patch.setattr(os, "fdatasync", _counting_fsync(os.fdatasync))
        patch.setattr(_journal, "sync_filesystem", _counting_fsync(_journal.sync_filesystem))
        reader = _document.DocumentFormat._read_with
        patch.setattr(_document.DocumentFormat, "_read_with", _count("parsed")(reader))
        for kind in _kinds():
            if "_canonical" in vars(kind):
                patch.setattr(kind, "_canonical", _counting_canonical(vars(kind)["_canonical"]))
        patch.setattr(_index.Index, "entries", _count("index_rows", len)(_index.Index.entries))
        patch.setattr(_index.Index, "entry", _count("index_rows", _found)(_index.Index.entry))
        for query in ("summaries_in", "select"):
            patch.setattr(_index.Index, query, _counting_rows(getattr(_index.Index, query)))
        _everywhere(patch, _progress._output_text, _count("hashed")(_progress._output_text))
        _everywhere(patch, _listing.make_summary, _count("summaries")(_listing.make_summary))
        _everywhere(patch, _lg_files.split_sections, _count("parsed")(_lg_files.split_sections))
        _everywhere(patch, _history.in_order, _counting_lines(_history.in_order))
        _everywhere(patch, _journal.recover, _counting_recover(_journal.recover))
        _everywhere(patch, _guard.read_small_in, _counting_read_in(_guard.read_small_in))
        _ACTIVE.append(_Active(counts, os.path.join(os.path.abspath(root), "")))
        before = sys.gettrace()
        if lines:
            sys.settrace(_line_tracer(counts))
        try:
            yield counts
        finally:
            if lines:
                sys.settrace(before)
            _ACTIVE.pop()


HAYTHAM_PEAK_MEMORY = """
import atexit, runpy, sys
def report():
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmHWM:"))
    sys.stderr.write("\\n" + peak.split()[1] + "\\n")
atexit.register(report)
sys.argv = ["haytham", *sys.argv[1:]]
runpy.run_module("haytham", run_name="__main__")
"""
"""``python -c HAYTHAM_PEAK_MEMORY ARGS`` runs ``haytham ARGS`` and reports its peak resident
memory (``VmHWM``, in KiB) last on stderr: the high-water mark of that process's own memory
only, which ``ru_maxrss`` is not (it keeps the forking parent's before ``exec``)."""
