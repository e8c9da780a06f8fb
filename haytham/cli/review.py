"""The review command, ``feedback``: approve a phase, send it back, or edit its feedback file.

A person's review is what lets a session past a review gate; this module only writes it
through the library and says what the library understood.
"""

from __future__ import annotations

from pathlib import Path

import click

from haytham.cli.common import base_dir_option, command, suggest
from haytham.cli.present import describe_feedback, next_step
from haytham.format.layout import FEEDBACK_FILE
from haytham.store.manager import CheckpointManager


@command()
@click.argument("project")
@click.argument("session")
@click.argument("phase", type=int)
@click.option("--approve", is_flag=True, help="Approve the phase.")
@click.option("--reject", is_flag=True, help="Send the phase back to be run again.")
@click.option("--comment", help="Your comments (markdown).")
@click.option("--change", "changes", multiple=True, help="A change you ask for (repeatable).")
@base_dir_option
def feedback(
    project: str,
    session: str,
    phase: int,
    approve: bool,
    reject: bool,
    comment: str | None,
    changes: tuple[str, ...],
    base_dir: Path,
) -> None:
    """Review a phase: approve it, send it back, or edit its user_feedback.md.

    With neither --approve nor --reject the phase's user_feedback.md opens in $VISUAL or
    $EDITOR (created from the blank template if missing); when you close the editor it is
    checked, and haytham says what it understood or where the mistake is (exit 1).
    """
    if approve and reject:
        raise click.UsageError("give --approve or --reject, not both")
    if not (approve or reject) and (comment is not None or changes):
        raise click.UsageError(
            "--comment and --change need --approve or --reject (without them the editor opens)"
        )
    manager = CheckpointManager(base_dir)
    checkpoint = manager.load_checkpoint(project, session, phase)  # nothing to review before a phase ran
    path = manager.phase_dir(project, session, phase) / FEEDBACK_FILE
    if approve or reject:
        manager.save_user_feedback(
            project,
            session,
            phase,
            reviewed=True,
            approved=approve,
            comments=comment or "",
            requested_changes=list(changes),
            action="approved" if approve else "retry",
            retry_count=checkpoint.retry_count + (0 if approve else 1),
        )
    else:
        if manager.load_feedback(project, session, phase) is None:
            manager.save_user_feedback(
                project, session, phase, reviewed=False, approved=False, action="pending"
            )
        click.edit(filename=str(path))
        issues = manager.validate_paths([path])
        if issues:
            for issue in issues:
                click.echo(str(issue), err=True)
            again = suggest("feedback", project, session, str(phase))
            raise click.ClickException(
                f"{path} was kept as you left it but not understood; run {again} to fix it"
            )
    understood = manager.load_feedback(project, session, phase)
    assert understood is not None
    click.echo(f"Understood {path}:")
    click.echo(describe_feedback(understood))
    click.echo(f"Next: {next_step(manager, project, session).message}")


JSON_OUTPUT: dict[str, dict[str, str]] = {}
"""``feedback`` has no ``--json``: what it prints is advice for a person."""
COMMANDS: list[click.Command] = [feedback]
"""The commands for ``haytham.cli.main`` to register."""
