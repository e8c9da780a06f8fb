"""HaythamSaver's reads do the work of the call, not of the thread: counted, never timed.

A thread of 200 checkpoints is written through the saver. Reading its newest checkpoint
opens and parses that checkpoint and its writes alone, whatever the thread's length, and a
second read by the same saver opens and parses nothing; yet a file changed behind the
saver's back (a hand edit that keeps the size, a checkpoint another process added) is seen
at the very next read. The saver's cache is a cache: the files decide.
"""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

try:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.graph import END, START, StateGraph
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("LangGraph is not installed: pip install 'haytham[langgraph]'", allow_module_level=True)

from workcount import WorkCounters

from haytham.integrations.langgraph import HaythamSaver, cache
from haytham.store import fs

P = "langgraph"
THREAD: Any = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
CHECKPOINTS = 200
HOUR_NS = 3600 * 10**9


def _thread(saver: HaythamSaver, count: int) -> list[str]:
    """``count`` checkpoints of one thread, each with a task's writes; their ids, oldest first."""
    ids: list[str] = []
    config: Any = THREAD
    for step in range(count):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"draft": f"draft {step:04d}", "notes": [f"note {step}"]}
        checkpoint["channel_versions"] = {"draft": step + 1, "notes": step + 1}
        config = saver.put(config, checkpoint, {"step": step, "source": "loop"}, {})
        saver.put_writes(config, [("draft", f"next {step:04d}")], f"task-{step}")
        ids.append(checkpoint["id"])
    return ids


