"""Everything the first implementation wrote reads right through haytham's public API (issue 14).

Each file of ``tests/legacy/corpus`` is read from a copy in a temporary directory and compared
with ``tests/legacy/expected.json``, whose values come from the writer's arguments, never from
reading the files back. ``test_the_measured_counts`` gives the counts of the issue's Measured
list for this corpus.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from haytham import CheckpointManager, DocumentError
from haytham.format import AGENT_OUTPUT, CHECKPOINT
from haytham.projects import ProjectManager

LEGACY = Path(__file__).parent / "legacy"
EXPECTED: dict[str, Any] = json.loads((LEGACY / "expected.json").read_text("utf-8"))
FILES: dict[str, dict[str, Any]] = EXPECTED["files"]
SESSIONS: dict[str, dict[str, Any]] = EXPECTED["sessions"]
DAMAGED_SESSIONS = {
    key.rsplit("/", 1)[0]
    for key, value in FILES.items()
    if value["kind"] == "manifest" and "damaged" in value
}


def of_kind(kind: str) -> list[str]:
    return sorted(key for key, value in FILES.items() if value["kind"] == kind)


def where(key: str) -> tuple[str, str, int]:
    """``projects/{project}/sessions/{session}/phase_{n}_.../file`` as (project, session, n)."""
    parts = key.split("/")
    return parts[1], parts[3], int(parts[4].split("_")[1])


def session_key(key: str) -> str:
    return "/".join(key.split("/")[:4])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("legacy")
    shutil.copytree(LEGACY / "corpus", root / "corpus")
    return root / "corpus" / "projects"


@pytest.fixture(scope="module")
def manager(base: Path) -> CheckpointManager:
    return CheckpointManager(base)


def _same(got: Any, expected: Any) -> bool:
    if isinstance(got, tuple):
        got = list(got)
    return bool(got == expected)


def agent_output_problems(manager: CheckpointManager, key: str) -> list[str]:
    """What a read of the agent output ``key`` gets wrong (empty: exactly as written)."""
    expected = FILES[key]
    project, session, phase = where(key)
    agent = Path(key).stem
    if "damaged" in expected:
        try:
            AGENT_OUTPUT.load(manager.base_dir / key.split("/", 1)[1])
        except DocumentError:
            return []
        return ["a damaged file was read without an error"]
    if session_key(key) in DAMAGED_SESSIONS:  # no manifest to open the session by: the file alone
        record = AGENT_OUTPUT.load(manager.base_dir / key.split("/", 1)[1])
    else:
        record = manager.load_agent_output(project, session, phase, agent)
    values = dataclasses.asdict(record)
    return [
        f"{name}: {values[name]!r} != {value!r}"
        for name, value in expected.items()
        if name not in ("case", "kind") and not _same(values[name], value)
    ]


# ------------------------------------------------------------------ agent outputs


@pytest.mark.parametrize("key", of_kind("agent_output"))
def test_agent_outputs_come_back_exactly_as_written(manager: CheckpointManager, key: str) -> None:
    assert agent_output_problems(manager, key) == []


@pytest.mark.parametrize("key", sorted(k for k in SESSIONS if k not in DAMAGED_SESSIONS))
def test_get_phase_outputs_gives_every_content_as_written(manager: CheckpointManager, key: str) -> None:
    _, project, _, session = key.split("/")
    wanted: dict[int, dict[str, str]] = {}
    for file_key in of_kind("agent_output"):
        if session_key(file_key) == key and "damaged" not in FILES[file_key]:
            wanted.setdefault(where(file_key)[2], {})[Path(file_key).stem] = FILES[file_key]["content"]
    assert manager.get_phase_outputs(project, session, sorted(wanted)) == wanted


def test_legacy_error_details_are_read_from_the_end() -> None:
    """The unclosed fence, a heading of the content's own and a multi-line message."""
    fence = FILES["projects/proj-legacy/sessions/sess-unclosed-fence/phase_1_concept/concept_expansion.md"]
    assert fence["content"].endswith("  - one\n") and fence["error_type"] == "ReadTimeout"
    shapes = "projects/proj-legacy/sessions/sess-error-shapes/phase_4_product_strategy/"
    assert "\n- Stack Trace: not really" in FILES[shapes + "multi_line_message.md"]["error_message"]
    assert FILES[shapes + "trace_only.md"]["error_type"] is None  # a trace alone writes no section


# --------------------------------------------------------- manifests and checkpoints


@pytest.mark.parametrize("key", of_kind("manifest"))
def test_manifests_load_with_their_values(manager: CheckpointManager, key: str) -> None:
    expected = FILES[key]
    _, project, _, session = key.split("/")[:4]
    if "damaged" in expected:
        with pytest.raises(DocumentError, match=r"session_manifest\.md"):
            manager.load_manifest(project, session)
        return
    values = dataclasses.asdict(manager.load_manifest(project, session))
    for name, value in expected.items():
        if name not in ("case", "kind"):
            assert _same(values[name], value), name


