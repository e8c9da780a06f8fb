"""A decision applies only to what was shown (issue 25, item 8).

A review page carries what its reviewer was shown of the phase (its attempt, the digest of
its agent outputs and the version of user_feedback.md: ``store.shown.Shown``); the store
compares it with the files under the session's lock, with the write. A page of attempt 1
cannot approve attempt 2 (whose blank review template is byte for byte the one attempt 1
had), a page cannot approve an output corrected since it was loaded, ``haytham feedback
--approve`` never replaces a review saved after it started, and the page's "run again" is
refused while a runner holds the session's lease, as ``haytham rerun`` is. Everything runs on
real files, through the real Starlette app and in real processes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from starlette.testclient import TestClient
from web_demo import awaiting_demo, client_of

from haytham import CheckpointManager, SessionBusyError, StaleReviewError
from haytham.format.workflow import IDEA_VALIDATION
from haytham.run.demo import DEMO_AGENTS
from haytham.run.runner import PhaseRunner
from haytham.store import fs

P, S = "demo", "idea-001"
WAIT = 60.0
"""How long a test waits for another process to reach a point (a bound, not a measured time)."""


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """A demo session stopped at phase 1's review gate (attempt 1)."""
    return awaiting_demo(tmp_path / "projects")


@pytest.fixture
def client(manager: CheckpointManager) -> Iterator[TestClient]:
    with client_of(manager) as test_client:
        yield test_client


def phase_url(phase: int = 1) -> str:
    return f"/p/{P}/s/{S}/phase/{phase}"


def form_fields(html: str) -> dict[str, str]:
    found = dict(re.findall(r'name="(csrf|version)" value="([^"]*)"', html))
    assert "csrf" in found and "version" in found, html
    return found


def feedback_file(manager: CheckpointManager) -> Path:
    return manager.phase_dir(P, S, 1) / "user_feedback.md"


def send_back_and_run_again(manager: CheckpointManager) -> None:
    """Someone sends phase 1 back and its attempt 2 runs to the review gate again."""
    manager.save_user_feedback(P, S, 1, True, False, "Be concrete.", action="retry", retry_count=1)
    result = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS).run(P, S)
    assert result.status == "awaiting_review"
    assert manager.load_checkpoint(P, S, 1).retry_count == 1


def test_a_page_of_attempt_1_cannot_approve_attempt_2(client: TestClient, manager: CheckpointManager) -> None:
    page = client.get(phase_url()).text
    assert 'id="attempt-number">1<' in page
    fields = form_fields(page)
    template = feedback_file(manager).read_bytes()
    send_back_and_run_again(manager)
    assert feedback_file(manager).read_bytes() == template  # the same blank review as attempt 1's
    before = feedback_file(manager).read_bytes()
    data = {**fields, "decision": "approve", "comments": "approved attempt 1", "changes": ""}
    response = client.post(phase_url() + "/review", data=data, follow_redirects=False)
    assert response.status_code == 409, response.text
    assert "a new attempt ran (attempt 2; attempt 1 was shown)" in response.text
    assert feedback_file(manager).read_bytes() == before  # nothing written
    assert manager.state(P, S).phase(1).state == "awaiting_review"
    assert "approved attempt 1</textarea>" in response.text  # the reviewer's draft is kept
    assert 'id="attempt-number">2<' in response.text  # the page now shows attempt 2
    fresh = form_fields(response.text)["version"]
    assert fresh != fields["version"] and fresh.startswith("a2-")
    again = client.post(phase_url() + "/review", data={**data, "version": fresh}, follow_redirects=False)
    assert again.status_code == 303
    saved = manager.load_feedback(P, S, 1)
    assert saved is not None and saved.approved and saved.comments == "approved attempt 1"


def test_a_page_cannot_approve_an_output_corrected_since_it_was_loaded(
    client: TestClient, manager: CheckpointManager
) -> None:
    fields = form_fields(client.get(phase_url()).text)
    agent = manager.load_checkpoint(P, S, 1).agents[0].agent_name
    output = manager.phase_dir(P, S, 1) / f"{agent}.md"
    output.write_text(output.read_text().replace("## Output\n", "## Output\nA sentence added by hand.\n", 1))
    before = feedback_file(manager).read_bytes()
    data = {**fields, "decision": "approve", "comments": "", "changes": ""}
    response = client.post(phase_url() + "/review", data=data, follow_redirects=False)
    assert response.status_code == 409
    assert "an agent output changed" in response.text and "new attempt" not in response.text
    assert feedback_file(manager).read_bytes() == before


def test_a_form_without_a_page_version_is_a_clear_400(client: TestClient, manager: CheckpointManager) -> None:
    fields = form_fields(client.get(phase_url()).text)
    plain = fs.file_version(feedback_file(manager))[0]  # the review file's version alone
    data = {**fields, "version": plain, "decision": "approve", "comments": "", "changes": ""}
    response = client.post(phase_url() + "/review", data=data)
    assert response.status_code == 400 and "is not the version of a review page" in response.text


