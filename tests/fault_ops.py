"""The multi-file operations the fault-injection harness kills (tests/test_fault_injection.py).

Each operation has a ``setup(root)`` that builds the tree before it under ``root / "base"``
(with any input it reads under ``root / "aux"``) and a ``run(root)`` that performs it. Both
use a fixed clock, so two runs of an operation write the same bytes and the tree a killed
run leaves can be compared with the trees before and after an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from haytham import CheckpointManager, transfer
from haytham.format.workflow import BUILTIN_WORKFLOWS
from haytham.migrate import migrate
from haytham.projects import ProjectManager
from haytham.retention import RetentionPolicy, cleanup
from haytham.run.demo import DEMO_PROJECT, run_demo

P, S = "acme", "s-1"
MOMENT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
LEGACY = Path(__file__).resolve().parent / "legacy" / "corpus" / "projects" / "proj-legacy"


def clock() -> datetime:
    return MOMENT


def base(root: Path) -> Path:
    return root / "base"


def manager(root: Path) -> CheckpointManager:
    return CheckpointManager(base(root), clock=clock, lock_timeout=10)


def projects(root: Path) -> ProjectManager:
    return ProjectManager(base(root), clock=clock, lock_timeout=10)


def _agents(status: str = "completed") -> list[dict[str, object]]:
    return [{"agent_name": "writer", "status": status, "tokens": 10, "cost": 0.01}]


def _phase(m: CheckpointManager, phase: int, text: str, session: str = S) -> None:
    m.save_agent_output(P, session, phase, "writer", text)
    m.save_checkpoint(P, session, phase, "completed", _agents())


def _session(root: Path, phases: int = 1, session: str = S) -> CheckpointManager:
    m = manager(root)
    m.create_session(P, session, "u", execution_mode="mvp")
    for number in (1, 2, 3)[:phases]:
        _phase(m, number, f"phase {number} output\n", session)
    if phases >= 1:
        m.save_user_feedback(P, session, 1, True, True, comments="good")
    return m


# ------------------------------------------------------------------ operations


def setup_save_checkpoint(root: Path) -> None:
    m = _session(root, phases=1)
    m.save_agent_output(P, S, 2, "writer", "phase 2 output\n")


def run_save_checkpoint(root: Path) -> None:
    manager(root).save_checkpoint(P, S, 2, "completed", _agents())


def setup_save_phase(root: Path) -> None:
    _session(root, phases=1)


def run_save_phase(root: Path) -> None:
    outputs = {"writer": "phase 2 output\n", "critic": {"output_content": "fine\n", "model": "m"}}
    review = {"reviewed": True, "approved": True, "comments": "good"}
    manager(root).save_phase(P, S, 2, outputs, "completed", review)


def setup_review(root: Path) -> None:
    _session(root, phases=1)
    manager(root).update_feedback(P, S, 1, reviewed=False, approved=False, action="pending")


def run_review(root: Path) -> None:
    manager(root).save_user_feedback(
        P, S, 1, True, False, comments="send it back", requested_changes=["shorter"], action="rejected"
    )


def setup_update_feedback(root: Path) -> None:
    _session(root, phases=1)
    manager(root).update_feedback(P, S, 1, reviewed=False, approved=False, action="pending")


def run_update_feedback(root: Path) -> None:
    manager(root).update_feedback(P, S, 1, reviewed=True, approved=True, action="approved")


def setup_correct_output(root: Path) -> None:
    _session(root, phases=2)  # phase 2 is built on phase 1's output


def run_correct_output(root: Path) -> None:
    """A reviewer's correction of phase 1's output: the output, the checkpoint with the
    history entry keeping the original, the review (modified) and its entry, the manifest."""
    manager(root).correct_output(P, S, 1, "writer", "phase 1 output, corrected\n", approve=True)


def setup_start_attempt(root: Path) -> None:
    _session(root, phases=1)
    manager(root).save_user_feedback(P, S, 1, True, False, comments="redo", action="rejected")


def run_start_attempt(root: Path) -> None:
    manager(root).start_attempt(P, S, 1)


def setup_archive_from(root: Path) -> None:
    _session(root, phases=2)


def run_archive_from(root: Path) -> None:
    manager(root).archive_from(P, S, 1)


def setup_fork(root: Path) -> None:
    _session(root, phases=2)


def run_fork(root: Path) -> None:
    manager(root).fork_session(P, S, "s-2", from_phase=2)


def setup_import(root: Path) -> None:
    _session(root, phases=2)
    (root / "aux").mkdir()
    transfer.export_session(manager(root), P, S, root / "aux" / "export.json")


def run_import(root: Path) -> None:
    transfer.import_session(manager(root), root / "aux" / "export.json", project_id="other")


def setup_import_tar(root: Path) -> None:
    _session(root, phases=1)
    (root / "aux").mkdir()
    transfer.export_session(manager(root), P, S, root / "aux" / "export.tar.gz")


def run_import_tar(root: Path) -> None:
    transfer.import_session(manager(root), root / "aux" / "export.tar.gz", project_id="other")


def setup_import_overwrite(root: Path) -> None:
    m = _session(root, phases=1)
    (root / "aux").mkdir()
    transfer.export_session(m, P, S, root / "aux" / "export.json")
    m.save_user_feedback(P, S, 1, True, False, comments="differs from the export", action="rejected")


def run_import_overwrite(root: Path) -> None:
    transfer.import_session(manager(root), root / "aux" / "export.json", overwrite=True)


def _project(root: Path) -> str:
    pm = projects(root)
    created = pm.create_project("u", "An idea worth testing", "Idea")
    (root / "aux").mkdir(exist_ok=True)
    (root / "aux" / "project").write_text(created["project_id"])
    session = pm.start_session(created["project_id"])
    m = manager(root)
    m.save_agent_output(created["project_id"], session["session_id"], 1, "writer", "text\n")
    (root / "aux" / "session").write_text(session["session_id"])
    return str(created["project_id"])


def setup_delete_project(root: Path) -> None:
    _project(root)


def run_delete_project(root: Path) -> None:
    projects(root).delete_project((root / "aux" / "project").read_text())


def setup_complete_session(root: Path) -> None:
    _project(root)
    projects(root).complete_session(
        (root / "aux" / "project").read_text(), (root / "aux" / "session").read_text(), "# v1\n"
    )


def run_complete_session(root: Path) -> None:
    projects(root).complete_session(
        (root / "aux" / "project").read_text(),
        (root / "aux" / "session").read_text(),
        "# Requirements v2\n",
        {"tokens": 5},
    )


def setup_archive_project(root: Path) -> None:
    _project(root)


def run_archive_project(root: Path) -> None:
    projects(root).archive_project((root / "aux" / "project").read_text())


def setup_prune(root: Path) -> None:
    _session(root, phases=3, session="s-old")
    _session(root, phases=3, session="s-new")


def run_prune(root: Path) -> None:
    cleanup(manager(root), RetentionPolicy(max_sessions_per_project=1, include_in_progress=True), now=MOMENT)


def setup_migrate(root: Path) -> None:
    target = base(root) / "proj-legacy" / "sessions" / "sess-mvp-complete"
    shutil.copytree(LEGACY / "sessions" / "sess-mvp-complete", target)
    # doctor --fix first, so that the tree before holds nothing a recovery would repair; the
    # checkpoints and outputs are still version 0.
    manager(root).repair("proj-legacy", "sess-mvp-complete")


def run_migrate(root: Path) -> None:
    migrate(base(root))


def setup_change_workflow(root: Path) -> None:
    _session(root, phases=1)


def run_change_workflow(root: Path) -> None:
    workflow = BUILTIN_WORKFLOWS["idea_validation"]
    manager(root).change_workflow(P, S, dataclasses.replace(workflow, max_retries=5))


Operation = tuple[Callable[[Path], None], Callable[[Path], None]]
OPERATIONS: dict[str, Operation] = {
    "save_checkpoint": (setup_save_checkpoint, run_save_checkpoint),
    "save_phase": (setup_save_phase, run_save_phase),
    "review": (setup_review, run_review),
    "update_feedback": (setup_update_feedback, run_update_feedback),
    "correct_output": (setup_correct_output, run_correct_output),
    "start_attempt": (setup_start_attempt, run_start_attempt),
    "archive_from": (setup_archive_from, run_archive_from),
    "fork": (setup_fork, run_fork),
    "import": (setup_import, run_import),
    "import_tar": (setup_import_tar, run_import_tar),
    "import_overwrite": (setup_import_overwrite, run_import_overwrite),
    "delete_project": (setup_delete_project, run_delete_project),
    "complete_session": (setup_complete_session, run_complete_session),
    "archive_project": (setup_archive_project, run_archive_project),
    "prune": (setup_prune, run_prune),
    "migrate": (setup_migrate, run_migrate),
    "change_workflow": (setup_change_workflow, run_change_workflow),
}


# ------------------------------------------- the steps of a resume (tests/test_recover_first.py)


def setup_resume_start_attempt(root: Path) -> None:
    """A demo session whose phase 1 a reviewer sent back, with the review updated as a resume
    updates it just before ``start_attempt`` (``PhaseRunner._start_again``)."""
    m = manager(root)
    run_demo(m, S, review="manual")
    m.save_user_feedback(
        DEMO_PROJECT, S, 1, True, False, comments="redo", requested_changes=["shorter"], action="rejected"
    )
    m.update_feedback(DEMO_PROJECT, S, 1, action="rejected", retry_count=1)


def run_resume_start_attempt(root: Path) -> None:
    manager(root).start_attempt(DEMO_PROJECT, S, 1)


def setup_resume_save(root: Path) -> None:
    """A demo session whose every phase is done but the last, whose output is saved: the
    resume's last save (``save_checkpoint`` completed) is what completes the session."""
    m = manager(root)
    run_demo(m, S)
    m.save_checkpoint(DEMO_PROJECT, S, 7, "in_progress", [{"agent_name": "synthesizer", "status": "pending"}])


