"""One runner per session: real ``haytham resume`` processes at once on a sent-back phase.

The agent of the test blocks (in whichever process runs it) until the test lets it go, and
the test lets it go only after the other two processes have exited: so the three runs truly
overlap, and exactly one of them may run the agents.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from small_workflow import PROJECT, Agents, manager_for, new_session, runner_for

from haytham.format.layout import LEASE_FILE
from haytham.run.lease import SessionBusyError, read_holder, run_lease
from haytham.store.fs import GITIGNORE_TEXT

S = "s-1"
AGENTS_MODULE = """
import os, time
from pathlib import Path

HERE = Path(os.environ["LEASE_TEST_DIR"])


def agent(context):
    with open(HERE / "calls.log", "a", encoding="utf-8") as log:
        log.write(f"{context.phase.number}:{context.agent_name}:{context.attempt}:{os.getpid()}\\n")
    (HERE / "started").touch()
    for _ in range(6000):  # a guard against a hung test, never reached when it passes
        if (HERE / "release").exists():
            break
        time.sleep(0.01)
    return f"# {context.agent_name}\\n\\nattempt {context.attempt}\\n"
"""


def sent_back_session(base: Path) -> None:
    manager = manager_for(base)
    new_session(manager, S)
    assert runner_for(manager, Agents()).run(PROJECT, S).status == "awaiting_review"
    manager.save_user_feedback(
        PROJECT, S, 2, reviewed=True, approved=False, comments="again", action="retry", retry_count=1
    )
    assert manager.state(PROJECT, S).current.state == "sent_back"  # type: ignore[union-attr]


def test_three_resumes_at_once_run_the_agents_once(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    sent_back_session(base)
    (tmp_path / "lease_agents.py").write_text(AGENTS_MODULE, "utf-8")
    env = {**os.environ, "LEASE_TEST_DIR": str(tmp_path), "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "haytham", "resume", PROJECT, S, "--agents", "lease_agents:agent"]
    processes = [
        subprocess.Popen(
            [*command, "--base-dir", str(base)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    refused: list[tuple[int, str]] = []
    waiting = list(processes)
    deadline = time.monotonic() + 120
    while len(refused) < 2:  # the two that lose exit on their own while the winner blocks
        assert time.monotonic() < deadline, f"only {len(refused)} of the losers exited"
        for process in list(waiting):
            if process.poll() is not None:
                out, err = process.communicate()
                refused.append((process.returncode, err))
                waiting.remove(process)
        time.sleep(0.01)
    (tmp_path / "release").touch()
    [winner] = waiting
    out, err = winner.communicate(timeout=120)
    assert winner.returncode == 0, out + err
    assert "phase 2 awaits review" in out

    holder_pid = str(winner.pid)
    for code, err in refused:
        assert code == 1
        assert f"Error: session {PROJECT}/{S} is being run by process {holder_pid} of " in err
        assert "; nothing was run." in err
    calls = (tmp_path / "calls.log").read_text("utf-8").splitlines()
    assert sorted(line.rsplit(":", 1)[0] for line in calls) == ["2:analyst:2", "2:scout:2"]
    assert {line.rsplit(":", 1)[1] for line in calls} == {holder_pid}
    manager = manager_for(base)
    assert [a.number for a in manager.load_attempts(PROJECT, S, 2)] == [1, 2]
    assert manager.validate_session(PROJECT, S) == []
    assert not (manager.session_dir(PROJECT, S) / LEASE_FILE).exists()  # released: no record left


def test_a_dead_runners_lease_is_released_by_the_os(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    sent_back_session(base)
    session = manager_for(base).session_dir(PROJECT, S)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from haytham.run.lease import run_lease\n"
            "with run_lease(Path(sys.argv[1]), 'x'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(600)\n",
            str(session),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with pytest.raises(SessionBusyError) as busy, run_lease(session, f"{PROJECT}/{S}"):
        pass
    assert busy.value.holder is not None and busy.value.holder.pid == holder.pid
    holder.send_signal(signal.SIGKILL)
    holder.communicate()
    assert json.loads((session / LEASE_FILE).read_text("utf-8"))["pid"] == holder.pid  # left behind
    assert read_holder(session) is not None  # a record without a holder means nothing
    assert runner_for(manager_for(base), Agents()).run(PROJECT, S).status == "awaiting_review"
    assert not (session / LEASE_FILE).exists()


def test_the_lease_file_is_git_ignored_and_reads_never_touch_it(tmp_path: Path) -> None:
    assert f"\n{LEASE_FILE}\n" in GITIGNORE_TEXT
    base = tmp_path / "projects"
    manager = manager_for(base)
    new_session(manager, S)
    manager.load_session(PROJECT, S)
    manager.state(PROJECT, S)
    manager.validate_session(PROJECT, S)
    assert not (manager.session_dir(PROJECT, S) / LEASE_FILE).exists()
    with run_lease(manager.session_dir(PROJECT, S), "x"):
        assert (manager.session_dir(PROJECT, S) / LEASE_FILE).exists()
        manager.state(PROJECT, S)  # reads go on while a run holds the lease
        assert manager.validate_session(PROJECT, S) == []
        assert manager.check(PROJECT, S) == []
    runner_for(manager, Agents()).run(PROJECT, S)
    assert not (manager.session_dir(PROJECT, S) / LEASE_FILE).exists()
    assert manager.validate_session(PROJECT, S) == []
    assert manager.check(PROJECT, S) == []
