"""The saves of one session, each inside a ``Transaction``: an agent output, a checkpoint, a
review, a whole phase at once, a change of a review's fields.

Each builds the records it writes from its checked arguments and the files as the
transaction read them under the lock, stages them with their history entries and the
manifest into one ``journal.Change``, and returns the events to announce once the lock is
released. What is already saved is not written again: saving the same data changes no byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    MoveRefusedError,
    NotFoundError,
    StaleReviewError,
)
from haytham.format import AGENT_OUTPUT, FEEDBACK
from haytham.format.agent_output import MAX_CORRECTED_BYTES
from haytham.format.feedback import rewrite_feedback, rewrite_fields
from haytham.format.feedback import settle as settle_feedback
from haytham.format.layout import CHECKPOINT_FILE, FEEDBACK_FILE
from haytham.format.reader import decode
from haytham.format.workflow import PhaseDefinition
from haytham.records import AgentOutput, PhaseCheckpoint, SessionManifest, UserFeedback
from haytham.store import durations, lifecycle
from haytham.store import fs as _storage
from haytham.store import progress as _progress
from haytham.store.arguments import CheckpointArgs, round_or_none
from haytham.store.events import Event
from haytham.store.names import check_no_case_twin
from haytham.store.phase_files import agent_files
from haytham.store.reads import Reads
from haytham.store.session import Session
from haytham.store.shown import Shown, shown_now
from haytham.store.store import Store
from haytham.store.transaction import Transaction

Saved = tuple[Path, list[Event]]
"""The file a save wrote (or found already holding its data) and the events to announce."""


# ------------------------------------------------------------------ the saves


def save_checkpoint(
    tx: Transaction, phase_num: int, checked: CheckpointArgs, name: str | None, reason: str | None
) -> Saved:
    """``CheckpointManager.save_checkpoint`` under the transaction's lock."""
    session = tx.session
    phase = session.phase(phase_num)
    path = session.phase_dir(phase_num) / CHECKPOINT_FILE
    current = tx.checkpoints()
    record, previous, now = checkpoint_record(tx, phase, checked, current)
    if previous == record and name is None and reason is None:
        return path, []  # the same data again: no byte changes, no history entry
    tx.phase_folder(phase_num)
    with tx.change("save_checkpoint") as change:
        manifest = tx.stage_checkpoint(change, session, path, record, now, name, reason, current=current)
    return path, checkpoint_events(tx, phase.number, path, checked.status, manifest)


def save_agent_output(tx: Transaction, phase_num: int, fields: Mapping[str, Any]) -> Saved:
    """``CheckpointManager.save_agent_output`` under the transaction's lock."""
    phase = tx.session.phase(phase_num)
    directory = tx.phase_folder(phase_num)
    path, record = output_change(tx, directory, phase, fields)
    if record is None:
        return path, []  # the same output again: no byte changes
    tx.store.write(AGENT_OUTPUT, path, record, tx.reads)
    return path, [output_event(tx, phase.number, path, fields)]


def save_user_feedback(
    tx: Transaction, phase_num: int, fields: Mapping[str, Any], expected_version: str | Shown | None
) -> Saved:
    """``CheckpointManager.save_user_feedback`` under the transaction's lock."""
    session = tx.session
    phase = session.phase(phase_num)
    directory = session.phase_dir(phase_num)
    check_expected(tx, phase.number, directory, expected_version)
    current = tx.checkpoints()  # once: for the check and for the manifest
    moved_from = tx.check_review(phase, review_of(phase, fields), current=current)
    tx.phase_folder(phase_num)
    path, found = feedback_change(tx, directory, phase, fields)
    if found is None:
        return path, []  # the same review again: no byte changes
    text, record = found
    created = tx.reads.data(path) is None
    with tx.change("save_user_feedback") as change:
        tx.stage_text(change, path, text)
        tx.stage_review(change, session, phase, record, current=current)
    return path, [feedback_event(tx, phase.number, path, fields, moved_from, created)]


