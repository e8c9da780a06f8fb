"""The first implementation's semantics of two reads, on the sessions and projects it wrote
(issue 23, item 10).

The corpus is ``tests/legacy/corpus`` (what the first implementation wrote; its provenance is
in ``tests/legacy/README.md``), read from a copy in a temporary directory. What the first
implementation did is taken from the product document it implemented
(``../shared/seeds/002_*``: ``get_phase_outputs(..., phase_nums=[1, 2])`` on a session that
may not have reached phase 2) and from its ``project.yaml`` (``../shared/reference/formats.md``,
``tests/legacy/README.md``: ``complete_session`` marks the session ``completed`` in the
project's ``sessions`` list and counts it in ``metrics.completed_sessions``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_legacy_read import DAMAGED_SESSIONS, FILES, LEGACY, SESSIONS

from haytham import CheckpointManager, UnknownPhaseError
from haytham.projects import ProjectManager


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("first-implementation")
    shutil.copytree(LEGACY / "corpus", root / "corpus")
    return root / "corpus" / "projects"


def _outputs_on_disk(key: str) -> dict[int, dict[str, str]]:
    """The session's agent outputs by phase as the writer was given them (expected.json)."""
    found: dict[int, dict[str, str]] = {}
    for name, value in FILES.items():
        if name.startswith(key + "/phase_") and value["kind"] == "agent_output" and "damaged" not in value:
            phase = int(name.split("/")[4].split("_")[1])
            found.setdefault(phase, {})[name.rsplit("/", 1)[1][: -len(".md")]] = value["content"]
    return found


@pytest.mark.parametrize("key", sorted(k for k in SESSIONS if k not in DAMAGED_SESSIONS))
def test_get_phase_outputs_of_the_modes_phases_skips_phases_never_created(base: Path, key: str) -> None:
    _, project, _, session = key.split("/")
    manager = CheckpointManager(base)
    mode = manager.load_manifest(project, session).execution_mode
    phases = [p.number for p in manager.session_workflow(project, session).phases_for(mode)]
    got = manager.get_phase_outputs(project, session, phases)
    session_dir = manager.session_dir(project, session)
    with_folder = [n for n in phases if any(session_dir.glob(f"phase_{n}_*/"))]
    assert sorted(got) == with_folder
    on_disk = _outputs_on_disk(key)
    assert {n: got[n] for n in got if got[n]} == {n: on_disk[n] for n in on_disk if n in phases}


def test_the_product_documents_example_on_a_session_that_has_not_started(base: Path) -> None:
    manager = CheckpointManager(base)
    # started by ProjectManager: a manifest, no phase folder (tests/legacy/README.md)
    assert manager.get_phase_outputs("café_finder_", "b829df51-70a1-4e8f-a561-da339fdd939c", [1, 2]) == {}


def test_a_number_that_is_no_phase_of_the_workflow_is_still_refused(base: Path) -> None:
    manager = CheckpointManager(base)
    with pytest.raises(UnknownPhaseError):
        manager.get_phase_outputs("café_finder_", "b829df51-70a1-4e8f-a561-da339fdd939c", [1, 9])


@pytest.mark.parametrize(
    ("project", "completed"),
    [("café_finder_", 1), ("pet_food_subscriptions", 2), ("smart_home__v2_", 0), ("café_finder__1", 0)],
)
def test_get_project_status_counts_the_sessions_project_yaml_records_as_completed(
    base: Path, project: str, completed: int
) -> None:
    status = ProjectManager(base).get_project_status(project)
    assert status["completed_sessions"] == completed
    assert status["completed_sessions"] == status["metrics"]["completed_sessions"]  # what it wrote
    # their phases are not all done: the lifecycle does not call any of them completed
    assert [s["status"] for s in status["sessions"]].count("completed") == 0


def test_a_session_completed_by_complete_session_counts_as_completed(tmp_path: Path) -> None:
    manager = ProjectManager(tmp_path / "projects")
    project = manager.create_project("ada", "An idea worth checking")["project_id"]
    first = manager.start_session(project)["session_id"]
    manager.start_session(project)
    assert manager.get_project_status(project)["completed_sessions"] == 0
    manager.complete_session(project, first, "# Requirements\n")
    manager.complete_session(project, first, "# Requirements, again\n")  # a second version, one session
    status = manager.get_project_status(project)
    assert (status["session_count"], status["completed_sessions"]) == (2, 1)
