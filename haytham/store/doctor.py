"""The doctor: compare a session's manifest with the files on disk, and repair what is safe.

Findings are data, so a CLI can list them and a runner can decide; ``fix=True`` only
rebuilds the manifest from the phase files and removes temporary leftovers. It never
deletes or rewrites a person's content.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from haytham.errors import Issue
from haytham.format import CHECKPOINT, MANIFEST
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE, PHASE_DIR_PREFIX
from haytham.store import fs as _storage
from haytham.store import progress as _progress

if TYPE_CHECKING:
    from haytham.store.manager import CheckpointManager

FindingKind = Literal[
    "checkpoint_not_in_manifest",
    "row_without_checkpoint",
    "manifest_out_of_date",
    "unlisted_agent_file",
    "unexpected_directory",
    "temporary_leftover",
    "invalid_file",
    "stale_phase",
]
FIXABLE: frozenset[str] = frozenset(
    {"checkpoint_not_in_manifest", "row_without_checkpoint", "manifest_out_of_date", "temporary_leftover"}
)
"""Kinds that ``fix=True`` repairs; the others need a person's decision."""


@dataclass(frozen=True)
class Finding:
    """One way the session on disk is not what its manifest says, or not clean."""

    kind: FindingKind
    path: Path
    message: str
    fixed: bool = False
    """True when ``check(fix=True)`` repaired it."""

    def __str__(self) -> str:
        state = " (fixed)" if self.fixed else ""
        return f"{self.path}: {self.kind}: {self.message}{state}"


def check_session(manager: CheckpointManager, project_id: str, session_id: str, fix: bool) -> list[Finding]:
    """The findings for one session; with ``fix`` the safe ones are repaired under the lock."""
    directory = manager.session_dir(project_id, session_id)
    manifest_path = directory / MANIFEST_FILE
    findings = [
        Finding("invalid_file", issue.path or manifest_path, _describe(issue))
        for issue in manager.validate_session(project_id, session_id)
        if not _is_disagreement(issue.path, manifest_path, issue.field) and issue.field != "Built From"
    ]
    manifest, _ = MANIFEST.read_path(manifest_path)
    if manifest is None:
        return findings
    phases = manager.session_workflow(project_id, session_id).phases_for(manifest.execution_mode)
    checkpoints = {
        phase.number: found
        for phase in phases
        if (found := CHECKPOINT.read_path(directory / phase.directory / CHECKPOINT_FILE)[0]) is not None
    }
    view = _progress.view_of(directory, phases, checkpoints)
    for phase in phases:
        phase_dir = directory / phase.directory
        checkpoint, _ = CHECKPOINT.read_path(phase_dir / CHECKPOINT_FILE)
        row = next((r for r in manifest.phases if r.number == phase.number), None)
        row_status = row.status if row else "missing"
        if checkpoint is not None:
            state = view.phase(phase.number).state
            if row_status != state:
                findings.append(
                    Finding(
                        "checkpoint_not_in_manifest",
                        phase_dir / CHECKPOINT_FILE,
                        f"phase {phase.number}'s files say {state!r}, the manifest {row_status!r}",
                    )
                )
            if state == "stale":
                findings.append(
                    Finding(
                        "stale_phase",
                        phase_dir / CHECKPOINT_FILE,
                        f"phase {phase.number} is {view.phase(phase.number).describe()}: "
                        "run haytham resume to run it again",
                    )
                )
            listed = {run.output_file for run in checkpoint.agents}
            for path in sorted(phase_dir.glob("*.md")):
                if path.name not in listed | {CHECKPOINT_FILE, FEEDBACK_FILE}:
                    findings.append(
                        Finding(
                            "unlisted_agent_file",
                            path,
                            f"{path.name} is not listed in phase {phase.number}'s checkpoint",
                        )
                    )
        elif not (phase_dir / CHECKPOINT_FILE).exists() and row_status not in ("pending", "missing"):
            findings.append(
                Finding(
                    "row_without_checkpoint",
                    manifest_path,
                    f"phase {phase.number} is {row_status!r} in the manifest but has no checkpoint.md",
                )
            )
    derived = _progress.derive(manifest, phases, checkpoints, view)
    if not _progress.same_progress(manifest, derived) and not any(
        f.kind in ("checkpoint_not_in_manifest", "row_without_checkpoint") for f in findings
    ):
        findings.append(
            Finding(
                "manifest_out_of_date",
                manifest_path,
                "Status, Current Phase or Metrics disagree with the checkpoints",
            )
        )
    expected = {p.directory for p in phases}
    for path in sorted(directory.iterdir()):
        if path.is_dir() and path.name.startswith(PHASE_DIR_PREFIX) and path.name not in expected:
            findings.append(
                Finding(
                    "unexpected_directory",
                    path,
                    f"{path.name} is not a phase of the session's {manifest.execution_mode!r} mode",
                )
            )
    for folder in [directory, *(directory / d for d in sorted(expected))]:
        for leftover in _storage.temporary_leftovers(folder):
            findings.append(Finding("temporary_leftover", leftover, "left by a writer that was killed"))
    if fix and any(f.kind in FIXABLE for f in findings):
        manager.repair(project_id, session_id)
        findings = [replace(f, fixed=f.kind in FIXABLE) for f in findings]
    return findings


def _is_disagreement(path: Path | None, manifest_path: Path, field: str | None) -> bool:
    """validate_session's manifest-versus-checkpoint issues; the doctor reports those itself."""
    return path == manifest_path and field in ("Phase Status", "Status", "Current Phase", "Metrics")


def _describe(issue: Issue) -> str:
    """The issue without its path (the finding carries it): ``line 4: Reviewed: ...``."""
    return (
        str(Issue(None, None, issue.field, issue.message))
        if issue.line is None
        else (f"line {issue.line}: {Issue(None, None, issue.field, issue.message)}")
    )