@pytest.mark.parametrize("key", of_kind("checkpoint"))
def test_checkpoints_load_with_their_values(manager: CheckpointManager, key: str) -> None:
    expected = FILES[key]
    project, session, phase = where(key)
    if session_key(key) in DAMAGED_SESSIONS:
        record = CHECKPOINT.load(manager.base_dir / key.split("/", 1)[1])
    else:
        record = manager.load_checkpoint(project, session, phase)
    values = dataclasses.asdict(record)
    agents = values["agents"]
    values["agents"] = [{"agent_name": a["agent_name"], "status": a["status"]} for a in agents]
    values["agent_execution_times"] = [
        {"agent_name": a["agent_name"], "seconds": a["duration"]} for a in agents
    ]
    # ``- Agent Outputs: [, ]`` (agents without an output file) names no file: each agent
    # then has the file its name gives.
    values["agent_outputs"] = [a["output_file"] for a in agents]
    if expected["agent_outputs"] == []:
        expected = {**expected, "agent_outputs": [f"{a['agent_name']}.md" for a in agents]}
    for name, value in expected.items():
        if name not in ("case", "kind", "ready_to_execute", "blocking_issues"):
            assert _same(values[name], value), name


def test_the_run_style_sequential_is_read(manager: CheckpointManager) -> None:
    styles = {
        manager.load_checkpoint("proj-legacy", "sess-full-run-styles", n).execution_mode for n in range(1, 8)
    }
    assert styles == {"single", "parallel", "sequential_interactive", "sequential"}


@pytest.mark.parametrize("key", sorted(k for k in SESSIONS if k not in DAMAGED_SESSIONS))
def test_sessions_load_and_list_their_approved_phases(manager: CheckpointManager, key: str) -> None:
    _, project, _, session = key.split("/")
    state = manager.load_session(project, session)
    assert (state["project_id"], state["session_id"]) == (project, session)
    assert manager.get_approved_phases(project, session) == SESSIONS[key]["approved_phases"]


def test_sessions_started_by_project_manager_have_phase_0_and_no_phase_folders(
    manager: CheckpointManager,
) -> None:
    state = manager.load_session("café_finder_", "b829df51-70a1-4e8f-a561-da339fdd939c")
    assert state["current_phase"] == 0 and state["current_phase_name"] == "Not Started"
    assert state["completed_phases"] == []


# ---------------------------------------------------------------- outside the mode


def test_a_phase_outside_the_mode_is_readable_and_a_warning(manager: CheckpointManager) -> None:
    project, session = "proj-legacy", "sess-outside-mode"
    assert manager.load_checkpoint(project, session, 4).phase_number == 4
    assert manager.load_feedback(project, session, 5) is not None
    assert manager.get_phase_outputs(project, session, [4]) == {
        4: {
            "product_strategy": FILES[
                f"projects/{project}/sessions/{session}/phase_4_product_strategy/product_strategy.md"
            ]["content"]
        }
    }
    assert 4 not in manager.load_session(project, session)["phase_statuses"]
    warnings = [i for i in manager.validate_session(project, session) if "not run in 'mvp' mode" in i.message]
    assert [(i.path.name if i.path else None, i.severity) for i in warnings] == [
        ("phase_4_product_strategy", "warning"),
        ("phase_5_business_planning", "warning"),
    ]
    with pytest.raises(Exception, match="not run in 'mvp' mode"):
        manager.save_agent_output(project, session, 4, "late", "x")  # saving still refuses it


# ---------------------------------------------------------------------- projects


@pytest.mark.parametrize("key", of_kind("project"))
def test_projects_are_readable(base: Path, key: str) -> None:
    expected = FILES[key]["config"]
    data = ProjectManager(base).get_project(key.split("/")[1])
    for name, value in expected.items():
        assert data[name] == value, name
    assert (data["created"], data["last_updated"]) == (expected["created_at"], expected["updated_at"])


def test_every_user_lists_their_projects(base: Path) -> None:
    projects = ProjectManager(base)
    users: dict[str, set[str]] = {}
    for key in of_kind("project"):
        config = FILES[key]["config"]
        users.setdefault(config["user_id"], set()).add(config["project_id"])
    assert {"grace@example.com", "user-zoë"} <= set(users)
    for user, ids in users.items():
        assert {p["project_id"] for p in projects.list_user_projects(user)} == ids
    assert projects.project_issues() == []


def test_one_unreadable_project_hides_no_other(base: Path, tmp_path: Path) -> None:
    copy = tmp_path / "projects"
    shutil.copytree(base, copy)
    broken = copy / "pet_food_subscriptions" / "project.yaml"
    broken.write_text("project_id: [unclosed\n", "utf-8")
    projects = ProjectManager(copy)
    assert projects.list_user_projects("ops@pets.example") == []  # its only project is broken
    assert {p["project_id"] for p in projects.list_user_projects("grace@example.com")} == {"café_finder_"}
    assert {p["project_id"] for p in projects.list_user_projects("user-zoë")} == {
        "café_finder__1",
        "cd6209bd-fa83-49c9-90db-927686bb6838",
    }
    [issue] = projects.project_issues()
    assert (issue.path, issue.severity) == (broken, "error")


