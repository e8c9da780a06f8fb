"""What every document kind offers: read leniently with located issues, render canonically.

Reading keeps a small cache of recent results: the same kind, path and exact text give the
same record and issues, so a text that was read before comes back without being parsed again
(the comparison is of the whole text, never of a timestamp, so it cannot be stale). Records
are frozen, so sharing them is safe.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from haytham.errors import DocumentError, Issue
from haytham.format.reader import Reader, decode
from haytham.format.schema import certainly_valid

R = TypeVar("R")


def to_json(value: Any) -> Any:
    """A record as plain JSON data (tuples become lists), for schemas and exports."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is None:
        if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            if isinstance(value, (list, tuple)):
                return [to_json(v) for v in value]
            return value
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
    return {name: to_json(getattr(value, name)) for name in names}


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


class DocumentFormat(ABC, Generic[R]):
    """One kind of session file. Subclasses say how its fields are spelled."""

    kind: str
    """The schema's name, ``haytham/format/schemas/{kind}.schema.json``."""
    labels: ClassVar[Mapping[str, str]]
    """Record attribute to the label written in the file."""

    @abstractmethod
    def _collect(self, reader: Reader) -> dict[str, Any]:
        """Read the document into plain data, leaving unparseable values as found."""

    @abstractmethod
    def _build(self, data: dict[str, Any]) -> R:
        """Make the record from data that passed the schema."""

    @abstractmethod
    def render(self, record: R) -> str:
        """The canonical text of ``record``: LF line endings, one final newline."""

    def read(self, text: str, path: Path | None = None) -> tuple[R | None, list[Issue]]:
        """Parse ``text``; return the record (None when it has errors) and every issue."""
        key = _key(self, path)
        kept = _recall(key)
        if kept is not None and kept[1] == text:
            return kept[2], list(kept[3])
        return self._read_and_keep(key, None, text, path)

    def read_data(self, data: bytes, path: Path | None = None) -> tuple[R | None, list[Issue]]:
        """``read`` of a file's bytes (DocumentError if they are not UTF-8)."""
        key = _key(self, path)
        kept = _recall(key)
        if kept is not None and kept[0] == data:
            return kept[2], list(kept[3])
        text = decode(data, path)
        if kept is not None and kept[1] == text:
            _remember(key, (data, text, kept[2], kept[3]))
            return kept[2], list(kept[3])
        return self._read_and_keep(key, data, text, path)

    def _read_and_keep(
        self, key: _Key, data: bytes | None, text: str, path: Path | None
    ) -> tuple[R | None, list[Issue]]:
        record, issues = self._read(text, path)
        if len(text) <= CACHE_ITEM_CHARS:
            _remember(key, (data, text, record, tuple(issues)))
        return record, issues

    def _read(self, text: str, path: Path | None) -> tuple[R | None, list[Issue]]:
        reader = self._reader(text, path)
        data = self._collect(reader)
        reader.check_schema(self.kind, data)
        if reader.issues:
            return None, sorted(reader.issues, key=lambda i: (i.line is None, i.line or 0))
        return self._build(data), []

    def _reader(self, text: str, path: Path | None) -> Reader:
        """The reader for ``text``; a kind may limit what goes through the section parser."""
        return Reader(text, path, self.labels)

    def read_path(self, path: Path) -> tuple[R | None, list[Issue]]:
        """Read the file at ``path``; an unreadable or undecodable file is an issue too."""
        try:
            return self.read_data(read_file(path), path)
        except DocumentError as error:
            return None, [Issue(error.path, error.line, error.field, error.message)]
        except OSError as error:
            return None, [Issue(path, None, None, f"cannot be read: {error.strerror}")]

    def parse(self, text: str, path: Path | None = None) -> R:
        """Parse ``text`` or raise DocumentError naming the file, line and field."""
        return _record_or_raise(*self.read(text, path))

    def load(self, path: Path) -> R:
        """Read and parse the file at ``path``."""
        return _record_or_raise(*self.read_data(read_file(path), path))

    def load_optional(self, path: Path) -> R | None:
        """``load``, or None when there is no file at ``path``."""
        try:
            data = read_file(path)
        except FileNotFoundError:
            return None
        return _record_or_raise(*self.read_data(data, path))

    def check_record(self, record: R, path: Path | None = None) -> None:
        """Refuse to write a record that breaks the schema (the caller's bad value)."""
        data = to_json(record)
        if certainly_valid(self.kind)(data):
            return
        reader = Reader("", path, self.labels)
        reader.check_schema(self.kind, data)
        if reader.issues:
            first = reader.issues[0]
            raise DocumentError(first.message, path=path, field=first.field)


_CHUNK = 1 << 16
_Key = tuple[type, type, str | None]


def _key(kind: DocumentFormat[Any], path: Path | None) -> _Key:
    """The cache key of a read: the kind and the path (as text, whose hash is cheap)."""
    return (type(kind), type(path), None if path is None else os.fspath(path))


def read_file(path: Path) -> bytes:
    """The bytes of the file at ``path``: what ``Path.read_bytes`` gives, with fewer layers
    (a small file is one ``read`` and a second one that finds the end)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        first = os.read(fd, _CHUNK)
        if len(first) < _CHUNK and not os.read(fd, 1):
            return first
        os.lseek(fd, 0, os.SEEK_SET)
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            return handle.readall()
    finally:
        os.close(fd)


def _record_or_raise(record: R | None, issues: list[Issue]) -> R:
    if record is None:
        first = issues[0]
        raise DocumentError(first.message, path=first.path, line=first.line, field=first.field)
    return record


CACHE_CHARS = 8 * 1024 * 1024
"""How many characters of text the read cache keeps at most, over all entries."""
CACHE_ITEM_CHARS = 256 * 1024
"""Texts longer than this are never kept (large agent outputs are parsed each time)."""
_CACHE_LOCK = threading.Lock()
_Entry = tuple[bytes | None, str, Any, tuple[Issue, ...]]
"""What the cache keeps for a kind and path: the file's bytes (when read from a file), its
text, the record and the issues."""
_CACHE: OrderedDict[_Key, _Entry] = OrderedDict()
_cached_chars = 0


def _recall(key: _Key) -> _Entry | None:
    with _CACHE_LOCK:
        kept = _CACHE.get(key)
        if kept is not None:
            _CACHE.move_to_end(key)
        return kept


def _remember(key: _Key, entry: _Entry) -> None:
    global _cached_chars
    with _CACHE_LOCK:
        old = _CACHE.pop(key, None)
        if old is not None:
            _cached_chars -= len(old[1])
        _CACHE[key] = entry
        _cached_chars += len(entry[1])
        while _cached_chars > CACHE_CHARS and _CACHE:
            _, dropped = _CACHE.popitem(last=False)
            _cached_chars -= len(dropped[1])


def clear_cache() -> None:
    """Forget every remembered read (to measure a first read, or free the memory)."""
    global _cached_chars
    with _CACHE_LOCK:
        _CACHE.clear()
        _cached_chars = 0
