"""The worker loop of ``haytham runner``: one worker host of many, sharing a git remote.

Each turn: sync with the remote (``haytham.git.sync``); pick a session that has work for a
runner (the lifecycle's ``next_action == "run"``: not awaiting review, not complete, no file
to fix) and that no other worker holds a valid claim of; claim it (``haytham.git.claims``:
the push decides who wins); run it with ``PhaseRunner`` until it stops (done, awaiting
review, or failed), committing as it goes (``AutoCommit``); release the claim and push.
Then again, until ``max_sessions`` sessions were run or ``stop()`` is called (``haytham
runner`` calls it on SIGTERM).

A stop asked for during a run takes effect at the next safe point: right after an agent's
output is saved (nothing is being written or committed then). The phase stays in progress
with the outputs saved so far, the claim is released in a commit that holds them, and the
commit is pushed; the next worker resumes the phase without redoing those agents.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from haytham.errors import HaythamError, WorkerStopped
from haytham.format.workflow import Workflow
from haytham.git.autocommit import AutoCommit
from haytham.git.claims import (
    SessionClaimed,
    claim_session,
    claimable,
    default_worker,
    new_worker_id,
    release_claim,
)
from haytham.git.repository import knows_author, repo_root
from haytham.git.sync import DEFAULT_ATTEMPTS, DEFAULT_REMOTE, PushRejected, sync
from haytham.run.runner import Agent, PhaseRunner, RunResult
from haytham.store.manager import CheckpointManager
from haytham.store.scan import list_sessions

AgentsFor = Callable[[Workflow], Mapping[str, Agent]]
"""Given a session's workflow, the callables that play its agents (``--agents``)."""


@dataclass
class WorkerReport:
    """What a worker did, for its closing line and for benchmarks."""

    worker: str
    runs: list[tuple[str, str, str]] = field(default_factory=list)
    """(project, session, how the run ended) for every run, in order."""
    agents_run: int = 0
    claims_lost: int = 0
    takeovers: int = 0
    push_retries: int = 0
    commits: int = 0
    syncs: int = 0
    stopped: bool = False
    """True when the loop ended on ``stop()`` (SIGTERM)."""


