"""HaythamSaver with LangGraph itself: the official conformance suite, real graphs, review,
time travel, forks, subgraphs, crashes, and the promise that reads never write.

Skipped only where LangGraph is not installed and CI is not set (in CI it must run).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import operator
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, TypedDict

import pytest

try:
    from langgraph.checkpoint.serde.types import INTERRUPT
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph is not installed: pip install 'haytham[langgraph]'", allow_module_level=True)

import langgraph_conformance
from test_cli import run, run_json

from haytham import CheckpointManager
from haytham.errors import SessionExistsError
from haytham.integrations.langgraph import HaythamSaver, resume_command

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
P = "langgraph"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "langgraph_review", ROOT / "examples" / "langgraph_review.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for the type hints of its state
    spec.loader.exec_module(module)
    return module


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and modification time."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ conformance


def test_the_conformance_suite_reports_full_on_a_fresh_directory() -> None:
    report = langgraph_conformance.run()
    text = langgraph_conformance.report_text(report)
    assert report.conformance_level() == "FULL", text
    assert report.passed_all_base(), text
    results = report.to_dict()["results"]
    assert set(results) == {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
        "prune",
        "delta_channel_history",  # LangGraph main's spec, vendored (tests/langgraph_delta_spec/)
    }
    assert all(r["detected"] and r["passed"] and not r["failures"] for r in results.values()), text
    assert sum(r["tests_passed"] for r in results.values()) >= 88
    assert results["delta_channel_history"]["tests_passed"] == 8, text
    assert re.search(r"✅ delta_channel_history", text), text
    assert "Result: FULL (9/9)" in text


@pytest.mark.parametrize("checkpointer", ["InMemorySaver", "AsyncSqliteSaver"])
def test_the_vendored_delta_spec_passes_on_langgraphs_own_savers(checkpointer: str) -> None:
    """The spec is right: LangGraph's own savers pass it, as its repository says they do."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        if checkpointer == "InMemorySaver":
            yield InMemorySaver()
        else:
            async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
                yield saver

    report = langgraph_conformance.run_on(checkpointer, make)
    delta = report.to_dict()["results"]["delta_channel_history"]
    assert delta["detected"] and delta["passed"] and delta["tests_passed"] == 8, delta["failures"]


def test_the_vendored_delta_spec_fails_a_saver_that_gets_the_history_wrong(tmp_path: Path) -> None:
    """The spec can fail: a saver that also returns the target's own pending writes fails."""

    class Wrong(HaythamSaver):
        async def aget_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
            history = await super().aget_delta_channel_history(config=config, channels=channels)
            own = await self.aget_tuple(config)
            for channel in history:
                history[channel]["writes"] = [
                    *history[channel]["writes"],
                    *[w for w in ((own.pending_writes or []) if own else []) if w[1] == channel],
                ]
            return history

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        yield Wrong(tmp_path, review=False)

    report = langgraph_conformance.run_on("Wrong", make)
    delta = report.to_dict()["results"]["delta_channel_history"]
    assert delta["detected"] and delta["passed"] is False, delta
    assert any("test_history_excludes_target_pending_writes" in f for f in delta["failures"])
    assert report.conformance_level() == "BASE+PARTIAL"
    assert "❌ delta_channel_history" in langgraph_conformance.report_text(report)


