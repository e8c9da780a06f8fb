"""What every document kind offers: read leniently with located issues, render canonically."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from haytham._reader import Reader, decode
from haytham.errors import DocumentError, Issue

R = TypeVar("R")


def to_json(value: Any) -> Any:
    """A record as plain JSON data (tuples become lists), for schemas and exports."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


class DocumentFormat(ABC, Generic[R]):
    """One kind of session file. Subclasses say how its fields are spelled."""

    kind: str
    """The schema's name, ``haytham/schemas/{kind}.schema.json``."""
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
            return self.read(decode(path.read_bytes(), path), path)
        except DocumentError as error:
            return None, [Issue(error.path, error.line, error.field, error.message)]
        except OSError as error:
            return None, [Issue(path, None, None, f"cannot be read: {error.strerror}")]

    def parse(self, text: str, path: Path | None = None) -> R:
        """Parse ``text`` or raise DocumentError naming the file, line and field."""
        record, issues = self.read(text, path)
        if record is None:
            first = issues[0]
            raise DocumentError(first.message, path=first.path, line=first.line, field=first.field)
        return record

    def load(self, path: Path) -> R:
        """Read and parse the file at ``path``."""
        return self.parse(decode(path.read_bytes(), path), path)

    def check_record(self, record: R, path: Path | None = None) -> None:
        """Refuse to write a record that breaks the schema (the caller's bad value)."""
        reader = Reader("", path, self.labels)
        reader.check_schema(self.kind, to_json(record))
        if reader.issues:
            first = reader.issues[0]
            raise DocumentError(first.message, path=path, field=first.field)
