"""The command that maintains a tree: ``migrate`` brings its files to the current format.

It prints one line per file it changes (what and why) and one per file it must leave, then a
summary; ``--dry-run`` prints the same lines and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import click

from haytham.cli.common import base_dir_option, command, suggest
from haytham.format.layout import FORMAT_VERSION
from haytham.migrate import Change, migrate

JSON_OUTPUT: dict[str, dict[str, str]] = {}
"""``migrate`` has no ``--json``: it is not a read command."""


@command("migrate")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="List what would change; write nothing.")
@base_dir_option
def migrate_command(path: Path | None, dry_run: bool, base_dir: Path) -> None:
    """Rewrite session files to the current format version, changing only what must change.

    PATH is the base directory (the default), a project, a session or a file. Each file is
    written on its own and atomically, so a run that is stopped can simply be run again; a
    second run finds nothing to do. Files that cannot be read are listed and left as they
    are (exit code 1): fix them (haytham validate names the line) and run it again.
    """
    root = path or base_dir
    if not root.exists():
        raise click.BadParameter(f"{str(root)!r} does not exist", param_hint="--base-dir")
    verb = "Would migrate" if dry_run else "Migrated"

    def report(change: Change) -> None:
        click.echo(
            f"{verb} {change.path} (version {change.from_version} to {change.to_version}): {change.what}"
        )

    result = migrate(root, dry_run=dry_run, on_change=report)
    for skipped in result.skipped:
        click.echo(f"Left {skipped.path}: {skipped.reason}")
    changed = len(result.changes)
    if not changed and not result.skipped:
        click.echo(f"Nothing to migrate: {result.current} files are at format version {FORMAT_VERSION}")
    else:
        done = "would be migrated" if dry_run else "migrated"
        click.echo(
            f"{changed} file{'s' * (changed != 1)} {done}, {result.current} already at version "
            f"{FORMAT_VERSION}, {len(result.skipped)} left as they are"
        )
    if result.skipped:
        click.echo(f"{suggest('validate', str(root))} names what is wrong in the files left")
        click.get_current_context().exit(1)


COMMANDS: list[click.Command] = [migrate_command]
"""The commands for ``haytham.cli.main`` to register."""