@pytest.mark.slow
def test_the_conformance_suite_passes_in_two_processes_sharing_one_directory(tmp_path: Path) -> None:
    script = HERE / "langgraph_conformance.py"
    children = [
        subprocess.Popen([sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, cwd=ROOT)
        for _ in range(2)
    ]
    reports = [json.loads(child.communicate(timeout=600)[0]) for child in children]
    for report in reports:
        assert report["conformance_level"] == "FULL", report["text"]
    result = run(tmp_path, "validate")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ a real graph with a review


class Draft(TypedDict, total=False):
    topic: str
    draft: str
    rounds: int
    review: dict[str, Any]
    final: str


def _review_graph(saver: HaythamSaver) -> Any:
    """draft -> review (interrupt) -> finalise, or back to draft when the review sends it back."""

    def draft(state: Draft) -> Draft:
        rounds = state.get("rounds", 0) + 1
        asked = state.get("review", {}).get("requested_changes", [])
        lines = "".join(f"- {change}\n" for change in asked)
        return {"draft": f"# {state['topic']} (round {rounds})\n\n{lines}", "rounds": rounds}

    def review(state: Draft) -> Draft:
        return {"review": interrupt({"question": "Publish?", "draft": state["draft"]})}

    def route(state: Draft) -> str:
        return "finalise" if state["review"]["approved"] else "draft"

    def finalise(state: Draft) -> Draft:
        return {"final": state["draft"] + "\nApproved: " + state["review"]["comments"]}

    graph = StateGraph(Draft)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("finalise", finalise)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_conditional_edges("review", route, ["draft", "finalise"])
    graph.add_edge("finalise", END)
    return graph.compile(checkpointer=saver)


def test_an_interrupt_awaits_review_and_each_answer_resumes_the_graph(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    app = _review_graph(saver)
    config: Any = {"configurable": {"thread_id": "notes"}}

    paused = app.invoke({"topic": "Release"}, config)
    assert paused["__interrupt__"][0].value["draft"] == "# Release (round 1)\n\n"
    listed = run_json(tmp_path, "list", "--awaiting-review")["sessions"]
    assert [(s["project_id"], s["session_id"], s["current_phase"]) for s in listed] == [(P, "notes", 1)]
    output = (saver.session_dir("notes") / "phase_1_review" / "interrupt.md").read_text()
    assert "### draft\n\n# Release (round 1)\n" in output
    assert resume_command(saver, config) is None  # nobody has answered yet

    sent_back = run(
        tmp_path, "feedback", P, "notes", "1", "--reject", "--comment", "Too short", "--change", "Add dates"
    )
    assert sent_back.exit_code == 0, sent_back.output
    command = resume_command(saver, config)
    assert command is not None
    assert command.resume == {"approved": False, "comments": "Too short", "requested_changes": ["Add dates"]}
    paused = app.invoke(command, config)
    assert paused["__interrupt__"][0].value["draft"] == "# Release (round 2)\n\n- Add dates\n"
    manager = CheckpointManager(tmp_path)
    view = manager.state(P, "notes")
    assert (view.state, view.phase(1).attempt) == ("awaiting_review", 2)
    assert (saver.session_dir("notes") / "phase_1_review" / "attempts" / "1" / "interrupt.md").is_file()

    approved = run(tmp_path, "feedback", P, "notes", "1", "--approve", "--comment", "Ship it")
    assert approved.exit_code == 0, approved.output
    command = resume_command(saver, config)
    assert command is not None
    done = app.invoke(command, config)
    assert done["final"] == "# Release (round 2)\n\n- Add dates\n\nApproved: Ship it"
    assert manager.state(P, "notes").state == "completed"
    assert resume_command(saver, config) is None  # no longer paused
    assert run(tmp_path, "validate").exit_code == 0
    assert "consistent" in run(tmp_path, "doctor", P, "notes").output


def test_the_same_interrupt_saved_again_opens_no_new_attempt(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    app = _review_graph(saver)
    config: Any = {"configurable": {"thread_id": "again"}}
    app.invoke({"topic": "T"}, config)
    before = snapshot(saver.session_dir("again") / "phase_1_review")
    app.invoke(None, config)  # run again without an answer: the same interrupt
    assert snapshot(saver.session_dir("again") / "phase_1_review") == before


def test_review_can_be_turned_off(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P, review=False)
    app = _review_graph(saver)
    config: Any = {"configurable": {"thread_id": "quiet"}}
    app.invoke({"topic": "T"}, config)
    assert CheckpointManager(tmp_path).state(P, "quiet").state == "in_progress"
    assert app.invoke(Command(resume={"approved": True, "comments": "ok"}), config)["final"].endswith("ok")


# ------------------------------------------------------------------ time travel and forks


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _abc(saver: HaythamSaver) -> Any:
    graph = StateGraph(Log)
    for name in "abc":
        graph.add_node(name, lambda state, name=name: {"log": [name]})
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    return graph.compile(checkpointer=saver)


def test_history_update_state_and_a_fork_from_an_earlier_checkpoint(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    app = _abc(saver)
    config: Any = {"configurable": {"thread_id": "abc"}}
    assert app.invoke({"log": []}, config) == {"log": ["a", "b", "c"]}

    history = list(app.get_state_history(config))
    assert [s.metadata["step"] for s in history] == [3, 2, 1, 0, -1]
    assert [s.next for s in history] == [(), ("c",), ("b",), ("a",), ("__start__",)]
    after_a = history[2]
    assert after_a.values == {"log": ["a"]}

    forked = app.update_state(after_a.config, {"log": ["x"]})  # a new branch from step 1
    assert app.get_state(forked).values == {"log": ["a", "x"]}
    assert app.invoke(None, forked) == {"log": ["a", "x", "b", "c"]}
    assert app.get_state(config).values == {"log": ["a", "x", "b", "c"]}
    first_branch = app.get_state(history[0].config)
    assert first_branch.values == {"log": ["a", "b", "c"]}  # the first run is still there

    fork_point = saver.get_tuple(forked)
    assert fork_point is not None and fork_point.parent_config is not None
    assert (
        fork_point.parent_config["configurable"]["checkpoint_id"]
        == after_a.config["configurable"]["checkpoint_id"]
    )
    assert fork_point.metadata["source"] == "update"
    assert len(list(app.get_state_history(config))) == 8  # 5 of the first run, the fork, b, c

    replay = app.invoke(None, history[1].config)  # time travel: run c again from step 2
    assert replay == {"log": ["a", "b", "c"]}


def test_a_diff_of_two_checkpoints_shows_only_what_changed(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    app = _abc(saver)
    config: Any = {"configurable": {"thread_id": "diff"}}
    app.invoke({"log": []}, config)
    history = list(app.get_state_history(config))
    folder = saver.session_dir("diff") / "langgraph" / "root"
    newer = (folder / f"{history[0].config['configurable']['checkpoint_id']}.md").read_text().splitlines()
    older = (folder / f"{history[1].config['configurable']['checkpoint_id']}.md").read_text().splitlines()
    changed = [line for line in newer if line not in older]
    assert '  "log": 5' in changed  # the channel c wrote moved to a new version
    assert '    "branch:to:c": 4' in changed  # and c saw its trigger
    assert [line for line in changed if line.startswith("- ")] == [
        line for line in newer if line.startswith(("- Checkpoint:", "- Parent:", "- Step:", "- Created:"))
    ]
    assert len(changed) < 15  # nothing else: the other channels, versions and nodes read the same


class Outer(TypedDict, total=False):
    text: str


def test_subgraph_namespaces_are_kept_apart(tmp_path: Path) -> None:
    inner = StateGraph(Outer)
    inner.add_node("shout", lambda state: {"text": state["text"].upper()})
    inner.add_edge(START, "shout")
    inner.add_edge("shout", END)
    outer = StateGraph(Outer)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    saver = HaythamSaver(tmp_path, P)
    app = outer.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "sub"}}
    assert app.invoke({"text": "hi"}, config) == {"text": "HI"}
    folders = sorted(p.name for p in (saver.session_dir("sub") / "langgraph").iterdir())
    assert folders[-1] == "root" and len(folders) == 2 and folders[0].startswith("ns-inner_3A")
    root = list(saver.list({"configurable": {"thread_id": "sub", "checkpoint_ns": ""}}))
    everything = list(saver.list({"configurable": {"thread_id": "sub"}}))
    assert {t.config["configurable"]["checkpoint_ns"] for t in root} == {""}
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in everything}
    assert len(namespaces) == 2 and any(ns.startswith("inner:") for ns in namespaces)


# ------------------------------------------------------------------ crashes, reads, imports


@pytest.mark.slow
def test_the_example_is_killed_mid_run_resumes_and_shows_its_files(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langgraph_review.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "killed in the middle of 'draft'; the thread is at: ('draft',)" in result.stdout
    assert "paused for review: awaiting_review" in result.stdout
    assert "> Approved by the reviewer: Ship it." in result.stdout
    assert "phase_1_review/user_feedback.md" in result.stdout
    assert "# LangGraph Checkpoint: " in result.stdout


def test_a_graph_killed_in_a_node_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    example = _example()
    example.run_and_kill(str(tmp_path))
    saver = HaythamSaver(tmp_path, example.PROJECT)
    app = example.build_graph(saver)
    assert app.get_state(example.config()).next == ("draft",)
    for path in (saver.session_dir(example.THREAD) / "langgraph" / "root").iterdir():
        # a write the kill cut short is a hidden temporary file, never a half-written .md
        assert path.name.endswith(".md") or (path.name.startswith(".") and path.name.endswith(".haytham-tmp"))
    paused = app.invoke(None, example.config())
    assert paused["draft"].startswith("# Release notes")
    assert app.invoke(Command(resume={"approved": True, "comments": ""}), example.config())["final"]


_WRITER = """
import os, signal, sys
from haytham.integrations.langgraph import HaythamSaver
from langgraph.checkpoint.base import empty_checkpoint
saver = HaythamSaver(sys.argv[1], "langgraph")
parent = None
for step in range(100000):
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"text": "line\\r\\n" * step, "n": step}
    checkpoint["channel_versions"] = {"text": step + 1, "n": step + 1}
    config = {"configurable": {"thread_id": "crash", "checkpoint_ns": ""}}
    if parent:
        config["configurable"]["checkpoint_id"] = parent
    stored = saver.put(config, checkpoint, {"source": "loop", "step": step}, {"text": step + 1})
    parent = stored["configurable"]["checkpoint_id"]
    saver.put_writes(stored, [("n", step)], "task")
    if step == 5:  # from now on, the process dies at its Nth rename: mid-write, every time
        renames = 0
        def kill_at_rename(event, args):
            global renames
            if event == "os.rename":
                renames += 1
                if renames == int(sys.argv[2]):
                    os.kill(os.getpid(), signal.SIGKILL)
        sys.addaudithook(kill_at_rename)
"""


@pytest.mark.parametrize("rename", [1, 2, 3, 5])
def test_a_saver_killed_while_writing_leaves_every_checkpoint_readable(tmp_path: Path, rename: int) -> None:
    """The writer kills itself at its Nth file rename after step 5 (an audit hook), so the
    kill lands inside a save, at a different point of it for each N."""
    child = subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path / "base"), str(rename)], cwd=ROOT)
    assert child.returncode == -signal.SIGKILL
    saver = HaythamSaver(tmp_path / "base", P)
    found = list(saver.list({"configurable": {"thread_id": "crash"}}))
    assert len(found) >= 6
    for item in found:
        step = item.metadata["step"]
        assert item.checkpoint["channel_values"] == {"text": "line\r\n" * step, "n": step}
    steps = [t.metadata["step"] for t in found]
    assert steps == sorted(steps, reverse=True) == list(range(steps[0], -1, -1))
    assert run(tmp_path / "base", "validate").exit_code == 0


