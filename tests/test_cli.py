"""The ``haytham`` command line, run through click's CliRunner on real files in tmp dirs.

Exit codes (0, 1 for errors and findings, 2 for usage), ``--json`` keys against the
documented ones, the ``$EDITOR`` review flow with a real editor script, piped output without
ANSI codes, the generated docs/cli.md, and the installed executable end to end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from haytham import CheckpointManager, transfer
from haytham.cli.docs import DOCS_FILE, help_text, render
from haytham.cli.history import history_command
from haytham.cli.main import COMMANDS, JSON_OUTPUT, JSON_RECORDS, cli
from haytham.run.demo import DemoEvent, last_session_id, next_session_id, run_demo

ROOT = Path(__file__).resolve().parent.parent
HAYTHAM = Path(sys.executable).parent / "haytham"
P, S = "demo", "idea-001"
ANSI = "\x1b["


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


def run(base: Path, *args: str, env: dict[str, str | None] | None = None) -> Result:
    """``haytham ARGS --base-dir BASE`` through CliRunner; output is never ANSI-coloured."""
    result = CliRunner().invoke(
        cli, [*args, "--base-dir", str(base)], env={"FORCE_COLOR": "1", **(env or {})}
    )
    assert ANSI not in result.output, result.output
    assert "Traceback" not in result.output, result.output
    return result


def run_json(base: Path, *args: str, code: int = 0) -> Any:
    result = run(base, *args, "--json")
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


@pytest.fixture
def awaiting(base: Path) -> Path:
    """A demo session stopped at phase 1's review gate."""
    result = run(base, "demo", "--review", "manual")
    assert result.exit_code == 0, result.output
    return CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"


