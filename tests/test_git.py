"""haytham in real git repositories: clean diffs, CRLF checkouts, auto-commit, the git CLI.

Every test makes its own repositories under tmp_path with the real ``git``; the machine's
git configuration never matters (``GIT_CONFIG_NOSYSTEM=1``, a temporary ``HOME``). The
helpers here are shared with tests/test_git_merge.py.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from haytham import CheckpointManager
from haytham.cli.git import COMMANDS, JSON_OUTPUT
from haytham.format import FEEDBACK
from haytham.format.workflow import IDEA_VALIDATION
from haytham.git.autocommit import AutoCommit, enable_autocommit
from haytham.git.merge import attribute_lines, driver_command, setup
from haytham.git.repository import GitError, path_log
from haytham.run.demo import DEMO_AGENTS, run_demo
from haytham.run.runner import PhaseRunner
from haytham.store.history import HISTORY_DIR

START = datetime(2024, 11, 24, 10, 0, 0, tzinfo=timezone.utc)
IDENTITY = ("t", "t@t")
P, S = "demo", "s-001"


class TickingClock:
    """A fixed clock that moves ``step`` seconds each time it is read."""

    def __init__(self, start: datetime = START, step: float = 1.0) -> None:
        self.now = start
        self.step = timedelta(seconds=step)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


pytestmark = pytest.mark.usefixtures("isolated_git")
"""Every test runs real git with no system or user configuration (conftest.py)."""


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -c user.name=t -c user.email=t@t ARGS`` in ``repo``."""
    result = subprocess.run(
        ["git", "-c", f"user.name={IDENTITY[0]}", "-c", f"user.email={IDENTITY[1]}", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if check:
        assert result.returncode == 0, f"git {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit_all(repo: Path, message: str) -> bool:
    """Commit every change in the work tree; False when there was nothing to commit."""
    git(repo, "add", "-A")
    if git(repo, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return False
    git(repo, "commit", "-q", "-m", message)
    return True


def numstat(repo: Path) -> dict[str, tuple[int, int]]:
    """``git diff --numstat`` of the last commit: path -> (added, deleted) lines."""
    out = git(repo, "diff", "--numstat", "--no-renames", "HEAD~1", "HEAD").stdout
    table = {}
    for line in out.splitlines():
        added, deleted, path = line.split("\t")
        table[path] = (int(added), int(deleted))
    return table


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` that git would see (lock files aside), by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts and p.name != ".haytham.lock"
    }


# ----------------------------------------------------------------- keyed line diffs


def keyed_lines(text: str) -> dict[tuple[str, ...], str]:
    """Each line of a haytham document under a key that names what it holds.

    ``- Label: value`` lines are keyed by section and label, table rows by their first
    cell, everything else by its own text (and how often it occurred before). Comparing
    two versions key by key says which lines' data changed, without any line diff.
    """
    keys: dict[tuple[str, ...], str] = {}
    section = ""
    seen: dict[tuple[str, str], int] = {}
    for line in text.split("\n")[:-1]:
        if line.startswith("#"):
            section = line if line.startswith("## ") else section
            key: tuple[str, ...] = ("heading", line)
        elif line.startswith("- ") and ": " in line:
            key = (section, line.split(": ", 1)[0])
        elif line.startswith("| ") and not line.startswith("| Phase |"):
            key = (section, "row", line.split("|")[1].strip())
        else:
            count = seen[(section, line)] = seen.get((section, line), 0) + 1
            key = (section, "line", line, str(count))
        assert key not in keys, f"two lines with the key {key}"
        keys[key] = line
    return keys


def changed_keys(old: str, new: str) -> set[tuple[str, ...]]:
    a, b = keyed_lines(old), keyed_lines(new)
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def expected_change(old: str, new: str) -> tuple[int, int]:
    """(added, deleted) lines when only the lines whose data changed are rewritten in place."""
    a, b = keyed_lines(old), keyed_lines(new)
    changed = sum(1 for k in a.keys() & b.keys() if a[k] != b[k])
    return changed + len(b.keys() - a.keys()), changed + len(a.keys() - b.keys())


def line_count(data: bytes) -> int:
    return data.count(b"\n")


# ---------------------------------------------------------------------- clean diffs

MANIFEST_MAY_CHANGE = {"- Last Updated", "- Status", "- History Head"}
"""Manifest metadata a checkpoint save may change (besides its row, Current Phase, Metrics)."""


@dataclasses.dataclass
class Step:
    label: str
    expected: dict[str, tuple[int, int]]
    actual: dict[str, tuple[int, int]]


class SaveRecorder:
    """Wraps a manager's save methods: commit after each call, compute what it should show."""

    SAVES = (
        "create_session",
        "save_agent_output",
        "save_checkpoint",
        "save_user_feedback",
        "update_feedback",
        "start_attempt",
    )

    def __init__(self, manager: CheckpointManager, repo: Path) -> None:
        self.manager = manager
        self.repo = repo
        self.steps: list[Step] = []
        self.lock = threading.Lock()  # phase 2's agents run in parallel threads
        for name in self.SAVES:
            setattr(manager, name, self._wrap(name, getattr(manager, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                before = tree_files(self.repo)
                result = method(*args, **kwargs)
                after = tree_files(self.repo)
                expected = self.expect(name, args, kwargs, before, after)
                committed = commit_all(self.repo, f"{name} {args[2:4]}")
                actual = numstat(self.repo) if committed else {}
                self.steps.append(Step(self.describe(name, args), expected, actual))
            return result

        return wrapper

    @staticmethod
    def describe(name: str, args: tuple[Any, ...]) -> str:
        if name == "create_session":
            return "create_session"
        if name in ("save_agent_output", "save_checkpoint"):
            return f"{name} phase {args[2]} {args[3]}"
        return f"{name} phase {args[2]}"

    def expect(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        before: dict[str, bytes],
        after: dict[str, bytes],
    ) -> dict[str, tuple[int, int]]:
        """The numstat this save must produce, from what the save is (not from git)."""
        session = self.manager.session_dir(args[0], args[1]).relative_to(self.repo).as_posix()
        manifest = f"{session}/session_manifest.md"
        expected: dict[str, tuple[int, int]] = {}

        def file_change(path: str) -> None:
            if path not in before:
                expected[path] = (line_count(after[path]), 0)
            elif path not in after:
                expected[path] = (0, line_count(before[path]))
            elif before[path] != after[path]:
                expected[path] = expected_change(before[path].decode(), after[path].decode())

        def checkpoint_written(phase_dir: str) -> None:
            file_change(f"{phase_dir}/checkpoint.md")
            history = f"{session}/{HISTORY_DIR}/"
            new_entries = [p for p in after if p.startswith(history) and p not in before]
            assert len(new_entries) == 1, f"{name} added {new_entries}"
            assert before[manifest] != after[manifest]
            file_change(new_entries[0])
            file_change(manifest)
            changed = changed_keys(before[manifest].decode(), after[manifest].decode())
            labels = {k[1] for k in changed if k[0] == "## Metadata"}
            assert {"- Last Updated", "- History Head"} <= labels <= MANIFEST_MAY_CHANGE, changed
            rows = {k[2] for k in changed if k[0] == "## Phase Status"}
            assert rows <= {str(args[2])}, changed  # only this phase's row
            assert {k[0] for k in changed} <= {
                "## Metadata",
                "## Phase Status",
                "## Current Phase",
                "## Metrics",
            }

        def review_written() -> None:
            """A saved review adds one ``Kind: review`` history entry (a blank, not yet reviewed
            file adds none) and moves the manifest: History Head, this phase's row (its
            lifecycle state) and Current Phase."""
            history = f"{session}/{HISTORY_DIR}/"
            new_entries = [p for p in after if p.startswith(history) and p not in before]
            if FEEDBACK.parse(after[f"{phase_dir}/user_feedback.md"].decode()).reviewed:
                assert len(new_entries) == 1, f"{name} added {new_entries}"
                assert "- Kind: review" in after[new_entries[0]].decode(), new_entries
                file_change(new_entries[0])
            else:
                assert new_entries == [], f"{name} added {new_entries}"
            file_change(manifest)
            changed = changed_keys(before[manifest].decode(), after[manifest].decode())
            labels = {k[1] for k in changed if k[0] == "## Metadata"}
            assert labels <= MANIFEST_MAY_CHANGE, changed
            assert {k[2] for k in changed if k[0] == "## Phase Status"} <= {str(args[2])}, changed
            assert {k[0] for k in changed} <= {"## Metadata", "## Phase Status", "## Current Phase"}

        if name == "create_session":
            expected[manifest] = (line_count(after[manifest]), 0)
            own_workflow = manifest.replace("session_manifest.md", "workflow.yaml")
            if own_workflow in after:  # the demo's workflow names its agents, so it is kept
                expected[own_workflow] = (line_count(after[own_workflow]), 0)
            if ".gitignore" not in before:  # base_dir/.gitignore, written once
                base_ignore = (self.manager.base_dir / ".gitignore").relative_to(self.repo).as_posix()
                expected[base_ignore] = (line_count(after[base_ignore]), 0)
            return expected
        phase_dir = self.manager.phase_dir(args[0], args[1], args[2]).relative_to(self.repo).as_posix()
        if name == "save_agent_output":
            file_change(f"{phase_dir}/{args[3]}.md")
        elif name in ("save_user_feedback", "update_feedback"):
            file_change(f"{phase_dir}/user_feedback.md")
            if before.get(f"{phase_dir}/user_feedback.md") != after.get(f"{phase_dir}/user_feedback.md"):
                review_written()
        elif name == "save_checkpoint":
            if before.get(f"{phase_dir}/checkpoint.md") != after.get(f"{phase_dir}/checkpoint.md"):
                checkpoint_written(phase_dir)
        elif name == "start_attempt":
            attempt = next(
                p.split("/")[-2] for p in after if p.startswith(f"{phase_dir}/attempts/") and p not in before
            )
            archived = [
                p
                for p in before
                if p.startswith(phase_dir + "/") and p.count("/") == phase_dir.count("/") + 1
            ]
            for path in archived:
                file_change(f"{phase_dir}/attempts/{attempt}/{path.rsplit('/', 1)[1]}")
                if not path.endswith("/checkpoint.md"):
                    file_change(path)  # outputs and feedback leave the phase directory
            checkpoint_written(phase_dir)
        assert {p for p in after.keys() | before.keys() if before.get(p) != after.get(p)} == set(expected), (
            name
        )
        return expected


def print_table(steps: list[Step]) -> None:
    """The numstat of every step, for a person reading ``pytest -s``."""
    for number, step in enumerate(steps, 1):
        print(f"{number:2}. {step.label}")
        for path, (added, deleted) in sorted(step.actual.items()):
            print(f"      +{added:<3} -{deleted:<3} {path.split('/sessions/')[-1]}")
        if not step.actual:
            print("      (no change, no commit)")


@pytest.fixture
def full_run(tmp_path: Path) -> tuple[Path, CheckpointManager, list[Step]]:
    """A demo session run to the end in a git repo (phase 1 sent back once), one commit per save."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("a repository that keeps haytham sessions\n", "utf-8")
    commit_all(repo, "start")
    manager = CheckpointManager(repo / "projects", clock=TickingClock())
    recorder = SaveRecorder(manager, repo)
    result = run_demo(manager, S, "mvp", "reject", project_id=P)
    assert result.status == "completed"
    return repo, manager, recorder.steps


def test_every_save_changes_only_the_lines_whose_data_changed(
    full_run: tuple[Path, CheckpointManager, list[Step]],
) -> None:
    _, manager, steps = full_run
    print_table(steps)
    for step in steps:
        assert step.actual == step.expected, step.label
    kinds = [s.label.split()[0] for s in steps]
    assert kinds.count("save_checkpoint") == 12  # in_progress and completed for 5 phases + phase 1 again
    assert kinds.count("start_attempt") == 1
    # the re-saves that change nothing (the runner's start of the re-opened attempt is a change:
    # start_attempt leaves it pending, not started)
    assert sum(1 for s in steps if not s.actual) >= 1
    # every file is LF with exactly one final newline
    for path, data in tree_files(manager.base_dir).items():
        assert b"\r" not in data, path
        assert data.endswith(b"\n") and not data.endswith(b"\n\n"), path


def test_saving_the_same_data_again_changes_no_byte_in_git(
    full_run: tuple[Path, CheckpointManager, list[Step]],
) -> None:
    repo, manager, steps = full_run
    head = git(repo, "rev-parse", "HEAD").stdout
    before = len(steps)
    for number in (1, 2, 7):
        checkpoint = manager.load_checkpoint(P, S, number)
        agents = []
        for run in checkpoint.agents:
            output = manager.load_agent_output(P, S, number, run.agent_name)
            agents.append(
                {
                    "agent_name": run.agent_name,
                    "status": run.status,
                    "input_tokens": output.input_tokens,
                    "output_tokens": output.output_tokens,
                    "cost": run.cost,
                    "duration": run.duration,
                }
            )
            manager.save_agent_output(
                P,
                S,
                number,
                run.agent_name,
                output.content,
                duration=output.duration,
                model=output.model,
                input_tokens=output.input_tokens,
                output_tokens=output.output_tokens,
                tools_used=list(output.tools_used),
                cost=output.cost,
            )
        manager.save_checkpoint(
            P,
            S,
            number,
            checkpoint.status,
            agents,
            retry_count=checkpoint.retry_count,
            execution_mode=checkpoint.execution_mode,
        )
    feedback = manager.load_feedback(P, S, 1)
    assert feedback is not None
    manager.save_user_feedback(
        P,
        S,
        1,
        feedback.reviewed,
        feedback.approved,
        feedback.comments,
        list(feedback.requested_changes),
        feedback.action,
        feedback.retry_count,
    )
    assert PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "completed"
    manager.load_session(P, S)
    assert len(steps) > before
    assert all(step.actual == {} for step in steps[before:])
    assert git(repo, "status", "--porcelain").stdout == ""
    assert git(repo, "rev-parse", "HEAD").stdout == head


def test_a_crlf_checkout_loads_and_validates_with_identical_values(
    full_run: tuple[Path, CheckpointManager, list[Step]], tmp_path: Path
) -> None:
    repo, manager, _ = full_run
    clone = tmp_path / "windows"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(repo), str(clone))
    checked_out = tree_files(clone / "projects")
    for path, data in checked_out.items():
        assert data.count(b"\n") == data.count(b"\r\n") > 0, path
    other = CheckpointManager(clone / "projects")

    def state(m: CheckpointManager) -> dict[str, Any]:
        loaded = m.load_session(P, S)
        loaded.pop("session_dir")
        return {
            "session": loaded,
            "manifest": m.load_manifest(P, S),
            "checkpoints": m.load_checkpoints(P, S),
            "outputs": m.get_phase_outputs(P, S),
            "feedback": {n: m.load_feedback(P, S, n) for n in (1, 2, 3, 6, 7)},
            "attempts": [(a.number, a.checkpoint, a.feedback, a.outputs) for a in m.load_attempts(P, S, 1)],
            "history": m.history(P, S),
            "approved": m.get_approved_phases(P, S),
        }

    assert state(other) == state(manager)
    assert other.validate_session(P, S) == []
    assert other.validate_paths() == []
    assert other.check(P, S) == []
    assert tree_files(clone / "projects") == checked_out  # reading rewrote nothing
    assert git(clone, "status", "--porcelain").stdout == ""


# ----------------------------------------------------------------------- auto-commit


def test_autocommit_commits_each_checkpoint_and_only_the_session(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "notes.txt").write_text("draft\n", "utf-8")
    (repo / "tracked.txt").write_text("v1\n", "utf-8")
    git(repo, "add", "tracked.txt")
    git(repo, "commit", "-q", "-m", "start")
    (repo / "tracked.txt").write_text("v2, not staged\n", "utf-8")
    git(repo, "add", "notes.txt")  # the user's staged work, unrelated to haytham
    manager = CheckpointManager(repo / "projects", clock=TickingClock())
    auto = AutoCommit(manager, repo, identity=IDENTITY)
    manager.create_session(P, S, "ada")
    runner = PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS)
    assert runner.run(P, S).status == "awaiting_review"
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True)
    assert runner.run(P, S).status == "completed"

    assert auto.last_error is None
    subjects = git(repo, "log", "--format=%s").stdout.splitlines()
    assert subjects[-1] == "start"
    assert subjects[:-1][::-1] == [  # exactly one commit per event worth one
        f"haytham: {P}/{S} phase 1 Concept Expansion finished, awaits review (attempt 1)",
        f"haytham: {P}/{S} phase 1 Concept Expansion approved (review of attempt 1)",
        *(
            f"haytham: {P}/{S} phase {n} {name} completed (attempt 1)"
            for n, name in [
                (2, "Market Research"),
                (3, "Niche Selection"),
                (6, "Validation"),
                (7, "Final Synthesis"),
            ]
        ),
    ]
    assert len(auto.commits) == 6
    assert git(repo, "diff", "--cached", "--name-only").stdout == "notes.txt\n"
    assert git(repo, "status", "--porcelain").stdout.splitlines() == [
        "A  notes.txt",
        " M tracked.txt",
    ]  # haytham's projects/.gitignore is committed with the session
    committed = set(git(repo, "log", "--name-only", "--format=").stdout.split())
    session = f"projects/{P}/sessions/{S}/"
    assert all(
        path.startswith(session) or path in ("tracked.txt", "projects/.gitignore") for path in committed
    )
    assert f"{session}phase_1_concept/user_feedback.md" in committed  # saved between checkpoints
    assert not any(path.endswith(".haytham.lock") for path in committed)
    assert [c.commit for c in path_log(manager.session_dir(P, S))] == auto.commits[::-1]


def test_autocommit_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path / "projects")
    with pytest.raises(GitError, match="not inside a git repository") as caught:
        enable_autocommit(manager)
    assert isinstance(caught.value, RuntimeError)


def test_autocommit_without_git_installed_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo")
    manager = CheckpointManager(repo / "projects")
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GitError, match="git is not installed"):
        AutoCommit(manager, repo)


def test_a_failed_auto_commit_never_fails_the_save_and_is_loud(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = init_repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n", "utf-8")
    hook.chmod(0o755)
    manager = CheckpointManager(repo / "projects", clock=TickingClock())
    auto = AutoCommit(manager, identity=IDENTITY)
    failed: list[Any] = []
    manager.on("commit_failed", failed.append)
    manager.create_session(P, S, "ada")
    path = manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "concept_expansion"}])
    assert path.is_file()
    assert manager.load_session(P, S)["phase_statuses"][1] == "completed"
    assert isinstance(auto.last_error, GitError)
    assert "policy: no commits today" in str(auto.last_error)
    assert str(auto.last_error).startswith(f"auto-commit of {P}/{S} ('haytham: {P}/{S} phase 1 ")
    assert "a checkpoint_saved callback raised" in caplog.text
    assert [(e.name, e.project_id, e.session_id, e.phase) for e in failed] == [("commit_failed", P, S, 1)]
    assert failed[0].data["error"] == str(auto.last_error) and auto.failures == [auto.last_error]
    hook.unlink()
    manager.save_checkpoint(P, S, 1, "failed", [{"agent_name": "concept_expansion"}], errors=["x"])
    assert auto.last_error is None and len(auto.failures) == 1
    assert git(repo, "status", "--porcelain", "--", "projects/demo").stdout == ""


# ------------------------------------------------------------------------------- CLI


def cli_group() -> click.Group:
    """The commands as the main ``haytham`` group will have them once registered."""
    group = click.Group("haytham")
    for command in COMMANDS:
        group.add_command(command)
    return group


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli_group(), list(args))


def test_git_setup_writes_attributes_and_config_once(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.png binary", "utf-8")  # no final newline
    first = invoke("git", "setup", "--repo", str(repo), "--base-dir", str(repo / "projects"))
    assert first.exit_code == 0, first.output
    assert "registered merge driver 'haytham'" in first.output
    text = (repo / ".gitattributes").read_text("utf-8")
    assert text.startswith("*.png binary\n\n# haytham:")
    assert text.endswith("\n".join(attribute_lines("projects")) + "\n")
    assert git(repo, "config", "--get", "merge.haytham.driver").stdout.strip() == driver_command()
    assert driver_command() == f"{sys.executable} -m haytham.cli.merge_driver %O %A %B %P"
    second = invoke("git", "setup", "--repo", str(repo), "--base-dir", str(repo / "projects"))
    assert second.exit_code == 0
    assert "already set up" in second.output
    assert (repo / ".gitattributes").read_text("utf-8") == text
    check = git(repo, "check-attr", "merge", "--", "projects/acme/sessions/s-1/session_manifest.md")
    assert check.stdout.strip().endswith("merge: haytham")
    assert setup(repo, "projects").changed is False


def test_git_setup_keeps_a_crlf_gitattributes_crlf(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_bytes(b"*.png binary\r\n")
    setup(repo, repo / "data" / "sessions")
    data = (repo / ".gitattributes").read_bytes()
    assert data.startswith(b"*.png binary\r\n\r\n# haytham:")
    assert data.count(b"\n") == data.count(b"\r\n") == 6
    assert b"data/sessions/*/history/changelog.md merge=haytham\r\n" in data


def test_git_setup_outside_a_repository_says_so(tmp_path: Path) -> None:
    result = invoke("git", "setup", "--repo", str(tmp_path))
    assert result.exit_code == 1
    assert "Error: " in result.output and "not inside a git repository" in result.output
    assert "Traceback" not in result.output


def test_merge_driver_is_hidden() -> None:
    result = invoke("git", "--help")
    assert "setup" in result.output and "merge-driver" not in result.output


def test_log_shows_the_session_commits(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = repo / "projects"
    manager = CheckpointManager(base, clock=TickingClock())
    AutoCommit(manager, identity=IDENTITY)
    manager.create_session(P, S, "ada")
    assert invoke("log", P, S, "--base-dir", str(base)).output == f"No commits touch {P}/{S} yet\n"
    manager.save_checkpoint(P, S, 1, "in_progress", [{"agent_name": "concept_expansion"}])  # no commit
    manager.save_checkpoint(P, S, 1, "failed", [{"agent_name": "concept_expansion"}], errors=["x"])
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "concept_expansion"}])
    (repo / "other.txt").write_text("x\n", "utf-8")
    commit_all(repo, "unrelated")

    result = invoke("log", P, S, "--base-dir", str(base))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(f"t  haytham: {P}/{S} phase 1 Concept Expansion completed (attempt 1)")
    data = json.loads(invoke("log", P, S, "--base-dir", str(base), "--json").output)
    assert [c["subject"] for c in data["commits"]] == [
        f"haytham: {P}/{S} phase 1 Concept Expansion completed (attempt 1)",
        f"haytham: {P}/{S} phase 1 Concept Expansion failed (attempt 1)",
    ]
    keys = {f"commits[].{k}" for k in data["commits"][0]} | set(data)
    assert keys == set(JSON_OUTPUT["log"])
    assert invoke("log", P, S, "--base-dir", str(base), "--limit", "1").output.count("\n") == 1
    missing = invoke("log", P, "nope", "--base-dir", str(base))
    assert missing.exit_code == 1 and "Error: session demo/nope does not exist" in missing.output


def test_log_outside_a_repository_is_one_error_line(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    CheckpointManager(base).create_session(P, S, "ada")
    result = invoke("log", P, S, "--base-dir", str(base))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
