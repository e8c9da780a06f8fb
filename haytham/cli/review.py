"""The review commands: ``feedback`` (one phase) and ``review`` (every phase that awaits it).

A person's review is what lets a session past a review gate. Both commands open the
phase's user_feedback.md in $VISUAL or $EDITOR the way ``git commit`` opens its message:
the person edits a working copy; a copy that reads right is saved over the file; after a
mistake the editor opens again with the mistake in a comment at the top
(``<!-- haytham: ... -->``, never saved); closing the editor without changing anything
quits and leaves the file exactly as it was (same bytes, same time).

Which phases await review is decided in one place, ``awaiting_review``; ``review`` walks
them through ``ReviewHooks``, where a later step (pulling and pushing with git before and
after a walk) plugs in without touching the walk.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import click

from haytham.cli.common import base_dir_option, command, notified, reviewer_option, suggest, when
from haytham.cli.git import Commits, commit_options, describe_sync
from haytham.cli.present import describe_feedback, next_step, tries_lines
from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    Issue,
    MoveRefusedError,
    ProjectNotFoundError,
    StaleReviewError,
)
from haytham.format import FEEDBACK
from haytham.format.agent_output import MAX_CORRECTED_BYTES
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.reader import decode
from haytham.format.reviewer import Reviewer
from haytham.git.sync import sync
from haytham.records import UserFeedback
from haytham.store import fs, lifecycle
from haytham.store.clock import sort_time
from haytham.store.manager import CheckpointManager
from haytham.store.scan import list_sessions

BANNER_START = "<!-- haytham:"
BANNER_END = "-->"

# ------------------------------------------------------------------ the editor loop


@dataclasses.dataclass(frozen=True)
class Edited:
    """How an editing of a feedback file ended."""

    outcome: Literal["saved", "unchanged", "abandoned"]
    """``saved``: the file now holds the person's valid text; ``unchanged``: the person closed
    the editor without a change, the file is as it was; ``abandoned``: the person quit after
    a mistake, the file is as it was and their text is kept in ``kept``."""
    path: Path
    feedback: UserFeedback | None
    """What the file says now; None when it cannot be read (it had a mistake before)."""
    issues: tuple[Issue, ...] = ()
    """What is wrong with the text the person left (``abandoned``), located in ``kept``."""
    kept: Path | None = None
    """Where the abandoned text is kept (without the comment haytham added)."""


def edit_feedback(
    manager: CheckpointManager, project: str, session: str, phase: int, *, reviewer: Reviewer | None = None
) -> Edited:
    """Open a phase's feedback in the editor until it reads right or the person quits.

    The person edits a working copy in a temporary folder, so the session's file is only
    ever written with a text that reads right, and only by the manager
    (``save_feedback_text``: under the session's lock, with its history entry and the
    manifest, exactly as typed), over the version the editor was opened on; a missing file
    is first created from the blank template (as before any review). A review the lifecycle
    refuses reopens the editor with the refusal on top, as a mistake does. A failing editor
    raises click's error. A saved review records its time and ``reviewer`` (the manager's
    ``save_feedback_text``) unless the person wrote their own.
    """
    manager.recover(project, session)  # the person edits the review an interrupted save left whole
    path = manager.phase_dir(project, session, phase) / FEEDBACK_FILE
    if not path.exists():
        manager.save_user_feedback(project, session, phase, reviewed=False, approved=False, action="pending")
    version, original = fs.file_version(path)
    text = decode(original or b"", path)  # bytes that are not UTF-8 are refused, never replaced
    record, issues = FEEDBACK.read(text, path)
    refused: list[Issue] = []
    """Why the manager refused the last text that read right (shown like a mistake)."""
    folder = Path(tempfile.mkdtemp(prefix=f"haytham-{project}-{session}-{phase}-"))
    copy = folder / FEEDBACK_FILE
    body, keep = text, False
    try:
        while True:
            shown = with_banner(body, [*issues, *refused], path)
            copy.write_bytes(shown.encode("utf-8"))
            click.edit(filename=str(copy))
            edited, undecodable = _as_saved(copy.read_bytes(), path)
            if edited == shown:  # closed without a change: quit
                if body == text:
                    return Edited("unchanged", path, record)
                copy.write_bytes(body.encode("utf-8"))
                keep = True
                found = (*FEEDBACK.read(body, copy)[1], *refused)
                return Edited("abandoned", path, record, found, copy)
            body = strip_banner(edited)
            refused = [] if undecodable is None else [undecodable]
            new_record, issues = FEEDBACK.read(body, path)
            if undecodable is not None:
                continue
            if new_record is None:
                continue
            if body == text:
                return Edited("unchanged", path, record)
            try:
                saved = manager.save_feedback_text(
                    project, session, phase, body, expected=version, reviewer=reviewer
                )
            except StaleReviewError:  # someone else wrote it meanwhile: theirs stays
                copy.write_bytes(body.encode("utf-8"))
                keep = True
                changed = Issue(path, None, None, "changed while you edited it; your text was not saved")
                return Edited("abandoned", path, record, (changed,), copy)
            except (MoveRefusedError, DocumentError) as error:
                refused = [Issue(path, error.line, error.field, str(error))]
                continue
            return Edited("saved", path, saved)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class Correction:
    """How an editing of an agent's output ended (``edit_output``)."""

    outcome: Literal["saved", "unchanged", "abandoned"]
    """``saved``: the correction is recorded; ``unchanged``: the person closed the editor
    without a change and nothing was recorded; ``abandoned``: nothing was recorded and the
    person's text is kept in ``kept``."""
    path: Path
    """The agent's output file."""
    issues: tuple[Issue, ...] = ()
    kept: Path | None = None


