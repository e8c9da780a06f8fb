"""A session's listing summary as its files say it now, and the key that says when it must
be derived again.

``haytham list``, ``review``'s inbox, ``prune`` and ``stats`` read every session's state
from its files through the one derivation (``progress.view_of`` over the checkpoints and
review files, ``lifecycle.derive``), as ``CheckpointManager.state`` does; the manifest only
supplies what no other file knows (its ids, user, workflow, mode and times). A review that
arrives by hand, by ``git pull`` or from any other program is seen at the next listing.

Deriving costs reading each phase's checkpoint and review, so the index (``store.index``)
remembers a session's derived summary under a *key*: a digest of the stat signature (device,
inode, size, modification and change times) of every fact file of the session (the manifest,
``workflow.yaml``, each phase folder's ``checkpoint.md``, ``user_feedback.md`` and agent
outputs) and of the session folder and its phase folders, whose own times change when a file
is added, removed or renamed in them. The paths (``Facts.names``) are remembered with the
key, so a warm listing checks a session with one ``stat`` a path and reads nothing
(``still``); any difference, a missing file or a new one, and the session is derived again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from haytham.errors import HaythamError, InvalidArgumentError, Issue
from haytham.format import CHECKPOINT
from haytham.format.guard import read_file
from haytham.format.layout import CHECKPOINT_FILE, MANIFEST_FILE, PHASE_DIR_PREFIX, WORKFLOW_FILE
from haytham.format.workflow import BUILTIN_WORKFLOWS, PhaseDefinition, Workflow, load_workflow
from haytham.frozen import frozen
from haytham.records import PhaseCheckpoint
from haytham.store import lifecycle
from haytham.store import progress as _progress
from haytham.store.index import identity
from haytham.store.phase_files import Listed

SEPARATOR = "\n"
"""Between the remembered ``Facts.names`` in the index (a name holding it is never remembered)."""


@dataclass
class Facts:
    """The fact files of one session folder, as one listing of it found them."""

    names: tuple[str, ...]
    """The paths below the session folder, besides the manifest, whose stats make the key:
    ``workflow.yaml``, each phase folder and the markdown files in it, in a fixed order."""
    key: str = ""
    """The digest of the stats of the session folder, the manifest and ``names`` ("" when
    the listing was made without an index and stated nothing)."""
    newest_ns: int = 0
    """The newest modification or change time among them (``Index.settled``)."""
    linked: bool = False
    """A symlink among them: such a session is derived afresh every time."""
    files: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each phase folder's markdown files, by folder name."""
    listed: Listed = field(default_factory=lambda: Listed(frozenset(), {}))
    """What the listings found, for the derivation (``view_of``) to look nowhere else."""

    @property
    def storable(self) -> bool:
        """Whether the index may remember the session under this key."""
        return bool(self.key) and not self.linked and not any(SEPARATOR in n for n in self.names)


def gather(directory: str, manifest: os.stat_result | None, salt: str) -> Facts:
    """The fact files of the session folder ``directory``: one listing of it and one of
    each phase folder, and (with ``manifest``, the manifest's ``stat``, given when the index
    is on) one ``stat`` of each path for the key."""
    names: list[str] = []
    files: dict[str, frozenset[str]] = {}
    phases: dict[str, tuple[tuple[str, bool], ...]] = {}
    linked = False
    with os.scandir(directory) as entries:
        found = [(e.name, e) for e in entries if e.name[0] != "."]
    present = frozenset(name.casefold() for name, _ in found)
    if len(found) > 1:
        found.sort(key=_first)
    for name, entry in found:
        if name == WORKFLOW_FILE:
            names.append(name)
            linked = linked or entry.is_symlink()
        elif name.startswith(PHASE_DIR_PREFIX) and entry.is_dir():
            linked = linked or entry.is_symlink()
            names.append(name)
            try:
                with os.scandir(entry.path) as inside:
                    every = [e for e in inside if e.name.endswith(".md") and not e.name.startswith(".")]
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed meanwhile: the key will differ next time
            phases[name] = tuple((e.name, e.is_dir(follow_symlinks=False)) for e in every)
            markdown = sorted((e.name, e.is_symlink()) for e in every if e.is_file())
            files[name] = frozenset(n for n, _ in markdown)
            linked = linked or any(link for _, link in markdown)
            names += (f"{name}{os.sep}{n}" for n, _ in markdown)
    facts = Facts(tuple(names), linked=linked, files=files, listed=Listed(present, phases))
    if manifest is not None:
        found_key = key_of(directory, manifest, facts.names, salt)
        if found_key is not None:
            facts.key, facts.newest_ns = found_key
    return facts


def _first(pair: tuple[str, os.DirEntry[str]]) -> str:
    return pair[0]


