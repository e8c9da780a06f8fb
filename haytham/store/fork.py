"""What a forked session holds: the source's files of the phases before the fork point, a
history that starts with one entry per copied checkpoint, and a manifest derived from them.

``fork_files`` only computes the files; ``CheckpointManager.fork_session`` reads the source
under its lock and writes the result with ``haytham.store.copy.write_session_dir``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from haytham.format import CHECKPOINT, HISTORY_ENTRY, MANIFEST
from haytham.format.layout import CHECKPOINT_FILE, MANIFEST_FILE, WORKFLOW_FILE
from haytham.format.reader import decode
from haytham.format.workflow import PhaseDefinition
from haytham.records import PhaseCheckpoint, SessionManifest
from haytham.store import history
from haytham.store import progress as _progress


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
) -> tuple[dict[str, bytes], list[PhaseDefinition]]:
    """The files of a fork of the session at ``source_dir`` from phase ``start``, and the
    phases it copies.

    ``source`` is the session's files (``read_session_files``); the phases before ``start``
    in ``phases`` are copied byte for byte with ``workflow.yaml``, each copied checkpoint
    gets a history entry (reason ``forked from {session}``) and the manifest says
    ``Forked From: {session} at phase {n}``. ``target`` names the manifest in errors.
    """
    kept = list(phases[: phases.index(start)])
    kept_dirs = {phase.directory for phase in kept}
    files = {
        path: data
        for path, data in source.items()
        if path == WORKFLOW_FILE or path.split("/")[0] in kept_dirs
    }
    reason = f"forked from {manifest.session_id}"
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
    )
    MANIFEST.check_record(forked, target / MANIFEST_FILE)
    files[MANIFEST_FILE] = MANIFEST.render(forked).encode("utf-8")
    return files, kept
