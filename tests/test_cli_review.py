"""The review lifecycle as a new user meets it on the command line (issue 12).

Who plays a session's agents (``agents:`` of a workflow, ``resume --agents``), the editor
loop of ``feedback`` and ``review`` (reopened with the mistake until the file is right or the
person quits), output that cannot be written never stopping work, and ``diff`` of two
attempts of a phase. Each test runs the real command line on real files; editors are
scripts given as $EDITOR.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import Result
from test_cli import HAYTHAM, P, S, editor, run, run_json

from haytham import CheckpointManager
from haytham.format.workflow import IDEA_VALIDATION, load_workflow
from haytham.run.runner import next_step

Snapshot = dict[str, tuple[bytes, int] | None]


def snapshot(root: Path) -> Snapshot:
    """Every file (bytes and mtime) and folder under ``root``: equal snapshots, nothing written."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def unstamped(text: str) -> str:
    """``text`` as the person saved it: without the time and reviewer haytham records in an
    editor review (issue 25), which are asserted on their own."""
    text = re.sub(r"^- Reviewer: .*\n", "", text, flags=re.M)
    return re.sub(r"^- Timestamp: \d{4}-\d\d-\d\dT[\d:.]+Z$", "- Timestamp: -", text, flags=re.M)


def without_base_dir(result: Result, base: Path) -> str:
    return result.output.replace(f" --base-dir {base}", "")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def awaiting(base: Path) -> Path:
    """A demo session stopped at phase 1's review gate."""
    result = run(base, "demo", "--review", "manual")
    assert result.exit_code == 0, result.output
    return CheckpointManager(base).phase_dir(P, S, 1) / "user_feedback.md"


# ------------------------------------------------------- A: who plays the agents


def test_new_with_the_builtin_workflow_says_how_to_name_the_agents(base: Path) -> None:
    created = run(base, "new", "acme", "real-1", "--user", "ada")
    assert created.exit_code == 0, created.output
    out = without_base_dir(created, base)
    assert "Next: run haytham resume acme real-1\n" not in out
    assert "names no callable for concept_expansion, market_intelligence," in out
    assert "haytham resume acme real-1 --agents NAME=module:function" in out
    assert "workflow file's agents: mapping (NAME: module:function" in out


def test_resume_refuses_a_session_whose_agents_are_not_named_and_writes_nothing(base: Path) -> None:
    assert run(base, "new", "acme", "real-1", "--user", "ada").exit_code == 0
    before = snapshot(base)
    refused = run(base, "resume", "acme", "real-1")
    assert refused.exit_code == 1
    assert refused.output.startswith(
        "Error: acme/real-1 was not run: its workflow 'idea_validation' names no callable for "
        "concept_expansion, market_intelligence, competitor_analysis, niche_selector,"
    )
    assert "--agents NAME=module:function" in refused.output
    assert "agents: mapping" in refused.output
    assert snapshot(base) == before
    assert "demo-local-1" not in "".join(str(v) for v in before.values())


AGENTS = """\
from haytham.run.runner import AgentResult


def collect(context):
    return AgentResult(f"# Collected for {context.session_id}\\n", model="mine-1")


def judge(context):
    return "# Verdict\\n\\nGo.\\n"


NOT_CALLABLE = {"collector": 3}
"""
FLOW = """\
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
BOUND = FLOW + "agents:\n  collector: dd_agents:collect\n  judge: dd_agents:judge\n"


@pytest.fixture
def project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with an agents module, the current directory (as for a person's project)."""
    (tmp_path / "dd_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "dd_agents", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # resume puts the current directory first
    return tmp_path


def test_a_workflow_that_names_its_agents_runs_with_a_bare_resume(base: Path, project_dir: Path) -> None:
    (project_dir / "flow.yaml").write_text(BOUND)
    created = run(base, "new", "acme", "dd", "--user", "ada", "--workflow", "flow.yaml")
    assert created.exit_code == 0, created.output
    assert "Next: run haytham resume acme dd" in created.output
    data = run_json(base, "resume", "acme", "dd")
    assert (data["status"], data["ran_agents"]) == ("awaiting_review", ["1:collector", "2:judge"])
    manager = CheckpointManager(base)
    assert manager.load_agent_output("acme", "dd", 1, "collector").model == "mine-1"
    assert manager.session_workflow("acme", "dd").callables == {
        "collector": "dd_agents:collect",
        "judge": "dd_agents:judge",
    }
    unbound = load_workflow(project_dir / "flow.yaml").fingerprint()
    (project_dir / "flow.yaml").write_text(FLOW)
    assert load_workflow(project_dir / "flow.yaml").fingerprint() == unbound  # bindings are not in it


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        ("no_such_dd_module:collect", "Error: cannot import module 'no_such_dd_module'"),
        ("dd_agents:gather", "Error: module 'dd_agents' has no 'gather'"),
        (
            "dd_agents:NOT_CALLABLE",
            "Error: agent 'collector': 'dd_agents:NOT_CALLABLE' is a dict, not a function",
        ),
    ],
)
def test_a_binding_that_cannot_be_imported_is_named_and_nothing_is_written(
    base: Path, project_dir: Path, binding: str, message: str
) -> None:
    (project_dir / "flow.yaml").write_text(BOUND.replace("dd_agents:collect", binding))
    assert run(base, "new", "acme", "dd", "--user", "ada", "--workflow", "flow.yaml").exit_code == 0
    before = snapshot(base)
    refused = run(base, "resume", "acme", "dd")
    assert refused.exit_code == 1
    assert refused.output.startswith(message), refused.output
    assert snapshot(base) == before


