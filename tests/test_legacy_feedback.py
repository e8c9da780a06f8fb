"""Every user_feedback.md of the legacy corpus (tests/legacy) reads as expected.json says.

The first implementation wrote empty comments as ``No comments provided``, a change's
newlines as they were, comments unescaped (a ``## Action Taken`` line among them), and the
actions ``retry_with_changes``, ``skip_phase``, ``skip_stage`` and ``max_retries_exceeded``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from haytham.format import FEEDBACK
from haytham.format.document import to_json
from haytham.records import ACTION_VERDICTS, APPROVAL_ACTIONS, FEEDBACK_ACTIONS, UserFeedback
from haytham.store import lifecycle

LEGACY = Path(__file__).parent / "legacy"
EXPECTED: dict[str, Any] = json.loads((LEGACY / "expected.json").read_text(encoding="utf-8"))["files"]
FEEDBACK_FILES = sorted(path for path, want in EXPECTED.items() if want["kind"] == "feedback")


def test_the_corpus_has_feedback_of_every_legacy_action() -> None:
    actions = {EXPECTED[path]["action"] for path in FEEDBACK_FILES}
    assert {"retry_with_changes", "skip_phase", "skip_stage", "max_retries_exceeded", "skipped"} <= actions
    assert len(FEEDBACK_FILES) >= 30


@pytest.mark.parametrize("relative", FEEDBACK_FILES)
def test_legacy_feedback_reads_as_expected(relative: str) -> None:
    record, issues = FEEDBACK.read_path(LEGACY / "corpus" / relative)
    want = {k: v for k, v in EXPECTED[relative].items() if k not in ("case", "kind")}
    assert [i for i in issues if i.is_error] == []
    assert to_json(record) == want


def test_every_action_has_a_verdict() -> None:
    assert set(ACTION_VERDICTS) == set(FEEDBACK_ACTIONS)
    assert ACTION_VERDICTS["skip_phase"] == ACTION_VERDICTS["skipped"] == "approved"
    assert ACTION_VERDICTS["retry_with_changes"] == ACTION_VERDICTS["retry"] == "sent_back"
    assert ACTION_VERDICTS["max_retries_exceeded"] == "stopped"


@pytest.mark.parametrize("action", FEEDBACK_ACTIONS)
def test_lifecycle_verdict_follows_the_action_table(action: str) -> None:
    """A reviewed file with Approved: false reads as the action's verdict says: a first-
    implementation ``skip_stage`` skips the phase and moves the run on, it does not send it back.
    ``approved`` contradicts Approved: false (the reader refuses such a file) and is never read
    as an approval: it decides nothing."""
    feedback = UserFeedback(
        phase_name="p",
        reviewed=True,
        approved=False,
        timestamp=None,
        comments="",
        requested_changes=(),
        action=action,  # type: ignore[arg-type]
        retry_count=0,
    )
    table = ACTION_VERDICTS[action]
    want = ("awaiting" if action in APPROVAL_ACTIONS else "skipped") if table == "approved" else "sent_back"
    assert lifecycle.verdict(feedback) == want
