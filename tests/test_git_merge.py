"""Merging haytham's files with real git: clones that diverge, then pull each other's work.

Each scenario runs ``git merge`` (or ``git pull --rebase``) on real clones of a bare
repository, with haytham's merge driver registered by ``haytham.git.merge.setup`` as
``python -m haytham.cli.merge_driver``. Below them, the pure merge functions are tested
on their own.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from test_git import IDENTITY, START, TickingClock, commit_all, git, init_repo, tree_files

from haytham import CheckpointManager, ProjectManager
from haytham.errors import DocumentError
from haytham.format.workflow import IDEA_VALIDATION
from haytham.git.autocommit import AutoCommit
from haytham.git.merge import merge_changelog, merge_latest, merge_manifest, run_driver, setup
from haytham.run.demo import DEMO_AGENTS
from haytham.run.runner import AgentContext, AgentResult, PhaseRunner
from haytham.store.clock import parse_timestamp

P, S = "acme", "s-001"
MANIFEST = f"projects/{P}/sessions/{S}/session_manifest.md"


def seeded_origin(tmp_path: Path, build: Callable[[Path], None]) -> Path:
    """A bare repository whose first commit holds what ``build`` wrote, set up for haytham."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = init_repo(tmp_path / "seed")
    build(seed / "projects")
    assert setup(seed, "projects").changed
    commit_all(seed, "seed")
    git(seed, "push", "-q", str(origin), "main")
    return origin


def clone(origin: Path, path: Path) -> Path:
    git(path.parent, "clone", "-q", str(origin), str(path))
    result = setup(path, "projects")  # once per clone: the driver's config is not cloned
    assert result.added_lines == () and result.config_changed
    return path


def pull(repo: Path, *options: str) -> tuple[int, str]:
    result = git(repo, "pull", *options, "origin", "main", check=False)
    return result.returncode, result.stdout + result.stderr


def failing_phase_3(context: AgentContext) -> AgentResult:
    raise TimeoutError("the search API timed out")


def session_with_phase_3_failed(base: Path) -> None:
    """Phase 1 approved, phase 2 completed, phase 3 failed (its agent timed out)."""
    manager = CheckpointManager(base, clock=TickingClock())
    manager.create_session(P, S, "ada")
    runner = PhaseRunner(manager, IDEA_VALIDATION, {**DEMO_AGENTS, "niche_selector": failing_phase_3})
    assert runner.run(P, S).status == "awaiting_review"
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=True)
    assert runner.run(P, S).status == "failed"


def block_time(block: str) -> datetime:
    return parse_timestamp(block.split()[1])


def clock_at(seconds: float) -> TickingClock:
    return TickingClock(START + timedelta(seconds=seconds))


def assert_session_sound(manager: CheckpointManager) -> None:
    assert manager.validate_session(P, S) == []
    assert manager.check(P, S) == []


# ------------------------------------------------------------------- scenarios


