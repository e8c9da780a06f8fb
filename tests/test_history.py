"""History entries for every checkpoint save, their queries, events, and idempotent saves."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from haytham import CheckpointManager, InvalidArgumentError
from haytham.store.events import Event

P, S = "acme", "s-1"


def clock_from(start: datetime):  # type: ignore[no-untyped-def]
    moment = [start]

    def clock() -> datetime:
        moment[0] += timedelta(minutes=1)
        return moment[0]

    return clock


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    m = CheckpointManager(
        base_dir=tmp_path, clock=clock_from(datetime(2024, 11, 24, 10, tzinfo=timezone.utc))
    )
    m.create_session(P, S, "u")
    return m


def test_every_checkpoint_save_becomes_a_chained_entry(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "in_progress", [{"agent_name": "a", "status": "in_progress"}])
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}], name="first draft")
    manager.save_checkpoint(P, S, 2, "failed", [], errors=["boom"], reason="rate limit")
    entries = manager.history(P, S)
    assert [(e.phase_number, e.status, e.attempt) for e in entries] == [
        (1, "in_progress", 1),
        (1, "completed", 1),
        (2, "failed", 1),
    ]
    assert entries[0].parent is None
    assert [e.parent for e in entries[1:]] == [e.entry_id for e in entries[:-1]]
    assert manager.load_manifest(P, S).history_head == entries[-1].entry_id
    assert (entries[1].name, entries[2].reason) == ("first draft", "rate limit")
    files = sorted((manager.session_dir(P, S) / "history").iterdir())
    assert len(files) == 3
    assert all(f.read_text().count("\n") < 80 for f in files)


def test_queries_by_phase_status_name_and_time(manager: CheckpointManager) -> None:
    for status in ("in_progress", "completed"):
        manager.save_checkpoint(P, S, 1, status, [])
    manager.save_checkpoint(P, S, 2, "completed", [], name="good")
    manager.save_checkpoint(P, S, 2, "completed", [], name="good", reason="again")
    everything = manager.history(P, S)
    assert [e.phase_number for e in manager.history(P, S, phase=2)] == [2, 2]
    assert len(manager.history(P, S, status="completed")) == 3
    named = manager.history(P, S, name="good")
    assert named[-1].reason == "again"
    middle = everything[1].timestamp
    assert manager.history(P, S, since=middle) == everything[1:]
    assert (
        manager.history(P, S, since=everything[1].timestamp, until=everything[2].timestamp) == everything[1:3]
    )
    assert manager.history_entry(P, S, everything[2].entry_id[:6]) == everything[2]
    with pytest.raises(InvalidArgumentError):
        manager.history(P, S, status="finished")


def test_an_entry_returns_the_state_it_recorded(manager: CheckpointManager) -> None:
    manager.save_agent_output(P, S, 1, "writer", "first text")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "tokens": 5}])
    manager.save_user_feedback(P, S, 1, True, False, comments="again", action="retry")
    manager.start_attempt(P, S, 1)
    manager.save_agent_output(P, S, 1, "writer", "second text")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "writer", "tokens": 7}], retry_count=1)
    entries = manager.history(P, S, phase=1, status="completed")
    # the review is an entry too: it records the checkpoint it judged and the review file
    assert [(e.kind, e.attempt) for e in entries] == [("checkpoint", 1), ("review", 1), ("checkpoint", 2)]
    first, review, second = (manager.entry_state(P, S, e) for e in entries)
    assert (first[0].total_tokens, first[1]) == (5, {"writer": "first text"})
    assert review == first
    assert entries[1].feedback_text is not None and "again" in entries[1].feedback_text
    assert (second[0].total_tokens, second[1]) == (7, {"writer": "second text"})
    assert [e.attempt for e in manager.history(P, S)] == [1, 1, 2, 2]


def test_saving_the_same_data_twice_changes_no_byte(manager: CheckpointManager) -> None:
    args = dict(started="2024-11-24T10:00:00Z", completed="2024-11-24T10:02:00Z")
    manager.save_agent_output(P, S, 1, "a", "text", model="m")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokens": 1}], **args)
    manager.save_user_feedback(P, S, 1, True, True, comments="ok")
    root = manager.session_dir(P, S)
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    manager.save_agent_output(P, S, 1, "a", "text", model="m")
    manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a", "tokens": 1}], **args)
    manager.save_user_feedback(P, S, 1, True, True, comments="ok")
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before


def test_events_fire_after_saves_and_a_raising_callback_changes_nothing(
    manager: CheckpointManager, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, int | None]] = []

    @manager.on("phase_completed")
    def completed(event: Event) -> None:
        assert (manager.session_dir(P, S) / "phase_1_concept" / "checkpoint.md").exists()  # on disk already
        seen.append((event.name, event.phase))

    manager.on("agent_output_saved", lambda e: seen.append((e.name, e.phase)))
    manager.on("feedback_saved", lambda e: seen.append((e.name, e.phase)))
    manager.on("session_completed", lambda e: seen.append((e.name, e.phase)))

    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    manager.on("checkpoint_saved", broken)
    with caplog.at_level(logging.ERROR, logger="haytham"):
        manager.save_agent_output(P, S, 1, "a", "x")
        manager.save_checkpoint(P, S, 1, "completed", [{"agent_name": "a"}])
        manager.save_user_feedback(P, S, 1, True, True)
        for phase in (2, 3, 6, 7):
            manager.save_checkpoint(P, S, phase, "completed", [])
    assert seen[:3] == [("agent_output_saved", 1), ("phase_completed", 1), ("feedback_saved", 1)]
    assert seen[-1] == ("session_completed", None)
    assert "subscriber bug" in caplog.text
    assert manager.load_session(P, S)["status"] == "completed"
    assert manager.validate_session(P, S) == []
    with pytest.raises(InvalidArgumentError, match="not one of"):
        manager.on("phase_done", broken)  # type: ignore[arg-type]


def test_a_save_after_start_attempt_keeps_the_attempt_number(manager: CheckpointManager) -> None:
    manager.save_checkpoint(P, S, 1, "completed", [])
    assert manager.start_attempt(P, S, 1) == 2
    manager.save_checkpoint(P, S, 1, "completed", [])  # no retry_count given
    assert manager.load_checkpoint(P, S, 1).retry_count == 1
    assert [a.number for a in manager.load_attempts(P, S, 1)] == [1, 2]


def test_a_projects_changelog_is_not_taken_for_a_history_entry(tmp_path: Path) -> None:
    from haytham import ProjectManager

    projects = ProjectManager(base_dir=tmp_path)
    project = projects.create_project("ada", "A marketplace for solo founders")
    session = projects.start_session(project["project_id"])
    projects.complete_session(project["project_id"], session["session_id"], "# Requirements\n")
    assert (tmp_path / project["project_id"] / "history" / "changelog.md").is_file()
    assert CheckpointManager(base_dir=tmp_path).validate_paths() == []


def test_an_entry_that_is_a_symlink_inside_the_tree_is_still_read(manager: CheckpointManager) -> None:
    """Entries are opened by name in their folder without following a link; a link is then
    read by its path, which follows one that stays inside the base directory."""
    manager.save_checkpoint(P, S, 1, "completed", [], name="kept")
    folder = manager.session_dir(P, S) / "history"
    (entry,) = folder.iterdir()
    elsewhere = manager.session_dir(P, S) / "moved.md"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert [e.name for e in CheckpointManager(manager.base_dir).history(P, S)] == ["kept"]


def test_a_history_folder_linked_out_of_the_tree_shows_nothing_of_it(
    manager: CheckpointManager, tmp_path: Path
) -> None:
    from haytham.store import history

    manager.save_checkpoint(P, S, 1, "completed", [], name="outside")
    session = manager.session_dir(P, S)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    (session / "history").rename(outside)
    (session / "history").symlink_to(outside)
    entries, issues = history.read_entries(session)
    assert entries == []
    assert len(issues) == 1 and "leads out of" in issues[0].message, issues
    assert issues[0].path is not None and issues[0].path.parent == session / "history"


@pytest.mark.parametrize(
    "values",
    [
        (None, 1, "Concept", 1, "completed", "2024-01-01T00:00:00Z", None, None, "x\n", None, None),
        ("3f2a9c1b04de", 2, "é\u2028\ud800", 3, "failed", "t", 'n"\\', "r\x00", "😀", "fb\n", ("a", "o")),
        (None, True, "p", 1, "s", "t", None, None, "c", None, None),  # JSON's true, not 1
        (None, 1, "p", 1.0, "s", "t", None, None, "c", None, None),
        (None, 1, "p", 1, "s", "t", 5, None, "c", None, None),
        (None, 10**40, "p", -1, "s", "t", "", "", "", None, ("a", "b", "c")),
    ],
)
def test_an_entry_id_hashes_the_json_text_of_its_values(values: tuple[object, ...]) -> None:
    """``_id_of`` writes the JSON text itself for speed; it must be ``json.dumps``'s, byte
    for byte, or every id already written stops verifying."""
    import hashlib
    import json

    from haytham.store import history

    *content, feedback, original = values
    if feedback is not None:
        content += ["review", feedback]
    if original is not None:
        content += ["correction", *original]  # type: ignore[misc]
    expected = hashlib.sha256(json.dumps(content).encode("utf-8")).hexdigest()[:12]
    assert history._id_of(content) == expected
