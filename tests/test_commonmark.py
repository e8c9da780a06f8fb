"""Every CommonMark spec example must come back exactly: as agent output, comments, a change.

The examples (tests/data/commonmark-examples.json, see tests/data/README.md) are the widest
catalogue of tricky markdown there is: setext headings, lazy continuation lines, HTML blocks,
fences of every length, tabs, link reference definitions, trailing spaces. haytham stores
free text inside markdown files, so each one is a chance for the text to leak into the
file's own structure. Each test saves through the real manager into real files.

One test per example checks all three round trips; its failure message says which of them
failed. They share one session per module. Agent outputs are saved by a module fixture
(one file per example, agent ``ex{n}``) and read back with a single ``get_phase_outputs``
call: that method reads every agent file of a phase, so one read per example would cost
652 x 652 parses. A save that raised is recorded and fails that example's test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from haytham import CheckpointManager

DATA = Path(__file__).parent / "data" / "commonmark-examples.json"
EXAMPLES: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))
PROJECT, SESSION = "cm", "spec"
OUTPUT_PHASE, FEEDBACK_PHASE = 1, 2


def _ids(example: dict[str, Any]) -> str:
    return f"example-{example['example']}"


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> CheckpointManager:
    manager = CheckpointManager(tmp_path_factory.mktemp("commonmark"))
    manager.create_session(PROJECT, SESSION, "tester", execution_mode="full")
    manager.save_checkpoint(
        PROJECT, SESSION, FEEDBACK_PHASE, "completed", []
    )  # only a phase that ran is reviewed
    return manager


@pytest.fixture(scope="module")
def outputs(manager: CheckpointManager) -> dict[str, str | BaseException]:
    """Save every example as an agent output, then read them all back in one call."""
    failures: dict[str, BaseException] = {}
    for example in EXAMPLES:
        name = f"ex{example['example']}"
        try:
            manager.save_agent_output(PROJECT, SESSION, OUTPUT_PHASE, name, example["markdown"])
        except Exception as error:
            failures[name] = error
    found: dict[str, str | BaseException] = dict(
        manager.get_phase_outputs(PROJECT, SESSION, [OUTPUT_PHASE])[OUTPUT_PHASE]
    )
    found.update(failures)
    return found


def test_data_is_the_whole_spec() -> None:
    numbers = [e["example"] for e in EXAMPLES]
    assert numbers == list(range(1, 653))
    assert all(isinstance(e["markdown"], str) for e in EXAMPLES)


def _agent_output_round_trips(outputs: dict[str, str | BaseException], markdown: str, number: int) -> None:
    got = outputs.get(f"ex{number}")
    if isinstance(got, BaseException):
        raise got
    assert got == markdown


def _comments_round_trip(manager: CheckpointManager, markdown: str) -> None:
    manager.save_user_feedback(PROJECT, SESSION, FEEDBACK_PHASE, True, False, markdown, ["keep this"])
    feedback = manager.load_feedback(PROJECT, SESSION, FEEDBACK_PHASE)
    assert feedback is not None
    assert feedback.comments == markdown
    assert feedback.requested_changes == ("keep this",)
    assert (feedback.reviewed, feedback.approved) == (True, False)


def _requested_change_round_trips(manager: CheckpointManager, markdown: str) -> None:
    changes = ["before", markdown, "after"]
    manager.save_user_feedback(PROJECT, SESSION, FEEDBACK_PHASE, True, True, "", changes, "retry", 2)
    feedback = manager.load_feedback(PROJECT, SESSION, FEEDBACK_PHASE)
    assert feedback is not None
    assert feedback.requested_changes == tuple(changes)
    assert feedback.comments == ""
    assert (feedback.approved, feedback.action, feedback.retry_count) == (True, "retry", 2)


@pytest.mark.parametrize("example", EXAMPLES, ids=_ids)
def test_example_round_trips(
    manager: CheckpointManager, outputs: dict[str, str | BaseException], example: dict[str, Any]
) -> None:
    """All three round trips run even when one fails, and the failure names each that failed."""
    markdown = example["markdown"]
    checks: dict[str, Callable[[], None]] = {
        "agent output": lambda: _agent_output_round_trips(outputs, markdown, example["example"]),
        "comments": lambda: _comments_round_trip(manager, markdown),
        "requested change": lambda: _requested_change_round_trips(manager, markdown),
    }
    failed: list[str] = []
    for name, check in checks.items():
        try:
            check()
        except Exception as error:  # an assertion or a save/load that raised
            failed.append(f"{name} round trip failed: {type(error).__name__}: {error}")
    if failed:
        pytest.fail(f"example {example['example']}:\n" + "\n".join(failed))
