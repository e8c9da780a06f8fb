"""``user_feedback.md``: a person's review of a phase, the one file people edit by hand.

Reading accepts the spellings people use (see formats.md, "Hand edits"); writing is one
canonical form. Comments are written as plain markdown whenever the whole file then reads
back to exactly the same record; otherwise (a ``## `` line, an unclosed fence, any CR,
surrounding blank lines) as a fenced block marked ``verbatim`` whose lines are the exact text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from haytham.errors import InvalidArgumentError
from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.markdown import Section, fence_lines, iter_fences, iter_unfenced_lines
from haytham.format.reader import Reader
from haytham.format.sections import FieldSpec, SectionSpec, labels_of, write_fields
from haytham.records import UserFeedback

TITLE = "User Feedback: "
NO_COMMENTS = "No comments provided"
NO_CHANGES = "No changes requested"
_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)")
_CHANGE_PREFIX = re.compile(r"change\s*\d*\s*:\s*", re.IGNORECASE)


REVIEW_STATUS = SectionSpec(
    "Review Status",
    (
        FieldSpec("reviewed", "Reviewed"),
        FieldSpec("approved", "Approved"),
        FieldSpec("timestamp", "Timestamp"),
    ),
)
USER_COMMENTS = SectionSpec("User Comments", required=False, attr="comments")
REQUESTED_CHANGES = SectionSpec("Requested Changes", required=False, attr="requested_changes")
"""One list item each: ``- Change {n}: {text}``."""
ACTION_TAKEN = SectionSpec(
    "Action Taken", (FieldSpec("action", "Action"), FieldSpec("retry_count", "Retry Count")), required=False
)
SECTIONS = (REVIEW_STATUS, USER_COMMENTS, REQUESTED_CHANGES, ACTION_TAKEN)


class FeedbackFormat(DocumentFormat[UserFeedback]):
    kind = "feedback"
    labels: ClassVar[Mapping[str, str]] = {"phase_name": "Title", **labels_of(SECTIONS)}

    def _collect(self, reader: Reader) -> dict[str, Any]:
        phase_name = reader.expect_title(TITLE)
        review_section = reader.section(REVIEW_STATUS)
        review = reader.fields(review_section)
        take = reader.take
        data: dict[str, Any] = {
            "phase_name": v.read_text(phase_name) or "",
            "reviewed": take(review, "reviewed", v.read_bool, section=review_section),
            "approved": take(review, "approved", v.read_bool, section=review_section),
            "timestamp": take(review, "timestamp", v.read_text, required=False),
            "comments": read_comments(reader.section(USER_COMMENTS)),
            "requested_changes": read_changes(reader.section(REQUESTED_CHANGES)),
        }
        action_section = reader.section(ACTION_TAKEN)
        action = reader.fields(action_section)
        data["action"] = take(action, "action", _read_action, required=False)
        data["retry_count"] = take(action, "retry_count", v.read_int, default=0, required=False)
        if data["action"] is None:
            data["action"] = _implied_action(data["reviewed"], data["approved"])
        return data

    def _build(self, data: dict[str, Any]) -> UserFeedback:
        return UserFeedback(**{**data, "requested_changes": tuple(data["requested_changes"])})

    def render(self, record: UserFeedback) -> str:
        if "\r" not in record.comments:
            plain = self._render(record, record.comments or NO_COMMENTS)
            parsed, _ = self.read(plain)
            if parsed == record:
                return plain
        return self._render(record, v.write_fenced(record.comments))

    def _render(self, record: UserFeedback, comments_block: str) -> str:
        changes = [f"- Change {i}: {v.write_text(c)}" for i, c in enumerate(record.requested_changes, 1)]
        review = {
            "reviewed": v.write_bool(record.reviewed),
            "approved": v.write_bool(record.approved),
            "timestamp": v.write_text(record.timestamp),
        }
        action = {"action": record.action, "retry_count": str(record.retry_count)}
        lines = [
            f"# {TITLE}{v.write_title(record.phase_name)}",
            "",
            *write_fields(REVIEW_STATUS, review),
            "",
            USER_COMMENTS.heading,
            comments_block,
            "",
            REQUESTED_CHANGES.heading,
            *(changes or [f"- {NO_CHANGES}"]),
            "",
            *write_fields(ACTION_TAKEN, action),
        ]
        return "\n".join(lines) + "\n"


def _implied_action(reviewed: object, approved: object) -> str:
    """The action a file without one means: nothing yet, approval, or a retry."""
    if reviewed is not True:
        return "pending"
    return "approved" if approved is True else "retry"


_VALUE = re.compile(
    r"(?P<head>[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]?\][ \t]*)?[^:\r]*:[ \t]*)(?P<value>[^\r]*)"
)
_BOX = re.compile(r"(?P<head>[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[)(?P<value>[ xX]?)(?=\])")


def rewrite_fields(text: str, updates: Mapping[str, bool | int | str]) -> str:
    """``text`` with only the named fields' values replaced, every other byte kept.

    ``updates`` maps record attributes (``action``, ``retry_count``, ``reviewed``,
    ``approved``) to new values. A person's spelling of the label, bullet, checkbox, line
    ending and everything else in the file stay as they were; a missing Action or Retry
    Count is added to ``## Action Taken`` (created at the end if the file has none).
    """
    reader = Reader(text.replace("\r\n", "\n"), None, FEEDBACK.labels)
    FEEDBACK._collect(reader)
    lines = text.split("\n")
    newline = "\r\n" if text.count("\r\n") == text.count("\n") and "\r\n" in text else "\n"
    missing: list[str] = []
    for attr, value in updates.items():
        written = v.write_bool(value) if isinstance(value, bool) else str(value)
        number = reader.lines.get((attr,))
        if number is None:
            missing.append(f"- {FEEDBACK.labels[attr]}: {written}")
            continue
        line = lines[number - 1]
        value_match = _VALUE.match(line)
        if value_match is not None:
            end = "\r" if line.endswith("\r") else ""
            lines[number - 1] = value_match.group("head") + written + end
        else:
            box = _BOX.match(line)
            if box is None or not isinstance(value, bool):
                raise InvalidArgumentError(f"line {number} ({line!r}) cannot hold {value!r}", field=attr)
            lines[number - 1] = box.group("head") + ("x" if value else " ") + line[box.end() :]
    if missing:
        end = "\r" if newline == "\r\n" else ""
        added = [line + end for line in missing]
        section = reader.document.find(ACTION_TAKEN.title)
        if section is None:
            while lines and lines[-1] in ("", "\r"):
                lines.pop()
            lines += [end, ACTION_TAKEN.heading + end, *added, ""]
        else:
            filled = section.body.rstrip("\n").split("\n") if section.body.strip() else []
            position = section.body_line - 1 + len(filled)
            lines[position:position] = added
    return "\n".join(lines)


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


def read_changes(section: Section | None) -> list[str]:
    """Each list item, in any bullet style, with any ``Change N:`` prefix removed."""
    if section is None:
        return []
    changes: list[str] = []
    for _, line in iter_unfenced_lines(section.body, section.body_line):
        item = _ITEM.fullmatch(line.rstrip("\r"))
        if item is None:
            if changes and line.startswith((" ", "\t")) and line.strip():
                changes[-1] = f"{changes[-1]} {line.strip()}"
            continue
        text = item.group(1).strip()
        prefix = _CHANGE_PREFIX.match(text)
        if prefix:
            text = text[prefix.end() :]
        elif text.casefold() == NO_CHANGES.casefold():
            continue
        changes.append(v.read_text(text) or "")
    return changes


FEEDBACK = FeedbackFormat()