def save_phase(
    tx: Transaction,
    phase_num: int,
    outputs: Mapping[str, Mapping[str, Any]],
    checked: CheckpointArgs,
    review: Mapping[str, Any] | None,
    name: str | None,
    reason: str | None,
) -> Saved:
    """``CheckpointManager.save_phase`` under the transaction's lock: every file in one change."""
    session = tx.session
    phase = session.phase(phase_num)
    directory = tx.phase_folder(phase_num)
    written = []
    for fields in outputs.values():
        path, output = output_change(tx, directory, phase, fields)
        if output is not None:
            written.append((path, output, fields))
    staged = {agent: fields["content"] for agent, fields in outputs.items()}
    checkpoint_path = directory / CHECKPOINT_FILE
    current = tx.checkpoints()
    record, previous, now = checkpoint_record(tx, phase, checked, current, staged)
    new_checkpoint = previous != record or name is not None or reason is not None
    moved_from = None
    if review is not None:  # the review moves the phase as its new checkpoint leaves it
        moved_from = tx.check_review(phase, review_of(phase, review), {phase.number: record}, current=current)
    feedback_path, found = (
        feedback_change(tx, directory, phase, review) if review is not None else (None, None)
    )
    created = feedback_path is not None and tx.reads.data(feedback_path) is None
    manifest = session.manifest
    with tx.change("save_phase") as change:
        for path, output, _ in written:
            tx.stage(change, AGENT_OUTPUT, path, output)
        head = None
        parent = session  # the review's entry follows the checkpoint's
        if new_checkpoint:
            moved = tx.stage_checkpoint(
                change, session, checkpoint_path, record, now, name, reason, stage_manifest=False
            )
            head = moved.history_head
            parent = dataclasses.replace(session, manifest=moved)
        reviews: dict[int, _progress.Review | None] = {}
        if found is not None and feedback_path is not None:
            tx.stage_text(change, feedback_path, found[0])
            reviews, reviewed_head = tx.stage_review(
                change, parent, phase, found[1], checkpoint=record, stage_manifest=False
            )
            head = reviewed_head or head
        if new_checkpoint or found is not None:
            manifest = tx.stage_manifest(
                change,
                session,
                checkpoints={phase.number: record},
                reviews=reviews,
                head=head,
                current=current,
            )
    events = [output_event(tx, phase.number, p, f) for p, _, f in written]
    if new_checkpoint:
        events += checkpoint_events(tx, phase.number, checkpoint_path, checked.status, manifest)
    if found is not None and feedback_path is not None and review is not None:
        events.append(feedback_event(tx, phase.number, feedback_path, review, moved_from, created))
    return checkpoint_path, events


def save_feedback_text(
    tx: Transaction, phase_num: int, text: str, expected: str | None, reviewer: str | None = None
) -> tuple[UserFeedback, list[Event]]:
    """``CheckpointManager.save_feedback_text`` under the transaction's lock: a person's own
    text as the review file, byte for byte but for the review's time and reviewer
    (``stamp_review``), with its history entry and the manifest."""
    data = text.encode("utf-8")
    session = tx.session
    phase = session.phase(phase_num)
    path = session.phase_dir(phase_num) / FEEDBACK_FILE
    if expected is not None:
        check_version(path, expected, tx.reads)
    record, issues = FEEDBACK.read_data(data, path, cache=tx.store.cache)
    if record is None:
        first = next(issue for issue in issues if issue.is_error)
        raise DocumentError(first.message, path=path, line=first.line, field=first.field)
    moved_from = tx.check_review(phase, record)
    tx.phase_folder(phase_num)
    before = tx.reads.data(path)
    if before == data:
        return record, []  # the file says this already: no byte changes
    previous = _previous(before, path, tx)
    if previous is not None and previous.reviewed and previous.timestamp is not None:
        again = stamp_review(text, record, None, previous.timestamp, reviewer or previous.reviewer)
        if again.encode("utf-8") == before:
            return previous, []  # the same text again, as saved with its time: no byte changes
    stamped = stamp_review(text, record, previous, tx.store.now(), reviewer)
    if stamped != text:
        text, data = stamped, stamped.encode("utf-8")
        record = FEEDBACK.parse(decode(data, path), path)
    with tx.change("save_feedback_text") as change:
        change.write(path, data, current=tx.reads.current(path))
        tx.stage_review(change, session, phase, record, text=text)
    fields = dataclasses.asdict(record)
    return record, [feedback_event(tx, phase.number, path, fields, moved_from, before is None)]


