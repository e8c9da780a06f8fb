"""Where a session stands, as its files say: the lifecycle's facts, the manifest built from them.

``phase_facts`` reads what ``lifecycle.derive`` needs from a session's checkpoints, review
files and the digests of its agent outputs as they are now (``outputs_now``, each read only
when the files changed since it was last computed: ``outputs_digest_of``); ``derive`` writes
the resulting ``SessionView`` into the manifest's phase table, Status and Current Phase,
with the metrics summed over the checkpoints. Saving a phase, saving a review, repairing a
manifest after a crash, validation and the doctor all go through here, so they agree; the
rule itself lives in the lifecycle.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from haytham.errors import HaythamError
from haytham.format import AGENT_OUTPUT, FEEDBACK, ReadCache
from haytham.format.guard import read_file
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE
from haytham.format.workflow import PhaseDefinition
from haytham.frozen import frozen
from haytham.records import (
    AgentOutput,
    CurrentPhase,
    PhaseCheckpoint,
    PhaseRow,
    PhaseState,
    SessionManifest,
    SessionMetrics,
    SessionStatus,
)
from haytham.store import durations, lifecycle
from haytham.store import index as _index
from haytham.store.phase_files import Listed, agent_files

NOT_STARTED = CurrentPhase(number=0, name="Not Started", status="pending", can_resume=False)

Review = tuple[lifecycle.Verdict, str | None]
"""What a phase's review file says, and why it cannot be read when it cannot."""


def read_reviews(
    directory: Path,
    phases: tuple[PhaseDefinition, ...],
    cache: ReadCache | None = None,
    read: Callable[[Path], bytes | None] | None = None,
    *,
    listed: Listed | None = None,
) -> dict[int, Review]:
    """The verdict of each phase's ``user_feedback.md`` (the phases without one are left out).

    ``read``: how a writer holding the lock reads a file (its bytes, None when there is
    none), so that a file it read already for its save is not read again. ``listed``: what a
    listing of the session's folders just found; a review it saw no entry of is not looked for."""
    found: dict[int, Review] = {}
    for phase in phases:
        if listed is not None and not listed.may_hold(phase.directory, FEEDBACK_FILE):
            continue
        path = directory.joinpath(phase.directory, FEEDBACK_FILE)  # one Path made, not two
        try:
            if read is None:
                feedback = FEEDBACK.load_optional(path, cache=cache)
            else:
                data = read(path)
                feedback = None if data is None else FEEDBACK.load_data(data, path, cache=cache)
        except HaythamError as error:
            found[phase.number] = ("awaiting", str(error))
            continue
        if feedback is not None:
            found[phase.number] = (lifecycle.verdict(feedback), None)
    return found


RACY_NS = 100_000_000
"""How much older than the moment its digest is computed an output file's last change must be
for the digest to be remembered by its identity (git's "racily clean" rule): a file changed
again later gets a later change time, so its identity differs. A tenth of a second is many
ticks of the kernel's file-time clock on every local file system Linux has; the index
(``index.RACY_NS``) waits longer because its entries outlive the process."""


class OutputDigests:
    """The outputs digest of phase folders, remembered by what their output files are.

    An entry is keyed by the phase folder's path and holds the identity of every output file
    it was computed from (name, device, inode, size, modification and change times in
    nanoseconds: ``index.identity``) and the digest. It is used only while every one of
    those is unchanged, so a hand edit, a ``git pull`` or another program's write is seen at
    the next read, and an unchanged phase is never read again. Safe across threads; at most
    ``max_entries`` phases, least recently used out first.

    The entries have the shape of ``Index.entries`` (``{path: (identity, digest)}``), so a
    caller that keeps them in the SQLite index passes ``index.entries(DIGEST_KIND)`` to the
    constructor and stores ``learnt()`` back (``Index.store(DIGEST_KIND, ...)``).

    ``learns=False`` (the process's ``DIGESTS``, which nobody asks for ``learnt``) keeps no
    such record: a long-running ``haytham serve`` whose tree keeps growing then holds at most
    ``max_entries`` phases here, not one record for every phase folder it ever digested
    (issue 26: S14's resident memory grew with every session a writer made).
    """

    def __init__(
        self,
        known: Mapping[str, tuple[str, str]] | None = None,
        max_entries: int = 20_000,
        *,
        learns: bool = True,
    ) -> None:
        self.max_entries = max_entries
        self.learns = learns
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[str, str]] = OrderedDict(known or {})
        self._learnt: dict[str, tuple[str, str, int]] = {}

    def __len__(self) -> int:
        """How many phase folders this holds anything of (remembered or learnt)."""
        with self._lock:
            return len(self._entries.keys() | self._learnt.keys())

    def recall(self, key: str, identity: str) -> str | None:
        """The digest remembered for ``key`` while its files have ``identity``, else None."""
        with self._lock:
            kept = self._entries.get(key)
            if kept is None or kept[0] != identity:
                return None
            self._entries.move_to_end(key)
            return kept[1]

    def remember(self, key: str, identity: str, digest: str, newest_ns: int) -> None:
        """Keep ``digest`` for ``key`` while its files have ``identity`` (``newest_ns``: the
        latest change time among them, for ``learnt``)."""
        with self._lock:
            self._entries[key] = (identity, digest)
            self._entries.move_to_end(key)
            if self.learns:
                self._learnt[key] = (identity, digest, newest_ns)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def learnt(self, settled: Callable[[int], bool] = lambda _: True) -> list[tuple[str, str, str]]:
        """The ``(key, identity, digest)`` rows computed here whose files' last change
        ``settled`` accepts (``Index.settled``), for ``Index.store``."""
        with self._lock:
            return [
                (key, ident, digest)
                for key, (ident, digest, newest) in self._learnt.items()
                if settled(newest)
            ]

    def clear(self) -> None:
        """Forget every digest (to measure a first read)."""
        with self._lock:
            self._entries.clear()
            self._learnt.clear()


