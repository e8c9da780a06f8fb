"""Which files are session files, and of what kind: the walk that ``haytham validate``,
``migrate`` and the copies of a session rely on.

A file's kind (manifest, checkpoint, agent output, feedback, history entry) is judged by its
name and place alone (``kind_of``), so a tree can be sorted into session files without
opening one. ``session_files`` finds them under any paths, as a linter takes files and
folders; ``count_session_files`` counts them for a progress bar without making a ``Path``
for each; ``sessions_under`` finds the whole sessions among the paths. The walk lists each
folder once (``os.scandir``), enters no symlinked folder and passes over a folder it may not
read.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    FEEDBACK_FILE,
    HISTORY_DIR,
    HISTORY_ENTRY_NAME,
    MANIFEST_FILE,
    PHASE_DIR_PREFIX,
)


def kind_of(path: Path) -> DocumentFormat[object] | None:
    """The document kind of a session file, judged by its name and place; None if not one."""
    return kind_named(path.name, path.parent.name, path.parent.parent.name)


def kind_named(name: str, parent: str, grandparent: str) -> DocumentFormat[object] | None:
    """``kind_of`` a file called ``name`` in a folder ``parent`` inside ``grandparent``
    (for a walk that has the names as text and makes no ``Path``)."""
    if not name.endswith(".md") or name.startswith("."):
        return None
    if name == MANIFEST_FILE:
        return MANIFEST  # type: ignore[return-value]
    if parent == HISTORY_DIR:
        # A session's entries are named by time and id; a project's history/changelog.md is
        # not a session file.
        is_entry = HISTORY_ENTRY_NAME.fullmatch(name) is not None
        return HISTORY_ENTRY if is_entry else None  # type: ignore[return-value]
    if not (parent.startswith(PHASE_DIR_PREFIX) or grandparent == ATTEMPTS_DIR):
        return None
    if name == CHECKPOINT_FILE:
        return CHECKPOINT  # type: ignore[return-value]
    if name == FEEDBACK_FILE:
        return FEEDBACK  # type: ignore[return-value]
    return AGENT_OUTPUT  # type: ignore[return-value]


def session_files(paths: Iterable[Path], *, outside: Collection[Path] = ()) -> Iterator[Path]:
    """Every session file under ``paths`` (a file is taken as it is), each once, in order.

    Files inside a directory of ``outside`` (some ``d in file.parents``) are left out, and
    such directories are not even walked.
    """
    skip = set(outside)
    seen: set[Path] = set()
    for path in paths:
        if skip and (path in skip or not skip.isdisjoint(path.parents)):
            continue
        candidates = [path] if path.is_file() else sorted(_markdown_files(path, skip))
        for candidate in candidates:
            if candidate not in seen and kind_of(candidate) is not None:
                seen.add(candidate)
                yield candidate


def sessions_under(paths: Iterable[Path]) -> set[Path]:
    """The session directories under the folders among ``paths`` (files are passed over).

    They are found as the listing finds them (``haytham.store.scan.session_dirs``), whose
    module is imported only when a folder is given: validating files alone, as a pre-commit
    hook does, does not pay for the listing."""
    folders = [path for path in paths if path.is_dir()]
    if not folders:
        return set()
    from haytham.store.scan import session_dirs

    return {directory for folder in folders for directory in session_dirs(folder)}


def count_session_files(paths: Iterable[Path]) -> int:
    """``len(list(session_files(paths)))``, without making, sorting or hashing a ``Path``
    for each file (``haytham validate`` counts a tree of thousands of sessions): each
    folder's names are judged together, and the files of one folder given alone are
    counted, not collected (no other path can name them twice)."""
    paths = list(paths)
    alone = len(paths) == 1
    seen: set[str] = set()
    counted = 0
    for path in paths:
        if path.is_file():
            if kind_of(path) is not None:
                seen.add(os.fspath(path))
            continue
        for directory, names in _markdown_folders(os.fspath(path), set()):
            parent, folder = os.path.split(directory)
            grandparent = os.path.basename(parent)
            kinds = [name for name in names if kind_named(name, folder, grandparent) is not None]
            if alone:
                counted += len(kinds)
            else:
                seen.update(_child(directory, name) for name in kinds)
    return counted + len(seen)


_IGNORED_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _markdown_files(root: Path, skip: set[Path]) -> list[Path]:
    """``root.rglob("*.md")`` (any entry named ``*.md``; symlinked directories are not
    entered, unreadable ones are passed over) without descending into ``skip``."""
    if not root.is_dir():
        return []
    skipped = {os.fspath(directory) for directory in skip}
    return [Path(directory, name) for directory, name in _markdown_names(os.fspath(root), skipped)]


def _child(directory: str, name: str) -> str:
    """``os.fspath(Path(directory) / name)``: what pathlib spells, ``.`` left out."""
    return name if directory == os.curdir else os.path.join(directory, name)


def _markdown_names(root: str, skip: set[str]) -> list[tuple[str, str]]:
    """``_markdown_files`` as (folder, name) text pairs."""
    return [(directory, name) for directory, names in _markdown_folders(root, skip) for name in names]


def _markdown_folders(root: str, skip: set[str]) -> list[tuple[str, list[str]]]:
    """``_markdown_names`` grouped: each folder that holds ``*.md`` entries, with their names."""
    if not os.path.isdir(root):
        return []
    found: list[tuple[str, list[str]]] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except PermissionError:
            continue
        markdown = []
        for entry in entries:
            name = entry.name
            if name.endswith(".md"):
                markdown.append(name)
            try:
                is_dir = entry.is_dir()
            except OSError as error:
                if error.errno not in _IGNORED_ERRNOS:
                    raise
                continue
            if is_dir and not entry.is_symlink():
                child = _child(directory, name)
                if child not in skip:
                    pending.append(child)
        if markdown:
            found.append((directory, markdown))
    return found
