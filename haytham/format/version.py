"""The format version of a file: which version wrote it, and a refusal of a newer one.

Every markdown kind ends its metadata section with ``- Format: N`` (``sections.VERSION_FIELD``,
written by ``write_fields``); a file without that line is version 0, the first
implementation's. A file of a version newer than ``FORMAT_VERSION`` was written by a newer
haytham, whose meaning this one cannot know: reading it is an error at the version line.
"""

from __future__ import annotations

from haytham.format.layout import FORMAT_LABEL, FORMAT_VERSION
from haytham.format.markdown import Section, iter_unfenced_lines, normalise_label
from haytham.format.reader import Field, Reader, split_label
from haytham.format.sections import VERSION_FIELD, SectionSpec

LEGACY_VERSION = 0
"""The version of a file without a version line: the first implementation's."""
_KEY = normalise_label(FORMAT_LABEL)
_BULLETS = ("- ", "* ", "+ ")


def version_field(section: Section | None) -> Field | None:
    """The ``- Format: N`` line of ``section``, if it has one."""
    if section is None:
        return None
    for number, line in iter_unfenced_lines(section.body, section.body_line):
        stripped = line.strip()
        if not stripped.startswith(_BULLETS):
            continue
        split = split_label(stripped[2:].strip())
        if split is not None and normalise_label(split[0]) == _KEY:
            return Field(split[0].strip(), split[1].strip(), number)
    return None


def read_version(reader: Reader, spec: SectionSpec) -> int:
    """The version of the document ``reader`` holds, whose version line is in ``spec``.

    An unreadable or newer version is an error at its line (and the result is that number,
    or the current version when it is not one). The line is remembered as the value's line,
    so a rewrite in place finds it.
    """
    field = version_field(reader.document.find(spec.title))
    if field is None:
        return LEGACY_VERSION
    reader.lines[(VERSION_FIELD.attr,)] = field.line
    if not (field.value.isascii() and field.value.isdigit()) or len(field.value) > 6:
        reader.error(field.line, FORMAT_LABEL, f"{field.value!r} is not a format version (a whole number)")
        return FORMAT_VERSION
    version = int(field.value)
    if version > FORMAT_VERSION:
        reader.error(
            field.line,
            FORMAT_LABEL,
            f"is {version}: written by a newer haytham (this one reads formats up to {FORMAT_VERSION}); "
            "upgrade haytham to read it",
        )
    return version