class IndexedDigests(OutputDigests):
    """The process's digests (``DIGESTS``), then those a base directory's index remembers
    (one look-up a phase folder, only for a phase whose outputs must be digested): a phase
    whose output files are what they were when any process hashed them is not read again.
    What is computed here is kept in both; ``learnt`` gives it for the index (``index``
    None: a listing that makes the index learns for it, and looks nothing up)."""

    def __init__(self, index: _index.Index | None, shared: OutputDigests | None = None) -> None:
        super().__init__()
        self._index = index
        self._shared = DIGESTS if shared is None else shared

    def recall(self, key: str, identity: str) -> str | None:
        found = self._shared.recall(key, identity)
        if found is not None:
            return found
        kept = None if self._index is None else self._index.entry(DIGEST_KIND, key)
        return kept[1] if kept is not None and kept[0] == identity else None

    def remember(self, key: str, identity: str, digest: str, newest_ns: int) -> None:
        self._shared.remember(key, identity, digest, newest_ns)
        super().remember(key, identity, digest, newest_ns)


DIGEST_KIND = "outputs_digest"
"""The kind of the index entries that keep ``OutputDigests`` (``Index.entries``)."""
DIGESTS = OutputDigests(learns=False)
"""The process's outputs digests: every manager, command and page of the process shares them
(an entry is keyed by what the files are, so it never says what another process changed).
At most ``max_entries`` (20,000) phases, least recently used out first, and nothing
``learnt``: each listing's ``IndexedDigests`` records what it computed for its index."""


@frozen
class Outputs:
    """A phase folder's agent outputs as they are now."""

    digest: str
    """``lifecycle.outputs_digest`` of their content."""
    files: tuple[tuple[str, int], ...]
    """Each output file's name and last modification time (ns), in the folder's order."""


def output_text(path: Path, record: AgentOutput | None) -> str:
    """What an agent output file says for the outputs digest: its content, or for a file
    that does not read as an output, its bytes as they are (a hand edit that broke the
    format still changes the digest), or the reason it cannot be read at all (a symlink out
    of the tree, a FIFO), never anything of a file outside the tree."""
    if record is not None:
        return record.content
    try:
        return read_file(path, AGENT_OUTPUT.max_bytes).decode("utf-8", "replace")
    except (HaythamError, OSError) as error:
        return f"\0unreadable: {error}"


