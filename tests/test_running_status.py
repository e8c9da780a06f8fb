"""A session a runner is at work on is ``running``, never "interrupted"; a re-run leaves the
phases it has not reached ``pending`` (issue 23, item 9).

The runner is a real ``haytham resume`` process whose agent blocks until the test writes a
file; ``status`` and ``list`` run beside it. Every wait is on a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from small_workflow import PROJECT, manager_for, new_session

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format.layout import LEASE_FILE
from haytham.run.demo import DEMO_PROJECT, run_demo
from haytham.web.pages import phase_page, session_page

S = "s-1"
DEADLINE = 60.0
AGENTS_MODULE = """
import os
from pathlib import Path

HERE = Path(os.environ["RUNNING_TEST_DIR"])


def agent(context):
    (HERE / f"started-{context.phase.number}").write_text(str(os.getpid()))
    if context.phase.number == 1:
        with open(HERE / "release", encoding="utf-8") as fifo:  # blocks until the test opens it
            fifo.read()
    return f"# {context.agent_name}\\n\\nattempt {context.attempt}\\n"
"""


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def cli_json(base: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(base), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cli_text(base: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--base-dir", str(base)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def blocked_run(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """``haytham resume`` of a new session, blocked in phase 1's agent (its lease held)."""
    base = tmp_path / "projects"
    new_session(manager_for(base), S)
    (tmp_path / "running_agents.py").write_text(AGENTS_MODULE, "utf-8")
    os.mkfifo(tmp_path / "release")
    env = {**os.environ, "RUNNING_TEST_DIR": str(tmp_path), "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "haytham", "resume", PROJECT, S, "--agents", "running_agents:agent"]
    process = subprocess.Popen(
        [*command, "--base-dir", str(base)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (tmp_path / "started-1").exists() or process.poll() is not None, "phase 1 to start")
        assert process.poll() is None, process.communicate()
        yield base, process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def release(base: Path) -> None:
    """Let the blocked agent return (opening the FIFO for writing ends its read)."""
    fd = os.open(base.parent / "release", os.O_WRONLY)
    os.close(fd)


def test_status_and_list_say_running_while_a_runner_holds_the_lease(
    blocked_run: tuple[Path, subprocess.Popen[str]],
) -> None:
    base, process = blocked_run
    status = subprocess.run(
        [sys.executable, "-m", "haytham", "status", PROJECT, S, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "interrupted" not in status
    header = status.splitlines()[0]
    assert f", running (process {process.pid} of " in header
    assert "Current phase: 1 Idea (running)" in status
    assert f"Next: phase 1 (Idea) is being run by process {process.pid} of " in status
    assert "wait for the run to stop" in status

    data = cli_json(base, "status", PROJECT, S)
    assert data["running"]["pid"] == process.pid and data["running"]["since"]
    assert (data["next"]["action"], data["next"]["phase"]) == ("wait", 1)
    assert data["status"] == "in_progress"  # the files' state: running is shown, never stored

    [listed] = cli_json(base, "list")["sessions"]
    assert listed["running"]["pid"] == process.pid
    table = cli_text(base, "list")
    row = next(line for line in table.splitlines() if line.startswith(PROJECT))
    assert " running " in row and "1 Idea (running)" in row and "in_progress" not in row

    manager = CheckpointManager(base)
    page = session_page(manager, PROJECT, S)
    assert page.running is not None and page.running.pid == process.pid
    assert phase_page(manager, PROJECT, S, 1).running == page.running

    release(base)
    out, err = process.communicate(timeout=DEADLINE)
    assert process.returncode == 0, out + err
    assert "phase 1 (Idea)" not in cli_text(base, "status", PROJECT, S).splitlines()[-1]
    after = cli_json(base, "status", PROJECT, S)
    assert after["running"] is None and after["next"]["action"] != "wait"
    assert cli_json(base, "list")["sessions"][0]["running"] is None
    assert session_page(manager, PROJECT, S).running is None


def test_a_lease_left_by_a_dead_runner_is_interrupted_not_running(
    blocked_run: tuple[Path, subprocess.Popen[str]],
) -> None:
    base, process = blocked_run
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=DEADLINE)
    lease = CheckpointManager(base).session_dir(PROJECT, S) / LEASE_FILE
    assert json.loads(lease.read_text("utf-8"))["pid"] == process.pid  # the record stays behind
    before = lease.read_bytes(), lease.stat().st_mtime_ns

    data = cli_json(base, "status", PROJECT, S)
    assert data["running"] is None
    assert (data["next"]["action"], data["next"]["phase"]) == ("resume", 1)
    assert "phase 1 (Idea) was interrupted" in data["next"]["message"]
    assert cli_json(base, "list")["sessions"][0]["running"] is None
    assert " running " not in cli_text(base, "list")
    assert (lease.read_bytes(), lease.stat().st_mtime_ns) == before  # looked at, never touched


# -------------------------------------------------------------------------------- rerun


def test_a_rerun_stopped_at_a_gate_leaves_the_later_phases_pending_and_not_started(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "s").status == "completed"
    result = CliRunner().invoke(
        cli, ["rerun", DEMO_PROJECT, "s", "--from-phase", "1", "--base-dir", str(base)]
    )
    assert result.exit_code == 0, result.output
    assert "phase 1 awaits review" in result.output  # the gate of phase 1 stopped the re-run
    data = cli_json(base, "status", DEMO_PROJECT, "s")
    phases = {row["number"]: row for row in data["phases"]}
    assert phases[1]["status"] == "awaiting_review"
    for number in (2, 3, 6, 7):
        assert (phases[number]["status"], phases[number]["started"], phases[number]["completed"]) == (
            "pending",
            None,
            None,
        ), number
        checkpoint = manager.load_checkpoint(DEMO_PROJECT, "s", number)
        assert (checkpoint.status, checkpoint.started, checkpoint.retry_count) == ("pending", None, 1)
    text = cli_text(base, "status", DEMO_PROJECT, "s")
    assert "in progress" not in text and "in_progress" not in text
    assert manager.validate_session(DEMO_PROJECT, "s") == []

    approved = CliRunner().invoke(
        cli, ["feedback", DEMO_PROJECT, "s", "1", "--approve", "--base-dir", str(base)]
    )
    assert approved.exit_code == 0, approved.output
    resumed = CliRunner().invoke(cli, ["resume", DEMO_PROJECT, "s", "--base-dir", str(base)])
    assert resumed.exit_code == 0, resumed.output
    assert manager.state(DEMO_PROJECT, "s").state == "completed"
    assert all(c.started is not None for c in manager.load_checkpoints(DEMO_PROJECT, "s").values())
