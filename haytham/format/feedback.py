"""``user_feedback.md``: a person's review of a phase, the one file people edit by hand.

Reading accepts the spellings people use (see formats.md, "Hand edits"), names a typo at its
own line, and warns about a review that contradicts itself; writing is one canonical form.
Comments are written as plain markdown whenever the whole file then reads back to exactly
the same record; otherwise (a ``## `` line, an unclosed fence, any CR, surrounding blank
lines) as a fenced block marked ``verbatim`` whose lines are the exact text.

haytham owns the title, the four sections below and, in them, the declared fields, the
comments and the change items. Everything else in a file (a person's ``## My Notes``, a
paragraph after the changes, an HTML comment in ``## Review Status``) is theirs:
``merge_feedback`` and ``rewrite_fields`` change haytham's parts and keep every other byte.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from haytham.errors import InvalidArgumentError
from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FORMAT_VERSION
from haytham.format.markdown import (
    Section,
    fence_lines,
    iter_fences,
    iter_unfenced_lines,
    line_offsets,
    normalise_label,
    plain_characters,
)
from haytham.format.patterns import lazy
from haytham.format.reader import Field, Reader, decode
from haytham.format.reviewer import parse_reviewer
from haytham.format.sections import (
    VERSION_FIELD,
    FieldSpec,
    SectionSpec,
    labels_of,
    own_sections,
    write_fields,
)
from haytham.format.version import read_version
from haytham.records import APPROVAL_ACTIONS, FEEDBACK_ACTIONS, UserFeedback

TITLE = "User Feedback: "
NO_COMMENTS = "No comments provided"
NO_CHANGES = "No changes requested"
_ITEM = lazy(r" {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)")
_CHANGE_PREFIX = lazy(r"change\s*\d*\s*:\s*", re.IGNORECASE)


REVIEW_STATUS = SectionSpec(
    "Review Status",
    (
        FieldSpec("reviewed", "Reviewed"),
        FieldSpec("approved", "Approved"),
        FieldSpec("timestamp", "Timestamp"),
        FieldSpec("reviewer", "Reviewer"),
        FieldSpec("justification", "Justification"),
        FieldSpec("raised_budget", "Raised Budget"),
        VERSION_FIELD,
    ),
)
"""``Reviewer``, ``Justification`` and ``Raised Budget`` (the budget an approval of a phase held
for its budget allows the run from then on) are optional: written when known, absent in older
files."""
USER_COMMENTS = SectionSpec("User Comments", required=False, attr="comments")
REQUESTED_CHANGES = SectionSpec("Requested Changes", required=False, attr="requested_changes")
"""One list item each: ``- Change {n}: {text}``."""
ACTION_TAKEN = SectionSpec(
    "Action Taken", (FieldSpec("action", "Action"), FieldSpec("retry_count", "Retry Count")), required=False
)
SECTIONS = (REVIEW_STATUS, USER_COMMENTS, REQUESTED_CHANGES, ACTION_TAKEN)


_CANONICAL = lazy(
    rf"# {TITLE}(?P<phase_name>{v.PLAIN_TEXT})\n"
    r"\n"
    r"## Review Status\n"
    r"- Reviewed: (?P<reviewed>true|false)\n"
    r"- Approved: (?P<approved>true|false)\n"
    rf"- Timestamp: (?:-|(?P<timestamp>{v.TIMESTAMP}))\n"
    rf"(?:- Reviewer: (?P<reviewer>{v.PLAIN_TEXT})\n)?"
    rf"(?:- Justification: (?P<justification>{v.PLAIN_TEXT})\n)?"
    rf"(?:- Raised Budget: (?P<raised_budget>{v.PLAIN_TEXT})\n)?"
    rf"- Format: {FORMAT_VERSION}\n"
    r"\n"
    r"## User Comments\n"
    rf"(?P<comments>{v.PLAIN_TEXT}(?:\n{v.PLAIN_TEXT})*)\n"
    r"\n"
    r"## Requested Changes\n"
    rf"(?:- {NO_CHANGES}\n|(?P<changes>(?:- Change [1-9][0-9]*: {v.PLAIN_TEXT}\n)+))"
    r"\n"
    r"## Action Taken\n"
    rf"- Action: (?P<action>{'|'.join(FEEDBACK_ACTIONS)})\n"
    r"- Retry Count: (?P<retry_count>0|[1-9][0-9]{0,11})\n"
)
"""A review exactly as ``render`` writes it with plain comments (lines of plain text, none
blank) and values in their plainest spelling: what ``FeedbackFormat._canonical`` reads."""
_CANONICAL_CHANGE = lazy(r"- Change [1-9][0-9]*: (.*)\n")


class FeedbackFormat(DocumentFormat[UserFeedback]):
    kind = "feedback"
    labels: ClassVar[Mapping[str, str]] = {"phase_name": "Title", **labels_of(SECTIONS)}
    version_section: ClassVar[SectionSpec] = REVIEW_STATUS
    sections: ClassVar[tuple[SectionSpec, ...]] = SECTIONS
    reads_near_misses: ClassVar[bool] = True

    def _reader(self, text: str, path: Path | None, *, fast: bool = True) -> Reader:
        return Reader(text, path, self.labels, fast=fast, known_sections=SECTIONS)

    def _collect(self, reader: Reader) -> dict[str, Any]:
        phase_name = reader.expect_title(TITLE)
        found = locate(reader)
        review = reader.fields(found.review)
        reader.check_labels(REVIEW_STATUS, review)
        take = reader.take
        data: dict[str, Any] = {
            "phase_name": v.read_text(phase_name) or "",
            "reviewed": take(review, "reviewed", v.read_bool, section=found.review),
            "approved": take(review, "approved", v.read_bool, section=found.review),
            "timestamp": take(review, "timestamp", v.read_text, required=False),
            "reviewer": _read_reviewer(reader, review),
            "justification": take(review, "justification", v.read_text, required=False),
            "raised_budget": take(review, "raised_budget", v.read_text, required=False),
            "comments": read_comments(found.comments),
            "requested_changes": read_changes(found.changes),
        }
        action = reader.fields(found.action)
        reader.check_labels(ACTION_TAKEN, action)
        data["action"] = take(action, "action", _read_action, required=False)
        data["retry_count"] = take(action, "retry_count", v.read_int, default=0, required=False)
        data["notes"] = own_text(reader, found)
        _settle(reader, data, review, action)
        _not_yet_a_review(reader, data)
        return data

    def _build(self, data: dict[str, Any]) -> UserFeedback:
        return UserFeedback(**{**data, "requested_changes": tuple(data["requested_changes"])})

    def _canonical(self, text: str) -> UserFeedback | None:
        """The review of a text in exactly ``render``'s shape (``_CANONICAL``), else None;
        also None for a review the general reader would warn about, settle or refuse
        (``_settle``: approved but not reviewed, approved with changes, pending though
        reviewed, an approving action though not approved)."""
        found = _CANONICAL.fullmatch(text)
        if found is None or not plain_characters(text):
            return None
        reviewed, approved = found["reviewed"] == "true", found["approved"] == "true"
        changes = found["changes"]
        action = found["action"]
        if (approved and (not reviewed or changes)) or (action == "pending" and reviewed):
            return None
        if reviewed and not approved and action in APPROVAL_ACTIONS:
            return None
        comments = found["comments"]
        if not reviewed and (changes or comments != NO_COMMENTS):
            return None  # the general reader notes that this does not count yet
        return UserFeedback(
            phase_name=found["phase_name"],
            reviewed=reviewed,
            approved=approved,
            timestamp=found["timestamp"],
            comments="" if comments == NO_COMMENTS else comments,
            requested_changes=() if changes is None else tuple(_CANONICAL_CHANGE.findall(changes)),
            action=action,  # type: ignore[arg-type]  # one of FEEDBACK_ACTIONS
            retry_count=int(found["retry_count"]),
            reviewer=found["reviewer"],
            justification=found["justification"],
            raised_budget=found["raised_budget"],
        )

    _last: tuple[UserFeedback, str] | None = None
    """The last record rendered and its text: a review is rendered for its file and again
    for its history entry, and the plain form is checked by parsing it."""

    def render(self, record: UserFeedback) -> str:
        last = self._last
        if last is not None and last[0] == record:
            return last[1]
        text = self._render_checked(record)
        self._last = (record, text)
        return text

    def _render_checked(self, record: UserFeedback) -> str:
        if "\r" not in record.comments:
            plain = self._render(record, record.comments or NO_COMMENTS)
            parsed, _ = self.read(plain)
            if parsed == record:
                return plain
        return self._render(record, v.write_fenced(record.comments))

    def _render(self, record: UserFeedback, comments_block: str) -> str:
        changes = [f"- Change {i}: {v.write_text(c)}" for i, c in enumerate(record.requested_changes, 1)]
        lines = [
            f"# {TITLE}{v.write_title(record.phase_name)}",
            "",
            *write_fields(REVIEW_STATUS, _written_fields(record, REVIEW_STATUS)),
            "",
            USER_COMMENTS.heading,
            comments_block,
            "",
            REQUESTED_CHANGES.heading,
            *(changes or [f"- {NO_CHANGES}"]),
            "",
            *write_fields(ACTION_TAKEN, _written_fields(record, ACTION_TAKEN)),
        ]
        return "\n".join(lines) + "\n"


def _written_fields(record: UserFeedback, section: SectionSpec) -> dict[str, str | None]:
    """The canonical spelling of each of ``section``'s field values."""
    written = {
        "reviewed": v.write_bool(record.reviewed),
        "approved": v.write_bool(record.approved),
        "timestamp": v.write_text(record.timestamp),
        "reviewer": None if record.reviewer is None else v.write_text(record.reviewer),
        "justification": None if record.justification is None else v.write_text(record.justification),
        "raised_budget": None if record.raised_budget is None else v.write_text(record.raised_budget),
        "action": record.action,
        "retry_count": str(record.retry_count),
    }
    return {field.attr: written.get(field.attr) for field in section.fields}


