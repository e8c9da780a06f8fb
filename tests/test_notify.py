"""The ``notify:`` hook of haytham.yaml (issue 25): a real command that gets each event on its
standard input and a real HTTP receiver on a loopback port, told when a phase starts awaiting
its review (the runner) and when a review decides it (the command line, the page); a hook
that fails, refuses or hangs never fails the run, and ``haytham doctor`` shows its failure."""

from __future__ import annotations

import http.server
import json
import os
import shlex
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from haytham import CheckpointManager, DocumentError
from haytham.config import load_config, open_store
from haytham.format.layout import WORKFLOW_FILE
from haytham.notify import EVENT_KEYS, EVENT_VERSION, Notifier, NotifyConfig, recent_failures
from haytham.run.demo import run_demo

P, S = "demo", "idea-001"
ROOT = Path(__file__).resolve().parent.parent

HOOK = textwrap.dedent(
    """\
    import sys
    with open(sys.argv[1], "ab") as out:
        out.write(sys.stdin.buffer.read() + b"\\n")
    """
)
"""The notify command of the tests: it appends the event it got on stdin to a file."""


class Receiver:
    """An HTTP server on a loopback port that keeps the JSON body of every POST."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []
        received = self.got

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                assert self.headers["Content-Type"] == "application/json"
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def project(tmp_path: Path, receiver: Receiver) -> Path:
    """A folder with a haytham.yaml whose notify hook is the HOOK script and the receiver."""
    (tmp_path / "hook.py").write_text(HOOK)
    command = shlex.join([sys.executable, str(tmp_path / "hook.py"), str(tmp_path / "events.jsonl")])
    (tmp_path / "haytham.yaml").write_text(
        f"notify:\n  command: {json.dumps(command)}\n  url: {receiver.url}\n  timeout: 20\n"
    )
    return tmp_path


def haytham(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m haytham ARGS`` in ``cwd`` (whose haytham.yaml it reads), as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HAYTHAM_BASE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def commanded(project: Path) -> list[dict[str, Any]]:
    """The events the notify command got, in order."""
    path = project / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def assign(base: Path, phase_line: str = "  review: true\n") -> None:
    """Assign phase 1 of the demo session to alice@example.com in its workflow.yaml."""
    path = base / P / "sessions" / S / WORKFLOW_FILE
    text = path.read_text()
    assert phase_line in text
    path.write_text(text.replace(phase_line, phase_line + "  reviewers: [alice@example.com]\n", 1))


def test_the_runner_then_the_command_line_notify_the_command_and_the_url(
    project: Path, receiver: Receiver
) -> None:
    ran = haytham(project, "demo", "--review", "manual")
    assert ran.returncode == 0, ran.stderr
    (waiting,) = commanded(project)
    assert receiver.got == [waiting]  # the same JSON to both
    assert list(waiting) == list(EVENT_KEYS)
    assert waiting["version"] == EVENT_VERSION
    assert (waiting["event"], waiting["project"], waiting["session"], waiting["phase"]) == (
        "awaiting_review",
        P,
        S,
        1,
    )
    assert (waiting["phase_name"], waiting["attempt"], waiting["state"]) == (
        "Concept Expansion",
        1,
        "awaiting_review",
    )
    assert waiting["outcome"] is None and waiting["reviewers"] == []
    assert waiting["command"] == f"haytham feedback {P} {S} 1"
    assert waiting["session_dir"] == str(project / "projects" / P / "sessions" / S)

    assign(project / "projects")
    approved = haytham(project, "feedback", P, S, "1", "--approve", "--comment", "Ship it")
    assert approved.returncode == 0, approved.stderr
    decided = commanded(project)[1]
    assert receiver.got[1] == decided and len(receiver.got) == 2
    assert decided["event"] == "review_decided"
    assert (decided["outcome"], decided["state"], decided["previous_state"]) == (
        "approved",
        "approved",
        "awaiting_review",
    )
    assert decided["comments"] == "Ship it" and decided["reviewers"] == ["alice@example.com"]
    assert decided["command"] == f"haytham resume {P} {S}"
    again = haytham(project, "feedback", P, S, "1", "--approve", "--comment", "Ship it, really")
    assert again.returncode == 0, again.stderr
    assert len(commanded(project)) == 2  # approved again: the phase did not move, nobody is told


def test_a_decision_on_a_session_langgraph_runs_names_the_graphs_resume(
    project: Path, receiver: Receiver
) -> None:
    assert haytham(project, "demo", "--review", "manual").returncode == 0
    path = project / "projects" / P / "sessions" / S / WORKFLOW_FILE
    text = path.read_text()
    path.write_text(
        text.replace("\nmodes:\n", "\nrun_by: langgraph\nmodes:\n", 1)
    )  # as the integration marks it
    assert haytham(project, "feedback", P, S, "1", "--approve").returncode == 0
    waiting, decided = commanded(project)
    assert waiting["command"] == f"haytham feedback {P} {S} 1"
    assert decided["command"] == "graph.invoke(resume_command(saver, config), config)"
    assert receiver.got[1]["command"] == decided["command"]


def test_a_review_written_in_the_editor_loop_is_notified(project: Path, receiver: Receiver) -> None:
    assert haytham(project, "demo", "--review", "manual").returncode == 0
    script = project / "edit.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n"
        "text = path.read_text().replace('Reviewed: false', 'Reviewed: yes')\n"
        "text = text.replace('No comments provided', 'Name the buyer.')\npath.write_text(text)\n"
    )
    script.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EDITOR": str(script)}
    env.pop("VISUAL", None)
    env.pop("HAYTHAM_BASE_DIR", None)
    edited = subprocess.run(
        [sys.executable, "-m", "haytham", "feedback", P, S, "1"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert edited.returncode == 0, edited.stdout + edited.stderr
    waiting, decided = commanded(project)
    assert receiver.got == [waiting, decided]
    assert (decided["event"], decided["outcome"], decided["comments"]) == (
        "review_decided",
        "sent_back",
        "Name the buyer.",
    )


def test_a_review_saved_on_the_page_is_notified(tmp_path: Path, receiver: Receiver) -> None:
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")
    from starlette.testclient import TestClient
    from test_web import review

    from haytham.web.app import create_app

    base = tmp_path / "projects"
    assert run_demo(CheckpointManager(base), S, review="manual").status == "awaiting_review"
    (tmp_path / "hook.py").write_text(HOOK)
    command = shlex.join([sys.executable, str(tmp_path / "hook.py"), str(tmp_path / "events.jsonl")])
    app = create_app(str(base), notify=NotifyConfig(command, receiver.url, 20))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        status, _ = review(client, "changes", comments="Tighten it", changes="Cut the intro")
    assert status == 200
    assert Notifier.flush_all(30)
    (decided,) = commanded(tmp_path)
    assert receiver.got == [decided]
    assert (decided["event"], decided["outcome"], decided["state"]) == (
        "review_decided",
        "sent_back",
        "sent_back",
    )
    assert decided["comments"] == "Tighten it"


def test_open_store_attaches_the_hook_to_the_library(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "haytham.yaml").write_text(f"notify:\n  url: {receiver.url}\n")
    manager = open_store()
    assert open_store() is not manager
    assert run_demo(manager, S, review="manual").status == "awaiting_review"
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True)
    assert Notifier.flush_all(30)
    assert [(e["event"], e["phase"]) for e in receiver.got] == [("awaiting_review", 1), ("review_decided", 1)]


def refused_url() -> str:
    """A loopback URL nobody listens on (the port was just free)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


