"""The shape of a document kind, declared once as data: its sections, their labels, their order.

Each kind's module declares a tuple of ``SectionSpec`` in the order the file has them. The
same declaration gives the reader the section titles and whether each is required, the
writer the headings and the ``- Label: value`` lines in order (``write_fields``), and the
schema error messages the label of each record attribute (``labels_of``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from haytham.format.layout import FORMAT_LABEL, FORMAT_VERSION


@dataclass(frozen=True)
class FieldSpec:
    """One ``- Label: value`` line (or table column): the record attribute it holds."""

    attr: str
    label: str


@dataclass(frozen=True)
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
