"""Hand edits are understood or explained: a section a person adds to a file haytham
rewrites is kept across the rewrite, one named like a section the file lacks is a warning
with a did-you-mean, and a manifest naming another session than its folder is an error,
never silently ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST

P, S = "acme", "s-1"
PHASE = "phase_1_concept"
NOTES = "## Notes\n\nAsk Grace about the *pricing* table.\n\n- keep this line\n"


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(base_dir=tmp_path / "base")
    m.create_session(P, S, "u")
    return m


def add_after(path: Path, heading: str, section: str) -> None:
    """Put ``section`` just before the heading that follows ``heading`` in the file."""
    text = path.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    following = text.find("\n## ", start + len(heading))
    at = len(text) if following < 0 else following + 1
    path.write_text(text[:at] + section + "\n" + text[at:], encoding="utf-8")


def test_a_section_added_to_checkpoint_md_survives_the_next_save(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "in_progress", [])
    path = manager.session_dir(P, S) / PHASE / "checkpoint.md"
    add_after(path, "## Metrics", NOTES)
    manager.save_checkpoint(P, S, 1, "completed", [])
    text = path.read_text(encoding="utf-8")
    assert NOTES in text
    assert text.index("## Metrics") < text.index("## Notes") < text.index("## Next Phase")
    assert CHECKPOINT.load(path).status == "completed"
    assert manager.validate_session(P, S) == []


def test_a_section_added_to_the_manifest_survives_its_update(manager: CheckpointManager) -> None:
    path = manager.session_dir(P, S) / "session_manifest.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + NOTES, encoding="utf-8")
    manager.save_checkpoint(P, S, 1, "completed", [])
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n" + NOTES)
    assert MANIFEST.load(path).phases[0].status == "completed"


def test_a_section_added_before_the_output_of_an_agent_survives_a_new_save(
    manager: CheckpointManager,
) -> None:
    manager.save_agent_output(P, S, 1, "writer", "first draft\n\n## A heading of the output\n")
    path = manager.session_dir(P, S) / PHASE / "writer.md"
    add_after(path, "## Execution Details", NOTES)
    manager.save_agent_output(P, S, 1, "writer", "second draft")
    text = path.read_text(encoding="utf-8")
    assert NOTES in text and text.index("## Notes") < text.index("## Output")
    assert "A heading of the output" not in text  # the old output's own heading was content
    assert AGENT_OUTPUT.load(path).content == "second draft"


def test_a_file_without_added_sections_is_written_exactly_as_rendered(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "in_progress", [])
    manager.save_checkpoint(P, S, 1, "completed", [])
    path = manager.session_dir(P, S) / PHASE / "checkpoint.md"
    assert path.read_text(encoding="utf-8") == CHECKPOINT.render(CHECKPOINT.load(path))


def test_a_renamed_section_is_a_warning_with_a_did_you_mean(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    path = manager.save_user_feedback(P, S, 1, True, False, "Make it shorter.", action="rejected")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("## User Comments", "## Comments"), encoding="utf-8")
    line = path.read_text(encoding="utf-8").splitlines().index("## Comments") + 1
    record, issues = FEEDBACK.read_path(path)
    assert record is not None and record.comments == ""
    assert [str(issue) for issue in issues] == [
        f"{path}:{line}: unknown section '## Comments': did you mean '## User Comments'? haytham reads "
        "only '## User Comments', so what this section holds is not read (it is kept as it is)"
    ]
    result = CliRunner().invoke(cli, ["validate", "--base-dir", str(manager.base_dir)])
    assert f"{path}:{line}: unknown section '## Comments': did you mean '## User Comments'?" in result.output


def test_a_section_of_a_persons_own_is_no_warning(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    path = manager.save_user_feedback(P, S, 1, True, True, "Good.")
    path.write_text(path.read_text(encoding="utf-8") + "\n## Grace's notes\n\nlater\n", encoding="utf-8")
    assert FEEDBACK.read_path(path)[1] == []


def test_a_manifest_naming_another_session_is_an_error_and_listed_under_its_folder(
    manager: CheckpointManager,
) -> None:
    path = manager.session_dir(P, S) / "session_manifest.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"- Session ID: {S}", "- Session ID: s-renamed"), encoding="utf-8")
    line = path.read_text(encoding="utf-8").splitlines().index("- Session ID: s-renamed") + 1
    message = (
        f"{path}:{line}: Session ID: is 's-renamed' but the session's folder is '{S}': haytham finds a "
        f"session by its folders, so write '{S}' here or rename the folder to 's-renamed'"
    )
    assert [str(issue) for issue in manager.validate_session(P, S)] == [message]
    base = ["--base-dir", str(manager.base_dir)]
    validate = CliRunner().invoke(cli, ["validate", *base])
    assert validate.exit_code == 1 and message in validate.output
    listing = CliRunner().invoke(cli, ["list", *base, "--json"])
    shown = json.loads(listing.stdout)
    assert [s["session_id"] for s in shown["sessions"]] == [S]  # what haytham status takes
    assert shown["warnings"] == [message]
    assert CliRunner().invoke(cli, ["status", *base, P, S]).exit_code == 0
    plain = CliRunner().invoke(cli, ["list", *base])
    assert f"warning: {message}" in plain.stderr


def test_a_manifest_naming_another_project_is_an_error(manager: CheckpointManager) -> None:
    path = manager.session_dir(P, S) / "session_manifest.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"- Project ID: {P}", "- Project ID: other"), encoding="utf-8")
    (issue,) = manager.validate_session(P, S)
    assert (issue.field, issue.is_error) == ("Project ID", True)
    assert issue.message.startswith(f"is 'other' but the session's folder is '{P}'")


def test_a_misspelt_optional_section_of_a_checkpoint_is_kept_and_named(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "in_progress", [])
    path = manager.session_dir(P, S) / PHASE / "checkpoint.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## Error\n\n- the API was down\n", encoding="utf-8")
    line = path.read_text(encoding="utf-8").splitlines().index("## Error") + 1
    assert [str(i) for i in CHECKPOINT.read_path(path)[1]] == [
        f"{path}:{line}: unknown section '## Error': did you mean '## Errors'? haytham reads only "
        "'## Errors', so what this section holds is not read (it is kept as it is)"
    ]
    manager.save_checkpoint(P, S, 1, "completed", [])
    assert path.read_text(encoding="utf-8").endswith("\n## Error\n\n- the API was down\n")