def run_resume_save(root: Path) -> None:
    manager(root).save_checkpoint(
        DEMO_PROJECT, S, 7, "completed", [{"agent_name": "synthesizer", "status": "completed"}]
    )


def setup_langgraph_review(root: Path) -> None:
    """A LangGraph thread paused at an interrupt that a reviewer approved."""
    from haytham.integrations.langgraph import HaythamSaver
    from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW, MODE, open_review

    saver = HaythamSaver(base(root), "langgraph")
    # the thread's session, as the saver's first checkpoint creates it
    saver.manager.create_session("langgraph", saver.session_id("t1"), "langgraph", LANGGRAPH_WORKFLOW, MODE)
    open_review(saver.manager.session("langgraph", saver.session_id("t1")), "cp-1", ["first question"])
    saver.manager.save_user_feedback("langgraph", saver.session_id("t1"), 1, True, True, comments="yes")


def run_langgraph_review(root: Path) -> None:
    """The thread's next interrupt: a new attempt of the review phase (``start_attempt``)."""
    from haytham.integrations.langgraph import HaythamSaver
    from haytham.integrations.langgraph.review import open_review

    saver = HaythamSaver(base(root), "langgraph")
    open_review(saver.manager.session("langgraph", saver.session_id("t1")), "cp-2", ["second question"])


