"""The git commands of the ``haytham`` command line: ``git setup``, ``git merge-driver``,
``log`` and ``sync``; and the ``--commit``/``--push`` options that ``resume``, ``rerun``,
``demo``, ``feedback`` and ``review`` share (``commit_options``, ``Commits``).

``COMMANDS`` holds the ``git`` group, ``log`` and ``sync`` for ``haytham.cli.main`` to register.

``python -m haytham.cli.git`` runs the ``git`` group on its own. ``haytham git setup``
registers the merge driver as ``<python> -m haytham.cli.merge_driver %O %A %B %P``, an entry
point of its own without click (``haytham.cli.merge_driver``: git starts it once per
conflicting file). ``git merge-driver`` here, which clones set up before registered as
``<python> -m haytham.cli.git merge-driver %O %A %B %P``, runs the same merge. The merge
driver is the one command that reports errors its own way, for git rather than a person:
``haytham: cannot merge PATH: ...`` and exit code 2, apart from exit code 1 for a conflict.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from haytham.cli.common import Group, base_dir_option, command, emit_json, json_option
from haytham.cli.ending import leave_to_exit
from haytham.cli.merge_driver import merge
from haytham.errors import DriverNotConfigured, HaythamError
from haytham.git.merge import setup
from haytham.git.repository import DEFAULT_REMOTE, path_log, repo_root

if TYPE_CHECKING:  # the manager and sync are imported when a command uses them: the merge
    # driver, which git starts once per conflicting file, merges three files and needs neither
    from haytham.git.autocommit import AutoCommit
    from haytham.git.sync import SyncResult
    from haytham.store.events import Event
    from haytham.store.manager import CheckpointManager

F = TypeVar("F", bound=Callable[..., Any])

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
    },
    "sync": {
        "remote": "the remote synced with",
        "branch": "the branch synced",
        "merged": "true when the remote had commits this clone did not (now merged)",
        "pushed": "true when this clone's commits were pushed",
        "retries": "how many pushes were rejected because another machine pushed first",
        "driver_set_up": "true when this sync configured the merge driver in this clone",
        "recovered": "what the sync undid first of an interrupted run or sync, a sentence each "
        "(a stale index lock, a half-done merge, a dead run's files kept in .haytham-kept)",
    },
}
"""The ``--json`` keys of ``log`` and ``sync``, in the form of ``haytham.cli.main.JSON_OUTPUT``."""


# ------------------------------------------------------------- --commit and --push


def commit_options(function: F) -> F:
    """``--commit``, ``--push`` and ``--remote``: commit what the command changes, and push it."""
    function = click.option(
        "--remote",
        default=DEFAULT_REMOTE,
        show_default=True,
        metavar="NAME",
        help="The remote --push syncs with.",
    )(function)
    function = click.option(
        "--push",
        is_flag=True,
        help="Sync with the remote before (fetch, merge with haytham's driver) and after (push). "
        "Implies --commit.",
    )(function)
    return click.option(
        "--commit",
        is_flag=True,
        help="Commit to git once for each event worth a commit (a phase finished, a review saved, "
        "an attempt archived), with a message that says what happened.",
    )(function)


class Commits:
    """What ``--commit``/``--push`` do around a command: auto-commit while it runs, print each
    failed commit as it happens (``commit_failed``), push at the end, and fail loudly."""

    def __init__(self, manager: CheckpointManager, commit: bool, push: bool, remote: str) -> None:
        self.manager = manager
        self.push = push
        self.remote = remote
        self.auto: AutoCommit | None = None
        if commit or push:
            from haytham.git.autocommit import AutoCommit  # imported when used (see the imports)

            self.auto = AutoCommit(manager, log_failures=False)  # printed by _echo_failure
            manager.on("commit_failed", self._echo_failure)

    def pull(self) -> None:
        """With --push, merge the remote's latest first (``sync`` without a push), so that the
        command works on what the other machines did."""
        if self.auto is not None and self.push:
            from haytham.git.sync import sync

            result = sync(self.auto.root, self.remote, base_dir=self.manager.base_dir, push=False)
            click.echo(describe_sync(result), err=True)

    @staticmethod
    def _echo_failure(event: Event) -> None:
        click.echo(f"Error: {event.data.get('error')}", err=True)

    def finish(self) -> bool:
        """Push when asked (printing what sync did); False when a commit or the push failed."""
        if self.auto is None:
            return True
        if self.auto.failures:
            count = len(self.auto.failures)
            click.echo(
                f"Error: {count} auto-commit{'s' if count > 1 else ''} failed (above); the session's "
                "files are saved but not committed",
                err=True,
            )
            return False
        made = len(self.auto.commits)
        click.echo(f"Committed: {made} commit{'' if made == 1 else 's'}", err=True)
        if not self.push:
            return True
        from haytham.git.sync import sync

        try:
            result = sync(self.auto.root, self.remote, base_dir=self.manager.base_dir)
        except HaythamError as error:
            click.echo(f"Error: {error}", err=True)
            return False
        click.echo(describe_sync(result), err=True)
        return True


def describe_sync(result: SyncResult) -> str:
    """One line saying what a sync did, then a line for each thing it recovered first."""
    parts = []
    if result.driver_set_up:
        parts.append("set up the merge driver")
    parts.append(f"merged {result.remote}/{result.branch}" if result.merged else "nothing new to merge")
    parts.append("pushed" if result.pushed else "nothing to push")
    if result.retries:
        parts.append(f"after {result.retries} rejected push{'es' if result.retries > 1 else ''}")
    return (
        f"Synced with {result.remote}: "
        + ", ".join(parts)
        + "".join(f"\nRecovered: {note}" for note in result.recovered)
    )


@click.group("git", cls=Group)
def git_group() -> None:
    """Keep sessions in git: set up haytham's merge driver.

    Run `haytham git setup` once in each clone. Session manifests, project changelogs and
    latest requirements then merge by what they mean, so two machines working on one
    project merge without conflicts unless they truly contradict each other.
    """


_REPO_OPTION = click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="A directory inside the git repository.",
)
"""``--repo`` of ``git setup`` and ``sync``."""


@git_group.command("setup")
@_REPO_OPTION
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
    code = merge(base_file, ours_file, theirs_file, path)
    if code:
        click.get_current_context().exit(code)


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
    from haytham.store.manager import CheckpointManager  # imported when used (see the imports)

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


@command("sync")
@click.option("--remote", default=DEFAULT_REMOTE, show_default=True, metavar="NAME", help="The remote.")
@click.option(
    "--setup-driver",
    is_flag=True,
    help="Configure haytham's merge driver in this clone first if it is not (else sync asks, "
    "or refuses when it cannot ask).",
)
@_REPO_OPTION
@base_dir_option
@json_option
def sync_command(remote: str, setup_driver: bool, repo: Path, base_dir: Path, as_json: bool) -> None:
    """Fetch, merge with haytham's merge driver, and push; never force-push.

    A push rejected because another machine pushed first is retried (fetch, merge, push)
    with a growing pause, a bounded number of times; a push the remote refuses otherwise (a
    hook, permissions, a stale lock in the remote) stops at once with the remote's words. What
    a killed runner or sync left in this clone is recovered first; a dead run's uncommitted
    files in the way of the merge are kept in .haytham-kept/. A true conflict (say, the same session
    created on two machines) stops with the file and line; the merge is undone, so your
    commits and working tree are as they were. The merge driver must be configured in this
    clone (`haytham git setup`): sync checks first, and offers to set it up. See
    docs/many-machines.md.
    """
    from haytham.git.sync import driver_configured, sync

    root = repo_root(repo)
    if not setup_driver and not driver_configured(root) and sys.stdin.isatty():
        setup_driver = click.confirm(
            f"haytham's merge driver is not configured in {root}; set it up now?", default=True
        )
    try:
        result = sync(root, remote, base_dir=base_dir.absolute(), set_up_driver=setup_driver)
    except DriverNotConfigured as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        emit_json(
            {
                "remote": result.remote,
                "branch": result.branch,
                "merged": result.merged,
                "pushed": result.pushed,
                "retries": result.retries,
                "driver_set_up": result.driver_set_up,
                "recovered": list(result.recovered),
            }
        )
        return
    click.echo(describe_sync(result))


COMMANDS: list[click.Command] = [git_group, log_command, sync_command]
"""The commands for ``haytham.cli.main`` to register: ``cli.add_command(command)`` each."""


if __name__ == "__main__":
    try:
        git_group.main(prog_name="haytham git")
    finally:
        leave_to_exit()  # the merge driver of clones set up before, once per conflicting file
