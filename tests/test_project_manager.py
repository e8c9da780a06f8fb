"""ProjectManager on real files: project.yaml, sessions, versioned requirements, changelog."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

import haytham
from haytham import CheckpointManager
from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    ProjectNotFoundError,
    SessionNotFoundError,
    UnsafeNameError,
)
from haytham.project import ProjectManager
from haytham.store.names import check_name

IDEA = "A marketplace that matches freelance translators with small publishers."
START = datetime(2024, 11, 24, 10, 0, 0, tzinfo=timezone.utc)


class TickingClock:
    """A clock that moves one second each time it is read, so every event is ordered."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def manager(base: Path) -> ProjectManager:
    return ProjectManager(base, clock=TickingClock())


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (lock files aside) with its bytes, None for directories."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.name != ".haytham.lock"
    }


def changelog(base: Path, project_id: str) -> str:
    return (base / project_id / "history" / "changelog.md").read_text("utf-8")


# ------------------------------------------------------------------ projects


def test_create_project_writes_project_yaml_and_directories(manager: ProjectManager, base: Path) -> None:
    project = manager.create_project("alice", IDEA, project_name="Translator Match", execution_mode="full")
    directory = base / project["project_id"]
    text = (directory / "project.yaml").read_text("utf-8")
    assert yaml.safe_load(text) == {"format": 1, **project}
    assert list(project) == [
        "project_id",
        "user_id",
        "project_name",
        "startup_idea",
        "execution_mode",
        "workflow_type",
        "status",
        "created",
        "last_updated",
    ]
    assert project["user_id"] == "alice"
    assert project["project_name"] == "Translator Match"
    assert project["startup_idea"] == IDEA
    assert project["execution_mode"] == "full"
    assert project["workflow_type"] == "idea_validation"
    assert project["status"] == "active"
    assert project["created"] == project["last_updated"] == "2024-11-24T10:00:01Z"
    assert all((directory / sub).is_dir() for sub in ("sessions", "outputs", "history"))
    assert manager.get_project(project["project_id"]) == project


@pytest.mark.parametrize(
    "name",
    [
        "My Café App!",
        "???",
        "CON",
        "x" * 300,
        "  ..dots..//slashes\n## and lines ",
        "日本語のアイデア",
        "a.b",
    ],
)
def test_generated_project_ids_are_safe_names(manager: ProjectManager, name: str) -> None:
    first = manager.create_project("alice", IDEA, project_name=name)["project_id"]
    second = manager.create_project("alice", IDEA, project_name=name)["project_id"]
    for project_id in (first, second):
        assert check_name("project_id", project_id) == project_id
        assert re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{8}", project_id)
    assert first != second