def _read_reviewer(reader: Reader, review: Mapping[str, Field]) -> str | None:
    """The ``Reviewer`` field as written, None when absent or ``-``; an error at its line when
    it names nobody (``parse_reviewer``), so a typo is never recorded as a person."""
    field = review.get(normalise_label(REVIEW_STATUS.label("reviewer")))
    text = reader.take(review, "reviewer", v.read_text, required=False)
    if text is None or field is None:
        return None
    try:
        parse_reviewer(text)
    except InvalidArgumentError as error:
        reader.error(field.line, field.label, str(error))
    return str(text)


def settle(record: UserFeedback) -> UserFeedback:
    """``record`` as a file with its values reads: an approval implies a review, and a
    reviewed file's ``pending`` action is the one its review implies (see ``_settle``)."""
    reviewed = record.reviewed or record.approved
    action = record.action
    if action == "pending" and reviewed:
        action = "approved" if record.approved else "retry"
    if (reviewed, action) == (record.reviewed, record.action):
        return record
    return dataclasses.replace(record, reviewed=reviewed, action=action)


def _settle(
    reader: Reader, data: dict[str, Any], review: Mapping[str, Field], action: Mapping[str, Field]
) -> None:
    """Apply the rules for a review that contradicts itself, warning at the line it is on,
    or name the contradiction no rule can settle as an error at its line.

    - Approved but not reviewed: an explicit approval implies a review (reviewed is read
      true). A person who sets ``Approved: true`` has reviewed the phase.
    - Approved with requested changes: approval wins; the changes stay in the file but no
      run acts on them.
    - No action, or ``pending`` in a reviewed file: the action is the one the review implies
      (``approved`` or ``retry``); a person edits the review, haytham records the action.
    - Not approved, with an approving action (``records.APPROVAL_ACTIONS``) in a reviewed
      file: an error at the Action line. ``Approved:`` is the reviewer's decision, so it is
      never read as an approval; nor as a send-back, which would run the phase again on a
      guess (a reviewer who turned an approval into a rejection and forgot the action, or
      one who meant to approve): a person settles it.
    """
    reviewed, approved = data["reviewed"], data["approved"]
    approved_line = reader.lines.get(("approved",))
    if approved is True and reviewed is False and approved_line is not None:
        reviewed_line = reader.lines.get(("reviewed",), approved_line)
        reader.warn(
            approved_line,
            _label(review, "approved"),
            f"is true but Reviewed (line {reviewed_line}) is false; read as reviewed, because an "
            "approval implies a review",
        )
        data["reviewed"] = reviewed = True
    changes = data["requested_changes"]
    if approved is True and changes and approved_line is not None:
        count = f"{len(changes)} requested change{'s' * (len(changes) != 1)}"
        verb = "are" if len(changes) != 1 else "is"
        reader.warn(
            approved_line,
            _label(review, "approved"),
            f"is true, so the {count} under '{REQUESTED_CHANGES.heading}' {verb} kept but not acted on; "
            "set Approved: false to have the phase run again with them",
        )
    if data["action"] is None or (data["action"] == "pending" and reviewed is True):
        data["action"] = _implied_action(reviewed, approved)
    if reviewed is True and approved is False and data["action"] in APPROVAL_ACTIONS:
        where = f" (line {approved_line})" if approved_line is not None else ""
        label = _label(review, "approved")
        reader.error(
            reader.lines.get(("action",)),
            _label(action, "action"),
            f"{data['action']!r} contradicts {label}: false{where}, and {label} is the reviewer's "
            f"decision: set {label}: true to approve the phase, or Action: retry to send it back",
        )