def outputs_of(
    phase_dir: Path,
    agents: Sequence[str] = (),
    cache: OutputDigests | None = DIGESTS,
    *,
    reads: ReadCache | None = None,
    names: Sequence[str] | None = None,
    known: Mapping[str, str] | None = None,
) -> Outputs:
    """The agent outputs of ``phase_dir`` now: their digest and their files.

    The files are those ``CheckpointManager`` counts when it records a phase's digest: every
    agent output file of the folder (``phase_files.agent_files``, ``agents`` first; or
    ``names``, those of a listing of the folder the caller just made). Each is
    ``stat``-ed; only when one of them changed since ``cache`` last saw the folder (or it
    never did) are they read and hashed, each once (through ``reads``, which knows the
    records a writer just wrote, so it parses nothing it wrote; ``known``: the content of
    outputs the caller has just read, by file name, not read again). A folder that is not
    there has no outputs.
    """
    if names is not None:
        paths = [phase_dir / name for name in names]
    else:
        try:
            paths = agent_files(phase_dir, agents)
        except (FileNotFoundError, NotADirectoryError):
            return Outputs(lifecycle.outputs_digest({}), ())
    signature = []
    files = []
    present = []
    newest = 0
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue  # removed since the folder was listed: not an output now
        signature.append(f"{path.name}={_index.identity(st)}")
        files.append((path.name, st.st_mtime_ns))
        present.append(path)
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    identity = ";".join(signature)
    key = os.fspath(phase_dir)
    digest = cache.recall(key, identity) if cache is not None else None
    if digest is None:
        began = time.time_ns()
        contents = {}
        for path in present:
            text = None if known is None else known.get(path.name)
            contents[path.stem] = _output_text(path, reads) if text is None else text
        digest = lifecycle.outputs_digest(contents)
        if cache is not None and newest < began - RACY_NS:
            cache.remember(key, identity, digest, newest)
    return Outputs(digest, tuple(files))


def _output_text(path: Path, reads: ReadCache | None) -> str:
    """The content an agent output file contributes to its phase's outputs digest: its
    record's ``## Output`` (through ``reads``), or the whole file when it does not read.
    Called once a file each time a digest is computed from the files (tests count it)."""
    return output_text(path, AGENT_OUTPUT.read_path(path, cache=reads)[0])


def outputs_digest_of(
    phase_dir: Path,
    agents: Sequence[str] = (),
    cache: OutputDigests | None = DIGESTS,
    *,
    reads: ReadCache | None = None,
) -> str:
    """``lifecycle.outputs_digest`` of the agent outputs in ``phase_dir`` as they are now,
    read only when they changed since ``cache`` saw them (``outputs_of``)."""
    return outputs_of(phase_dir, agents, cache, reads=reads).digest


