"""The commands that check session files: ``validate`` (like a linter) and ``doctor``.

``validate`` reads any files or trees and reports ``path:line: field: message`` a problem;
``doctor`` compares one session's manifest with its files and, with ``--fix``, repairs what
is safe. Both exit with 1 while something is wrong, so scripts and hooks can rely on them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from haytham.cli.common import (
    base_dir_option,
    command,
    emit_json,
    json_option,
    new_console,
    plain,
    progress,
    suggest,
)
from haytham.store.manager import CheckpointManager

if TYPE_CHECKING:  # the doctor's modules are imported by `doctor`, not by the pre-commit hook's validate
    from haytham.store.doctor import Finding

JSON_OUTPUT: dict[str, dict[str, str]] = {
    "validate": {
        "ok": "true when no error was found (no problem at all with --strict)",
        "files": "how many session files were checked",
        "sessions": "how many whole sessions were checked",
        "issues": "the problems, sorted by file and line",
        "issues[].path": "the file",
        "issues[].line": "1-based line, or null when the problem is the file as a whole",
        "issues[].field": "the field label as written in the file, or null",
        "issues[].message": "what is wrong",
        "issues[].severity": "error (cannot be read, or contradicts itself) or warning (needs attention)",
    },
    "doctor": {
        "ok": "true when no finding is left unfixed",
        "findings": "what the doctor found",
        "findings[].kind": "e.g. `manifest_out_of_date`, `missing_manifest`, `temporary_leftover`, "
        "`invalid_file`",
        "findings[].path": "the file or directory concerned",
        "findings[].message": "what is wrong",
        "findings[].fixed": "true when `--fix` repaired it",
        "notify_failures": "the newest deliveries of the `notify:` hook that failed (of PROJECT, "
        "SESSION when given), oldest first; they change neither `ok` nor the exit code",
    },
}
"""The ``--json`` keys of ``validate`` and ``doctor``, in the form of ``haytham.cli.main.JSON_OUTPUT``."""


def __getattr__(name: str) -> Any:
    """``JSON_RECORDS``: each failed delivery of ``doctor`` is a ``haytham.notify.Failure``, its
    fields as keys; made when asked for (``haytham.cli.main.load_all``), so that ``validate``
    does not import the notify hook."""
    if name == "JSON_RECORDS":
        from haytham.notify import Failure

        return {"doctor": {"notify_failures[]": Failure}}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--strict", is_flag=True, help="Exit with 1 on warnings too, not only on errors.")
@base_dir_option
@json_option
def validate(paths: tuple[Path, ...], strict: bool, base_dir: Path, as_json: bool) -> None:
    """Check session files like a linter: one path:line: field: message a problem.

    PATHS may be the base directory (the default), projects, sessions, phases or single
    files; files that are not session files are skipped, so a pre-commit hook can pass
    every changed .md file. Exit code 1 on an error (a file that cannot be read or
    contradicts itself); warnings (a stale phase, a manifest behind its files, a legacy
    spelling: read right, and repairable) are listed, and fail only with --strict.
    """
    if not paths and not base_dir.is_dir():
        raise click.BadParameter(f"{str(base_dir)!r} is not a directory", param_hint="--base-dir")
    roots = list(paths) or [base_dir]
    manager = CheckpointManager(base_dir)
    if _on_terminal():
        console = new_console()
        with progress(console, "Validating") as bar:
            task = bar.add_task("validate", total=None)
            validation = manager.validate_tree(
                roots, progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
    else:  # a hook or a script: no progress bar, and rich is never imported
        validation = manager.validate_tree(roots)
    issues, files, sessions = validation  # counted on validation's own walk: none more here
    failed = any(issue.is_error or strict for issue in issues)
    if as_json:
        emit_json({"ok": not failed, "files": files, "sessions": sessions, "issues": plain(issues)})
    else:
        for issue in issues:
            click.echo(str(issue) if issue.is_error else f"{issue} (warning)")
        if issues:
            problem_files = len({i.path for i in issues})
            click.echo(f"{len(issues)} problem{'s' * (len(issues) != 1)} in {problem_files} of {files} files")
        else:
            click.echo(f"OK: {files} session files in {sessions} sessions, no problems")
    if failed:
        click.get_current_context().exit(1)


def _on_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


@command()
@click.argument("project", required=False)
@click.argument("session", required=False)
@click.option(
    "--fix",
    is_flag=True,
    help="Repair what is safe: finish interrupted operations, rebuild the manifest, remove "
    "temporary, staging and trash leftovers.",
)
@base_dir_option
@json_option
def doctor(project: str | None, session: str | None, fix: bool, base_dir: Path, as_json: bool) -> None:
    """Compare a session's manifest with its files and find every trace of an interrupted
    operation; with --fix repair what is safe.

    Without SESSION every session of PROJECT is checked, with the project's own traces
    (an interrupted import or completion, staging folders); without PROJECT the whole base
    directory, with deleted projects' trash. A session folder that holds files but no
    manifest is found too, and --fix rebuilds its manifest from them. A person's content
    is never deleted or rewritten. Exit code 1 while findings remain unfixed.

    The newest failed deliveries of haytham.yaml's notify hook are shown as warnings first;
    they are no finding of the files and change neither the result nor the exit code.
    """
    from haytham.notify import recent_failures
    from haytham.store import orphans
    from haytham.store.doctor import check_folders
    from haytham.store.scan import session_dirs

    manager = CheckpointManager(base_dir)
    findings: list[Finding] = check_folders(base_dir, project, fix, manager.lock_timeout)
    if session is not None and project is not None:
        sessions = [(project, session)]
    else:
        root = base_dir / project if project is not None else base_dir
        found = list(session_dirs(root))
        found += [orphan.directory for orphan in orphans.under(root, set(found))]  # no manifest
        sessions = [(d.parent.parent.name, d.name) for d in sorted(found)]
    for project_id, session_id in sessions:
        findings += manager.check(project_id, session_id, fix=fix)
    unfixed = [f for f in findings if not f.fixed]
    failures = recent_failures(base_dir, project, session)
    if as_json:
        emit_json({"ok": not unfixed, "findings": plain(findings), "notify_failures": plain(failures)})
    else:
        for failure in failures:
            click.echo(f"warning: {failure}")
        what = f"{project}/{session}" if session else project or str(base_dir)
        for finding in findings:
            click.echo(str(finding))
        if not findings:
            click.echo(f"OK: {what} is consistent")
        elif unfixed:
            command = suggest("doctor", *(a for a in (project, session) if a is not None), "--fix")
            hint = "" if fix else f"; {command} repairs the safe ones"
            click.echo(f"{len(unfixed)} of {len(findings)} findings need attention{hint}")
        else:
            click.echo(f"Fixed all {len(findings)} findings")
    if unfixed:
        click.get_current_context().exit(1)


COMMANDS: list[click.Command] = [validate, doctor]
"""The commands for ``haytham.cli.main`` to register."""
