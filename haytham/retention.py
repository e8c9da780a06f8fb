"""Retention: remove old sessions and old attempts by rule, never what is still in use.

A ``RetentionPolicy`` says how much to keep; ``cleanup`` first plans what the rules select,
then (unless it is a dry run) removes exactly that plan, so a dry run lists what the real
run removes. Two things are never removed: the latest attempt of a phase (it lives in the
phase directory itself, only ``attempts/{k}/`` are candidates), and anything of a session
that is not finished, unless the policy says ``include_in_progress``.

A session's state is what its files say now (``CheckpointManager.state``: the lifecycle over
its checkpoints and review files), never its manifest's Status, which a review written by
hand or brought by ``git pull`` does not change. Finished means completed or failed. A
session awaiting review is not finished: a person is about to act on it (approve it, or send
a phase back, which the next run reads with the earlier attempts), so it is kept as one in
progress is.

Every removal happens under the session's lock. A session is first renamed to a hidden
``.{name}.removing`` in the same folder (one atomic step, so no reader ever sees half of it)
and its manifest unlinked, then deleted. The rename is the removal's commit point (see
docs/architecture.md, "Multi-file changes"): a leftover of a cleanup that was killed half-way
is finished by the next real run or by ``haytham doctor --fix``, and is never listed.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haytham.errors import HaythamError, InvalidArgumentError, ProjectNotFoundError
from haytham.format import CHECKPOINT, MANIFEST
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    MANIFEST_FILE,
    PHASE_DIR_PREFIX,
    REMOVING_SUFFIX,
    SESSIONS_DIR,
)
from haytham.format.layout import PHASE_DIR as _PHASE_DIR
from haytham.store import fs as _storage
from haytham.store.clock import parse_timestamp
from haytham.store.events import Event
from haytham.store.names import check_user_id
from haytham.store.scan import SessionSummary, list_sessions

if TYPE_CHECKING:
    from haytham.store.manager import CheckpointManager

RemovalKind = Literal["attempt", "session"]
Rule = Literal[
    "max_attempts_per_phase", "max_sessions_per_project", "max_sessions_per_user", "max_age_days", "leftover"
]
FINISHED = frozenset({"completed", "failed"})
"""The session states the rules may remove without ``include_in_progress``; every other
(``in_progress``, ``awaiting_review``) is unfinished."""
UNFINISHED_WORDS = {"awaiting_review": "awaits review"}
"""How a kept session's state is said (default: ``is in progress``)."""


