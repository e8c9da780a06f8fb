"""``## Tries`` of an agent output: written as documented, read back the same, hand edits
checked at their lines, and never written for an output without tries."""

from __future__ import annotations

from pathlib import Path

import pytest

from haytham import CheckpointManager
from haytham.errors import DocumentError
from haytham.format import AGENT_OUTPUT
from haytham.records import AgentTry

P, S = "acme", "s1"
TRIES = (
    AgentTry(1, "2026-12-05T06:00:00Z", "2026-12-05T06:00:01Z", "rate_limit", 2.0, "RateLimitError", "429"),
    AgentTry(
        2, "2026-12-05T06:00:03Z", "2026-12-05T06:00:04Z", "server_error", 1.0, "HTTPError", "503\nbusy"
    ),
    AgentTry(3, "2026-12-05T06:00:05Z", "2026-12-05T06:00:06Z", "completed"),
)
WRITTEN = """\
## Tries
- Try 1: 2026-12-05T06:00:00Z to 2026-12-05T06:00:01Z; rate_limit; then waited 2.0s; RateLimitError: 429
- Try 2: 2026-12-05T06:00:03Z to 2026-12-05T06:00:04Z; server_error; then waited 1.0s; HTTPError: "503\\nbusy"
- Try 3: 2026-12-05T06:00:05Z to 2026-12-05T06:00:06Z; completed

## Output
"""


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    manager = CheckpointManager(base_dir=tmp_path)
    manager.create_session(P, S, "u")
    return manager


def test_the_tries_are_written_as_documented_and_read_back(manager: CheckpointManager) -> None:
    path = manager.save_agent_output(P, S, 1, "concept_expansion", "the text\n", tries=TRIES)
    text = path.read_text("utf-8")
    assert WRITTEN in text
    assert text.index("## Execution Details") < text.index("## Tries") < text.index("## Output")
    assert manager.load_agent_output(P, S, 1, "concept_expansion").tries == TRIES


def test_an_output_without_tries_has_no_section(manager: CheckpointManager) -> None:
    path = manager.save_agent_output(P, S, 1, "concept_expansion", "the text\n")
    assert "## Tries" not in path.read_text("utf-8")
    assert manager.load_agent_output(P, S, 1, "concept_expansion").tries == ()


def test_a_failed_output_keeps_its_tries_before_the_error(manager: CheckpointManager) -> None:
    tries = (
        AgentTry(1, "2026-12-05T06:00:00Z", "2026-12-05T06:00:01Z", "timeout", 0.5, "TimeoutError", "slow"),
        AgentTry(2, "2026-12-05T06:00:02Z", None, "permanent", None, "ValueError", ""),
    )
    path = manager.save_agent_output(
        P,
        S,
        1,
        "concept_expansion",
        "",
        status="failed",
        error_type="ValueError",
        error_message="",
        tries=tries,
    )
    text = path.read_text("utf-8")
    assert '- Try 2: 2026-12-05T06:00:02Z to -; permanent; ValueError: ""\n' in text
    assert text.index("## Tries") < text.index("## Error Details")
    assert manager.load_agent_output(P, S, 1, "concept_expansion").tries == tries


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("- Try 2:", "- Try 5:"), "is out of order (expected Try 2)"),
        (("; server_error;", "; exploded;"), "'exploded' is not one of completed, rate_limit"),
        (("06:00:03Z to", "06:00:03Z until"), "is not 'STARTED to ENDED; OUTCOME"),
        (("- Try 3:", "- Attempt 3:"), "is not a try"),
        (("2026-12-05T06:00:05Z to", "yesterday to"), "'yesterday' is not an ISO 8601 UTC timestamp"),
        (("then waited 2.0s", "then waited soon"), "'soon' is not a number"),
    ],
)
def test_a_hand_edit_of_the_tries_is_checked_at_its_line(
    manager: CheckpointManager, edit: tuple[str, str], message: str
) -> None:
    path = manager.save_agent_output(P, S, 1, "concept_expansion", "the text\n", tries=TRIES)
    text = path.read_text("utf-8")
    assert edit[0] in text
    edited = text.replace(*edit, 1)
    line = edited[: edited.index(edit[1])].count("\n") + 1
    record, issues = AGENT_OUTPUT.read_data(edited.encode(), path)
    assert record is None
    assert [(i.line, message in i.message) for i in issues if i.is_error][:1] == [(line, True)], issues
    path.write_text(edited, "utf-8")
    with pytest.raises(DocumentError, match=message.split("(")[0].replace("'", ".")[:20]):
        manager.load_agent_output(P, S, 1, "concept_expansion")