def stamp_review(
    text: str, record: UserFeedback, previous: UserFeedback | None, now: str, reviewer: str | None
) -> str:
    """``text`` with the review's time (``now``) and ``reviewer`` in its Review Status, when it
    is a review (reviewed) whose person left those fields as the file had them: a person who
    writes their own Timestamp or Reviewer is taken at their word. Every other byte stays
    (``rewrite_fields``); the blank template (not reviewed) gets neither."""
    if not record.reviewed:
        return text
    was = previous if previous is not None and previous.reviewed else None
    updates: dict[str, bool | int | str] = {}
    if record.timestamp is None or record.timestamp == (was.timestamp if was is not None else None):
        updates["timestamp"] = now
    if reviewer is not None and record.reviewer == (was.reviewer if was is not None else None):
        updates["reviewer"] = reviewer
    if not updates:
        return text
    try:
        return rewrite_fields(text, updates)
    except InvalidArgumentError:  # a field written as a checkbox cannot hold a time: left as written
        return text


def _previous(data: bytes | None, path: Path, tx: Transaction) -> UserFeedback | None:
    """The review the file held before this save, None when it had none or does not read."""
    if data is None:
        return None
    try:
        return FEEDBACK.read_data(data, path, cache=tx.store.cache)[0]
    except DocumentError:
        return None


def update_feedback(tx: Transaction, phase_num: int, updates: Mapping[str, bool | int | str]) -> UserFeedback:
    """``CheckpointManager.update_feedback`` under the transaction's lock: only the given
    fields of the review file change; every other byte a person wrote stays."""
    session = tx.session
    phase = session.phase(phase_num)
    path = session.phase_dir(phase_num) / FEEDBACK_FILE
    data = tx.reads.data(path, FEEDBACK.max_bytes)  # one read: the record, the text, the before-image
    if data is None:
        raise NotFoundError(f"phase {phase_num} has no feedback: {path} does not exist", path=path)
    before = FEEDBACK.load_data(data, path, cache=tx.store.cache)
    raw = data.decode("utf-8")
    text = rewrite_fields(raw, updates)
    after = FEEDBACK.parse(decode(text.encode("utf-8"), path), path)
    expected = settle_feedback(dataclasses.replace(before, **updates))  # type: ignore[arg-type]
    if after != expected:
        raise DocumentError(
            f"rewriting {sorted(updates)} would change more than those fields; the file was left as it is",
            path=path,
        )
    if text != raw:
        tx.check_review(phase, after)
        with tx.change("update_feedback") as change:
            tx.stage_text(change, path, text)
            tx.stage_review(change, session, phase, after)
    return after


def keep_edited_outputs(tx: Transaction, phase_num: int) -> bool:
    """``CheckpointManager.keep_edited_outputs`` under the transaction's lock: record in the
    phase's checkpoint the digest of the outputs its files hold now, with a history entry
    (``lifecycle.EDIT_KEPT``); nothing else of the checkpoint changes."""
    session = tx.session
    directory = session.phase_dir(phase_num)
    current = tx.checkpoints()
    previous = current.get(session.phase(phase_num).number)
    if previous is None or previous.outputs_digest is None:
        return False
    digest = outputs_digest(tx, directory, previous.agents)
    if digest == previous.outputs_digest:
        return False
    record = dataclasses.replace(previous, outputs_digest=digest)
    tx.phase_folder(phase_num)
    with tx.change("save_checkpoint") as change:
        tx.stage_checkpoint(
            change,
            session,
            directory / CHECKPOINT_FILE,
            record,
            tx.store.now(),
            reason=lifecycle.EDIT_KEPT,
            current=current,
        )
    return True


