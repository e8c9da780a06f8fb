"""Big sessions made quickly, for the work-counting tests and ``benchmarks/scale.py``.

Saving through the library is the honest way to make a session, but a thousand phases or
ten thousand attempts saved one call at a time take minutes. So each maker saves the first
steps through ``CheckpointManager`` and then writes the rest (a microsecond apart, after the
last save) as the library would have
written them: records made from the saved ones (``dataclasses.replace``), rendered by the
same formats, with a history entry for each checkpoint and review, chained from the
manifest's History Head, and the manifest updated to match. The result is a session every
reader accepts (``validate`` finds nothing to report), only made faster.

- ``many_phases(base, n)``: one session of a workflow of ``n`` phases, every one completed
  and approved;
- ``many_attempts(base, n)``: one session whose phase 1 has ``n`` attempts (``n - 1``
  archived in ``attempts/{k}/``, all rejected, the current one approved) and a phase 2;
- ``long_history(base, n)``: one session of the default workflow with ``n`` history entries
  (and phase 1 saved).
"""

from __future__ import annotations

import dataclasses
import shutil
from datetime import timedelta
from pathlib import Path

from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, HISTORY_ENTRY, MANIFEST
from haytham.format.layout import (
    ATTEMPTS_DIR,
    CHECKPOINT_FILE,
    FEEDBACK_FILE,
    HISTORY_DIR,
    MANIFEST_FILE,
)
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.store import history
from haytham.store.clock import format_timestamp, parse_timestamp
from haytham.store.manager import CheckpointManager

PROJECT = "acme"
SESSION = "big"
AGENT = "writer"


def workflow_of(phases: int) -> Workflow:
    """A workflow of ``phases`` one-agent phases, all in its one mode ``full``."""
    return Workflow(
        f"w{phases}",
        tuple(
            PhaseDefinition(n, f"Phase {n}", f"phase_{n}_step", (AGENT,), "sequential")
            for n in range(1, phases + 1)
        ),
        {"full": tuple(range(1, phases + 1))},
    )


class _Writer:
    """Writes history entries after the session's head, then moves the head."""

    def __init__(self, manager: CheckpointManager, session: str) -> None:
        self.directory = manager.session_dir(PROJECT, session)
        manifest = MANIFEST.load(self.directory / MANIFEST_FILE)
        self.head = manifest.history_head
        self.start = parse_timestamp(manifest.last_updated or "")
        self.count = 0
        (self.directory / HISTORY_DIR).mkdir(exist_ok=True)

    def entry(
        self, phase: int, name: str, attempt: int, checkpoint: str, feedback: str | None = None
    ) -> None:
        self.count += 1
        status = CHECKPOINT.parse(checkpoint).status
        made = history.make_entry(
            self.head,
            phase,
            name,
            attempt,
            status,
            format_timestamp(self.start + timedelta(microseconds=self.count)),
            checkpoint,
            reason="approved" if feedback is not None else None,
            feedback_text=feedback,
        )
        path = self.directory / HISTORY_DIR / history.file_name(made)
        path.write_text(HISTORY_ENTRY.render(made), "utf-8")
        self.head = made.entry_id

    def finish(self, manager: CheckpointManager, session: str) -> None:
        """Point the manifest at the newest entry and rebuild its phase table."""
        path = self.directory / MANIFEST_FILE
        manifest = MANIFEST.load(path)
        path.write_text(MANIFEST.render(dataclasses.replace(manifest, history_head=self.head)), "utf-8")
        manager.repair(PROJECT, session)


def _save(manager: CheckpointManager, session: str, phase: int, text: str, approved: bool = True) -> None:
    manager.save_agent_output(PROJECT, session, phase, AGENT, text, duration=1.0, model="m")
    manager.save_checkpoint(
        PROJECT,
        session,
        phase,
        "completed",
        [{"agent_name": AGENT, "tokens": 10, "cost": 0.01, "duration": 1.0}],
    )
    manager.save_user_feedback(
        PROJECT, session, phase, True, approved, comments="ok" if approved else "again"
    )


