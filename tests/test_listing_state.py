"""Every whole-tree view derives a session's state from its files, not from its manifest.

A review that arrives by hand, by ``git pull`` or from any program other than haytham
changes ``user_feedback.md`` and nothing else: the manifest's Status and Current Phase stay
as the last haytham write left them. ``haytham list`` (every filter, with the index off,
on, and warm), ``haytham prune`` and ``haytham stats`` must all see the review at once.

The store is made as a user makes it: the README's ``flow.yaml`` (its review gate is on the
last phase), ``haytham new`` and ``haytham resume`` in real processes, agents imported from
the current directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from workcount import WorkCounters

from haytham.cli import main as cli_main
from haytham.format.layout import FEEDBACK_FILE, MANIFEST_FILE
from haytham.store import index as _index
from haytham.store import scan

P = "acme"
FLOW = """\
name: due_diligence
modes:
  quick: [1, 2]
phases:
  - {number: 1, name: Gather, agents: [collector]}
  - {number: 2, name: Verdict, agents: [judge], review: true}
agents:
  collector: my_agents:collect
  judge: my_agents:judge
"""
AGENTS = """\
def collect(context):
    return "# Facts\\n\\nfound\\n"


def judge(context):
    return "# Verdict\\n\\ngo\\n"
"""


def haytham(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m haytham ARGS`` in ``cwd``, in a process of its own; it must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "haytham", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"haytham {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def awaiting_session(work: Path, session: str) -> Path:
    """A session of flow.yaml run to its last phase, which awaits review; its folder."""
    (work / "flow.yaml").write_text(FLOW, "utf-8")
    (work / "my_agents.py").write_text(AGENTS, "utf-8")
    haytham(work, "new", P, session, "--user", "ada", "--workflow", "flow.yaml")
    haytham(work, "resume", P, session)
    return work / "projects" / P / "sessions" / session


def approve_by_hand(session_dir: Path) -> None:
    """What a person does in an editor: the review file says reviewed and approved; the
    manifest is not touched."""
    path = session_dir / "phase_2_verdict" / FEEDBACK_FILE
    text = path.read_text("utf-8")
    assert "- Reviewed: false\n" in text and "- Approved: false\n" in text
    path.write_text(text.replace("- Reviewed: false", "- Reviewed: true").replace("false", "true"), "utf-8")


def listed(work: Path, *args: str) -> dict[str, str]:
    """``haytham list --json ARGS`` in a process of its own: session id -> status."""
    data = json.loads(haytham(work, "list", "--json", *args).stdout)
    return {s["session_id"]: s["status"] for s in data["sessions"]}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder to run haytham in, with ./projects as its base directory."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HAYTHAM_BASE_DIR", str(work / "projects"))
    return work


def test_a_review_written_by_hand_reaches_every_filter_of_list_at_once(work: Path) -> None:
    session = awaiting_session(work, "dd-1")
    manifest = (session / MANIFEST_FILE).read_bytes()
    assert listed(work, "--awaiting-review") == {"dd-1": "awaiting_review"}
    approve_by_hand(session)
    assert (session / MANIFEST_FILE).read_bytes() == manifest  # nothing but the review changed
    assert listed(work, "--awaiting-review") == {}
    assert listed(work, "--status", "awaiting_review") == {}
    assert listed(work, "--status", "completed") == {"dd-1": "completed"}
    assert listed(work, "--user", "ada") == {"dd-1": "completed"}
    assert listed(work, "--project", P) == {"dd-1": "completed"}
    plain = haytham(work, "list").stdout
    assert "completed" in plain and "awaiting_review" not in plain
    assert (session / MANIFEST_FILE).read_bytes() == manifest  # and reads never write


def test_a_review_that_arrives_by_git_pull_reaches_list_at_once(
    work: Path, tmp_path: Path, isolated_git: None
) -> None:
    def git(repo: Path, *args: str) -> None:
        identity = ("-c", "user.name=t", "-c", "user.email=t@t")
        subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)

    awaiting_session(work, "dd-1")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "phase 2 awaits review")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(work), str(other))
    assert listed(work, "--awaiting-review") == {"dd-1": "awaiting_review"}
    approve_by_hand(other / "projects" / P / "sessions" / "dd-1")  # the reviewer's clone
    git(other, "commit", "-q", "-am", "approve phase 2")
    git(work, "pull", "-q", str(other), "main")
    assert listed(work, "--awaiting-review") == {}
    assert listed(work, "--status", "completed") == {"dd-1": "completed"}


SESSIONS = 55
"""Past ``index.INDEX_MIN_SESSIONS``: a listing makes the index."""


def grow(session: Path, count: int) -> list[str]:
    """Copies of ``session`` beside it (each manifest naming its own id), ``count`` in all."""
    names = [session.name]
    for number in range(1, count):
        name = f"{session.name}-{number:02d}"
        target = session.parent / name
        shutil.copytree(session, target)
        manifest = target / MANIFEST_FILE
        manifest.write_text(
            manifest.read_text("utf-8").replace(f"Session ID: {session.name}", f"Session ID: {name}"), "utf-8"
        )
        names.append(name)
    return names


def invoke(*args: str) -> dict[str, str]:
    """``haytham list --json ARGS`` through click's runner (in this process, so that the
    index's racy window can be closed): session id -> status."""
    result = CliRunner().invoke(cli_main.cli, ["list", "--json", *args])
    assert result.exit_code == 0, result.output
    return {s["session_id"]: s["status"] for s in json.loads(result.stdout)["sessions"]}


