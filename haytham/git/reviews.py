"""When and by whom hand reviews were made, as git remembers it: one ``git log`` for all files.

A clone gives every file a fresh modification time, so the time a person saved a
user_feedback.md by hand is only in the commit that brought it. ``last_commits`` answers
``store.review_time.CommitLookup`` for any number of review files with a constant number of
git processes (find the work tree, one ``git log`` over every review file, one ``git status``),
never one per file: it is what ``haytham stats`` passes to ``analytics.summarize``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from haytham.errors import GitError
from haytham.format.layout import FEEDBACK_FILE
from haytham.git.repository import relative_to_root, repo_root, run_git
from haytham.store.clock import format_timestamp
from haytham.store.review_time import LastCommit

_RECORD, _UNIT = "\x1e", "\x1f"
_FORMAT = "--format=%x1e%aI%x1f%an%x1f%ae"  # git writes the separators: none on the command line


def last_commits(paths: Sequence[Path]) -> dict[Path, LastCommit]:
    """The commit that last changed each of ``paths`` (files in one git work tree), for
    those committed and unchanged since (not modified, staged or untracked now); empty
    outside a repository or without git. Reads only: no lock, no index refresh written."""
    if not paths:
        return {}
    try:
        root = repo_root(os.path.commonpath([str(p.absolute()) for p in paths]))
        wanted = {relative_to_root(root, path): path for path in paths}
    except GitError:
        return {}
    spec = f":(glob)**/{FEEDBACK_FILE}"  # one argument however many files: git filters, we pick
    quiet = ["--no-optional-locks", "-c", "core.quotePath=false"]
    log = run_git([*quiet, "log", "--no-renames", _FORMAT, "--name-only", "--", spec], root, check=False)
    status = run_git(
        [*quiet, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", spec], root, check=False
    )
    if log.returncode != 0 or status.returncode != 0:
        return {}
    changed = {entry[3:] for entry in os.fsdecode(status.stdout).split("\0") if len(entry) > 3}
    found: dict[Path, LastCommit] = {}
    for record in os.fsdecode(log.stdout).split(_RECORD)[1:]:
        header, _, names = record.partition("\n")
        when, name, email = header.split(_UNIT)
        commit = LastCommit(format_timestamp(datetime.fromisoformat(when)), f"{name} <{email}>")
        for relative in names.split("\n"):
            path = wanted.get(relative)
            if path is not None and path not in found and relative not in changed:
                found[path] = commit
    return found