def test_runner_advances_phase_3_on_one_clone_while_phase_2_is_approved_on_another(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, session_with_phase_3_failed)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")

    runner_side = CheckpointManager(a / "projects", clock=clock_at(100))
    AutoCommit(runner_side, identity=IDENTITY)
    assert PhaseRunner(runner_side, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "completed"
    git(a, "push", "-q", "origin", "main")

    reviewer = CheckpointManager(b / "projects", clock=clock_at(101))
    reviewer.save_user_feedback(P, S, 2, reviewed=True, approved=True, comments="Numbers check out.")
    commit_all(b, "review phase 2")
    code, output = pull(b, "--no-rebase")
    assert code == 0, output
    assert "CONFLICT" not in output

    merged = CheckpointManager(b / "projects")
    state = merged.load_session(P, S)
    assert state["status"] == "completed"
    assert state["completed_phases"] == [1, 2, 3, 6, 7]
    assert merged.get_approved_phases(P, S) == [1, 2]
    feedback = merged.load_feedback(P, S, 2)
    assert feedback is not None and feedback.comments == "Numbers check out."
    assert_session_sound(merged)
    assert git(b, "status", "--porcelain").stdout == ""


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_a_retry_on_one_clone_and_progress_on_another_merge_the_manifest(tmp_path: Path, how: str) -> None:
    """Both sides change the manifest: the driver merges rows, totals and history head."""
    origin = seeded_origin(tmp_path, session_with_phase_3_failed)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")

    runner_side = CheckpointManager(a / "projects", clock=clock_at(100))
    AutoCommit(runner_side, identity=IDENTITY)
    assert PhaseRunner(runner_side, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "completed"
    git(a, "push", "-q", "origin", "main")

    # on b a reviewer sends phase 2 back and its agents run again: attempt 2
    other = CheckpointManager(b / "projects", clock=clock_at(100.5))
    AutoCommit(other, identity=IDENTITY)
    other.save_user_feedback(
        P,
        S,
        2,
        reviewed=True,
        approved=False,
        requested_changes=["Add EU numbers"],
        action="retry",
        retry_count=1,
    )
    assert other.start_attempt(P, S, 2) == 2
    agents = []
    for name in ("market_intelligence", "competitor_analysis"):
        other.save_agent_output(
            P,
            S,
            2,
            name,
            f"# {name}, attempt 2\n\nWith EU numbers.\n",
            input_tokens=700,
            output_tokens=90,
            cost=0.004,
        )
        agents.append(
            {"agent_name": name, "input_tokens": 700, "output_tokens": 90, "cost": 0.004, "duration": 2.0}
        )
    other.save_checkpoint(P, S, 2, "completed", agents, retry_count=1, execution_mode="parallel")
    expected_head_b = other.load_manifest(P, S).history_head

    code, output = pull(b, how)
    assert code == 0, output
    assert "CONFLICT" not in output
    assert "Auto-merging " + MANIFEST in output or how == "--rebase"

    merged = CheckpointManager(b / "projects")
    # Phases 3.. came from a, built on phase 2's first attempt; b brought the second. They are
    # stale now: validate warns (no error), naming phase 2; the manifest's rows catch up at
    # the next write, which doctor --fix makes.
    issues = merged.validate_session(P, S)
    assert [i for i in issues if i.severity == "error"] == []
    stale_warnings = [i.message for i in issues if i.field == "Built From"]
    assert stale_warnings == [
        f"phase {n} is stale (built on phase 2, which changed since); run haytham resume to run it again"
        for n in (3, 6, 7)
    ]
    assert all("haytham doctor --fix" in i.message for i in issues if i.field == "Phase Status")
    assert [f.kind for f in merged.check(P, S) if f.kind == "stale_phase"] == ["stale_phase"] * 3
    state = merged.load_session(P, S)
    assert state["status"] == "in_progress"
    assert state["stale_phases"] == {3: [2], 6: [2], 7: [2]}
    assert "Phase Status" in [i.field for i in merged.validate_session(P, S)]  # reads never write
    merged.repair(P, S)  # haytham doctor --fix
    assert [i.field for i in merged.validate_session(P, S)] == ["Built From"] * 3  # the repair wrote the rows
    assert merged.load_checkpoint(P, S, 2).retry_count == 1
    assert [a.number for a in merged.load_attempts(P, S, 2)] == [1, 2]
    assert merged.load_checkpoint(P, S, 3).status == "completed"
    totals = merged.load_manifest(P, S).metrics
    checkpoints = merged.load_checkpoints(P, S).values()
    assert totals.total_tokens == sum(c.total_tokens or 0 for c in checkpoints)
    entries = merged.history(P, S)
    heads = {runner_side.load_manifest(P, S).history_head, expected_head_b}
    newest = max((e for e in entries if e.entry_id in heads), key=lambda e: e.timestamp)
    assert merged.load_manifest(P, S).history_head == newest.entry_id
    # the load wrote the stale rows into the manifest: the only change in the tree
    assert git(b, "status", "--porcelain").stdout == f" M {MANIFEST}\n"


def test_the_manifest_merge_is_the_same_from_both_sides(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, session_with_phase_3_failed)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    runner_side = CheckpointManager(a / "projects", clock=clock_at(100))
    assert PhaseRunner(runner_side, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "completed"
    commit_all(a, "run")
    recount = CheckpointManager(b / "projects", clock=clock_at(200))
    recount.save_checkpoint(
        P,
        S,
        2,
        "completed",
        [
            {"agent_name": "market_intelligence", "tokens": 5},
            {"agent_name": "competitor_analysis", "tokens": 6},
        ],
        execution_mode="parallel",
        name="recount",
        reason="the tokens were counted again",
    )
    commit_all(b, "recount phase 2")
    git(a, "push", "-q", "origin", "main:from-a")
    git(b, "push", "-q", "origin", "main:from-b")
    for repo, theirs in ((a, "from-b"), (b, "from-a")):
        git(repo, "fetch", "-q", "origin")
        result = git(repo, "merge", "--no-edit", f"origin/{theirs}", check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    assert (a / MANIFEST).read_bytes() == (b / MANIFEST).read_bytes()
    assert_session_sound(CheckpointManager(a / "projects"))


def test_two_sessions_of_one_project_on_two_clones_merge_cleanly(tmp_path: Path) -> None:
    project: dict[str, str] = {}

    def build(base: Path) -> None:
        project.update(
            ProjectManager(base, clock=TickingClock()).create_project("ada", "Bread by bike", "Bread")
        )

    origin = seeded_origin(tmp_path, build)
    project_id = project["project_id"]
    finished: dict[str, str] = {}
    for name, offset in (("a", 100.0), ("b", 100.5)):  # interleaved clocks
        repo = clone(origin, tmp_path / name)
        manager = ProjectManager(repo / "projects", clock=clock_at(offset))
        AutoCommit(manager.checkpoints, identity=IDENTITY)
        session_id = manager.start_session(project_id)["session_id"]
        runner = PhaseRunner(manager.checkpoints, IDEA_VALIDATION, DEMO_AGENTS)
        assert runner.run(project_id, session_id).status == "awaiting_review"
        manager.checkpoints.save_user_feedback(project_id, session_id, 1, reviewed=True, approved=True)
        assert runner.run(project_id, session_id).status == "completed"
        manager.complete_session(project_id, session_id, f"# Requirements from {name}\r\n")
        commit_all(repo, f"session on {name}")
        finished[name] = session_id
    a, b = tmp_path / "a", tmp_path / "b"
    changelog_a = (a / "projects" / project_id / "history" / "changelog.md").read_text("utf-8")
    changelog_b = (b / "projects" / project_id / "history" / "changelog.md").read_text("utf-8")

    git(a, "push", "-q", "origin", "main")
    code, output = pull(b, "--no-rebase")
    assert code == 0, output
    assert "CONFLICT" not in output
    git(b, "push", "-q", "origin", "main")
    code, output = pull(a, "--no-rebase")
    assert code == 0, output
    assert tree_files(a) == tree_files(b)

    changelog = (b / "projects" / project_id / "history" / "changelog.md").read_text("utf-8")
    blocks = re.split(r"\n(?=## )", changelog)
    first = re.split(r"\n(?=## )", changelog_a)
    added = sorted(set(first[2:]) | set(re.split(r"\n(?=## )", changelog_b)[2:]), key=block_time)
    assert blocks[:2] == first[:2]  # the heading and "Project created"
    assert blocks[2:] == added  # every block whole, in time order
    assert [b.split(" — ")[1].split("\n")[0] for b in blocks[2:]] == [
        "Session started",
        "Session started",
        "Session completed",
        "Session completed",
    ]
    manager = ProjectManager(b / "projects")
    versions = manager.list_requirements(project_id)
    assert [Path(v["path"]).read_bytes() for v in versions] == [
        b"# Requirements from a\r\n",
        b"# Requirements from b\r\n",
    ]
    latest = b / "projects" / project_id / "outputs" / "latest_requirements.md"
    assert latest.read_bytes() == b"# Requirements from b\r\n"  # b completed half a second later
    status = manager.get_project_status(project_id)
    assert status["session_count"] == 2 and status["latest_version"] == 2
    assert {s["status"] for s in status["sessions"]} == {"completed"}
    # the sessions only: validate_paths() of the whole tree takes history/changelog.md for a
    # history entry (haytham.store.session_files.kind_of), with or without git
    assert CheckpointManager(b / "projects").validate_paths([b / "projects" / project_id / "sessions"]) == []
    assert git(b, "log", "--format=%H", "--", f"projects/{project_id}/project.yaml").stdout.count("\n") == 1


def test_two_sessions_merge_cleanly_with_pull_rebase(tmp_path: Path) -> None:
    project: dict[str, str] = {}

    def build(base: Path) -> None:
        project.update(
            ProjectManager(base, clock=TickingClock()).create_project("ada", "Bread by bike", "Bread")
        )

    origin = seeded_origin(tmp_path, build)
    project_id = project["project_id"]
    for name, offset in (("a", 100.0), ("b", 99.5)):  # b's work comes first in time
        repo = clone(origin, tmp_path / name)
        manager = ProjectManager(repo / "projects", clock=clock_at(offset))
        session_id = manager.start_session(project_id)["session_id"]
        manager.complete_session(project_id, session_id, f"from {name}\n")
        commit_all(repo, f"session on {name}")
    git(tmp_path / "a", "push", "-q", "origin", "main")
    code, output = pull(tmp_path / "b", "--rebase")
    assert code == 0, output
    outputs = tmp_path / "b" / "projects" / project_id / "outputs"
    assert (outputs / "latest_requirements.md").read_text("utf-8") == "from a\n"
    changelog = (outputs.parent / "history" / "changelog.md").read_text("utf-8")
    times = re.findall(r"^## (\S+) — ", changelog, re.MULTILINE)
    assert times == sorted(times, key=parse_timestamp) and len(times) == 5


def test_the_driver_reads_the_other_sides_history_entries_from_its_branch(tmp_path: Path) -> None:
    """During a merge only our side is in the work tree: theirs' entries come from its commit."""
    repo = init_repo(tmp_path / "repo")
    CheckpointManager(repo / "projects", clock=TickingClock()).create_session(P, S, "ada")
    setup(repo, "projects")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "theirs")
    CheckpointManager(repo / "projects", clock=clock_at(100)).save_checkpoint(P, S, 2, "completed", [])
    manifest = repo / MANIFEST
    # a hand edit makes theirs look updated last, although its history entry is older
    manifest.write_text(manifest.read_text("utf-8").replace("10:01:42Z", "10:59:00Z", 1), "utf-8")
    assert "- Last Updated: 2024-11-24T10:59:00Z" in manifest.read_text("utf-8")
    commit_all(repo, "theirs")
    git(repo, "checkout", "-q", "main")
    ours = CheckpointManager(repo / "projects", clock=clock_at(500))
    ours.save_checkpoint(P, S, 3, "completed", [])
    ours_head = ours.load_manifest(P, S).history_head
    commit_all(repo, "ours")
    result = git(repo, "merge", "--no-edit", "theirs", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    merged = CheckpointManager(repo / "projects").load_manifest(P, S)
    assert merged.history_head == ours_head  # the newer entry, found by its file name's time
    assert merged.last_updated == "2024-11-24T10:59:00Z"


def test_the_same_session_id_created_by_two_people_is_a_conflict(tmp_path: Path) -> None:
    origin = seeded_origin(tmp_path, lambda base: ProjectManager(base))
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    for repo, user in ((a, "ada"), (b, "bob")):
        CheckpointManager(repo / "projects", clock=TickingClock()).create_session(P, S, user)
        commit_all(repo, f"{user} starts {S}")
    git(a, "push", "-q", "origin", "main")
    code, output = pull(b, "--no-rebase")
    assert code == 1
    assert f"haytham: cannot merge {MANIFEST} automatically:" in output
    assert "User ID is 'bob' on our side and 'ada' on theirs" in output
    assert f"CONFLICT (add/add): Merge conflict in {MANIFEST}" in output
    text = (b / MANIFEST).read_text("utf-8")
    assert "<<<<<<< ours\n- User ID: bob\n=======\n- User ID: ada\n>>>>>>> theirs\n" in text
    assert text.count("<<<<<<<") == 1
    assert git(b, "status", "--porcelain").stdout.splitlines() == [f"AA {MANIFEST}"]


def test_two_different_reviews_of_one_phase_attempt_conflict(tmp_path: Path) -> None:
    def build(base: Path) -> None:
        manager = CheckpointManager(base, clock=TickingClock())
        manager.create_session(P, S, "ada")
        assert PhaseRunner(manager, IDEA_VALIDATION, DEMO_AGENTS).run(P, S).status == "awaiting_review"

    origin = seeded_origin(tmp_path, build)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    CheckpointManager(a / "projects").save_user_feedback(
        P, S, 1, reviewed=True, approved=True, comments="Ship it."
    )
    commit_all(a, "approve")
    CheckpointManager(b / "projects").save_user_feedback(
        P, S, 1, reviewed=True, approved=False, comments="Too vague.", action="retry", retry_count=1
    )
    commit_all(b, "send back")
    git(a, "push", "-q", "origin", "main")
    code, output = pull(b, "--no-rebase")
    feedback = f"projects/{P}/sessions/{S}/phase_1_concept/user_feedback.md"
    assert code == 1
    assert f"CONFLICT (content): Merge conflict in {feedback}" in output
    # git's own merge handles the review file; the driver merges only the manifest, which both
    # reviews updated (their rows and history heads), and it merged without a conflict
    assert (
        f"CONFLICT (content): Merge conflict in projects/{P}/sessions/{S}/session_manifest.md" not in output
    )
    assert not any("haytham" in line and "user_feedback" in line for line in output.splitlines())
    status = git(b, "status", "--porcelain").stdout.splitlines()
    # a's review entry arrives beside b's own (each review is a history entry); only the
    # review file itself conflicts
    assert [line for line in status if not line.startswith("A  ")] == [f"UU {feedback}"]
    assert [line.split("/")[-2] for line in status if line.startswith("A  ")] == ["history"]
    text = (b / feedback).read_text("utf-8")
    assert "<<<<<<< HEAD" in text and "Too vague." in text and "Ship it." in text


# -------------------------------------------------------------- pure merges


def manifests(
    tmp_path: Path,
    ours: Callable[[CheckpointManager], object],
    theirs: Callable[[CheckpointManager], object],
    clocks: tuple[float, float] = (100, 100.5),
) -> tuple[str, str, str]:
    """The manifest texts of a base session and of two copies changed by ``ours``/``theirs``."""
    base = tmp_path / "base"
    manager = CheckpointManager(base, clock=TickingClock())
    manager.create_session(P, S, "ada")
    manager.save_checkpoint(
        P, S, 1, "completed", [{"agent_name": "concept_expansion", "tokens": 100, "cost": 0.01}]
    )
    texts = [(base / P / "sessions" / S / "session_manifest.md").read_text("utf-8")]
    for name, change, offset in (("ours", ours, clocks[0]), ("theirs", theirs, clocks[1])):
        shutil.copytree(base, tmp_path / name)
        change(CheckpointManager(tmp_path / name, clock=clock_at(offset)))
        texts.append((tmp_path / name / P / "sessions" / S / "session_manifest.md").read_text("utf-8"))
    return texts[0], texts[1], texts[2]


def save(
    phase: int, status: str, tokens: int = 10, **kwargs: object
) -> Callable[[CheckpointManager], object]:
    agent = {1: "concept_expansion", 2: "market_intelligence", 3: "niche_selector"}[phase]
    return lambda m: m.save_checkpoint(
        P, S, phase, status, [{"agent_name": agent, "tokens": tokens}], **kwargs
    )  # type: ignore[arg-type]


def row(text: str, phase: int) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {phase} |"))


def test_disjoint_progress_merges_rows_status_current_and_exact_totals(tmp_path: Path) -> None:
    base, ours, theirs = manifests(tmp_path, save(2, "completed", 200), save(3, "in_progress", 30))
    text, conflicts = merge_manifest(base, ours, theirs)
    assert conflicts == []
    assert row(text, 2) == row(ours, 2) and row(text, 3) == row(theirs, 3)
    assert "- Total Tokens: 330\n" in text  # 100 + 200 + 30: the base plus both sides' changes
    assert "## Current Phase\n- Phase: 3\n- Name: Niche Selection\n- Status: in_progress\n" in text
    assert merge_manifest(base, theirs, ours)[0] == text  # the same from either side


def test_a_row_changed_on_both_sides_goes_to_the_one_further_along(tmp_path: Path) -> None:
    base, ours, theirs = manifests(tmp_path, save(2, "in_progress"), save(2, "completed"))
    text, conflicts = merge_manifest(base, ours, theirs)
    assert conflicts == [] and row(text, 2) == row(theirs, 2)
    assert merge_manifest(base, theirs, ours)[0] == text
    # same status: the later completion wins
    base, ours, theirs = manifests(
        tmp_path / "2", save(2, "completed", 5), save(2, "completed", 7), (300, 100)
    )
    text, _ = merge_manifest(base, ours, theirs)
    assert row(text, 2) == row(ours, 2)
    assert "- Total Tokens: 105\n" in text  # the same phase on both sides: the side further along


def test_a_row_changed_on_one_side_only_takes_that_side_even_backwards(tmp_path: Path) -> None:
    """A retry moves a completed phase back to pending: one side's change is the truth."""
    base, ours, theirs = manifests(tmp_path, lambda m: m.start_attempt(P, S, 1), save(2, "completed"))
    text, conflicts = merge_manifest(base, ours, theirs)
    assert conflicts == []
    assert row(text, 1) == row(ours, 1) and "| pending |" in row(text, 1)
    assert "## Current Phase\n- Phase: 1\n" in text


def test_history_head_is_the_newer_entry(tmp_path: Path) -> None:
    base, ours, theirs = manifests(tmp_path, save(2, "completed"), save(3, "completed"), (500, 100))
    head = re.compile(r"- History Head: (\w+)")
    ours_head, theirs_head = head.findall(ours)[0], head.findall(theirs)[0]
    assert head.findall(merge_manifest(base, ours, theirs)[0]) == [ours_head]  # by Last Updated
    times = {
        ours_head: datetime(2024, 1, 1, tzinfo=timezone.utc),
        theirs_head: datetime(2024, 1, 2, tzinfo=timezone.utc),
    }
    text, _ = merge_manifest(base, ours, theirs, entry_time=times.get)
    assert head.findall(text) == [theirs_head]  # by the entries' own times when they are known


def test_identity_contradictions_are_marked_and_reported(tmp_path: Path) -> None:
    base, ours, _ = manifests(tmp_path, save(2, "completed"), save(2, "completed"))
    theirs = ours.replace("- Execution Mode: mvp", "- Execution Mode: full").replace(
        "- User ID: ada", "- User ID: bob"
    )
    text, conflicts = merge_manifest(base, ours, theirs)
    assert conflicts == [
        "User ID is 'ada' on our side and 'bob' on theirs",
        "Execution Mode is 'mvp' on our side and 'full' on theirs",
    ]
    assert "<<<<<<< ours\n- User ID: ada\n=======\n- User ID: bob\n>>>>>>> theirs\n" in text
    assert "<<<<<<< ours\n- Execution Mode: mvp\n=======\n- Execution Mode: full\n>>>>>>> theirs\n" in text


def test_workflow_type_changed_on_one_side_is_taken_but_not_on_both(tmp_path: Path) -> None:
    base, ours, theirs = manifests(tmp_path, save(2, "completed"), save(3, "completed"))
    renamed = theirs.replace("- Workflow Type: idea_validation", "- Workflow Type: idea_validation_v2")
    assert "idea_validation_v2" in merge_manifest(base, ours, renamed)[0]
    other = ours.replace("- Workflow Type: idea_validation", "- Workflow Type: other")
    _, conflicts = merge_manifest(base, other, renamed)
    assert conflicts == ["Workflow Type is 'other' on our side and 'idea_validation_v2' on theirs"]


def test_equal_sides_and_unreadable_sides(tmp_path: Path) -> None:
    base, ours, _ = manifests(tmp_path, save(2, "completed"), save(3, "completed"))
    assert merge_manifest("", ours, ours) == (ours, [])
    assert merge_manifest(base, ours, base) == (ours, [])
    with pytest.raises(DocumentError):
        merge_manifest(base, ours, "# Session Manifest\n\nnot a manifest\n")


def test_the_driver_falls_back_to_a_line_merge_for_unreadable_manifests(tmp_path: Path) -> None:
    base, ours, _ = manifests(tmp_path, save(2, "completed"), save(3, "completed"))
    files = {}
    for name, text in (("O", base), ("A", ours), ("B", "broken\n")):
        files[name] = tmp_path / name
        files[name].write_text(text, "utf-8")
    result = run_driver(str(files["O"]), str(files["A"]), str(files["B"]), MANIFEST)
    assert result.conflicts and "could not read one side" in result.conflicts[0]
    assert b"<<<<<<< ours:" in files["A"].read_bytes()


ENTRY_POINTS = (
    ["-m", "haytham.cli.merge_driver"],  # what `haytham git setup` registers
    ["-m", "haytham.cli.git", "merge-driver"],  # what clones set up by an earlier haytham run
)


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=["merge_driver", "cli.git"])
def test_both_registered_driver_commands_answer_git_alike(tmp_path: Path, entry: list[str]) -> None:
    # git reads only the exit code, %A and standard error: 0 and the merge, 1 and conflict
    # markers explained, 2 and one line when the files cannot be merged at all.
    base, ours, theirs = manifests(tmp_path, save(2, "completed"), save(3, "completed"))

    def drive(a: str, b: str, *names: str) -> subprocess.CompletedProcess[str]:
        for name, text in (("O", base), ("A", a), ("B", b)):
            (tmp_path / name).write_text(text, "utf-8")
        args = [str(tmp_path / n) for n in names or ("O", "A", "B")]
        return subprocess.run(
            [sys.executable, *entry, *args, MANIFEST], capture_output=True, text=True, check=False
        )

    clean = drive(ours, theirs)
    assert (clean.returncode, clean.stderr) == (0, "")
    assert (tmp_path / "A").read_text("utf-8") == merge_manifest(base, ours, theirs)[0]
    conflict = drive(ours, "broken\n")
    assert conflict.returncode == 1
    assert conflict.stderr.startswith(f"haytham: cannot merge {MANIFEST} automatically:\n")
    assert "could not read one side" in conflict.stderr
    assert "<<<<<<< ours:" in (tmp_path / "A").read_text("utf-8")
    missing = drive(ours, theirs, "O", "A", "gone")
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"haytham: cannot merge {MANIFEST}: ")
    assert missing.stderr.count("\n") == 1


def test_the_driver_entry_point_refuses_other_than_four_arguments() -> None:
    driver = [sys.executable, "-m", "haytham.cli.merge_driver"]
    done = subprocess.run([*driver, "a", "b"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: python -m haytham.cli.merge_driver BASE OURS THEIRS PATH")


CHANGELOG = (
    "# Changelog: Bread\n\n## 2024-11-24T10:00:01Z — Project created\n- Project: bread-1\n- Mode: mvp\n"
)


def block(time: str, event: str, session: str) -> str:
    fields = f"- Session: {session}\n- Workflow: idea_validation\n- Mode: mvp\n"
    return f"\n## 2024-11-24T10:{time}Z — {event}\n{fields}"


def test_changelog_blocks_are_kept_whole_and_ordered_by_time() -> None:
    ours = CHANGELOG + block("00:05", "Session started", "a") + block("00:09", "Session completed", "a")
    theirs = CHANGELOG + block("00:04", "Session started", "b") + block("00:07", "Session completed", "b")
    text, conflicts = merge_changelog(CHANGELOG, ours, theirs)
    assert conflicts == []
    assert text == (
        CHANGELOG
        + block("00:04", "Session started", "b")
        + block("00:05", "Session started", "a")
        + block("00:07", "Session completed", "b")
        + block("00:09", "Session completed", "a")
    )
    assert merge_changelog(CHANGELOG, theirs, ours)[0] == text
    assert merge_changelog(CHANGELOG, ours, CHANGELOG) == (ours, [])
    edited = ours.replace("- Mode: mvp", "- Mode: full", 1)
    _, conflicts = merge_changelog(CHANGELOG, edited, theirs)
    assert conflicts and "older entry" in conflicts[0]


def test_latest_requirements_follow_the_newest_version() -> None:
    ranks = {b"old": 0, b"a": 1, b"b": 2}
    assert merge_latest(b"old", b"a", b"b", ranks.get) == (b"b", [])
    assert merge_latest(b"old", b"b", b"a", ranks.get) == (b"b", [])
    assert merge_latest(b"old", b"old", b"a", ranks.get) == (b"a", [])
    text, conflicts = merge_latest(b"old", b"a", b"unknown", ranks.get)
    assert conflicts and text == b"<<<<<<< ours\na\n=======\nunknown\n>>>>>>> theirs\n"