def _settle(root: Path) -> None:
    """Every file and folder under ``root`` last modified an hour ago, as a thread written
    yesterday is (the change time stays now: the saver's rule looks at both)."""
    old = os.stat(root).st_mtime_ns - HOUR_NS
    for directory, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(directory, name), ns=(old, old))
        os.utime(directory, ns=(old, old))


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled as soon as they are written (the real rule waits 0.1 s after
    their last change; ``test_a_file_changed_a_moment_ago_is_read_again`` keeps it)."""
    monkeypatch.setattr(cache, "RACY_NS", -(10**15))


def test_the_newest_checkpoint_of_a_long_thread_reads_two_files_then_none(
    tmp_path: Path, counters: WorkCounters, settled_at_once: None
) -> None:
    ids = _thread(HaythamSaver(tmp_path, P), CHECKPOINTS)
    saver = HaythamSaver(tmp_path, P)  # a new process's saver: nothing kept yet
    counters.reset()
    newest = saver.get_tuple(THREAD)
    assert newest is not None and newest.config["configurable"]["checkpoint_id"] == ids[-1]
    assert newest.pending_writes == [("task-199", "draft", "next 0199")]
    assert (counters.opened, counters.parsed) == (2, 2)  # the checkpoint and its writes, of 400 files
    assert counters.listed == 1

    counters.reset()
    again = saver.get_tuple(THREAD)
    assert again == newest
    assert (counters.opened, counters.parsed, counters.listed) == (0, 0, 0)
    assert counters.stated <= 3  # the folder, the checkpoint, its writes

    counters.reset()
    middle = saver.get_tuple({"configurable": {**THREAD["configurable"], "checkpoint_id": ids[100]}})
    assert middle is not None and middle.checkpoint["channel_values"]["draft"] == "draft 0100"
    assert (counters.opened, counters.parsed) == (2, 2)


def test_a_listing_keeps_what_is_listed_again_and_a_third_one_parses_none(
    tmp_path: Path, counters: WorkCounters, settled_at_once: None
) -> None:
    ids = _thread(HaythamSaver(tmp_path, P), CHECKPOINTS)
    saver = HaythamSaver(tmp_path, P)
    counters.reset()
    first = list(saver.list(THREAD))
    assert [t.config["configurable"]["checkpoint_id"] for t in first] == ids[::-1]
    assert counters.opened == counters.parsed == 2 * CHECKPOINTS
    assert saver._files._sections == {}  # a thread listed once: none of its text is kept
    counters.reset()
    assert list(saver.list(THREAD)) == first  # asked again: read, and kept this time
    assert counters.opened == counters.parsed == 2 * CHECKPOINTS
    counters.reset()
    assert list(saver.list(THREAD)) == first
    assert (counters.opened, counters.parsed) == (0, 0)
    counters.reset()
    assert [t.checkpoint["id"] for t in saver.list(THREAD, limit=1)] == [ids[-1]]
    assert (counters.opened, counters.parsed) == (0, 0)


def test_a_file_listed_once_then_changed_is_not_kept_on_its_next_listing(
    tmp_path: Path, counters: WorkCounters, settled_at_once: None
) -> None:
    """The first read of a listing remembers the file's identity: a changed file read again
    is a first read of the new file, not a second of the old."""
    _thread(HaythamSaver(tmp_path, P), 3)
    saver = HaythamSaver(tmp_path, P)
    list(saver.list(THREAD))
    newest = saver.get_tuple(THREAD)
    assert newest is not None  # get_tuple keeps what it reads at once: the newest two files
    kept = set(saver._files._sections)
    assert len(kept) == 2
    folder = saver.session_dir("long") / "langgraph" / "root"
    oldest = sorted(folder.glob("*.md"))[0]
    old = oldest.stat()
    oldest.write_text(oldest.read_text().replace("draft 0000", "draft 9000"))
    os.utime(oldest, ns=(old.st_atime_ns, old.st_mtime_ns - HOUR_NS))
    counters.reset()
    listed = list(saver.list(THREAD))
    assert listed[-1].checkpoint["channel_values"]["draft"] == "draft 9000"
    assert (counters.opened, counters.parsed) == (4, 4)  # the two newest were kept
    assert set(saver._files._sections) == kept | {str(f) for f in folder.glob("*.md") if f != oldest}
    counters.reset()
    assert list(saver.list(THREAD)) == listed
    assert (counters.opened, counters.parsed) == (1, 1)  # the edited file, kept now


def test_values_read_twice_are_objects_of_their_own(tmp_path: Path, settled_at_once: None) -> None:
    saver = HaythamSaver(tmp_path, P)
    _thread(saver, 3)
    first = saver.get_tuple(THREAD)
    assert first is not None
    first.checkpoint["channel_values"]["notes"].append("changed by the caller")
    first.checkpoint["channel_versions"]["draft"] = 99
    second = saver.get_tuple(THREAD)
    assert second is not None
    assert second.checkpoint["channel_values"]["notes"] == ["note 2"]
    assert second.checkpoint["channel_versions"]["draft"] == 3


def test_a_hand_edit_that_keeps_the_size_is_seen_at_the_next_read(
    tmp_path: Path, counters: WorkCounters, settled_at_once: None
) -> None:
    ids = _thread(HaythamSaver(tmp_path, P), CHECKPOINTS)
    _settle(tmp_path)
    saver = HaythamSaver(tmp_path, P)
    assert saver.get_tuple(THREAD).checkpoint["channel_values"]["draft"] == "draft 0199"  # type: ignore[union-attr]
    newest = saver.session_dir("long") / "langgraph" / "root" / f"{ids[-1]}.md"
    text = newest.read_text("utf-8")
    edited = text.replace("draft 0199", "draft 9199")
    assert len(edited) == len(text) and edited != text
    before = os.stat(newest)
    with open(newest, "r+", encoding="utf-8") as handle:  # in place: same inode, same size
        handle.write(edited)
    os.utime(newest, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert os.stat(newest).st_ino == before.st_ino and os.stat(newest).st_size == before.st_size

    counters.reset()
    found = saver.get_tuple(THREAD)
    assert found is not None and found.checkpoint["channel_values"]["draft"] == "draft 9199"
    assert (counters.opened, counters.parsed) == (1, 1)  # the edited file only; its writes are kept
    assert [t.checkpoint["channel_values"]["draft"] for t in saver.list(THREAD, limit=1)] == ["draft 9199"]


def test_a_checkpoint_kept_through_a_link_is_read_again_when_its_target_changes(
    tmp_path: Path, counters: WorkCounters, settled_at_once: None
) -> None:
    """A checkpoint file that is a link inside the tree is kept under its target's identity
    (the ``fstat`` of what was read), so an edit of the target, which leaves the link itself
    as it was, is seen at the next read."""
    ids = _thread(HaythamSaver(tmp_path, P), 3)
    folder = HaythamSaver(tmp_path, P).session_dir("long") / "langgraph" / "root"
    newest = folder / f"{ids[-1]}.md"
    target = tmp_path / "kept-elsewhere.md"
    os.replace(newest, target)
    newest.symlink_to(target)
    _settle(tmp_path)
    saver = HaythamSaver(tmp_path, P)
    assert saver.get_tuple(THREAD).checkpoint["channel_values"]["draft"] == "draft 0002"  # type: ignore[union-attr]
    link_before = os.lstat(newest)
    target.write_text(target.read_text("utf-8").replace("draft 0002", "draft 7777"), "utf-8")
    assert os.lstat(newest) == link_before

    counters.reset()
    found = saver.get_tuple(THREAD)
    assert found is not None and found.checkpoint["channel_values"]["draft"] == "draft 7777"
    assert (counters.opened, counters.parsed) == (1, 1)
    _settle(tmp_path)
    saver.get_tuple(THREAD)
    counters.reset()
    assert saver.get_tuple(THREAD) == saver.get_tuple(THREAD)
    assert (counters.opened, counters.parsed) == (0, 0)  # kept while the target stays as it is


def test_a_checkpoint_another_saver_added_is_seen_at_the_next_read(
    tmp_path: Path, settled_at_once: None
) -> None:
    _thread(HaythamSaver(tmp_path, P), 5)
    _settle(tmp_path)
    reader = HaythamSaver(tmp_path, P)
    assert len(list(reader.list(THREAD))) == 5
    ids = _thread(HaythamSaver(tmp_path, P), 1)  # another process's saver
    newest = reader.get_tuple(THREAD)
    assert newest is not None and newest.checkpoint["id"] == ids[-1]
    assert len(list(reader.list(THREAD))) == 6
    reader.delete_thread("long")
    assert reader.get_tuple(THREAD) is None


def test_a_file_changed_a_moment_ago_is_read_again(tmp_path: Path, counters: WorkCounters) -> None:
    """The real rule: a file whose last change is not yet ``RACY_NS`` old is never kept, as a
    second change within the same tick of the file system's clock could keep its times."""
    _thread(HaythamSaver(tmp_path, P), 3)
    future = os.stat(tmp_path).st_mtime_ns + HOUR_NS  # "a moment ago" for any clock
    for directory, _, names in os.walk(tmp_path):
        for name in names:
            os.utime(os.path.join(directory, name), ns=(future, future))
    saver = HaythamSaver(tmp_path, P)
    assert saver.get_tuple(THREAD) is not None
    counters.reset()
    assert saver.get_tuple(THREAD) is not None
    assert (counters.opened, counters.parsed) == (2, 2)