NOT_A_REVIEW_YET = (
    "is false, so what this review says ({what}) does not count yet: no run acts on it; set "
    "Reviewed: true (and Approved: true or false) when it is your review"
)
"""The note on a review file with comments or changes that still says ``Reviewed: false``."""


def _not_yet_a_review(reader: Reader, data: Mapping[str, Any]) -> None:
    """Warn, at the Reviewed line, that comments or changes written while ``Reviewed: false``
    do not count: a reviewer who wrote them and forgot the flag learns it at once."""
    if data["reviewed"] is not False:
        return
    what = [
        name
        for name, present in (
            ("comments", data["comments"]),
            ("requested changes", data["requested_changes"]),
            ("your own text", data["notes"]),
        )
        if present
    ]
    line = reader.lines.get(("reviewed",))
    if what and line is not None:
        reader.warn(line, FEEDBACK.labels["reviewed"], NOT_A_REVIEW_YET.format(what=", ".join(what)))


def own_text(reader: Reader, found: Located) -> str:
    """The reviewer's own text (``UserFeedback.notes``): text in ``## Review Status`` that is
    no field, no list item and no HTML comment (comments left there after their heading was
    deleted), then each section that is not haytham's as ``### Title`` and its text, in the
    order of the file. Near misses of haytham's sections are read as those, not here."""
    parts = []
    if found.review is not None:
        stray = _stray_text(found.review)
        if stray:
            parts.append(stray)
    for section in own_sections(reader.document, SECTIONS, near_misses_read=True):
        if found.comments is not None and found.comments.line <= section.line < _end_line(
            reader, found.comments
        ):
            continue  # inside the comments (the first implementation's unescaped headings)
        body = section.body.strip("\n").rstrip()
        parts.append(f"### {section.source_title}" + (f"\n{body}" if body.strip() else ""))
    return "\n\n".join(parts)


