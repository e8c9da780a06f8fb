"""Many machines on one git remote, for real: the scenario of tests/test_many_machines.py and
benchmarks/many_machines.py.

A bare repository on a file URL is the remote. A seed clone creates the sessions (a small
workflow whose phase 1 has a review gate) and pushes them. Then worker hosts and reviewers
start at once, each a clone in its own directory and its own process:

- a worker is ``haytham runner --remote origin --agents mm_agents:agent`` (the loop of
  ``haytham.run.worker``); every agent call is appended to one log shared by all of them,
  so a duplicate run of an attempt is seen whichever host made it;
- a reviewer is ``mm_reviewer.py``: it syncs, and for each phase awaiting review among its
  share of the sessions runs ``haytham feedback ... --approve|--reject --commit --push``
  (sending back the first attempt of every third session), until every session is complete.

When the reviewers are done the workers get SIGTERM and print their reports (``--json``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.git.merge import setup
from haytham.store.manager import CheckpointManager

PROJECT = "acme"
GATED = Workflow(
    "gated",
    (
        PhaseDefinition(1, "Idea", "phase_1_idea", ("writer",), review=True),
        PhaseDefinition(2, "Plan", "phase_2_plan", ("planner",)),
        PhaseDefinition(3, "Pitch", "phase_3_pitch", ("pitcher", "editor"), "parallel"),
    ),
    {"full": (1, 2, 3)},
    max_retries=5,
)
AGENTS_MODULE = '''"""The agents of the many-machines scenario: deterministic, and each call logged."""
import os
import time
from pathlib import Path

LOG = Path(os.environ["MM_CALLS"])


def agent(context):
    where = f"{context.session_id}|{context.phase.number}|{context.agent_name}"
    line = f"{where}|{context.attempt}|{os.getpid()}\\n"
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    hang = os.environ.get("MM_HANG")
    if hang and context.session_id == hang:  # the worker to be killed: hold the claim forever
        Path(os.environ["MM_HANGING"]).touch()
        time.sleep(3600)
    block = os.environ.get("MM_BLOCK")
    if block and context.session_id == block:  # the worker to be stopped: wait to be let go
        Path(os.environ["MM_HANGING"]).touch()
        while not Path(os.environ["MM_RELEASE"]).exists():
            time.sleep(0.05)
    return f"# {context.agent_name}\\n\\nattempt {context.attempt}; comments: {context.comments or '-'}\\n"
'''
REVIEWER_SCRIPT = '''"""A reviewer's laptop: sync, review its share of what awaits review, until all is done.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

from haytham.cli.review import awaiting_review
from haytham.git.sync import sync
from haytham.store.manager import CheckpointManager
from haytham.store.scan import list_sessions

clone, share, shares, total = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
base = clone / "projects"
reviews = {"approved": 0, "sent_back": 0, "failed_pushes": 0}
while True:
    sync(clone, "origin")  # also pushes a review whose own push gave up
    manager = CheckpointManager(base)
    found, _ = list_sessions(base)
    states = {s.session_id: manager.state(s.project_id, s.session_id).state for s in found}
    if len(states) == total and all(state == "completed" for state in states.values()):
        break
    items, _ = awaiting_review(manager)
    mine = [i for i in items if int(i.session.rsplit("-", 1)[1]) % shares == share]
    for item in mine:
        attempt = manager.load_checkpoint(item.project, item.session, item.phase).retry_count + 1
        send_back = int(item.session.rsplit("-", 1)[1]) % 3 == 0 and attempt == 1
        verdict = ["--reject", "--comment", "Sharper, please."] if send_back else ["--approve"]
        done = subprocess.run(
            [sys.executable, "-m", "haytham", "feedback", item.project, item.session, str(item.phase),
             *verdict, "--commit", "--push", "--base-dir", str(base)],
            cwd=clone, capture_output=True, text=True,
        )
        if done.returncode != 0:
            reviews["failed_pushes"] += 1
            sys.stderr.write(done.stdout + done.stderr)
            continue
        reviews["sent_back" if send_back else "approved"] += 1
    if not mine:
        time.sleep(0.3)
