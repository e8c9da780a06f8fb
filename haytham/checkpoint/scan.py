"""Whole-tree operations: list the sessions under a base directory, validate any path.

Listing reads only manifests, so it stays cheap for thousands of sessions; validation
accepts what a linter would: the base dir, a project, a session or a single file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

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
