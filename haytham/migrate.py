"""``haytham migrate``: bring every file of a tree to the current format version.

The files are the session files, each project.yaml and each session's workflow.yaml.

A file's version is its ``- Format: N`` line (``haytham.format.version``; ``format: N`` in
YAML, ``haytham.format.yamlfile``); a file without one
is version 0, written by the first implementation. Migration steps are data: ``STEPS`` lists
``(from_version, to_version, step)`` and a file goes through each step from its version on,
so a future change of format adds one step (and a fixture in ``tests/``).

Each step changes only the lines that need changing, and the result is checked before it is
written: the file must read as exactly the same record as before. A file whose minimal edit
would not read the same is written canonically instead (and the report says so); a file
that cannot be read is reported and left as it is. The files of a session are written as one
operation (``store.journal``) under the session's lock, each keeping its modification time
(which dates a hand review): a run killed anywhere leaves each session either old and valid
or new and valid once recovered, and running again finishes the job. A second run finds
nothing to do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haytham.errors import DocumentError, Issue
from haytham.format import AGENT_OUTPUT
from haytham.format.document import DocumentFormat
from haytham.format.guard import read_file
from haytham.format.layout import (
    FORMAT_LABEL,
    FORMAT_VERSION,
    INDEX_DIR,
    PROJECT_FILE,
    SESSIONS_DIR,
    WORKFLOW_FILE,
)
from haytham.format.markdown import iter_unfenced_lines, parse_document
from haytham.format.reader import decode, split_label
from haytham.format.yamlfile import VERSION_KEY, parse_yaml, take_version
from haytham.store import journal
from haytham.store.fs import DEFAULT_LOCK_TIMEOUT, atomic_write, confined, locked
from haytham.store.scan import session_dirs
from haytham.store.session_files import kind_of, session_files

FINAL_NEWLINES_LABEL = "Final Newlines"


@dataclass(frozen=True)
class Rewrite:
    """What a step made of a file: its new text (LF line endings) and why."""

    text: str
    what: str
    """One line: what changed and why."""


Step = Callable[["DocumentFormat[Any] | YamlKind", str, Any], Rewrite]
"""A migration step: the kind, the file's text (LF) and its record, to the new text."""


@dataclass(frozen=True)
class Change:
    """One file a run rewrites (or, with ``--dry-run``, would rewrite)."""

    path: Path
    from_version: int
    to_version: int
    what: str
    canonical: bool = False
    """Whether the file was rewritten canonically, not line by line."""


@dataclass(frozen=True)
class Skipped:
    """A file left as it is, and why (it cannot be read, or not without a change of meaning)."""

    path: Path
    reason: str


@dataclass(frozen=True)
class MigrationReport:
    """What a run did: the files it changed, those it left, how many were already current."""

    changes: tuple[Change, ...]
    skipped: tuple[Skipped, ...]
    current: int
    """Files already at the current version."""
    dry_run: bool


def _insert_fields(kind: DocumentFormat[Any], text: str, lines: list[str]) -> str:
    """``text`` with ``lines`` inserted after the last ``- Label: value`` line of the kind's
    version section (after its heading when it has none)."""
    section = parse_document(text).find(kind.version_section.title)
    if section is None:
        raise DocumentError(f"has no section '{kind.version_section.heading}'")
    after = section.line
    for number, line in iter_unfenced_lines(section.body, section.body_line):
        stripped = line.strip()
        if stripped[:2] in ("- ", "* ", "+ ") and split_label(stripped[2:].strip()) is not None:
            after = number
    rows = text.split("\n")
    return "\n".join(rows[:after] + lines + rows[after:])


class YamlKind:
    """A YAML file haytham writes (project.yaml, a session's workflow.yaml), seen by migrate
    as a kind: its version is its ``format`` key, its record the loaded mapping."""

    def version(self, text: str, path: Path | None = None) -> int:
        node, data = parse_yaml(text, path or Path("?"))
        if node is None or not isinstance(data, dict):
            raise DocumentError("is not a YAML mapping", path=path)
        return take_version(node, data, path or Path("?"))

    def read(self, text: str, path: Path | None = None) -> tuple[Any, list[Issue]]:
        """The mapping without its version (None and an issue when it is not one)."""
        try:
            node, data = parse_yaml(text, path or Path("?"))
            if node is None or not isinstance(data, dict):
                raise DocumentError("is not a YAML mapping", path=path)
            take_version(node, data, path or Path("?"))
        except DocumentError as error:
            return None, [Issue(path, error.line, error.field, error.message)]
        return data, []


