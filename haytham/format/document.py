"""What every document kind offers: read leniently with located issues, render canonically.

Reading may go through a ``ReadCache`` of recent results, passed by the caller that owns it
(a store keeps one per instance; nothing is cached process-wide): the same kind, path and
exact text give the same record and issues, so a text that was read before comes back
without being parsed again (the comparison is of the whole text, never of a timestamp, so it
cannot be stale). Records are frozen, so sharing them is safe.
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

from haytham.errors import DocumentError, Issue, StorageError
from haytham.format.guard import read_file
from haytham.format.reader import Reader, decode
from haytham.format.schema import certainly_valid
from haytham.format.sections import SectionSpec, keep_added, misnamed
from haytham.format.version import read_version

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
        names = _FIELD_NAMES[kind] = tuple(
            f.name for f in dataclasses.fields(value) if not f.metadata.get("derived")
        )  # a derived field (``UserFeedback.notes``) is not the record's data
    # Most fields are plain values: taken as they are, with no call.
    return {
        name: field if type(field := getattr(value, name)) in _PLAIN_TYPES else to_json(field)
        for name in names
    }


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


class DocumentFormat(ABC, Generic[R]):
    """One kind of session file. Subclasses say how its fields are spelled."""

    kind: str
    """The schema's name, ``haytham/format/schemas/{kind}.schema.json``."""
    labels: ClassVar[Mapping[str, str]]
    """Record attribute to the label written in the file."""
    version_section: ClassVar[SectionSpec]
    """The section whose ``- Format: N`` line gives the file's format version."""
    sections: ClassVar[tuple[SectionSpec, ...]] = ()
    """The kind's sections, for what a person adds: a rewrite keeps the others
    (``render_over``), and one named close to a missing section is a warning (``_read``)."""
    reads_near_misses: ClassVar[bool] = False
    """Whether the reader takes a heading nearly a missing section's title for that section
    (``Reader.near_section``), so that it is no section of the person's."""
    max_bytes: ClassVar[int | None] = None
    """The largest file of this kind that is read; None: ``MAX_DOCUMENT_BYTES``."""

    @abstractmethod
    def _collect(self, reader: Reader) -> dict[str, Any]:
        """Read the document into plain data, leaving unparseable values as found."""

    @abstractmethod
    def _build(self, data: dict[str, Any]) -> R:
        """Make the record from data that passed the schema."""

    @abstractmethod
    def render(self, record: R) -> str:
        """The canonical text of ``record``: LF line endings, one final newline."""

    def read(
        self, text: str, path: Path | None = None, *, cache: ReadCache | None = None, fast: bool = True
    ) -> tuple[R | None, list[Issue]]:
        """Parse ``text``; return the record and every issue, sorted by line.

        The record is None only when an issue is an error; warnings (``Issue.severity``)
        come with a record that is read right but needs a person's attention.

        With ``cache`` a text read before for this kind and path comes back unparsed.
        ``fast=False`` keeps the section parser off its fast path (``parse_document``), which
        gives the same answer; the tests compare the two.
        """
        if cache is None or not fast:
            return self._read(text, path, fast=fast)
        key = _key(self, path)
        kept = cache.recall(key)
        if kept is not None and kept[1] == text:
            return kept[2], list(kept[3])
        return self._read_and_keep(cache, key, None, text, path)

    def read_data(
        self, data: bytes, path: Path | None = None, *, cache: ReadCache | None = None
    ) -> tuple[R | None, list[Issue]]:
        """``read`` of a file's bytes (DocumentError if they are not UTF-8).

        The bytes are let go as soon as they are decoded unless the cache keeps them, so a
        large file is not held as bytes and as text while it is parsed (the caller must not
        hold them either: ``read_path`` and ``load`` pass them straight from the read).
        """
        if cache is None:
            text = decode(data, path)
            del data
            return self._read(text, path)
        key = _key(self, path)
        kept = cache.recall(key)
        if kept is not None and kept[0] == data:
            return kept[2], list(kept[3])
        text = decode(data, path)
        if kept is not None and kept[1] == text:
            cache.remember(key, (data, text, kept[2], kept[3]))
            return kept[2], list(kept[3])
        if len(text) > cache.max_item_chars:  # never kept: forget the old entry, drop the bytes
            cache.remember(key, (None, text, None, ()))
            del data
            return self._read(text, path)
        return self._read_and_keep(cache, key, data, text, path)

    def _read_and_keep(
        self, cache: ReadCache, key: _Key, data: bytes | None, text: str, path: Path | None
    ) -> tuple[R | None, list[Issue]]:
        record, issues = self._read(text, path)
        cache.remember(key, (data, text, record, tuple(issues)))
        return record, issues

    def _canonical(self, text: str) -> R | None:
        """The record of ``text`` when it is in exactly the shape ``render`` writes, read
        without the general reader; None for any other text (the reader decides).

        A kind that offers one must give a record only where ``_read`` with ``fast=False``
        gives the same record and no issue at all; ``tests/test_canonical_read.py`` compares
        the two on rendered records and on edited texts."""
        return None

    def _read(self, text: str, path: Path | None, *, fast: bool = True) -> tuple[R | None, list[Issue]]:
        if fast:
            found = self._canonical(text)
            if found is not None:
                return found, []
        return self._read_with(self._reader(text, path, fast=fast))

    def _read_with(self, reader: Reader) -> tuple[R | None, list[Issue]]:
        """The record and issues of the document ``reader`` holds."""
        data = self._collect(reader)
        read_version(reader, self.version_section)
        for section, meant in misnamed(
            reader.document, self.sections, near_misses_read=self.reads_near_misses
        ):
            reader.warn(
                section.line,
                None,
                f"unknown section '## {section.title}': did you mean '{meant.heading}'? haytham reads "
                f"only '{meant.heading}', so what this section holds is not read (it is kept as it is)",
            )
        reader.check_schema(self.kind, data)
        issues = sorted(reader.issues, key=lambda i: (i.line is None, i.line or 0))
        if any(issue.is_error for issue in issues):
            return None, issues
        return self._build(data), issues

    def _reader(self, text: str, path: Path | None, *, fast: bool = True) -> Reader:
        """The reader for ``text``; a kind may limit what goes through the section parser."""
        return Reader(text, path, self.labels, fast=fast)

    def version(self, text: str, path: Path | None = None) -> int:
        """The format version of ``text`` (0 when it has no version line); DocumentError when
        the line is not a version or names one newer than this haytham's."""
        reader = self._reader(text, path)
        version = read_version(reader, self.version_section)
        if reader.issues:
            first = reader.issues[0]
            raise DocumentError(first.message, path=path, line=first.line, field=first.field)
        return version

    def read_path(self, path: Path, *, cache: ReadCache | None = None) -> tuple[R | None, list[Issue]]:
        """Read the file at ``path``; an unreadable or undecodable file is an issue too."""
        try:
            return self._read_at(path, cache)
        except DocumentError as error:
            return None, [Issue(error.path, error.line, error.field, error.message)]
        except StorageError as error:
            return None, [Issue(path, None, None, error.brief)]
        except OSError as error:
            return None, [Issue(path, None, None, f"cannot be read: {error.strerror}")]

    def render_over(self, record: R, old_text: str | None) -> str:
        """``render(record)`` for a file that holds ``old_text`` now: the sections a person
        added to it are kept, each after the section it followed (docs/formats.md, "Hand
        edits"). Cheap when there are none: only a file with a heading haytham does not
        write is parsed."""
        return self._render_over(record, old_text)[0]

    def _render_over(self, record: R, old_text: str | None, rendered: str | None = None) -> tuple[str, bool]:
        """``render_over`` and whether its text is ``render(record)`` itself (``rendered``,
        when the caller has it already)."""
        text = self.render(record) if rendered is None else rendered
        if old_text is None or not self.sections or not _has_other_headings(old_text, text):
            return text, True
        old = self._reader(old_text, None).document
        new = self._reader(text, None).document
        kept = keep_added(old, old_text, new, text, self.sections, near_misses_read=self.reads_near_misses)
        return kept, kept == text

    def render_at(self, record: R, path: Path, *, cache: ReadCache | None = None) -> str:
        """``render_over`` the file at ``path`` as it is now (none, or not UTF-8: ``render``).

        With ``cache`` the record is remembered as the read of the text (when the text is
        ``render(record)`` itself, whose read is the record with no issue): the writer that
        is about to write it, and the next call that reads it back, parse nothing."""
        old: bytes | None = None
        if self.sections:
            try:
                old = read_file(path, self.max_bytes)
            except (OSError, DocumentError):
                old = None
        return self.render_over_data(record, path, old, cache=cache)

    def render_over_data(
        self,
        record: R,
        path: Path,
        old: bytes | None,
        *,
        cache: ReadCache | None = None,
        rendered: str | None = None,
    ) -> str:
        """``render_at`` for a caller that has just read the file at ``path`` itself: ``old``
        is its bytes (None: no file, or one that could not be read), so a writer reads each
        file it replaces once, for this merge and for its journal's before-image alike.
        ``rendered``: ``render(record)``, when the caller has rendered it already."""
        if not self.sections:
            text, canonical = (self.render(record) if rendered is None else rendered), True
        else:
            old_text = None
            if old is not None:
                try:
                    old_text = old.decode("utf-8")
                except UnicodeDecodeError as error:  # a person's bytes it cannot keep: refuse
                    raise _not_rewritten(old, path, error) from None
            text, canonical = self._render_over(record, old_text, rendered)
        if cache is not None and canonical and len(text) <= cache.max_item_chars:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: the writer refuses the text
                return text
            # An entry is used only for exactly these bytes: a write that fails leaves it unused.
            cache.remember(_key(self, path), (data, text, record, ()))
        return text

    def parse(self, text: str, path: Path | None = None, *, cache: ReadCache | None = None) -> R:
        """Parse ``text`` or raise DocumentError naming the file, line and field."""
        return _record_or_raise(*self.read(text, path, cache=cache))

    def load(self, path: Path, *, cache: ReadCache | None = None) -> R:
        """Read and parse the file at ``path``."""
        return _record_or_raise(*self._read_at(path, cache))

    def load_data(self, data: bytes, path: Path, *, cache: ReadCache | None = None) -> R:
        """``load`` of bytes the caller has just read from the file at ``path``."""
        return _record_or_raise(*self.read_data(data, path, cache=cache))

    def load_optional(self, path: Path, *, cache: ReadCache | None = None) -> R | None:
        """``load``, or None when there is no file at ``path``."""
        try:
            found = self._read_at(path, cache)
        except FileNotFoundError:
            return None
        return _record_or_raise(*found)

    def _read_at(self, path: Path, cache: ReadCache | None) -> tuple[R | None, list[Issue]]:
        """``read_data`` of the file at ``path``: what ``load``, ``load_optional`` and
        ``read_path`` read. A kind whose files may be large reads them its own way (an agent
        output maps the file and decodes only its header and its content)."""
        return self.read_data(read_file(path, self.max_bytes), path, cache=cache)

    def check_record(self, record: R, path: Path | None = None) -> None:
        """Refuse to write a record that breaks the schema (the caller's bad value)."""
        data = to_json(record)
        if certainly_valid(self.kind)(data):
            return
        reader = Reader("", path, self.labels)
        reader.check_schema(self.kind, data)
        errors = [issue for issue in reader.issues if issue.is_error]
        if errors:
            first = errors[0]
            raise DocumentError(first.message, path=path, field=first.field)