@dataclass(frozen=True)
class RetentionPolicy:
    """How much to keep. ``None`` switches a rule off; the default policy removes nothing."""

    max_attempts_per_phase: int | None = None
    """Keep the newest N attempts of each phase, the current one included (N >= 1)."""
    max_sessions_per_project: int | None = None
    """Keep the N most recently created sessions of each project."""
    max_sessions_per_user: int | None = None
    """Keep the N most recently created sessions of each user, across projects."""
    max_age_days: float | None = None
    """Remove sessions whose Last Updated is more than N days ago."""
    only_finished: bool = True
    """The age rule removes only completed or failed sessions, even with ``include_in_progress``."""
    include_in_progress: bool = False
    """Let the rules remove unfinished sessions (in progress or awaiting review), and old
    attempts of their phases."""

    def __post_init__(self) -> None:
        for name, least in (
            ("max_attempts_per_phase", 1),
            ("max_sessions_per_project", 0),
            ("max_sessions_per_user", 0),
        ):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
                raise InvalidArgumentError(f"{name} {value!r} is not a whole number >= {least}", field=name)
        age = self.max_age_days
        if age is not None and (
            not isinstance(age, (int, float)) or isinstance(age, bool) or not 0 <= age < math.inf
        ):
            raise InvalidArgumentError(
                f"max_age_days {age!r} is not a finite number of days >= 0", field="max_age_days"
            )
        for name in ("only_finished", "include_in_progress"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(
                    f"{name} must be True or False, got {getattr(self, name)!r}", field=name
                )

    @property
    def is_empty(self) -> bool:
        """True when no rule is switched on (such a policy never removes anything)."""
        return (
            self.max_attempts_per_phase is None
            and self.max_sessions_per_project is None
            and self.max_sessions_per_user is None
            and self.max_age_days is None
        )


@dataclass(frozen=True)
class Removal:
    """One directory that a cleanup removes (or, in a dry run, would remove), and why."""

    kind: RemovalKind
    path: Path
    reason: str
    """A sentence for people: ``last updated 2024-11-24, more than 30 days ago``."""
    rule: Rule
    """The policy field that selected it (``leftover`` for an interrupted cleanup's debris)."""
    project_id: str
    session_id: str
    phase: int | None = None
    attempt: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys."""
        return {
            "kind": self.kind,
            "path": str(self.path),
            "reason": self.reason,
            "rule": self.rule,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "phase": self.phase,
            "attempt": self.attempt,
        }


@dataclass(frozen=True)
class Skipped:
    """Something a rule selected but that was kept: in progress, unreadable or just changed."""

    path: Path
    reason: str
    project_id: str | None = None
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys."""
        return {
            "path": str(self.path),
            "reason": self.reason,
            "project_id": self.project_id,
            "session_id": self.session_id,
        }


@dataclass(frozen=True)
class CleanupReport:
    """What a cleanup removed, or in a dry run exactly what the real run would remove."""

    removed: list[Removal]
    dry_run: bool
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON data with stable keys."""
        return {
            "dry_run": self.dry_run,
            "removed": [r.to_dict() for r in self.removed],
            "skipped": [s.to_dict() for s in self.skipped],
        }


def cleanup(
    manager: CheckpointManager,
    policy: RetentionPolicy,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> CleanupReport:
    """Apply ``policy`` to the sessions under ``manager.base_dir`` (one project's, one user's).

    Session rules: the age rule removes sessions last updated more than ``max_age_days``
    before ``now`` (default: the manager's clock); the count rules keep the newest sessions
    of each project or user by Created and remove the older ones. Attempt rule: the oldest
    ``attempts/{k}/`` of each phase go until ``max_attempts_per_phase`` attempts remain.
    ``project_id`` and ``user_id`` limit what is removed, not what is counted: a scoped run
    removes exactly its part of what a full run removes. With ``dry_run`` nothing is touched
    and the report lists exactly what the real run would remove. ``progress(done, total)``
    is called after each removal. One ``cleanup_done`` event is emitted with the removals.
    """
    if not isinstance(policy, RetentionPolicy):
        raise InvalidArgumentError(f"policy must be a RetentionPolicy, got {policy!r}", field="policy")
    if project_id is not None:
        directory = manager.project_dir(project_id)
        if not directory.is_dir():
            raise ProjectNotFoundError(
                f"project {project_id!r} does not exist under {manager.base_dir}", path=directory
            )
    if user_id is not None:
        check_user_id(user_id)
    moment = _moment(manager, now)
    planned, skipped = _plan(manager, policy, project_id, user_id, moment)
    removed: list[Removal] = []
    if dry_run:
        removed = [p.removal for p in planned]
    else:
        for index, item in enumerate(planned, 1):
            why_not = _remove(manager, policy, item)
            if why_not is None:
                removed.append(item.removal)
            else:
                skipped.append(
                    Skipped(item.removal.path, why_not, item.removal.project_id, item.removal.session_id)
                )
            if progress is not None:
                progress(index, len(planned))
    report = CleanupReport(removed, dry_run, skipped)
    where = manager.project_dir(project_id) if project_id else manager.base_dir
    data = {"removed": [r.to_dict() for r in removed], "dry_run": dry_run}
    manager.events.emit([Event("cleanup_done", project_id, None, None, where, data)])
    return report


# ---------------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Planned:
    """A removal and what must still hold when it is carried out."""

    removal: Removal
    last_updated: str | None = None
    """The session's Last Updated when planned: a session saved since then is kept."""


def _moment(manager: CheckpointManager, now: datetime | None) -> datetime:
    moment = manager.clock() if now is None else now
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidArgumentError(f"now must be a timezone-aware datetime, got {moment!r}", field="now")
    return moment


def _plan(
    manager: CheckpointManager,
    policy: RetentionPolicy,
    project_id: str | None,
    user_id: str | None,
    now: datetime,
) -> tuple[list[_Planned], list[Skipped]]:
    """Everything the policy removes, in a fixed order: leftovers, sessions, attempts.

    The count rules count over the whole store and the scope only limits what is removed,
    so a run for one project or user removes exactly its part of what a full run removes.
    """
    root = manager.project_dir(project_id) if project_id else manager.base_dir
    everything, unreadable = list_sessions(manager.base_dir, workflows=manager.workflows)
    chosen = _selected_sessions(policy, everything, now)
    summaries = [
        s
        for s in everything
        if (project_id is None or s.project_id == project_id) and (user_id is None or s.user_id == user_id)
    ]
    skipped = [
        Skipped(issue.path or root, f"its manifest cannot be read ({issue}); run haytham validate")
        for issue in {i.path: i for i in unreadable}.values()
        if user_id is None and issue.path is not None and root in issue.path.parents
    ]
    planned = [] if user_id is not None else _session_leftovers(root)
    removed_sessions: set[Path] = set()
    for summary in sorted(summaries, key=lambda s: (s.project_id, _time(s.created), s.session_id)):
        rules = chosen.get(summary.path)
        if not rules:
            continue
        allowed, why_kept = _first_allowed(manager, policy, summary, rules)
        if allowed is None:
            skipped.append(Skipped(summary.path, why_kept, summary.project_id, summary.session_id))
            continue
        rule, reason = allowed
        removal = Removal("session", summary.path, reason, rule, summary.project_id, summary.session_id)
        planned.append(_Planned(removal, summary.last_updated))
        removed_sessions.add(summary.path)
    if policy.max_attempts_per_phase is not None:
        for summary in sorted(summaries, key=lambda s: (s.project_id, s.session_id)):
            if summary.path not in removed_sessions:
                found, kept = _attempts_to_remove(manager, policy, policy.max_attempts_per_phase, summary)
                planned += found
                skipped += kept
    return planned, skipped


def _selected_sessions(
    policy: RetentionPolicy, summaries: list[SessionSummary], now: datetime
) -> dict[Path, list[tuple[Rule, str]]]:
    """For each session that a session rule selects, the rules and their reasons, in order."""
    chosen: dict[Path, list[tuple[Rule, str]]] = defaultdict(list)
    if policy.max_age_days is not None:
        limit = now - timedelta(days=policy.max_age_days)
        for s in summaries:
            if _older_than(s.last_updated, limit):
                reason = f"last updated {s.last_updated}, more than {policy.max_age_days:g} days ago"
                chosen[s.path].append(("max_age_days", reason))
    count_rules: tuple[tuple[Rule, int | None, str, str], ...] = (
        ("max_sessions_per_project", policy.max_sessions_per_project, "project_id", "project"),
        ("max_sessions_per_user", policy.max_sessions_per_user, "user_id", "user"),
    )
    for rule, keep, key, what in count_rules:
        if keep is None:
            continue
        groups: dict[str, list[SessionSummary]] = defaultdict(list)
        for s in summaries:
            groups[getattr(s, key)].append(s)
        for name, members in groups.items():
            newest_first = sorted(members, key=lambda s: (_time(s.created), s.session_id), reverse=True)
            for s in newest_first[keep:]:
                reason = f"{what} {name} keeps its {keep} newest sessions (this one was created {s.created})"
                chosen[s.path].append((rule, reason))
    return chosen


def _older_than(timestamp: str, limit: datetime) -> bool:
    try:
        return parse_timestamp(timestamp) < limit
    except ValueError:
        return False  # an unreadable time never makes a session old


def _time(timestamp: str) -> datetime:
    """A timestamp as a time to sort by (as text, ``...00.5Z`` would sort before ``...00Z``);
    an unreadable one sorts first."""
    try:
        return parse_timestamp(timestamp)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)


def _first_allowed(
    manager: CheckpointManager,
    policy: RetentionPolicy,
    summary: SessionSummary,
    rules: list[tuple[Rule, str]],
) -> tuple[tuple[Rule, str] | None, str]:
    """The first rule allowed to remove the session, or None and why it is kept."""
    status = _status(manager, summary.project_id, summary.session_id)
    if status is None:
        return None, "its files cannot be read; run haytham validate"
    for rule, reason in rules:
        if status in FINISHED:
            return (rule, reason), ""
        if not policy.include_in_progress:
            continue
        if rule == "max_age_days" and policy.only_finished:
            continue
        return (rule, reason), ""
    if not policy.include_in_progress:
        return None, f"{rules[0][1]}, but {_unfinished(status)} (include_in_progress removes it)"
    return None, f"{rules[0][1]}, but it is not finished (only_finished keeps it)"


def _status(manager: CheckpointManager, project_id: str, session_id: str) -> str | None:
    """The session's state as its files say now (``CheckpointManager.state``, the one
    derivation): a manifest left behind by a crash, a review written by hand or brought by
    ``git pull`` never makes an unfinished session look finished. None when the session's
    files cannot be read."""
    try:
        return manager.state(project_id, session_id).state
    except HaythamError:
        return None


def _unfinished(status: str, subject: str = "it") -> str:
    """``it is in progress`` or ``it awaits review``: why an unfinished session is kept."""
    return f"{subject} {UNFINISHED_WORDS.get(status, 'is in progress')}"


def _attempts_to_remove(
    manager: CheckpointManager, policy: RetentionPolicy, keep: int, summary: SessionSummary
) -> tuple[list[_Planned], list[Skipped]]:
    """The oldest archived attempts of each phase beyond ``keep``, and leftovers."""
    planned: list[_Planned] = []
    for phase_dir in sorted(p for p in summary.path.glob(f"{PHASE_DIR_PREFIX}*") if p.is_dir()):
        phase = _phase_number(phase_dir)
        numbers = _archived(phase_dir)
        for leftover in _leftovers(phase_dir / ATTEMPTS_DIR):
            reason = "left over by an interrupted cleanup"
            removal = Removal(
                "attempt", leftover, reason, "leftover", summary.project_id, summary.session_id, phase
            )
            planned.append(_Planned(removal))
        for number in _excess_attempts(phase_dir, numbers, keep):
            reason = f"phase {phase} keeps its {keep} newest attempts (this is attempt {number})"
            removal = Removal(
                "attempt",
                phase_dir / ATTEMPTS_DIR / str(number),
                reason,
                "max_attempts_per_phase",
                summary.project_id,
                summary.session_id,
                phase,
                number,
            )
            planned.append(_Planned(removal, summary.last_updated))
    if not planned:
        return [], []
    status = _status(manager, summary.project_id, summary.session_id)
    if status is None:
        return [], [Skipped(summary.path, "its files cannot be read; run haytham validate", *_ids(summary))]
    if status not in FINISHED and not policy.include_in_progress:
        count = sum(1 for p in planned if p.removal.rule != "leftover")
        unfinished = _unfinished(status, "the session")
        why = f"{count} old attempt(s) kept: {unfinished} (include_in_progress removes them)"
        leftovers = [p for p in planned if p.removal.rule == "leftover"]
        return leftovers, [Skipped(summary.path, why, *_ids(summary))] if count else []
    return planned, []


def _excess_attempts(phase_dir: Path, archived: list[int], keep: int) -> list[int]:
    """Archived attempt numbers to remove so that ``keep`` attempts remain, oldest first.

    The current attempt (the phase directory's own checkpoint) counts and is never removed;
    without one, the newest archived attempt is the latest and stays. While the current
    attempt is unfinished, the attempt whose review sent the phase back stays too: a
    re-run reads that review. A current checkpoint that cannot be read keeps them all.
    """
    path = phase_dir / CHECKPOINT_FILE
    protected: set[int] = set()
    if path.is_file():
        current, _ = CHECKPOINT.read_path(path)
        if current is None:
            return []
        if current.status not in ("completed", "failed", "skipped"):
            protected.add(current.retry_count)
        total = len(archived) + 1
    else:
        protected.update(archived[-1:])
        total = len(archived)
    excess = max(0, total - keep)
    return [n for n in archived if n not in protected][:excess]


def _archived(phase_dir: Path) -> list[int]:
    directory = phase_dir / ATTEMPTS_DIR
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit() and p.is_dir())


