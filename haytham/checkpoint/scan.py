"""Whole-tree operations: list the sessions under a base directory, validate any path.

Listing reads only manifests, so it stays cheap for thousands of sessions; validation
accepts what a linter would: the base dir, a project, a session or a single file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from haytham._names import check_inside
from haytham.documents import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.errors import Issue

MANIFEST_FILE = "session_manifest.md"


@dataclass(frozen=True)
class SessionSummary:
    """One line of ``haytham list``: a session as its manifest describes it."""

    project_id: str
    session_id: str
    user_id: str
    workflow_type: str
    execution_mode: str
    status: str
    current_phase: int
    current_phase_name: str
    created: str
    last_updated: str
    total_tokens: int
    total_cost: float
    path: Path


def session_dirs(root: Path) -> Iterator[Path]:
    """Session directories under ``root``: ``{project}/sessions/{session}`` with a manifest."""
    if (root / MANIFEST_FILE).is_file():
        yield root
        return
    patterns = ("*/sessions/*", "sessions/*")
    for pattern in patterns:
        for manifest in sorted(root.glob(f"{pattern}/{MANIFEST_FILE}")):
            yield manifest.parent


def list_sessions(
    base_dir: Path,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
) -> tuple[list[SessionSummary], list[Issue]]:
    """Summaries of the sessions under ``base_dir``, newest update first, and unreadable ones."""
    root = base_dir / project_id if project_id else base_dir
    summaries: list[SessionSummary] = []
    issues: list[Issue] = []
    for directory in session_dirs(root):
        manifest, found = MANIFEST.read_path(directory / MANIFEST_FILE)
        if manifest is None:
            issues += found
            continue
        if (user_id and manifest.user_id != user_id) or (status and manifest.status != status):
            continue
        summaries.append(
            SessionSummary(
                project_id=manifest.project_id,
                session_id=manifest.session_id,
                user_id=manifest.user_id,
                workflow_type=manifest.workflow_type,
                execution_mode=manifest.execution_mode,
                status=manifest.status,
                current_phase=manifest.current.number,
                current_phase_name=manifest.current.name,
                created=manifest.created,
                last_updated=manifest.last_updated,
                total_tokens=manifest.metrics.total_tokens,
                total_cost=manifest.metrics.total_cost,
                path=directory,
            )
        )
    summaries.sort(key=lambda s: (s.last_updated, s.project_id, s.session_id), reverse=True)
    return summaries, issues


def kind_of(path: Path) -> DocumentFormat[object] | None:
    """The document kind of a session file, judged by its name and place; None if not one."""
    if path.suffix != ".md" or path.name.startswith("."):
        return None
    if path.name == MANIFEST_FILE:
        return MANIFEST  # type: ignore[return-value]
    if path.parent.name == "history":
        return HISTORY_ENTRY  # type: ignore[return-value]
    if not (path.parent.name.startswith("phase_") or path.parent.parent.name == "attempts"):
        return None
    if path.name == "checkpoint.md":
        return CHECKPOINT  # type: ignore[return-value]
    if path.name == "user_feedback.md":
        return FEEDBACK  # type: ignore[return-value]
    return AGENT_OUTPUT  # type: ignore[return-value]


def session_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every session file under ``paths`` (a file is taken as it is), each once, in order."""
    seen: set[Path] = set()
    for path in paths:
        candidates = [path] if path.is_file() else sorted(path.rglob("*.md"))
        for candidate in candidates:
            if candidate not in seen and kind_of(candidate) is not None:
                seen.add(candidate)
                yield candidate


def check_below(base_dir: Path, path: Path) -> Path:
    """``check_inside(base_dir, path)`` for a ``path`` built as ``base_dir`` joined with plain
    names: one ``lstat`` per name below ``base_dir`` instead of resolving every component of
    both paths. When none of those names is a symlink the path resolves to the resolved base
    directory plus the names, so it is inside; otherwise ``check_inside`` itself decides."""
    base_parts = base_dir.parts
    parts = path.parts
    if parts[: len(base_parts)] != base_parts or ".." in parts:
        return check_inside(base_dir, path)
    current = os.fspath(base_dir)
    for name in parts[len(base_parts) :]:
        current = os.path.join(current, name)
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            continue  # resolving goes on with the name as it is, as realpath does
        if stat.S_ISLNK(mode):
            return check_inside(base_dir, path)
    return path


class PhaseDirs:
    """A session's phase directories, each checked as ``check_inside`` checks it, without
    resolving the session directory again for every phase.

    ``check_inside(base, session / name)`` resolves every component of the path. When ``name``
    is one plain component that is not a symlink, the result is the resolved session
    directory plus ``name``, so it is inside ``base`` exactly when the session directory is;
    anything else (a symlink, an odd name, a session outside) takes ``check_inside`` itself.
    ``session_checked`` says the caller has just checked the session directory itself.
    """

    def __init__(self, base_dir: Path, session_dir: Path, *, session_checked: bool = False) -> None:
        self.base_dir = base_dir
        self.session_dir = session_dir
        if session_checked:
            self._inside = True
        else:
            root = base_dir.resolve()
            home = session_dir.resolve()
            self._inside = home == root or root in home.parents

    def get(self, name: str) -> tuple[Path, bool]:
        """The phase directory ``name`` (checked) and whether it is an existing directory."""
        path = self.session_dir / name
        plain = name not in ("", ".", "..") and "/" not in name and (os.altsep or "/") not in name
        if self._inside and plain:
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return path, False
            if not stat.S_ISLNK(mode):
                return path, stat.S_ISDIR(mode)
        checked = check_inside(self.base_dir, path)
        return checked, checked.is_dir()


OWN_FILES = frozenset({"checkpoint.md", "user_feedback.md", MANIFEST_FILE})


def _is_agent_file_name(name: str) -> bool:
    return name.endswith(".md") and not name.startswith(".") and name not in OWN_FILES


def agent_files(directory: Path, order: Sequence[str] = ()) -> list[Path]:
    """Agent output files of a phase directory: ``*.md`` except the phase's own and hidden
    files, those named in ``order`` first, then the rest by name.

    The same list as ``checkpoint_manager._agent_files``, from one ``os.scandir`` (whose
    entries know their type) instead of a ``stat`` per file.
    """
    rank = {name: index for index, name in enumerate(order)}
    with os.scandir(directory) as entries:
        names = [
            e.name
            for e in entries
            if e.name.endswith(".md")
            and not e.name.startswith(".")
            and e.name not in OWN_FILES
            and e.is_file()
        ]
    names.sort(key=lambda n: (rank.get(n[:-3], len(rank)), n))
    return [directory / name for name in names]
