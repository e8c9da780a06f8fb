"""The git commands of the ``haytham`` command line: ``git setup``, ``git merge-driver``, ``log``.

``COMMANDS`` holds the ``git`` group and ``log`` for ``haytham.cli.main`` to register.

``python -m haytham.cli.git`` runs the ``git`` group on its own. ``haytham git setup``
registers the merge driver as ``<python> -m haytham.cli.git merge-driver %O %A %B %P``,
which works whether or not the main command line has the ``git`` group. The merge driver
is the one command that reports errors its own way, for git rather than a person:
``haytham: cannot merge PATH: ...`` and exit code 2, apart from exit code 1 for a conflict.
"""

from __future__ import annotations

from pathlib import Path

import click

from haytham.cli.common import Group, base_dir_option, command, emit_json, json_option
from haytham.errors import HaythamError
from haytham.git.merge import describe_conflicts, run_driver, setup
from haytham.git.repository import path_log
from haytham.store.manager import CheckpointManager

JSON_OUTPUT: dict[str, dict[str, str]] = {
    "log": {
        "project_id": "the project id",
        "session_id": "the session id",
        "commits": "the commits that touched the session directory, newest first",
        "commits[].commit": "the full commit hash",
        "commits[].short": "the abbreviated hash",
        "commits[].author": "the author's name",
        "commits[].email": "the author's email",
        "commits[].date": "the author date, ISO 8601",
        "commits[].subject": "the first line of the message",
    }
}
"""The ``--json`` keys of ``log``, in the form of ``haytham.cli.main.JSON_OUTPUT``."""


@click.group("git", cls=Group)
def git_group() -> None:
    """Keep sessions in git: set up haytham's merge driver.

    Run `haytham git setup` once in each clone. Session manifests, project changelogs and
    latest requirements then merge by what they mean, so two machines working on one
    project merge without conflicts unless they truly contradict each other.
    """


@git_group.command("setup")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="A directory inside the git repository.",
)
@base_dir_option
def setup_command(repo: Path, base_dir: Path) -> None:
    """Write .gitattributes and register the merge driver in this clone's git config.

    The .gitattributes lines send session_manifest.md, history/changelog.md and
    outputs/latest_requirements.md under BASE_DIR to the driver; commit the file. The
    driver's git config is not cloned: run this once in every clone. Running it again
    changes nothing.
    """
    result = setup(repo, base_dir.absolute())
    for line in result.added_lines:
        click.echo(f"added to {result.attributes}: {line}")
    if result.config_changed:
        click.echo(f"registered merge driver 'haytham' in {result.root}: {result.driver}")
    if not result.changed:
        click.echo(f"already set up: {result.root}")
    elif result.added_lines:
        click.echo(f"Next: commit {result.attributes.name} so that every clone uses the driver")


@git_group.command("merge-driver", hidden=True)
@click.argument("base_file")
@click.argument("ours_file")
@click.argument("theirs_file")
@click.argument("path")
def merge_driver_command(base_file: str, ours_file: str, theirs_file: str, path: str) -> None:
    """git's merge driver: merge %O, %A and %B of %P into %A (exit 1 on a conflict)."""
    try:
        result = run_driver(base_file, ours_file, theirs_file, path)
    except (HaythamError, OSError) as error:
        click.echo(f"haytham: cannot merge {path}: {error}", err=True)
        click.get_current_context().exit(2)
    if result.conflicts:
        click.echo(describe_conflicts(path, result.conflicts), err=True)
        click.get_current_context().exit(1)


@command("log")
@click.argument("project")
@click.argument("session")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Show at most N commits.")
@base_dir_option
@json_option
def log_command(project: str, session: str, limit: int | None, base_dir: Path, as_json: bool) -> None:
    """Show the git commits that touched a session, newest first.

    Runs git log on the session's directory (BASE_DIR/PROJECT/sessions/SESSION), so it
    lists auto-commits and any commit of yours that changed the session's files.
    """
    manager = CheckpointManager(base_dir)
    manager.load_manifest(project, session)  # a missing session is an error before git runs
    commits = path_log(manager.session_dir(project, session), limit=limit)
    if as_json:
        data = {
            "project_id": project,
            "session_id": session,
            "commits": [
                {key.split(".", 1)[1]: getattr(c, key.split(".", 1)[1]) for key in _commit_keys()}
                for c in commits
            ],
        }
        emit_json(data)
        return
    if not commits:
        click.echo(f"No commits touch {project}/{session} yet")
        return
    for commit in commits:
        date = commit.date[:16].replace("T", " ")
        click.echo(f"{commit.short}  {date}  {commit.author}  {commit.subject}")


def _commit_keys() -> list[str]:
    return [key for key in JSON_OUTPUT["log"] if key.startswith("commits[].")]


COMMANDS: list[click.Command] = [git_group, log_command]
"""The commands for ``haytham.cli.main`` to register: ``cli.add_command(command)`` each."""


if __name__ == "__main__":
    git_group.main(prog_name="haytham git")