_Key = tuple[type, type, str | None]
"""A read's cache key: the kind, and the path's type and text."""


def _not_rewritten(data: bytes, path: Path, error: UnicodeDecodeError) -> DocumentError:
    """The refusal to rewrite a file whose bytes are not UTF-8 (a person's Latin-1 notes, a
    lone surrogate): rewriting it would drop what cannot be decoded, so nothing is written."""
    return DocumentError(
        f"byte {data[error.start]:#04x} is not UTF-8: haytham rewrites only UTF-8 files, so "
        "nothing was written and no byte of it is lost; save it as UTF-8 and run the command again",
        path=path,
        line=data[: error.start].count(b"\n") + 1,
    )


def _key(kind: DocumentFormat[Any], path: Path | None) -> _Key:
    """The cache key of a read: the kind and the path (as text, whose hash is cheap)."""
    return (type(kind), type(path), None if path is None else os.fspath(path))


def _has_other_headings(old_text: str, new_text: str) -> bool:
    """Whether ``old_text`` may hold a heading that ``new_text`` lacks: a quick test of lines
    that may say yes for a line in a fence or a rule (the parser then decides), never no
    for a heading (an ATX ``#`` line or a setext underline)."""
    written = {line for line in new_text.splitlines() if line.startswith("#")}
    for line in old_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and line.rstrip() not in written:
            return True
        if stripped and set(stripped) <= {"=", "-"}:
            return True
    return False