def _phase_number(phase_dir: Path) -> int | None:
    found = _PHASE_DIR.match(phase_dir.name)
    return int(found.group(1)) if found else None


def _ids(summary: SessionSummary) -> tuple[str, str]:
    return summary.project_id, summary.session_id


def _leftovers(directory: Path) -> list[Path]:
    """Hidden ``.{name}.removing`` directories that a killed cleanup left in ``directory``."""
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        directory / n
        for n in names
        if n.startswith(".") and n.endswith(REMOVING_SUFFIX) and (directory / n).is_dir()
    ]


def _session_leftovers(root: Path) -> list[_Planned]:
    """Leftover session directories under ``root`` (the base dir or one project)."""
    folders = (
        [root / SESSIONS_DIR] if (root / SESSIONS_DIR).is_dir() else sorted(root.glob(f"*/{SESSIONS_DIR}"))
    )
    planned = []
    for folder in folders:
        for leftover in _leftovers(folder):
            session_id = leftover.name[1 : -len(REMOVING_SUFFIX)]
            reason = "left over by an interrupted cleanup"
            removal = Removal("session", leftover, reason, "leftover", folder.parent.name, session_id)
            planned.append(_Planned(removal))
    return planned


# ---------------------------------------------------------------------- removing


def _remove(manager: CheckpointManager, policy: RetentionPolicy, item: _Planned) -> str | None:
    """Carry out one planned removal; None when done, else why it was kept after all."""
    removal = item.removal
    _storage.check_no_symlink(removal.path, manager.base_dir)  # never delete through a symlink
    if removal.rule == "leftover" and removal.kind == "session":
        _storage.remove_tree(removal.path, ignore_errors=True)  # no longer a session: nothing reads it
        return None
    session_dir = removal.path if removal.kind == "session" else removal.path.parents[2]
    if not removal.path.is_dir():
        return "it was already gone"  # checked first: taking the lock would re-create the folder
    hidden: Path | None = None
    with manager.lock(session_dir.parent.parent.name, session_dir.name):
        why_not = _still_removable(manager, policy, item, session_dir)
        if why_not is not None:
            return why_not
        if removal.kind == "session":
            hidden = _hide(removal.path)
            _storage.remove_file(hidden / MANIFEST_FILE)  # a leftover is never taken for a session
        else:
            target = removal.path if removal.rule == "leftover" else _hide(removal.path)
            _storage.remove_tree(target)
            _remove_if_empty(removal.path.parent)
    if hidden is not None:  # committed by the rename: doctor --fix removes it if this is killed
        _storage.remove_tree(hidden, ignore_errors=True)
    return None