def correct_output(
    tx: Transaction,
    phase_num: int,
    agent_name: str,
    content: str,
    approve: bool,
    expected_version: str | Shown | None,
    reviewer: str | None = None,
) -> Saved | None:
    """``CheckpointManager.correct_output`` under the transaction's lock: a reviewer's
    correction of one agent's output, in one change.

    The output file gets the corrected content and ``- Corrected:`` (its execution details
    stay the agent's run); the checkpoint records the outputs' new digest, with a history
    entry that keeps the original file's text whole (``lifecycle.corrected_reason``); the
    review's action becomes ``modified`` (with ``approve``: reviewed and approved); the
    manifest follows. The phases built on the original are stale (their Built From no
    longer matches), as after a correction typed by hand. None when the content is the
    output's already: nothing is written.
    """
    session = tx.session
    phase = session.phase(phase_num)
    directory = session.phase_dir(phase_num)
    feedback_path = directory / FEEDBACK_FILE
    check_expected(tx, phase.number, directory, expected_version)
    current = tx.checkpoints()
    state = tx.derive(session, current=current)[1].phase(phase.number).state
    if state not in lifecycle.CORRECTABLE:
        allowed = ", ".join(sorted(s.replace("_", " ") for s in lifecycle.CORRECTABLE))
        raise MoveRefusedError(
            f"phase {phase.number} ({phase.name}) of {tx.project_id}/{tx.session_id}: a phase that "
            f"is {state.replace('_', ' ')} cannot be corrected (only one that is {allowed}); "
            "nothing was written",
            path=directory / f"{agent_name}.md",
            event="correct",
            state=state,
        )
    tx.phase_folder(phase_num)
    path = directory / f"{agent_name}.md"
    data = tx.reads.data(path, AGENT_OUTPUT.max_bytes)
    if data is None:
        raise NotFoundError(
            f"agent {agent_name!r} has no output in phase {phase.number} of "
            f"{tx.project_id}/{tx.session_id}: {path} does not exist",
            path=path,
        )
    if len(data) > MAX_CORRECTED_BYTES:
        raise InvalidArgumentError(
            f"{path} is {len(data):,} bytes long: haytham corrects outputs of at most "
            f"{MAX_CORRECTED_BYTES:,} bytes, since the original is kept whole in the history "
            "(docs/formats.md, Limits)",
            field="content",
        )
    existing = AGENT_OUTPUT.load_data(data, path, cache=tx.store.cache)
    if existing.content == content:
        return None
    previous = current.get(phase.number)
    if previous is None:  # a correctable phase has a checkpoint
        raise NotFoundError(f"phase {phase.number} has no checkpoint", path=directory / CHECKPOINT_FILE)
    now = tx.store.now()
    corrected = dataclasses.replace(existing, content=content, corrected=now)
    AGENT_OUTPUT.check_record(corrected, path)
    digest = outputs_digest(tx, directory, previous.agents, {agent_name: content})
    checkpoint = dataclasses.replace(previous, outputs_digest=digest)
    review = tx.reads.record(FEEDBACK, feedback_path, tx.store.cache)
    fields: dict[str, Any] = {
        "reviewed": approve or (review is not None and review.reviewed),
        "approved": approve or (review is not None and review.approved),
        "comments": review.comments if review is not None else "",
        "requested_changes": review.requested_changes if review is not None else (),
        "action": lifecycle.CORRECTED_ACTION,
        "retry_count": review.retry_count if review is not None else previous.retry_count,
        "reviewer": reviewer if reviewer is not None else review.reviewer if review is not None else None,
        "justification": review.justification if review is not None else None,
        "raised_budget": review.raised_budget if review is not None else None,
    }
    tx.check_review(phase, review_of(phase, fields), {phase.number: checkpoint}, current=current)
    _, found = feedback_change(tx, directory, phase, fields)
    original = data.decode("utf-8")
    with tx.change("correct_output") as change:
        tx.stage(change, AGENT_OUTPUT, path, corrected)
        moved = tx.stage_checkpoint(
            change,
            session,
            directory / CHECKPOINT_FILE,
            checkpoint,
            now,
            reason=lifecycle.corrected_reason(agent_name),
            stage_manifest=False,
            original=(agent_name, original),
        )
        head = moved.history_head
        reviews: dict[int, _progress.Review | None] = {}
        if found is not None:
            tx.stage_text(change, feedback_path, found[0])
            reviews, reviewed_head = tx.stage_review(
                change,
                dataclasses.replace(session, manifest=moved),
                phase,
                found[1],
                checkpoint=checkpoint,
                stage_manifest=False,
            )
            head = reviewed_head or head
        tx.stage_manifest(
            change,
            session,
            checkpoints={phase.number: checkpoint},
            reviews=reviews,
            head=head,
            current=current,
        )
    events = [output_event(tx, phase.number, path, {"agent_name": agent_name, "status": existing.status})]
    if found is not None:
        events.append(feedback_event(tx, phase.number, feedback_path, fields))
    return path, events


