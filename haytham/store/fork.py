"""What a forked session holds: the source's files of the phases before the fork point, a
history that starts with one entry per copied checkpoint, and a manifest derived from them.

``fork_files`` only computes the files; ``CheckpointManager.fork_session`` reads the source
under its lock and writes the result with ``haytham.store.copy.write_session_dir``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from haytham.errors import HaythamError, NotFoundError
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    FEEDBACK_FILE,
    MANIFEST_FILE,
    OWN_SESSION_FILES,
    WORKFLOW_FILE,
)
from haytham.format.reader import decode
from haytham.format.workflow import PhaseDefinition
from haytham.records import HistoryEntry, PhaseCheckpoint, SessionManifest
from haytham.store import history
from haytham.store import progress as _progress
from haytham.store.clock import parse_timestamp
from haytham.store.lifecycle import derive, outputs_digest, verdict
from haytham.store.review_time import hand_review_time


def fork_files(
    source: Mapping[str, bytes],
    source_dir: Path,
    manifest: SessionManifest,
    phases: tuple[PhaseDefinition, ...],
    start: PhaseDefinition,
    *,
    new_session_id: str,
    user_id: str | None,
    now: str,
    target: Path,
    reason: str | None = None,
) -> tuple[dict[str, bytes], list[PhaseDefinition]]:
    """The files of a fork of the session at ``source_dir`` from phase ``start``, and the
    phases it copies.

    ``source`` is the session's files (``read_session_files``); the phases before ``start``
    in ``phases`` are copied byte for byte with ``workflow.yaml``, each copied checkpoint
    gets a history entry (reason ``forked from {session}``) and the manifest says
    ``Forked From: {session} at phase {n}``. ``target`` names the manifest in errors;
    ``reason`` replaces the history entries' reason.
    """
    kept = list(phases[: phases.index(start)])
    kept_dirs = {phase.directory for phase in kept}
    files = {
        path: data
        for path, data in source.items()
        if path == WORKFLOW_FILE or path.split("/")[0] in kept_dirs
    }
    reason = reason or f"forked from {manifest.session_id}"
    head: str | None = None
    checkpoints: dict[int, PhaseCheckpoint] = {}
    for phase in kept:
        relative = f"{phase.directory}/{CHECKPOINT_FILE}"
        if relative not in files:
            continue
        text = files[relative].decode("utf-8")
        record = CHECKPOINT.parse(decode(files[relative], source_dir / relative))
        checkpoints[phase.number] = record
        attempt = record.retry_count + 1
        entry = history.make_entry(
            head, record.phase_number, record.phase_name, attempt, record.status, now, text, None, reason
        )
        HISTORY_ENTRY.check_record(entry)
        files[f"{history.HISTORY_DIR}/{history.file_name(entry)}"] = HISTORY_ENTRY.render(entry).encode()
        head = entry.entry_id
    reviews: dict[int, _progress.Review] = {}  # the copied reviews count, as on any read
    for phase in kept:
        relative = f"{phase.directory}/{FEEDBACK_FILE}"
        if relative in files:
            try:
                feedback = FEEDBACK.parse(
                    decode(files[relative], source_dir / relative), source_dir / relative
                )
                reviews[phase.number] = (verdict(feedback), None)
            except HaythamError as error:
                reviews[phase.number] = ("awaiting", str(error))
    view = derive(
        _progress.phase_facts(phases, checkpoints, reviews, _copied_outputs(files, kept, checkpoints))
    )
    forked = _progress.derive(
        dataclasses.replace(
            manifest,
            session_id=new_session_id,
            user_id=user_id or manifest.user_id,
            created=now,
            last_updated=now,
            history_head=head,
            forked_from=f"{manifest.session_id} at phase {start.number}",
        ),
        phases,
        checkpoints,
        view,
    )
    MANIFEST.check_record(forked, target / MANIFEST_FILE)
    files[MANIFEST_FILE] = MANIFEST.render(forked).encode("utf-8")
    return files, kept


def _copied_outputs(
    files: Mapping[str, bytes], kept: Sequence[PhaseDefinition], checkpoints: Mapping[int, PhaseCheckpoint]
) -> dict[int, tuple[str, tuple[str, ...]]]:
    """``progress.outputs_now`` of the copied files: for each copied phase whose checkpoint
    recorded an outputs digest, the digest of its copied outputs, and (when it differs: a
    correction made by hand in the source) every one of them, named relative to the session."""
    found: dict[int, tuple[str, tuple[str, ...]]] = {}
    by_folder = _by_folder(files)
    for phase in kept:
        saved = checkpoints.get(phase.number)
        if saved is None or saved.outputs_digest is None:
            continue
        prefix = f"{phase.directory}/"
        names = sorted(
            name
            for name in by_folder.get(phase.directory, ())
            if "/" not in name[len(prefix) :]
            and name.endswith(".md")
            and not name[len(prefix) :].startswith(".")
            and name[len(prefix) :] not in OWN_SESSION_FILES
        )
        contents = {
            name[len(prefix) : -3]: AGENT_OUTPUT.parse(decode(files[name], Path(name))).content
            for name in names
        }
        digest = outputs_digest(contents)
        found[phase.number] = (digest, () if digest == saved.outputs_digest else tuple(names))
    return found


def _by_folder(files: Iterable[str]) -> dict[str, list[str]]:
    """The relative paths of ``files`` by their top folder (a phase's, ``history``), in
    one pass: a phase's files are then found without looking at every other phase's, so
    forking stays linear in the phases."""
    found: dict[str, list[str]] = {}
    for path in files:
        top, slash, _ = path.partition("/")
        if slash:
            found.setdefault(top, []).append(path)
    return found


def files_at_entry(
    source: Mapping[str, bytes],
    source_dir: Path,
    entries: Sequence[HistoryEntry],
    entry: HistoryEntry,
    kept: Sequence[PhaseDefinition],
    current: Mapping[int, PhaseCheckpoint],
) -> dict[str, bytes]:
    """``source`` with the files of the phases ``kept`` as they were at history entry ``entry``.

    What the history can say and what it cannot (docs/lifecycle.md, "Forking from an entry"):

    * the moment is ``entry`` and its ancestors (the parent chain), so entries another clone
      added beside it, or any entry after it, do not count;
    * a phase's checkpoint is the newest checkpoint entry of that phase in the chain, byte
      for byte; a phase without one had not started, and gets no files;
    * its outputs are those of the entry's attempt, from the phase directory when that
      attempt is still the current one, from ``attempts/{n}/`` when it was archived. Only
      the agents that checkpoint lists as completed are copied. A completed checkpoint
      records its outputs' digest, which the files must still match; otherwise (or when the
      attempt's files are gone) NotFoundError says the outputs of that moment are no longer
      on disk. An unfinished checkpoint records no digest: its completed agents' files are
      copied as they are now;
    * its review is the newest review entry of that phase and attempt in the chain; without
      one (a review made by hand makes no entry), the attempt's ``user_feedback.md`` when it
      was reviewed at or before the entry's time (its Timestamp, or the file's modification
      time for a hand review); otherwise the phase has no review file;
    * its earlier attempts (``attempts/{m}/`` with ``m`` below the entry's attempt) are copied.
    """
    by_id = {e.entry_id: e for e in entries}
    chain: list[HistoryEntry] = []
    seen: set[str] = set()
    step: HistoryEntry | None = entry
    while step is not None and step.entry_id not in seen:
        chain.append(step)
        seen.add(step.entry_id)
        step = by_id.get(step.parent) if step.parent else None
    moment = parse_timestamp(entry.timestamp)
    newest: dict[int, HistoryEntry] = {}  # each phase's newest checkpoint entry in the chain
    reviews: dict[tuple[int, int], HistoryEntry] = {}  # each attempt's newest review entry
    for step in chain:  # newest first
        if step.kind == "checkpoint":
            newest.setdefault(step.phase_number, step)
        elif step.kind == "review":
            reviews.setdefault((step.phase_number, step.attempt), step)
    by_folder = _by_folder(source)
    files = dict(source)
    for phase in kept:
        inside = f"{phase.directory}/"
        phase_files = {path: source[path] for path in by_folder.get(phase.directory, ())}
        for path in phase_files:
            del files[path]
        saved = newest.get(phase.number)
        if saved is None:
            continue
        attempt = saved.attempt
        now = current.get(phase.number)
        where = (
            inside
            if now is not None and now.retry_count + 1 == attempt
            else f"{inside}{ATTEMPTS_DIR}/{attempt}/"
        )
        checkpoint = CHECKPOINT.parse(saved.checkpoint_text)
        said = (
            f"cannot fork from entry {entry.entry_id}: the outputs phase {phase.number} had then "
            f"(attempt {attempt}, entry {saved.entry_id}) are no longer on disk"
        )
        outputs: dict[str, str] = {}
        for run in checkpoint.agents:
            if run.status != "completed":
                continue
            path = f"{where}{run.agent_name}.md"
            if path not in source:
                raise NotFoundError(f"{said}: {path} is missing", path=source_dir / path)
            files[f"{inside}{run.agent_name}.md"] = source[path]
            outputs[run.agent_name] = AGENT_OUTPUT.parse(decode(source[path], source_dir / path)).content
        if checkpoint.outputs_digest is not None and outputs_digest(outputs) != checkpoint.outputs_digest:
            now_digest = outputs_digest(outputs)
            raise NotFoundError(
                f"{said}: they changed since (digest {checkpoint.outputs_digest}, now {now_digest})",
                path=source_dir / where,
            )
        files[f"{inside}{CHECKPOINT_FILE}"] = saved.checkpoint_text.encode("utf-8")
        review = reviews.get((phase.number, attempt))
        if review is not None and review.feedback_text is not None:
            files[f"{inside}{FEEDBACK_FILE}"] = review.feedback_text.encode("utf-8")
        elif f"{where}{FEEDBACK_FILE}" in source:
            path = f"{where}{FEEDBACK_FILE}"
            feedback = hand_review_time(
                FEEDBACK.parse(decode(source[path], source_dir / path)),
                source_dir / path,
                checkpoint.completed,
            )
            if feedback.reviewed and feedback.timestamp and parse_timestamp(feedback.timestamp) <= moment:
                files[f"{inside}{FEEDBACK_FILE}"] = source[path]
        earlier = f"{inside}{ATTEMPTS_DIR}/"
        for path, data in phase_files.items():
            number = path[len(earlier) :].split("/")[0] if path.startswith(earlier) else ""
            if number.isdigit() and int(number) < attempt:
                files[path] = data
    return files
