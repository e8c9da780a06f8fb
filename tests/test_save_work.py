"""The work a save does, pinned by counting, never by timing (issue 15, S7/S8).

A save reads each file it replaces once (the same bytes serve the comparison with what is
saved, the merge with a person's added sections and the journal's before-image), opens the
session once, under its lock, and lists each folder once. What the process opens and lists
is observed through Python's audit hooks (``os.open``, ``os.listdir``, ``os.scandir``):
the real calls on real files, nothing replaced.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workcount import WorkCounters

from haytham.errors import DocumentError
from haytham.format import AGENT_OUTPUT, CHECKPOINT, FEEDBACK, MANIFEST
from haytham.store import fs, journal
from haytham.store import reads as reads_module
from haytham.store.manager import CheckpointManager

P, S = "acme", "s"
AGENTS = ("analyst", "critic", "writer")


class _Calls:
    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()
        self.listings: Counter[str] = Counter()


_WATCHING: list[_Calls] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHING:
        return
    calls = _WATCHING[-1]
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        flags = args[2] if isinstance(args[2], int) else 0
        path = os.fspath(args[0])
        if flags & (os.O_WRONLY | os.O_RDWR) == 0 and not os.path.isdir(path):
            calls.reads[path] += 1
    elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, os.PathLike)):
        calls.listings[os.fspath(args[0])] += 1


sys.addaudithook(_hook)


@contextlib.contextmanager
def watching() -> Iterator[_Calls]:
    """What the block opens for reading (files only, by path) and lists, by folder."""
    calls = _Calls()
    _WATCHING.append(calls)
    try:
        yield calls
    finally:
        _WATCHING.pop()


def _phase(manager: CheckpointManager, text: str, comments: str = "Looks good.") -> None:
    outputs = {a: {"output_content": f"{a}: {text}\n", "duration": 1.5, "model": "m"} for a in AGENTS}
    runs = [{"agent_name": a, "tokens": 10, "cost": 0.01, "duration": 1.5} for a in AGENTS]
    review = {"reviewed": True, "approved": True, "comments": comments}
    manager.save_phase(P, S, 1, outputs, "completed", review, agents=runs)


def _per_call(manager: CheckpointManager, text: str, comments: str = "Looks good.") -> None:
    for agent in AGENTS:
        manager.save_agent_output(P, S, 1, agent, f"{agent}: {text}\n", duration=1.5, model="m")
    runs = [{"agent_name": a, "tokens": 10, "cost": 0.01, "duration": 1.5} for a in AGENTS]
    manager.save_checkpoint(P, S, 1, "completed", runs)
    manager.save_user_feedback(P, S, 1, True, True, comments=comments)


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    made = CheckpointManager(tmp_path)
    made.create_session(P, S, "ada")
    return made


def _replaced(manager: CheckpointManager) -> list[str]:
    """The session's files a second save of phase 1 replaces (history entries are new)."""
    phase = manager.phase_dir(P, S, 1)
    names = [f"{a}.md" for a in AGENTS] + ["checkpoint.md", "user_feedback.md"]
    return [os.fspath(phase / n) for n in names] + [
        os.fspath(manager.session_dir(P, S) / "session_manifest.md")
    ]


def test_save_phase_reads_each_file_it_replaces_once(manager: CheckpointManager) -> None:
    _phase(manager, "first")
    with watching() as calls:
        _phase(manager, "second", "Better now.")
    for path in _replaced(manager):
        assert calls.reads[path] == 1, path  # compared, merged and hashed from one read
    # the manifest once (under the lock), the 5 files of the phase, the feedback of the phase
    # once more for the session's state, and the session's workflow.yaml probe: no more
    session_reads = {p: n for p, n in calls.reads.items() if p.startswith(os.fspath(manager.base_dir))}
    assert sum(session_reads.values()) <= 8 + len(manager.session_workflow(P, S).phases) * 2


def test_save_phase_lists_each_folder_once(manager: CheckpointManager) -> None:
    _phase(manager, "first")
    with watching() as calls:
        _phase(manager, "second", "Better now.")
    assert calls.listings, "a save lists the phase folder"
    assert max(calls.listings.values()) <= 2  # the phase folder: once, and once for its outputs
    phase = os.fspath(manager.phase_dir(P, S, 1))
    session = os.fspath(manager.session_dir(P, S))
    assert set(calls.listings) <= {phase, session}
    assert calls.listings[session] == 1


def test_a_first_save_opens_no_file_that_does_not_exist_yet(manager: CheckpointManager) -> None:
    """The phase folder's listing says which of its files exist: those that do not are not
    opened (a first save), and the history folder that does not exist yet is not looked in."""
    with watching() as calls:
        _phase(manager, "first")
    phase = os.fspath(manager.phase_dir(P, S, 1))
    assert not [p for p in calls.reads if p.startswith(phase + os.sep)]
    assert not [p for p in calls.reads if f"{os.sep}history{os.sep}" in p]