# ------------------------------------------------------------------ writes


class State(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    step: int


def _write(state: State) -> State:
    step = state.get("step", 0) + 1
    return {"notes": [f"part {step}"], "step": step}


def test_a_graph_run_with_async_durability_never_polls_the_session_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's default durability puts and writes from several threads at once; the
    saver's threads wait on each other (a thread lock wakes the next at once), never by the
    file lock's sleeps, which only another process's writes may cause."""
    builder = StateGraph(State)
    builder.add_node("write", _write)
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", lambda s: "write" if s["step"] < 10 else END, ["write", END])
    sleeps: list[float] = []

    def counted_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        time.sleep(seconds)

    # the lock's clock, as the store's fs module sees it: its sleeps counted, nothing else changed
    monkeypatch.setattr(fs, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=counted_sleep))
    saver = HaythamSaver(tmp_path, P)
    for thread in ("a", "b"):
        graph = builder.compile(checkpointer=saver)
        result = graph.invoke({"step": 0}, {"configurable": {"thread_id": thread}}, durability="async")
        assert result["step"] == 10
    assert len(list(saver.list({"configurable": {"thread_id": "a"}}))) == 12
    assert sleeps == []


def test_each_put_and_put_writes_replaces_one_file_with_two_fsyncs(
    tmp_path: Path, counters: WorkCounters
) -> None:
    """A checkpoint and a task's writes are each one new file made durable (the file, then its
    folder): the count a change to the write path must not grow."""
    saver = HaythamSaver(tmp_path, P)
    _thread(saver, 1)  # the session made
    counters.reset()
    config = saver.put(THREAD, empty_checkpoint(), {"step": 1}, {})
    assert counters.fsyncs == 2
    counters.reset()
    saver.put_writes(config, [("draft", "next")], "task-1")
    assert counters.fsyncs == 2
    counters.reset()
    saver.put_writes(config, [("notes", ["more"])], "task-2")  # added to the same writes file
    assert counters.fsyncs == 2
    found = saver.get_tuple(config)
    assert found is not None and [w[1] for w in found.pending_writes or []] == ["draft", "notes"]


READER = """
import sys
from haytham.integrations.langgraph import HaythamSaver
found = HaythamSaver(sys.argv[1], "langgraph").get_tuple({"configurable": {"thread_id": "long"}})
assert found is not None and found.checkpoint["channel_values"]["draft"] == "draft 0002"
print(" ".join(sorted(m for m in sys.modules if m.startswith(("haytham", "langgraph.types", "langsmith")))))
"""


def test_a_process_that_only_reads_imports_only_the_read_path(tmp_path: Path) -> None:
    """A new process that reads a checkpoint imports the saver, the file format and the
    guarded read, not the store's write path, the review workflow or LangGraph's run-time
    types (with langchain's tracers): what a reader pays before its first read."""
    _thread(HaythamSaver(tmp_path, P), 3)
    done = subprocess.run(
        [sys.executable, "-c", READER, str(tmp_path)], capture_output=True, text=True, check=True
    )
    imported = set(done.stdout.split())
    assert "haytham.integrations.langgraph.saver" in imported
    for heavy in (
        "haytham.store.manager",
        "haytham.store.handle",
        "haytham.format.workflow",
        "haytham.format.markdown",  # the general parse, for a file edited by hand
    ):
        assert heavy not in imported
    assert "haytham.integrations.langgraph.review" not in imported
    assert not any(m.startswith(("langgraph.types", "langsmith")) for m in imported)


def test_prune_leaves_a_hand_made_file_it_cannot_name_and_prunes_the_rest(tmp_path: Path) -> None:
    """A file a person put in a namespace folder, whose name is no checkpoint id haytham
    writes (a space in it), is neither read as a checkpoint nor deleted by ``prune``: the
    prune goes on past it (it raised UnsafeNameError half-way before)."""
    saver = HaythamSaver(tmp_path, P)
    ids = _thread(saver, 3)
    folder = saver.session_dir("long") / "langgraph" / "root"
    hand_made = folder / "0 notes by hand.md"  # sorts before every id: "older" than all
    hand_made.write_text("# my notes\n", "utf-8")
    saver.prune(["long"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["0 notes by hand.md", f"{ids[-1]}.md", f"{ids[-1]}.writes.md"]
    )
    assert hand_made.read_text("utf-8") == "# my notes\n"
    later = folder / "zz notes by hand.md"  # sorts after every id: the greatest name
    later.write_text("# more notes\n", "utf-8")
    for reader in (saver, HaythamSaver(tmp_path, P)):  # warm, and cold (the newest from the names)
        newest = reader.get_tuple(THREAD)
        assert newest is not None and newest.checkpoint["id"] == ids[-1]
        assert [t.checkpoint["id"] for t in reader.list(THREAD)] == [ids[-1]]
    saver.prune(["long"])
    assert later.read_text("utf-8") == "# more notes\n" and (folder / f"{ids[-1]}.md").exists()


def test_a_save_makes_its_swap_durable_after_letting_the_sessions_lock_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``put`` and ``put_writes`` fsync the namespace folder (what makes their file's swap
    durable) once the session's lock is free, so that the next writer, which waited for the
    lock, writes meanwhile; each still does it before it returns."""
    import fcntl

    saver = HaythamSaver(tmp_path, P)
    _thread(saver, 1)  # the session exists
    lock_file = saver.session_dir("long") / ".haytham.lock"
    folder = saver.session_dir("long") / "langgraph" / "root"
    seen: list[str] = []
    real = fs.fsync_dir

    def observed(directory: Any) -> None:  # the real fsync, with a look at the lock first
        if Path(directory) == folder:
            probe = os.open(lock_file, os.O_RDWR)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append("free")
            except BlockingIOError:
                seen.append("held")
            finally:
                os.close(probe)  # lets the probe's lock go
        real(directory)

    monkeypatch.setattr(fs, "fsync_dir", observed)
    _thread(saver, 2)  # two checkpoints, each with a task's writes
    assert seen == ["free"] * 4


def test_a_folder_deleted_before_its_fsync_has_nothing_left_to_make_durable(tmp_path: Path) -> None:
    """A thread deleted (``delete_thread``) between a save's swap and its folder's fsync: the
    save does not fail for it; any other refusal of the fsync still raises."""
    from haytham.errors import StorageError
    from haytham.integrations.langgraph import saver as saver_module

    saver_module._sync_folder(tmp_path / "deleted")  # no error
    (tmp_path / "a file").write_text("", "utf-8")
    with pytest.raises(StorageError):  # any other refusal: a file where the folder should be
        saver_module._sync_folder(tmp_path / "a file" / "root")
