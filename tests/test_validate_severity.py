"""validate's severities: a manifest behind its files is a warning in plain words (haytham
reads the truth from the files and doctor --fix repairs it); --strict fails on warnings."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.run.demo import run_demo


def _stale_metrics_session(base: Path) -> Path:
    manager = CheckpointManager(base)
    run_demo(manager, "s-1", review="approve")
    manifest = manager.session_dir("demo", "s-1") / "session_manifest.md"
    text = manifest.read_text(encoding="utf-8")
    line = next(row for row in text.splitlines() if row.startswith("- Total Tokens:"))
    manifest.write_text(text.replace(line, "- Total Tokens: 0"), encoding="utf-8")
    return manifest


def test_a_manifest_behind_its_files_is_a_warning_in_words_and_strict_fails_on_it(tmp_path: Path) -> None:
    manifest = _stale_metrics_session(tmp_path)
    runner = CliRunner()
    default = runner.invoke(cli, ["validate", "--base-dir", str(tmp_path)])
    assert default.exit_code == 0, default.output
    (warning,) = [line for line in default.output.splitlines() if line.startswith(str(manifest))]
    assert warning.endswith("(warning)")
    assert "Metrics: is 0 tokens, $" in warning and "tokens, $" in warning.split(" here but ")[1]
    assert "SessionMetrics(" not in warning and "doctor --fix" in warning
    strict = runner.invoke(cli, ["validate", "--strict", "--base-dir", str(tmp_path)])
    assert strict.exit_code == 1
    data = json.loads(
        runner.invoke(cli, ["validate", "--json", "--strict", "--base-dir", str(tmp_path)]).output
    )
    assert data["ok"] is False and [i["severity"] for i in data["issues"]] == ["warning"]
    runner.invoke(cli, ["doctor", "demo", "s-1", "--fix", "--base-dir", str(tmp_path)])
    assert runner.invoke(cli, ["validate", "--strict", "--base-dir", str(tmp_path)]).exit_code == 0


def test_a_file_that_cannot_be_read_is_still_an_error(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    run_demo(manager, "s-1", review="approve")
    checkpoint = next(manager.session_dir("demo", "s-1").glob("phase_1_*/checkpoint.md"))
    checkpoint.write_text(checkpoint.read_text().replace("- Retry Count: 0", "- Retry Count: lots"))
    result = CliRunner().invoke(cli, ["validate", "--base-dir", str(tmp_path)])
    assert result.exit_code == 1 and f"{checkpoint}:" in result.output