@pytest.mark.parametrize("save", [_phase, _per_call], ids=["save_phase", "per_call"])
def test_each_save_parses_nothing_it_wrote_itself(
    manager: CheckpointManager, save: Any, counters: WorkCounters
) -> None:
    """The written records go into the read cache: the next save and the next load find
    them there instead of parsing the files again."""
    save(manager, "first")
    counters.reset()
    save(manager, "second", "Better now.")
    manager.load_session(P, S)
    manager.get_phase_outputs(P, S)
    assert counters.parsed <= 1  # the feedback's own check of its plain rendering, at most


def test_the_per_call_saves_open_the_manifest_once_each(manager: CheckpointManager) -> None:
    _per_call(manager, "first")
    with watching() as calls:
        _per_call(manager, "second", "Better now.")
    manifest = os.fspath(manager.session_dir(P, S) / "session_manifest.md")
    assert calls.reads[manifest] == 5  # five calls, each reads the session once, under its lock


def test_a_review_save_reads_the_outputs_once_for_its_check_and_its_manifest(
    manager: CheckpointManager,
) -> None:
    """A review of outputs saved a moment ago (too new for the process's digests to remember
    them) derives the session twice under its lock, for the check of its move and for the
    manifest: each output file is read once for both (it was read once for each)."""
    for agent in AGENTS:
        manager.save_agent_output(P, S, 1, agent, f"{agent}: text\n", duration=1.5, model="m")
    runs = [{"agent_name": a, "tokens": 10, "cost": 0.01, "duration": 1.5} for a in AGENTS]
    manager.save_checkpoint(P, S, 1, "completed", runs)
    phase = manager.phase_dir(P, S, 1)
    with watching() as calls:
        manager.save_user_feedback(P, S, 1, True, True, comments="Looks good.")
    assert [calls.reads[os.fspath(phase / f"{a}.md")] for a in AGENTS] == [1, 1, 1]
    assert manager.state(P, S).phase(1).state == "approved"  # the review moved the phase


def test_the_journal_records_the_before_image_of_the_bytes_read(manager: CheckpointManager) -> None:
    """The before-hash the record keeps is the hash of the file as it was: recovery of a
    record whose target a person changed since leaves the person's edit alone."""
    _phase(manager, "first")
    phase = manager.phase_dir(P, S, 1)
    before = {n: (phase / n).read_bytes() for n in ("analyst.md", "checkpoint.md", "user_feedback.md")}
    records: list[bytes] = []
    original = journal._write_synced

    def keep_record(path: Path, data: bytes, **options: bool) -> None:
        if path.name == ".haytham-journal":
            records.append(data)
        original(path, data, **options)

    journal._write_synced = keep_record  # type: ignore[assignment]
    try:
        _phase(manager, "second", "Better now.")
    finally:
        journal._write_synced = original  # type: ignore[assignment]
    decoded = journal.decode(records[-1])
    assert decoded is not None
    steps = {Path(s.path).name: s for s in decoded[1] if s.kind == "replace"}
    for name, data in before.items():
        assert steps[name].before == journal.digest(data)
    assert steps["session_manifest.md"].before != journal.ABSENT


def test_a_hand_added_section_survives_a_save_phase(manager: CheckpointManager) -> None:
    _phase(manager, "first")
    path = manager.phase_dir(P, S, 1) / "checkpoint.md"
    path.write_text(path.read_text("utf-8") + "\n## My notes\n\nKeep this.\n", "utf-8")
    _phase(manager, "second", "Better now.")
    assert "## My notes\n\nKeep this.\n" in path.read_text("utf-8")
    assert CHECKPOINT.load(path).status == "completed"
    for kind, name in ((AGENT_OUTPUT, "writer.md"), (FEEDBACK, "user_feedback.md")):
        assert kind.load(manager.phase_dir(P, S, 1) / name) is not None
    assert MANIFEST.load(manager.session_dir(P, S) / "session_manifest.md").status == "in_progress"
    assert manager.validate_session(P, S) == []


_TITLES = (
    st.text(alphabet=st.sampled_from("abcdefghij XYZ"), min_size=1, max_size=12).map(str.strip).filter(bool)
)


@st.composite
def _edits(draw: st.DrawFn) -> tuple[str, Callable[[bytes], bytes]]:
    """A file of the phase and a person's edit of it: added sections, CRLF line endings,
    bytes that are not UTF-8, a heading in the middle, or nothing left at all."""
    name = draw(st.sampled_from(["writer.md", "checkpoint.md", "user_feedback.md"]))
    kind = draw(st.sampled_from(["append", "crlf", "not-utf8", "middle", "empty"]))
    title = draw(_TITLES)
    body = draw(st.text(alphabet=st.sampled_from("abc -*#\n"), max_size=40))

    def edit(data: bytes) -> bytes:
        if kind == "append":
            return data + f"\n## {title}\n\n{body}\n".encode()
        if kind == "crlf":
            return data.replace(b"\n", b"\r\n")
        if kind == "not-utf8":
            return data + b"\n\xff\xfe\n"
        if kind == "middle":
            lines = data.split(b"\n")
            middle = len(lines) // 2
            return b"\n".join([*lines[:middle], f"## {title}".encode(), body.encode(), *lines[middle:]])
        return b""

    return name, edit