def _record_or_raise(record: R | None, issues: list[Issue]) -> R:
    """The record; without one, the first error raised (warnings never stop a read)."""
    if record is None:
        first = next(issue for issue in issues if issue.is_error)
        raise DocumentError(first.message, path=first.path, line=first.line, field=first.field)
    return record


CACHE_CHARS = 8 * 1024 * 1024
"""How many characters of text a ReadCache keeps at most, over all entries, by default."""
CACHE_ITEM_CHARS = 256 * 1024
"""Texts longer than this are never kept (large agent outputs are parsed each time)."""
_Entry = tuple[bytes | None, str, Any, tuple[Issue, ...]]
"""What the cache keeps for a kind and path: the file's bytes (when read from a file), its
text, the record and the issues."""


class ReadCache:
    """Recent reads by kind and path, least recently used first out; safe across threads.

    An entry is used only when the bytes or text read now are exactly those it was made
    from, so it is never stale. It holds at most ``max_chars`` characters of text over all
    entries, and never a text longer than ``max_item_chars``.
    """

    def __init__(self, max_chars: int = CACHE_CHARS, max_item_chars: int = CACHE_ITEM_CHARS) -> None:
        self.max_chars = max_chars
        self.max_item_chars = max_item_chars
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def chars(self) -> int:
        """The characters of text kept now."""
        with self._lock:
            return self._chars

    def recall(self, key: _Key) -> _Entry | None:
        """The entry for ``key``, if any (it becomes the most recently used)."""
        with self._lock:
            kept = self._entries.get(key)
            if kept is not None:
                self._entries.move_to_end(key)
            return kept

    def remember(self, key: _Key, entry: _Entry) -> None:
        """Keep ``entry`` for ``key``, dropping the least recently used past the bound."""
        size = len(entry[1])
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._chars -= len(old[1])
            if size > self.max_item_chars:
                return
            self._entries[key] = entry
            self._chars += size
            while self._chars > self.max_chars and self._entries:
                _, dropped = self._entries.popitem(last=False)
                self._chars -= len(dropped[1])

    def clear(self) -> None:
        """Forget every remembered read (to measure a first read, or free the memory)."""
        with self._lock:
            self._entries.clear()
            self._chars = 0