class Worker:
    """The loop of one worker host (module docstring)."""

    def __init__(
        self,
        manager: CheckpointManager,
        agents_for: AgentsFor,
        *,
        remote: str = DEFAULT_REMOTE,
        project: str | None = None,
        max_sessions: int | None = None,
        claim_seconds: float = 3600.0,
        poll_seconds: float = 5.0,
        worker: str | None = None,
        identity: tuple[str, str] | None = None,
        set_up_driver: bool = False,
        until_idle: bool = False,
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        self.manager = manager
        self.agents_for = agents_for
        self.remote = remote
        self.project = project
        self.max_sessions = max_sessions
        self.claim_seconds = claim_seconds
        self.poll_seconds = poll_seconds
        self.worker = worker or default_worker()
        """This worker's name in claims and commits, for people: it may repeat across workers."""
        self.worker_id = new_worker_id()
        """This worker's id in its claims: random, so a twin of its name never takes them for its own."""
        self.root = repo_root(manager.base_dir)
        if identity is None and not knows_author(self.root):  # a bare worker host: name it
            identity = (self.worker, f"{self.worker.split(':')[0]}@haytham.invalid")
        self.identity = identity
        """Who the worker's commits are by (git's user of the clone unless given or unknown)."""
        self.set_up_driver = set_up_driver
        self.until_idle = until_idle
        self.say = on_message or (lambda message: None)
        self.report = WorkerReport(self.worker)
        self.autocommit = AutoCommit(manager, self.root, identity=identity, log_failures=False)
        """Commits each phase finished and attempt archived (``haytham.git.autocommit``)."""
        self._stop = threading.Event()

    def stop(self) -> None:
        """Stop at the next safe point (between sessions, or after an agent's output)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self) -> WorkerReport:
        """Loop until ``max_sessions`` sessions were run, a stop, or (``until_idle``) no work."""
        while not self.stopping:
            if self.max_sessions is not None and len(self.report.runs) >= self.max_sessions:
                break
            self._sync(set_up=self.set_up_driver)
            candidates = self._candidates()
            if not candidates:
                if self.until_idle:
                    break
                self._pause(self.poll_seconds)
                continue
            random.shuffle(candidates)  # workers that look at once rarely pick the same one
            for project_id, session_id in candidates:
                if self.stopping:
                    break
                if self._claim_and_run(project_id, session_id):
                    break
        self.report.stopped = self.stopping
        self._final_push()
        return self.report

    def _final_push(self) -> None:
        """Before the loop ends, every commit of this worker must be on the remote: a push
        rejected by a busy remote is tried again (a PushRejected after that is raised)."""
        for _ in range(4):
            try:
                result = sync(self.root, self.remote, base_dir=self.manager.base_dir)
            except PushRejected:
                self.report.push_retries += DEFAULT_ATTEMPTS
                continue
            self.report.push_retries += result.retries
            return
        sync(self.root, self.remote, base_dir=self.manager.base_dir)

    # ----------------------------------------------------------------- one session

    def _claim_and_run(self, project_id: str, session_id: str) -> bool:
        """Claim and run one session; False when it was lost to another worker or has no work."""
        what = f"{project_id}/{session_id}"
        session_dir = self.manager.session_dir(project_id, session_id)
        try:
            claim = claim_session(
                self.root,
                session_dir,
                what,
                worker=self.worker,
                ttl=self.claim_seconds,
                remote=self.remote,
                identity=self.identity,
                worker_id=self.worker_id,
            )
        except (SessionClaimed, PushRejected) as lost:
            self.report.claims_lost += 1
            self.say(f"{self.worker}: {lost}")
            return False
        self.report.commits += 1
        if claim.took_over:
            self.report.takeovers += 1
            self.say(f"{self.worker}: took {what} over from {claim.took_over}")
        reason = "done"
        try:
            self.manager.recover(project_id, session_id)
            if self.manager.state(project_id, session_id).next_action != "run":  # others ran it meanwhile
                reason = "nothing to run"
                return False
            result = self._run_session(project_id, session_id)
            reason = result.status.replace("_", " ")
            self.report.runs.append((project_id, session_id, result.status))
            self.say(f"{self.worker}: {what}: {result}")
            return True
        except WorkerStopped:
            reason = "stopped"
            self.report.runs.append((project_id, session_id, "stopped"))
            self.say(f"{self.worker}: stopped during {what}; its saved outputs are kept")
            return True
        finally:
            if release_claim(
                self.root,
                session_dir,
                what,
                worker=self.worker,
                reason=reason,
                identity=self.identity,
                worker_id=self.worker_id,
            ):
                self.report.commits += 1
            self._sync(set_up=False)

    def _run_session(self, project_id: str, session_id: str) -> RunResult:
        workflow = self.manager.session_workflow(project_id, session_id)
        commits, failures = len(self.autocommit.commits), len(self.autocommit.failures)
        try:
            runner = PhaseRunner(
                self.manager,
                workflow,
                self.agents_for(workflow),
                on_output_saved=self._safe_point,
                autocommit=self.autocommit,
            )
            result = runner.run(project_id, session_id)
            self.report.agents_run += len(result.ran_agents)
            return result
        finally:
            self.report.commits += len(self.autocommit.commits) - commits
            if len(self.autocommit.failures) > failures:  # loud: the loop stops, the claim is released
                raise self.autocommit.failures[-1]

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less when a stop is asked for."""
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def _safe_point(self, phase: int, agent: str) -> None:
        if self.stopping:
            raise WorkerStopped(f"stopped after phase {phase} {agent}")

    # ---------------------------------------------------------------------- helpers

    def _sync(self, *, set_up: bool) -> None:
        """Sync; a push rejected every time (a busy remote) is retried at the next turn."""
        self.report.syncs += 1
        try:
            result = sync(self.root, self.remote, base_dir=self.manager.base_dir, set_up_driver=set_up)
        except PushRejected as busy:
            self.report.push_retries += DEFAULT_ATTEMPTS
            self.say(f"{self.worker}: {busy}")
            return
        self.report.push_retries += result.retries
        for note in result.recovered:
            self.say(f"{self.worker}: recovered: {note}")

    def _candidates(self) -> list[tuple[str, str]]:
        """Sessions with work for a runner that this worker may claim now. Each session's
        interrupted change (a writer killed in the middle, ``CheckpointManager.recover``) is
        finished first, so the choice is made on whole changes, never on half of one."""
        found, _unreadable = list_sessions(
            self.manager.base_dir, project_id=self.project, workflows=self.manager.workflows
        )
        candidates = []
        for summary in found:
            project_id, session_id = summary.project_id, summary.session_id
            try:
                self.manager.recover(project_id, session_id)
                if self.manager.state(project_id, session_id).next_action != "run":
                    continue
            except HaythamError:
                continue
            session_dir = self.manager.session_dir(project_id, session_id)
            if claimable(session_dir, self.worker, worker_id=self.worker_id):
                candidates.append((project_id, session_id))
        return candidates


__all__ = ["AgentsFor", "Worker", "WorkerReport", "WorkerStopped"]