def test_project_name_defaults_to_a_title_from_the_idea(manager: ProjectManager) -> None:
    project = manager.create_project("alice", "an app, for dog walkers in Lisbon and Porto. More later.")
    assert project["project_name"] == "An app, for dog walkers in"
    assert project["project_id"].startswith("an-app-for-dog-walkers-in-")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"user_id": "bob\n## Metadata"}, UnsafeNameError),
        ({"user_id": ""}, UnsafeNameError),
        ({"startup_idea": "   "}, InvalidArgumentError),
        ({"startup_idea": None}, InvalidArgumentError),
        ({"startup_idea": "lone \ud800 surrogate"}, InvalidArgumentError),
        ({"project_name": " \n "}, InvalidArgumentError),
        ({"execution_mode": "turbo"}, InvalidArgumentError),
        ({"execution_mode": ["mvp"]}, InvalidArgumentError),
    ],
)
def test_create_project_refuses_bad_arguments_and_writes_nothing(
    manager: ProjectManager, base: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    arguments: dict[str, Any] = {"user_id": "alice", "startup_idea": IDEA, **kwargs}
    with pytest.raises(error):
        manager.create_project(**arguments)
    assert not base.exists()


def test_list_user_projects_filters_by_user_and_status(manager: ProjectManager, base: Path) -> None:
    assert manager.list_user_projects("alice") == []
    first = manager.create_project("alice", IDEA, project_name="First")
    bob = manager.create_project("bob", IDEA, project_name="Bobs")
    second = manager.create_project("alice", IDEA, project_name="Second")
    manager.archive_project(first["project_id"])
    (base / "stray-directory").mkdir()
    (base / ".hidden").mkdir()
    (base / "loose-file.yaml").write_text("user_id: alice\n", "utf-8")

    assert [p["project_id"] for p in manager.list_user_projects("alice")] == [
        first["project_id"],
        second["project_id"],
    ]
    assert [p["project_id"] for p in manager.list_user_projects("alice", status="archived")] == [
        first["project_id"]
    ]
    assert [p["project_id"] for p in manager.list_user_projects("alice", status="active")] == [
        second["project_id"]
    ]
    assert manager.list_user_projects("bob") == [manager.get_project(bob["project_id"])]
    assert manager.list_user_projects("carol") == []
    with pytest.raises(InvalidArgumentError, match="finished"):
        manager.list_user_projects("alice", status="finished")


def test_archive_project_sets_status_and_logs_it(manager: ProjectManager, base: Path) -> None:
    project = manager.create_project("alice", IDEA)
    archived = manager.archive_project(project["project_id"])
    assert archived["status"] == "archived"
    assert archived["created"] == project["created"]
    assert archived["last_updated"] > project["last_updated"]
    assert manager.get_project(project["project_id"]) == archived
    assert changelog(base, project["project_id"]).endswith(
        f"## {archived['last_updated']} — Project archived\n- Status: archived\n"
    )


def test_delete_project_removes_only_that_project(manager: ProjectManager, base: Path) -> None:
    doomed = manager.create_project("alice", IDEA)["project_id"]
    kept = manager.create_project("alice", IDEA)["project_id"]
    manager.start_session(doomed)
    manager.delete_project(doomed)
    assert not (base / doomed).exists()
    assert manager.get_project(kept)["project_id"] == kept
    assert sorted(os.listdir(base)) == [".gitignore", kept]
    with pytest.raises(ProjectNotFoundError):
        manager.delete_project(doomed)


def test_delete_project_refuses_a_symlinked_project_dir(tmp_path: Path, base: Path) -> None:
    outside = ProjectManager(tmp_path / "elsewhere")
    victim = outside.create_project("alice", IDEA)["project_id"]
    manager = ProjectManager(base)
    base.mkdir()
    (base / "sneaky").symlink_to(tmp_path / "elsewhere" / victim, target_is_directory=True)
    before = snapshot(tmp_path / "elsewhere")
    with pytest.raises(InvalidArgumentError, match="symlink"):
        manager.delete_project("sneaky")
    assert snapshot(tmp_path / "elsewhere") == before
    assert (base / "sneaky").is_symlink()


def test_delete_project_refuses_a_directory_that_is_not_a_project(
    manager: ProjectManager, base: Path
) -> None:
    (base / "someone-elses").mkdir(parents=True)
    (base / "someone-elses" / "notes.txt").write_text("keep me", "utf-8")
    with pytest.raises(ProjectNotFoundError):
        manager.delete_project("someone-elses")
    assert (base / "someone-elses" / "notes.txt").read_text("utf-8") == "keep me"


# ------------------------------------------------------------------- reading


def test_project_yaml_with_a_python_tag_is_refused(
    manager: ProjectManager, base: Path, tmp_path: Path
) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    path = base / project_id / "project.yaml"
    marker = tmp_path / "pwned"
    path.write_text(
        f"project_id: {project_id}\nuser_id: alice\nproject_name: !!python/object/apply:os.system\n"
        f'- "touch {marker}"\n',
        "utf-8",
    )
    # One unreadable project is reported, never raised by the listing: it would hide the others.
    assert manager.list_user_projects("alice") == []
    [issue] = manager.project_issues()
    assert (issue.path, issue.line, issue.severity) == (path, 3, "error")
    assert "python/object/apply" in issue.message
    for call in (
        lambda: manager.get_project(project_id),
        lambda: manager.get_project_status(project_id),
        lambda: manager.archive_project(project_id),
    ):
        with pytest.raises(DocumentError) as caught:
            call()
        assert isinstance(caught.value, ValueError)
        assert caught.value.path == path
        assert caught.value.line == 3
        assert f"{path}:3:" in str(caught.value)
        assert "python/object/apply" in str(caught.value)
    assert not marker.exists()


def test_project_yaml_breaking_the_schema_names_field_value_and_line(
    manager: ProjectManager, base: Path
) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    path = base / project_id / "project.yaml"
    path.write_text(path.read_text("utf-8").replace("status: active", "status: finished"), "utf-8")
    with pytest.raises(DocumentError) as caught:
        manager.get_project(project_id)
    assert caught.value.field == "status"
    assert caught.value.line == 8  # after format: 1
    assert "'finished'" in str(caught.value)
    assert str(path) in str(caught.value)


def test_project_yaml_with_another_projects_id_is_refused(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    path = base / project_id / "project.yaml"
    path.write_text(path.read_text("utf-8").replace(project_id, "copied-elsewhere"), "utf-8")
    with pytest.raises(DocumentError, match="copied-elsewhere"):
        manager.get_project(project_id)


def test_hand_written_unquoted_timestamps_are_read(manager: ProjectManager, base: Path) -> None:
    project = manager.create_project("alice", IDEA)
    path = base / project["project_id"] / "project.yaml"
    path.write_text(
        path.read_text("utf-8").replace("'2024-11-24T10:00:01Z'", "2024-11-24T10:00:01Z"), "utf-8"
    )
    assert "created: 2024-11-24T10:00:01Z\n" in path.read_text("utf-8")
    assert manager.get_project(project["project_id"]) == project


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.get_project("no-such-project"),
        lambda m: m.get_project_status("no-such-project"),
        lambda m: m.start_session("no-such-project"),
        lambda m: m.complete_session("no-such-project", "session-1", "text"),
        lambda m: m.archive_project("no-such-project"),
        lambda m: m.delete_project("no-such-project"),
    ],
)
def test_a_missing_project_is_file_not_found(manager: ProjectManager, base: Path, call: Any) -> None:
    base.mkdir()
    with pytest.raises(ProjectNotFoundError) as caught:
        call(manager)
    assert isinstance(caught.value, FileNotFoundError)
    assert "no-such-project" in str(caught.value)
    assert os.listdir(base) == []


