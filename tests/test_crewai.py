"""HaythamFlowPersistence with CrewAI itself: a real Flow paused at ``@human_feedback`` and
answered through the ``haytham`` command in another process, the example, values that are
not JSON, the diff of two saves, and the extra's ImportError.

The kit every store must pass is in tests/test_crewai_conformance.py. Skipped only where
CrewAI is not installed and CI is not set (in CI it must run).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any

import crewai_env
import pytest

try:
    from crewai.flow.async_feedback.types import HumanFeedbackPending, PendingFeedbackContext
    from crewai.flow.flow import Flow, FlowState, listen, start
    from crewai.flow.human_feedback import human_feedback
    from crewai.flow.persistence import persist
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("CrewAI is not installed: pip install 'haytham[crewai]'", allow_module_level=True)

from test_cli import run, run_json

from haytham.integrations.crewai import (
    HaythamFlowPersistence,
    UnencodableValueError,
    resume_from_review,
    review_answer,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
P = "crewai"


class AwaitReview:
    def request_feedback(self, context: PendingFeedbackContext, flow: Flow[Any]) -> str:
        raise HumanFeedbackPending(context=context)


class Article(FlowState):
    topic: str = ""
    body: str = ""
    published: bool = False
    feedback: str = ""


def article_flow(store: HaythamFlowPersistence) -> type[Flow[Article]]:
    """A three-method flow over ``store``: write, a review gate, publish on ``approved``."""

    @persist(store)
    class ArticleFlow(Flow[Article]):
        @start()
        def write(self) -> str:
            self.state.body = f"All about {self.state.topic}."
            return self.state.body

        @listen(write)
        @human_feedback(
            message="Publish this article?",
            emit=["approved", "revise"],
            llm="gpt-4o-mini",
            provider=AwaitReview(),
        )
        def review(self) -> str:
            return self.state.body

        @listen("approved")
        def publish(self) -> str:
            feedback = self.last_human_feedback
            self.state.published = True
            self.state.feedback = feedback.feedback if feedback else ""
            return "published"

    return ArticleFlow


def test_a_real_flow_pauses_for_review_and_completes_after_haytham_feedback(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    store = HaythamFlowPersistence(base, P)
    flow_class = article_flow(store)
    paused = flow_class(suppress_flow_events=True).kickoff(inputs={"topic": "files"})
    assert isinstance(paused, HumanFeedbackPending)
    flow_id = paused.context.flow_id
    number = store.pending_phase(flow_id)
    assert number == 2

    waiting = run_json(base, "list", "--awaiting-review")
    assert [(s["project_id"], s["session_id"], s["status"]) for s in waiting["sessions"]] == [
        (P, flow_id, "awaiting_review")
    ]
    assert run(base, "validate").exit_code == 0
    request = store.session(flow_id).agent_output(2, "human_feedback").content
    assert "Publish this article?" in request and "- `approved`" in request and "- `revise`" in request
    assert "All about files." in request
    assert review_answer(store, flow_id) is None  # nobody has answered
    assert resume_from_review(flow_class, store, flow_id) is None

    answered = subprocess.run(
        [
            sys.executable,
            "-m",
            "haytham",
            "feedback",
            P,
            flow_id,
            "2",
            "--approve",
            "--comment",
            "approved, nice",
            "--reviewer",
            "Ada <ada@example.com>",
            "--base-dir",
            str(base),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
        check=False,
    )
    assert answered.returncode == 0, answered.stderr
    answer = review_answer(store, flow_id)
    assert answer is not None and answer.approved and answer.outcome == "approved"

    result = resume_from_review(flow_class, store, flow_id, suppress_flow_events=True)
    assert result == "published"
    state = store.load_state(flow_id)
    assert state is not None and state["published"] is True and state["feedback"] == "approved, nice"
    assert store.load_pending_feedback(flow_id) is None
    assert store.manager.state(P, flow_id).state == "completed"
    assert [p.name for p in store.session(flow_id).workflow().phases] == ["write", "review", "publish"]
    assert run(base, "validate").exit_code == 0
    assert run_json(base, "list", "--awaiting-review")["sessions"] == []


def test_a_send_back_naming_an_outcome_routes_there(tmp_path: Path) -> None:
    store = HaythamFlowPersistence(tmp_path, P)
    flow_id = str(uuid.uuid4())
    context = PendingFeedbackContext(flow_id, "x.Flow", "review", "draft", "Ok?", emit=["approved", "revise"])
    store.save_pending_feedback(flow_id, context, {"id": flow_id})
    store.manager.save_user_feedback(
        P,
        flow_id,
        1,
        reviewed=True,
        approved=False,
        comments="`revise`: shorter please",
        requested_changes=["cut the intro"],
    )
    answer = review_answer(store, flow_id)
    assert answer is not None and not answer.approved
    assert answer.outcome == "revise"
    assert answer.feedback == "`revise`: shorter please\n- cut the intro"


def test_values_that_are_not_json_come_back_as_their_type(tmp_path: Path) -> None:
    store = HaythamFlowPersistence(tmp_path, P)
    flow_id = str(uuid.uuid4())
    state = {
        "id": flow_id,
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
        "day": dt.date(2026, 1, 2),
        "wait": dt.timedelta(days=1, seconds=2),
        "price": Decimal("12.30"),
        "ref": uuid.UUID(int=7),
        "raw": b"\x00\xff bytes",
        "pair": (1, "two"),
        "tags": {"b", "a"},
        "path": PurePath("a/b.txt"),
        "by_number": {1: "one", 2: "two"},
        "inf": float("inf"),
    }
    store.save_state(flow_id, "step", state)
    assert store.load_state(flow_id) == state
    text = (store.session(flow_id).phase_dir(1) / "state.md").read_text("utf-8")
    assert '"$haytham": "datetime"' in text and '"value": "2026-01-02T03:04:05+00:00"' in text
    assert "pickle" not in text


def test_a_value_of_no_allowed_type_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    store = HaythamFlowPersistence(tmp_path, P)
    flow_id = str(uuid.uuid4())
    with pytest.raises(UnencodableValueError) as caught:
        store.save_state(flow_id, "step", {"id": flow_id, "items": [1, object()]})
    assert caught.value.field == "state['items'][1]"
    assert isinstance(caught.value, ValueError)
    assert not store.session(flow_id).directory.exists()


def test_a_diff_of_two_saves_shows_only_what_changed(tmp_path: Path) -> None:
    """A method saved again keeps its earlier save as an attempt: ``haytham diff`` of the two
    shows the one line of the state that changed."""
    store = HaythamFlowPersistence(tmp_path, P)
    flow_id = str(uuid.uuid4())
    base = {"id": flow_id, "title": "Draft", "items": list(range(30)), "count": 1}
    store.save_state(flow_id, "loop", base)
    store.save_state(flow_id, "loop", {**base, "count": 2})
    diff = run_json(tmp_path, "diff", f"{P}/{flow_id}:1#1", f"{P}/{flow_id}:1#2")
    [state] = [a for a in diff["agents"] if a["agent"] == "state"]
    changed = [
        line
        for line in state["diff"].splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == ['-  "count": 1', '+  "count": 2']


def test_a_writer_killed_between_the_new_attempt_and_its_save_leaves_the_last_state(tmp_path: Path) -> None:
    """The two steps of saving a method again, cut after the first (as a kill would): the
    last complete state is still loaded, from the attempt kept, and the next save works."""
    store = HaythamFlowPersistence(tmp_path, P)
    flow_id = str(uuid.uuid4())
    store.save_state(flow_id, "loop", {"id": flow_id, "n": 1})
    store.session(flow_id).start_attempt(1)
    assert store.load_state(flow_id) == {"id": flow_id, "n": 1}
    store.save_state(flow_id, "loop", {"id": flow_id, "n": 2})
    assert store.load_state(flow_id) == {"id": flow_id, "n": 2}


def test_a_session_of_another_workflow_is_left_untouched(tmp_path: Path) -> None:
    store = HaythamFlowPersistence(tmp_path, P)
    store.manager.create_session(P, "taken", "someone")
    directory = store.session("taken").directory
    before = {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match="not a CrewAI flow run"):
        store.save_state("taken", "step", {"id": "taken"})
    assert {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()} == before
    assert not (directory / "crewai").exists()


@pytest.mark.slow  # ~50 s of CrewAI imports in four processes; the flow itself is tested above
def test_the_example_is_killed_resumed_reviewed_and_finishes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "crewai_review.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, **crewai_env.OFFLINE},
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "killed in the middle of 'review'" in out
    assert "paused for review: awaiting_review" in out
    assert "finished: completed" in out
    assert "> Reviewer: Approved: ship it." in out
    session = tmp_path / "crewai_review" / "sessions" / "release-notes-1"
    state = json.loads(
        (session / "phase_3_publish" / "state.md").read_text("utf-8").split("```json\n")[1].split("\n```")[0]
    )
    assert state["drafts_written"] == 1  # the draft saved before the kill was kept
    assert "phase_2_review/human_feedback.md" in out


def test_without_crewai_the_import_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['crewai'] = None\n"
        "try:\n    import haytham.integrations.crewai\n"
        "except ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'haytham[crewai]'" in done.stdout


def test_the_docs_example_runs() -> None:
    """docs/crewai.md's first Python block, as written: a flow paused, answered, finished."""
    text = (ROOT / "docs" / "crewai.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("\n```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "crewai_docs"}
    exec(compile(block, "docs/crewai.md", "exec"), namespace)
    store = namespace["store"]
    assert store.load_pending_feedback(namespace["flow_id"]) is None


def _haytham(base: Path, *args: str, code: int = 0) -> str:
    """``python -m haytham ARGS --base-dir BASE`` in a process of its own: its output."""
    done = subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout + done.stderr


FLOW = "resume the flow with resume_from_review(FlowClass, persistence, flow_id)"


def test_a_paused_flow_is_resumed_by_crewai_in_every_advice(tmp_path: Path) -> None:
    """status, feedback and resume say to resume the flow, never ``haytham resume``; a run
    saved before the ``run_by`` mark is known by its ``crewai/`` folder and gets the same."""
    store = HaythamFlowPersistence(tmp_path, P)
    paused = article_flow(store)(suppress_flow_events=True).kickoff(inputs={"topic": "files"})
    assert isinstance(paused, HumanFeedbackPending)
    flow_id = paused.context.flow_id
    workflow_file = store.session(flow_id).directory / "workflow.yaml"
    assert "run_by: crewai\n" in workflow_file.read_text()

    status = _haytham(tmp_path, "status", P, flow_id)
    assert f"Next: phase 2 awaits review: edit {store.session(flow_id).directory}" in status
    assert f"--approve --base-dir {tmp_path}; then {FLOW}" in status
    sent_back = _haytham(tmp_path, "feedback", P, flow_id, "2", "--reject", "--comment", "revise")
    assert f"Next: phase 2 was sent back: {FLOW}, which hands it the comments" in sent_back
    refused = _haytham(tmp_path, "resume", P, flow_id, code=1)
    assert "is run by CrewAI, not haytham: it cannot be run here" in refused and FLOW in refused
    forked = _haytham(tmp_path, "fork", P, flow_id, "copy", "--from-phase", "2", code=1)
    assert "it cannot fork here" in forked and FLOW in forked
    assert not (tmp_path / P / "sessions" / "copy").exists()
    for text in (status, sent_back, refused, forked):
        assert "haytham resume" not in text and "haytham run" not in text, text

    workflow_file.write_text(workflow_file.read_text().replace("run_by: crewai\n", ""))  # as saved before
    assert FLOW in _haytham(tmp_path, "status", P, flow_id)
    _haytham(tmp_path, "validate")


def test_a_flow_runs_page_offers_no_fork_or_rerun_and_says_to_resume_the_flow(tmp_path: Path) -> None:
    from web_demo import client_of  # the web extra, as in tests/test_web_pages.py

    store = HaythamFlowPersistence(tmp_path, P)
    paused = article_flow(store)(suppress_flow_events=True).kickoff(inputs={"topic": "files"})
    assert isinstance(paused, HumanFeedbackPending)
    flow_id = paused.context.flow_id
    with client_of(store.manager) as client:
        page = client.get(f"/p/{P}/s/{flow_id}")
    assert page.status_code == 200 and "<h2>History</h2>" in page.text
    assert "Fork or re-run" not in page.text and 'class="fork-link"' not in page.text
    assert (
        "resume the flow with <code>resume_from_review(FlowClass, persistence, flow_id)</code>" in page.text
    )
    assert "haytham resume" not in page.text