def key_paths(value: Any, prefix: str, records: dict[str, type]) -> Iterator[str]:
    """Every key of a JSON value as documented: ``a``, ``a[].b``, ``a.b``; records stop."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            if path in records or f"{path}[]" in records:
                record = records.get(path) or records[f"{path}[]"]
                items = item if isinstance(item, list) else [] if item is None else [item]
                assert all(set(i) == set(record.__dataclass_fields__) for i in items), path
                continue
            yield from key_paths(item, path, records)
    elif isinstance(value, list):
        for item in value:
            yield from key_paths(item, f"{prefix}[]", records)


def assert_documented(command: str, data: Any) -> None:
    found = set(key_paths(data, "", JSON_RECORDS.get(command, {})))
    assert found == set(JSON_OUTPUT[command]), (command, found ^ set(JSON_OUTPUT[command]))


# ------------------------------------------------------------------ demo, list, status


def test_demo_stops_at_review_then_status_says_what_to_do(base: Path, awaiting: Path) -> None:
    result = run(base, "status", P, S)
    assert result.exit_code == 0
    assert re.search(r"^1\s+Concept Expansion\s+awaiting review", result.output, re.M)
    assert re.search(r"^2\s+Market Research\s+pending", result.output, re.M)
    assert (
        f"Next: phase 1 awaits review: edit {awaiting} or run haytham feedback demo idea-001 1 --approve"
        in (result.output.replace(f" --base-dir {base}", ""))
    )
    data = run_json(base, "status", P, S)
    assert_documented("status", data)
    assert data["next"] == {
        "action": "review",
        "phase": 1,
        "message": data["next"]["message"],
        "command": f"haytham feedback demo idea-001 1 --approve --base-dir {base}",
        "resume": None,  # haytham runs this session: no other framework's code resumes it
    }
    assert data["next"]["command"] in data["next"]["message"]  # the one command the advice names
    # phase 1 is done running but waits for its reviewer: the session and every view say so
    assert (data["status"], data["current_phase"], data["completed_phases"], data["phases"][1]["status"]) == (
        "awaiting_review",
        1,
        [],
        "pending",
    )
    assert data["phases"][0]["status"] == "awaiting_review"


def test_demo_prints_the_example_lines_and_exit_codes(base: Path) -> None:
    result = run(base, "demo", "--review", "reject", "--mode", "full")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Running demo/idea-001 (full mode)"
    assert "  reviewer: phase 1 sent back with comments" in lines
    assert lines.count("  saved phase 1 concept_expansion") == 2
    assert "Result: completed: every phase is done" in lines
    assert run(base, "demo", "--mode", "huge").exit_code == 2
    assert run(base, "demo", "--crash-after", "0").exit_code == 2
    missing = run(base.parent / "empty", "demo", "--resume")
    assert missing.exit_code == 1
    assert "Error: there is no demo session" in missing.output


def test_list_filters_pages_and_json(base: Path) -> None:
    manager = CheckpointManager(base)
    for project, session, user in (("acme", "s-1", "ada"), ("acme", "s-2", "bob"), ("zeta", "s-1", "ada")):
        assert run(base, "new", project, session, "--user", user).exit_code == 0
    assert run(base, "demo").exit_code == 0  # demo/idea-001, completed
    table = run(base, "list")
    assert table.exit_code == 0
    assert re.search(
        r"^demo\s+idea-001\s+demo-user\s+mvp\s+completed\s+7 Final Synthesis", table.output, re.M
    )
    assert re.search(r"^acme\s+s-1\s+ada\s+mvp\s+in_progress\s+0", table.output, re.M)
    everything = run_json(base, "list")
    assert_documented("list", everything)
    assert everything["total"] == 4
    assert everything["sessions"][0]["session_id"] == "idea-001"
    assert everything["sessions"][0]["total_tokens"] > 0
    ada = run_json(base, "list", "--user", "ada")
    assert sorted((s["project_id"], s["session_id"]) for s in ada["sessions"]) == [
        ("acme", "s-1"),
        ("zeta", "s-1"),
    ]
    assert [s["session_id"] for s in run_json(base, "list", "--project", "acme")["sessions"]] == [
        "s-2",
        "s-1",
    ]
    assert run_json(base, "list", "--status", "completed")["total"] == 1
    page = run_json(base, "list", "--limit", "2", "--offset", "1")
    assert (page["total"], page["limit"], page["offset"]) == (4, 2, 1)
    assert page["sessions"] == everything["sessions"][1:3]
    assert "Showing 2-3 of 4 sessions" in run(base, "list", "--limit", "2", "--offset", "1").output
    assert run(base, "list", "--status", "paused").exit_code == 2
    assert run(base, "list", "--limit", "-1").exit_code == 2
    unsafe = run(base, "list", "--project", "../etc")
    assert unsafe.exit_code == 1
    assert unsafe.output.startswith("Error: project_id '../etc' cannot name a folder safely")
    (manager.session_dir("acme", "s-1") / "session_manifest.md").write_text("# Not a manifest\n")
    warned = run(base, "list")
    assert warned.exit_code == 0
    assert "warning: " in warned.stderr
    assert "session_manifest.md" in warned.stderr
    assert len(run_json(base, "list")["warnings"]) == 1


def test_base_dir_comes_from_the_environment(tmp_path: Path) -> None:
    base = tmp_path / "elsewhere"
    runner = CliRunner()
    created = runner.invoke(cli, ["new", "acme", "s-1", "--user", "ada"], env={"HAYTHAM_BASE_DIR": str(base)})
    assert created.exit_code == 0, created.output
    assert (base / "acme" / "sessions" / "s-1" / "session_manifest.md").is_file()
    listed = runner.invoke(cli, ["list", "--json"], env={"HAYTHAM_BASE_DIR": str(base)})
    assert json.loads(listed.stdout)["total"] == 1


# ------------------------------------------------------------- the base directory
# --base-dir, else HAYTHAM_BASE_DIR, else storage.base_dir of ./haytham.yaml, else ./projects.

FEEDBACK_1 = "data/demo/sessions/idea-001/phase_1_concept/user_feedback.md"
CONFIGURED: dict[str, tuple[list[str], str | None, str]] = {
    # command: (arguments, a file it must have written or found under the cwd, a line part it prints)
    "demo": (
        ["demo", "--review", "manual"],
        "data/demo/sessions/idea-002/session_manifest.md",
        "edit data/demo",
    ),
    "new": (
        ["new", "acme", "s-1", "--user", "ada"],
        "data/acme/sessions/s-1/session_manifest.md",
        "in data/acme",
    ),
    "list": (["list"], None, "demo-user"),
    "status": (["status", P, S], None, f"Next: phase 1 awaits review: edit {FEEDBACK_1}"),
    "show": (["show", P, S], None, "=== Phase 1: Concept Expansion (completed) ==="),
    "feedback": (["feedback", P, S, "1", "--approve"], FEEDBACK_1, f"Understood {FEEDBACK_1}:"),
    "review": (["review"], FEEDBACK_1, f"No change: {FEEDBACK_1} is as it was"),  # $EDITOR is true
    "resume": (["resume", P, S], None, f"Next: phase 1 awaits review: edit {FEEDBACK_1}"),
    "rerun": (
        ["rerun", P, S, "--from-phase", "1"],
        "data/demo/sessions/idea-001/phase_1_concept/attempts/1/checkpoint.md",
        f"Next: phase 1 awaits review: edit {FEEDBACK_1}",
    ),
    "validate": (["validate"], None, "session files in 1 sessions, no problems"),
    "doctor": (["doctor", P, S], None, "OK: demo/idea-001 is consistent"),
    "migrate": (["migrate"], None, "Nothing to migrate: "),
    "history": (["history", P, S], None, "1 Concept Expansion"),
    "diff": (["diff", f"{P}/{S}", f"{P}/{S}"], None, "No differences"),
    "fork": (
        ["fork", P, S, "copy", "--from-phase", "2"],
        "data/demo/sessions/copy/phase_1_concept",
        "(data/demo",
    ),
    "export": (["export", P, S, "-o", "out.json"], "out.json", "Exported demo/idea-001 to out.json"),
    "import": (["import", "export.json", "--session", "copy"], "data/demo/sessions/copy", "into data/demo"),
    "prune": (
        ["prune", "--keep", "0", "--include-in-progress", "--dry-run"],
        None,
        "Would remove session demo",
    ),
    "stats": (["stats"], None, "1 session: 0 in progress, 0 completed, 0 failed, 1 awaiting review"),
    "log": (["log", P, S], None, "the demo session"),
    "git setup": (["git", "setup"], ".gitattributes", "data/**/session_manifest.md merge=haytham"),
    "report": (["report", P, S, "-o", "r.html"], "r.html", "Wrote r.html"),
    "sync": (["sync", "--remote", ".", "--setup-driver"], ".gitattributes", "set up the merge driver"),
    "runner": (
        ["runner", "--remote", ".", "--until-idle", "--setup-driver"],
        ".gitattributes",
        "stopped: 0 runs",
    ),
}
RUN_UNTIL_STOPPED = {"serve"}
"""Commands that run until stopped: tests/test_web.py starts them as processes in a haytham.yaml dir."""


def base_dir_commands(group: click.Group = cli, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    """Every command and subcommand that has a ``--base-dir`` option, by its full name."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from base_dir_commands(command, f"{prefix}{name} ")
        elif any(param.name == "base_dir" for param in command.params):
            yield f"{prefix}{name}", command


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cwd: a haytham.yaml with ``storage: {base_dir: data}``, a demo session awaiting
    review in ./data and its export in ./export.json, all committed to a git repository."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAYTHAM_BASE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user git configuration
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EDITOR", "true")  # closes at once, changing nothing
    monkeypatch.delenv("VISUAL", raising=False)
    (tmp_path / "haytham.yaml").write_text("storage:\n  base_dir: data\n")
    manager = CheckpointManager(tmp_path / "data")
    run_demo(manager, S, review="manual")
    transfer.export_session(manager, P, S, tmp_path / "export.json")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "the demo session"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True)
    return tmp_path