def _end_line(reader: Reader, section: Section) -> int:
    """The line just past ``section``'s body."""
    return section.body_line + section.body.count("\n") + 1


def _stray_text(section: Section) -> str:
    """The lines of ``section`` that are neither blank, a list item (a field), nor an HTML comment."""
    kept: list[str] = []
    in_comment = False
    for _, raw in iter_unfenced_lines(section.body, section.body_line):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if _ITEM.fullmatch(line) or (kept == [] and not stripped):
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def _label(fields: Mapping[str, Field], attr: str) -> str:
    """The label of ``attr``'s field as the person spelt it, else as declared."""
    declared = FEEDBACK.labels[attr]
    found = fields.get(normalise_label(declared))
    return found.label if found is not None else declared


def _implied_action(reviewed: object, approved: object) -> str:
    """The action a file without one means: nothing yet, approval, or a retry."""
    if reviewed is not True:
        return "pending"
    return "approved" if approved is True else "retry"


class Located(NamedTuple):
    """Where haytham's sections of a feedback file are (None for one it does not have)."""

    review: Section | None
    comments: Section | None
    """Extended over any heading inside the comments (see ``locate``)."""
    changes: Section | None
    action: Section | None


def locate(reader: Reader) -> Located:
    """haytham's sections in ``reader``'s document.

    ``## Review Status`` and ``## User Comments`` are the first with their title; the first
    implementation wrote comments unescaped, so its comments may hold a ``## Action Taken``
    line of their own: ``## Requested Changes`` and ``## Action Taken`` are the last with
    their title, and the comments run over any heading that is a haytham title found again
    later. A person's own section (``## My Notes``) ends the comments.
    """
    review = reader.section(REVIEW_STATUS)
    comments = reader.section(USER_COMMENTS)
    changes = _last(reader, REQUESTED_CHANGES)
    action = _last(reader, ACTION_TAKEN)
    if comments is not None:
        comments = _extended(reader, comments)
    return Located(review, comments, changes, action)


