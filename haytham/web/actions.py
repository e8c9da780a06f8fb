"""What the forms of the pages do, each through the manager's public API and under its locks.

A review is written the way ``haytham feedback --approve/--reject`` writes it
(``CheckpointManager.save_user_feedback``, which keeps every section and line a person added
to user_feedback.md by hand), but only over what the form was rendered
from (``store.shown.Shown``: the phase's attempt, its outputs' digest and the version of the
file): when any changed since (a new attempt ran, an output was corrected, the file was
edited or brought by ``git pull``), nothing is written and the caller gets a
``ReviewConflictError`` saying what changed and holding the file as it is now (the page
shows it beside what was submitted), so nothing is lost to a race. The move itself must be
one the lifecycle allows a reviewer (``lifecycle.check_move``), which the manager checks as
for every review it writes (``MoveRefusedError``, the same refusal as the command line's
and the library's). "Run again" is refused while a runner holds the session's lease
(``SessionBusyError``, checked by ``archive_from`` as for ``haytham rerun``).
"""

from __future__ import annotations

from dataclasses import dataclass

from haytham.errors import ReviewConflictError, StaleReviewError
from haytham.format.reviewer import Reviewer
from haytham.store.advice import refuse_outside
from haytham.store.manager import CheckpointManager
from haytham.store.shown import Shown
from haytham.web.pages import check_names, feedback_version


@dataclass(frozen=True)
class Review:
    """What a review form submitted."""

    approve: bool
    comments: str
    changes: tuple[str, ...]
    version: str
    """What the form was rendered from: ``Shown.token`` (the phase's attempt, the digest of
    its outputs and the version of user_feedback.md, ``pages.phase_page``)."""
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
    shown = Shown.parse(review.version)
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
            expected_version=shown,
            reviewer=review.reviewer,
            justification=review.justification,
        )
    except StaleReviewError as error:
        raise _conflict(manager, project, session, phase, error.changed) from None


def submit_correction(
    manager: CheckpointManager,
    project: str,
    session: str,
    phase: int,
    agent: str,
    content: str,
    *,
    approve: bool,
    version: str,
    reviewer: Reviewer | None = None,
) -> bool:
    """Save a reviewer's correction of ``agent``'s output (``correct_output``: the original
    kept in the history, the review's action ``modified``, approved with ``approve``) if the
    phase is still what the page showed (``Shown``: its attempt, outputs and review file;
    ReviewConflictError naming what changed otherwise); return whether anything changed.
    The browser's CRLF line breaks become LF unless the output had CRLF."""
    check_names(project, session)
    original = manager.load_agent_output(project, session, phase, agent).content
    if "\r\n" not in original:
        content = content.replace("\r\n", "\n")
    try:
        written = manager.correct_output(
            project,
            session,
            phase,
            agent,
            content,
            approve=approve,
            expected_version=Shown.parse(version),
            reviewer=reviewer,
        )
    except StaleReviewError as error:
        raise _conflict(manager, project, session, phase, error.changed) from None
    return written is not None


def _conflict(
    manager: CheckpointManager, project: str, session: str, phase: int, changed: tuple[str, ...]
) -> ReviewConflictError:
    """The refusal of a review of what is no longer there: what changed since the page was
    loaded, and user_feedback.md as it is now."""
    said = "; ".join(changed) or "user_feedback.md changed (edited by hand or brought by git)"
    return ReviewConflictError(
        f"since this page was loaded, {said}; nothing was saved",
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
    refuse_outside(manager, project, session, "fork")
    manager.fork_session(project, session, new_session, from_phase, from_entry=from_entry)


def rerun(manager: CheckpointManager, project: str, session: str, from_phase: int) -> list[int]:
    """Keep ``from_phase`` and every later phase that ran as attempts, so the next resume runs
    them again (``CheckpointManager.archive_from``); return those phases."""
    check_names(project, session)
    refuse_outside(manager, project, session, "re-run")
    return manager.archive_from(project, session, from_phase)