def test_every_command_that_takes_a_base_dir_is_tested_with_haytham_yaml() -> None:
    assert {name for name, _ in base_dir_commands()} - RUN_UNTIL_STOPPED == set(CONFIGURED)


def test_every_command_takes_the_one_base_dir_option() -> None:
    options = {
        (tuple(p.opts), p.envvar, p.callback, p.help)
        for _, command in base_dir_commands()
        for p in command.params
        if p.name == "base_dir"
    }
    assert len(options) == 1
    [(opts, envvar, _, _)] = options
    assert (opts, envvar) == (("--base-dir",), "HAYTHAM_BASE_DIR")


@pytest.mark.parametrize("name", list(CONFIGURED))
def test_every_command_finds_the_base_dir_in_haytham_yaml(configured: Path, name: str) -> None:
    args, written, printed = CONFIGURED[name]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert printed in result.stdout
    assert written is None or (configured / written).exists()
    assert not (configured / "projects").exists()


def test_the_option_then_the_variable_then_haytham_yaml_then_projects(configured: Path) -> None:
    runner = CliRunner()
    CheckpointManager(configured / "other").create_session("acme", "from-env", "ada")

    def listed(*args: str, env: dict[str, str | None] | None = None) -> list[str]:
        result = runner.invoke(cli, ["list", "--json", *args], env=env)
        assert result.exit_code == 0, result.output
        return [s["session_id"] for s in json.loads(result.stdout)["sessions"]]

    assert listed() == [S]
    assert listed(env={"HAYTHAM_BASE_DIR": "other"}) == ["from-env"]
    assert listed("--base-dir", "data", env={"HAYTHAM_BASE_DIR": "other"}) == [S]
    (configured / "haytham.yaml").unlink()
    assert runner.invoke(cli, ["list"]).output == "No sessions under projects\n"


