"""When a review made by hand happened: the time the person saved the file.

A person reviews by editing ``user_feedback.md``; nothing rewrites its Timestamp, which
stays the blank template's. The rule (docs/formats.md, "Hand edits"): a feedback file that
says reviewed, whose Timestamp is absent or not later than the phase checkpoint's
Completed, was reviewed when the file was last saved, so its review time is the file's
modification time, in UTC. Applied on read; the file is never written for it.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import datetime, timezone
from pathlib import Path

from haytham.records import UserFeedback
from haytham.store.clock import format_timestamp, parse_timestamp


def hand_review_time(feedback: UserFeedback, path: Path, completed: str | None) -> UserFeedback:
    """``feedback`` with the file's modification time as its timestamp when the rule says
    the review was made by hand; ``feedback`` itself otherwise."""
    if not feedback.reviewed or not _before_review(feedback.timestamp, completed):
        return feedback
    try:
        saved = datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc)
    except OSError:
        return feedback
    return dataclasses.replace(feedback, timestamp=format_timestamp(saved))


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
