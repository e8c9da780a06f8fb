"""Who a reviewer is, as haytham writes and compares it: ``Name <email>``, a name or an address.

One home for the shape of a reviewer's identity, used wherever one is recorded (the
``Reviewer`` of user_feedback.md), configured (``review.reviewer`` of haytham.yaml,
``--reviewer``, ``HAYTHAM_REVIEWER``, git's author) or assigned (a phase's ``reviewers:`` in
the workflow). An assignment entry names a reviewer by name or by address, like a CODEOWNERS
line: ``alice@example.com`` and ``Alice Smith`` both match ``Alice Smith <alice@example.com>``;
names and addresses compare without regard to case or surrounding space.
"""

from __future__ import annotations

from collections.abc import Iterable

from haytham.errors import InvalidArgumentError
from haytham.format.patterns import lazy
from haytham.frozen import frozen

_IDENTITY = lazy(r"\s*(?P<name>[^<>]*?)\s*(?:<(?P<email>[^<>\s]+)>)?\s*")
MAX_REVIEWER_CHARS = 200
"""The longest identity kept: longer is a mistake, not a person."""


@frozen
class Reviewer:
    """A person who reviews: a name, an e-mail address, or both."""

    name: str
    email: str | None = None

    def __str__(self) -> str:
        if self.email is None:
            return self.name
        return f"{self.name} <{self.email}>" if self.name else f"<{self.email}>"

    def matches(self, entry: str) -> bool:
        """Whether an assignment entry (a name, an address, or ``Name <email>``) names this reviewer."""
        wanted = parse_reviewer(entry)
        if wanted.email is not None and self.email is not None:
            return wanted.email.casefold() == self.email.casefold()
        said = wanted.email if wanted.email is not None else wanted.name
        return said.casefold() in {part.casefold() for part in (self.name, self.email) if part}


def parse_reviewer(text: str) -> Reviewer:
    """``Name <email>``, ``<email>``, ``email`` (a word with an ``@``) or ``Name``, as a Reviewer.

    InvalidArgumentError for what names nobody: blank, more than one line, stray angle
    brackets, longer than ``MAX_REVIEWER_CHARS``."""
    if "\n" in text or "\r" in text or len(text) > MAX_REVIEWER_CHARS:
        raise InvalidArgumentError(
            f"a reviewer is one line of at most {MAX_REVIEWER_CHARS} characters, not {text[:40]!r}…",
            field="reviewer",
        )
    found = _IDENTITY.fullmatch(text)
    if found is None or not (found["name"] or found["email"]):
        raise InvalidArgumentError(
            f"{text!r} names no reviewer: write a name, an e-mail address or 'Name <email>'", field="reviewer"
        )
    name, email = found["name"], found["email"]
    if email is None and "@" in name and " " not in name:
        return Reviewer("", name)
    return Reviewer(name, email)


def is_assigned(reviewer: Reviewer, entries: Iterable[str]) -> bool:
    """Whether ``reviewer`` is one of ``entries`` (a phase's ``reviewers:``)."""
    return any(reviewer.matches(entry) for entry in entries)