def test_a_broken_haytham_yaml_is_a_located_error_unless_the_base_dir_is_given(configured: Path) -> None:
    (configured / "haytham.yaml").write_text("storage:\n  base_dir: 3\n")
    expected = "Error: haytham.yaml:2: storage.base_dir: 3 is not a string\n"
    for command, args in [(cli, ["list"]), (cli, ["validate"]), (history_command, [P, S])]:
        result = CliRunner().invoke(command, args)  # history_command on its own, without the group
        assert (result.exit_code, result.output) == (1, expected)
    assert CliRunner().invoke(cli, ["validate", "--base-dir", "data"]).exit_code == 0
    assert CliRunner().invoke(cli, ["list"], env={"HAYTHAM_BASE_DIR": "data"}).exit_code == 0


# -------------------------------------------------------------------------- new


def test_new_creates_refuses_twice_and_checks_its_arguments(base: Path) -> None:
    result = run(base, "new", "acme", "s-001", "--user", "ada", "--mode", "full")
    assert result.exit_code == 0, result.output
    assert "Created acme/s-001 (idea_validation, full mode: phases 1, 2, 3, 4, 5, 6, 7)" in result.output
    assert run_json(base, "status", "acme", "s-001")["execution_mode"] == "full"
    again = run(base, "new", "acme", "s-001", "--user", "ada")
    assert again.exit_code == 1
    assert again.output.startswith("Error: session acme/s-001 already exists")
    assert run(base, "new", "acme", "s-002").exit_code == 2  # --user is required
    assert run(base, "new", "acme", "s-002", "--user", "ada", "--mode", "tiny").exit_code == 2
    assert run(base, "new", "acme", "s-002", "--user", "ada", "--workflow", "nope").exit_code == 2
    unsafe = run(base, "new", "acme", "a/b", "--user", "ada")
    assert unsafe.exit_code == 1
    assert "session_id 'a/b' is not a safe name" in unsafe.output


CUSTOM = """\
name: due_diligence
modes:
  quick: [1, 2]
phases:
  - number: 1
    name: Gather
    agents: [collector]
  - number: 2
    name: Verdict
    agents: [judge]
    review: true
"""