def edit_output(
    manager: CheckpointManager,
    project: str,
    session: str,
    phase: int,
    agent: str,
    approve: bool,
    reviewer: Reviewer | None = None,
) -> Correction:
    """Open an agent's output (its content, not the file's header) in the editor and record
    what the person saves as a correction (``correct_output``: the original kept in the
    history, the review's action ``modified``, approved with ``approve``).

    As ``edit_feedback``: text that is not UTF-8 reopens the editor with the mistake noted
    on top; closing it without a change records nothing. A BOM the editor adds is dropped,
    and CRLF line ends become LF unless the output had them. The correction is recorded
    against the review file's version the editor was opened on, so a review saved
    meanwhile is never replaced (the text is then kept, and nothing is recorded).
    """
    manager.recover(project, session)
    view = manager.state(project, session).phase(phase)
    path = manager.phase_dir(project, session, phase) / f"{agent}.md"
    if view.state not in lifecycle.CORRECTABLE:
        allowed = ", ".join(sorted(s.replace("_", " ") for s in lifecycle.CORRECTABLE))
        raise click.ClickException(
            f"phase {phase} of {project}/{session} is {view.state.replace('_', ' ')}: only a phase "
            f"that is {allowed} can be corrected"
        )
    if path.is_file() and path.stat().st_size > MAX_CORRECTED_BYTES:
        raise click.ClickException(
            f"{path} is {path.stat().st_size:,} bytes long: haytham corrects outputs of at most "
            f"{MAX_CORRECTED_BYTES:,} bytes (the original is kept whole in the history)"
        )
    original = manager.load_agent_output(project, session, phase, agent).content
    review = path.parent / FEEDBACK_FILE
    version = fs.file_version(review)[0] if review.exists() else None
    folder = Path(tempfile.mkdtemp(prefix=f"haytham-{project}-{session}-{phase}-{agent}-"))
    copy = folder / f"{agent}.md"
    body, keep = original, False
    issues: list[Issue] = []
    try:
        while True:
            shown = with_banner(body, issues, path)
            copy.write_bytes(shown.encode("utf-8"))
            click.edit(filename=str(copy))
            data = copy.read_bytes()
            if data == shown.encode("utf-8"):  # closed without a change: quit
                if body == original:
                    return Correction("unchanged", path)
                keep = True
                copy.write_bytes(body.encode("utf-8"))
                return Correction("abandoned", path, tuple(issues), copy)
            text, undecodable = _as_saved(data, path)
            if "\r\n" in original and undecodable is None:
                text = data.decode("utf-8").removeprefix("\ufeff")  # the output's own CRLF stays
            body = strip_banner(text)
            issues = [] if undecodable is None else [undecodable]
            if issues:
                continue
            if body == original:
                return Correction("unchanged", path)
            try:
                manager.correct_output(
                    project,
                    session,
                    phase,
                    agent,
                    body,
                    approve=approve,
                    expected_version=version,
                    reviewer=reviewer,
                )
            except (StaleReviewError, MoveRefusedError, InvalidArgumentError) as error:
                keep = True
                copy.write_bytes(body.encode("utf-8"))
                return Correction("abandoned", path, (Issue(path, None, None, str(error)),), copy)
            return Correction("saved", path)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _as_saved(data: bytes, path: Path) -> tuple[str, Issue | None]:
    """The text an editor saved, read as every file is (``decode``): a BOM some editors add
    is dropped, CRLF line ends become LF. Bytes that are not UTF-8 (an editor set to
    Latin-1) come back replaced, with the issue that names their line: the editor reopens
    on it and nothing is saved."""
    try:
        return decode(data, None), None
    except DocumentError as error:
        return data.decode("utf-8", errors="replace"), Issue(path, error.line, None, error.message)


