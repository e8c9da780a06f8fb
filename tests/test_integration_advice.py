"""The advice on sessions another framework runs: resume the graph or the flow, never haytham.

A LangGraph thread and a CrewAI flow run are sessions that haytham's runner never runs. Their
workflow copy carries ``run_by`` (``haytham.format.run_by``), and ``haytham status``,
``feedback``, ``review`` and the session page say to answer the review with haytham and to
resume the graph (``resume_command``) or the flow (``resume_from_review``); ``haytham
resume`` refuses them with the same advice. Sessions written before the mark are known by
their workflow's name and the integration's folder. Every command runs in a real process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

try:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph is not installed: pip install 'haytham[langgraph]'", allow_module_level=True)

from haytham import CheckpointManager
from haytham.format import run_by
from haytham.format.layout import WORKFLOW_FILE
from haytham.format.workflow import Workflow, load_workflow
from haytham.integrations.langgraph import LANGGRAPH_WORKFLOW, HaythamSaver

P = "langgraph"
GRAPH = "resume the graph with graph.invoke(resume_command(saver, config), config)"


def haytham(base: Path, *args: str, code: int = 0) -> str:
    """``python -m haytham ARGS --base-dir BASE`` in a process of its own: its output."""
    done = subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        env={**os.environ, "EDITOR": "true", "VISUAL": "true", "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout + done.stderr


def assert_never_haytham_runs(text: str) -> None:
    assert "haytham resume" not in text and "haytham run" not in text and "haytham rerun" not in text, text


class Notes(TypedDict, total=False):
    topic: str
    answer: Any


def _paused_thread(base: Path, thread: str = "notes") -> HaythamSaver:
    """A graph that asked a person and waits: its thread's session awaits review."""

    def ask(state: Notes) -> Notes:
        return {"answer": interrupt({"question": "Publish?", "topic": state["topic"]})}

    graph = StateGraph(Notes)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    saver = HaythamSaver(base, P)
    app = graph.compile(checkpointer=saver)
    app.invoke({"topic": "Release"}, {"configurable": {"thread_id": thread}})
    return saver


def test_a_langgraph_session_says_resume_the_graph_in_every_command(tmp_path: Path) -> None:
    saver = _paused_thread(tmp_path)
    assert load_workflow(saver.session_dir("notes") / WORKFLOW_FILE).run_by == "langgraph"

    status = haytham(tmp_path, "status", P, "notes")
    assert f"Next: phase 1 awaits review: edit {saver.session_dir('notes')}" in status
    assert f"feedback langgraph notes 1 --approve --base-dir {tmp_path}; then {GRAPH}" in status
    assert_never_haytham_runs(status)
    reviewed = haytham(tmp_path, "review", P, "notes")  # $EDITOR changes nothing: the advice stays
    assert GRAPH in reviewed and "1 phase awaits review" in reviewed
    assert_never_haytham_runs(reviewed)

    sent_back = haytham(tmp_path, "feedback", P, "notes", "1", "--reject", "--comment", "Too short")
    assert f"Next: phase 1 was sent back: {GRAPH}, which hands it the comments" in sent_back
    assert "(LangGraph runs this session, not haytham)" in sent_back
    assert_never_haytham_runs(sent_back)
    refused = haytham(tmp_path, "resume", P, "notes", code=1)
    assert "langgraph/notes is run by LangGraph, not haytham: it cannot be run here" in refused
    assert GRAPH in refused
    for command in (
        ("rerun", P, "notes", "--from-phase", "1"),
        ("fork", P, "notes", "copy", "--from-phase", "1"),
    ):
        other = haytham(tmp_path, *command, code=1)
        assert "is run by LangGraph, not haytham" in other and GRAPH in other
        assert_never_haytham_runs(other)
    assert not saver.session_dir("copy").exists()

    approved = haytham(tmp_path, "feedback", P, "notes", "1", "--approve")
    assert f"Next: every phase is done: if the graph still waits for its last review, {GRAPH}" in approved
    assert "; read the results with haytham show langgraph notes" in approved
    assert_never_haytham_runs(approved)

    data = json.loads(haytham(tmp_path, "status", P, "notes", "--json"))
    assert data["next"]["resume"] == run_by.LANGGRAPH.resume
    assert data["next"]["command"].startswith("haytham show")


def test_a_thread_saved_before_the_mark_gets_the_same_advice_and_reads_unchanged(tmp_path: Path) -> None:
    saver = _paused_thread(tmp_path)
    path = saver.session_dir("notes") / WORKFLOW_FILE
    text = path.read_text()
    assert "run_by: langgraph\n" in text
    path.write_text(text.replace("run_by: langgraph\n", ""))  # as the integration wrote it before
    old = load_workflow(path)
    assert old.run_by is None and old.fingerprint() == LANGGRAPH_WORKFLOW.fingerprint()

    status = haytham(tmp_path, "status", P, "notes")
    assert GRAPH in status
    assert_never_haytham_runs(status)
    haytham(tmp_path, "validate")  # exit code 0: the session reads as before


def test_a_haytham_session_of_that_name_without_the_folder_keeps_haythams_advice(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    own = Workflow(name="langgraph", phases=LANGGRAPH_WORKFLOW.phases, modes=LANGGRAPH_WORKFLOW.modes)
    manager.create_session(P, "mine", "ada", own, "default")
    assert run_by.recognise("langgraph", lambda folder: False) is None
    status = haytham(tmp_path, "status", P, "mine")
    assert "Next: phase 1 (Review) is ready to run: run haytham resume" in status
    assert "graph.invoke" not in status


def test_an_unknown_framework_is_named_and_resumed_with_its_own_code() -> None:
    other = run_by.run_by("autogen")
    assert other is not None and other.label == "autogen" and other.resume == "its own code"
    assert run_by.run_by(None) is None
    assert run_by.run_by("crewai") is run_by.CREWAI
