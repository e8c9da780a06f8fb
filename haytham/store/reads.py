"""What one transaction reads under a session's lock: each file read once.

A save compares with the record it replaces, keeps a person's hand-added sections and gives
the journal the before-image hash of every file it replaces; all three come from the same
read of the file, and each folder is listed once. A ``Reads`` lives for one hold of the lock
(``store.transaction``), so nothing it remembers is older than the lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from haytham.errors import DocumentError
from haytham.format import DocumentFormat, ReadCache
from haytham.format.guard import read_existing
from haytham.store import journal

R = TypeVar("R")

KEEP_BYTES = 1 << 20
"""A file larger than this is not kept by ``Reads`` (read again where needed, as an
agent output of tens of megabytes should not be held for a whole operation)."""


class Reads:
    """What one saving operation reads under the session's lock: each file read once.

    The record a save compares with, the text whose hand-added sections a rewrite keeps and
    the before-image hash the journal records all come from the same read of a file, and a
    phase folder is listed once (its leftovers, its letter-case twins, which files exist).
    Made anew for every hold of the lock: what it remembers is never older than the lock.
    """

    def __init__(self) -> None:
        self._data: dict[str, bytes | None] = {}
        self._names: dict[str, set[str]] = {}
        """Both by path as text: a ``Path``'s text is kept, its hash is computed anew each time."""
        self._rendered: dict[tuple[type, int], tuple[Any, str]] = {}

    def know(self, folder: Path, names: set[str]) -> None:
        """Take ``names`` as the listing of ``folder``, listed by the caller under the lock."""
        self._names[os.fspath(folder)] = names

    def listing(self, folder: Path) -> set[str]:
        """The names in ``folder`` (none when it does not exist), listed once."""
        key = os.fspath(folder)
        names = self._names.get(key)
        if names is None:
            try:
                names = set(os.listdir(key))
            except FileNotFoundError:
                names = set()
            self._names[key] = names
        return names

    def data(self, path: Path, limit: int | None = None) -> bytes | None:
        """The bytes of the file at ``path``, None when there is none (a name its listed
        folder, or the listed folder above that, lacks is not opened); any other failure is
        raised and nothing is kept. ``limit``: the file's kind's ``max_bytes``."""
        key = os.fspath(path)
        if key in self._data:
            return self._data[key]
        parent, name = os.path.split(key)
        names = self._names.get(parent)
        above, parent_name = os.path.split(parent)
        above_names = self._names.get(above)
        if (names is not None and name not in names) or (
            above_names is not None and parent_name not in above_names
        ):
            found = None
        else:
            found = read_existing(path, limit)
            if found is not None and len(found) > KEEP_BYTES:
                return found  # read again where needed: a save never holds many large files
        self._data[key] = found
        return found

    def keep(self, path: Path, data: bytes | None) -> None:
        """Remember bytes read from ``path`` by other means (``fs.file_version``)."""
        self._data[os.fspath(path)] = data

    def record(self, kind: DocumentFormat[R], path: Path, cache: ReadCache) -> R | None:
        """The record of the file at ``path``, None when there is none or it cannot be read
        (``read_path``'s record)."""
        try:
            data = self.data(path, kind.max_bytes)
            return None if data is None else kind.read_data(data, path, cache=cache)[0]
        except (OSError, DocumentError):
            return None

    def rendered(self, kind: DocumentFormat[R], record: R) -> str:
        """``kind.render(record)``, rendered once per operation: a checkpoint's text goes into
        its file and into each history entry the operation writes."""
        key = (type(kind), id(record))
        kept = self._rendered.get(key)
        if kept is None or kept[0] is not record:
            kept = self._rendered[key] = (record, kind.render(record))
        return kept[1]

    def current(self, path: Path) -> bytes | journal.Unread | None:
        """What ``journal.Change.write`` makes the before-image hash of: the bytes read,
        or ``UNREAD`` for a file not read (or unreadable), which the journal reads itself.

        The bytes are let go here (a file is staged once per operation): a save of several
        large outputs holds one old file at a time, as when each was read on its own."""
        return self._data.pop(os.fspath(path), journal.UNREAD)
