"""A reviewer corrects an agent's output before approving it (issue 25, "Corrections recorded").

The correction is saved as the output, the original is kept byte for byte in the history
entry of the correction (``HistoryEntry.original_output``), the review's action reads
``modified`` (an approval: the run goes on), the output's metadata says a person corrected
it (``- Corrected:``), and the phases built on the original are stale, as after a correction
typed by hand (docs/lifecycle.md, "An output corrected by hand").
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from small_workflow import PROJECT, Agents, manager_for, new_session, runner_for

from haytham.cli.main import cli
from haytham.compare import compare, unified_diff
from haytham.errors import MoveRefusedError, NotFoundError, StaleReviewError
from haytham.format.layout import FEEDBACK_FILE
from haytham.store import fs, lifecycle
from haytham.store.manager import CheckpointManager

S = "s1"
CORRECTED = "# analyst\n\nThe buyers are small agencies, not solo founders.\n"


def awaiting(tmp_path: Path) -> tuple[CheckpointManager, Agents]:
    """A session of SMALL whose phase 2 (gated) awaits review."""
    manager = manager_for(tmp_path / "projects")
    new_session(manager, S)
    agents = Agents()
    runner_for(manager, agents).run(PROJECT, S)
    assert manager.state(PROJECT, S).current.number == 2  # type: ignore[union-attr]
    return manager, agents


def finished(tmp_path: Path) -> tuple[CheckpointManager, Agents]:
    """A session of SMALL whose phase 2 was approved and phases 3 and 4 ran on it."""
    manager, agents = awaiting(tmp_path)
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True, action="approved")
    runner_for(manager, agents).run(PROJECT, S)
    assert manager.state(PROJECT, S).state == "completed"
    return manager, agents


def output_file(manager: CheckpointManager, phase: int, agent: str) -> Path:
    return manager.phase_dir(PROJECT, S, phase) / f"{agent}.md"


# ------------------------------------------------------------------ library


def test_a_correction_approved_is_saved_as_the_output_with_outcome_modified(tmp_path: Path) -> None:
    manager, agents = awaiting(tmp_path)
    path = output_file(manager, 2, "analyst")
    original = path.read_bytes()
    before = manager.load_agent_output(PROJECT, S, 2, "analyst")

    written = manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED, approve=True)

    assert written == path
    after = manager.load_agent_output(PROJECT, S, 2, "analyst")
    assert after.content == CORRECTED
    assert after.corrected is not None  # the metadata says a person corrected it
    assert "- Corrected: " in path.read_text(encoding="utf-8")
    # the execution details stay the agent's run: the person spent no tokens
    assert (after.model, after.input_tokens, after.output_tokens, after.cost) == (
        before.model,
        before.input_tokens,
        before.output_tokens,
        before.cost,
    )
    review = manager.load_feedback(PROJECT, S, 2)
    assert review is not None
    assert (review.reviewed, review.approved, review.action) == (True, True, "modified")
    assert lifecycle.outcome(review) == "modified"
    view = manager.state(PROJECT, S).phase(2)
    assert view.state == "approved"
    assert view.edited == ()  # recorded through haytham: the checkpoint's digest is the correction's
    # the original is kept byte for byte in the correction's history entry
    entries = [e for e in manager.history(PROJECT, S, phase=2) if e.original_output is not None]
    assert len(entries) == 1
    assert entries[0].corrected_agent == "analyst"
    assert entries[0].original_output.encode("utf-8") == original  # type: ignore[union-attr]
    assert entries[0].reason == lifecycle.corrected_reason("analyst")
    # and the run goes on, on the correction
    runner_for(manager, agents).run(PROJECT, S)
    assert manager.state(PROJECT, S).state == "completed"
    assert manager.load_agent_output(PROJECT, S, 2, "analyst").content == CORRECTED


def test_corrections_of_an_attempt_list_the_original_and_the_correction(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    original = manager.load_agent_output(PROJECT, S, 2, "analyst").content
    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED)
    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED + "More.\n")

    found = manager.session(PROJECT, S).corrections(2)

    assert [c.agent for c in found] == ["analyst"]
    assert found[0].original == original  # the agent's own text, not the first correction
    assert found[0].corrected == CORRECTED + "More.\n"
    diff = unified_diff(found[0].original, found[0].corrected, "analyst")
    assert f"+{CORRECTED.splitlines()[-1]}" in diff and "-upstream: " in diff


def test_a_correction_without_approval_leaves_the_decision_and_a_later_approval_reads_modified(
    tmp_path: Path,
) -> None:
    manager, _ = awaiting(tmp_path)
    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED)

    review = manager.load_feedback(PROJECT, S, 2)
    assert review is not None
    assert (review.reviewed, review.action) == (False, "modified")
    assert manager.state(PROJECT, S).phase(2).state == "awaiting_review"

    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True, action="approved")

    review = manager.load_feedback(PROJECT, S, 2)
    assert review is not None and review.action == "modified"
    assert manager.state(PROJECT, S).phase(2).state == "approved"


def test_the_phases_built_on_the_original_become_stale(tmp_path: Path) -> None:
    manager, agents = finished(tmp_path)

    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED)

    state = manager.state(PROJECT, S)
    assert state.phase(2).state == "approved"
    assert state.phase(2).edited == ()
    assert [(v.number, v.stale_because) for v in state.stale] == [(3, (2,)), (4, (2,))]
    assert manager.load_session(PROJECT, S)["stale_phases"] == {3: [2], 4: [2]}
    # a resume runs them again on the correction
    runner_for(manager, agents).run(PROJECT, S)
    assert manager.state(PROJECT, S).state == "completed"
    assert manager.load_attempts(PROJECT, S, 3)[-1].number == 2


def test_an_unchanged_correction_writes_nothing(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    session_dir = manager.phase_dir(PROJECT, S, 2).parent
    before = {p: p.read_bytes() for p in session_dir.rglob("*.md")}
    same = manager.load_agent_output(PROJECT, S, 2, "analyst").content

    assert manager.correct_output(PROJECT, S, 2, "analyst", same) is None

    assert {p: p.read_bytes() for p in session_dir.rglob("*.md")} == before


def test_a_phase_sent_back_or_not_run_cannot_be_corrected(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    with pytest.raises(NotFoundError, match="nobody"):
        manager.correct_output(PROJECT, S, 2, "nobody", CORRECTED)
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=False, action="retry")
    with pytest.raises(MoveRefusedError, match="sent back cannot be corrected"):
        manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED)
    with pytest.raises(MoveRefusedError, match="pending cannot be corrected"):
        manager.correct_output(PROJECT, S, 3, "planner", CORRECTED)


def test_a_correction_against_a_review_changed_since_is_refused(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    review = manager.phase_dir(PROJECT, S, 2) / FEEDBACK_FILE
    version, _ = fs.file_version(review)
    manager.save_user_feedback(PROJECT, S, 2, reviewed=True, approved=True, action="approved")
    with pytest.raises(StaleReviewError):
        manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED, expected_version=version)
    assert manager.load_agent_output(PROJECT, S, 2, "analyst").content != CORRECTED


def test_the_correction_entry_diffs_original_to_corrected(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    original = manager.load_agent_output(PROJECT, S, 2, "analyst").content
    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED, approve=True)
    entry = next(e for e in manager.history(PROJECT, S, phase=2) if e.original_output is not None)

    comparison = compare(entry, (manager, PROJECT, S))

    changed = {a.agent: a for a in comparison.agents if a.change != "same"}
    assert list(changed) == ["analyst"]
    assert f"-{original.splitlines()[-1]}" in changed["analyst"].diff
    assert f"+{CORRECTED.splitlines()[-1]}" in changed["analyst"].diff


# ------------------------------------------------------------------ command line


EDITOR = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    path = Path(sys.argv[-1])
    log = Path(%(log)r)
    log.write_text(log.read_text() + path.read_text() if log.exists() else path.read_text())
    new = Path(%(new)r)
    if new.exists():
        path.write_bytes(new.read_bytes())
    """
)