_TASKS = """
import sys
from haytham.integrations.langgraph import HaythamSaver
saver = HaythamSaver(sys.argv[1], "langgraph")
config = {"configurable": {"thread_id": "shared", "checkpoint_ns": "", "checkpoint_id": sys.argv[2]}}
for task in range(20):
    saver.put_writes(config, [("ch", f"{sys.argv[3]}-{task}")], f"{sys.argv[3]}-{task}")
"""


def test_two_processes_adding_writes_to_one_checkpoint_lose_none(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    saver = HaythamSaver(tmp_path, P)
    config: Any = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
    stored = saver.put(config, empty_checkpoint(), {}, {})
    checkpoint_id = stored["configurable"]["checkpoint_id"]
    children = [
        subprocess.Popen([sys.executable, "-c", _TASKS, str(tmp_path), checkpoint_id, name], cwd=ROOT)
        for name in ("one", "two")
    ]
    assert [child.wait(timeout=300) for child in children] == [0, 0]
    found = saver.get_tuple(stored)
    assert found is not None and found.pending_writes is not None
    assert sorted(value for _, _, value in found.pending_writes) == sorted(
        f"{name}-{task}" for name in ("one", "two") for task in range(20)
    )


def test_reads_never_write(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    app = _review_graph(saver)
    config: Any = {"configurable": {"thread_id": "read"}}
    app.invoke({"topic": "T"}, config)
    before = snapshot(tmp_path)
    fresh = HaythamSaver(tmp_path, P)
    assert fresh.get_tuple(config) is not None
    assert fresh.get_tuple({"configurable": {"thread_id": "nobody", "checkpoint_ns": ""}}) is None
    assert len(list(fresh.list(None))) == len(list(fresh.list(config))) > 0
    assert list(fresh.list({"configurable": {"thread_id": "nobody"}})) == []
    assert resume_command(fresh, config) is None
    assert len(list(_review_graph(fresh).get_state_history(config))) > 0
    assert snapshot(tmp_path) == before


def test_interrupt_writes_of_a_subgraph_do_not_open_a_second_review(tmp_path: Path) -> None:
    saver = HaythamSaver(tmp_path, P)
    config: Any = {"configurable": {"thread_id": "ns", "checkpoint_ns": "child:1"}}
    from langgraph.checkpoint.base import empty_checkpoint

    stored = saver.put(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    saver.put_writes(stored, [(INTERRUPT, {"reason": "inner"})], "task")
    assert CheckpointManager(tmp_path).state(P, "ns").state == "in_progress"


def test_a_session_of_another_workflow_is_never_written_to(tmp_path: Path) -> None:
    CheckpointManager(tmp_path).create_session(P, "taken", "ada")
    before = snapshot(tmp_path)
    app = _abc(HaythamSaver(tmp_path, P))
    with pytest.raises(SessionExistsError, match="workflow 'idea_validation', not 'langgraph'"):
        app.invoke({"log": []}, {"configurable": {"thread_id": "taken"}})
    assert snapshot(tmp_path) == before


def test_haytham_never_imports_langgraph_and_the_extra_is_named_when_missing() -> None:
    core = "import sys, haytham, haytham.cli.main, haytham.store.manager; print('langgraph' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", core], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "False", result.stderr
    missing = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n    import haytham.integrations.langgraph\n"
        "except ImportError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", missing], capture_output=True, text=True, cwd=ROOT)
    assert "pip install 'haytham[langgraph]'" in result.stdout, result.stderr