YAML = YamlKind()


def _version_1(kind: DocumentFormat[Any] | YamlKind, text: str, record: Any) -> Rewrite:
    """Version 0 to 1: add ``- Format: 1`` (``format: 1`` as the first line of a YAML file);
    in an agent output whose content ends in line breaks, also ``- Final Newlines: N``, so
    the output's end is stated, not implied."""
    if isinstance(kind, YamlKind):
        what = f"added '{VERSION_KEY}: 1' (a file without it is version 0, the first implementation's)"
        return Rewrite(f"{VERSION_KEY}: 1\n{text}", what)
    added = [f"- {FORMAT_LABEL}: 1"]
    what = f"added '- {FORMAT_LABEL}: 1' (a file without it is version 0, the first implementation's)"
    if kind is AGENT_OUTPUT:
        content = record.content
        final = len(content) - len(content.rstrip("\n"))
        header = text[: text.find("\n## Output")] if "\n## Output" in text else text
        if final and f"- {FINAL_NEWLINES_LABEL}:" not in header:
            added.insert(0, f"- {FINAL_NEWLINES_LABEL}: {final}")
            what += (
                f" and '- {FINAL_NEWLINES_LABEL}: {final}' (the output ends with {final} line break(s); "
                "version 0 left that to the rule that the file's last line break is the writer's)"
            )
    return Rewrite(_insert_fields(kind, text, added), what)


STEPS: tuple[tuple[int, int, Step], ...] = ((0, 1, _version_1),)
"""Each change of format: ``(from_version, to_version, step)``, in order."""


def _steps_from(version: int) -> Iterator[tuple[int, int, Step]]:
    for start, end, step in STEPS:
        if start >= version:
            yield start, end, step


def _kind(path: Path) -> DocumentFormat[Any] | YamlKind | None:
    if path.name == PROJECT_FILE or (path.name == WORKFLOW_FILE and path.parent.parent.name == SESSIONS_DIR):
        return YAML
    return kind_of(path)


def _files(root: Path) -> Iterator[Path]:
    """The session files under ``root``, then its project.yaml and sessions' workflow.yaml."""
    cache = root / INDEX_DIR
    yield from session_files([root], outside=[cache] if root.is_dir() else [])
    if root.is_file():
        if _kind(root) is YAML:
            yield root
        return
    for name in (PROJECT_FILE, WORKFLOW_FILE):
        for path in sorted(root.rglob(name)):
            if cache not in path.parents and path.is_file() and _kind(path) is YAML:
                yield path


def _plan(path: Path) -> tuple[Change, bytes] | Skipped | None:
    """What migrating the file at ``path`` makes of it (the change and the bytes to write), a
    Skipped, or None when it is no file of haytham's or already current. Writes nothing."""
    kind = _kind(path)
    if kind is None:
        return None
    try:
        data = read_file(path, kind.max_bytes if isinstance(kind, DocumentFormat) else None)
        text = decode(data, path)
        version = kind.version(text, path)
    except DocumentError as error:
        return Skipped(path, f"cannot be read: {error.message}")
    except OSError as error:
        return Skipped(path, f"cannot be read: {error.strerror}")
    if version >= FORMAT_VERSION:
        return None
    record, issues = kind.read(text, path)
    if record is None:
        first = next(issue for issue in issues if issue.is_error)
        where = f"line {first.line}: " if first.line else ""
        return Skipped(path, f"cannot be read ({where}{first.message}); fix it, then run migrate again")
    whats: list[str] = []
    canonical = False
    current = text
    for _start, end, step in _steps_from(version):
        try:
            rewrite = step(kind, current, record)
            new_text, what = rewrite.text, rewrite.what
        except DocumentError:
            new_text, what = "", ""
        if not _reads_as(kind, new_text, record, end):
            new_text = "" if isinstance(kind, YamlKind) else kind.render_over(record, text)
            if not _reads_as(kind, new_text, record, end):
                return Skipped(path, f"cannot be migrated to version {end} without changing what it says")
            what = f"rewritten canonically as version {end} (a line-by-line edit would change what it says)"
            canonical = True
        whats.append(what)
        current = new_text
    bom = data.startswith(b"\xef\xbb\xbf")
    crlf = not data.replace(b"\r\n", b"").count(b"\n") and b"\r\n" in data
    if crlf and not canonical:
        current = current.replace("\n", "\r\n")
    out = ("\ufeff" if bom and not canonical else "") + current
    return Change(path, version, FORMAT_VERSION, "; ".join(whats), canonical), out.encode("utf-8")