def with_banner(text: str, issues: Sequence[Issue], path: Path) -> str:
    """``text`` with haytham's comment on top naming each issue; ``text`` itself without issues.

    Line numbers are those of the editor's copy (the comment's lines included).
    """
    issues = [issue for issue in issues if issue.is_error]  # warnings do not stop a save
    if not issues:
        return text
    head = [
        f"{BANNER_START} haytham cannot read this {path.name}: fix what is below, then save and close.",
        f"     To give up, close the editor without a change: {path} stays as it was.",
    ]
    shift = len(head) + len(issues) + 1
    for issue in issues:
        where = f"line {issue.line + shift}: " if issue.line is not None else ""
        said = ": ".join(part for part in (issue.field, issue.message) if part)
        head.append(f"     {where}{said}".replace(BANNER_END, "-- >"))
    head.append(BANNER_END)
    return "\n".join(head) + "\n" + text


def echo_warnings(path: Path) -> None:
    """Say which rule was applied to a review that contradicts itself (formats.md, "Hand
    edits"): each warning of the file, after what was understood from it."""
    for issue in FEEDBACK.read_path(path)[1]:
        if not issue.is_error:
            click.echo(f"  Note: {issue}")


def strip_banner(text: str) -> str:
    """``text`` without the comment ``with_banner`` put on top (if the person left it there)."""
    if not text.startswith(BANNER_START):
        return text
    end = text.find(BANNER_END)
    if end < 0:
        return text
    rest = text[end + len(BANNER_END) :]
    return rest[1:] if rest.startswith("\n") else rest


def report(manager: CheckpointManager, project: str, session: str, edited: Edited) -> None:
    """Say what an editing ended with: what was understood, or why nothing was saved."""
    if edited.outcome == "abandoned":
        for issue in edited.issues:
            click.echo(str(issue), err=True)
        click.echo(
            f"Nothing was saved: {edited.path} is as it was. Your text is in {edited.kept}",
            err=True,
        )
        return
    if edited.outcome == "unchanged":
        click.echo(f"No change: {edited.path} is as it was")
    if edited.feedback is not None:
        click.echo(f"Understood {edited.path}:")
        click.echo(describe_feedback(edited.feedback))
        echo_warnings(edited.path)
    click.echo(f"Next: {next_step(manager, project, session).message}")


# ----------------------------------------------------------------------- feedback