def many_phases(base: Path, phases: int) -> CheckpointManager:
    """A session ``acme/big`` of a workflow of ``phases`` phases (at least 3), all approved."""
    workflow = workflow_of(phases)
    manager = CheckpointManager(base, workflows=[workflow])
    manager.create_session(PROJECT, SESSION, "ada", workflow, "full")
    _save(manager, SESSION, 1, "text\n")
    _save(manager, SESSION, 2, "text\n")
    directory = manager.session_dir(PROJECT, SESSION)
    model = directory / workflow.phases[1].directory
    output = AGENT_OUTPUT.load(model / f"{AGENT}.md")
    checkpoint = CHECKPOINT.load(model / CHECKPOINT_FILE)
    feedback = FEEDBACK.load(model / FEEDBACK_FILE)
    writer = _Writer(manager, SESSION)
    for phase in workflow.phases[2:]:
        number, name = phase.number, phase.name
        last = number == phases
        folder = directory / phase.directory
        folder.mkdir(exist_ok=True)
        (folder / f"{AGENT}.md").write_text(
            AGENT_OUTPUT.render(dataclasses.replace(output, phase_number=number, phase_name=name)), "utf-8"
        )
        text = CHECKPOINT.render(
            dataclasses.replace(
                checkpoint,
                phase_number=number,
                phase_name=name,
                previous_phase=f"Phase {number - 1}",
                next_phase=None if last else number + 1,
                next_phase_name=None if last else f"Phase {number + 1}",
                built_from=((number - 1, checkpoint.outputs_digest or ""),),
            )
        )
        (folder / CHECKPOINT_FILE).write_text(text, "utf-8")
        review = FEEDBACK.render(dataclasses.replace(feedback, phase_name=name))
        (folder / FEEDBACK_FILE).write_text(review, "utf-8")
        writer.entry(number, name, 1, text)
        writer.entry(number, name, 1, text, review)
    writer.finish(manager, SESSION)
    return manager


def many_attempts(base: Path, attempts: int) -> CheckpointManager:
    """A session ``acme/big`` whose phase 1 has ``attempts`` attempts (at least 2), and a phase 2."""
    workflow = workflow_of(2)
    manager = CheckpointManager(base, workflows=[workflow])
    manager.create_session(PROJECT, SESSION, "ada", workflow, "full")
    _save(manager, SESSION, 1, "first\n", approved=False)
    manager.start_attempt(PROJECT, SESSION, 1)
    directory = manager.session_dir(PROJECT, SESSION)
    phase = directory / workflow.phases[0].directory
    archived = phase / ATTEMPTS_DIR / "1"
    checkpoint = CHECKPOINT.load(archived / CHECKPOINT_FILE)
    feedback = FEEDBACK.load(archived / FEEDBACK_FILE)
    writer = _Writer(manager, SESSION)
    for attempt in range(2, attempts):
        folder = phase / ATTEMPTS_DIR / str(attempt)
        shutil.copytree(archived, folder)
        text = CHECKPOINT.render(dataclasses.replace(checkpoint, retry_count=attempt - 1))
        (folder / CHECKPOINT_FILE).write_text(text, "utf-8")
        review = FEEDBACK.render(dataclasses.replace(feedback, retry_count=attempt - 1))
        (folder / FEEDBACK_FILE).write_text(review, "utf-8")
        writer.entry(1, "Phase 1", attempt, text)
        writer.entry(1, "Phase 1", attempt, text, review)
    pending = CHECKPOINT.load(phase / CHECKPOINT_FILE)
    (phase / CHECKPOINT_FILE).write_text(
        CHECKPOINT.render(dataclasses.replace(pending, retry_count=attempts - 1)), "utf-8"
    )
    writer.finish(manager, SESSION)
    _save(manager, SESSION, 1, "last\n")
    _save(manager, SESSION, 2, "second\n")
    return manager


def long_history(base: Path, entries: int) -> CheckpointManager:
    """A session ``acme/big`` of the default workflow with phase 1 saved and ``entries``
    history entries in all (the saved ones, then checkpoint entries of phase 1)."""
    manager = CheckpointManager(base)
    manager.create_session(PROJECT, SESSION, "ada")
    manager.save_agent_output(PROJECT, SESSION, 1, AGENT, "text\n")
    manager.save_checkpoint(PROJECT, SESSION, 1, "completed", [{"agent_name": AGENT}])
    directory = manager.session_dir(PROJECT, SESSION)
    text = (
        directory / manager.session_workflow(PROJECT, SESSION).phases[0].directory / CHECKPOINT_FILE
    ).read_text("utf-8")
    writer = _Writer(manager, SESSION)
    saved = len(list((directory / HISTORY_DIR).iterdir()))
    name = CHECKPOINT.parse(text).phase_name
    for _ in range(entries - saved):
        writer.entry(1, name, 1, text)
    writer.finish(manager, SESSION)
    return manager
