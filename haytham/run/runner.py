"""The reference phase runner: run a session's phases, checkpoint as it goes, stop for
review, and resume after a crash, a failure or a review, using only the public store API.

A phase is never run twice for the same attempt: agents whose outputs are saved as
completed are skipped on resume, a retried phase keeps its previous attempt under
``attempts/{n}/`` (see ``CheckpointManager.start_attempt``), and a run holds the session's
run lease (``haytham.run.lease``) from start to end, so a second runner of the same session
is refused at once instead of running the same attempt again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import time
from collections.abc import Awaitable, Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haytham.errors import AgentImportError, HaythamError, InvalidArgumentError, WorkflowChangedError
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.policy import AgentPolicy, Budget
from haytham.format.workflow import PhaseDefinition, Workflow, describe_changes, split_callable
from haytham.records import AgentOutput, AgentTry, PhaseCheckpoint, UserFeedback
from haytham.run import budget, effects
from haytham.store import lifecycle
from haytham.store.advice import NextStep as NextStep  # the advice lives in the store (web shows it too)
from haytham.store.advice import next_step as next_step
from haytham.store.manager import CheckpointManager

if TYPE_CHECKING:  # git (subprocess), the lease (socket) and threads only when a run needs
    # them, not for ``next_step``, which ``haytham status`` asks
    from concurrent.futures import Future

    from haytham.git.autocommit import AutoCommit
    from haytham.run.retry import Predicate, RunClock


@dataclass(frozen=True)
class AgentContext:
    """What an agent is given: where it runs, what came before, what the reviewer asked."""

    project_id: str
    session_id: str
    phase: PhaseDefinition
    agent_name: str
    attempt: int
    """1 for the first run of the phase, 2 after the first retry, ..."""
    previous_outputs: Mapping[int, Mapping[str, str]]
    """The outputs of the earlier phases of the session, ``{phase: {agent: text}}``."""
    feedback: UserFeedback | None = None
    """The review that sent the phase back, when this attempt is a retry."""
    try_number: int = 1
    """1 for the first try of this agent in this attempt, 2 for its first retry, ..."""

    @property
    def idempotency_key(self) -> str:
        """A key for the APIs with side effects the agent calls, stable across resumes and
        machines and different for every try (``haytham.run.effects.idempotency_key``)."""
        return effects.idempotency_key(
            self.project_id,
            self.session_id,
            self.phase.number,
            self.attempt,
            self.agent_name,
            self.try_number,
        )

    @property
    def traceparent(self) -> str:
        """The W3C ``traceparent`` of this agent's run: the session's trace, a span for phase,
        attempt and agent (``haytham.run.effects.traceparent``)."""
        return effects.traceparent(
            self.project_id, self.session_id, self.phase.number, self.attempt, self.agent_name
        )

    @property
    def comments(self) -> str:
        """The reviewer's comments, then their own text (``UserFeedback.notes``: their own
        sections as ``### Title`` and text), so nothing a reviewer wrote is lost to the agents."""
        if self.feedback is None:
            return ""
        return "\n\n".join(part for part in (self.feedback.comments, self.feedback.notes) if part)

    @property
    def requested_changes(self) -> tuple[str, ...]:
        return self.feedback.requested_changes if self.feedback else ()


@dataclass(frozen=True)
class AgentResult:
    """An agent's output with the facts about how it was made."""

    content: str
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    tools_used: tuple[str, ...] = ()
    duration: float | None = None
    """Seconds; measured by the runner when not given."""
    trace_id: str | None = None
    """The agent's own trace id (its tracing tool's), kept as the output's ``Trace ID`` so
    the phase page can link to it; None: the output keeps none."""


AgentReturn = str | AgentResult
Agent = Callable[[AgentContext], AgentReturn | Awaitable[AgentReturn]]
"""An agent: a function, sync or async, from its context to markdown or an AgentResult."""