# ------------------------------------------------------ what a save writes


def checkpoint_record(
    tx: Transaction,
    phase: PhaseDefinition,
    checked: CheckpointArgs,
    current: Mapping[int, PhaseCheckpoint],
    staged: Mapping[str, str] | None = None,
) -> tuple[PhaseCheckpoint, PhaseCheckpoint | None, str]:
    """The checkpoint ``save_checkpoint`` writes, the one it replaces and the time now
    (``current``: the session's checkpoints as read under the lock, once for the whole
    operation). ``staged``: agent outputs (name -> content) the operation is about to
    write, which count for the phase's outputs digest instead of the files."""
    session = tx.session
    directory = session.phase_dir(phase.number)
    previous = current.get(phase.number)
    status, runs, retry_count = checked.status, checked.runs, checked.retry_count
    started, completed, duration = checked.started, checked.completed, checked.duration
    if retry_count is None:  # the attempt in progress, as start_attempt left it
        retry_count = previous.retry_count if previous else 0
    now = tx.store.now()
    if started is None and status != "pending":
        started = previous.started if previous and previous.started else now
    if completed is None and status in ("completed", "failed", "skipped"):
        same = previous is not None and previous.status == status and previous.completed
        completed = previous.completed if same and previous else now
    span_given = checked.started is not None and checked.completed is not None
    duration = durations.checkpoint_seconds(
        duration, started, completed, runs, checked.execution_mode, span_given=span_given
    )
    position = session.phases.index(phase)
    if checked.built_from is not None:
        sources: tuple[tuple[int, str], ...] = tuple(checked.built_from)
    elif previous is not None and previous.retry_count == retry_count and _has_results(previous):
        sources = previous.built_from
    else:
        sources = built_from(tx.store, session, phase, current)
    digest = outputs_digest(tx, directory, runs, staged) if status == "completed" else None
    before = session.phases[position - 1] if position > 0 else None
    after = session.phases[position + 1] if position + 1 < len(session.phases) else None
    record = PhaseCheckpoint(
        phase_number=phase.number,
        phase_name=phase.name,
        status=status,  # type: ignore[arg-type]
        started=started,
        completed=completed,
        duration=duration,
        retry_count=retry_count,
        execution_mode=checked.execution_mode,  # type: ignore[arg-type]
        agents=runs,
        previous_phase=before.name if before else None,
        next_phase=after.number if after else None,
        next_phase_name=after.name if after else None,
        total_tokens=_sum(run.tokens for run in runs),
        input_tokens=_sum(_int_or_none(a.get("input_tokens")) for a in checked.agents),
        output_tokens=_sum(_int_or_none(a.get("output_tokens")) for a in checked.agents),
        cost=round_or_none(_sum(run.cost for run in runs), 4),
        errors=checked.errors,
        held=checked.held,
        outputs_digest=digest,
        built_from=sources,
    )
    return record, previous, now


