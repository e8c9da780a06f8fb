"""Session folders that lost their manifest ("orphans"): found, described, and rebuilt.

Every command finds a session by its ``session_manifest.md``: ``list`` reads only
manifests, ``validate`` and ``doctor`` walk the folders that hold one. A folder of
``{project}/sessions/`` that holds phase folders, history or any other file but no manifest
(deleted by hand, lost in a merge, or a link to a file that is gone) would be passed over
by all of them, its phases orphaned without a word. This module finds such a folder with
one listing of it (``find``, called only for a folder where no manifest was found, so a
tree of healthy sessions costs nothing more), says what it holds (``Orphan.issue``, the
error ``list`` warns of and ``validate`` reports), and works out the manifest its files
say (``rebuild``), which ``haytham doctor --fix`` writes.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path

from haytham.errors import HaythamError, Issue
from haytham.format import CHECKPOINT, ReadCache
from haytham.format.layout import (
    CHECKPOINT_FILE,
    MANIFEST_FILE,
    PHASE_DIR_PREFIX,
    PROJECT_FILE,
    SESSIONS_DIR,
    WORKFLOW_FILE,
)
from haytham.format.workflow import Workflow, load_workflow
from haytham.format.yamlfile import parse_yaml, read_yaml
from haytham.frozen import frozen
from haytham.records import PhaseCheckpoint, SessionManifest
from haytham.store import history
from haytham.store import progress as _progress
from haytham.store.clock import sort_time
from haytham.store.names import check_user_id

UNKNOWN_USER = "unknown"
"""The User ID of a rebuilt manifest when no ``project.yaml`` names the project's user."""
_SHOWN = 3
"""How many of an orphan's entries its message names."""


@frozen
class Orphan:
    """A session folder with no manifest to read, and what it holds."""

    directory: Path
    holds: tuple[str, ...]
    """The names in the folder (hidden ones left out), sorted."""
    link: str | None = None
    """Where ``session_manifest.md`` points when it is a symbolic link to nothing."""

    @property
    def manifest(self) -> Path:
        return self.directory / MANIFEST_FILE

    @property
    def ids(self) -> tuple[str, str]:
        """The project and session the folders name, which every command opens it by."""
        return self.directory.parent.parent.name, self.directory.name

    def describe(self) -> str:
        """What is wrong, without the path: ``does not exist, but the folder holds ...``."""
        if self.link is not None:
            return f"is a link to {self.link!r}, which does not exist"
        shown = ", ".join(self.holds[:_SHOWN])
        more = len(self.holds) - _SHOWN
        return f"does not exist, but the folder holds {shown}{f' and {more} more' if more > 0 else ''}"

    def issue(self) -> Issue:
        """The error ``list`` warns of and ``validate`` reports, at the missing manifest."""
        project, session = self.ids
        if self.link is not None:
            fix = "put the manifest back where the link points, or replace the link with it"
        else:
            fix = f"haytham doctor {project} {session} --fix rebuilds it from the session's files"
        return Issue(
            self.manifest,
            None,
            None,
            f"{self.describe()}: the session is invisible to list, status and resume; {fix}",
        )


def find(folder: str | os.PathLike[str]) -> Orphan | None:
    """The orphan at ``folder``, a folder of ``sessions/``, when it has no manifest file but
    holds something that is not hidden; None when it holds a manifest (even one that does
    not read: the readers report that one), nothing but hidden names (a lock, a temporary
    file: nothing of a person's), or cannot be listed. One listing of the folder."""
    try:
        with os.scandir(folder) as entries:
            found = {entry.name: entry for entry in entries if not entry.name.startswith(".")}
    except OSError:
        return None
    manifest = found.get(MANIFEST_FILE)
    link = None
    if manifest is not None:
        try:
            if not manifest.is_symlink() or os.path.exists(manifest.path):
                return None
            link = os.readlink(manifest.path)
        except OSError:
            return None
    if not found:
        return None
    return Orphan(Path(folder), tuple(sorted(found)), link)


def issues_of(parent: str, name: str) -> list[Issue]:
    """``[find(parent/name).issue()]``, or ``[]``: for a listing that found no manifest there."""
    orphan = find(os.path.join(parent, name))
    return [] if orphan is None else [orphan.issue()]


def under(root: Path, sessions: Collection[Path]) -> list[Orphan]:
    """The orphans among the folders where ``scan.session_dirs(root)`` looks for sessions
    (``root`` itself, or ``{root}/*/sessions/*`` and ``{root}/sessions/*``), given the
    session folders it found (``sessions``), which are not looked at again: one listing of
    each ``sessions/`` folder, and one of each folder in it that is not a session."""
    top = os.fspath(root)
    if root in sessions or os.path.isfile(os.path.join(top, MANIFEST_FILE)):
        return []
    if root.parent.name == SESSIONS_DIR:  # root is a session's folder
        orphan = find(top)
        return [] if orphan is None else [orphan]
    folders = [os.path.join(top, name, SESSIONS_DIR) for name in _folder_names(top)]
    found = []
    for folder in [*folders, os.path.join(top, SESSIONS_DIR)]:
        for name in _folder_names(folder):
            path = Path(folder, name)
            if path not in sessions and (orphan := find(path)) is not None:
                found.append(orphan)
    return found


def _folder_names(directory: str) -> list[str]:
    """The sorted names of the folders in ``directory`` that are not hidden ([] if none)."""
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