def test_requirement_versions_are_listed(base: Path) -> None:
    versions = ProjectManager(base).list_requirements("pet_food_subscriptions")
    assert [(v["version"], Path(v["path"]).name) for v in versions] == [
        (1, "requirements_v1.md"),
        (2, "requirements_v2.md"),
    ]
    latest = FILES["projects/pet_food_subscriptions/outputs/latest_requirements.md"]["content"]
    assert (
        base / "pet_food_subscriptions" / "outputs" / "latest_requirements.md"
    ).read_bytes().decode() == latest


# --------------------------------------------------------------------------- ids


def test_every_id_is_reachable(manager: CheckpointManager) -> None:
    listed = {(s.project_id, s.session_id) for s in manager.list_sessions()}
    for key in SESSIONS:
        _, project, _, session = key.split("/")
        if key not in DAMAGED_SESSIONS:
            assert (project, session) in listed
    assert {s.user_id for s in manager.list_sessions(user_id="user-zoë")} == {"user-zoë"}
    assert manager.list_sessions(project_id="café_finder_")


def test_new_ids_keep_the_strict_rule_and_user_ids_never_become_paths(tmp_path: Path, base: Path) -> None:
    copy = tmp_path / "projects"
    shutil.copytree(base, copy)
    manager = CheckpointManager(copy)
    with pytest.raises(ValueError, match="not a safe name"):
        manager.create_session("neu_café", "s-1", "grace@example.com")
    # A legacy project is continued: its id exists, the new session's id is strict.
    directory = manager.create_session("café_finder_", "s-new", "user-zoë")
    assert manager.load_manifest("café_finder_", "s-new").user_id == "user-zoë"
    assert not any("zoë" in part for p in directory.rglob("*") for part in p.relative_to(copy).parts[1:])
    with pytest.raises(ValueError, match="not a safe name"):
        manager.create_session("café_finder_", "sess-ë", "u")


# ------------------------------------------------------------------ reads never write


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and ".haytham-cache" not in p.parts and not p.name.endswith(".lock")
    }


def test_the_reads_of_this_work_change_no_file(tmp_path: Path, base: Path) -> None:
    copy = tmp_path / "projects"
    shutil.copytree(base, copy)
    before = _snapshot(copy)
    manager = CheckpointManager(copy)
    for key in of_kind("agent_output"):
        agent_output_problems(manager, key)
    for key in SESSIONS:
        if key not in DAMAGED_SESSIONS:
            _, project, _, session = key.split("/")
            manager.load_manifest(project, session)
            manager.load_checkpoints(project, session)
            manager.load_session(project, session)  # a stale legacy manifest is derived, not rewritten
            manager.state(project, session)
            manager.get_approved_phases(project, session)
    projects = ProjectManager(copy)
    for key in of_kind("project"):
        projects.get_project(key.split("/")[1])
    projects.list_user_projects("grace@example.com")
    assert _snapshot(copy) == before


# ------------------------------------------------------------------------ counts


def test_the_measured_counts(base: Path, tmp_path: Path) -> None:
    """The issue's Measured list for this corpus (printed with ``pytest -s``)."""
    copy = tmp_path / "projects"
    shutil.copytree(base, copy)
    manager = CheckpointManager(copy)
    loaded = 0
    for key in SESSIONS:
        _, project, _, session = key.split("/")
        try:
            manager.load_session(project, session)
            loaded += 1
        except DocumentError:
            assert key in DAMAGED_SESSIONS
    outputs = of_kind("agent_output")
    exact = sum(not agent_output_problems(manager, key) for key in outputs)
    projects = ProjectManager(copy)
    readable = sum(1 for key in of_kind("project") if projects.get_project(key.split("/")[1]))
    ids = {key.split("/")[1] for key in SESSIONS} | {key.split("/")[3] for key in SESSIONS}
    users = {FILES[k]["user_id"] for k in of_kind("manifest") if "damaged" not in FILES[k]}
    reachable = {key.split("/")[1] for key in SESSIONS if manager.project_dir(key.split("/")[1]).is_dir()}
    print(
        f"\n{loaded} of {len(SESSIONS)} sessions load "
        f"({len(DAMAGED_SESSIONS)} has a manifest a crash cut short)"
        f"\n{exact} of {len(outputs)} agent outputs come back exactly as written"
        f"\n{readable} of {len(of_kind('project'))} projects are readable"
        f"\n{len(ids)} project and session ids and {len(users)} user ids, all reachable"
    )
    assert loaded == len(SESSIONS) - len(DAMAGED_SESSIONS)
    assert exact == len(outputs)
    assert readable == len(of_kind("project"))
    assert reachable == {key.split("/")[1] for key in SESSIONS}
