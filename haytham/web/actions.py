"""What the forms of the pages do, each through the manager's public API and under its locks.

A review is written the way ``haytham feedback --approve/--reject`` writes it
(``CheckpointManager.save_user_feedback``, which keeps every section and line a person added
to user_feedback.md by hand), but only over the version of the file the form was rendered
from: when the file changed since (an editor, a ``git pull``), nothing is written and the
caller gets a ``ReviewConflictError`` holding the file as it is now (the page shows it beside what
was submitted), so
nothing is lost to a race. The move itself must be one the lifecycle allows a reviewer
(``lifecycle.check_move``), which the manager checks as for every review it writes
(``MoveRefusedError``, the same refusal as the command line's and the library's).
"""

from __future__ import annotations

from dataclasses import dataclass

from haytham.errors import ReviewConflictError, StaleReviewError
from haytham.format.reviewer import Reviewer
from haytham.store.manager import CheckpointManager
from haytham.web.pages import check_names, feedback_version


@dataclass(frozen=True)
class Review:
    """What a review form submitted."""

    approve: bool
    comments: str
    changes: tuple[str, ...]
    version: str
    """The version of user_feedback.md the form was rendered from (``feedback_version``)."""
    justification: str | None = None
    """Why, as the reviewer wrote it; None when left blank."""
    reviewer: Reviewer | None = None
    """Who reviews: the server's configured identity (``haytham serve --reviewer``)."""

    @property
    def event(self) -> str:
        return "approve" if self.approve else "send back"


def parse_changes(text: str) -> tuple[str, ...]:
    """The requested changes of a form's text area: one per non-blank line, list markers dropped."""
    found = []
    for line in text.splitlines():
        item = line.strip()
        if item[:2] in ("- ", "* "):
            item = item[2:].strip()
        if item:
            found.append(item)
    return tuple(found)


def submit_review(manager: CheckpointManager, project: str, session: str, phase: int, review: Review) -> None:
    """Save ``review`` into the phase's user_feedback.md if the file is still the version the
    form was rendered from (ReviewConflictError otherwise) and the lifecycle allows the move
    (MoveRefusedError otherwise).

    Both are checked by the manager under the session's lock, with the write
    (``save_user_feedback(expected_version=...)``): a change between the check and the save
    cannot slip in. The version is checked first, so a move refused on a page that is out of
    date is a ReviewConflictError, and the person sees the file as it is now and keeps their text."""
    check_names(project, session)
    checkpoint = manager.load_checkpoint(project, session, phase)  # nothing to review before it ran
    try:
        manager.save_user_feedback(
            project,
            session,
            phase,
            reviewed=True,
            approved=review.approve,
            comments=review.comments,
            requested_changes=list(review.changes),
            action="approved" if review.approve else "retry",
            retry_count=checkpoint.retry_count + (0 if review.approve else 1),
            expected_version=review.version,
            reviewer=review.reviewer,
            justification=review.justification,
        )
    except StaleReviewError:
        raise _conflict(manager, project, session, phase) from None


def _conflict(manager: CheckpointManager, project: str, session: str, phase: int) -> ReviewConflictError:
    """The refusal of a review over a file that changed: user_feedback.md as it is now."""
    return ReviewConflictError(
        "user_feedback.md changed since this page was loaded (edited by hand or brought by git); "
        "nothing was saved",
        feedback_version(manager, project, session, phase)[1],
    )


def fork(
    manager: CheckpointManager,
    project: str,
    session: str,
    new_session: str,
    *,
    from_phase: int | None = None,
    from_entry: str | None = None,
) -> None:
    """A new session sharing the phases before ``from_phase`` (or the history entry's phase)."""
    check_names(project, session)
    manager.fork_session(project, session, new_session, from_phase, from_entry=from_entry)


def rerun(manager: CheckpointManager, project: str, session: str, from_phase: int) -> list[int]:
    """Keep ``from_phase`` and every later phase that ran as attempts, so the next resume runs
    them again (``CheckpointManager.archive_from``); return those phases."""
    check_names(project, session)
    return manager.archive_from(project, session, from_phase)