@dataclass(frozen=True)
class RunResult:
    """Where a run stopped."""

    status: Literal["completed", "awaiting_review", "failed"]
    phase: int | None = None
    feedback_file: Path | None = None
    """The file to edit when a phase awaits review."""
    error: str | None = None
    """Why the run failed, or why a phase awaits review when an agent's tries ran out."""
    ran_agents: tuple[str, ...] = field(default=(), compare=False)
    """``phase:agent`` for every agent this run called, in order."""

    def __str__(self) -> str:
        if self.status == "completed":
            return "completed: every phase is done"
        if self.status == "awaiting_review":
            because = f" ({self.error})" if self.error else ""
            return f"phase {self.phase} awaits review{because}: edit {self.feedback_file}"
        return f"failed at phase {self.phase}: {self.error}"


ReviewVerdict = Literal["awaiting", "approved", "sent_back"]


def review_verdict(feedback: UserFeedback | None) -> ReviewVerdict:
    """How a run reads a phase's feedback: ``lifecycle.verdict``, with no file read as awaiting
    and a skip read as an approval (both move the run on)."""
    found = lifecycle.verdict(feedback)
    return {"none": "awaiting", "skipped": "approved"}.get(found, found)  # type: ignore[return-value]


def load_callable(spec: str) -> Any:
    """Import ``module:function`` and return the object (any attribute, dotted after the colon).

    The module is looked up on ``sys.path`` as it is (``haytham resume`` puts the current
    directory first, so a project's own agents module is found). Raises AgentImportError
    naming the module or the attribute.
    """
    module_name, attribute = split_callable(spec)
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as error:  # the user's module may fail in any way; say how
        raise AgentImportError(
            f"cannot import module {module_name!r} (from {spec!r}): {type(error).__name__}: {error}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise AgentImportError(f"module {module_name!r} has no {attribute!r} (from {spec!r})")
        found = getattr(found, part)
    return found


def resolve_agents(workflow: Workflow, given: Mapping[str, Agent] | None = None) -> dict[str, Agent]:
    """The callable of every agent of ``workflow``: ``given`` first, else its ``callables``.

    Bindings are imported only here, at run time, and only for agents ``given`` leaves out.
    An agent without either is left out: ``PhaseRunner`` names every missing one. Raises
    AgentImportError when a binding cannot be imported or is not callable.
    """
    agents: dict[str, Agent] = dict(given or {})
    for name in dict.fromkeys(a for p in workflow.phases for a in p.agents):
        spec = workflow.callables.get(name)
        if name in agents or spec is None:
            continue
        found = load_callable(spec)
        if not callable(found):
            raise AgentImportError(f"agent {name!r}: {spec!r} is a {type(found).__name__}, not a function")
        agents[name] = found
    return agents


def missing_agents(workflow: Workflow, agents: Container[str], mode: str | None = None) -> list[str]:
    """The agents of ``workflow`` (of its phases in ``mode``, when given) that ``agents``
    (names, or a mapping by name) leaves out, in phase order."""
    phases = workflow.phases if mode is None else workflow.phases_for(mode)
    return [a for a in dict.fromkeys(a for p in phases for a in p.agents) if a not in agents]


class PhaseRunner:
    """Runs the phases of a session in order with the given agents."""

    def __init__(
        self,
        manager: CheckpointManager,
        workflow: Workflow,
        agents: Mapping[str, Agent] | None = None,
        *,
        allow_workflow_change: bool = False,
        on_output_saved: Callable[[int, str], None] | None = None,
        autocommit: AutoCommit | None = None,
        clock: RunClock | None = None,
    ) -> None:
        self.manager = manager
        self.workflow = workflow
        self.agents = resolve_agents(workflow, agents)
        """``agents``, completed by the workflow's ``callables`` for the agents it leaves out."""
        self.allow_workflow_change = allow_workflow_change
        self.on_output_saved = on_output_saved
        """Called with (phase, agent) after each output is on disk (the demo's --crash-after)."""
        self.autocommit = autocommit
        """Commits to git as the run goes (``haytham.git.autocommit``): the manager's events
        give a commit for each phase finished; the runner adds one for each attempt archived."""
        self.clock = clock
        """What the retry loop waits with (``haytham.run.retry.RunClock``); None: the real
        clock. Tests pass one that only counts, so they never sleep."""
        self._predicates: dict[str, Predicate] = _predicates(workflow)
        """Each ``retry_on`` predicate, imported here: a wrong name is refused before
        anything is run or written."""

    def run(self, project_id: str, session_id: str) -> RunResult:
        """Run or resume the session until it completes, fails, or a phase awaits review.

        Each step does what ``manager.state`` (the lifecycle) says the first phase not done
        needs: a pending, interrupted or failed phase runs its missing agents; a phase sent
        back (with or without a review gate) or stale (built on outputs that changed since)
        is kept as an attempt and runs again; a phase awaiting review stops the run.

        The run holds the session's run lease throughout: when another process is running
        the session, SessionBusyError names it and nothing is run.
        """
        with self._lease(project_id, session_id):
            return self._run(project_id, session_id)

    def _lease(self, project_id: str, session_id: str) -> contextlib.AbstractContextManager[object]:
        """The session's run lease (the session must exist: its manifest is read first)."""
        from haytham.run.lease import run_lease

        self.manager.load_manifest(project_id, session_id)
        return run_lease(self.manager.session_dir(project_id, session_id), f"{project_id}/{session_id}")

    def _run(self, project_id: str, session_id: str) -> RunResult:
        # First finish a change a killed writer left half applied (a resume killed inside
        # start_attempt or a save): every step below decides from the files it reads.
        self.manager.recover(project_id, session_id)
        state = self.manager.load_session(project_id, session_id)
        self._check_workflow(project_id, session_id, state)
        self._check_agents(state["execution_mode"])
        ran: list[str] = []
        self._record_approvals(project_id, session_id)
        self._keep_corrections(project_id, session_id)
        attempts: set[tuple[int, int]] = set()
        while True:
            view = self.manager.state(project_id, session_id)
            current = view.current
            if current is None:
                return RunResult("completed", ran_agents=tuple(ran))
            phase = self.workflow.phase_in_mode(current.number, state["execution_mode"])
            if current.state == "awaiting_review":
                if current.problem is not None:  # the same error a person sees: fix the file
                    self.manager.load_feedback(project_id, session_id, phase.number)
                return self._await_review(project_id, session_id, phase, ran)
            if (current.number, current.attempt) in attempts and current.state not in ("sent_back", "stale"):
                raise HaythamError(  # a guard: an attempt this run made that is still not done
                    f"phase {current.number} is {current.describe()} after running; stopping"
                )
            checkpoint = self._checkpoint(project_id, session_id, phase)
            if current.state in ("sent_back", "stale"):
                refused = self._start_again(project_id, session_id, phase, current, ran)
                if refused is not None:
                    return refused
                checkpoint = self._checkpoint(project_id, session_id, phase)
            held = self._hold_or_release(project_id, session_id, phase, checkpoint, view, ran)
            if isinstance(held, RunResult):
                return held
            checkpoint = self._checkpoint(project_id, session_id, phase)
            attempts.add((phase.number, checkpoint.retry_count + 1 if checkpoint else 1))
            previous = self._outputs_before(project_id, session_id, phase, view)
            failure = self._run_phase(project_id, session_id, phase, checkpoint, previous, ran, note=held)
            if failure is not None:
                return failure

    def rerun(self, project_id: str, session_id: str, from_phase: int) -> RunResult:
        """Keep phase ``from_phase`` and every later phase as attempts, then run the session
        (``CheckpointManager.archive_from``, then ``run``)."""
        self._check_agents(self.manager.load_manifest(project_id, session_id).execution_mode)
        with self._lease(project_id, session_id):
            archived = self.manager.archive_from(project_id, session_id, from_phase)
            if self.autocommit is not None:
                self.autocommit.attempt_archived(project_id, session_id, archived)
            return self._run(project_id, session_id)

    def _check_agents(self, mode: str) -> None:
        """Refuse, before anything is written, a run with no callable for an agent of ``mode``."""
        missing = missing_agents(self.workflow, self.agents, mode)
        if missing:
            raise InvalidArgumentError(f"no callable given for agents {', '.join(missing)}", field="agents")

    # ------------------------------------------------------------------ phases

    def _run_phase(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        checkpoint: PhaseCheckpoint | None,
        done_outputs: Mapping[int, Mapping[str, str]],
        ran: list[str],
        *,
        note: str | None = None,
    ) -> RunResult | None:
        """Run the phase's missing or failed agents; return a failed result or None.

        Each agent is recorded as started (its checkpoint row ``in_progress``) before it is
        called, and as completed by its output file (``haytham.run.effects``). ``note``: the
        history reason of the first checkpoint (agents that may have run, run again)."""
        from concurrent.futures import ThreadPoolExecutor, as_completed

        retry_count = checkpoint.retry_count if checkpoint else 0
        feedback = self._feedback_of_previous_attempt(project_id, session_id, phase, retry_count)
        saved = {name: self._saved_output(project_id, session_id, phase, name) for name in phase.agents}
        finished = {name: out for name, out in saved.items() if out is not None and out.status == "completed"}
        todo = [name for name in phase.agents if name not in finished]
        parallel = phase.run_style == "parallel"
        self._save_checkpoint(
            project_id,
            session_id,
            phase,
            "in_progress",
            finished,
            retry_count,
            started=checkpoint.started if checkpoint else None,
            running=todo if parallel else todo[:1],
            reason=note,
        )
        errors: list[str] = []
        broke: list[str] = []  # the agents whose last try failed (not those never run after one)
        with ThreadPoolExecutor(max_workers=len(todo) if parallel and todo else 1) as pool:
            futures: dict[Future[Called], str] = {}
            for index, name in enumerate(todo):
                if index and not parallel:  # started, durably, before it is called
                    self._save_checkpoint(
                        project_id, session_id, phase, "in_progress", finished, retry_count, running=[name]
                    )
                context = AgentContext(
                    project_id, session_id, phase, name, retry_count + 1, done_outputs, feedback
                )
                policy = self.workflow.policy_of(name)
                futures[pool.submit(self._call, self.agents[name], context, policy)] = name
                if not parallel:
                    outcome = self._record(
                        project_id, session_id, phase, name, next(iter(futures)).result(), ran
                    )
                    futures.clear()
                    if isinstance(outcome, str):
                        errors.append(outcome)
                        broke.append(name)
                        break
                    finished[name] = outcome
            for future in as_completed(futures):
                name = futures[future]
                outcome = self._record(project_id, session_id, phase, name, future.result(), ran)
                if isinstance(outcome, str):
                    errors.append(outcome)
                    broke.append(name)
                else:
                    finished[name] = outcome
        status = "failed" if errors else "completed"
        failed = [n for n in todo if n not in finished]
        parked = bool(broke) and all(self.workflow.policy_of(n).on_exhausted == "await_review" for n in broke)
        if (not errors and phase.review) or parked:  # the blank review first: it then waits
            self._blank_review(project_id, session_id, phase)
        self._save_checkpoint(
            project_id,
            session_id,
            phase,
            status,
            finished,
            retry_count,
            errors=[*self._try_notes(project_id, session_id, phase, todo), *errors],
            failed=failed,
        )
        if parked:  # on_exhausted: await_review: a person decides (send back, approve, skip)
            result = self._await_review(project_id, session_id, phase, ran)
            return dataclasses.replace(result, error="; ".join(errors))
        if errors:
            return RunResult("failed", phase.number, error="; ".join(errors), ran_agents=tuple(ran))
        return None

    def _call(self, agent: Agent, context: AgentContext, policy: AgentPolicy) -> Called:
        """Run one agent's tries under its policy in this worker thread; never raise."""
        from haytham.run.retry import SystemClock, TryLoop

        predicate = None if policy.retry_on is None else self._predicates[policy.retry_on]
        loop = TryLoop(policy, self.clock or SystemClock(), predicate)
        started = time.monotonic()
        try:
            value = loop.run(agent, context)
            if isinstance(value, str):
                value = AgentResult(value)
            if not isinstance(value, AgentResult):
                raise TypeError(
                    f"agent {context.agent_name!r} returned {type(value).__name__}, not str or AgentResult"
                )
            outcome: AgentResult | BaseException = value
        except Exception as error:  # an agent's failure is data to save, not a crash of the runner
            outcome = error
        kept = tuple(loop.tries) if policy.keeps_tries else ()
        return outcome, round(time.monotonic() - started, 1), kept

    def _try_notes(
        self, project_id: str, session_id: str, phase: PhaseDefinition, agents: list[str]
    ) -> list[str]:
        """The checkpoint's record of every failed try of ``agents`` (their outputs' tries)."""
        notes: list[str] = []
        for name in agents:
            saved = self._saved_output(project_id, session_id, phase, name)
            tries = saved.tries if saved is not None else ()
            most = self.workflow.policy_of(name).retry.max_attempts
            notes += [note_of_try(name, found, most) for found in tries if found.outcome != "completed"]
        return notes

    def _record(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        name: str,
        outcome: Called,
        ran: list[str],
    ) -> AgentOutput | str:
        """Save one agent's output (or its failure) the moment it is known."""
        result, seconds, tries = outcome
        ran.append(f"{phase.number}:{name}")
        if isinstance(result, BaseException):
            import traceback  # only when an agent failed

            self.manager.save_agent_output(
                project_id,
                session_id,
                phase.number,
                name,
                "",
                status="failed",
                duration=seconds,
                error_type=type(result).__name__,
                error_message=str(result),
                stack_trace="".join(traceback.format_exception(result)),
                tries=tries,
            )
            self._saved(phase, name)
            return f"{name}: {type(result).__name__}: {result}"
        self.manager.save_agent_output(
            project_id,
            session_id,
            phase.number,
            name,
            result.content,
            status="completed",
            duration=result.duration if result.duration is not None else seconds,
            model=result.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            tools_used=list(result.tools_used),
            cost=result.cost,
            tries=tries,
            trace_id=result.trace_id,
        )
        self._saved(phase, name)
        return self.manager.load_agent_output(project_id, session_id, phase.number, name)

    def _saved(self, phase: PhaseDefinition, name: str) -> None:
        if self.on_output_saved is not None:
            self.on_output_saved(phase.number, name)

    def _save_checkpoint(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        status: str,
        finished: Mapping[str, AgentOutput],
        retry_count: int,
        *,
        started: str | None = None,
        errors: list[str] | None = None,
        failed: list[str] | None = None,
        running: Sequence[str] = (),
        held: Sequence[str] = (),
        reason: str | None = None,
    ) -> None:
        """``running``: agents recorded as started (row ``in_progress``); ``held``: why the
        phase waits for a person (``## Held``); ``reason``: the history entry's."""
        agents: list[dict[str, Any]] = []
        for name in phase.agents:
            output = finished.get(name)
            if output is None and name in running:
                agents.append({"agent_name": name, "status": "in_progress"})
                continue
            if output is None and name in (failed or []):  # its time counts for the phase's run
                tried = self._saved_output(project_id, session_id, phase, name)
                agents.append(
                    {"agent_name": name, "status": "failed", "duration": tried.duration if tried else None}
                )
                continue
            if output is None:
                agents.append({"agent_name": name, "status": "pending"})
                continue
            agents.append(
                {
                    "agent_name": name,
                    "status": "completed",
                    "input_tokens": output.input_tokens,
                    "output_tokens": output.output_tokens,
                    "cost": output.cost,
                    "duration": output.duration,
                }
            )
        self.manager.save_checkpoint(
            project_id,
            session_id,
            phase.number,
            status,
            agents,
            started=started,
            retry_count=retry_count,
            execution_mode=phase.run_style,
            errors=errors,
            held=held,
            reason=reason,
        )

    # ------------------------------------------------------------------ holds

    def _hold_or_release(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        checkpoint: PhaseCheckpoint | None,
        view: lifecycle.SessionView,
        ran: list[str],
    ) -> RunResult | str | None:
        """Before the phase runs: act on an approved hold, then hold the phase for a person
        when an agent with side effects may have run (``haytham.run.effects``) or a budget is
        spent (``haytham.run.budget``). A result when held; else the note for the agents
        without side effects that may have run and run again, or None."""
        if checkpoint is not None and checkpoint.held:  # the lifecycle let the run here: approved
            self._release(project_id, session_id, phase)
            checkpoint = self._checkpoint(project_id, session_id, phase)
        elif checkpoint is not None and checkpoint.status == "pending" and checkpoint.retry_count:
            self._carry(project_id, session_id, phase)  # a release killed before it carried all
        started = effects.started_agents(checkpoint)
        uncertain = effects.may_have_run(
            checkpoint, {name: self._saved_output(project_id, session_id, phase, name) for name in started}
        )
        risky = [name for name in uncertain if self._side_effects(name)]
        if risky:
            for name in risky:
                self.manager.session(project_id, session_id).save_agent_output(
                    phase.number, effects.placeholder(name)
                )
            reasons = [effects.hold_reason(name) for name in risky]
            return self._hold(project_id, session_id, phase, checkpoint, reasons, ran, running=risky)
        if checkpoint is None or checkpoint.status == "pending":
            session_budget, phase_budget = self._budgets(phase)
            reasons = budget.holds(
                self.manager,
                project_id,
                session_id,
                phase.number,
                [found.number for found in view.phases],
                session_budget,
                phase_budget,
            )
            if reasons:
                return self._hold(project_id, session_id, phase, checkpoint, reasons, ran)
        return effects.rerun_note(uncertain) if uncertain else None

    def _hold(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        checkpoint: PhaseCheckpoint | None,
        reasons: Sequence[str],
        ran: list[str],
        *,
        running: Sequence[str] = (),
    ) -> RunResult:
        """Save the phase held for ``reasons`` (its completed outputs as they are) and await review."""
        saved = {name: self._saved_output(project_id, session_id, phase, name) for name in phase.agents}
        finished = {name: out for name, out in saved.items() if out is not None and out.status == "completed"}
        self._save_checkpoint(
            project_id,
            session_id,
            phase,
            checkpoint.status if checkpoint else "pending",
            finished,
            checkpoint.retry_count if checkpoint else 0,
            started=checkpoint.started if checkpoint else None,
            running=running,
            held=reasons,
            reason="held: " + "; ".join(reasons),
        )
        return self._await_review(project_id, session_id, phase, ran)

    def _release(self, project_id: str, session_id: str, phase: PhaseDefinition) -> None:
        """Act on a hold a person approved: keep the held attempt (with the review that
        decided) under ``attempts/{n}/``, open the next and carry into it what the held one
        keeps (``_carry``)."""
        self.manager.start_attempt(project_id, session_id, phase.number)
        if self.autocommit is not None:
            self.autocommit.attempt_archived(project_id, session_id, [phase.number])
        self._carry(project_id, session_id, phase)

    def _carry(self, project_id: str, session_id: str, phase: PhaseDefinition) -> None:
        """Save in a phase's fresh attempt, after an approved hold, the outputs the held
        attempt keeps (``effects.carried``: the completed ones and each held agent's output a
        person corrected), read from ``attempts/{n}/``. Each is saved unless the attempt has
        it completed already, so a resume killed between these saves finishes them, and a
        held agent whose output a person wrote is never run in the meantime."""
        attempts = self.manager.load_attempts(
            project_id, session_id, phase.number, read_output=lambda _path: None
        )
        previous = attempts[-2] if len(attempts) >= 2 else None
        if previous is None or previous.checkpoint is None or not previous.checkpoint.held:
            return
        if previous.feedback is None or not previous.feedback.approved:
            return
        outputs = {name: effects.archived_output(previous.directory, name) for name in phase.agents}
        handle = self.manager.session(project_id, session_id)
        for fields in effects.carried(previous.checkpoint, outputs):
            saved = self._saved_output(project_id, session_id, phase, fields["agent_name"])
            if saved is None or saved.status != "completed":
                handle.save_agent_output(phase.number, fields)

    def _side_effects(self, agent: str) -> bool:
        """Whether the workflow marks ``agent`` ``side_effects: true``."""
        return self.workflow.policy_of(agent).side_effects

    def _budgets(self, phase: PhaseDefinition) -> tuple[Budget | None, Budget | None]:
        """The workflow's budget for the session and the phase's own."""
        return self.workflow.budget, phase.budget

    # ------------------------------------------------------------------ review

    def _record_approvals(self, project_id: str, session_id: str) -> None:
        """Record ``approved`` as what was done about an approving review still ``pending``."""
        for view in self.manager.state(project_id, session_id).phases:
            if view.state != "approved":
                continue
            feedback = self.manager.load_feedback(project_id, session_id, view.number)
            if feedback is not None and feedback.action == "pending":  # keep the reviewer's text
                self.manager.update_feedback(project_id, session_id, view.number, action="approved")

    def _keep_corrections(self, project_id: str, session_id: str) -> None:
        """Record as their phase's outputs the outputs a person corrected by hand in a phase
        that is done or awaits its review (``lifecycle.EDITED``), before the phases built on
        the old outputs run again. A stale or sent-back phase is not recorded: it runs again,
        and its corrected files are kept in ``attempts/{n}/`` with the rest of the attempt."""
        for view in self.manager.state(project_id, session_id).phases:
            if view.edited and (view.done or view.state == "awaiting_review"):
                self.manager.keep_edited_outputs(project_id, session_id, view.number)

    def _start_again(
        self,
        project_id: str,
        session_id: str,
        phase: PhaseDefinition,
        current: lifecycle.PhaseView,
        ran: list[str],
    ) -> RunResult | None:
        """Keep a sent-back or stale phase's attempt and open the next; a result when refused."""
        checkpoint = self._checkpoint(project_id, session_id, phase)
        retries = checkpoint.retry_count if checkpoint else 0
        if current.state == "sent_back":
            if retries >= self.workflow.max_retries:
                return RunResult(
                    "failed",
                    phase.number,
                    error=f"phase {phase.number} ({phase.name}) was sent back {retries + 1} "
                    f"times; the workflow allows {self.workflow.max_retries} retries",
                    ran_agents=tuple(ran),
                )
            feedback = self.manager.load_feedback(project_id, session_id, phase.number)
            if feedback is not None:
                self.manager.update_feedback(
                    project_id,
                    session_id,
                    phase.number,
                    action=feedback.action if feedback.action in ("retry", "rejected") else "retry",
                    retry_count=retries + 1,
                )
        self.manager.start_attempt(project_id, session_id, phase.number)
        if self.autocommit is not None:
            self.autocommit.attempt_archived(project_id, session_id, [phase.number])
        return None

    def _await_review(
        self, project_id: str, session_id: str, phase: PhaseDefinition, ran: list[str]
    ) -> RunResult:
        path = self.manager.phase_dir(project_id, session_id, phase.number) / FEEDBACK_FILE
        self._blank_review(project_id, session_id, phase)
        return RunResult("awaiting_review", phase.number, feedback_file=path, ran_agents=tuple(ran))

    def _blank_review(self, project_id: str, session_id: str, phase: PhaseDefinition) -> None:
        """Write the phase's blank review file (``pending``) unless it has one."""
        if self.manager.load_feedback(project_id, session_id, phase.number) is None:
            self.manager.save_user_feedback(
                project_id, session_id, phase.number, reviewed=False, approved=False, action="pending"
            )

    # ----------------------------------------------------------------- helpers

    def _check_workflow(self, project_id: str, session_id: str, state: Mapping[str, Any]) -> None:
        """Refuse a definition other than the session's, saying what changed; or adopt it."""
        manifest = self.manager.load_manifest(project_id, session_id)
        recorded = manifest.workflow_fingerprint
        same_name = manifest.workflow_type == self.workflow.name
        if same_name and recorded in (None, self.workflow.fingerprint()):
            return
        if self.allow_workflow_change:
            self.manager.change_workflow(project_id, session_id, self.workflow)
            return
        if not same_name:
            changes = [f"it was created with workflow {manifest.workflow_type!r}, not {self.workflow.name!r}"]
        else:
            stored = self.manager.session_workflow(project_id, session_id)
            changes = describe_changes(stored, self.workflow) if stored.fingerprint() == recorded else []
            changes = changes or [
                f"the definition of {self.workflow.name!r} is not the one it was created with "
                f"(fingerprint {recorded}, now {self.workflow.fingerprint()})"
            ]
        raise WorkflowChangedError(
            f"session {project_id}/{session_id}: {'; '.join(changes)} "
            "(pass allow_workflow_change=True to run it with this definition)"
        )

    def _checkpoint(self, project_id: str, session_id: str, phase: PhaseDefinition) -> PhaseCheckpoint | None:
        return self.manager.load_checkpoints(project_id, session_id).get(phase.number)

    def _saved_output(
        self, project_id: str, session_id: str, phase: PhaseDefinition, name: str
    ) -> AgentOutput | None:
        try:
            return self.manager.load_agent_output(project_id, session_id, phase.number, name)
        except FileNotFoundError:
            return None

    def _outputs_before(
        self, project_id: str, session_id: str, phase: PhaseDefinition, view: lifecycle.SessionView
    ) -> dict[int, dict[str, str]]:
        """The outputs of the done phases that come before ``phase`` in the session's mode."""
        earlier = []
        for found in view.phases:
            if found.number == phase.number:
                break
            if found.done:
                earlier.append(found.number)
        return self.manager.get_phase_outputs(project_id, session_id, earlier)

    def _feedback_of_previous_attempt(
        self, project_id: str, session_id: str, phase: PhaseDefinition, retry_count: int
    ) -> UserFeedback | None:
        if retry_count == 0:
            return None
        for attempt in self.manager.load_attempts(project_id, session_id, phase.number):
            if attempt.number == retry_count:  # the review that sent it back, not an approval
                sent_back = review_verdict(attempt.feedback) == "sent_back"
                return attempt.feedback if sent_back else None
        return None


Called = tuple["AgentResult | BaseException", float, tuple[AgentTry, ...]]
"""What running an agent gave: its result or the last try's exception, the seconds all its
tries took, and the tries to keep on record."""


def _predicates(workflow: Workflow) -> dict[str, Predicate]:
    """The ``retry_on`` predicate of every agent of ``workflow`` that names one, imported
    (AgentImportError when one cannot be imported or is not callable)."""
    found: dict[str, Predicate] = {}
    for name in dict.fromkeys(a for p in workflow.phases for a in p.agents):
        spec = workflow.policy_of(name).retry_on
        if spec is not None and spec not in found:
            predicate = load_callable(spec)
            if not callable(predicate):
                raise AgentImportError(
                    f"agent {name!r}: retry_on {spec!r} is a {type(predicate).__name__}, not a function"
                )
            found[spec] = predicate
    return found


def note_of_try(agent: str, found: AgentTry, of: int) -> str:
    """One failed try as the checkpoint's errors list it (a record, not a review attempt)."""
    wait = f"; waited {found.wait:g} s" if found.wait is not None else ""
    error = f"{found.error_type}: {found.error_message}"
    return f"{agent}: try {found.number} of {of}: {found.outcome} ({error}){wait}"