def editor(tmp_path: Path, text: bytes | None) -> dict[str, str]:
    """An $EDITOR script that writes ``text`` (None: leaves the file) and logs what it was given."""
    new = tmp_path / "new.txt"
    if text is not None:
        new.write_bytes(text)
    script = tmp_path / "editor.py"
    script.write_text(EDITOR % {"log": str(tmp_path / "shown.txt"), "new": str(new)}, encoding="utf-8")
    return {**os.environ, "EDITOR": f"{sys.executable} {script}", "VISUAL": ""}


def haytham(base: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def cli_session(tmp_path: Path) -> Path:
    """A session of SMALL awaiting review of phase 2, with SMALL saved as its workflow.yaml."""
    manager, _ = awaiting(tmp_path)
    return manager.base_dir


def test_feedback_edit_opens_the_output_and_saves_the_correction_approved(tmp_path: Path) -> None:
    base = cli_session(tmp_path)
    manager = CheckpointManager(base)
    original = manager.load_agent_output(PROJECT, S, 2, "analyst").content
    env = editor(tmp_path, b"\xef\xbb\xbf" + CORRECTED.replace("\n", "\r\n").encode("utf-8"))  # BOM, CRLF

    done = haytham(base, env, "feedback", PROJECT, S, "2", "--edit", "analyst", "--approve")

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "shown.txt").read_text(encoding="utf-8") == original  # the content, not the file
    assert manager.load_agent_output(PROJECT, S, 2, "analyst").content == CORRECTED
    review = manager.load_feedback(PROJECT, S, 2)
    assert review is not None and (review.approved, review.action) == (True, "modified")
    assert "Corrected" in done.stdout and "modified" in done.stdout
    assert manager.state(PROJECT, S).phase(2).state == "approved"