print(json.dumps(reviews))
'''


def git(repo: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {repo}:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def clone(origin: Path, path: Path, name: str, *, driver: bool = True) -> Path:
    """A clone of ``origin`` at ``path`` whose git user is ``name``; with the merge driver set up."""
    git(path.parent, "clone", "-q", origin.as_uri(), str(path))
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", f"{name}@example.com")
    if driver:
        setup(path, path / "projects")
    return path


def bare_origin(tmp: Path) -> Path:
    """An empty bare remote ``tmp/origin.git`` on branch main."""
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(origin))
    return origin


def new_repository(folder: Path) -> Path:
    """A new repository in ``folder`` on branch main, committing as the folder's name."""
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.name", folder.name)
    git(folder, "config", "user.email", f"{folder.name}@example.com")
    return folder


def seeded_origin(tmp: Path, sessions: int) -> Path:
    """A bare remote holding ``sessions`` new sessions of GATED, set up for the merge driver."""
    origin = bare_origin(tmp)
    seed = new_repository(tmp / "seed")
    setup(seed, seed / "projects")
    manager = CheckpointManager(seed / "projects", workflows=[GATED])
    for number in range(1, sessions + 1):
        manager.create_session(PROJECT, session_name(number), "ada", GATED, "full")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", f"{sessions} sessions")
    git(seed, "remote", "add", "origin", origin.as_uri())
    git(seed, "push", "-q", "origin", "main")
    return origin


def session_name(number: int) -> str:
    return f"s-{number:03d}"


def environment(tmp: Path, **extra: str) -> dict[str, str]:
    (tmp / "mm_agents.py").write_text(AGENTS_MODULE, "utf-8")
    (tmp / "mm_reviewer.py").write_text(REVIEWER_SCRIPT, "utf-8")
    return {**os.environ, "PYTHONPATH": str(tmp), "MM_CALLS": str(tmp / "calls.log"), **extra}


def start_worker(
    tmp: Path,
    origin: Path,
    name: str,
    env: dict[str, str],
    *,
    claim_seconds: float = 600,
    more: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    repo = clone(origin, tmp / name, name)
    command = [
        sys.executable,
        "-m",
        "haytham",
        "runner",
        "--remote",
        "origin",
        "--agents",
        "mm_agents:agent",
        "--poll",
        "0.3",
        "--claim-seconds",
        str(claim_seconds),
        "--worker",
        name,
        "--json",
        "--base-dir",
        str(repo / "projects"),
        *more,
    ]
    return subprocess.Popen(
        command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@dataclass
class Outcome:
    """What a run of the scenario showed."""

    sessions: int
    workers: int
    reviewers: int
    wall_seconds: float
    worker_reports: list[dict[str, Any]]
    reviewer_reports: list[dict[str, Any]]
    calls: list[tuple[str, int, str, int]]
    clones: list[Path]
    origin: Path
    stderr: list[str] = field(default_factory=list)

    @property
    def duplicate_runs(self) -> int:
        return sum(count - 1 for count in Counter(self.calls).values())

    def summary(self, fresh: Path) -> dict[str, Any]:
        manager = CheckpointManager(fresh / "projects")
        subjects = git(self.origin, "log", "--format=%s", "main").splitlines()
        phases = sum(
            len(manager.load_checkpoints(PROJECT, session_name(n))) for n in range(1, self.sessions + 1)
        )
        return {
            "sessions": self.sessions,
            "workers": self.workers,
            "reviewers": self.reviewers,
            "phases": phases,
            "agent_runs": len(self.calls),
            "reviews": sum(" (review of attempt " in s for s in subjects),
            "commits": len(subjects),
            "merge_commits": int(git(self.origin, "rev-list", "--merges", "--count", "main").strip()),
            "push_retries": sum(r["push_retries"] for r in self.worker_reports),
            "claims_lost": sum(r["claims_lost"] for r in self.worker_reports),
            "conflicts": sum("conflict" in text.lower() for text in self.stderr),
            "duplicate_runs": self.duplicate_runs,
            "wall_seconds": round(self.wall_seconds, 1),
        }


def run_scenario(tmp: Path, *, workers: int, reviewers: int, sessions: int) -> Outcome:
    """Run the scenario to its end (every session complete) and collect what each process said."""
    origin = seeded_origin(tmp, sessions)
    env = environment(tmp)
    started = time.monotonic()
    worker_processes = [start_worker(tmp, origin, f"worker-{n}", env) for n in range(1, workers + 1)]
    reviewer_clones = [clone(origin, tmp / f"reviewer-{n}", f"reviewer-{n}") for n in range(1, reviewers + 1)]
    reviewer_processes = [
        subprocess.Popen(
            [sys.executable, str(tmp / "mm_reviewer.py"), str(path), str(n), str(reviewers), str(sessions)],
            cwd=path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, path in enumerate(reviewer_clones)
    ]
    while any(p.poll() is None for p in reviewer_processes):
        if any(p.poll() is not None for p in worker_processes):  # a worker died: stop everything
            for process in (*reviewer_processes, *worker_processes):
                if process.poll() is None:
                    process.kill()
            said = [p.communicate() for p in (*reviewer_processes, *worker_processes)]
            raise AssertionError(f"a worker stopped before the end: {said}")
        time.sleep(0.2)
    reviewer_out = [p.communicate() for p in reviewer_processes]
    for process in worker_processes:
        process.send_signal(signal.SIGTERM)
    worker_out = [p.communicate(timeout=600) for p in worker_processes]
    wall = time.monotonic() - started
    codes = [p.returncode for p in (*reviewer_processes, *worker_processes)]
    assert codes == [0] * len(codes), (codes, reviewer_out, worker_out)
    calls = []
    for line in (tmp / "calls.log").read_text("utf-8").splitlines():
        session, phase, agent, attempt, _pid = line.split("|")
        calls.append((session, int(phase), agent, int(attempt)))
    return Outcome(
        sessions,
        workers,
        reviewers,
        wall,
        [json.loads(out) for out, _ in worker_out],
        [json.loads(out) for out, _ in reviewer_out],
        calls,
        [tmp / f"worker-{n}" for n in range(1, workers + 1)] + reviewer_clones,
        origin,
        [err for _, err in (*reviewer_out, *worker_out)],
    )
