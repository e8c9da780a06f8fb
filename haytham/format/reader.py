"""Shared reading machinery: decode a file, find its sections, read ``- Label: value`` lines.

A ``Reader`` collects every problem as a located ``Issue`` instead of stopping at the first,
so ``validate_session`` can list them all and the parse functions can raise the first one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from haytham.errors import DocumentError, Issue
from haytham.format.markdown import Document, Section, iter_unfenced_lines, normalise_label, parse_document
from haytham.format.patterns import lazy
from haytham.format.schema import describe, schema_errors
from haytham.format.sections import NEAR_MISS, SectionSpec

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

_ITEM = lazy(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_CHECKBOX = lazy(r"\[([ xX]?)\][ \t]*(.*)")
_BOLD_LABEL = lazy(r"(\*\*|__)([^*_:]+?)[ \t]*(:?)\1[ \t]*(:?)(.*)")
"""``**Approved:** true`` or ``**Approved**: true`` (as a code-hosting site's editor leaves it)."""


def split_label(content: str) -> tuple[str, str] | None:
    """``(label, value)`` of a ``Label: value`` item's text, a bold label unwrapped; None
    when the text has no label."""
    if content.startswith(("**", "__")):
        bold = _BOLD_LABEL.fullmatch(content)
        if bold is not None and bool(bold.group(3)) != bool(bold.group(4)):
            return bold.group(2), bold.group(5)
    label, colon, value = content.partition(":")
    return (label, value) if colon else None


def decode(data: bytes, path: Path | None) -> str:
    """UTF-8 text with any BOM removed, and CRLF turned to LF when every line uses CRLF."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DocumentError(
            f"byte {data[error.start]:#04x} is not UTF-8 (save the file as UTF-8)",
            path=path,
            line=line,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:  # a one-character search is far cheaper than counting "\r\n"
        crlf = text.count("\r\n")
        if crlf and crlf == text.count("\n"):
            text = text.replace("\r\n", "\n")
    return text


class Field(NamedTuple):
    """One ``- Label: value`` line of a section."""

    label: str
    value: str
    line: int


class Reader:
    """Reads one document leniently, recording issues and where each value came from."""

    def __init__(
        self,
        text: str,
        path: Path | None,
        labels: Mapping[str, str],
        *,
        sections_text: str | None = None,
        fast: bool = True,
        known_sections: Sequence[SectionSpec] = (),
    ) -> None:
        self.text = text
        self.fast = fast
        """Whether the section parser may take its fast path (``parse_document``)."""
        self.path = path
        self.labels = labels
        self.known_sections = known_sections
        """The kind's declared sections, when it wants a misspelt heading named (feedback)."""
        """Maps record attribute names to the labels people see in the file."""
        self.issues: list[Issue] = []
        self.lines: dict[tuple[Any, ...], int] = {}
        """Line of each value, keyed by its path in the record (``("phases", 0)``)."""
        self.labels_at: dict[tuple[Any, ...], str] = {}
        """Labels of single values that are not the attribute's usual label (an agent's name
        labels its status), keyed by path like ``lines``."""
        self.missing: set[tuple[Any, ...]] = set()
        """Paths of required values already reported missing; the schema does not repeat them."""
        self.misspelt: set[str] = set()
        """Attributes whose label was found misspelt (and reported so), not missing."""
        source = text if sections_text is None else sections_text
        self.document: Document = parse_document(source, fast=fast)
        if "<<<<<<< " in source or ">>>>>>> " in source:
            self._report_conflict_markers(source)

    def _report_conflict_markers(self, source: str) -> None:
        """A merge left unresolved would otherwise read as plausible text (in comments, say)."""
        for number, line in iter_unfenced_lines(source, 1):
            if line.startswith(("<<<<<<< ", ">>>>>>> ")):
                self.error(number, None, f"{line.strip()!r} is a git conflict marker: resolve the merge")

    def error(self, line: int | None, field: str | None, message: str) -> None:
        """Record a problem; one with no line of its own (a missing section) is placed at the
        title, or line 1, so that every problem of a document has a location."""
        if line is None:
            line = self.document.title.line if self.document.title is not None else 1
        self.issues.append(Issue(self.path, line, field, message))

    def warn(self, line: int, field: str | None, message: str) -> None:
        """Record something read right that needs a person's attention (a contradiction)."""
        self.issues.append(Issue(self.path, line, field, message, severity="warning"))

    def expect_title(self, prefix: str) -> str:
        """The text after ``prefix`` in the level-1 title (``# Phase Checkpoint: X``), as written.

        The title's source text is used, not its rendered markdown, so a value written with
        ``write_title`` reads back exactly.
        """
        title = self.document.title
        if title is None:
            self.error(1, None, f"the file does not start with a '# {prefix}...' title")
            return ""
        words = prefix.split()
        found = re.match(r"[ \t]*".join(map(re.escape, words)), title.source_title, re.IGNORECASE)
        if found is None:
            self.error(title.line, None, f"title {title.source_title!r} does not start with {prefix!r}")
            return ""
        return title.source_title[found.end() :].strip(" \t")

    def section(self, spec: SectionSpec) -> Section | None:
        """The document's section for ``spec``; missing, it is an issue if it is required.

        With ``known_sections``, a heading that is none of them but nearly ``spec``'s title
        (``## Reveiw Status``) is one error at its line, and its body is read as ``spec``'s.
        """
        found = self.document.find(spec.title)
        if found is None and self.known_sections:
            near = self.near_section(spec)
            if near is not None:
                self.error(
                    near.line,
                    None,
                    f"'## {near.title}' is not a section of this file; did you mean '{spec.heading}'?",
                )
                return near
        if found is None and spec.required:
            self.error(None, None, f"section '{spec.heading}' is missing")
        return found

    def near_section(self, spec: SectionSpec) -> Section | None:
        """The first section whose title is no known section's but nearly ``spec``'s."""
        import difflib  # only when a section is missing: most reads never get here

        known = {normalise_label(s.title) for s in self.known_sections}
        title = normalise_label(spec.title)
        for section in self.document.sections:
            name = normalise_label(section.title)
            if name in known:
                continue
            if difflib.SequenceMatcher(None, name, title).ratio() >= NEAR_MISS:
                return section
        return None

    def check_labels(self, spec: SectionSpec, fields: Mapping[str, Field]) -> None:
        """Name a label that is not ``spec``'s but nearly one it lacks, at the label's line.

        ``- Aproved: yes`` is then "'Aproved' is not a label of this section; did you mean
        'Approved'?" instead of "Approved: is missing" at the section's heading.
        """
        declared = {normalise_label(f.label): f for f in spec.fields}
        for key, field in fields.items():
            if key in declared:
                continue
            import difflib  # only for a label the section does not declare

            near = difflib.get_close_matches(key, [k for k in declared if k not in fields], 1, NEAR_MISS)
            if near:
                meant = declared[near[0]]
                if meant.attr in self.misspelt:
                    continue
                self.misspelt.add(meant.attr)
                self.error(
                    field.line,
                    None,
                    f"{field.label!r} is not a label of this section; did you mean {meant.label!r}?",
                )

    def fields(self, section: Section | None, *, exact: bool = False) -> dict[str, Field]:
        """The ``- Label: value`` items of ``section`` keyed by normalised label.

        With ``exact`` the labels are names (agent names) and are keyed as written, so two
        names that differ only in case stay two entries.
        """
        found: dict[str, Field] = {}
        if section is None:
            return found
        item_match = _ITEM.match
        for line_number, line in iter_unfenced_lines(section.body, section.body_line):
            if line.startswith("- "):  # the usual bullet: what _ITEM would take, found faster
                content = line[2:].strip()
            else:
                item = item_match(line.rstrip("\r") if line.endswith("\r") else line)
                if item is None:
                    continue
                content = (item.group(1) or "").strip()
            if not content:
                continue
            checkbox = _CHECKBOX.fullmatch(content) if content.startswith("[") else None
            if checkbox:
                split = split_label(checkbox.group(2))
                label, value = split if split is not None else (checkbox.group(2), checkbox.group(1))
            else:
                split = split_label(content)
                if split is None:
                    continue
                label, value = split
            label = label.strip()
            key = label if exact else normalise_label(label)
            first = found.get(key)
            if first is not None:
                self.error(line_number, label, f"appears again (first at line {first.line})")
                continue
            found[key] = Field(label, value.strip(), line_number)
        return found

    def take(
        self,
        fields: Mapping[str, Field],
        attr: str,
        convert: Callable[[str], Any],
        *,
        default: Any = None,
        required: bool = True,
        section: Section | None = None,
    ) -> Any:
        """Convert the field labelled for ``attr``; a missing required field is an issue."""
        label = self.labels[attr]
        field = fields.get(normalise_label(label))
        if field is None:
            if required:
                if attr not in self.misspelt:  # a misspelt label was reported at its own line
                    where = section.line if section is not None else None
                    self.error(where, label, "is missing")
                self.missing.add((attr,))
            return default
        self.lines[(attr,)] = field.line
        return convert(field.value)

    def check_schema(self, kind: str, data: Mapping[str, Any]) -> None:
        """Report every schema violation at the line and label of the offending value."""
        for found in schema_errors(kind, data):
            error = _specific(found)
            path = tuple(error.absolute_path)
            if path in self.missing:
                continue
            line = None
            for size in range(len(path), 0, -1):
                if path[:size] in self.lines:
                    line = self.lines[path[:size]]
                    break
            names = [p for p in path if isinstance(p, str)]
            label = self.labels_at.get(path) or (self.labels.get(names[-1], names[-1]) if names else None)
            self.error(line, label, describe(error))


def _specific(error: ValidationError) -> ValidationError:
    """The error of the branch an ``anyOf``/``oneOf`` value meant to match.

    ``- Started: yesterday`` breaks ``anyOf: [null, timestamp]``; the useful message is the
    timestamp branch's (a pattern), not "not valid under any of the given schemas". The
    branch meant is one whose complaint is not merely the value's type.
    """
    while error.validator in ("anyOf", "oneOf") and error.context:
        meant = [e for e in error.context if e.validator != "type"]
        error = (meant or error.context)[0]
    return error