def _still_removable(
    manager: CheckpointManager, policy: RetentionPolicy, item: _Planned, session_dir: Path
) -> str | None:
    """Under the lock: None if the plan still holds, else why the removal is called off."""
    removal = item.removal
    if not removal.path.is_dir():
        return "it was already gone"
    if removal.rule == "leftover":
        return None
    manifest, _ = MANIFEST.read_path(session_dir / MANIFEST_FILE)
    if manifest is None or manifest.last_updated != item.last_updated:
        return "the session changed since the cleanup was planned"
    status = _status(manager, removal.project_id, removal.session_id)
    if status is None:
        return "its files cannot be read; run haytham validate"
    if status not in FINISHED and not policy.include_in_progress:
        return _unfinished(status, "the session")
    if removal.kind == "attempt":
        phase_dir = removal.path.parents[1]
        keep = policy.max_attempts_per_phase
        if keep is None or removal.attempt not in _excess_attempts(phase_dir, _archived(phase_dir), keep):
            return "it is no longer among the oldest attempts"
    return None


def _hide(directory: Path) -> Path:
    """Rename ``directory`` to ``.{name}.removing`` beside it, durably; return the new path."""
    hidden = directory.parent / f".{directory.name}{REMOVING_SUFFIX}"
    if hidden.exists():
        _storage.remove_tree(hidden)  # debris of an earlier, interrupted removal of the same name
    _storage.rename(directory, hidden, action="remove")
    return hidden


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        return  # not empty (or already gone): keep it