_OWNED_TITLES = frozenset(normalise_label(spec.title) for spec in SECTIONS)


def _last(reader: Reader, spec: SectionSpec) -> Section | None:
    title = normalise_label(spec.title)
    matches = [s for s in reader.document.sections if normalise_label(s.title) == title]
    return matches[-1] if matches else reader.section(spec)


def _extended(reader: Reader, comments: Section) -> Section:
    sections = reader.document.sections
    index = sections.index(comments) + 1
    while index < len(sections):
        title = normalise_label(sections[index].title)
        if title not in _OWNED_TITLES or all(
            normalise_label(s.title) != title for s in sections[index + 1 :]
        ):
            break
        index += 1
    if index == sections.index(comments) + 1:
        return comments
    text = reader.text
    offsets = line_offsets(text)
    end = offsets[sections[index].line - 1] if index < len(sections) else len(text)
    body = text[offsets[comments.body_line - 1] : end] if comments.body_line <= len(offsets) else ""
    return dataclasses.replace(comments, body=body)


_VALUE = lazy(
    r"(?P<head>[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]?\][ \t]*)?[^:\r]*:(?:\*\*|__)?[ \t]*)"
    r"(?P<value>[^\r]*)"
)
_BOX = lazy(r"(?P<head>[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[)(?P<value>[ xX]?)(?=\])")


class _Lines:
    """A file's lines being edited in place: replaced, removed, or with lines put before or
    after them; every line not touched is kept byte for byte (its CR included)."""

    def __init__(self, text: str) -> None:
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        self.text = text[len(self.bom) :]
        self.lines = self.text.split("\n")
        crlf = self.text.count("\r\n")
        self.end = "\r" if crlf and crlf == self.text.count("\n") else ""
        """What each new line ends with before its LF: a CR in a file of CRLF lines."""
        self.replaced: dict[int, str] = {}
        self.removed: set[int] = set()
        self.before: dict[int, list[str]] = {}
        self.after: dict[int, list[str]] = {}
        self.appended: list[str] = []

    def reader(self) -> Reader:
        return FEEDBACK._reader(self.text.replace("\r\n", "\n"), None)

    def set_value(self, number: int, value: bool | int | str, written: str, attr: str) -> None:
        """Put ``written`` as the value of the ``- Label: value`` line ``number``, keeping the
        person's label, bullet and checkbox."""
        line = self.lines[number - 1]
        value_match = _VALUE.match(line)
        if value_match is not None:
            end = "\r" if line.endswith("\r") else ""
            self.replaced[number - 1] = value_match.group("head") + written + end
            return
        box = _BOX.match(line)
        if box is None or not isinstance(value, bool):
            raise InvalidArgumentError(f"line {number} ({line!r}) cannot hold {value!r}", field=attr)
        self.replaced[number - 1] = box.group("head") + ("x" if value else " ") + line[box.end() :]

    def new(self, lines: list[str]) -> list[str]:
        return [line + self.end for line in lines]

    def section_end(self, section: Section) -> int:
        """The 0-based index just past ``section``'s last non-blank line."""
        body = section.body.split("\n")
        last = section.body_line - 1
        for index, line in enumerate(body):
            if line.strip():
                last = section.body_line + index
        return last

    def result(self) -> str:
        out: list[str] = []
        for index, line in enumerate(self.lines):
            out += self.before.get(index, [])
            if index not in self.removed:
                out.append(self.replaced.get(index, line))
            out += self.after.get(index, [])
        out += self.before.get(len(self.lines), [])
        if self.appended:
            while out and out[-1] in ("", "\r"):
                out.pop()
            out += [self.end, *self.appended, ""]
        return self.bom + "\n".join(out)


