"""The review lifecycle under random use: a hypothesis state machine drives one session of a
small workflow (and the forks made from it) through runs, reviews by the library, the command
line and hand edits, re-runs, forks, and kills followed by resume. After every step every view
must agree on where each session stands, no phase reported done may be built on outputs that
changed since, and every file must validate."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from small_workflow import PHASES, PROJECT, Agents, manager_for, new_session, runner_for

from haytham.cli.main import cli
from haytham.format import AGENT_OUTPUT
from haytham.format.layout import FEEDBACK_FILE
from haytham.run.runner import next_step
from haytham.store import lifecycle
from haytham.store.phase_files import agent_files

NUMBERS = [phase.number for phase in PHASES]
ACTIONS = {"run": "resume", "review": "review", "fix": "fix", "done": "done"}


class Crash(BaseException):
    """A kill: not an agent's failure (the runner saves those) but the process going away."""


class LifecycleMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="haytham-machine-"))
        self.manager = manager_for(self.base)
        self.agents = Agents()
        self.runner = runner_for(self.manager, self.agents)
        self.sessions = ["s"]
        self.hand_edited = False
        new_session(self.manager, "s")

    def teardown(self) -> None:
        if hasattr(self, "base"):
            shutil.rmtree(self.base, ignore_errors=True)

    # ----------------------------------------------------------------- helpers

    def pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(self.sessions), label="session")

    def reviewable(self, session: str, approve: bool) -> list[int]:
        """The phases the lifecycle lets a reviewer approve (or send back) now."""
        event = "approve" if approve else "send back"
        view = self.manager.state(PROJECT, session)
        return [
            p.number
            for p in view.phases
            if not isinstance(lifecycle.check_move(event, p.state, "reviewer"), str)
        ]

    def cli(self, *args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "--base-dir", str(self.base)])
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.output

    # ------------------------------------------------------------------- rules

    @rule(data=st.data())
    def run(self, data: st.DataObject) -> None:
        self.runner.run(PROJECT, self.pick(data))

    @rule(data=st.data(), approve=st.booleans(), comment=st.sampled_from(["more", "names", "sharper"]))
    def review_by_library(self, data: st.DataObject, approve: bool, comment: str) -> None:
        session = self.pick(data)
        phases = self.reviewable(session, approve)
        if not phases:
            return
        phase = data.draw(st.sampled_from(phases), label="phase")
        if approve:
            self.manager.save_user_feedback(PROJECT, session, phase, reviewed=True, approved=True)
        else:
            self.manager.save_user_feedback(
                PROJECT, session, phase, reviewed=True, approved=False, comments=comment, action="retry"
            )

    @rule(data=st.data(), approve=st.booleans(), comment=st.sampled_from(["cli says more", "cli: again"]))
    def review_by_cli(self, data: st.DataObject, approve: bool, comment: str) -> None:
        session = self.pick(data)
        phases = self.reviewable(session, approve)
        if not phases:
            return
        phase = str(data.draw(st.sampled_from(phases), label="phase"))
        if approve:
            self.cli("feedback", PROJECT, session, phase, "--approve")
        else:
            self.cli("feedback", PROJECT, session, phase, "--reject", "--comment", comment)

    @rule(data=st.data(), approve=st.booleans())
    def review_by_hand(self, data: st.DataObject, approve: bool) -> None:
        session = self.pick(data)
        phases = [
            n
            for n in self.reviewable(session, approve)
            if (self.manager.phase_dir(PROJECT, session, n) / FEEDBACK_FILE).is_file()
        ]
        if not phases:
            return
        path = self.manager.phase_dir(PROJECT, session, data.draw(st.sampled_from(phases))) / FEEDBACK_FILE
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"(?m)^(- \**Reviewed:\**) .*$", r"\1 yes", text)
        text = re.sub(r"(?m)^(- \**Approved:\**) .*$", rf"\1 {'yes' if approve else 'no'}", text)
        if not approve:  # taking an approval back, a person changes its action too (formats.md)
            text = re.sub(r"(?m)^(- \**Action:\**) approved$", r"\1 retry", text)
        path.write_text(text, encoding="utf-8")
        self.hand_edited = True

    @rule(data=st.data(), phase=st.sampled_from(NUMBERS))
    def rerun(self, data: st.DataObject, phase: int) -> None:
        self.runner.rerun(PROJECT, self.pick(data), phase)

    @precondition(lambda self: len(self.sessions) < 4)
    @rule(data=st.data(), phase=st.sampled_from(NUMBERS))
    def fork_from_phase(self, data: st.DataObject, phase: int) -> None:
        new = f"f{len(self.sessions)}"
        self.manager.fork_session(PROJECT, self.pick(data), new, phase)
        self.sessions.append(new)

    @precondition(lambda self: len(self.sessions) < 4)
    @rule(data=st.data())
    def fork_from_entry(self, data: st.DataObject) -> None:
        source = self.pick(data)
        entries = self.manager.history(PROJECT, source)
        if not entries:
            return
        entry = data.draw(st.sampled_from(entries), label="entry")
        new = f"f{len(self.sessions)}"
        self.manager.fork_session(PROJECT, source, new, from_entry=entry.entry_id)
        self.sessions.append(new)

    @rule(data=st.data(), after=st.integers(1, 4))
    def agent_fails_then_resume(self, data: st.DataObject, after: int) -> None:
        session = self.pick(data)
        self.agents.kill_at = self.agents.calls + after
        self.runner.run(PROJECT, session)
        self.agents.kill_at = None
        self.runner.run(PROJECT, session)

    @rule(data=st.data(), after=st.integers(1, 4))
    def kill_then_resume(self, data: st.DataObject, after: int) -> None:
        session = self.pick(data)
        calls = self.agents.calls + after
        crashing = PhaseRunnerKill(self.agents, calls)
        runner = runner_for(self.manager, crashing)  # type: ignore[arg-type]
        with contextlib.suppress(Crash):  # the session may finish or stop for review first
            runner.run(PROJECT, session)
        self.agents.calls = max(self.agents.calls, crashing.calls)
        self.runner.run(PROJECT, session)

    # -------------------------------------------------------------- invariants

    @invariant()
    def invariants(self) -> None:
        """In this order: the views (loading a session brings a hand edit into its manifest),
        then the outputs every done phase was built on, then validation of every file."""
        if not hasattr(self, "sessions"):
            return
        self.every_view_agrees()
        self.nothing_done_is_built_on_changed_outputs()
        self.every_file_validates()

    def every_view_agrees(self) -> None:
        """Every view agrees with ``manager.state`` at once, with no haytham write between an
        outside change and the views (the files are the truth); only the manifest file itself
        may lag an outside change until the next write (here ``repair``, as ``doctor --fix``)."""
        listed = {s.session_id: s for s in self.manager.list_sessions(project_id=PROJECT)}
        waiting = {
            s.session_id for s in self.manager.list_sessions(project_id=PROJECT, status="awaiting_review")
        }
        for session in self.sessions:
            view = self.manager.state(PROJECT, session)
            before = self.manager.load_manifest(PROJECT, session)
            if not self.hand_edited:
                assert [r.status for r in before.phases] == [p.state for p in view.phases], session
                assert before.status == view.state
            loaded = self.manager.load_session(PROJECT, session)
            status = json.loads(self.cli("status", PROJECT, session, "--json"))
            step = next_step(self.manager, PROJECT, session)
            assert self.manager.load_manifest(PROJECT, session) == before  # reads never write
            listed_now = listed[session]
            states = {view.state, loaded["status"], listed_now.status, status["status"]}
            assert states == {view.state}, (session, states)
            assert (session in waiting) == (view.state == "awaiting_review"), session
            assert step.action == ACTIONS[view.next_action]
            current = view.current.number if view.current else None
            assert step.phase == current and loaded["next_phase"] == current
            if current is not None and any(p.state != "pending" for p in view.phases):
                assert listed_now.current_phase == current and status["current_phase"] == current
            assert loaded["phase_statuses"] == {p.number: p.state for p in view.phases}
            if self.hand_edited:  # the next write brings the manifest up to date (and finishes
                self.manager.repair(PROJECT, session)  # a change a kill left, so derive again)
                view = self.manager.state(PROJECT, session)
            manifest = self.manager.load_manifest(PROJECT, session)
            assert [r.status for r in manifest.phases] == [p.state for p in view.phases], session
            assert manifest.status == view.state
        self.hand_edited = False

    def nothing_done_is_built_on_changed_outputs(self) -> None:
        for session in self.sessions:
            view = self.manager.state(PROJECT, session)
            checkpoints = self.manager.load_checkpoints(PROJECT, session)
            on_disk = {}
            for phase in PHASES:
                directory = self.manager.phase_dir(PROJECT, session, phase.number)
                outputs = {
                    path.stem: AGENT_OUTPUT.load(path).content
                    for path in (agent_files(directory) if directory.is_dir() else [])
                }
                on_disk[phase.number] = lifecycle.outputs_digest(outputs)
            for phase in view.phases:
                if phase.state not in ("completed", "approved"):
                    continue
                saved = checkpoints[phase.number]
                if not phase.edited:  # a correction made by hand is kept, and flagged
                    assert saved.outputs_digest == on_disk[phase.number], (session, phase.number)
                built = dict(saved.built_from)
                for earlier in NUMBERS[: NUMBERS.index(phase.number)]:
                    upstream = checkpoints.get(earlier)
                    assert upstream is not None and upstream.status == "completed", (session, phase, earlier)
                    assert built.get(earlier) == on_disk[earlier], (session, phase.number, earlier)

    def every_file_validates(self) -> None:
        errors = [i for i in self.manager.validate_paths([self.base]) if i.is_error]
        assert errors == []


class PhaseRunnerKill:
    """Agents that kill the process (raise Crash, which no runner catches) on call ``at``."""

    def __init__(self, agents: Agents, at: int) -> None:
        self.agents = agents
        self.at = at
        self.calls = agents.calls

    def __call__(self, context: object) -> str:
        self.calls += 1
        if self.calls == self.at:
            raise Crash(f"killed at call {self.at}")
        return self.agents(context)  # type: ignore[arg-type]

    def mapping(self) -> dict[str, object]:
        return {agent: self for phase in PHASES for agent in phase.agents}


LifecycleMachine.TestCase.settings = settings(
    max_examples=10,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure is reported unshrunk: fast
)
test_lifecycle_machine = LifecycleMachine.TestCase


class ExhaustiveLifecycleMachine(LifecycleMachine):
    pass


ExhaustiveLifecycleMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)
)
test_lifecycle_machine_exhaustive = pytest.mark.slow(ExhaustiveLifecycleMachine.TestCase)