@command()
@click.argument("project")
@click.argument("session")
@click.argument("phase", type=int)
@click.option("--approve", is_flag=True, help="Approve the phase.")
@click.option("--reject", is_flag=True, help="Send the phase back to be run again.")
@click.option("--comment", help="Your comments (markdown).")
@click.option("--change", "changes", multiple=True, help="A change you ask for (repeatable).")
@click.option(
    "--edit",
    "edit_agent",
    metavar="AGENT",
    help="Correct AGENT's output in $EDITOR (with --approve: and approve the phase).",
)
@click.option("--justification", help="Why you decide so (one line), recorded with the review.")
@click.option(
    "--raise-budget",
    "raised_budget",
    metavar="BUDGET",
    help="With --approve of a phase held for its budget: what the run may spend from now on "
    "('400000 tokens', '$10', or both), recorded as the review's Raised Budget.",
)
@reviewer_option
@commit_options
@base_dir_option
def feedback(
    project: str,
    session: str,
    phase: int,
    approve: bool,
    reject: bool,
    comment: str | None,
    changes: tuple[str, ...],
    edit_agent: str | None,
    justification: str | None,
    raised_budget: str | None,
    reviewer: Reviewer | None,
    commit: bool,
    push: bool,
    remote: str,
    base_dir: Path,
) -> None:
    """Review a phase: approve it, send it back, or edit its user_feedback.md.

    With neither --approve nor --reject the phase's user_feedback.md opens in $VISUAL or
    $EDITOR (created from the blank template if missing), like git commit: when it is
    saved with a mistake (Approved: nope; Approved: false left with Action: approved) or
    a review the phase cannot take (approving a failed phase) the editor opens again with
    it noted at the top; closing the editor without a change leaves the file as it was.
    What you save is kept as you wrote it, and the session's manifest and history say it
    at once. Exit code 1 when you quit with a mistake (nothing is saved) or the file still
    has one. With --edit AGENT the agent's output opens instead: what you save is recorded
    as your correction (the original is kept in the history; haytham diff P/S@ENTRY P/S
    shows it), the review's action becomes modified, and with --approve the phase is
    approved as corrected; the phases built on the original become stale. Closing the
    editor without a change records nothing.

    With --approve or --reject the review is saved over the phase as it was when the command
    started: a review written before is decided over, as asked, but one saved after it
    started (on a page, by another command) or a new attempt or a changed output is never
    decided over unseen: Error, nothing saved, exit code 1. With --commit the
    review is its own commit, authored by you (git's user of this clone); with --push it is
    pushed at once (haytham sync). Every review saved records its time and its reviewer
    (--reviewer, else HAYTHAM_REVIEWER, haytham.yaml's review.reviewer, git's author) and
    --justification when given. A phase held for its budget is approved with the budget
    raised by one more of the workflow's, or to --raise-budget.
    """
    if approve and reject:
        raise click.UsageError("give --approve or --reject, not both")
    if raised_budget is not None and (not approve or edit_agent is not None):
        raise click.UsageError("--raise-budget goes with --approve (and without --edit)")
    if not (approve or reject) and (comment is not None or changes or justification is not None):
        raise click.UsageError(
            "--comment, --change and --justification need --approve or --reject "
            "(without them the editor opens)"
        )
    if edit_agent is not None and (reject or comment is not None or changes):
        raise click.UsageError("--edit takes only --approve (--reject, --comment and --change are reviews)")
    manager = notified(CheckpointManager(base_dir))
    commits = Commits(manager, commit, push, remote)
    commits.pull()
    manager.recover(project, session)  # the retry count below is the whole change's
    manager.load_checkpoint(project, session, phase)  # nothing to review before a phase ran
    if edit_agent is not None:
        _correct(manager, project, session, phase, edit_agent, approve, reviewer)
        if not commits.finish():
            click.get_current_context().exit(1)
        return
    if not (approve or reject):
        edited = edit_feedback(manager, project, session, phase, reviewer=reviewer)
        report(manager, project, session, edited)
        if edited.outcome == "abandoned" or edited.feedback is None:
            again = suggest("feedback", project, session, str(phase))
            raise click.ClickException(f"{edited.path} still needs a review; run {again} to edit it again")
        if not commits.finish():
            click.get_current_context().exit(1)
        return
    path = manager.phase_dir(project, session, phase) / FEEDBACK_FILE
    # what this command decides on, as the files are when it starts: an older review is
    # decided over as asked; one saved after this point (a page, another command) is not
    seen = manager.session(project, session).shown(phase)
    manager.save_user_feedback(
        project,
        session,
        phase,
        reviewed=True,
        approved=approve,
        comments=comment or "",
        requested_changes=list(changes),
        action="approved" if approve else "retry",
        retry_count=seen.attempt - 1 + (0 if approve else 1),  # the attempt decided on
        expected_version=seen,
        reviewer=reviewer,
        justification=justification,
        raised_budget=raised_budget,
    )
    understood = manager.load_feedback(project, session, phase)
    assert understood is not None
    click.echo(f"Understood {path}:")
    click.echo(describe_feedback(understood))
    echo_warnings(path)
    click.echo(f"Next: {next_step(manager, project, session).message}")
    if not commits.finish():
        click.get_current_context().exit(1)


