"""When, and by whom, a review made by hand happened.

A person reviews by editing ``user_feedback.md``; nothing rewrites its Timestamp, which
stays the blank template's. The rule (docs/formats.md, "Hand edits"): a feedback file that
says reviewed, whose Timestamp is absent or not later than the phase checkpoint's
Completed, was reviewed by hand (``is_hand_review``). Its review time is, in this order:
the author time of the commit that last changed the file, when the tree is a git
repository and the file is committed unchanged since (a clone resets every file's
modification time, so the commit is the only record of when the review was made); else the
file's modification time, in UTC. Its reviewer, when the file names none, is that commit's
author. Applied on read; the file is never written for it.

The store does not talk to git (docs/architecture.md): whoever does (``haytham.git.reviews``)
is passed in as a ``CommitLookup``, asked once for every file of a run, and its answers are
applied here (``from_commit``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from haytham.frozen import frozen
from haytham.records import UserFeedback
from haytham.store.clock import format_timestamp, parse_timestamp


@frozen
class LastCommit:
    """The commit that last changed a file, as far as a review needs it."""

    time: str
    """Its author time, ISO 8601 UTC (``clock.format_timestamp``)."""
    author: str
    """Its author, ``Name <email>``."""


class CommitLookup(Protocol):
    """What asks git for the last commit of many files at once (``haytham.git.reviews``)."""

    def __call__(self, paths: Sequence[Path]) -> Mapping[Path, LastCommit]:
        """The last commit of each of ``paths`` committed unchanged since; the others are left out."""
        ...


def is_hand_review(feedback: UserFeedback, completed: str | None) -> bool:
    """Whether ``feedback`` is a review whose time the file does not say (made by hand)."""
    return feedback.reviewed and _before_review(feedback.timestamp, completed)


def hand_review_time(feedback: UserFeedback, path: Path, completed: str | None) -> UserFeedback:
    """``feedback`` with the file's modification time as its timestamp when the rule says
    the review was made by hand; ``feedback`` itself otherwise."""
    if not is_hand_review(feedback, completed):
        return feedback
    try:
        saved = datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc)
    except OSError:
        return feedback
    return dataclasses.replace(feedback, timestamp=format_timestamp(saved))


def from_commit(feedback: UserFeedback, commit: LastCommit) -> UserFeedback:
    """A hand review's ``feedback`` with its time (and, when it names nobody, its reviewer)
    from the commit that last changed its file."""
    return dataclasses.replace(feedback, timestamp=commit.time, reviewer=feedback.reviewer or commit.author)


def _before_review(timestamp: str | None, completed: str | None) -> bool:
    """Whether ``timestamp`` cannot be a review's: absent, or not after the phase completed."""
    if timestamp is None:
        return True
    if completed is None:
        return False
    try:
        return parse_timestamp(timestamp) <= parse_timestamp(completed)
    except ValueError:
        return False