def test_an_unsafe_project_id_is_refused(manager: ProjectManager) -> None:
    with pytest.raises(UnsafeNameError):
        manager.get_project_status("../etc")


def test_a_clock_without_time_zone_is_refused_before_writing(manager: ProjectManager, base: Path) -> None:
    naive = ProjectManager(base, clock=lambda: datetime(2024, 11, 24, 10, 0))
    with pytest.raises(InvalidArgumentError, match="aware datetime"):
        naive.create_project("alice", IDEA)
    assert not base.exists()
    project_id = manager.create_project("alice", IDEA)["project_id"]
    before = snapshot(base)
    with pytest.raises(InvalidArgumentError, match="aware datetime"):
        naive.start_session(project_id)
    assert snapshot(base) == before


# ------------------------------------------------------------------ sessions


def test_start_session_creates_a_session_checkpoint_manager_can_load(
    manager: ProjectManager, base: Path
) -> None:
    project = manager.create_project("alice", IDEA, execution_mode="full")
    session = manager.start_session(project["project_id"])
    session_id = session["session_id"]
    assert re.fullmatch(r"session-20241124-1000\d\d-[0-9a-f]{6}", session_id)
    assert check_name("session_id", session_id) == session_id
    loaded = CheckpointManager(base).load_session(project["project_id"], session_id)
    assert loaded == session
    assert session["project_id"] == project["project_id"]
    assert session["user_id"] == "alice"
    assert session["workflow_type"] == "idea_validation"
    assert session["execution_mode"] == "full"
    assert Path(session["session_dir"]) == base / project["project_id"] / "sessions" / session_id
    assert (Path(session["session_dir"]) / "session_manifest.md").is_file()
    assert (Path(session["session_dir"]) / "phase_4_product_strategy").is_dir()


