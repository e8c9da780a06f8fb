"""A LangGraph graph kept by haytham: it drafts, pauses for a person's review, and finalises.

    pip install 'haytham[langgraph]'
    python examples/langgraph_review.py [BASE_DIR]

Three deterministic local nodes (no network, no model):

1. ``draft`` writes a short markdown draft;
2. ``review`` pauses the graph with ``interrupt()``: haytham shows the thread as a phase
   awaiting review (``haytham list --awaiting-review``, ``haytham review``);
3. ``finalise`` turns the draft and the reviewer's answer into the final text.

The run is killed on purpose: a child process runs the graph and is killed (SIGKILL) in the
middle of the ``draft`` node. This process then resumes the thread from its last checkpoint,
answers the review the way ``haytham feedback --approve`` would, resumes the graph with
``resume_command`` and prints the session's files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from haytham.integrations.langgraph import HaythamSaver, resume_command

PROJECT = "langgraph_review"
THREAD = "release-notes-1"
PAUSE_FILE = "LANGGRAPH_REVIEW_PAUSE_FILE"
"""When set, ``draft`` creates this file and then waits forever: the moment to kill it."""


class State(TypedDict, total=False):
    topic: str
    draft: str
    review: dict[str, Any]
    final: str


def draft(state: State) -> State:
    pause = os.environ.get(PAUSE_FILE)
    if pause:
        Path(pause).touch()
        time.sleep(3600)  # killed here
    topic = state["topic"]
    return {"draft": f"# {topic}\n\n- Faster saves\n- Sessions you can read in any editor\n"}


def review(state: State) -> State:
    answer = interrupt({"question": "Is this draft ready to publish?", "draft": state["draft"]})
    return {"review": answer}


def finalise(state: State) -> State:
    answer = state["review"]
    verdict = "Approved" if answer["approved"] else "Sent back"
    note = f"\n> {verdict} by the reviewer: {answer['comments']}\n" if answer["comments"] else ""
    return {"final": state["draft"] + note}


def build_graph(saver: HaythamSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("finalise", finalise)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "finalise")
    graph.add_edge("finalise", END)
    return graph.compile(checkpointer=saver)


def config() -> Any:
    return {"configurable": {"thread_id": THREAD}}


def start(base_dir: str) -> None:
    """The child's part: start the thread (it is killed inside ``draft``)."""
    app = build_graph(HaythamSaver(base_dir, PROJECT))
    # "sync": each checkpoint is on disk before the next step starts, so a kill loses at most
    # the step that was running (LangGraph's default, "async", may also lose the last save).
    app.invoke({"topic": "Release notes"}, config(), durability="sync")


def run_and_kill(base_dir: str) -> None:
    """Start the graph in a child process and kill it in the middle of ``draft``."""
    pause = Path(base_dir) / "draft-started"
    env = {**os.environ, PAUSE_FILE: str(pause)}
    child = subprocess.Popen([sys.executable, __file__, "--start", base_dir], env=env)
    deadline = time.monotonic() + 120
    while not pause.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    pause.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--start"]:
        start(argv[1])
        return 0
    base_dir = argv[0] if argv else tempfile.mkdtemp(prefix="haytham-langgraph-")
    saver = HaythamSaver(base_dir, PROJECT)
    app = build_graph(saver)

    run_and_kill(base_dir)
    print(f"killed in the middle of 'draft'; the thread is at: {app.get_state(config()).next}")

    app.invoke(None, config())  # resume from the last checkpoint: draft again, then review pauses
    session = saver.session_id(THREAD)
    print(f"paused for review: {saver.manager.state(PROJECT, session).state}")
    print(f"  (haytham list --awaiting-review --base-dir {base_dir})")

    # The reviewer's answer, as `haytham feedback langgraph_review release-notes-1 1 --approve
    # --comment "Ship it."` or `haytham review` would write it into user_feedback.md.
    saver.manager.save_user_feedback(PROJECT, session, 1, reviewed=True, approved=True, comments="Ship it.")
    command = resume_command(saver, config())
    result = app.invoke(command, config())
    print(f"finished: {saver.manager.state(PROJECT, session).state}\n")
    print(result["final"])

    directory = saver.session_dir(THREAD)
    print(f"The session's files ({directory}):")
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            print(f"  {path.relative_to(directory)}")
    newest = max((directory / "langgraph" / "root").glob("*[0-9a-f].md"))
    print(f"\n{newest.relative_to(directory)}:\n")
    print(newest.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
