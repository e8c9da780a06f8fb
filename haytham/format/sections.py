"""The shape of a document kind, declared once as data: its sections, their labels, their order.

Each kind's module declares a tuple of ``SectionSpec`` in the order the file has them. The
same declaration gives the reader the section titles and whether each is required, the
writer the headings and the ``- Label: value`` lines in order (``write_fields``), and the
schema error messages the label of each record attribute (``labels_of``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from haytham.format.layout import FORMAT_LABEL, FORMAT_VERSION
from haytham.format.markdown import Document, Section, line_offsets, normalise_label
from haytham.frozen import frozen

NEAR_MISS = 0.8
"""How alike (difflib's ratio) a label or title must be to one haytham knows to be taken for
a typo of it: 'Aproved' is 0.93 like 'Approved', 'My Notes' nothing like any."""


@frozen
class FieldSpec:
    """One ``- Label: value`` line (or table column): the record attribute it holds."""

    attr: str
    label: str


@frozen
class SectionSpec:
    """One ``## Title`` section of a document kind."""

    title: str
    fields: tuple[FieldSpec, ...] = ()
    """Its ``- Label: value`` lines (a table's columns), in the order they are written."""
    required: bool = True
    """Whether a file without it is an error."""
    attr: str | None = None
    """The record attribute the whole section holds, if any (``comments``, ``phases``)."""

    @property
    def heading(self) -> str:
        return f"## {self.title}"

    def label(self, attr: str) -> str:
        """The label of ``attr`` in this section."""
        for field in self.fields:
            if field.attr == attr:
                return field.label
        raise KeyError(f"section {self.title!r} has no field {attr!r}")


VERSION_FIELD = FieldSpec("format_version", FORMAT_LABEL)
"""``- Format: N``: the last field of each markdown kind's metadata section, always written
as the current version (``write_fields`` fills it in), read by ``format/version.py``."""


def labels_of(sections: Iterable[SectionSpec], aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Record attribute to label: a section's own attribute to its title, each field's to its
    label (the first section that has it wins), then each alias to the label of the
    attribute it names (an agent's ``output_file`` is labelled like ``agent_outputs``)."""
    labels: dict[str, str] = {}
    for section in sections:
        if section.attr is not None:
            labels.setdefault(section.attr, section.title)
        for field in section.fields:
            labels.setdefault(field.attr, field.label)
    for attr, target in (aliases or {}).items():
        labels[attr] = labels[target]
    return labels


def write_fields(section: SectionSpec, values: Mapping[str, str | None]) -> list[str]:
    """The section's heading and its ``- Label: value`` lines in declared order.

    A value of None leaves its line out (an optional field not written); a value that starts
    with a line break follows the colon directly (a fenced block under ``- Stack Trace:``).
    The version field needs no value: it is always the current version.
    """
    lines = [section.heading]
    for field in section.fields:
        value = str(FORMAT_VERSION) if field is VERSION_FIELD else values[field.attr]
        if value is None:
            continue
        lines.append(f"- {field.label}:{value}" if value.startswith("\n") else f"- {field.label}: {value}")
    return lines


# ----------------------------------------------------------------- a person's sections
#
# A file haytham owns may hold sections a person added (``## Notes``). They are kept: a
# rewrite puts each back after the section it followed (``keep_added``). One whose title is
# close to a section of the kind that the file lacks is most likely that section misspelt
# or renamed, which haytham would not read: it is reported with a did-you-mean
# (``misnamed``), never silently ignored.

CLOSE_MATCH = 0.6
"""How alike (difflib's ratio) a title must be to a missing section's to be taken for it."""


def own_sections(
    document: Document, specs: Sequence[SectionSpec], *, near_misses_read: bool = False
) -> list[Section]:
    """The sections of ``document`` that are none of ``specs``: the ones a person added.

    With ``near_misses_read`` (a kind whose reader takes ``## Reveiw Status`` for ``## Review
    Status``, ``Reader.near_section``), a near miss of a missing section is not one of them:
    it was read, and reported, as that section."""
    known = {normalise_label(spec.title) for spec in specs}
    present = {normalise_label(section.title) for section in document.sections}
    missing = [spec for spec in specs if normalise_label(spec.title) not in present]
    return [
        section
        for section in document.sections
        if normalise_label(section.title) not in known
        and not (near_misses_read and any(_ratio(section.title, spec.title) >= NEAR_MISS for spec in missing))
    ]


def misnamed(
    document: Document, specs: Sequence[SectionSpec], *, near_misses_read: bool = False
) -> list[tuple[Section, SectionSpec]]:
    """Each added section whose title is close to a section of ``specs`` that ``document``
    does not have (``## Comments`` for a missing ``## User Comments``), with that section."""
    present = {normalise_label(section.title) for section in document.sections}
    missing = [spec for spec in specs if normalise_label(spec.title) not in present]
    found = []
    for section in own_sections(document, specs, near_misses_read=near_misses_read) if missing else ():
        guess = _closest(section.title, missing)
        if guess is not None:
            found.append((section, guess))
    return found


def keep_added(
    old: Document,
    old_text: str,
    new: Document,
    new_text: str,
    specs: Sequence[SectionSpec],
    *,
    near_misses_read: bool = False,
) -> str:
    """``new_text`` (haytham's rendering) with every section a person added to ``old_text``
    put back, each after the section of ``specs`` it followed in the old file (after the
    last section when that one is gone, before the first when it came first)."""
    added = own_sections(old, specs, near_misses_read=near_misses_read)
    if not added:
        return new_text
    known = {normalise_label(spec.title) for spec in specs}
    old_offsets = line_offsets(old_text)
    after: dict[str | None, list[str]] = {}
    previous: str | None = None
    for section in old.sections:
        title = normalise_label(section.title)
        if section in added:
            chunk = _chunk(old_text, old_offsets, section).replace("\r\n", "\n").rstrip("\n")
            after.setdefault(previous, []).append(chunk + "\n")
        elif title in known:
            previous = title
    new_offsets = line_offsets(new_text)
    anchors: dict[str | None, int] = {}
    for section in new.sections:
        anchors[normalise_label(section.title)] = _chunk_end(new_offsets, section)
    first = new_offsets[new.sections[0].line - 1] if new.sections else len(new_text)
    last = _chunk_end(new_offsets, new.sections[-1]) if new.sections else len(new_text)
    inserts: dict[int, list[str]] = {}
    for anchor, chunks in after.items():
        at = first if anchor is None else anchors.get(anchor, last)
        inserts.setdefault(at, []).extend(chunks)
    pieces, start = [], 0
    for at in sorted(inserts):
        before = new_text[start:at]
        pieces.append(before if not before or before.endswith("\n\n") else before.rstrip("\n") + "\n\n")
        pieces.append("\n".join(inserts[at]) + ("\n" if at < len(new_text) else ""))
        start = at
    pieces.append(new_text[start:])
    return "".join(pieces)


def _chunk(text: str, offsets: list[int], section: Section) -> str:
    """The source of ``section``: its heading line(s) and its body."""
    return text[offsets[section.line - 1] : _chunk_end(offsets, section)]


def _chunk_end(offsets: list[int], section: Section) -> int:
    start = offsets[section.body_line - 1] if section.body_line <= len(offsets) else offsets[-1]
    return start + len(section.body)


def _ratio(a: str, b: str) -> float:
    import difflib  # only a title no section has is compared: most reads never get here

    return difflib.SequenceMatcher(None, normalise_label(a), normalise_label(b)).ratio()


def _closest(title: str, specs: Sequence[SectionSpec]) -> SectionSpec | None:
    """The spec whose title ``title`` most resembles: alike by ``CLOSE_MATCH``, or one's
    words all among the other's (``Comments`` and ``User Comments``)."""
    words = set(normalise_label(title).split())
    best: tuple[float, SectionSpec] | None = None
    for spec in specs:
        theirs = set(normalise_label(spec.title).split())
        score = _ratio(title, spec.title)
        if words and theirs and (words <= theirs or theirs <= words):
            score = max(score, CLOSE_MATCH)
        if score >= CLOSE_MATCH and (best is None or score > best[0]):
            best = (score, spec)
    return None if best is None else best[1]