def key_of(
    directory: str, manifest: os.stat_result, names: tuple[str, ...] | list[str], salt: str
) -> tuple[str, int] | None:
    """The key of the session folder ``directory`` whose fact paths are ``names``, and the
    newest time among them; None when one of them is gone. One ``stat`` a path."""
    stat_of = os.stat
    prefix = directory + os.sep
    try:
        stats = [stat_of(directory), manifest, *(stat_of(prefix + name) for name in names)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in stats)
    return _key(salt, stats), newest


def still(directory: str, manifest: os.stat_result, names: str, salt: str) -> str | None:
    """The key of a remembered session folder now (``names`` as the index keeps them): the
    key ``key_of`` gives, without the newest time, which only a session to be remembered
    needs. The hot loop of a warm listing calls it once a session."""
    stat_of = os.stat
    try:
        stats = [stat_of(directory), manifest]
        if names:
            prefix = directory + os.sep
            stats += [stat_of(prefix + name) for name in names.split(SEPARATOR)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    return _key(salt, stats)


_PACK = struct.Struct("<QQQqq").pack


def _key(salt: str, stats: list[os.stat_result]) -> str:
    """The digest of the salt and of what must be unchanged of each path for a remembered
    summary to stand, as ``index.identity`` says it (device, inode, size, modification and
    change times), the session folder's, the manifest's, then each fact path's in order.
    Each path's five numbers are packed in 40 bytes, which costs a warm listing less than
    writing them out; a number beyond 64 bits (a 128-bit file id) is written out instead."""
    pack = _PACK
    try:
        packed = [pack(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for st in stats]
    except struct.error:
        packed = [_packed(st) for st in stats]
    return hashlib.blake2b(salt.encode() + b"".join(packed), digest_size=16).hexdigest()


def _packed(st: os.stat_result) -> bytes:
    try:
        return _PACK(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except struct.error:
        return identity(st).encode()


def salt_of(workflows: Mapping[str, Workflow]) -> str:
    """What the registered workflow definitions add to every key: a session derived with
    other definitions is derived again. Only the definitions count, not which mapping holds
    them: a ``CheckpointManager``'s copy of the built-in workflows (``haytham list``) and
    the built-in mapping itself (``scan.list_sessions``) key a session alike, so neither
    makes the other derive every session again."""
    if workflows is BUILTIN_WORKFLOWS:
        return ""
    definitions = _definitions(workflows)
    if definitions == _builtin_definitions():
        return ""
    return hashlib.blake2b(repr(definitions).encode(), digest_size=8).hexdigest()


def _definitions(workflows: Mapping[str, Workflow]) -> list[tuple[str, str, str]]:
    """Each workflow's name, fingerprint and assignments (which the fingerprint leaves out,
    and a listing remembers as ``current_reviewers``)."""
    return sorted(
        (name, w.fingerprint(), repr([p.reviewers for p in w.phases])) for name, w in workflows.items()
    )


@functools.cache
def _builtin_definitions() -> list[tuple[str, str, str]]:
    return _definitions(BUILTIN_WORKFLOWS)


Derived = tuple[str, int, str, str, int, float, str, str]
"""What the files decide of a listed session: Status, Current Phase (number, name, state),
Total Tokens, Total Cost, who is assigned to review the Current Phase (its workflow's
``reviewers:``, joined by ``SEPARATOR``; "" for anyone), and the phases that wait for a
person (``waiting_text``; "" for none)."""


@frozen
class WaitingPhase:
    """A phase of a listed session that waits for a person (``lifecycle.needs_a_person``):
    what the review inbox shows of it, remembered with the session's summary so that a warm
    inbox reads no file."""

    phase: int
    name: str
    state: str
    """Its lifecycle state: ``awaiting_review``, ``failed`` or ``stale``."""
    described: str
    """The state in words with its reason (``PhaseView.describe``)."""
    since: str | None
    """When it began to wait (awaiting review) or ended (failed), ISO 8601 UTC."""
    tokens: int | None
    cost: float | None
    reviewers: tuple[str, ...]
    """Who the workflow assigns to review it (``reviewers:``); none: anyone."""


def waiting_text(phases: tuple[WaitingPhase, ...]) -> str:
    """The waiting phases as a listing row (and the index) keeps them: JSON, "" for none."""
    if not phases:
        return ""
    return json.dumps(
        [
            [p.phase, p.name, p.state, p.described, p.since, p.tokens, p.cost, list(p.reviewers)]
            for p in phases
        ],
        ensure_ascii=False,
    )


def waiting_from_text(text: str | None) -> tuple[WaitingPhase, ...]:
    """The waiting phases ``waiting_text`` kept."""
    if not text:
        return ()
    return tuple(
        WaitingPhase(phase, name, state, described, since, tokens, cost, tuple(reviewers))
        for phase, name, state, described, since, tokens, cost, reviewers in json.loads(text)
    )


class Deriver:
    """Derives the summaries of one listing; holds the workflow definitions it read (sessions
    of one workflow share the bytes of their ``workflow.yaml``: each text is parsed once)."""

    def __init__(self, workflows: Mapping[str, Workflow] | None = None) -> None:
        self.workflows = BUILTIN_WORKFLOWS if workflows is None else workflows
        self.salt = salt_of(self.workflows)
        self.digests: _progress.OutputDigests = _progress.DIGESTS
        """Where the outputs digests of unchanged phases are remembered (a listing with an
        index gives ``progress.IndexedDigests``)."""
        self._copies: dict[bytes, Workflow] = {}
        self._empty: dict[tuple[int, str], Derived] = {}

    def derive(
        self, directory: str, workflow_type: str, mode: str, facts: Facts
    ) -> tuple[Derived | None, Issue | None]:
        """The derived values of the session in ``directory``, or None and a warning saying
        why they cannot be (then the listing shows what the manifest says)."""
        try:
            workflow = self._workflow(directory, workflow_type, facts)
            if workflow is None:
                known = ", ".join(sorted(self.workflows))
                message = f"{workflow_type!r} is not a known workflow (expected one of {known})"
                return None, _warning(Path(directory, MANIFEST_FILE), "Workflow Type", message)
            if not any(facts.files.values()):  # nothing has run: the same answer for every such session
                known_empty = self._empty.get((id(workflow), mode))
                if known_empty is None:
                    known_empty = _derived(Path(directory), workflow.phases_for(mode), {}, {})
                    self._empty[(id(workflow), mode)] = known_empty
                return known_empty, None
            phases = workflow.phases_for(mode)
            checkpoints = self._checkpoints(directory, phases, facts)
            return _derived(Path(directory), phases, checkpoints, None, facts.listed, self.digests), None
        except InvalidArgumentError as error:  # a mode the workflow does not have
            return None, _warning(Path(directory, MANIFEST_FILE), "Execution Mode", str(error))
        except HaythamError as error:  # a fact file that cannot be read
            where = getattr(error, "path", None) or Path(directory, MANIFEST_FILE)
            line, label = getattr(error, "line", None), getattr(error, "field", None)
            return None, _warning(where, label, str(error), line)

    def _workflow(self, directory: str, workflow_type: str, facts: Facts) -> Workflow | None:
        """The session's own ``workflow.yaml``, else the registered workflow of its name (as
        ``CheckpointManager`` finds it); None when there is neither."""
        if WORKFLOW_FILE in facts.names:
            path = Path(directory, WORKFLOW_FILE)
            data = read_file(path)
            found = self._copies.get(data)
            if found is None:
                found = self._copies[data] = load_workflow(path, data)
            return found
        return self.workflows.get(workflow_type)

    @staticmethod
    def _checkpoints(
        directory: str, phases: tuple[PhaseDefinition, ...], facts: Facts
    ) -> dict[int, PhaseCheckpoint]:
        """The checkpoints of the mode's phases, reading only the files the listing found."""
        found = {}
        for phase in phases:
            if CHECKPOINT_FILE in facts.files.get(phase.directory, ()):
                found[phase.number] = CHECKPOINT.load(Path(directory, phase.directory, CHECKPOINT_FILE))
        return found


def _warning(path: Path, label: str | None, message: str, line: int | None = None) -> Issue:
    """Why a listed session shows what its manifest says instead of what its files derive."""
    return Issue(path, line, label, f"{message}; listed as its manifest says", "warning")


def _derived(
    directory: Path,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: dict[int, PhaseCheckpoint],
    reviews: dict[int, _progress.Review] | None,
    listed: Listed | None = None,
    digests: _progress.OutputDigests | None = _progress.DIGESTS,
) -> Derived:
    """``progress.derive``'s Status, Current Phase and totals, without the manifest record:
    the view is ``progress.view_of`` (what ``CheckpointManager.state`` reads), or with
    ``reviews`` given, the lifecycle over them."""
    if reviews is None:
        view = _progress.view_of(directory, phases, checkpoints, digests=digests, listed=listed)
    else:
        view = lifecycle.derive(_progress.phase_facts(phases, checkpoints, reviews))
    current = _progress.current_phase(_progress.phase_rows(phases, checkpoints, view))
    totals = _progress.metrics(checkpoints)
    assigned = {p.number: p.reviewers for p in phases}
    waiting = []
    for phase in lifecycle.needs_a_person(view):
        checkpoint = checkpoints.get(phase.number)
        waiting.append(
            WaitingPhase(
                phase.number,
                phase.name,
                phase.state,
                phase.describe(),
                phase.waiting_since or (checkpoint.completed if checkpoint else None),
                checkpoint.total_tokens if checkpoint else None,
                checkpoint.cost if checkpoint else None,
                tuple(assigned.get(phase.number, ())),
            )
        )
    return (
        view.state,
        current.number,
        current.name,
        current.status,
        totals.total_tokens,
        totals.total_cost,
        SEPARATOR.join(assigned.get(current.number, ())),
        waiting_text(tuple(waiting)),
    )