def _put_fields(
    edit: _Lines, reader: Reader, found: Located, updates: Mapping[str, bool | int | str]
) -> None:
    """Set each field of ``updates`` in place; one a file lacks goes after its section's
    last field (a section a file lacks is added at the end)."""
    missing: dict[SectionSpec, list[str]] = {}
    for attr, value in updates.items():
        written = v.write_bool(value) if isinstance(value, bool) else str(value)
        number = reader.lines.get((attr,))
        if number is not None:
            edit.set_value(number, value, written, attr)
            continue
        spec = REVIEW_STATUS if any(f.attr == attr for f in REVIEW_STATUS.fields) else ACTION_TAKEN
        missing.setdefault(spec, []).append(f"- {spec.label(attr)}: {written}")
    for spec, added in missing.items():
        section = found.review if spec is REVIEW_STATUS else found.action
        if section is None:
            edit.appended += edit.new([spec.heading, *added])
            continue
        version_line = reader.lines.get((VERSION_FIELD.attr,)) if spec is REVIEW_STATUS else None
        if version_line is not None:  # before ``- Format:``, where ``render`` writes them
            edit.before.setdefault(version_line - 1, []).extend(edit.new(added))
            continue
        numbers = [f.line for f in reader.fields(section).values()]
        at = max(numbers) - 1 if numbers else section.line - 1
        edit.after.setdefault(at, []).extend(edit.new(added))


def rewrite_fields(text: str, updates: Mapping[str, bool | int | str]) -> str:
    """``text`` with only the named fields' values replaced, every other byte kept.

    ``updates`` maps record attributes (``action``, ``retry_count``, ``reviewed``,
    ``approved``, ``timestamp``) to new values. A person's spelling of the label (bold
    included), bullet, checkbox, line ending and everything else in the file stay as they
    were; a missing field is added after the last field of its section (the section is
    added at the end if the file has none).
    """
    edit = _Lines(text)
    reader = edit.reader()
    found = locate(reader)
    FEEDBACK._collect(reader)
    read_version(reader, REVIEW_STATUS)
    _put_fields(edit, reader, found, updates)
    return edit.result()


def merge_feedback(text: str, record: UserFeedback) -> str:
    """The file ``text`` with haytham's parts saying ``record``, every other byte kept.

    The fields are set in place (a person's spelling of each label kept), the title, the
    comments and the change items are replaced by their canonical form, and haytham's
    sections the file lacks are added where ``render`` puts them. Lines that are not
    haytham's (a person's sections, paragraphs and HTML comments, even inside haytham's
    sections) stay where they were. The caller checks that the result reads as ``record``.
    """
    canonical = FEEDBACK.render(record)
    model_lines = canonical.split("\n")
    model = locate(Reader(canonical, None, FEEDBACK.labels, known_sections=SECTIONS))
    assert model.comments is not None  # render always writes both sections
    assert model.changes is not None
    comment_block = model_lines[model.comments.body_line - 1 : _Lines(canonical).section_end(model.comments)]
    items = [line for line in model.changes.body.split("\n") if line.strip()]

    edit = _Lines(text)
    reader = edit.reader()
    found = locate(reader)
    FEEDBACK._collect(reader)
    read_version(reader, REVIEW_STATUS)
    title = reader.document.title
    if title is not None and title.level == 1:
        end = "\r" if edit.lines[title.line - 1].endswith("\r") else ""
        edit.replaced[title.line - 1] = model_lines[0] + end
    else:
        edit.before.setdefault(0, []).extend(edit.new([model_lines[0], ""]))
    fields: dict[str, bool | int | str] = {
        "reviewed": record.reviewed,
        "approved": record.approved,
        "timestamp": v.write_text(record.timestamp),
    }
    for attr in (
        "reviewer",
        "justification",
        "raised_budget",
    ):  # optional: added when known, cleared with ``-``
        value = getattr(record, attr)
        if value is not None or (attr,) in reader.lines:
            fields[attr] = v.write_text(value)
    _put_fields(
        edit,
        reader,
        found,
        {
            **fields,
            VERSION_FIELD.attr: FORMAT_VERSION,
            "action": record.action,
            "retry_count": record.retry_count,
        },
    )
    anchor = found.review.line - 1 if found.review is not None else (title.line - 1 if title else 0)
    if found.comments is not None:
        first, past = found.comments.body_line - 1, edit.section_end(found.comments)
        edit.removed.update(range(first, past))
        edit.before.setdefault(first, []).extend(edit.new(comment_block))
    else:
        at = edit.section_end(found.review) - 1 if found.review is not None else anchor
        edit.after.setdefault(at, []).extend(edit.new(["", USER_COMMENTS.heading, *comment_block]))
    if found.changes is not None:
        owned = [n - 1 for item in change_items(found.changes) for n in range(item.first, item.last + 1)]
        edit.removed.update(owned)
        at = min(owned) if owned else found.changes.body_line - 1
        edit.before.setdefault(at, []).extend(edit.new(items))
    else:
        if found.action is not None:
            block = edit.new([REQUESTED_CHANGES.heading, *items, ""])
            edit.before.setdefault(found.action.line - 1, []).extend(block)
        else:
            after = found.comments or found.review
            at = edit.section_end(after) - 1 if after is not None else anchor
            edit.after.setdefault(at, []).extend(edit.new(["", REQUESTED_CHANGES.heading, *items]))
    return edit.result()


