"""A CrewAI Flow kept by haytham: it drafts, pauses for a person's review, and publishes.

    pip install 'haytham[crewai]'
    python examples/crewai_review.py [BASE_DIR]

Three plain Python methods (no LLM call, no network), persisted with
``@persist(HaythamFlowPersistence(...))``:

1. ``draft`` writes a short markdown draft into the state;
2. ``review`` is a ``@human_feedback`` gate whose provider pauses the flow: haytham shows
   the run as a phase awaiting review (``haytham list --awaiting-review``), with CrewAI's
   message and its outcomes (``approved``, ``revise``);
3. ``publish`` runs on ``approved``.

The run is killed on purpose: a child process kicks the flow off and is killed (SIGKILL) in
the middle of ``review``, after ``draft`` was saved. This process kicks the run off again
with its id (CrewAI reloads the saved state, so ``draft`` keeps its text) until it pauses,
answers the review with ``haytham feedback ... --approve`` in another process, resumes the
flow with ``resume_from_review`` and prints the session's files.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.update(  # CrewAI's documented opt-outs: no telemetry, no tracing, no network
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "OTEL_SDK_DISABLED": "true",
    }
)
if "CREWAI_STORAGE_DIR" not in os.environ:  # CrewAI's own store, made (and removed) by this process
    os.environ["CREWAI_STORAGE_DIR"] = tempfile.mkdtemp(prefix="crewai-storage-")
    atexit.register(shutil.rmtree, os.environ["CREWAI_STORAGE_DIR"], ignore_errors=True)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # CrewAI's import warns about its own packages
    from crewai.flow.async_feedback.types import HumanFeedbackPending, PendingFeedbackContext
    from crewai.flow.flow import Flow, FlowState, listen, start
    from crewai.flow.human_feedback import human_feedback
    from crewai.flow.persistence import persist

from haytham.integrations.crewai import HaythamFlowPersistence, resume_from_review

PROJECT = "crewai_review"
BASE_DIR = "CREWAI_REVIEW_BASE_DIR"
PAUSE_FILE = "CREWAI_REVIEW_PAUSE_FILE"
"""When set, ``review`` creates this file and then waits forever: the moment to kill it."""


class AwaitReview:
    """A feedback provider that never blocks: it pauses the flow (CrewAI saves the pause)."""

    def request_feedback(self, context: PendingFeedbackContext, flow: Flow[Any]) -> str:
        raise HumanFeedbackPending(context=context)


def _base_dir() -> str:
    """The example's folder: the child's from its parent; the command line's; else a new one."""
    given = os.environ.get(BASE_DIR)
    if not given and __name__ == "__main__" and sys.argv[1:2] and sys.argv[1] != "--start":
        given = sys.argv[1]
    os.environ[BASE_DIR] = given or tempfile.mkdtemp(prefix="haytham-crewai-")
    return os.environ[BASE_DIR]


STORE = HaythamFlowPersistence(_base_dir(), PROJECT)


class ReleaseState(FlowState):
    draft: str = ""
    drafts_written: int = 0
    published: str = ""


@persist(STORE)
class ReleaseNotes(Flow[ReleaseState]):
    @start()
    def draft(self) -> str:
        if not self.state.draft:  # a run kicked off again keeps its saved draft
            self.state.draft = "# Release notes\n\n- Faster saves\n- Sessions you can read in any editor\n"
            self.state.drafts_written += 1
        return self.state.draft

    @listen(draft)
    @human_feedback(
        message="Is this draft ready to publish?",
        emit=["approved", "revise"],
        llm="gpt-4o-mini",  # never called: the reviewer picks the outcome in haytham
        provider=AwaitReview(),
    )
    def review(self) -> str:
        pause = os.environ.get(PAUSE_FILE)
        if pause:
            Path(pause).touch()
            time.sleep(3600)  # killed here
        return self.state.draft

    @listen("approved")
    def publish(self) -> str:
        feedback = self.last_human_feedback
        comments = feedback.feedback if feedback else ""
        self.state.published = self.state.draft + (f"\n> Reviewer: {comments}\n" if comments else "")
        return self.state.published


def run_and_kill(base_dir: str, flow_id: str) -> None:
    """Kick the flow off in a child process and kill it in the middle of ``review``."""
    pause = Path(base_dir) / "review-started"
    env = {**os.environ, PAUSE_FILE: str(pause)}
    child = subprocess.Popen([sys.executable, __file__, "--start", flow_id], env=env)
    deadline = time.monotonic() + 300
    while not pause.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.kill()
    child.wait()
    pause.unlink(missing_ok=True)


def haytham(*args: str) -> str:
    """Run the ``haytham`` command in another process, as a reviewer would."""
    command = [sys.executable, "-m", "haytham", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def main(argv: list[str]) -> int:
    if argv[:1] == ["--start"]:
        ReleaseNotes(suppress_flow_events=True).kickoff(inputs={"id": argv[1]})
        return 0
    base_dir, store = STORE.base_dir, STORE
    flow_id = "release-notes-1"

    run_and_kill(base_dir, flow_id)
    print(f"killed in the middle of 'review'; the saved state has: {sorted(store.load_state(flow_id) or {})}")

    paused = ReleaseNotes(suppress_flow_events=True).kickoff(
        inputs={"id": flow_id}
    )  # reloads the state; review pauses
    assert isinstance(paused, HumanFeedbackPending), paused
    session = store.session_id(flow_id)
    print(f"paused for review: {store.manager.state(PROJECT, session).state}")
    print(haytham("list", "--awaiting-review", "--base-dir", base_dir))

    number = store.pending_phase(flow_id)
    print(
        haytham(
            "feedback",
            PROJECT,
            session,
            str(number),
            "--approve",
            "--comment",
            "Approved: ship it.",
            "--reviewer",
            "Ada <ada@example.com>",
            "--base-dir",
            base_dir,
        )
    )
    result = resume_from_review(ReleaseNotes, store, flow_id, suppress_flow_events=True)
    print(f"finished: {store.manager.state(PROJECT, session).state}\n")
    print(result)

    directory = store.session(flow_id).directory
    print(f"The session's files ({directory}):")
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            print(f"  {path.relative_to(directory)}")
    last = directory / "phase_3_publish" / "state.md"
    print(f"\n{last.relative_to(directory)}:\n")
    print(last.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