_KINDS = {"writer.md": AGENT_OUTPUT, "checkpoint.md": CHECKPOINT, "user_feedback.md": FEEDBACK}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=_edits())
def test_a_save_over_a_hand_edited_file_writes_what_render_over_the_file_gives(
    tmp_path_factory: pytest.TempPathFactory, edit: tuple[str, Callable[[bytes], bytes]]
) -> None:
    """Differential: the save renders over the bytes it read once (``render_over_data``);
    the result is what ``render_at`` gives over the same file read on its own, and the
    journal's before-image is the hash of exactly those bytes."""
    manager = CheckpointManager(tmp_path_factory.mktemp("edit"))
    manager.create_session(P, S, "ada")
    _phase(manager, "first")
    name, change = edit
    path = manager.phase_dir(P, S, 1) / name
    old = change(path.read_bytes())
    path.write_bytes(old)
    records: list[bytes] = []
    original = journal._write_synced

    def keep_record(target: Path, data: bytes, **options: bool) -> None:
        if target.name == ".haytham-journal":
            records.append(data)
        original(target, data, **options)

    journal._write_synced = keep_record  # type: ignore[assignment]
    try:
        _phase(manager, "second", "Better now.")
    except DocumentError:
        return  # a feedback file that does not parse is refused as before (test_hand_edits)
    finally:
        journal._write_synced = original  # type: ignore[assignment]
    written = path.read_bytes()
    if name == "user_feedback.md":
        assert FEEDBACK.load(path).comments == "Better now."  # merged by rewrite_feedback
    else:
        kind = _KINDS[name]
        record = kind.load(path)
        elsewhere = path.parent / f".render-at-{name}"
        elsewhere.write_bytes(old)
        assert written == kind.render_at(record, elsewhere).encode("utf-8")
        assert written == kind.render_over_data(record, path, old).encode("utf-8")
    decoded = journal.decode(records[-1])
    assert decoded is not None
    step = next(s for s in decoded[1] if s.kind == "replace" and Path(s.path).name == name)
    assert step.before == journal.digest(old)


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(st.sampled_from(["a", "bb", "c.d", ".x", "..y", "z z", "é"]), max_size=6),
    depth=st.integers(min_value=0, max_value=6),
)
def test_the_parts_below_a_folder_are_what_relpath_gives(names: list[str], depth: int) -> None:
    """Differential: ``fs.parts_below`` (string slicing) against ``os.path.relpath``."""
    absolute = os.path.abspath(os.sep + os.sep.join(names))
    start = os.path.abspath(os.sep + os.sep.join(names[: min(depth, len(names))]))
    expected = os.path.relpath(absolute, start).split(os.sep) if absolute != start else []
    assert fs.parts_below(absolute, start) == expected


def test_a_large_output_is_read_again_rather_than_held(manager: CheckpointManager) -> None:
    """A file above ``reads.KEEP_BYTES`` is not kept for the whole operation (a save of several
    large outputs holds one at a time); it is read again where needed, with the same result."""
    big = "x" * (reads_module.KEEP_BYTES + 10) + "\n"
    manager.save_phase(P, S, 1, {"writer": big}, "completed")
    path = manager.phase_dir(P, S, 1) / "writer.md"
    with watching() as calls:
        manager.save_phase(P, S, 1, {"writer": big + "more\n"}, "completed")
    assert calls.reads[os.fspath(path)] >= 2  # not held: read for the comparison and again
    assert AGENT_OUTPUT.load(path).content == big + "more\n"
    assert manager.get_phase_outputs(P, S, [1]) == {1: {"writer": big + "more\n"}}
    assert manager.validate_session(P, S) == []


def test_a_save_over_an_output_above_the_other_files_limit_keeps_its_added_section(
    manager: CheckpointManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent output may be larger than the limit of the files parsed whole (its kind's
    ``max_bytes``): a save over one reads it up to that limit and keeps a person's section.
    The other files' limit is made small here, so the output need not be 64 MiB."""
    from haytham.format import guard

    monkeypatch.setattr(guard, "MAX_DOCUMENT_BYTES", 1 << 20)
    big = "x" * (2 << 20) + "\n"
    manager.save_phase(P, S, 1, {"writer": big}, "completed")
    path = manager.phase_dir(P, S, 1) / "writer.md"
    notes = "## My notes\n\nKeep this.\n\n"
    path.write_text(path.read_text("utf-8").replace("## Output\n", notes + "## Output\n", 1), "utf-8")
    manager.save_phase(P, S, 1, {"writer": big + "more\n"}, "completed")
    assert notes + "## Output\n" in path.read_text("utf-8")
    assert AGENT_OUTPUT.load(path).content == big + "more\n"
