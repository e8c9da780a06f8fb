"""Talking to git: find the repository around a path, commit a path alone, read a path's log.

haytham keeps working without git; only the opt-in git features (``haytham.git.autocommit``,
``haytham.git.merge``, ``haytham log``) call it, through ``run_git`` here, so that a missing
git, a directory outside any repository and a failed command all become one typed error,
``GitError``, whose message says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from haytham.errors import GitError
from haytham.frozen import frozen

if TYPE_CHECKING:  # subprocess and shutil are imported when git runs: the merge driver, which
    # git starts once per conflicting file, merges most manifests without running git itself
    import subprocess

DEFAULT_REMOTE = "origin"
"""The remote that ``sync``, ``--push`` and the worker loop talk to unless told another."""
GIT_TIMEOUT = 120.0
"""Seconds a single git command may take before it is given up on."""
_LOG_FORMAT = "%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e"


@frozen
class Commit:
    """One commit as ``haytham log`` shows it."""

    commit: str
    """The full hash."""
    short: str
    author: str
    email: str
    date: str
    """The author date, ISO 8601 with the author's offset."""
    subject: str


def git_executable() -> str:
    """The path of ``git`` on the current PATH, or GitError saying it is missing."""
    import shutil

    found = shutil.which("git")
    if found is None:
        raise GitError(
            "git is not installed or not on PATH (install git, or add its directory to PATH, "
            "to use haytham's git features)"
        )
    return found


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    stdin: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in ``cwd``; with ``check`` a non-zero exit is a GitError with git's words."""
    import subprocess

    command = [git_executable(), *args]
    try:
        result = subprocess.run(
            command, cwd=cwd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise GitError(f"{cwd} does not exist, so git cannot run there", path=cwd) from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)} took more than {GIT_TIMEOUT:g}s in {cwd}", path=cwd) from None
    if check and result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip() or result.stdout.decode("utf-8", "replace")
        raise GitError(f"git {' '.join(args)} failed in {cwd}: {said.strip()}", path=cwd)
    return result


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The top directory of the git work tree that holds ``path`` (which may not exist yet)."""
    start = Path(path).absolute()
    directory = start
    while not directory.is_dir():
        if directory.parent == directory:
            break
        directory = directory.parent
    result = run_git(["rev-parse", "--show-toplevel"], directory, check=False)
    if result.returncode != 0:
        raise GitError(
            f"{start} is not inside a git repository (run `git init` there, or give the repository's path)",
            path=start,
        )
    return Path(os.fsdecode(result.stdout.strip())).resolve()


def relative_to_root(root: Path, path: str | os.PathLike[str]) -> str:
    """``path`` relative to the work tree ``root`` in git's spelling (``/``), or GitError."""
    absolute = Path(path).absolute()
    for candidate in (absolute, absolute.resolve()):
        try:
            relative = candidate.relative_to(root)
        except ValueError:
            continue
        return relative.as_posix() or "."
    raise GitError(f"{absolute} is not inside the git repository {root}", path=absolute)


def commit_path(
    root: Path,
    path: str | os.PathLike[str],
    message: str,
    *,
    identity: tuple[str, str] | None = None,
) -> str | None:
    """Commit everything under ``path`` (new, changed and removed files) and nothing else."""
    return commit_paths(root, [path], message, identity=identity)


def commit_paths(
    root: Path,
    paths: Sequence[str | os.PathLike[str]],
    message: str,
    *,
    identity: tuple[str, str] | None = None,
) -> str | None:
    """Commit everything under ``paths`` (new, changed and removed files) and nothing else.

    ``git add --all -- PATHS`` then ``git commit --only -- PATHS``: whatever else the user has
    staged stays staged and uncommitted, and their other changes are left alone. Returns
    the new commit's hash, or None when nothing under ``paths`` had changed. ``identity``
    (name, email) is used for the commit instead of git's configured user.
    """
    specs = [relative_to_root(root, path) for path in paths]
    run_git(["add", "--all", "--", *specs], root)
    staged = run_git(["diff", "--cached", "--quiet", "--", *specs], root, check=False)
    if staged.returncode == 0:
        return None
    if staged.returncode != 1:
        raise GitError(f"git diff --cached failed in {root}: {staged.stderr.decode('utf-8', 'replace')}")
    config = ["-c", f"user.name={identity[0]}", "-c", f"user.email={identity[1]}"] if identity else []
    run_git([*config, "commit", "--quiet", "--only", "-m", message, "--", *specs], root)
    return run_git(["rev-parse", "HEAD"], root).stdout.decode("ascii").strip()


def knows_author(root: Path) -> bool:
    """Whether git knows who the author of a commit in ``root`` is (``user.name`` and
    ``user.email``, or what the environment says), without asking anyone."""
    return run_git(["var", "GIT_AUTHOR_IDENT"], root, check=False).returncode == 0


def author(directory: Path) -> str | None:
    """``Name <email>`` of whom git would make the author of a commit in ``directory``
    (its config or environment), or None when git does not know or is not installed."""
    try:
        git_executable()
    except GitError:  # not installed
        return None
    result = run_git(["var", "GIT_AUTHOR_IDENT"], directory, check=False)
    if result.returncode != 0:
        return None
    ident = result.stdout.decode("utf-8", "replace").strip()
    return ident.rsplit(" ", 2)[0] if ident.count(" ") >= 2 else None


def path_log(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Commit]:
    """The commits that touched ``path``, newest first (``git log -- PATH``)."""
    root = repo_root(path)
    spec = relative_to_root(root, path)
    args = ["log", f"--format={_LOG_FORMAT}"]
    if limit is not None:
        args.append(f"--max-count={limit}")
    result = run_git([*args, "--", spec], root, check=False)
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip()
        if "does not have any commits yet" in said:
            return []
        raise GitError(f"git log failed in {root}: {said}", path=root)
    commits = []
    for record in result.stdout.decode("utf-8", "replace").split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 6:
            commits.append(Commit(*fields))
    return commits


__all__ = [
    "Commit",
    "GitError",
    "commit_path",
    "commit_paths",
    "git_executable",
    "knows_author",
    "path_log",
    "repo_root",
    "run_git",
]
