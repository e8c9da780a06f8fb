"""The one write path: every change of a session is a ``Transaction``.

``transaction(store, project, session)`` takes the session's lock, finishes any change a
killed writer left half done (``journal.recover``), and reads the session once under the
lock (``Reads``); the writer then checks its move, stages its files into one
``journal.Change`` and commits, and the manifest is staged in the same change as the files
say it should be (``lifecycle.derive``). No writer of a session has a shortcut around it:
saves, reviews (library, command line, editor loop, page), attempts and re-runs, workflow
changes and repairs all go through here (docs/architecture.md, "Multi-file changes").
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from haytham.errors import MoveRefusedError
from haytham.format import CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST, DocumentFormat
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE
from haytham.format.workflow import PhaseDefinition
from haytham.records import HistoryEntry, PhaseCheckpoint, SessionManifest, UserFeedback
from haytham.store import fs as _storage
from haytham.store import history, journal, lifecycle
from haytham.store import progress as _progress
from haytham.store.reads import Reads
from haytham.store.session import Session
from haytham.store.store import Store

R = TypeVar("R")


@contextlib.contextmanager
def transaction(store: Store, project_id: str, session_id: str) -> Iterator[Transaction]:
    """Hold the session's lock (after recovering an interrupted change) and read it once."""
    home = store.session_home(project_id, session_id)
    with store.locked(home, project_id, session_id) as names:
        reads = Reads()
        reads.know(home, names)
        yield Transaction(store, project_id, session_id, store.read_session(home, reads), reads)