def _reads_as(kind: DocumentFormat[Any] | YamlKind, text: str, record: Any, version: int) -> bool:
    """Whether ``text`` is a file of ``version`` that reads as exactly ``record``."""
    if not text:
        return False
    try:
        if kind.version(text) != version:
            return False
    except DocumentError:
        return False
    again, _ = kind.read(text)
    return bool(again == record)


def migrate(
    root: Path, *, dry_run: bool = False, on_change: Callable[[Change], None] | None = None
) -> MigrationReport:
    """Migrate every session file under ``root`` (a base directory, project, session or
    file) to the current format version; with ``dry_run`` write nothing.

    The files of one session (and a project's project.yaml) are migrated together, under
    its lock, as one operation (``haytham.store.journal``): a run killed anywhere leaves a
    session all old or all new once recovered. ``on_change`` is called after each file is
    written (before, with ``dry_run``), in the order the files are migrated.
    """
    changes: list[Change] = []
    skipped: list[Skipped] = []
    current = 0
    if not dry_run:
        _finish_interrupted(root)
    groups: dict[Path | None, list[Path]] = {}
    for path in _files(root):
        groups.setdefault(None if dry_run else _owner(path), []).append(path)
    for owner, paths in groups.items():
        # confined: never write through a symlink below the migrated folder
        with confined(root), _holding(owner):
            planned_files: list[tuple[Path, Change, bytes]] = []
            for path in paths:
                planned = _plan(path)
                if planned is None:
                    current += 1
                elif isinstance(planned, Skipped):
                    skipped.append(planned)
                else:
                    planned_files.append((path, *planned))
            if not dry_run:
                _write(owner, planned_files)
        for _, change, _ in planned_files:
            changes.append(change)
            if on_change is not None:
                on_change(change)
    return MigrationReport(tuple(changes), tuple(skipped), current, dry_run)


def _finish_interrupted(root: Path) -> None:
    """Roll forward, each under its lock, the changes killed writers committed in the
    sessions below ``root`` (or holding it), before its files are listed: the old files such
    a change copies into an attempt are then migrated, and none it removes is read.

    A dry run lists the files as they are: it never writes, so it finishes nothing."""
    folders = list(session_dirs(root)) if root.is_dir() else []
    inside = _owner(root)  # root is a phase folder or a file of a session
    for folder in [*folders, *([inside] if inside is not None else [])]:
        if journal.pending(folder) is not None:
            with _holding(folder):
                pass


def _owner(path: Path) -> Path | None:
    """The folder whose lock and journal a file's migration goes through: its session's, or
    its project's for project.yaml; None for a file outside both."""
    if path.name == PROJECT_FILE:
        return path.parent
    return next((p for p in path.parents if p.parent.name == SESSIONS_DIR), None)


@contextlib.contextmanager
def _holding(owner: Path | None) -> Iterator[None]:
    if owner is None:
        yield
        return
    with locked(owner, DEFAULT_LOCK_TIMEOUT, f"the files of {owner}"):
        journal.recover(owner)
        yield


def _write(owner: Path | None, planned: list[tuple[Path, Change, bytes]]) -> None:
    """Write the migrated files, each keeping its modification time: a hand review without a
    time of its own was made when its file was saved (store/review_time.py), so it is data."""
    if owner is None or len(planned) < 2:
        for path, _, data in planned:
            times = path.stat()
            atomic_write(path, data)
            os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
        return
    with journal.Change(owner, "migrate") as change:
        for path, _, data in planned:
            change.write(path, data, mtime_ns=path.stat().st_mtime_ns)