def test_a_binding_with_bad_syntax_is_a_located_error(base: Path, project_dir: Path) -> None:
    (project_dir / "flow.yaml").write_text(BOUND.replace("dd_agents:judge", "dd_agents.judge"))
    broken = run(base, "new", "acme", "dd", "--user", "ada", "--workflow", "flow.yaml")
    assert broken.exit_code == 1
    assert broken.output == (
        "Error: flow.yaml:14: agents.judge: 'dd_agents.judge' is not module:function (e.g. my_agents:judge)\n"
    )
    assert not base.exists()


def test_agents_on_the_command_line_one_by_one_or_one_for_all(base: Path, project_dir: Path) -> None:
    (project_dir / "flow.yaml").write_text(FLOW)
    assert run(base, "new", "acme", "dd", "--user", "ada", "--workflow", "flow.yaml").exit_code == 0
    assert run(base, "new", "acme", "d2", "--user", "ada", "--workflow", "flow.yaml").exit_code == 0
    half = run(base, "resume", "acme", "dd", "--agents", "collector=dd_agents:collect")
    assert half.exit_code == 1
    assert "names no callable for judge;" in half.output
    typo = run(base, "resume", "acme", "dd", "--agents", "colector=dd_agents:collect")
    assert typo.exit_code == 2
    assert "'colector' is not an agent of workflow 'due_diligence'" in typo.output
    both = ("--agents", "collector=dd_agents:collect", "--agents", "judge=dd_agents:judge")
    assert run_json(base, "resume", "acme", "dd", *both)["ran_agents"] == ["1:collector", "2:judge"]
    everyone = run_json(base, "resume", "acme", "d2", "--agents", "dd_agents:judge")
    assert everyone["ran_agents"] == ["1:collector", "2:judge"]
    assert (
        CheckpointManager(base).load_agent_output("acme", "d2", 1, "collector").content
        == "# Verdict\n\nGo.\n"
    )


def test_demo_sessions_name_their_agents_so_resume_needs_no_special_case(base: Path, awaiting: Path) -> None:
    manager = CheckpointManager(base)
    workflow = manager.session_workflow(P, S)
    assert set(workflow.callables.values()) == {"haytham.run.demo:demo_agent"}
    assert manager.load_manifest(P, S).workflow_fingerprint == IDEA_VALIDATION.fingerprint()
    assert run(base, "feedback", P, S, "1", "--approve").exit_code == 0
    resumed = run(base, "resume", P, S)
    assert resumed.exit_code == 0, resumed.output
    assert "Result: completed: every phase is done" in resumed.output
    assert next_step(manager, P, S).action == "done"


# ---------------------------------------- D: output that cannot be written stops no work


def files_of(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.parent.name != "history")


