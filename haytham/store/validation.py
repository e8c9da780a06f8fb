"""Validation of a session's files, like a linter: every problem, located, none raised.

``session_issues`` checks every file of one session (manifest, checkpoints, agent outputs,
feedback, archived attempts, history) and where the manifest disagrees with the
checkpoints; ``phase_issues`` the files of one phase. ``CheckpointManager.validate_paths``
runs them over any paths (``session_files`` finds the files), and ``validate_sessions``
remembers each session's result in the base directory's index while none of its files
changes, so validating a tree of thousands of unchanged sessions reads none of them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from haytham.errors import Issue
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST, ReadCache
from haytham.format.guard import guard_tree
from haytham.format.layout import ATTEMPTS_DIR, CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.records import PhaseCheckpoint, SessionManifest, UserFeedback
from haytham.store import history, journal, lifecycle
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.store.disagreements import disagreements, folder_disagreements
from haytham.store.fs import LOCK_NAME, TMP_SUFFIX
from haytham.store.phase_files import Listed, agent_files, agents_among, surely_absent
from haytham.store.session_files import count_session_files, kind_named, kind_of

WorkflowOf = Callable[[Path, SessionManifest], Workflow]
"""How the manager finds a session's workflow: its own copy, else the registered one."""


def interrupted_issues(directory: Path) -> list[Issue]:
    """A warning when an operation was killed after its commit point in ``directory``: until
    the next write (or ``haytham doctor --fix``) rolls it forward, a reader may see it half
    done. A record cut short before its commit point is nothing a reader sees, so no issue."""
    found = journal.pending(directory)
    if found is None or found.operation is None:
        return []
    steps = len(found.steps)
    message = (
        f"an interrupted {found.operation} is not finished yet ({steps} step{'s' * (steps != 1)}): "
        "the next write to this session, or haytham doctor --fix, finishes it"
    )
    return [Issue(found.record, None, None, message, severity="warning")]


def session_issues(
    directory: Path, workflow_of: WorkflowOf, *, cache: ReadCache | None = None
) -> list[Issue]:
    """Every problem in every file of the session at ``directory`` (which has a manifest)."""
    manifest_path = directory / MANIFEST_FILE
    manifest, issues = MANIFEST.read_path(manifest_path, cache=cache)
    if manifest is None:
        return issues
    issues += folder_disagreements(manifest_path, manifest)
    issues += interrupted_issues(directory)
    workflow = workflow_of(directory, manifest)
    phases = workflow.phases_for(manifest.execution_mode)
    checkpoints: dict[int, PhaseCheckpoint] = {}
    unreadable: set[int] = set()
    reviews: dict[int, _progress.Review] = {}
    review_problems: list[PhaseDefinition] = []
    reviewed: set[int] = set()
    present = _folder_names(directory)
    listed: dict[str, tuple[tuple[str, bool], ...]] = {}
    known: dict[str, Mapping[str, str]] = {}
    for phase in phases:
        if present is not None and surely_absent(phase.directory, present):
            continue  # a phase not run yet: its folder would be looked for in vain
        files = phase_files(directory / phase.directory, phase, require_checkpoint=False, cache=cache)
        if files.markdown is not None:
            listed[phase.directory] = files.markdown
        known[phase.directory] = files.outputs
        issues += files.issues
        if files.checkpoint is not None:
            checkpoints[phase.number] = files.checkpoint
        elif files.has_checkpoint:
            unreadable.add(phase.number)
        if files.feedback is not None:
            reviews[phase.number] = (lifecycle.verdict(files.feedback), None)
        elif files.has_feedback:
            review_problems.append(phase)  # read again by the progress code, which words the problem
        if files.feedback_is_file:
            reviewed.add(phase.number)
    issues += _outside_mode(directory, workflow, manifest, cache)
    if review_problems:
        reviews.update(_progress.read_reviews(directory, tuple(review_problems), cache))
    # Validation parses every output anyway (through ``cache``), and its result is remembered
    # per session in the index: no digest is remembered here, so its work is the same each time.
    # Each phase's outputs are taken from the listing and the reads above, not read again.
    folders = None if present is None else Listed(present, listed)
    outputs = _progress.outputs_now(
        directory, phases, checkpoints, None, reads=cache, listed=folders, known=known
    )
    view = lifecycle.derive(_progress.phase_facts(phases, checkpoints, reviews, outputs))
    derived = _progress.derive(manifest, phases, checkpoints, view)
    unreadable |= {view.number for view in view.phases if view.problem is not None}
    issues += disagreements(manifest_path, manifest, derived, unreadable, frozenset(reviewed))
    issues += stale_issues(directory, phases, view)
    issues += edited_issues(directory, view)
    issues += history.read_entries(directory, cache=cache)[1]
    return issues