def test_the_library_refuses_a_decision_on_another_attempt(manager: CheckpointManager) -> None:
    seen = manager.session(P, S).shown(1)
    assert seen.attempt == 1 and seen.review == fs.file_version(feedback_file(manager))[0]
    send_back_and_run_again(manager)
    with pytest.raises(StaleReviewError) as caught:
        manager.save_user_feedback(P, S, 1, True, True, "ok", expected_version=seen)
    assert caught.value.changed == ("a new attempt ran (attempt 2; attempt 1 was shown)",)
    assert str(caught.value).startswith(f"{feedback_file(manager)}: since the reviewer was shown the phase")
    now = manager.session(P, S).shown(1)
    manager.save_user_feedback(P, S, 1, True, True, "ok", expected_version=now)
    assert manager.state(P, S).phase(1).state == "approved"


# ---------------------------------------------------------------- the command line

PAUSE_BEFORE_LOCK = """
import os, sys, time
from pathlib import Path
ready, go = Path(os.environ["HAYTHAM_TEST_READY"]), Path(os.environ["HAYTHAM_TEST_GO"])
def hook(event, args):
    # the first time this process opens the session's lock to write: say so, wait for the test
    if event == "open" and isinstance(args[0], str) and args[0].endswith(".haytham.lock"):
        if not ready.exists() and isinstance(args[2], int) and args[2] & os.O_CREAT:
            ready.write_text("waiting")
            while not go.exists():
                time.sleep(0.01)
sys.addaudithook(hook)
from haytham.cli.main import main
main(sys.argv[1:])
"""
"""``python -m haytham`` with a pause just before it first takes the session's lock to write:
the real command, made to lose the race every time instead of once in twenty."""


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_feedback_approve_never_replaces_a_review_saved_after_it_started(
    client: TestClient, manager: CheckpointManager, tmp_path: Path
) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    env = {**os.environ, "HAYTHAM_TEST_READY": str(ready), "HAYTHAM_TEST_GO": str(go)}
    command = [
        "feedback",
        P,
        S,
        "1",
        "--approve",
        "--comment",
        "from the CLI",
        "--base-dir",
        str(manager.base_dir),
    ]
    process = subprocess.Popen(
        [sys.executable, "-c", PAUSE_BEFORE_LOCK, *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(ready, process)  # the command has read what it decides on, and waits to save
        fields = form_fields(client.get(phase_url()).text)
        data = {**fields, "decision": "changes", "comments": "from the browser", "changes": "Shorter"}
        saved = client.post(phase_url() + "/review", data=data)
        assert saved.status_code == 200 and "Saved: sent back" in saved.text  # the browser was told
        browser = feedback_file(manager).read_bytes()
    finally:
        go.write_text("go")
        out, err = process.communicate(timeout=WAIT)
    assert process.returncode == 1, (out, err)
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert "user_feedback.md changed" in err and "nothing was saved" in err
    assert feedback_file(manager).read_bytes() == browser  # the browser's review stays
    kept = manager.load_feedback(P, S, 1)
    assert kept is not None and kept.comments == "from the browser" and not kept.approved


def test_feedback_approve_over_a_review_saved_before_it_started_replaces_it(
    manager: CheckpointManager,
) -> None:
    """The documented behaviour: asked explicitly, feedback decides again over an older review."""
    manager.save_user_feedback(P, S, 1, True, False, "earlier", action="retry", retry_count=1)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "haytham",
            "feedback",
            P,
            S,
            "1",
            "--approve",
            "--base-dir",
            str(manager.base_dir),
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    saved = manager.load_feedback(P, S, 1)
    assert saved is not None and saved.approved


# ------------------------------------------------------------------ run again


@pytest.fixture
def held_lease(manager: CheckpointManager) -> Iterator[int]:
    """Another process holds the session's run lease (as a runner does for a whole run)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from haytham.run.lease import run_lease\n"
            "with run_lease(Path(sys.argv[1]), 'x'):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n",
            str(manager.session_dir(P, S)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    try:
        yield holder.pid
    finally:
        holder.communicate("", timeout=WAIT)


def test_the_pages_run_again_is_refused_while_a_runner_holds_the_lease(
    client: TestClient, manager: CheckpointManager, held_lease: int
) -> None:
    csrf = form_fields(client.get(phase_url()).text)["csrf"]
    session = manager.session_dir(P, S)
    before = sorted(str(p.relative_to(session)) for p in session.rglob("*") if ".haytham-run" not in p.name)
    response = client.post(f"/p/{P}/s/{S}/rerun", data={"csrf": csrf, "from_phase": "1"})
    assert response.status_code == 409, response.text
    assert f"process {held_lease}" in response.text and "nothing was changed" in response.text
    after = sorted(str(p.relative_to(session)) for p in session.rglob("*") if ".haytham-run" not in p.name)
    assert after == before and [a.number for a in manager.load_attempts(P, S, 1)] == [1]
    with pytest.raises(SessionBusyError):  # the library call both the page and the CLI use
        manager.archive_from(P, S, 1)
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "haytham",
            "rerun",
            P,
            S,
            "--from-phase",
            "1",
            "--base-dir",
            str(manager.base_dir),
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert cli.returncode == 1 and cli.stderr.startswith("Error: ") and f"process {held_lease}" in cli.stderr