def outputs_now(
    directory: Path,
    phases: Iterable[PhaseDefinition],
    checkpoints: Mapping[int, PhaseCheckpoint],
    cache: OutputDigests | None = DIGESTS,
    *,
    reads: ReadCache | None = None,
    listed: Listed | None = None,
    known: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[int, tuple[str, tuple[str, ...]]]:
    """For each phase of the session at ``directory`` whose checkpoint recorded an outputs
    digest: the digest of its output files now, and which of them changed when it differs
    (``listed``: what a listing of the session's folders just found, not listed again;
    ``known``: by phase folder, the content of outputs just read, not read again).

    The changed files are named relative to the session folder: those modified after the
    checkpoint file was written (a correction made after the phase completed), and the
    files of agents the checkpoint lists that are gone; when neither tells, every output
    file of the phase.
    """
    found: dict[int, tuple[str, tuple[str, ...]]] = {}
    for phase in phases:
        saved = checkpoints.get(phase.number)
        if saved is None or saved.outputs_digest is None:
            continue
        phase_dir = directory / phase.directory
        agents = [run.agent_name for run in saved.agents]
        found_names = None if listed is None else listed.agents(phase.directory, agents)
        read = None if known is None else known.get(phase.directory)
        now = outputs_of(phase_dir, agents, cache, reads=reads, names=found_names, known=read)
        if now.digest == saved.outputs_digest:
            found[phase.number] = (now.digest, ())
            continue
        try:
            written = os.stat(phase_dir / CHECKPOINT_FILE).st_mtime_ns
        except OSError:
            written = None
        names = {name for name, _ in now.files}
        changed = [name for name, mtime in now.files if written is not None and mtime > written]
        changed += [
            run.output_file
            for run in saved.agents
            if run.status == "completed" and run.output_file not in names
        ]
        changed = changed or [name for name, _ in now.files]
        found[phase.number] = (now.digest, tuple(f"{phase.directory}/{name}" for name in changed))
    return found


def phase_facts(
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    reviews: Mapping[int, Review],
    outputs: Mapping[int, tuple[str, tuple[str, ...]]] | None = None,
) -> list[lifecycle.PhaseFacts]:
    """The lifecycle's facts of every phase of the mode, in order.

    ``outputs``: the digest of each phase's output files now and the files that changed
    (``outputs_now``); a phase left out is taken to have the outputs its checkpoint recorded.
    """
    outputs = outputs or {}
    facts = []
    for phase in phases:
        saved = checkpoints.get(phase.number)
        verdict, problem = reviews.get(phase.number, ("none", None))
        now, edited = outputs.get(phase.number, (None, ()))
        facts.append(
            lifecycle.PhaseFacts(
                number=phase.number,
                name=phase.name,
                review=phase.review,
                status=saved.status if saved else None,
                attempt=saved.retry_count + 1 if saved else 1,
                outputs_digest=saved.outputs_digest if saved else None,
                built_from=dict(saved.built_from) if saved else {},
                outputs_now=now,
                edited_files=edited,
                verdict=verdict,
                problem=problem,
                waiting_since=saved.completed if saved else None,
                held=saved.held if saved else (),
            )
        )
    return facts


def view_of(
    directory: Path,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    cache: ReadCache | None = None,
    digests: OutputDigests | None = DIGESTS,
    *,
    listed: Listed | None = None,
) -> lifecycle.SessionView:
    """``lifecycle.derive`` over the session at ``directory``: its checkpoints, its review
    files and its agent outputs as they are now (``listed``: what a listing of its folders
    just found: a file it saw no entry of is not looked for, a folder is not listed again)."""
    reviews = read_reviews(directory, phases, cache, listed=listed)
    outputs = outputs_now(directory, phases, checkpoints, digests, reads=cache, listed=listed)
    return lifecycle.derive(phase_facts(phases, checkpoints, reviews, outputs))


def phase_rows(
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    view: lifecycle.SessionView | None = None,
) -> tuple[PhaseRow, ...]:
    """One row per phase of the mode: its lifecycle state and its checkpoint's times (the
    duration is ``durations.phase_seconds``, as every view shows it).

    Without ``view`` the reviews are taken as unread (a checkpoint's own status).
    """
    view = view or lifecycle.derive(phase_facts(phases, checkpoints, {}))
    rows = []
    for phase in phases:
        saved = checkpoints.get(phase.number)
        state = view.phase(phase.number).state
        if saved is None:
            rows.append(PhaseRow(phase.number, phase.name, state))
        else:
            rows.append(
                PhaseRow(
                    phase.number,
                    phase.name,
                    state,
                    saved.started,
                    saved.completed,
                    durations.phase_seconds(saved),
                )
            )
    return tuple(rows)


def row_state(row: PhaseRow) -> PhaseState:
    """A row's lifecycle state; an older manifest's ``requires_retry`` is ``sent_back``."""
    return "sent_back" if row.status == "requires_retry" else row.status


def session_status(rows: tuple[PhaseRow, ...]) -> SessionStatus:
    """The session's state from its phase table: that of the first phase not done."""
    first = next((row_state(r) for r in rows if row_state(r) not in lifecycle.DONE_STATES), None)
    return lifecycle.session_state(first)


def current_phase(rows: tuple[PhaseRow, ...]) -> CurrentPhase:
    """The manifest's Current Phase: the first phase not done, with its lifecycle state.

    Before any phase has started it is ``NOT_STARTED``; when every phase is done it is the
    last one, which cannot be resumed. A phase awaiting review cannot be resumed either: it
    needs a reviewer. The merge driver computes it from merged rows the same way, so the
    status is the state's value (``in_progress``), never words.
    """
    if all(row.status == "pending" for row in rows):
        return NOT_STARTED
    for row in rows:
        state = row_state(row)
        if state not in lifecycle.DONE_STATES:
            return CurrentPhase(row.number, row.name, state, can_resume=state != "awaiting_review")
    last = rows[-1]
    return CurrentPhase(last.number, last.name, last.status, can_resume=False)


def metrics(checkpoints: Mapping[int, PhaseCheckpoint]) -> SessionMetrics:
    """Sums over the checkpoints; unknown values count as nothing (the durations are
    ``durations.total_seconds``: the time the phases ran, not the time they waited)."""
    saved = list(checkpoints.values())
    return SessionMetrics(
        total_duration=durations.total_seconds(saved),
        total_tokens=sum(c.total_tokens or 0 for c in saved),
        total_cost=round(sum(c.cost or 0.0 for c in saved), 6),
    )


def derive(
    manifest: SessionManifest,
    phases: tuple[PhaseDefinition, ...],
    checkpoints: Mapping[int, PhaseCheckpoint],
    view: lifecycle.SessionView | None = None,
) -> SessionManifest:
    """``manifest`` with everything that depends on the session's files recomputed from
    ``view`` (``lifecycle.derive``; without it, from the checkpoints alone)."""
    view = view or lifecycle.derive(phase_facts(phases, checkpoints, {}))
    rows = phase_rows(phases, checkpoints, view)
    return dataclasses.replace(
        manifest,
        phases=rows,
        status=view.state,
        current=current_phase(rows),
        metrics=metrics(checkpoints),
    )


def same_progress(a: SessionManifest, b: SessionManifest) -> bool:
    """True when two manifests agree on everything but Last Updated."""
    return dataclasses.replace(a, last_updated=b.last_updated) == b