def test_a_yaml_workflow_runs_with_agents_named_on_the_command_line(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(CUSTOM)
    (tmp_path / "my_agents.py").write_text(
        "AGENTS = {name: (lambda c: f'# {c.agent_name}\\n') for name in ('collector', 'judge')}\n"
        "NOT_A_MAP = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_agents", raising=False)
    created = run(base, "new", "acme", "dd", "--user", "ada", "--workflow", str(flow))
    assert created.exit_code == 0
    assert "(due_diligence, quick mode: phases 1, 2)" in created.output
    unnamed = run(base, "resume", "acme", "dd")
    assert unnamed.exit_code == 1
    assert (
        "Error: acme/dd was not run: its workflow 'due_diligence' names no callable for collector, judge;"
        in (unnamed.output)
    )
    assert run(base, "resume", "acme", "dd", "--agents", "my_agents").exit_code == 2
    assert run(base, "resume", "acme", "dd", "--agents", "my_agents:MISSING").exit_code == 2
    assert run(base, "resume", "acme", "dd", "--agents", "my_agents:NOT_A_MAP").exit_code == 2
    assert run(base, "resume", "acme", "dd", "--agents", "no_such_module:X").exit_code == 2
    data = run_json(base, "resume", "acme", "dd", "--agents", "my_agents:AGENTS")
    assert_documented("resume", data)
    assert (data["status"], data["phase"], data["ran_agents"]) == (
        "awaiting_review",
        2,
        ["1:collector", "2:judge"],
    )
    assert data["next"]["action"] == "review"
    flow.write_text(CUSTOM.replace("review: true", "review: maybe"))
    broken = run(base, "new", "acme", "dd2", "--user", "ada", "--workflow", str(flow))
    assert broken.exit_code == 1
    assert f"Error: {flow}:11: phases.1.review: 'maybe' is not a boolean" in broken.output


# ---------------------------------------------------------------------- feedback


def test_approve_from_the_command_line_then_resume_completes(base: Path, awaiting: Path) -> None:
    result = run(
        base, "feedback", P, S, "1", "--approve", "--comment", "Looks good", "--change", "Keep it short"
    )
    assert result.exit_code == 0, result.output
    assert "Reviewed: yes; approved: yes; action: approved" in result.output
    assert "Comments: Looks good" in result.output
    assert "  - Keep it short" in result.output
    assert (
        "Next: phase 2 (Market Research) is ready to run: run haytham resume demo idea-001" in result.output
    )
    feedback = CheckpointManager(base).load_feedback(P, S, 1)
    assert feedback is not None
    assert feedback.approved
    assert feedback.requested_changes == ("Keep it short",)
    resumed = run(base, "resume", P, S)
    assert resumed.exit_code == 0, resumed.output
    assert "  saved phase 7 synthesizer" in resumed.output
    assert "Result: completed: every phase is done" in resumed.output
    assert run_json(base, "status", P, S)["next"]["action"] == "done"


def test_reject_sends_the_phase_back_with_the_requested_changes(base: Path, awaiting: Path) -> None:
    result = run(
        base, "feedback", P, S, "1", "--reject", "--change", "Name the buyer", "--change", "Add prices"
    )
    assert result.exit_code == 0, result.output
    assert "approved: no; action: retry; retry count: 1" in result.output
    assert "was sent back: run haytham resume demo idea-001" in result.output
    again = run_json(base, "resume", P, S)
    assert (again["status"], again["phase"], again["ran_agents"]) == (
        "awaiting_review",
        1,
        ["1:concept_expansion"],
    )
    show = run(base, "show", P, S, "--phase", "1", "--agent", "concept_expansion")
    assert "- Addressed: Name the buyer\n- Addressed: Add prices\n" in show.output


def test_feedback_usage_mistakes_exit_2_and_errors_exit_1(base: Path, awaiting: Path) -> None:
    assert run(base, "feedback", P, S, "1", "--approve", "--reject").exit_code == 2
    assert run(base, "feedback", P, S, "1", "--comment", "hi").exit_code == 2
    assert run(base, "feedback", P, S, "one", "--approve").exit_code == 2
    not_run = run(base, "feedback", P, S, "2", "--approve")
    assert not_run.exit_code == 1
    assert not_run.output.startswith("Error: phase 2 has no checkpoint")
    not_in_mode = run(base, "feedback", P, S, "4", "--approve")
    assert not_in_mode.exit_code == 1
    assert "is not run in 'mvp' mode" in not_in_mode.output
    missing = run(base, "feedback", P, "nope", "1", "--approve")
    assert missing.exit_code == 1
    assert missing.output.startswith("Error: session demo/nope does not exist")


def editor(tmp_path: Path, body: str) -> dict[str, str | None]:
    """An $EDITOR that runs ``body`` on the file (``path``, ``text``), in place."""
    script = tmp_path / "edit.py"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\n"
        "path = Path(sys.argv[1])\ntext = path.read_text()\n"
        + textwrap.dedent(body)
        + "path.write_text(text)\n"
    )
    script.chmod(0o755)
    return {"EDITOR": str(script), "VISUAL": None}