def _correct(
    manager: CheckpointManager,
    project: str,
    session: str,
    phase: int,
    agent: str,
    approve: bool,
    reviewer: Reviewer | None,
) -> None:
    """``feedback --edit``: correct an agent's output and say what was recorded."""
    corrected = edit_output(manager, project, session, phase, agent, approve, reviewer)
    if corrected.outcome == "abandoned":
        for issue in corrected.issues:
            click.echo(str(issue), err=True)
        raise click.ClickException(
            f"nothing was recorded: {corrected.path} is as it was. Your text is in {corrected.kept}"
        )
    if corrected.outcome == "unchanged":
        click.echo(f"No change: {corrected.path} is as it was; nothing was recorded")
    else:
        click.echo(f"Corrected {corrected.path} (the original is kept in the session's history)")
        understood = manager.load_feedback(project, session, phase)
        if understood is not None:
            click.echo(f"Review ({lifecycle.OUTCOME_LABELS[lifecycle.outcome(understood)]}):")
            click.echo(describe_feedback(understood))
    click.echo(f"Next: {next_step(manager, project, session).message}")


# ------------------------------------------------------------------------- review


@dataclasses.dataclass(frozen=True)
class AwaitingReview:
    """A phase that waits for a person's review."""

    project: str
    session: str
    phase: int
    name: str
    finished: str | None
    """When the phase began to wait for its review (ISO 8601 UTC), the walk's order. Its
    review file's path is found when its turn comes (``walk_reviews``): the phase's folder
    is named by the session's workflow, which the listing does not read."""


def awaiting_review(
    manager: CheckpointManager, project: str | None = None, session: str | None = None
) -> tuple[list[AwaitingReview], list[str]]:
    """Every phase awaiting review under the base dir (or in a project, or a session), oldest
    finished first, and a warning for each session that could not be read.

    The one place that decides what awaits review: the session's current phase when the
    lifecycle says it awaits review (a review file that cannot be read included, so that it
    gets fixed). For one session, ``manager.state`` says it. Under a base dir or a project,
    the listing says it (``SessionSummary.waiting``: the same derivation,
    ``lifecycle.needs_a_person``, remembered in the index while the files are unchanged), so
    that a warm walk starts without reading any session; each review is read when its turn
    comes (``edit_feedback``).
    """
    items = []
    if session is not None and project is not None:
        warnings: list[str] = []
        current = manager.state(project, session).current
        if current is not None and current.state == "awaiting_review":
            items.append(
                AwaitingReview(project, session, current.number, current.name, current.waiting_since)
            )
    else:
        if project is not None and not manager.project_dir(project).is_dir():
            raise ProjectNotFoundError(
                f"project {project!r} does not exist under {manager.base_dir}",
                path=manager.project_dir(project),
            )
        found, unreadable = list_sessions(manager.base_dir, project_id=project, workflows=manager.workflows)
        warnings = [
            f"skipped a session that cannot be read: {issue}" if issue.is_error else str(issue)
            for issue in unreadable
        ]
        for summary in found:
            for waiting in summary.waiting:
                if waiting.state == "awaiting_review":
                    where = (summary.project_id, summary.session_id)
                    items.append(AwaitingReview(*where, waiting.phase, waiting.name, waiting.since))
    items.sort(key=lambda i: (sort_time(i.finished), i.project, i.session, i.phase))
    return items, warnings