def stale_issues(
    directory: Path, phases: tuple[PhaseDefinition, ...], view: lifecycle.SessionView
) -> list[Issue]:
    """A warning at the checkpoint of every stale phase, naming the phases it was built on."""
    issues = []
    for phase in phases:
        found = view.phase(phase.number)
        if found.state != "stale":
            continue
        issues.append(
            Issue(
                directory / phase.directory / CHECKPOINT_FILE,
                None,
                "Built From",
                f"phase {phase.number} is {found.describe()}; run haytham resume to run it again",
                severity="warning",
            )
        )
    return issues


EDITED_FIELD = "Output"
"""The field of ``edited_issues``: the agent output's Output section, which a person changed."""
_EDITED_SINCE = " changed since phase "


def is_edited_issue(issue: Issue) -> bool:
    """Whether ``issue`` is one of ``edited_issues`` (the doctor reports those itself)."""
    return issue.field == EDITED_FIELD and issue.severity == "warning" and _EDITED_SINCE in issue.message


def edited_issues(directory: Path, view: lifecycle.SessionView) -> list[Issue]:
    """A warning at every output file changed by hand since its phase completed
    (``lifecycle.EDITED``): the correction is kept as the phase's output, and the phases
    built on the old outputs are stale, which it names."""
    issues = []
    for found in view.phases:
        later = [v.number for v in view.phases if found.number in v.stale_because]
        consequence = (
            f"phase{'s' * (len(later) > 1)} {', '.join(map(str, later))} "
            f"built on the old outputs {'are' if len(later) > 1 else 'is'} stale; run haytham resume to run "
            f"{'them' if len(later) > 1 else 'it'} again"
            if later
            else "no later phase was built on the old outputs"
        )
        for name in found.edited:
            issues.append(
                Issue(
                    directory / name,
                    None,
                    EDITED_FIELD,
                    f"{name}{_EDITED_SINCE}{found.number} completed (its checkpoint recorded other "
                    f"outputs): the correction is kept as phase {found.number}'s output; {consequence}",
                    severity="warning",
                )
            )
    return issues


def _outside_mode(
    directory: Path, workflow: Workflow, manifest: SessionManifest, cache: ReadCache | None
) -> list[Issue]:
    """A warning for each phase folder of the workflow that the session's mode does not run
    (the first implementation saved phases 4 and 5 of mvp sessions), and its files' problems.

    Such a phase is read (``load_checkpoint`` and friends reach it) but is not part of the
    session's progress: the manifest has no row for it."""
    selected = set(workflow.phases_for(manifest.execution_mode))
    issues: list[Issue] = []
    for phase in workflow.phases:
        if phase in selected:
            continue
        folder = directory / phase.directory
        if not folder.is_dir():
            continue
        issues.append(
            Issue(
                folder,
                None,
                None,
                f"phase {phase.number} ({phase.name}) is not run in {manifest.execution_mode!r} mode, "
                "so it is not part of the session's progress; its files are still read",
                severity="warning",
            )
        )
        issues += phase_issues(folder, phase, require_checkpoint=False, cache=cache)
    return issues


class PhaseFiles(NamedTuple):
    """What checking a phase's files found: the problems, and what the session check reuses
    so that it reads no file twice."""

    issues: list[Issue]
    checkpoint: PhaseCheckpoint | None
    """The checkpoint, when there is one and it could be read."""
    has_checkpoint: bool
    """Whether ``checkpoint.md`` exists (read or not)."""
    feedback: UserFeedback | None
    """The review, when there is one and it could be read."""
    has_feedback: bool
    """Whether ``user_feedback.md`` exists."""
    feedback_is_file: bool
    """Whether ``user_feedback.md`` is a file (or a link to one)."""
    markdown: tuple[tuple[str, bool], ...] | None = ()
    """The folder's ``*.md`` entries (hidden ones aside), each with whether it is a folder
    (for ``phase_files.Listed``); None when it could not be listed."""
    outputs: Mapping[str, str] = MappingProxyType({})
    """The content of each agent output read, by file name."""