def test_the_editor_flow_says_what_it_understood(base: Path, awaiting: Path, tmp_path: Path) -> None:
    env = editor(
        tmp_path,
        """
        text = text.replace("Reviewed: false", "Reviewed: yes").replace("Approved: false", "Approved: yes")
        text = text.replace("No comments provided", "Solid.\\n\\nShip it.")
        text = text.replace("Action: pending", "Action: approved")
        text = text.replace("- No changes requested", "- Add a pricing table")
        """,
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    assert f"Understood {awaiting}:" in result.output
    assert "Reviewed: yes; approved: yes; action: approved" in result.output
    assert "  Comments: Solid.\n\n    Ship it.\n" in result.output
    assert "  - Add a pricing table" in result.output
    assert "Next: phase 2 (Market Research) is ready to run" in result.output


def test_a_mistake_in_the_editor_is_located_and_exits_1(base: Path, awaiting: Path, tmp_path: Path) -> None:
    before = awaiting.read_bytes()
    env = editor(tmp_path, 'text = text.replace("Approved: false", "Approved: maybe")\n')
    result = run(base, "feedback", P, S, "1", env=env)  # reopened with the mistake, closed unchanged
    assert result.exit_code == 1
    kept = Path(re.findall(r"Your text is in (\S+)", result.stderr)[0])
    line = kept.read_text().splitlines().index("- Approved: maybe") + 1
    assert f"{kept}:{line}: Approved: 'maybe' is not a boolean" in result.stderr
    assert f"Nothing was saved: {awaiting} is as it was" in result.stderr
    assert "Error: " in result.stderr
    assert awaiting.read_bytes() == before
    status = run_json(base, "status", P, S)
    assert status["next"]["action"] == "review"


def test_the_editor_gets_the_template_when_there_is_no_feedback_yet(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    awaiting.unlink()
    result = run(base, "feedback", P, S, "1", env=editor(tmp_path, "assert 'Reviewed: false' in text\n"))
    assert result.exit_code == 0, result.output
    assert "Reviewed: no; approved: no; action: pending" in result.output
    assert "Next: phase 1 awaits review" in result.output
    failing = run(base, "feedback", P, S, "1", env=editor(tmp_path, "sys.exit(4)\n"))
    assert failing.exit_code == 1
    assert "Editing failed" in failing.output


# -------------------------------------------------------------------------- show


def test_show_prints_outputs_raw_when_piped_and_as_json(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    content = manager.load_agent_output(P, S, 1, "concept_expansion").content
    result = run(base, "show", P, S)
    assert result.exit_code == 0
    assert "=== Phase 1: Concept Expansion (completed) ===" in result.output
    assert "--- concept_expansion: completed, demo-local-1, 400 in / " in result.output
    assert content in result.output  # the markdown is left raw
    assert "Reviewed: no; approved: no; action: pending" in result.output
    exact = run(base, "show", P, S, "--agent", "concept_expansion")
    assert exact.stdout == content
    data = run_json(base, "show", P, S)
    assert_documented("show", data)
    [phase] = data["phases"]
    assert (phase["number"], phase["checkpoint"]["status"], phase["feedback"]["action"]) == (
        1,
        "completed",
        "pending",
    )
    assert phase["outputs"][0]["content"] == content
    assert (
        run_json(base, "show", P, S, "--phase", "1", "--agent", "concept_expansion")["phases"][0]["outputs"][
            0
        ]["agent_name"]
        == "concept_expansion"
    )
    never_ran = run(base, "show", P, S, "--phase", "2")
    assert never_ran.exit_code == 1
    assert never_ran.output.startswith("Error: phase 2 has no checkpoint")
    unknown = run(base, "show", P, S, "--agent", "nobody")
    assert unknown.exit_code == 1
    assert "no phase of demo/idea-001 runs agent 'nobody'" in unknown.output
    fresh = run(base, "new", "acme", "s-1", "--user", "ada")
    assert fresh.exit_code == 0
    assert "No phase of acme/s-1 has run yet" in run(base, "show", "acme", "s-1").output


# --------------------------------------------------------------- validate, doctor


def test_validate_is_quiet_on_good_files_and_locates_a_broken_one(base: Path, awaiting: Path) -> None:
    ok = run(base, "validate")
    assert ok.exit_code == 0
    assert ok.output.startswith("OK: 6 session files in 1 sessions, no problems")
    assert run_json(base, "validate") == {"ok": True, "files": 6, "sessions": 1, "issues": []}
    checkpoint = awaiting.parent / "checkpoint.md"
    checkpoint.write_text(checkpoint.read_text().replace("- Retry Count: 0", "- Retry Count: lots"))
    line = checkpoint.read_text().splitlines().index("- Retry Count: lots") + 1
    bad = run(base, "validate")
    assert bad.exit_code == 1
    assert bad.output.splitlines()[0].startswith(f"{checkpoint}:{line}: Retry Count: ")
    assert bad.output.splitlines()[-1] == "1 problem in 1 of 6 files"
    data = run_json(base, "validate", code=1)
    assert_documented("validate", data | {"issues": data["issues"]})
    assert data["issues"][0] == {
        "path": str(checkpoint),
        "line": line,
        "field": "Retry Count",
        "message": data["issues"][0]["message"],
        "severity": "error",
    }
    expected = CheckpointManager(base).validate_paths()
    assert [str(i) for i in expected] == bad.output.splitlines()[:-1]


def test_validate_takes_files_like_a_pre_commit_hook(base: Path, awaiting: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Not a session file\n")
    clean = run(base, "validate", str(awaiting), str(readme))
    assert clean.exit_code == 0
    assert clean.output.startswith("OK: 1 session files in 0 sessions")
    awaiting.write_text(awaiting.read_text().replace("Approved: false", "Approved: maybe"))
    broken = run(base, "validate", str(readme), str(awaiting))
    assert broken.exit_code == 1
    assert f"{awaiting}:" in broken.output
    assert ": Approved: 'maybe'" in broken.output
    assert run(base, "validate", str(tmp_path / "missing.md")).exit_code == 2
    assert run(base.parent / "no-such-dir", "validate").exit_code == 2
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hooks == [
        {
            "id": "haytham-validate",
            "name": "haytham validate",
            "description": hooks[0]["description"],
            "entry": "haytham validate",
            "language": "python",
            "files": r"\.md$",
            "pass_filenames": True,
        }
    ]


def test_doctor_reports_repairs_and_exits_1_while_findings_remain(base: Path, awaiting: Path) -> None:
    clean = run(base, "doctor", P, S)
    assert clean.exit_code == 0
    assert "OK: demo/idea-001 is consistent" in clean.output
    leftover = awaiting.parent / ".checkpoint.md.1.abcd.haytham-tmp"
    leftover.write_text("half a file")
    found = run(base, "doctor", P, S)
    assert found.exit_code == 1
    assert f"{leftover}: temporary_leftover: left by a writer that was killed" in found.output
    assert "haytham doctor demo idea-001 --fix" in found.output
    data = run_json(base, "doctor", P, S, code=1)
    assert_documented("doctor", data)
    assert data["ok"] is False
    assert data["findings"][0]["kind"] == "temporary_leftover"
    fixed = run_json(base, "doctor", P, S, "--fix")
    assert fixed["ok"] is True
    assert fixed["findings"][0]["fixed"] is True
    assert not leftover.exists()
    (awaiting.parent / "stray_notes.md").write_text("# notes\n")
    unfixable = run(base, "doctor", P, S, "--fix")
    assert unfixable.exit_code == 1
    assert "unlisted_agent_file" in unfixable.output
    assert "findings need attention" in unfixable.output.splitlines()[-1]


# ----------------------------------------------------------------- errors, output


def test_library_errors_are_one_line_and_exit_1(base: Path, awaiting: Path) -> None:
    missing = run(base, "status", P, "nope")
    assert missing.exit_code == 1
    assert (
        missing.output
        == f"Error: session demo/nope does not exist (no {base}/demo/sessions/nope/session_manifest.md)\n"
    )
    manifest = awaiting.parent.parent / "session_manifest.md"
    text = manifest.read_text()
    assert "- Status: awaiting_review" in text  # phase 1 waits for its reviewer
    manifest.write_text(text.replace("- Status: awaiting_review", "- Status: sleeping"))
    broken = run(base, "status", P, S)
    assert broken.exit_code == 1
    assert broken.output.startswith(f"Error: {manifest}:")
    assert broken.output.count("\n") == 1


def test_usage_mistakes_exit_2(base: Path) -> None:
    assert run(base, "status", P).exit_code == 2
    assert run(base, "frobnicate").exit_code == 2
    assert run(base, "list", "--colour").exit_code == 2


def test_piped_output_has_no_ansi_codes_even_with_force_color(base: Path, awaiting: Path) -> None:
    # run() already asserts this for every command; here it is the point, with the worst env.
    env: dict[str, str | None] = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    for args in (("list",), ("status", P, S), ("show", P, S), ("validate",), ("doctor", P, S)):
        result = run(base, *args, env=env)
        assert result.exit_code == 0, (args, result.output)


# ------------------------------------------------------------------ help and docs


def test_every_command_has_help_and_is_in_the_generated_reference() -> None:
    assert sorted(cli.commands) == sorted(COMMANDS)
    docs = DOCS_FILE.read_text(encoding="utf-8")
    for name in COMMANDS:
        command = cli.commands[name]
        assert command.help, name
        assert command.get_short_help_str(), name
        assert f"\n## haytham {name}\n" in docs, name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, (name, param.name)
        result = CliRunner().invoke(cli, [name, "--help"], prog_name="haytham")
        assert result.exit_code == 0
        assert result.output.startswith(f"Usage: haytham {name} [OPTIONS]")
    for name in JSON_OUTPUT:
        assert "--json" in help_text(name), name
        assert f"## haytham {name}" in docs


def test_docs_cli_md_is_generated_and_up_to_date() -> None:
    assert DOCS_FILE.read_text(encoding="utf-8") == render(), "run: python -m haytham.cli.docs"


# ---------------------------------------------------------------- the demo library


def test_run_demo_reports_through_the_callback_and_never_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manager = CheckpointManager(tmp_path)
    assert (next_session_id(manager), last_session_id(manager)) == ("idea-001", None)
    events: list[DemoEvent] = []
    result = run_demo(manager, "idea-001", review="manual", on_event=events.append)
    assert capsys.readouterr() == ("", "")
    assert [e.kind for e in events] == ["start", "saved", "result"]
    assert (events[1].phase, events[1].agent, str(events[1])) == (
        1,
        "concept_expansion",
        "  saved phase 1 concept_expansion",
    )
    assert events[-1].result == result
    assert result.status == "awaiting_review"
    assert (next_session_id(manager), last_session_id(manager)) == ("idea-002", "idea-001")
    resumed = run_demo(manager, "idea-001", "full", resume=True, on_event=events.append)
    assert resumed.status == "completed"
    assert str(events[3]) == "Resuming demo/idea-001 (mvp mode)"  # the session's own mode
    with pytest.raises(ValueError, match="review 'maybe'"):
        run_demo(manager, "idea-002", review="maybe")
    with pytest.raises(ValueError, match="crash_after 0"):
        run_demo(manager, "idea-002", crash_after=0)


# ------------------------------------------------------------ the installed program


def haytham(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HAYTHAM_BASE_DIR", "FORCE_COLOR")}
    return subprocess.run(
        [str(HAYTHAM), *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def test_the_installed_executable_end_to_end(tmp_path: Path) -> None:
    assert HAYTHAM.is_file(), "pip install -e '.[dev]' installs the haytham executable"
    crashed = haytham("demo", "--base-dir", "p", "--crash-after", "2", cwd=tmp_path)
    assert crashed.returncode == 3, crashed.stderr
    assert crashed.stdout.splitlines()[-1] == "  crashing on purpose after 2 outputs (--crash-after)"
    resumed = haytham("demo", "--base-dir", "p", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "Result: completed: every phase is done" in resumed.stdout
    listed = haytham("list", "--base-dir", "p", "--json", cwd=tmp_path)
    assert listed.returncode == 0
    assert ANSI not in listed.stdout
    [session] = json.loads(listed.stdout)["sessions"]
    assert (session["session_id"], session["status"]) == ("idea-001", "completed")
    assert haytham("validate", "--base-dir", "p", cwd=tmp_path).returncode == 0
    as_module = subprocess.run(
        [sys.executable, "-m", "haytham", "--version"], capture_output=True, text=True, timeout=60
    )
    assert as_module.returncode == 0
    assert as_module.stdout == "haytham, version 0.1.0\n"


def test_the_example_and_haytham_demo_print_the_same_lines(tmp_path: Path) -> None:
    example = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "idea_validation.py"),
            "--base-dir",
            "a",
            "--review",
            "reject",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    command = haytham("demo", "--base-dir", "b", "--review", "reject", cwd=tmp_path)
    assert example.returncode == command.returncode == 0, example.stderr + command.stderr

    def steps(output: str) -> list[str]:
        return output.split("\n\n")[0].replace("b/demo", "a/demo").splitlines()

    assert steps(command.stdout) == steps(example.stdout)
    assert steps(example.stdout)[-1] == "Result: completed: every phase is done"