@dataclasses.dataclass(frozen=True)
class ReviewHooks:
    """What runs around a walk of reviews: before it starts and after each phase.

    Nothing by default; the place for fetching others' reviews first and sharing each one
    as it is written (git pull and push) without changing the walk itself.
    """

    before_walk: Callable[[Sequence[AwaitingReview]], None] = lambda items: None
    after_phase: Callable[[AwaitingReview, Edited], None] = lambda item, edited: None


def walk_reviews(
    manager: CheckpointManager,
    items: Sequence[AwaitingReview],
    hooks: ReviewHooks | None = None,
    *,
    reviewer: Reviewer | None = None,
) -> list[Edited]:
    """Open each phase's feedback in turn, saying what was understood after each."""
    hooks = hooks or ReviewHooks()
    hooks.before_walk(items)
    results = []
    for index, item in enumerate(items, 1):
        path = manager.phase_dir(item.project, item.session, item.phase) / FEEDBACK_FILE
        click.echo(
            f"[{index}/{len(items)}] {item.project}/{item.session} phase {item.phase} ({item.name}), "
            f"finished {when(item.finished)}: {path}"
        )
        for line in tries_lines(manager, item.project, item.session, {item.phase}):
            click.echo(f"  {line}")  # an agent whose tries ran out: the reviewer sees why
        edited = edit_feedback(manager, item.project, item.session, item.phase, reviewer=reviewer)
        report(manager, item.project, item.session, edited)
        hooks.after_phase(item, edited)
        results.append(edited)
        if index < len(items):
            click.echo()
    return results


@command()
@click.argument("project", required=False)
@click.argument("session", required=False)
@reviewer_option
@commit_options
@base_dir_option
def review(
    project: str | None,
    session: str | None,
    reviewer: Reviewer | None,
    commit: bool,
    push: bool,
    remote: str,
    base_dir: Path,
) -> None:
    """Review every phase that awaits it, oldest finished first, each in $EDITOR.

    Without PROJECT every session under the base dir is looked at; with PROJECT only its
    sessions; with SESSION only that one. Each phase's user_feedback.md opens as with
    haytham feedback (again after a mistake; closing without a change moves on and leaves
    the file as it was); after each, haytham says what it understood. Exit code 1 when
    you quit a phase with a mistake (nothing of it is saved). With --commit each review
    saved is its own commit, authored by you; with --push the others' reviews are fetched
    first and each of yours is pushed as soon as it is saved (haytham sync).
    """
    manager = notified(CheckpointManager(base_dir))
    commits = Commits(manager, commit, push, remote)
    commits.pull()  # the others' reviews first
    items, warnings = awaiting_review(manager, project, session)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    where = "/".join(p for p in (project, session) if p) or str(base_dir)
    if not items:
        click.echo(f"Nothing awaits review in {where}")
        return
    many = len(items) > 1
    click.echo(f"{len(items)} phase{'s' if many else ''} await{'' if many else 's'} review in {where}")
    hooks = None
    if commits.auto is not None:
        auto = commits.auto

        def share(item: AwaitingReview, edited: Edited) -> None:
            # the review's commit was made when it was saved (the manager's feedback_saved)
            if edited.outcome == "saved" and push and not auto.failures:
                click.echo(describe_sync(sync(auto.root, remote, base_dir=base_dir)), err=True)

        hooks = ReviewHooks(after_phase=share)
    results = walk_reviews(manager, items, hooks, reviewer=reviewer)
    saved = sum(e.outcome == "saved" for e in results)
    left = sum(e.outcome == "abandoned" for e in results)
    click.echo(
        f"\nReviewed {saved} of {len(results)}" + (f"; {left} left with a mistake, not saved" if left else "")
    )
    committed = commits.finish() if commits.auto is None or commits.auto.failures else True
    click.get_current_context().exit(1 if left or not committed else 0)


JSON_OUTPUT: dict[str, dict[str, str]] = {}
"""``feedback`` and ``review`` have no ``--json``: what they print is advice for a person."""
COMMANDS: list[click.Command] = [feedback, review]
"""The commands for ``haytham.cli.main`` to register."""