def test_start_session_with_an_unknown_workflow_changes_nothing(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    before = snapshot(base)
    with pytest.raises(InvalidArgumentError, match="no_such_workflow"):
        manager.start_session(project_id, workflow_type="no_such_workflow")
    assert snapshot(base) == before


def test_sessions_never_touch_project_yaml(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    path = base / project_id / "project.yaml"
    before = path.read_bytes()
    for _ in range(2):
        session_id = manager.start_session(project_id)["session_id"]
        manager.complete_session(project_id, session_id, "requirements\n")
    assert path.read_bytes() == before
    assert "session" not in path.read_text("utf-8")


def test_complete_session_writes_versions_byte_exact(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    session_id = manager.start_session(project_id)["session_id"]
    outputs = base / project_id / "outputs"
    first = "# Requirements\r\n\r\n## Users\r\n- Café owners, naïve résumé 日本\r\n## Done"
    second = "## only a heading\n\n```\n## fenced\n```\n   trailing spaces   \n\n\n"

    one = manager.complete_session(project_id, session_id, first)
    two = manager.complete_session(project_id, session_id, second)

    v1 = outputs / f"requirements_20241124T100004Z_{session_id}.md"
    v2 = outputs / f"requirements_20241124T100005Z_{session_id}.md"
    assert one == {"version": 1, "path": str(v1), "latest_path": str(outputs / "latest_requirements.md")}
    assert two["version"] == 2
    assert Path(two["path"]) == v2
    assert v1.read_bytes() == first.encode("utf-8")
    assert v2.read_bytes() == second.encode("utf-8")
    assert (outputs / "latest_requirements.md").read_bytes() == second.encode("utf-8")
    assert manager.get_project_status(project_id)["latest_version"] == 2
    assert manager.list_requirements(project_id) == [
        {"version": 1, "path": str(v1)},
        {"version": 2, "path": str(v2)},
    ]


def test_versions_are_files_two_git_clones_cannot_both_write(base: Path) -> None:
    """Two clones completing sessions at once add two files; numbers and latest are derived."""
    manager = ProjectManager(base, clock=TickingClock())
    project_id = manager.create_project("alice", IDEA)["project_id"]
    first = manager.start_session(project_id)["session_id"]
    second = manager.start_session(project_id)["session_id"]
    outputs = base / project_id / "outputs"
    manager.complete_session(project_id, second, "from the second session\n")
    late = manager.complete_session(project_id, first, "from the first session\n")
    assert late["version"] == 2
    # what a pull brings in: another clone's completion, made between the two above
    (outputs / f"requirements_20241124T100006.5Z_{first}x.md").write_text("from a clone\n", "utf-8")
    assert [Path(v["path"]).read_text("utf-8") for v in manager.list_requirements(project_id)] == [
        "from the second session\n",
        "from a clone\n",
        "from the first session\n",
    ]
    assert manager.get_project_status(project_id)["latest_version"] == 3
    # a clone whose clock ran ahead keeps latest_requirements.md on the newest version by time
    (outputs / "requirements_20991231T000000Z_ahead.md").write_bytes(b"ahead\r\n")
    assert manager.complete_session(project_id, first, "now\n")["version"] == 4
    assert (outputs / "latest_requirements.md").read_bytes() == b"ahead\r\n"


def test_same_session_completed_twice_in_one_clock_tick_keeps_both(base: Path) -> None:
    manager = ProjectManager(base, clock=lambda: START)
    project_id = manager.create_project("alice", IDEA)["project_id"]
    session_id = manager.start_session(project_id)["session_id"]
    one = manager.complete_session(project_id, session_id, "one")
    two = manager.complete_session(project_id, session_id, "two")
    assert Path(two["path"]).name == f"requirements_20241124T100000Z_{session_id}~2.md"
    assert (one["version"], two["version"]) == (1, 2)
    assert Path(one["path"]).read_text("utf-8") == "one"
    assert (base / project_id / "outputs" / "latest_requirements.md").read_text("utf-8") == "two"


def test_complete_session_continues_after_the_highest_version(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    session_id = manager.start_session(project_id)["session_id"]
    (base / project_id / "outputs" / "requirements_v7.md").write_text("by hand", "utf-8")
    (base / project_id / "outputs" / "requirements_v07x.md").write_text("not a version", "utf-8")
    (base / project_id / "outputs" / "requirements_2024_x.md").write_text("not a version", "utf-8")
    assert manager.complete_session(project_id, session_id, "next")["version"] == 8
    assert [v["version"] for v in manager.list_requirements(project_id)] == [7, 8]


@pytest.mark.parametrize(
    ("session_id", "content", "metrics", "error"),
    [
        ("session-never-started", "text", None, SessionNotFoundError),
        (None, b"bytes", None, InvalidArgumentError),
        (None, "text", {"tokens": [1, 2]}, InvalidArgumentError),
        (None, "text", {"bad key\n## x": 1}, UnsafeNameError),
        (None, "text", ["tokens"], InvalidArgumentError),
    ],
)
def test_a_failed_completion_changes_nothing(
    manager: ProjectManager,
    base: Path,
    session_id: str | None,
    content: Any,
    metrics: Any,
    error: type[Exception],
) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    started = manager.start_session(project_id)["session_id"]
    before = snapshot(base)
    with pytest.raises(error):
        manager.complete_session(project_id, session_id or started, content, metrics=metrics)
    assert snapshot(base) == before


def test_get_project_status_sums_the_sessions_metrics(manager: ProjectManager, base: Path) -> None:
    project = manager.create_project("alice", IDEA)
    project_id = project["project_id"]
    empty = manager.get_project_status(project_id)
    assert (empty["session_count"], empty["sessions"], empty["latest_version"]) == (0, [], None)
    assert (empty["total_tokens"], empty["total_cost"]) == (0, 0.0)

    first = manager.start_session(project_id)["session_id"]
    second = manager.start_session(project_id)["session_id"]
    checkpoints = CheckpointManager(base)
    checkpoints.save_checkpoint(
        project_id, first, 1, "completed", [{"agent_name": "concept_expansion", "tokens": 1200, "cost": 0.05}]
    )
    checkpoints.save_checkpoint(
        project_id,
        second,
        2,
        "completed",
        [
            {"agent_name": "market_intelligence", "tokens": 300, "cost": 0.0125},
            {"agent_name": "competitor_analysis", "tokens": 500, "cost": 0.02},
        ],
        execution_mode="parallel",
    )
    (base / project_id / "sessions" / "not-a-session").mkdir()
    manager.complete_session(project_id, second, "requirements")

    status = manager.get_project_status(project_id)
    assert {k: status[k] for k in project} == project
    assert status["session_count"] == 2
    assert [s["session_id"] for s in status["sessions"]] == [first, second]
    assert status["sessions"][0] == checkpoints.load_session(project_id, first)
    assert status["total_tokens"] == 2000
    assert status["total_cost"] == pytest.approx(0.0825)
    assert status["latest_version"] == 1


# ----------------------------------------------------------------- changelog


def test_changelog_records_each_event(base: Path) -> None:
    manager = ProjectManager(base, clock=TickingClock())
    project_id = manager.create_project("alice", "Fresh bread by bike", project_name="Bread Bike")[
        "project_id"
    ]
    session_id = manager.start_session(project_id)["session_id"]
    manager.complete_session(
        project_id, session_id, "reqs", metrics={"tokens": 1500, "cost": 0.25, "ok": True, "model": None}
    )
    manager.archive_project(project_id)
    assert changelog(base, project_id) == (
        "# Changelog: Bread Bike\n"
        "\n"
        "## 2024-11-24T10:00:01Z — Project created\n"
        f"- Project: {project_id}\n"
        "- User: alice\n"
        "- Mode: mvp\n"
        "- Idea: Fresh bread by bike\n"
        "\n"
        "## 2024-11-24T10:00:03Z — Session started\n"
        f"- Session: {session_id}\n"
        "- Workflow: idea_validation\n"
        "- Mode: mvp\n"
        "\n"
        "## 2024-11-24T10:00:04Z — Session completed\n"
        f"- Session: {session_id}\n"
        f"- File: outputs/requirements_20241124T100004Z_{session_id}.md\n"
        "- tokens: 1500\n"
        "- cost: 0.25\n"
        "- ok: true\n"
        "- model: -\n"
        "\n"
        "## 2024-11-24T10:00:05Z — Project archived\n"
        "- Status: archived\n"
    )


def test_free_text_cannot_inject_headings_into_the_changelog(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project(
        "alice", "Idea\n## injected\n# also injected", project_name="Name\n## injected"
    )["project_id"]
    session_id = manager.start_session(project_id)["session_id"]
    manager.complete_session(
        project_id,
        session_id,
        "## content is not logged",
        metrics={"comment": "ok\n## injected", "tag": "# x"},
    )
    text = changelog(base, project_id)
    headings = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert headings[0] == '# Changelog: "Name\\n## injected"'
    assert [re.sub(r"^## \S+ — ", "", h) for h in headings[1:]] == [
        "Project created",
        "Session started",
        "Session completed",
    ]
    assert '- Idea: "Idea\\n## injected\\n# also injected"' in text
    assert '- comment: "ok\\n## injected"' in text
    assert '- tag: "# x"' in text
    assert manager.get_project(project_id)["startup_idea"] == "Idea\n## injected\n# also injected"


# --------------------------------------------------------------- preferences


def test_preferences_round_trip_and_merge(manager: ProjectManager, base: Path) -> None:
    assert manager.get_user_preferences("alice") == {}
    saved = manager.update_user_preferences(
        "alice", {"mode": "full", "limits": {"tokens": 5000, "cost": 1.5}, "tags": ["a", "é"], "x": None}
    )
    merged = manager.update_user_preferences("alice", {"mode": "mvp", "dark": True})
    assert saved["mode"] == "full"
    assert merged == {
        "mode": "mvp",
        "limits": {"tokens": 5000, "cost": 1.5},
        "tags": ["a", "é"],
        "x": None,
        "dark": True,
    }
    assert manager.get_user_preferences("alice") == merged
    assert ProjectManager(base).get_user_preferences("alice") == merged
    assert manager.get_user_preferences("bob") == {}
    path = base / "_users" / "alice" / "preferences.yaml"
    assert yaml.safe_load(path.read_text("utf-8")) == merged
    assert manager.list_user_projects("alice") == []


@pytest.mark.parametrize(
    "preferences",
    [
        {"when": datetime(2024, 1, 1, tzinfo=timezone.utc)},
        {"pair": (1, 2)},
        {"set": {1, 2}},
        {"raw": b"bytes"},
        {"nested": {1: "int key"}},
        {"deep": [{"ok": [object()]}]},
        {"text": "lone \udc80"},
        ["not", "a", "dict"],
    ],
)
def test_preferences_refuse_values_that_are_not_json_like(
    manager: ProjectManager, base: Path, preferences: Any
) -> None:
    manager.update_user_preferences("alice", {"kept": 1})
    before = snapshot(base)
    with pytest.raises(InvalidArgumentError):
        manager.update_user_preferences("alice", preferences)
    assert snapshot(base) == before
    assert manager.get_user_preferences("alice") == {"kept": 1}


def test_preferences_file_with_a_python_tag_is_refused(manager: ProjectManager, base: Path) -> None:
    path = base / "_users" / "alice" / "preferences.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("theme: dark\nhook: !!python/name:os.system\n", "utf-8")
    with pytest.raises(DocumentError) as caught:
        manager.get_user_preferences("alice")
    assert (caught.value.path, caught.value.line) == (path, 2)
    # A user id is data: "../alice" names the encoded folder "%2E%2E%2Falice", never a path.
    assert manager.get_user_preferences("../alice") == {}
    manager.update_user_preferences("../alice", {"theme": "light"})
    assert (base / "_users" / "%2E%2E%2Falice" / "preferences.yaml").is_file()
    assert manager.get_user_preferences("../alice") == {"theme": "light"}
    assert "theme: dark" in path.read_text("utf-8")  # alice's own file untouched
    with pytest.raises(UnsafeNameError):
        manager.get_user_preferences("a\nb")


# --------------------------------------------------------------- concurrency

WORKER = """
import sys, time
from pathlib import Path
from haytham.project import ProjectManager

base, project_id, session_id, worker, rendezvous = sys.argv[1:]
Path(rendezvous, f"ready-{worker}").touch()  # imported; all start together once "go" exists
deadline = time.monotonic() + 120
while not Path(rendezvous, "go").exists():
    assert time.monotonic() < deadline, "the test never said go"
    time.sleep(0.005)
manager = ProjectManager(base)
for round_ in range(5):
    manager.complete_session(project_id, session_id, f"worker {worker} round {round_}\\n")
"""


def test_concurrent_completions_never_share_a_version(manager: ProjectManager, base: Path) -> None:
    project_id = manager.create_project("alice", IDEA)["project_id"]
    session_id = manager.start_session(project_id)["session_id"]
    rendezvous = base.parent / "rendezvous"
    rendezvous.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(haytham.__file__).parents[1])}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(base), project_id, session_id, str(n), str(rendezvous)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    deadline = time.monotonic() + 120
    while len(list(rendezvous.glob("ready-*"))) < len(workers):  # every worker has imported haytham
        assert time.monotonic() < deadline and all(w.poll() is None for w in workers), (
            "a worker never got ready"
        )
        time.sleep(0.005)
    (rendezvous / "go").touch()
    for worker in workers:
        _, stderr = worker.communicate(timeout=120)
        assert worker.returncode == 0, stderr

    outputs = base / project_id / "outputs"
    versions = manager.list_requirements(project_id)
    assert [v["version"] for v in versions] == list(range(1, 21))
    assert len(list(outputs.glob("requirements_*.md"))) == 20
    contents = {Path(v["path"]).read_text("utf-8") for v in versions}
    assert contents == {f"worker {w} round {r}\n" for w in range(4) for r in range(5)}
    assert (outputs / "latest_requirements.md").read_bytes() == Path(versions[-1]["path"]).read_bytes()
    logged = re.findall(r"^- File: outputs/(\S+)$", changelog(base, project_id), re.MULTILINE)
    assert sorted(logged) == sorted(Path(v["path"]).name for v in versions)
    assert not [p for p in outputs.iterdir() if p.name.startswith(".") and p.name != ".haytham.lock"]