@frozen
class Rebuilt:
    """What ``rebuild`` made of an orphan's files: the manifest, or why there is none."""

    manifest: SessionManifest | None
    """The manifest the files say; None when they cannot tell the workflow."""
    how: str
    """Where each fact came from, and which got a default (or why nothing was made)."""


def rebuild(orphan: Orphan, workflows: Mapping[str, Workflow], now: str, cache: ReadCache | None) -> Rebuilt:
    """The manifest of ``orphan`` as its files say it, with ``how`` naming each source.

    The ids are the folders'; the workflow is the session's ``workflow.yaml``, else the known
    workflow and mode whose phase folders are exactly (else most closely) those present;
    the User ID is the one of the project's ``project.yaml``, else ``UNKNOWN_USER``; Created
    and Last Updated are the oldest and newest times of its history entries and checkpoints,
    else ``now``; History Head is its newest entry; the phase rows, Status, Current Phase and
    Metrics are derived from its checkpoints and reviews (``lifecycle.derive``), as every
    save derives them. Forked From is not kept anywhere else, so it is left empty.
    """
    directory = orphan.directory
    if orphan.link is not None:
        return Rebuilt(None, f"the manifest is a link to {orphan.link!r}: it is left as it is")
    chosen = _workflow(directory, orphan.holds, workflows)
    if isinstance(chosen, str):
        return Rebuilt(None, chosen)
    workflow, mode, source = chosen
    phases = workflow.phases_for(mode)
    checkpoints: dict[int, PhaseCheckpoint] = {}
    for phase in phases:
        if phase.directory in orphan.holds:
            found, _ = CHECKPOINT.read_path(directory / phase.directory / CHECKPOINT_FILE, cache=cache)
            if found is not None:
                checkpoints[phase.number] = found
    entries, _ = history.read_entries(directory, cache=cache)
    head = history.newest(entries, None)
    times = [e.timestamp for e in entries]
    times += [t for c in checkpoints.values() for t in (c.started, c.completed) if t]
    times.sort(key=sort_time)
    user, user_source = _user(directory.parent.parent)
    project, session = orphan.ids
    base = SessionManifest(
        session_id=session,
        project_id=project,
        user_id=user,
        workflow_type=workflow.name,
        execution_mode=mode,
        created=times[0] if times else now,
        last_updated=times[-1] if times else now,
        status="in_progress",
        phases=_progress.phase_rows(phases, {}),
        current=_progress.NOT_STARTED,
        metrics=_progress.metrics({}),
        workflow_fingerprint=workflow.fingerprint(),
        history_head=head.entry_id if head is not None else None,
    )
    view = _progress.view_of(directory, phases, checkpoints, cache)
    manifest = _progress.derive(base, phases, checkpoints, view)
    dated = (
        "Created and Last Updated from the oldest and newest times of its history and checkpoints"
        if times
        else "Created and Last Updated are the time of the repair (no history entry or checkpoint has a time)"
    )
    how = "; ".join(
        (
            f"workflow {workflow.name} ({mode} mode) from {source}",
            f"User ID {user!r} {user_source}",
            dated,
            "phases, Status and Metrics from its checkpoints and reviews",
            "Forked From, if it had one, cannot be recovered",
        )
    )
    return Rebuilt(manifest, how)


def _workflow(
    directory: Path, holds: tuple[str, ...], workflows: Mapping[str, Workflow]
) -> tuple[Workflow, str, str] | str:
    """The workflow and mode the session ran and where that was found, or why it cannot be
    told. A session's phase folders are made for its mode when it is created, so the mode
    whose folders are exactly those present is the one; else the smallest that has them."""
    present = {name for name in holds if name.startswith(PHASE_DIR_PREFIX)}
    if WORKFLOW_FILE in holds:
        try:
            candidates = [load_workflow(directory / WORKFLOW_FILE)]
        except HaythamError as error:
            return f"its {WORKFLOW_FILE} does not read ({error}), so its workflow is unknown"
        source = WORKFLOW_FILE
    elif not present:
        return "it holds no phase folder and no workflow.yaml, so its workflow is unknown"
    else:
        candidates = list(workflows.values())
        source = "its phase folders"
    fits = [
        (len(folders - present), order, workflow, mode)
        for order, (workflow, mode) in enumerate((w, m) for w in candidates for m in w.modes)
        if present <= (folders := {phase.directory for phase in workflow.phases_for(mode)})
    ]
    if not fits:
        names = ", ".join(sorted(present))
        known = f"workflow {candidates[0].name}" if source == WORKFLOW_FILE else "known workflow"
        return f"no mode of a {known} has the phase folders {names}, so its workflow is unknown"
    _, _, workflow, mode = min(fits, key=lambda fit: fit[:2])
    return workflow, mode, source


def _user(project_dir: Path) -> tuple[str, str]:
    """The project's user as its ``project.yaml`` names it, and where it came from."""
    path = project_dir / PROJECT_FILE
    try:
        _, data = parse_yaml(read_yaml(path), path)
        user = check_user_id(data.get("user_id") if isinstance(data, dict) else None)
    except (HaythamError, OSError):  # none, or one that does not read: nobody to name
        return UNKNOWN_USER, f"(no {PROJECT_FILE} names a user)"
    return user, f"from {PROJECT_FILE}"