def built_from(
    store: Store, session: Session, phase: PhaseDefinition, checkpoints: Mapping[int, PhaseCheckpoint]
) -> tuple[tuple[int, str], ...]:
    """What ``phase`` is built from: the outputs digest of every earlier phase of the mode that
    recorded one (in ``checkpoints``, the session's or those an operation is about to write),
    as its output files say now: a phase built on outputs a person corrected is built on the
    correction."""
    found = []
    for earlier in session.phases[: session.phases.index(phase)]:
        saved = checkpoints.get(earlier.number)
        if saved is not None and saved.outputs_digest is not None:
            agents = [run.agent_name for run in saved.agents]
            now = _progress.outputs_digest_of(
                session.phase_dir(earlier.number), agents, store.digests, reads=store.cache
            )
            found.append((earlier.number, now))
    return tuple(found)


def outputs_digest(
    tx: Transaction, directory: Path, runs: Sequence[Any], staged: Mapping[str, str] | None = None
) -> str:
    """``lifecycle.outputs_digest`` of the agent outputs in a phase directory, as saved,
    with ``staged`` (agent name -> content, about to be written) in place of the files."""
    staged = staged or {}
    outputs = {}
    if directory.is_dir():
        for path in agent_files(directory, [run.agent_name for run in runs]):
            if path.stem in staged:
                continue
            outputs[path.stem] = _progress.output_text(
                path, tx.reads.record(AGENT_OUTPUT, path, tx.store.cache)
            )
    outputs.update(staged)
    return lifecycle.outputs_digest(outputs)


def output_change(
    tx: Transaction, directory: Path, phase: PhaseDefinition, fields: Mapping[str, Any]
) -> tuple[Path, AgentOutput | None]:
    """The file of an agent output and its record, None when it holds that output already
    (the transaction has made and listed ``directory``: ``Transaction.phase_folder``)."""
    record = AgentOutput(phase_number=phase.number, phase_name=phase.name, executed=tx.store.now(), **fields)
    check_no_case_twin(directory, f"{record.agent_name}.md", "agent_name", tx.reads.listing(directory))
    path = directory / f"{record.agent_name}.md"
    existing = tx.reads.record(AGENT_OUTPUT, path, tx.store.cache)
    if existing is not None and dataclasses.replace(existing, executed=record.executed) == record:
        return path, None
    return path, record


def feedback_change(
    tx: Transaction, directory: Path, phase: PhaseDefinition, fields: Mapping[str, Any]
) -> tuple[Path, tuple[str, UserFeedback] | None]:
    """The feedback file, with the text to write there and its record, None when it says
    that already (the transaction has made ``directory``)."""
    reviewed, approved = fields["reviewed"], fields["approved"]
    record = dataclasses.replace(
        review_of(phase, fields),
        timestamp=tx.store.now() if reviewed or approved else None,  # a blank template has no time
    )
    path = directory / FEEDBACK_FILE
    existing = tx.reads.record(FEEDBACK, path, tx.store.cache)
    corrected = existing is not None and existing.action == lifecycle.CORRECTED_ACTION
    if record.approved and record.action == "approved" and corrected:  # approving a correction
        record = dataclasses.replace(record, action=lifecycle.CORRECTED_ACTION)
    if existing is not None and dataclasses.replace(existing, timestamp=record.timestamp) == record:
        return path, None
    data = tx.reads.data(path)
    try:  # a person's sections and lines in the file stay (formats.md, "Hand edits")
        kept = None if data is None else rewrite_feedback(data.decode("utf-8"), record)
    except UnicodeDecodeError:
        kept = None
    if kept is None:
        kept = tx.render(FEEDBACK, path, record)
    else:
        FEEDBACK.check_record(record, path)
    return path, (kept, record)