def haytham_closed(cwd: Path, *args: str, stderr_too: bool = False) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``haytham`` with stdout (and stderr) a pipe nobody reads any more."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(HAYTHAM), *args],
            cwd=cwd,
            stdout=write,
            stderr=write if stderr_too else subprocess.PIPE,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "HAYTHAM_BASE_DIR"},
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("stderr_too", [False, True])
def test_a_closed_pipe_never_stops_a_run(tmp_path: Path, stderr_too: bool) -> None:
    whole = subprocess.run(
        [str(HAYTHAM), "demo", "--review", "manual", "--base-dir", "whole"], cwd=tmp_path, capture_output=True
    )
    assert whole.returncode == 0
    cut = haytham_closed(tmp_path, "demo", "--review", "manual", "--base-dir", "cut", stderr_too=stderr_too)
    assert cut.returncode == 0, cut.stderr
    assert not cut.stderr  # no traceback, no "Exception ignored"
    manager = CheckpointManager(tmp_path / "cut")
    step, whole_step = next_step(manager, P, S), next_step(CheckpointManager(tmp_path / "whole"), P, S)
    assert (step.action, step.phase, step.reason) == (whole_step.action, whole_step.phase, whole_step.reason)
    assert (step.action, step.phase) == ("review", 1)
    assert files_of(tmp_path / "cut") == files_of(tmp_path / "whole")
    assert CheckpointManager(tmp_path / "cut").load_checkpoint(P, S, 1).status == "completed"
    approved = subprocess.run(
        [str(HAYTHAM), "feedback", P, S, "1", "--approve", "--base-dir", "cut"],
        cwd=tmp_path,
        capture_output=True,
    )
    assert approved.returncode == 0
    resumed = haytham_closed(tmp_path, "resume", P, S, "--base-dir", "cut", stderr_too=stderr_too)
    assert resumed.returncode == 0
    assert next_step(manager, P, S).action == "done"