@dataclasses.dataclass
class Transaction:
    """One writer's hold of a session: the session as read under the lock, and how the
    writer stages files into a ``journal.Change`` (the caller opens it: ``change``)."""

    store: Store
    project_id: str
    session_id: str
    session: Session
    """The session as read once the lock was held and any interrupted change finished."""
    reads: Reads
    _reviews: dict[str, _progress.Review | None] = dataclasses.field(
        default_factory=dict, init=False, repr=False
    )
    """What each phase folder's review file says as read under the lock (None: no file), by
    the folder's name (``derive``)."""
    _outputs: list[
        tuple[tuple[PhaseDefinition, ...], dict[int, PhaseCheckpoint], dict[int, tuple[str, tuple[str, ...]]]]
    ] = dataclasses.field(default_factory=list, init=False, repr=False)
    """The phases' outputs now (``outputs_now``), with the phases and checkpoints asked for."""

    def change(self, name: str) -> journal.Change:
        """A journaled change of the session's folder (committed when its block ends)."""
        return journal.Change(self.session.directory, name, redo=journal.redo_available())

    def checkpoints(self) -> dict[int, PhaseCheckpoint]:
        """The session's checkpoints as the files say under the lock (each file read once)."""
        return self.store.checkpoints(self.session, self.reads)

    def phase_folder(self, phase_num: int) -> Path:
        """The phase's folder, made when missing, listed once and cleared of the temporary
        files dead writers left."""
        directory, exists = self.session.phase_location(phase_num)
        if exists:
            _storage.check_no_symlink(directory)
        else:
            _storage.make_dirs(directory)
        names = self.reads.listing(directory)
        for leftover in _storage.remove_leftovers(directory, names):
            names.discard(leftover.name)
        return directory

    # ---------------------------------------------------------------- staging

    def render(self, kind: DocumentFormat[R], path: Path, record: R) -> str:
        """The text of ``record`` for ``path``, over the file as this transaction read it."""
        return self.store.render(kind, path, record, self.reads)

    def stage(self, change: journal.Change, kind: DocumentFormat[R], path: Path, record: R) -> None:
        """Stage ``record`` to replace the file at ``path``: rendered over the file as read,
        whose bytes are also the journal's before-image."""
        text = self.render(kind, path, record)
        change.write(path, text, current=self.reads.current(path))

    def stage_text(self, change: journal.Change, path: Path, text: str) -> None:
        """Stage ``text`` (already checked) to replace the file at ``path``."""
        change.write(path, text, current=self.reads.current(path))

    def stage_entry(self, change: journal.Change, session: Session, entry: HistoryEntry) -> None:
        path = session.directory / history.HISTORY_DIR / history.file_name(entry)
        self.stage(change, HISTORY_ENTRY, path, entry)

    def derive(
        self,
        session: Session,
        *,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        reviews: Mapping[int, _progress.Review | None] | None = None,
        current: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> tuple[dict[int, PhaseCheckpoint], lifecycle.SessionView]:
        """Where the session will stand once the change is applied (``lifecycle.derive``, as
        every view derives it: checkpoints, reviews and the outputs as the files hold them),
        with the checkpoints and reviews the change writes (None: a review it removes) in place
        of the files; and the checkpoints it counted. ``current``: the session's checkpoints
        as the caller read them under the lock (default: read now)."""
        found = {**(self.checkpoints() if current is None else current), **(checkpoints or {})}
        reviews = reviews or {}
        # A phase whose review the change writes or removes is not read: its file is replaced.
        unread = tuple(p for p in session.phases if p.number not in reviews)
        read = self._read_reviews(session, unread)
        for number, review in reviews.items():
            if review is None:
                read.pop(number, None)
            else:
                read[number] = review
        # The outputs of a phase whose checkpoint the change writes are those it records.
        kept = {n: c for n, c in found.items() if n not in (checkpoints or {})}
        outputs = self._outputs_now(session, kept)
        return found, lifecycle.derive(_progress.phase_facts(session.phases, found, read, outputs))

    # A check of a move and the manifest staged after it derive the session twice under one
    # hold of the lock, where no file changes but by this transaction's own change (staged,
    # not applied): what the files say is read once for both, as ``Reads`` reads each file once.

    def _read_reviews(
        self, session: Session, phases: tuple[PhaseDefinition, ...]
    ) -> dict[int, _progress.Review]:
        """``progress.read_reviews`` of ``phases``: each phase's file read once per transaction."""
        known = self._reviews
        unknown = tuple(p for p in phases if p.directory not in known)
        if unknown:
            read = _progress.read_reviews(session.directory, unknown, self.store.cache, self.reads.data)
            for phase in unknown:
                known[phase.directory] = read.get(phase.number)
        return {p.number: review for p in phases if (review := known[p.directory]) is not None}

    def _outputs_now(
        self, session: Session, checkpoints: dict[int, PhaseCheckpoint]
    ) -> dict[int, tuple[str, tuple[str, ...]]]:
        """``progress.outputs_now`` of the phases with ``checkpoints``, once per transaction
        for the same checkpoints (the same records: compared by identity)."""
        phases = session.phases
        for asked_phases, asked, found in self._outputs:
            if (
                asked_phases is phases
                and asked.keys() == checkpoints.keys()
                and all(asked[n] is c for n, c in checkpoints.items())
            ):
                return found
        store = self.store
        found = _progress.outputs_now(
            session.directory, phases, checkpoints, store.digests, reads=store.cache
        )
        self._outputs.append((phases, checkpoints, found))
        return found

    def stage_manifest(
        self,
        change: journal.Change,
        session: Session,
        *,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        reviews: Mapping[int, _progress.Review | None] | None = None,
        head: str | None = None,
        current: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> SessionManifest:
        """Stage the manifest as the session's files will say it should be once ``change``
        is applied: the checkpoints and reviews it writes (None: a review it removes) count
        instead of the files on disk. ``current``: the session's checkpoints as the caller
        read them under the lock (default: read now). Returns the manifest (the old one
        when unchanged)."""
        store = self.store
        found, view = self.derive(session, checkpoints=checkpoints, reviews=reviews, current=current)
        derived = store.derived_manifest(session, found, view, head)
        if derived is session.manifest:
            return session.manifest
        updated = dataclasses.replace(derived, last_updated=store.now())
        self.stage(change, MANIFEST, session.directory / MANIFEST_FILE, updated)
        return updated

    def stage_checkpoint(
        self,
        change: journal.Change,
        session: Session,
        path: Path,
        record: PhaseCheckpoint,
        now: str,
        name: str | None = None,
        reason: str | None = None,
        *,
        stage_manifest: bool = True,
        current: Mapping[int, PhaseCheckpoint] | None = None,
        original: tuple[str, str] | None = None,
    ) -> SessionManifest:
        """Stage a checkpoint, its history entry and the manifest.

        Returns the manifest as it will be; the session's History Head moves to the entry.
        With ``stage_manifest=False`` the caller stages the manifest itself, once, after the
        other files of the operation (``stage_manifest``): a batch of saves is one record.
        ``original``: a correction's agent and its output file's text before, which the entry
        keeps (``HistoryEntry.original_output``)."""
        self.stage(change, CHECKPOINT, path, record)
        entry = history.make_entry(
            session.manifest.history_head,
            record.phase_number,
            record.phase_name,
            record.retry_count + 1,
            record.status,
            now,
            self.reads.rendered(CHECKPOINT, record),
            name,
            reason,
            original=original,
        )
        self.stage_entry(change, session, entry)
        if not stage_manifest:
            return dataclasses.replace(session.manifest, history_head=entry.entry_id)
        return self.stage_manifest(
            change, session, checkpoints={record.phase_number: record}, head=entry.entry_id, current=current
        )

    def stage_review(
        self,
        change: journal.Change,
        session: Session,
        phase: PhaseDefinition,
        feedback: UserFeedback,
        *,
        checkpoint: PhaseCheckpoint | None = None,
        stage_manifest: bool = True,
        text: str | None = None,
        current: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> tuple[dict[int, _progress.Review | None], str | None]:
        """Stage a review's history entry and the manifest brought up to date with the review
        file being written (the caller stages the file itself).

        Only a review is recorded: a file that says it is not reviewed yet (the blank file
        the runner writes for a gated phase) decides nothing, so it adds no entry.
        ``checkpoint``: the phase's checkpoint the operation writes (default: the file's).
        Returns the review and the new History Head (None: unchanged), for a caller that
        stages the manifest itself (``stage_manifest=False``). ``text``: the file's text when
        it is a person's own (``save_feedback_text``), which the entry keeps as written.
        ``current``: the session's checkpoints as the caller read them under the lock
        (default: read now).
        """
        if checkpoint is None:
            path = session.phase_dir(phase.number) / CHECKPOINT_FILE
            data = self.reads.data(path)
            checkpoint = None if data is None else CHECKPOINT.load_data(data, path, cache=self.store.cache)
        review: dict[int, _progress.Review | None] = {phase.number: (lifecycle.verdict(feedback), None)}
        head = None
        if checkpoint is not None and feedback.reviewed:
            entry = history.make_entry(
                session.manifest.history_head,
                phase.number,
                phase.name,
                checkpoint.retry_count + 1,
                checkpoint.status,
                self.store.now(),
                self.reads.rendered(CHECKPOINT, checkpoint),
                reason="approved" if lifecycle.verdict(feedback) == "approved" else "review",
                feedback_text=FEEDBACK.render(feedback) if text is None else text,
            )
            self.stage_entry(change, session, entry)
            head = entry.entry_id
        if stage_manifest:
            self.stage_manifest(change, session, reviews=review, head=head, current=current)
        return review, head

    def check_review(
        self,
        phase: PhaseDefinition,
        review: UserFeedback,
        checkpoints: Mapping[int, PhaseCheckpoint] | None = None,
        *,
        current: Mapping[int, PhaseCheckpoint] | None = None,
    ) -> str | None:
        """Refuse (MoveRefusedError) a review whose move (``lifecycle.review_event``) the
        lifecycle does not allow a reviewer on the phase as its files say it stands now, or as
        ``checkpoints`` (those the operation is about to write) leave it. The one check every
        review write makes, so the library, the command line and the pages refuse the same.

        Returns the state the review moves the phase from when it moves it to another one (a
        decision: ``awaiting_review`` to ``approved``), else None (no verdict, or the same
        state with other comments), for the ``feedback_saved`` event to say so. ``current``:
        the session's checkpoints as the caller read them under the lock (default: read now)."""
        event = lifecycle.review_event(review)
        if event is None:
            return None
        session = self.session
        state = self.derive(session, checkpoints=checkpoints, current=current)[1].phase(phase.number).state
        move = lifecycle.check_move(event, state, "reviewer")
        if isinstance(move, str):
            raise MoveRefusedError(
                f"phase {phase.number} ({phase.name}) of {self.project_id}/{self.session_id}: "
                f"{move}; nothing was written",
                path=session.phase_dir(phase.number) / FEEDBACK_FILE,
                field=FEEDBACK.labels["action" if event == "skip" else "approved"],
                event=event,
                state=state,
            )
        return None if move.target == state else state

    def sync_manifest(self, *, head: str | None = None) -> SessionManifest:
        """Recompute the manifest's progress from the session's files (``lifecycle.derive``)
        and write it if it changed (a repair: nothing else is staged with it)."""
        session, store = self.session, self.store
        derived = store.derived_manifest(session, store.checkpoints(session, self.reads), head=head)
        if derived is session.manifest:
            return session.manifest
        updated = dataclasses.replace(derived, last_updated=store.now())
        store.write(MANIFEST, session.directory / MANIFEST_FILE, updated, self.reads)  # one file
        return updated