def test_a_warm_index_never_hides_a_review_written_by_hand(
    work: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    session = awaiting_session(work, "dd")
    names = grow(session, SESSIONS)
    assert invoke("--awaiting-review") == dict.fromkeys(names, "awaiting_review")  # makes the index
    assert (work / "projects" / _index.INDEX_DIR).is_dir()
    counters.reset()
    assert invoke("--awaiting-review") == dict.fromkeys(names, "awaiting_review")  # from the index
    assert counters.opened == 0 and counters.parsed == 0
    approve_by_hand(session.parent / names[7])
    counters.reset()
    waiting = invoke("--awaiting-review")
    assert counters.parsed > 0  # the changed session was derived again
    assert names[7] not in waiting and len(waiting) == SESSIONS - 1
    assert invoke("--status", "completed") == {names[7]: "completed"}
    assert invoke("--status", "awaiting_review") == waiting
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    assert invoke("--status", "completed") == {names[7]: "completed"}  # what the files say


def test_stats_counts_sessions_by_their_derived_state(work: Path) -> None:
    session = awaiting_session(work, "dd-1")
    awaiting_session(work, "dd-2")
    approve_by_hand(session)
    data = json.loads(haytham(work, "stats", "--json").stdout)
    assert data["by_status"]["completed"] == 1 and data["by_status"]["awaiting_review"] == 1


@pytest.mark.parametrize("rule", [("--keep", "1"), ("--older-than", "0d")])
def test_prune_keeps_a_session_that_awaits_the_review_of_its_last_phase(
    work: Path, rule: tuple[str, str]
) -> None:
    awaiting = awaiting_session(work, "dd-1")
    newer = awaiting_session(work, "dd-2")
    approve_by_hand(newer)  # finished: the age rule may take it
    report = json.loads(haytham(work, "prune", *rule, "--json").stdout)
    assert awaiting.is_dir(), report
    kept = [s for s in report["skipped"] if s["session_id"] == "dd-1"]
    assert kept and "awaits review" in kept[0]["reason"]
    assert "dd-1" not in [r["session_id"] for r in report["removed"]]
    if rule[0] == "--older-than":
        assert not newer.exists()  # a finished session still goes


def test_prune_removes_an_awaiting_session_when_the_policy_includes_unfinished_ones(work: Path) -> None:
    awaiting = awaiting_session(work, "dd-1")
    awaiting_session(work, "dd-2")
    haytham(work, "prune", "--keep", "1", "--include-in-progress")
    assert not awaiting.exists()


def test_the_listing_and_the_manager_agree_on_every_session(work: Path) -> None:
    session = awaiting_session(work, "dd-1")
    approve_by_hand(session)
    from haytham import CheckpointManager

    manager = CheckpointManager(work / "projects")
    (summary,), issues = scan.list_sessions(manager.base_dir)
    state = manager.load_session(P, "dd-1")
    assert issues == []
    assert (summary.status, summary.current_phase, summary.current_state) == (
        state["status"],
        state["current_phase"],
        state["current_state"],
    )


def test_the_review_inbox_leaves_out_a_phase_approved_by_hand(work: Path, tmp_path: Path) -> None:
    approve_by_hand(awaiting_session(work, "dd-1"))
    awaiting_session(work, "dd-2")
    log = tmp_path / "opened.log"
    script = tmp_path / "approve.py"  # a real $EDITOR: it notes each opening, then approves
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n"
        f"with open({str(log)!r}, 'a') as log:\n    log.write(sys.argv[1] + '\\n')\n"
        "text = path.read_text().replace('Reviewed: false', 'Reviewed: true')\n"
        "path.write_text(text.replace('Approved: false', 'Approved: true'))\n"
    )
    script.chmod(0o755)
    environment = {**os.environ, "EDITOR": str(script), "VISUAL": ""}
    result = subprocess.run(
        [sys.executable, "-m", "haytham", "review"], cwd=work, capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 phase awaits review" in result.stdout
    assert "acme/dd-2 phase 2" in result.stdout and "acme/dd-1" not in result.stdout
    assert len(log.read_text().splitlines()) == 1  # the editor was opened once, for dd-2
    assert listed(work, "--awaiting-review") == {}
    assert listed(work, "--status", "completed") == {"dd-1": "completed", "dd-2": "completed"}