def rewrite_feedback(old: str, record: UserFeedback) -> str | None:
    """The text to write over the file ``old`` so that it says ``record`` and keeps what a
    person added to it; None when the canonical text (``render``) is all there is to write.

    ``merge_feedback`` comes first; if its text does not read back as exactly ``record``,
    the canonical text followed by the person's own sections of ``old`` is tried; if that
    fails too (or ``old`` holds nothing of a person's), None.
    """
    canonical = FEEDBACK.render(record)
    for in_place in (True, False):
        try:
            text = merge_feedback(old, record) if in_place else canonical + foreign_sections(old)
            data = text.encode("utf-8")
        except (InvalidArgumentError, UnicodeEncodeError):
            continue
        if text == canonical:
            return None
        if FEEDBACK.read(decode(data, None))[0] == record:
            return text
    return None


def foreign_sections(text: str) -> str:
    """Every section of ``text`` that is not haytham's, exactly as written, each after a
    blank line; empty when there is none."""
    edit = _Lines(text)
    sections = edit.reader().document.sections
    chunks: list[str] = []
    for index, section in enumerate(sections):
        if normalise_label(section.title) in _OWNED_TITLES:
            continue
        end = sections[index + 1].line - 1 if index + 1 < len(sections) else len(edit.lines)
        chunk = edit.lines[section.line - 1 : end]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        chunks.append("\n" + "\n".join(chunk) + "\n")
    return "".join(chunks)


def _read_action(raw: str) -> str | None:
    word = raw.strip().casefold()
    return None if word in ("", v.UNKNOWN) else word


def read_comments(section: Section | None) -> str:
    """The comments: a ``verbatim`` fenced block exactly, or the trimmed plain text."""
    if section is None:
        return ""
    body = section.body
    fence = next(iter_fences(body), None)
    if fence is not None and not body[: fence.start].strip() and fence.info.split()[:1] == [v.FENCE_INFO]:
        return v.read_fenced(fence.info, fence_lines(body, fence))
    lines = body.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines)
    return "" if text.strip() == NO_COMMENTS else text


class ChangeItem(NamedTuple):
    """One requested change: its first and last line, and its text (None for the
    ``- No changes requested`` item)."""

    first: int
    last: int
    text: str | None


def change_items(section: Section) -> list[ChangeItem]:
    """The section's list items, in any bullet style, with any ``Change N:`` prefix removed.

    A line right under an item continues it: an indented one after a space (a wrapped
    line), an unindented one after a line break (the first implementation wrote a change's
    newlines as they were). An unindented line after a blank line, or an HTML comment, is
    not an item's: it is the person's own text.
    """
    items: list[ChangeItem] = []
    continuing = False
    for number, raw in iter_unfenced_lines(section.body, section.body_line):
        line = raw.rstrip("\r")
        item = _ITEM.fullmatch(line)
        if item is not None:
            items.append(ChangeItem(number, number, _change_text(item.group(1).strip())))
            continuing = True
            continue
        if not line.strip():
            continuing = False
            continue
        indented = line.startswith((" ", "\t"))
        previous = items[-1] if items else None
        if (
            previous is not None
            and previous.text is not None
            and (indented or continuing)
            and not line.lstrip().startswith("<!--")
        ):
            joined = f"{previous.text}{' ' if indented else chr(10)}{line.strip()}"
            items[-1] = ChangeItem(previous.first, number, joined)
            continue
        continuing = False
    return items


def _change_text(text: str) -> str | None:
    prefix = _CHANGE_PREFIX.match(text)
    if prefix:
        return v.read_text(text[prefix.end() :]) or ""
    if text.casefold() == NO_CHANGES.casefold():
        return None
    return v.read_text(text) or ""


def read_changes(section: Section | None) -> list[str]:
    """The requested changes' texts (see ``change_items``)."""
    if section is None:
        return []
    return [item.text for item in change_items(section) if item.text is not None]


FEEDBACK = FeedbackFormat()