def setup_legacy_attempt(root: Path) -> None:
    setup_migrate(root)


def run_legacy_attempt(root: Path) -> None:
    """A new attempt of a legacy session's phase 1: the copies it archives are old files."""
    manager(root).start_attempt("proj-legacy", "sess-mvp-complete", 1)


INTERRUPTED: dict[str, Operation] = {
    "resume_start_attempt": (setup_resume_start_attempt, run_resume_start_attempt),
    "resume_save": (setup_resume_save, run_resume_save),
    "langgraph_review": (setup_langgraph_review, run_langgraph_review),
    "legacy_attempt": (setup_legacy_attempt, run_legacy_attempt),
}
"""Writes killed part way before another writer runs (tests/test_recover_first.py): not in
``OPERATIONS``, whose harness compares the trees before and after every operation."""


def operation(name: str) -> Operation:
    """The operation ``name`` of ``OPERATIONS`` or ``INTERRUPTED`` (for the fault worker)."""
    return OPERATIONS[name] if name in OPERATIONS else INTERRUPTED[name]


def prepare(name: str) -> None:
    """Import, once in the fault worker, what every run of the operation ``name`` imports, so
    that each forked child shares it instead of importing it again (LangGraph takes seconds)."""
    if name.startswith("langgraph"):
        import haytham.integrations.langgraph  # noqa: F401