def phase_issues(
    directory: Path, phase: PhaseDefinition, *, require_checkpoint: bool, cache: ReadCache | None = None
) -> list[Issue]:
    """Every problem in the files of ``phase`` at ``directory``, its archived attempts included."""
    return phase_files(directory, phase, require_checkpoint=require_checkpoint, cache=cache).issues


def _listing(directory: Path) -> dict[str, os.DirEntry[str]] | None:
    """The entries of ``directory`` by name ({} when there is no such folder); None when it
    cannot be listed for another reason (the caller then asks path by path, as before)."""
    try:
        with os.scandir(directory) as entries:
            return {entry.name: entry for entry in entries}
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        return None


def _folder_names(directory: Path) -> frozenset[str] | None:
    """The casefolded names in ``directory``, or None when it cannot be listed."""
    try:
        return frozenset(name.casefold() for name in os.listdir(directory))
    except OSError:
        return None


def _exists(entries: dict[str, os.DirEntry[str]] | None, path: Path) -> bool:
    """``path.exists()``, answered from the folder's listing where it can be."""
    entry = None if entries is None else entries.get(path.name)
    if entries is None or (entry is not None and entry.is_symlink()):
        return path.exists()
    return entry is not None


def _is_file(entries: dict[str, os.DirEntry[str]] | None, path: Path) -> bool:
    """``path.is_file()``, answered from the folder's listing where it can be."""
    if entries is None:
        return path.is_file()
    entry = entries.get(path.name)
    try:
        return entry is not None and entry.is_file()
    except OSError:
        return False


def phase_files(
    directory: Path, phase: PhaseDefinition, *, require_checkpoint: bool, cache: ReadCache | None = None
) -> PhaseFiles:
    """``phase_issues`` with what was read on the way; the folder is listed once."""
    issues: list[Issue] = []
    entries = _listing(directory)
    if entries == {} and not require_checkpoint:  # no folder (a phase not run yet): nothing to check
        return PhaseFiles(issues, None, False, None, False, False)
    checkpoint_path = directory / CHECKPOINT_FILE
    checkpoint = None
    has_checkpoint = _exists(entries, checkpoint_path)
    if has_checkpoint:
        checkpoint, found = CHECKPOINT.read_path(checkpoint_path, cache=cache)
        issues += found
        if checkpoint is not None and checkpoint.phase_number != phase.number:
            issues.append(
                Issue(
                    checkpoint_path,
                    None,
                    "Phase Number",
                    f"{checkpoint.phase_number} is not this directory's phase {phase.number}",
                )
            )
    elif require_checkpoint:
        issues.append(Issue(checkpoint_path, None, None, "checkpoint.md is missing"))
    if entries is None:
        paths = agent_files(directory) if directory.is_dir() else []
    else:
        paths = agents_among(directory, list(entries.values()))
    outputs: dict[str, str] = {}
    for path in paths:
        output, found = AGENT_OUTPUT.read_path(path, cache=cache)
        if output is not None:
            outputs[path.name] = output.content
        issues += found
        if output is not None and output.agent_name != path.stem:
            issues.append(
                Issue(
                    path,
                    None,
                    "Agent",
                    f"{output.agent_name!r} does not match the file name {path.name!r}",
                )
            )
    feedback_path = directory / FEEDBACK_FILE
    feedback = None
    has_feedback = _exists(entries, feedback_path)
    if has_feedback:
        feedback, found = FEEDBACK.read_path(feedback_path, cache=cache)
        issues += found
    if entries is None or ATTEMPTS_DIR in entries:
        archived = directory / ATTEMPTS_DIR
        for path in sorted(archived.glob("*/*.md")) if archived.is_dir() else ():
            kind = kind_of(path)
            if kind is not None:
                issues += kind.read_path(path, cache=cache)[1]
    markdown = (
        None
        if entries is None
        else tuple(
            (name, entry.is_dir(follow_symlinks=False))
            for name, entry in entries.items()
            if name.endswith(".md") and not name.startswith(".")
        )
    )
    return PhaseFiles(
        issues,
        checkpoint,
        has_checkpoint,
        feedback,
        has_feedback,
        has_feedback and _is_file(entries, feedback_path),
        markdown,
        outputs,
    )


