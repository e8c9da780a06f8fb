"""The lifecycle machine with the moves people make outside haytham: a review written by
another program, an agent output corrected by hand, a file replaced by a ``git pull`` (the
racy case: same size, same modification time, another inode), and a writer SIGKILLed at any
file-system step of its transaction. After every step every view (``list`` with its filters,
``status``, ``load_session``, the runner's next step, ``stats``' counts, validation) agrees with
the one derivation, ``manager.state``, with no haytham write in between: the files are the
truth, and every cache is keyed by what they are now."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from small_workflow import PROJECT
from test_lifecycle_machine import LifecycleMachine

from haytham.errors import NotFoundError
from haytham.format.layout import FEEDBACK_FILE
from haytham.store.phase_files import agent_files

KILL_WORKER = Path(__file__).resolve().parent / "lifecycle_kill_worker.py"
DONE = ("completed", "approved")

REVIEW = """# User Feedback: {name}

## Review Status
- Reviewed: true
- Approved: {approved}
- Timestamp: 2025-01-01T00:00:00Z
- Format: 1

## User Comments
{comments}

## Requested Changes
{changes}

## Action Taken
- Action: {action}
- Retry Count: 0
"""


def replace_like_git(path: Path, data: bytes, *, keep_stat: bool = False) -> None:
    """Write ``data`` to ``path`` as git checks a file out: a new file renamed over the old
    one. ``keep_stat``: with the old file's modification time (same size given)."""
    before = path.stat() if keep_stat else None
    temporary = path.with_name(f".{path.name}.pulled")
    temporary.write_bytes(data)
    if before is not None:
        os.utime(temporary, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(temporary, path)


class OutsideMachine(LifecycleMachine):
    """``LifecycleMachine`` and its invariants, with the moves made outside haytham."""

    def done_output(self, data: st.DataObject) -> Path | None:
        """An agent output of a done phase of a session, drawn; None when there is none."""
        session = self.pick(data)
        done = [p.number for p in self.manager.state(PROJECT, session).phases if p.state in DONE]
        if not done:
            return None
        directory = self.manager.phase_dir(PROJECT, session, data.draw(st.sampled_from(done), label="phase"))
        outputs = agent_files(directory)
        return data.draw(st.sampled_from(outputs), label="output") if outputs else None

    @rule(data=st.data(), approve=st.booleans())
    def review_by_another_program(self, data: st.DataObject, approve: bool) -> None:
        session = self.pick(data)
        view = self.manager.state(PROJECT, session)
        waiting = [p for p in view.phases if p.state == "awaiting_review"]
        if not waiting:
            return
        phase = data.draw(st.sampled_from(waiting), label="phase")
        text = REVIEW.format(
            name=phase.name,
            approved="true" if approve else "false",
            action="approved" if approve else "retry",
            comments="Fine." if approve else "Say more about the market.",
            changes="- No changes requested" if approve else "- Name the competitors",
        )
        path = self.manager.phase_dir(PROJECT, session, phase.number) / FEEDBACK_FILE
        replace_like_git(path, text.encode("utf-8"))
        self.hand_edited = True

    @rule(data=st.data())
    def output_corrected_by_hand(self, data: st.DataObject) -> None:
        path = self.done_output(data)
        if path is None:
            return
        with path.open("a", encoding="utf-8") as file:  # in place, as an editor may save
            file.write("\nA correction made by hand.\n")
        self.hand_edited = True

    @rule(data=st.data())
    def pulled_with_the_same_size_and_time(self, data: st.DataObject) -> None:
        path = self.done_output(data)
        if path is None:
            return
        old = path.read_bytes()
        swapped = old.replace(b"attempt", b"ATTEMPT", 1)  # same length, other bytes
        if swapped == old:
            return
        replace_like_git(path, swapped, keep_stat=True)
        self.hand_edited = True

    @precondition(lambda self: len(self.sessions) < 4)
    @rule(data=st.data())
    def fork_from_entry(self, data: st.DataObject) -> None:
        """A fork from an entry whose outputs were corrected since is refused, naming why
        (the outputs of that moment are no longer on disk): nothing else may refuse it."""
        try:
            super().fork_from_entry(data)
        except NotFoundError as error:
            refused = str(error)
        else:
            return
        assert "no longer on disk" in refused, refused

    @rule(
        data=st.data(),
        operation=st.sampled_from(["run", "approve", "send_back", "rerun"]),
        kill_at=st.integers(1, 60),
    )
    def killed_in_a_transaction(self, data: st.DataObject, operation: str, kill_at: int) -> None:
        session = self.pick(data)
        subprocess.run(
            [sys.executable, str(KILL_WORKER), str(self.base), session, operation, str(kill_at)],
            check=False,
            timeout=120,
            capture_output=True,
        )
        self.hand_edited = True  # the manifest may lag until the next writer recovers


OutsideMachine.TestCase.settings = settings(
    max_examples=8,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
test_lifecycle_outside = OutsideMachine.TestCase


class ExhaustiveOutsideMachine(OutsideMachine):
    pass


ExhaustiveOutsideMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)
)
test_lifecycle_outside_exhaustive = pytest.mark.slow(ExhaustiveOutsideMachine.TestCase)