def test_feedback_edit_closed_without_a_change_records_nothing(tmp_path: Path) -> None:
    base = cli_session(tmp_path)
    session_dir = base / PROJECT / "sessions" / S
    before = {p: p.read_bytes() for p in session_dir.rglob("*.md")}

    done = haytham(
        base, editor(tmp_path, None), "feedback", PROJECT, S, "2", "--edit", "analyst", "--approve"
    )

    assert done.returncode == 0, done.stderr
    assert "No change" in done.stdout
    assert {p: p.read_bytes() for p in session_dir.rglob("*.md")} == before


def test_feedback_edit_of_text_that_is_not_utf8_reopens_the_editor_then_quits(tmp_path: Path) -> None:
    base = cli_session(tmp_path)
    manager = CheckpointManager(base)
    original = manager.load_agent_output(PROJECT, S, 2, "analyst").content
    # the editor saves Latin-1 once; reopened on the mistake, the person closes it unchanged
    script = tmp_path / "latin1.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import sys
            from pathlib import Path
            path = Path(sys.argv[-1])
            count = Path({str(tmp_path / "count")!r})
            n = int(count.read_text()) if count.exists() else 0
            count.write_text(str(n + 1))
            if n == 0:
                path.write_bytes("caf\\xe9\\n".encode("latin-1"))
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "EDITOR": f"{sys.executable} {script}", "VISUAL": ""}

    done = haytham(base, env, "feedback", PROJECT, S, "2", "--edit", "analyst")

    assert (tmp_path / "count").read_text() == "2"
    assert done.returncode == 1
    assert "not UTF-8" in done.stderr or "not UTF-8" in done.stdout
    assert manager.load_agent_output(PROJECT, S, 2, "analyst").content == original


def test_feedback_edit_needs_no_comment_options_and_names_a_missing_agent(tmp_path: Path) -> None:
    base = cli_session(tmp_path)
    result = CliRunner().invoke(
        cli,
        ["feedback", PROJECT, S, "2", "--edit", "nobody", "--base-dir", str(base)],
        env={"EDITOR": "true"},
    )
    assert result.exit_code == 1
    assert "nobody" in result.output
    reject = CliRunner().invoke(
        cli, ["feedback", PROJECT, S, "2", "--edit", "analyst", "--reject", "--base-dir", str(base)]
    )
    assert reject.exit_code == 2
    assert "--edit" in reject.output


def test_diff_of_the_correction_entry_shows_original_to_corrected(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED, approve=True)
    entry = next(e for e in manager.history(PROJECT, S, phase=2) if e.original_output is not None)

    done = haytham(
        manager.base_dir, dict(os.environ), "diff", f"{PROJECT}/{S}@{entry.entry_id}", f"{PROJECT}/{S}"
    )

    assert done.returncode == 0, done.stderr
    assert "analyst: changed" in done.stdout
    assert f"+{CORRECTED.splitlines()[-1]}" in done.stdout


def test_the_history_keeps_an_original_with_crlf_fences_and_a_bom_byte_for_byte(tmp_path: Path) -> None:
    manager, _ = awaiting(tmp_path)
    path = output_file(manager, 2, "analyst")
    text = path.read_text(encoding="utf-8").replace("\n", "\r\n") + "```\r\ncafé ````\r\n```\r\n"
    original = b"\xef\xbb\xbf" + text.encode("utf-8")
    path.write_bytes(original)  # a person's editor saved it so

    manager.correct_output(PROJECT, S, 2, "analyst", CORRECTED)

    entry = next(e for e in manager.history(PROJECT, S, phase=2) if e.original_output is not None)
    assert entry.original_output is not None
    assert entry.original_output.encode("utf-8") == original
    assert manager.load_agent_output(PROJECT, S, 2, "analyst").content == CORRECTED
    assert [str(issue) for issue in manager.validate_session(PROJECT, S) if issue.is_error] == []