def validate_sessions(
    directories: Iterable[Path],
    validate: Callable[[Path], list[Issue]],
    workflows: str,
    *,
    progress: Callable[[int], None] | None = None,
    count: bool = False,
) -> tuple[list[Issue], int]:
    """``validate(directory)`` for each session directory, in order, remembered in the
    index of its base directory while none of the session's files changes.

    ``workflows`` names the workflow definitions the validation used (a fingerprint): a
    result is used again only with the same definitions. A session holding a symlink is
    always validated afresh. Each base directory's index is opened and read once for the
    whole run; ``progress(done)`` is called after each session. Returns the issues and,
    with ``count``, the number of session files in the sessions
    (``session_files.count_session_files``; else 0), counted on the walk that keys a
    session's result (a session without one is walked for the count alone), so a warm run
    walks the tree once.
    """
    directories = list(directories)
    bases: dict[Path, list[Path]] = {}
    for directory in directories:
        bases.setdefault(_base_of(directory), []).append(directory)
    for base in bases:
        guard_tree(base)  # a session's files are read inside its base directory only
    indexes = {
        base: _index.Index.open(base, create=len(group) >= _index.INDEX_MIN_SESSIONS)
        for base, group in bases.items()
    }
    issues: list[Issue] = []
    files = 0
    known = {base: index.entries("validate") for base, index in indexes.items() if index is not None}
    learnt: dict[Path, list[tuple[str, str, str]]] = {base: [] for base in known}
    for done, directory in enumerate(directories, 1):
        found, counted = _validate_one(directory, validate, workflows, indexes, known, learnt, count)
        issues += found
        files += counted
        if progress is not None:
            progress(done)
    for base, index in indexes.items():
        if index is not None:
            seen = {os.fspath(d) for d in bases[base]}
            bulk = len(seen) >= _index.INDEX_MIN_SESSIONS  # a big run also forgets sessions that are gone
            gone = [
                name for name in known.get(base, {}) if bulk and name not in seen and not os.path.isdir(name)
            ]
            index.store("validate", learnt.get(base, ()), forget=gone)
            index.close()
    return issues, files


def _validate_one(
    directory: Path,
    validate: Callable[[Path], list[Issue]],
    workflows: str,
    indexes: dict[Path, _index.Index | None],
    known: dict[Path, dict[str, tuple[str, str]]],
    learnt: dict[Path, list[tuple[str, str, str]]],
    count: bool,
) -> tuple[list[Issue], int]:
    """One session of ``validate_sessions``: remembered, or validated (and learnt); with
    the number of its session files when ``count`` (else 0)."""
    base = _base_of(directory)
    index = indexes[base]
    name = os.fspath(directory)
    state = _session_state(name, workflows) if index is not None else None
    counted = state[2] if state is not None and count else None
    if counted is None:
        counted = count_session_files([directory]) if count else 0
    if index is not None and state is not None:
        kept = known[base].get(name)
        if kept is not None and kept[0] == state[0]:
            return _index.issues_from_json(kept[1]), counted
    found = validate(directory)
    if index is not None and state is not None and index.settled(state[1]):
        learnt[base].append((name, state[0], _index.issues_to_json(found)))
    return found, counted


def _base_of(session_dir: Path) -> Path:
    """The base directory of ``{base}/{project}/sessions/{session}``."""
    parents = session_dir.parents
    return parents[2] if len(parents) > 2 else session_dir


def _session_state(directory: str, workflows: str) -> tuple[str, int, int | None] | None:
    """A digest of every file of a session directory (name, device, inode, size, times),
    the newest change time among them and the number of session files among them (as
    ``count_session_files([directory])`` counts them; None when a folder passed over here
    might hold one); None when the directory holds a symlink."""
    entries: list[tuple[str, str]] = []
    newest = 0
    counted: int | None = 0
    top = os.path.split(directory)
    pending = [("", directory, top[1], os.path.basename(top[0]))]
    while pending:
        relative, path, folder, grandparent = pending.pop()
        with os.scandir(path) as listing:
            for entry in listing:
                name = entry.name
                if name == LOCK_NAME or (name.startswith(".") and name.endswith(TMP_SUFFIX)):
                    if entry.is_dir() and counted is not None:
                        counted = None  # not walked here; the count's walk enters it
                    continue  # the lock and temporary files are never read by a validation
                if entry.is_symlink():
                    return None
                if counted is not None and kind_named(name, folder, grandparent) is not None:
                    counted += 1
                child = f"{relative}/{name}"
                if entry.is_dir():
                    entries.append((child, "dir"))
                    pending.append((child, entry.path, name, folder))
                    continue
                st = entry.stat()
                entries.append((child, _index.identity(st)))
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    entries.sort()
    digest = hashlib.sha256(f"{workflows}\n{entries!r}".encode()).hexdigest()
    return digest, newest, counted