def review_of(phase: PhaseDefinition, fields: Mapping[str, Any]) -> UserFeedback:
    """The review ``save_user_feedback``'s checked ``fields`` say, as its file will read
    (``settle``: an approval implies a review), without its time."""
    return settle_feedback(UserFeedback(phase_name=phase.name, timestamp=None, **fields))


def check_version(path: Path, expected: str, reads: Reads) -> None:
    """Refuse (StaleReviewError) a write over ``path`` unless it is still version ``expected``
    (the bytes compared are those the save goes on with: ``reads``)."""
    current, data = _storage.file_version(path)
    reads.keep(path, data)
    if current != expected:
        raise StaleReviewError(
            f"{path} changed since the review was written against it (edited by hand or brought "
            "by git); nothing was saved",
            path=path,
            expected=expected,
            current=current,
        )


def check_expected(tx: Transaction, phase_num: int, directory: Path, expected: str | Shown | None) -> None:
    """Refuse (StaleReviewError) a decision on the phase in ``directory`` made against
    anything but the files as they are: ``expected`` is what the reviewer was shown
    (``Shown``), or only the review file's version (a ``str``), or nothing to check (None)."""
    if isinstance(expected, Shown):
        check_shown(tx, phase_num, directory, expected)
    elif expected is not None:
        check_version(directory / FEEDBACK_FILE, expected, tx.reads)


def check_shown(tx: Transaction, phase_num: int, directory: Path, expected: Shown) -> None:
    """Refuse (StaleReviewError, naming what changed) a review of the phase in ``directory``
    unless its attempt, its outputs and its review file are still what the reviewer was
    shown (``expected``), as the files say under the lock (the review file's bytes are
    those the save goes on with: ``tx.reads``)."""
    path = directory / FEEDBACK_FILE
    version, data = _storage.file_version(path)
    tx.reads.keep(path, data)
    now = shown_now(directory, tx.checkpoints().get(phase_num), tx.store.digests, tx.store.cache, version)
    changed = expected.changes(now)
    if changed:
        raise StaleReviewError(
            f"{path}: since the reviewer was shown the phase, {'; '.join(changed)}; nothing was saved",
            path=path,
            expected=expected.token,
            current=now.token,
            changed=changed,
        )


# ------------------------------------------------------------------ events


def checkpoint_events(
    tx: Transaction, phase: int, path: Path, status: str, manifest: SessionManifest
) -> list[Event]:
    """What a saved checkpoint announces: saved, the phase completed, the session completed."""
    p, s = tx.project_id, tx.session_id
    events = [Event("checkpoint_saved", p, s, phase, path, {"status": status})]
    if status == "completed":
        events.append(Event("phase_completed", p, s, phase, path))
    if manifest.status == "completed" and tx.session.manifest.status != "completed":
        events.append(Event("session_completed", p, s, None, tx.session.directory))
    return events


def output_event(tx: Transaction, phase: int, path: Path, fields: Mapping[str, Any]) -> Event:
    details = {"agent_name": fields["agent_name"], "status": fields["status"]}
    return Event("agent_output_saved", tx.project_id, tx.session_id, phase, path, details)


def feedback_event(
    tx: Transaction,
    phase: int,
    path: Path,
    fields: Mapping[str, Any],
    moved_from: str | None = None,
    created: bool = False,
) -> Event:
    """What a saved review announces: its decision, the state it moved the phase from when it
    moved it (``Transaction.check_review``: a decision), and whether the file is new (the
    blank template a phase starts awaiting its review with)."""
    details = {
        "approved": fields["approved"],
        "action": fields["action"],
        "reviewed": fields["reviewed"],
        "moved_from": moved_from,
        "created": created,
    }
    return Event("feedback_saved", tx.project_id, tx.session_id, phase, path, details)


# ----------------------------------------------------------------- helpers


def _has_results(checkpoint: PhaseCheckpoint) -> bool:
    """Whether any agent of the checkpoint's attempt has a result yet (its inputs are fixed)."""
    return any(run.status != "pending" for run in checkpoint.agents)


def _sum(values: Iterable[int | float | None]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