def test_a_reader_that_stops_after_the_first_line_stops_no_work(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(HAYTHAM), "demo", "--review", "manual", "--base-dir", "p"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == b"Running demo/idea-001 (mvp mode)\n"
    process.stdout.close()
    assert process.wait(timeout=120) == 0
    assert process.stderr.read() == b""
    process.stderr.close()
    step = next_step(CheckpointManager(tmp_path / "p"), P, S)
    assert (step.action, step.phase, step.reason) == ("review", 1, "awaiting_review")


# ------------------------------------------------- B: the editor loop of feedback


def logging_editor(tmp_path: Path, body: str) -> tuple[dict[str, str | None], Path]:
    """An $EDITOR (see test_cli.editor) that also logs each text it was opened on."""
    log = tmp_path / "editor.log"
    logged = f"with open({str(log)!r}, 'a') as log:\n    log.write(text + '\\x00')\n" + textwrap.dedent(body)
    return editor(tmp_path, logged), log


def opened_on(log: Path) -> list[str]:
    return log.read_text().split("\x00")[:-1] if log.exists() else []


def test_a_mistake_reopens_the_editor_with_it_on_top_until_the_file_is_right(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    env, log = logging_editor(
        tmp_path,
        """
        if "<!-- haytham:" in text:
            text = text.replace("Approved: nope", "Approved: yes")
        else:
            text = text.replace("Reviewed: false", "Reviewed: yes")
            text = text.replace("Approved: false", "Approved: nope")
        """,
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    first, second = opened_on(log)
    assert first == unstamped(awaiting.read_text()).replace("Approved: yes", "Approved: false").replace(
        "Reviewed: yes", "Reviewed: false"
    )
    banner = second.split("-->\n", 1)[0]
    assert banner.startswith("<!-- haytham: haytham cannot read this user_feedback.md: fix what is below")
    line = second.splitlines().index("- Approved: nope") + 1  # counted in the editor's text
    assert f"line {line}: Approved: 'nope' is not a boolean" in banner
    assert f"{awaiting} stays as it was" in banner
    saved = awaiting.read_text()
    assert "haytham:" not in saved and "<!--" not in saved
    assert "- Approved: yes" in saved
    assert "Reviewed: yes; approved: yes" in result.output
    assert "Next: phase 2 (Market Research) is ready to run" in result.output


def test_closing_the_editor_without_a_change_leaves_the_file_exactly_as_it_was(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    before = (awaiting.read_bytes(), awaiting.stat().st_mtime_ns)
    env, log = logging_editor(tmp_path, "")
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    assert len(opened_on(log)) == 1
    assert f"No change: {awaiting} is as it was" in result.output
    assert (awaiting.read_bytes(), awaiting.stat().st_mtime_ns) == before


def test_quitting_after_a_mistake_saves_nothing_and_keeps_the_text_elsewhere(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    before = (awaiting.read_bytes(), awaiting.stat().st_mtime_ns)
    env, log = logging_editor(
        tmp_path,
        """
        if "<!-- haytham:" not in text:
            text = text.replace("Approved: false", "Approved: nope")
            text = text.replace("No comments provided", "Long words")
        """,
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 1
    assert len(opened_on(log)) == 2
    assert (awaiting.read_bytes(), awaiting.stat().st_mtime_ns) == before
    kept = Path(result.stderr.split("Your text is in ")[1].split()[0])
    assert "Long words" in kept.read_text() and "haytham:" not in kept.read_text()
    assert "Error: " in result.stderr and "haytham feedback demo idea-001 1" in result.stderr
    assert next_step(CheckpointManager(base), P, S).action == "review"


def test_a_file_with_a_mistake_opens_with_it_on_top_and_can_be_fixed(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    awaiting.write_text(awaiting.read_text().replace("Approved: false", "Approved: nope"))
    assert next_step(CheckpointManager(base), P, S).action == "fix"
    quit_env, log = logging_editor(tmp_path, "")
    broken = awaiting.read_bytes()
    quit_ = run(base, "feedback", P, S, "1", env=quit_env)
    assert quit_.exit_code == 1  # the file still has its mistake
    assert opened_on(log)[0].startswith("<!-- haytham:")
    assert awaiting.read_bytes() == broken
    fix_env, _ = logging_editor(tmp_path, 'text = text.replace("Approved: nope", "Approved: no")\n')
    fixed = run(base, "feedback", P, S, "1", env=fix_env)
    assert fixed.exit_code == 0, fixed.output
    assert awaiting.read_text().startswith("# User Feedback: Concept Expansion\n")
    assert next_step(CheckpointManager(base), P, S).action == "review"


# ---------------------------------------------- C: review walks every awaiting phase


def test_review_walks_every_phase_awaiting_review_oldest_first(base: Path, tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from haytham.run.demo import run_demo

    start = datetime(2024, 11, 24, 10, tzinfo=timezone.utc)
    for hours, (project, session) in enumerate([("zed", "late"), ("aaa", "early"), ("mid", "done")]):
        ticks = iter(start - timedelta(hours=hours) + timedelta(seconds=s) for s in range(10_000))
        manager = CheckpointManager(base, clock=lambda ticks=ticks: next(ticks))  # type: ignore[misc]
        run_demo(manager, session, review="manual" if session != "done" else "approve", project_id=project)
    nothing = run(base, "review", "mid", env={"EDITOR": "false"})
    assert (nothing.exit_code, nothing.output) == (0, "Nothing awaits review in mid\n")
    env, log = logging_editor(
        tmp_path,
        """
        text = text.replace("Reviewed: false", "Reviewed: yes").replace("Approved: false", "Approved: yes")
        """,
    )
    result = run(base, "review", env=env)
    assert result.exit_code == 0, result.output
    out = without_base_dir(result, base)
    assert out.startswith(
        f"2 phases await review in {base}\n[1/2] aaa/early phase 1 (Concept Expansion), finished "
    )
    assert out.index("[1/2] aaa/early") < out.index("[2/2] zed/late")  # the oldest first, not by name
    assert out.count("Reviewed: yes; approved: yes") == 2
    assert "Next: phase 2 (Market Research) is ready to run: run haytham resume zed late" in out
    assert out.endswith("Reviewed 2 of 2\n")
    assert len(opened_on(log)) == 2
    assert run(base, "review", env=env).output == f"Nothing awaits review in {base}\n"
    missing = run(base, "review", "nope")
    assert missing.exit_code == 1
    assert missing.output.startswith("Error: project 'nope' does not exist")


def test_review_of_one_session_reopens_after_a_mistake_and_exits_1_when_left(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    env, log = logging_editor(tmp_path, 'text = text.replace("Approved: false", "Approved: nope")\n')
    result = run(base, "review", P, S, env=env)
    assert result.exit_code == 1
    assert len(opened_on(log)) == 2
    assert "1 phase awaits review in demo/idea-001" in result.output
    assert "Reviewed 0 of 1; 1 left with a mistake, not saved" in result.output
    assert "Approved: nope" not in awaiting.read_text()


# ------------------------------------------------------ E: diff of two attempts


def test_diff_compares_two_attempts_of_a_phase(base: Path, awaiting: Path) -> None:
    assert run(base, "feedback", P, S, "1", "--reject", "--change", "Name the buyer").exit_code == 0
    assert run(base, "resume", P, S).exit_code == 0
    result = run(base, "diff", f"{P}/{S}:1#1", f"{P}/{S}:1#2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"--- {P}/{S}:1#1\n+++ {P}/{S}:1#2\n")
    assert "concept_expansion: changed" in result.output
    assert "+- Addressed: Name the buyer" in result.output
    data = run_json(base, "diff", f"{P}/{S}:1#1", f"{P}/{S}:1#2")
    assert [a["change"] for a in data["agents"]] == ["changed"]
    assert run_json(base, "diff", f"{P}/{S}:1#2", f"{P}/{S}:1#2")["same"] is True
    missing = run(base, "diff", f"{P}/{S}:1#1", f"{P}/{S}:1#3")
    assert missing.exit_code == 1
    assert missing.output == f"Error: phase 1 of {P}/{S} has no attempt 3 (it has 1, 2)\n"
    mixed = run(base, "diff", f"{P}/{S}:1#1", f"{P}/{S}")
    assert mixed.exit_code == 2
    assert "compare two of a kind" in mixed.output
    assert run(base, "diff", f"{P}/{S}:1", f"{P}/{S}:1#2").exit_code == 2
    assert run_json(base, "diff", f"{P}/{S}", f"{P}/{S}")["same"] is True  # the old forms still work


def bytes_editor(tmp_path: Path, body: str) -> dict[str, str | None]:
    """An $EDITOR that runs ``body`` on the file's bytes (``data``), in place, counting its
    openings in ``count`` (0 the first time)."""
    script = tmp_path / "edit_bytes.py"
    counter = tmp_path / "count"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\n"
        f"counter = Path({str(counter)!r})\ncount = int(counter.read_text()) if counter.exists() else 0\n"
        "counter.write_text(str(count + 1))\n"
        "if count > 4:\n    sys.exit(1)  # a loop: fail the test, not hang\n"
        "path = Path(sys.argv[1])\ndata = path.read_bytes()\n"
        + textwrap.dedent(body)
        + "path.write_bytes(data)\n"
    )
    script.chmod(0o755)
    return {"EDITOR": str(script), "VISUAL": None}


APPROVE = (
    b"data = data.replace(b'Reviewed: false', b'Reviewed: yes')\n"
    b"data = data.replace(b'Approved: false', b'Approved: yes')\n"
)


def test_an_editor_that_saves_a_bom_is_understood(base: Path, awaiting: Path, tmp_path: Path) -> None:
    """Issue 25, item 3: a BOM saved by the editor failed every editor review ("does not start
    with a '# User Feedback' title") while validate accepted the same file."""
    env = bytes_editor(tmp_path, APPROVE.decode() + "data = b'\\xef\\xbb\\xbf' + data\n")
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    assert "Reviewed: yes; approved: yes" in result.output
    assert "- Approved: yes" in awaiting.read_text("utf-8")


def test_an_editor_that_saves_latin1_reopens_on_the_line_and_saves_nothing_replaced(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    """A person's bytes are never replaced (issue 24, item 5): the editor's Latin-1 save
    reopens it with the line named; the UTF-8 save that follows is what is kept."""
    env = bytes_editor(
        tmp_path,
        APPROVE.decode()
        + "if count == 0:\n    data += b'\\n## Notes\\n\\ncaf\\xe9\\n'  # saved as Latin-1\n"
        + "else:  # reopened with the line named and the byte shown as U+FFFD: the person fixes it\n"
        + "    data = data.replace('caf\\ufffd'.encode(), 'caf\\xe9'.encode())\n",
    )
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "count").read_text() == "2"
    saved = awaiting.read_bytes()
    assert "café".encode() in saved and b"\xef\xbf\xbd" not in saved


def test_a_review_file_that_is_not_utf8_is_refused_before_the_editor_opens(
    base: Path, awaiting: Path, tmp_path: Path
) -> None:
    awaiting.write_bytes(awaiting.read_bytes() + b"\n## Notes\n\ncaf\xe9\n")
    before = awaiting.read_bytes()
    env = bytes_editor(tmp_path, APPROVE.decode())
    result = run(base, "feedback", P, S, "1", env=env)
    assert result.exit_code == 1, result.output
    assert "is not UTF-8" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "count").exists()
    assert awaiting.read_bytes() == before