@pytest.mark.parametrize(
    ("hook", "why"),
    [
        ("command: {python} -c 'import sys; sys.exit(1)'", "exited with status 1"),
        ("url: {refused}", "URLError"),
        ("command: {python} -c 'import time; time.sleep(60)'\n  timeout: 1", "ran past its 1 s timeout"),
    ],
    ids=["exit-1", "refused-port", "hang"],
)
def test_a_failing_hook_never_fails_the_run_and_doctor_shows_it(tmp_path: Path, hook: str, why: str) -> None:
    text = hook.format(python=shlex.quote(sys.executable), refused=refused_url())
    (tmp_path / "haytham.yaml").write_text(f"notify:\n  {text}\n")
    ran = haytham(tmp_path, "demo", "--review", "manual")
    assert ran.returncode == 0, ran.stderr
    assert "Result: phase 1 awaits review: edit " in ran.stdout
    assert CheckpointManager(tmp_path / "projects").state(P, S).phase(1).state == "awaiting_review"
    (failure,) = recent_failures(tmp_path / "projects")
    assert (failure.event, failure.project, failure.session, failure.phase) == ("awaiting_review", P, S, 1)
    assert why in failure.error
    doctor = haytham(tmp_path, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr  # the files are fine: exit status as before
    assert f"notify {failure.target} failed for awaiting_review of {P}/{S} phase 1" in doctor.stdout
    assert why in doctor.stdout
    as_json = json.loads(haytham(tmp_path, "doctor", "--json").stdout)
    assert as_json["ok"] is True and as_json["notify_failures"][0]["error"] == failure.error


@pytest.mark.parametrize(
    ("notify", "line", "message"),
    [
        ("notify:\n  timeout: 3\n", 1, "notify names neither a command nor a url"),
        ("notify:\n  url: ftp://x\n", 2, "notify.url: 'ftp://x' does not match"),
        (
            "notify:\n  url: http://x\n  timeout: 0\n",
            3,
            "notify.timeout: 0 is less than or equal to the minimum",
        ),
        ("notify:\n  command: ''\n", 2, "notify.command"),
        ("notify:\n  comand: x\n", 2, "unknown key 'comand'"),
    ],
)
def test_a_notify_mistake_is_an_error_at_its_line(
    tmp_path: Path, notify: str, line: int, message: str
) -> None:
    path = tmp_path / "haytham.yaml"
    path.write_text(notify)
    with pytest.raises(DocumentError) as raised:
        load_config(path)
    assert raised.value.line == line, str(raised.value)
    assert message in str(raised.value)


def test_the_documented_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    """docs/notify.md's Python example, run as written (with this test's receiver)."""
    text = (ROOT / "docs" / "notify.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"URL": receiver.url}
    exec(compile(example, "docs/notify.md", "exec"), namespace)
    assert [e["event"] for e in receiver.got] == ["awaiting_review", "review_decided"]