def test_the_pages_of_a_paused_thread_show_no_checkpoint_comment_and_no_zero_chart(tmp_path: Path) -> None:
    from web_demo import client_of  # the web extra, as in tests/test_web_pages.py

    saver = HaythamSaver(tmp_path, P)
    _review_graph(saver).invoke({"topic": "Release"}, {"configurable": {"thread_id": "notes"}})
    output = (saver.session_dir("notes") / "phase_1_review" / "interrupt.md").read_text()
    assert "<!-- langgraph checkpoint: " in output  # the file keeps its note for resume_command
    with client_of(CheckpointManager(tmp_path)) as client:
        page = client.get(f"/p/{P}/s/notes/phase/1")
    assert page.status_code == 200
    shown = re.sub(r"(?s)<textarea.*?</textarea>", "", page.text)  # the file as text, to correct
    assert "Release (round 1)" in shown
    assert "langgraph checkpoint" not in shown
    with client_of(CheckpointManager(tmp_path)) as client:
        session = client.get(f"/p/{P}/s/notes")
    assert session.status_code == 200
    assert 'class="chart"' not in session.text  # no duration, tokens or cost: no zero charts


def test_a_threads_page_offers_no_fork_or_rerun_and_says_to_resume_the_graph(tmp_path: Path) -> None:
    from web_demo import client_of  # the web extra, as in tests/test_web_pages.py

    saver = HaythamSaver(tmp_path, P)
    _review_graph(saver).invoke({"topic": "Release"}, {"configurable": {"thread_id": "notes"}})
    manager = CheckpointManager(tmp_path)
    with client_of(manager) as client:
        session = client.get(f"/p/{P}/s/notes")
        phase = client.get(f"/p/{P}/s/notes/phase/1")
        csrf = re.search(r'name="csrf" value="([^"]+)"', phase.text)
        assert csrf is not None
        forked = client.post(
            f"/p/{P}/s/notes/fork", data={"csrf": csrf.group(1), "new_session": "copy", "from_phase": "1"}
        )
        rerun = client.post(f"/p/{P}/s/notes/rerun", data={"csrf": csrf.group(1), "from_phase": "1"})
    assert session.status_code == 200
    assert "<h2>History</h2>" in session.text and "LangGraph paused at checkpoint" in session.text
    assert "Fork or re-run" not in session.text and 'id="fork"' not in session.text
    assert "/rerun" not in session.text and 'class="fork-link"' not in session.text
    assert "haytham resume" not in session.text
    assert (
        "then resume the graph with <code>graph.invoke(resume_command(saver, config), config)</code>"
        in session.text
    )
    assert re.search(r"or run <code>haytham feedback langgraph notes 1 --approve", session.text)
    for refused in (forked, rerun):  # a form posted anyway is refused, and nothing is written
        assert refused.status_code == 400, refused.text
        assert "is run by LangGraph, not haytham" in refused.text
    assert not manager.session_dir(P, "copy").exists()
    assert manager.state(P, "notes").phase(1).state == "awaiting_review"
