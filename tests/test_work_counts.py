"""The complexity class of the slow paths, pinned by counting work, never by timing.

Each test runs an operation on a tree of N and of 2N (and 3N) identical sessions, or on a
history of N and 2N entries, and compares the work ``tests/workcount.py`` counted from
outside haytham (files opened and parsed, stats, directory listings, index rows, ordering
steps). Linear
work grows by the same amount for each N added; a quadratic path fails these tests
deterministically, on any machine, at any load.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from click.testing import CliRunner
from history_order import reference_order
from workcount import WorkCounters

from haytham.cli import main as cli_main
from haytham.format.layout import MANIFEST_FILE
from haytham.records import HistoryEntry
from haytham.store import history, scan
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.store.manager import CheckpointManager

P = "acme"


def _template(base: Path) -> Path:
    """One session with two saved phases (outputs, checkpoints, history) to copy."""
    manager = CheckpointManager(base)
    manager.create_session(P, "s-000", "ada")
    for phase in (1, 2):
        manager.save_agent_output(P, "s-000", phase, "writer", f"phase {phase} text\n")
        manager.save_checkpoint(P, "s-000", phase, "completed", [{"agent_name": "writer"}])
    return manager.session_dir(P, "s-000")


def _grow(template: Path, count: int) -> None:
    """Copies of ``template`` beside it, up to ``count`` sessions, each with its own id."""
    sessions = template.parent
    for number in range(1, count):
        name = f"s-{number:03d}"
        target = sessions / name
        if target.exists():
            continue
        shutil.copytree(template, target)
        manifest = target / MANIFEST_FILE
        manifest.write_text(manifest.read_text("utf-8").replace("s-000", name), "utf-8")


def _work(counters: WorkCounters, operation: Callable[[], object]) -> dict[str, int]:
    """The work ``operation`` does, as a new process would do it: this process's digests of
    output files (``progress.DIGESTS``, which remembers a file only once it is older than
    ``progress.RACY_NS``) are forgotten first, so that no count depends on the clock."""
    _progress.DIGESTS.clear()
    counters.reset()
    operation()
    return counters.snapshot()


def _assert_linear(runs: list[dict[str, int]], keys: Iterable[str]) -> None:
    """The work of N, 2N and 3N grows by the same amount for each N added."""
    first, second, third = runs
    for key in keys:
        grown = second[key] - first[key]
        assert grown > 0, (key, runs)
        assert third[key] - second[key] == grown, (key, runs)


@pytest.fixture
def template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    return _template(tmp_path / "projects")


def test_validating_a_tree_does_the_same_work_per_session(template: Path, counters: WorkCounters) -> None:
    base = template.parents[2]
    runs = []
    for count in (4, 8, 12):
        _grow(template, count)
        counters.reset()
        result = CliRunner().invoke(cli_main.cli, ["validate", "--base-dir", str(base)])
        runs.append(counters.snapshot())
        assert result.exit_code == 0, result.output
    _assert_linear(runs, ("opened", "parsed", "listed", "stated"))
    files = [p for p in template.rglob("*") if p.is_file() and p.suffix == ".md"]
    assert runs[1]["opened"] - runs[0]["opened"] == 4 * len(files)  # each file of a session once


def test_only_validate_tree_counts_the_files(template: Path, counters: WorkCounters) -> None:
    """Without an index, ``validate_tree`` walks each session once more for the files it
    reports; ``validate_paths``, which reports none, does not."""
    base = template.parents[2]
    _grow(template, 4)
    folders = 1 + sum(1 for path in template.rglob("*") if path.is_dir())
    manager = CheckpointManager(base)
    paths = _work(counters, lambda: manager.validate_paths([base]))
    tree = _work(counters, lambda: manager.validate_tree([base]))
    assert tree["listed"] - paths["listed"] == 4 * folders
    assert tree["opened"] == paths["opened"] > 0


def test_validating_two_files_reads_only_those_files(template: Path, counters: WorkCounters) -> None:
    base = template.parents[2]
    _grow(template, 30)
    files = [template / MANIFEST_FILE, base / P / "sessions" / "s-017" / MANIFEST_FILE]
    work = _work(counters, lambda: CheckpointManager(base).validate_paths(files))
    assert work["opened"] == 2 and work["parsed"] == 2
    assert work["listed"] == 0 and work["index_rows"] == 0


def test_validating_with_an_index_reads_it_once_per_run(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """The old command validated one session at a time and reloaded the whole index for
    each: rows read grew with the square of the sessions."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    base = template.parents[2]
    runs = []
    for count in (60, 120):
        _grow(template, count)
        assert CliRunner().invoke(cli_main.cli, ["validate", "--base-dir", str(base)]).exit_code == 0
        work = _work(
            counters, lambda: CliRunner().invoke(cli_main.cli, ["validate", "--base-dir", str(base)])
        )
        assert work["index_rows"] == count  # every session remembered, the index read once
        assert work["parsed"] == 0
        runs.append(work)
    # A warm run walks the tree once: each folder of a session listed once (its files stat'ed
    # on that walk, by DirEntry.stat), and the manifest stat'ed once, to find the session; the
    # session files it reports are counted on that walk (two more walks did it before).
    folders = 1 + sum(1 for path in template.rglob("*") if path.is_dir())
    assert runs[1]["listed"] - runs[0]["listed"] == 60 * folders
    assert runs[1]["stated"] - runs[0]["stated"] == 60


FACTS_READ = 5
"""What a cold listing opens of a template session: its manifest, its two checkpoints and
the output of each of the two phases that ran (its state is derived from them and from the
review files, of which it has none: a completed phase's outputs as they are now are a fact,
compared with the digest its checkpoint recorded)."""
FACTS_PARSED = 4
"""What it parses: the two checkpoints and the two outputs (haytham's own manifests are read
by ``format.summary``)."""
FACTS_LISTED = 6
"""What a cold listing lists of a template session, each once: its folder and the five phase
folders of its mode (the derivation takes each phase's outputs from that listing, and looks
for no review the listing did not show)."""
FACTS_STATED = 11
"""What a warm listing stats of a template session, and reads nothing: its manifest, its
folder, the five phase folders of its mode (three of them still empty) and the checkpoint
and output in each of the two that ran."""


def test_listing_reads_each_fact_file_once(template: Path, counters: WorkCounters) -> None:
    """Without an index: one open a manifest, a checkpoint and an output; no ``stat`` of a
    manifest or checkpoint (the open finds them; a listing of each session folder and phase
    folder says which exist), one of each output (what its digest is remembered by)."""
    base = template.parents[2]
    runs = []
    for count in (5, 10, 15):
        _grow(template, count)
        runs.append(_work(counters, lambda: CheckpointManager(base).list_sessions()))
        assert runs[-1]["opened"] == FACTS_READ * count
        assert runs[-1]["parsed"] == runs[-1]["canonical"] == FACTS_PARSED * count
    _assert_linear(runs, ("opened", "parsed", "listed", "stated"))
    assert runs[1]["stated"] - runs[0]["stated"] == 2 * 5  # the two outputs of each new session
    assert runs[1]["listed"] - runs[0]["listed"] == FACTS_LISTED * 5
    piped = _work(counters, lambda: CliRunner().invoke(cli_main.cli, ["list", "--base-dir", str(base)]))
    assert piped["opened"] == FACTS_READ * 15 and piped["parsed"] == FACTS_PARSED * 15


def test_a_hand_edited_manifest_is_parsed_by_the_full_reader(template: Path, counters: WorkCounters) -> None:
    base = template.parents[2]
    _grow(template, 4)
    manifest = template.parent / "s-002" / MANIFEST_FILE
    manifest.write_text(manifest.read_text("utf-8").replace("- User ID: ada", "- user id:   ada"), "utf-8")
    work = _work(counters, lambda: CheckpointManager(base).list_sessions())
    assert work["opened"] == FACTS_READ * 4 and work["parsed"] == FACTS_PARSED * 4 + 1


def test_a_listing_with_an_index_stats_each_fact_file_and_reads_none(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """A warm listing: one ``stat`` a fact file of each session, each remembered row read
    twice (to check it, then newest first to show it), no file opened or parsed."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    base = template.parents[2]
    runs = []
    for count in (60, 120, 180):
        _grow(template, count)
        learning = _work(counters, lambda: CheckpointManager(base).list_sessions())
        assert learning["opened"] == FACTS_READ * 60  # only the new sessions are read
        assert learning["parsed"] == FACTS_PARSED * 60
        runs.append(_work(counters, lambda: CheckpointManager(base).list_sessions()))
        assert runs[-1]["opened"] == 0 and runs[-1]["parsed"] == 0
        assert runs[-1]["index_rows"] == 2 * count
    _assert_linear(runs, ("stated", "index_rows"))
    assert runs[1]["stated"] - runs[0]["stated"] == FACTS_STATED * 60


def test_the_library_and_the_command_share_the_index(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """``haytham list`` (a manager's copy of the built-in workflows) and ``scan.list_sessions``
    (the built-in mapping) key a session alike: after either, the other reads nothing."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    base = template.parents[2]
    _grow(template, 60)
    CheckpointManager(base).list_sessions()
    library = _work(counters, lambda: scan.list_sessions(base))
    assert library["opened"] == 0 and library["parsed"] == 0
    CliRunner().invoke(cli_main.cli, ["list", "--base-dir", str(base)])
    command = _work(counters, lambda: scan.list_sessions(base))
    assert command["opened"] == 0 and command["parsed"] == 0


def test_a_piped_listing_makes_each_row_once(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """Piped, ``haytham list`` needs every row for the widths before it prints the first: it
    makes them once (each remembered row read twice, to check it and to show it), where it
    made them twice (and read each row three times)."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    base = template.parents[2]
    _grow(template, 60)
    CheckpointManager(base).list_sessions()
    piped = _work(counters, lambda: CliRunner().invoke(cli_main.cli, ["list", "--base-dir", str(base)]))
    assert piped["opened"] == 0 and piped["index_rows"] == 2 * 60


def test_a_changed_session_is_derived_again_once(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """A review written by hand into one session of a warm index: the next listing derives
    that session alone (its manifest, checkpoints and the new review file; its outputs'
    digests are the index's, their files unchanged), the one after it nothing."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))  # no count depends on the clock
    base = template.parents[2]
    _grow(template, 60)
    CheckpointManager(base).list_sessions()
    review = template.parent / "s-031" / "phase_1_concept" / "user_feedback.md"
    review.write_text(
        "# User Feedback: Concept Expansion\n\n## Review Status\n- Reviewed: false\n- Approved: false\n",
        "utf-8",
    )
    changed = _work(counters, lambda: CheckpointManager(base).list_sessions())
    # The two outputs are neither opened nor parsed again (FACTS_READ and FACTS_PARSED count them).
    assert changed["opened"] == FACTS_READ - 2 + 1 and changed["parsed"] == FACTS_PARSED - 2 + 1
    assert changed["hashed"] == 0
    by_id = {s.session_id: s for s in CheckpointManager(base).list_sessions()}
    assert by_id["s-031"].status == "awaiting_review" and by_id["s-030"].status == "in_progress"
    again = _work(counters, lambda: CheckpointManager(base).list_sessions())
    assert again["opened"] == 0 and again["parsed"] == 0


def test_haytham_review_finds_what_awaits_from_the_listing_reading_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """``haytham review``'s list of phases awaiting review, over 60 sessions that all await
    it, comes from the warm listing (each summary's waiting phases): no session file is
    opened or parsed; a review approved by hand drops that session, reading it alone; and
    each item is what ``manager.state`` derives from the files."""
    from haytham.cli.review import awaiting_review
    from haytham.run.demo import run_demo

    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))  # no count depends on the clock
    base = tmp_path / "projects"
    manager = CheckpointManager(base)
    assert run_demo(manager, "s-000", review="manual").status == "awaiting_review"
    _grow(manager.session_dir("demo", "s-000"), 60)
    cold, _ = awaiting_review(manager)
    warm = _work(counters, lambda: awaiting_review(CheckpointManager(base)))
    assert warm["opened"] == 0 and warm["parsed"] == 0 and warm["hashed"] == 0, counters.files[:6]
    items, warnings = awaiting_review(manager)
    assert items == cold and warnings == [] and len(items) == 60
    for item in items:
        current = manager.state(item.project, item.session).current
        assert current is not None and (current.number, current.name) == (item.phase, item.name)
        assert item.finished == current.waiting_since
    review = manager.phase_dir("demo", items[31].session, 1) / "user_feedback.md"
    review.write_text(
        review.read_text("utf-8")
        .replace("Reviewed: false", "Reviewed: true")
        .replace("Approved: false", "Approved: true"),
        "utf-8",
    )
    _progress.DIGESTS.clear()
    counters.reset()
    left, _ = awaiting_review(CheckpointManager(base))
    assert [i.session for i in left] == [i.session for i in items if i != items[31]]
    assert counters.files and all(f.startswith(f"{review.parents[1]}{os.sep}") for f in counters.files)


def test_a_changed_session_hashes_no_output_the_index_remembers(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """The outputs digests a listing computed are kept in the index by the output files'
    identity: a session derived again in a new process (a review arrived) reads its
    checkpoints and the review, and hashes no output; an output edited by hand is hashed
    again (its phase's outputs, once), and the edit is seen."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))  # outputs written just now may be remembered
    base = template.parents[2]
    _grow(template, 60)
    _work(counters, lambda: CheckpointManager(base).list_sessions())
    session = template.parent / "s-031"
    review = session / "phase_1_concept" / "user_feedback.md"
    review.write_text(
        "# User Feedback: Concept Expansion\n\n## Review Status\n- Reviewed: false\n- Approved: false\n",
        "utf-8",
    )
    changed = _work(counters, lambda: CheckpointManager(base).list_sessions())
    assert changed["hashed"] == 0
    assert changed["opened"] == FACTS_READ - 2 + 1  # the manifest, the checkpoints, the review
    output = session / "phase_2_market_research" / "writer.md"
    output.write_text(output.read_text("utf-8").replace("phase 2 text", "phase 2 text, corrected"), "utf-8")
    edited = _work(counters, lambda: CheckpointManager(base).list_sessions())
    assert edited["hashed"] == 1
    by_id = {s.session_id: s for s in CheckpointManager(base).list_sessions()}
    assert by_id["s-031"].status == "awaiting_review"


def test_a_listing_makes_its_summaries_as_it_is_iterated(template: Path) -> None:
    base = template.parents[2]
    _grow(template, 6)
    listing = CheckpointManager(base).iter_sessions()
    assert len(listing) == 6
    page = listing.page(2, 3)
    assert [s.session_id for s in page] == [s.session_id for s in list(listing)[2:5]]
    assert [s.session_id for s in listing] == [s.session_id for s in CheckpointManager(base).list_sessions()]


@pytest.mark.parametrize("indexed", [False, True])
def test_finding_orphans_lists_only_the_folders_without_a_manifest(
    template: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters, indexed: bool
) -> None:
    """A listing finds a session folder that lost its manifest where it finds no manifest:
    healthy sessions cost what they cost without the check (a fixed part and the same work
    per session, at any count), and each orphan costs one listing of its own folder."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1" if indexed else "0")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    base = template.parents[2]
    sizes = (60, 120) if indexed else (5, 10)
    healthy = []
    for count in sizes:
        _grow(template, count)
        CheckpointManager(base).list_sessions()  # an index learns them
        healthy.append(_work(counters, lambda: CheckpointManager(base).iter_sessions()))
    each = {
        k: (healthy[1][k] - healthy[0][k]) // (sizes[1] - sizes[0]) for k in ("listed", "opened", "parsed")
    }
    fixed = {k: healthy[0][k] - each[k] * sizes[0] for k in each}
    assert fixed["listed"] == 2  # the base and acme/sessions, whatever the count
    count = sizes[-1]
    for lost, name in enumerate(("s-003", "s-004", "s-007"), 1):
        (template.parent / name / MANIFEST_FILE).unlink()
        for _ in range(2):  # an index never remembers an orphan: found again each time
            listing = CheckpointManager(base).iter_sessions()
            work = _work(counters, lambda: CheckpointManager(base).iter_sessions())
            assert work["listed"] == fixed["listed"] + each["listed"] * (count - lost) + lost
            assert work["opened"] == each["opened"] * (count - lost)
            assert work["parsed"] == each["parsed"] * (count - lost)
            assert len(listing) == count - lost
            assert len(listing.issues) == lost
            listing.close()


def _entries(count: int, branches: int = 0, seed: int = 7) -> list[HistoryEntry]:
    """A chain of ``count`` entries, with ``branches`` extra entries forking off it."""
    made: list[HistoryEntry] = []
    parent: str | None = None
    for number in range(count):
        stamp = f"2024-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}Z"
        entry = history.make_entry(parent, 1, "Idea", 1, "completed", stamp, f"text {number}")
        made.append(entry)
        parent = entry.entry_id
    picker = random.Random(seed)
    for number in range(branches):
        base = picker.choice(made)
        made.append(history.make_entry(base.entry_id, 2, "R", 1, "failed", base.timestamp, f"b {number}"))
    picker.shuffle(made)
    return made


def test_ordering_a_history_takes_steps_linear_in_its_length(counters: WorkCounters) -> None:
    steps = []
    for count in (500, 1000, 2000):
        entries = _entries(count)
        work = _work(counters, lambda entries=entries: history.in_order(entries))  # type: ignore[misc]
        steps.append(work["steps"])
    assert steps[1] - steps[0] == (steps[2] - steps[1]) // 2


@pytest.mark.parametrize("seed", range(40))
def test_ordering_gives_what_the_quadratic_ordering_gave(seed: int) -> None:
    """Random forests with forks, cycles, duplicate ids and unknown parents."""
    picker = random.Random(seed)
    ids = [f"{n:012x}" for n in range(picker.randint(1, 30))]
    entries = []
    for number in range(picker.randint(1, 40)):
        entry_id = picker.choice(ids) if picker.random() < 0.2 else f"{1000 + number:012x}"
        parent = picker.choice([None, "ffffffffffff", *ids, *(e.entry_id for e in entries)])
        stamp = f"2024-01-01T00:00:{picker.randint(0, 5):02d}Z"
        made = history.make_entry(parent, 1, "Idea", 1, "completed", stamp, str(number))
        entries.append(
            HistoryEntry(entry_id, *[getattr(made, f) for f in HistoryEntry.__dataclass_fields__][1:])
        )
    assert [id(e) for e in history.in_order(entries)] == [id(e) for e in reference_order(entries)]


def test_reading_a_history_opens_each_entry_once(template: Path, counters: WorkCounters) -> None:
    base = template.parents[2]
    manager = CheckpointManager(base)
    runs = []
    made = 0
    for saves in (3, 6, 9):
        while made < saves:
            made += 1
            manager.save_checkpoint(
                P, "s-000", 1, "completed", [{"agent_name": "writer"}], name=f"save {made}"
            )
        runs.append(_work(counters, lambda: CheckpointManager(base).history(P, "s-000")))
        entries = sorted(str(p) for p in (template / "history").iterdir())
        assert sorted(f for f in counters.files if f"{os.sep}history{os.sep}" in f) == entries  # each once
    _assert_linear(runs, ("opened", "parsed", "steps"))
    assert runs[1]["opened"] - runs[0]["opened"] == 3  # one file a checkpoint saved, no more


def test_forking_phase_two_reads_only_phase_one(template: Path, counters: WorkCounters) -> None:
    base = template.parents[2]
    manager = CheckpointManager(base)
    small = _work(counters, lambda: manager.fork_session(P, "s-000", "fork-a", 2))
    manager.save_agent_output(P, "s-000", 3, "writer", "x" * 100_000)
    manager.save_checkpoint(P, "s-000", 3, "completed", [{"agent_name": "writer"}])
    grown = _work(counters, lambda: manager.fork_session(P, "s-000", "fork-b", 2))
    assert grown["opened"] == small["opened"]
    assert (manager.session_dir(P, "fork-b") / "phase_1_concept" / "writer.md").is_file()


def test_every_command_has_a_home_module() -> None:
    """The lazy group imports ``HOME[name]`` to run ``name``: the map must be right."""
    output, _ = cli_main.load_all()
    for name in cli_main.COMMANDS:
        module = __import__(f"haytham.cli.{cli_main.HOME[name]}", fromlist=["COMMANDS"])
        assert name in {command.name for command in module.COMMANDS}, name
    assert set(cli_main.HOME) == set(cli_main.COMMANDS)
    assert output


_IMPORTS = """
import sys
from haytham.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("jsonschema", "rich", "asyncio", "haytham.run", "haytham.compare", "haytham.transfer")
heavy += ("yaml", "mistune", "filelock")
print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith("haytham.run")))
"""


@pytest.mark.parametrize("command", ["version", "validate"])
def test_start_up_imports_only_what_the_command_uses(template: Path, command: str) -> None:
    base = template.parents[2]
    args = ["--version"]
    if command == "validate":
        args = ["validate", str(template / MANIFEST_FILE), str(template / "history"), "--base-dir", str(base)]
    found = subprocess.run(
        [sys.executable, "-c", _IMPORTS, *args], capture_output=True, text=True, check=True
    ).stdout.splitlines()[-1]
    assert found == "[]"


_LOAD = """
import sys
from haytham.store.manager import CheckpointManager
manager = CheckpointManager(sys.argv[1])
manager.load_session(sys.argv[2], sys.argv[3])
manager.get_phase_outputs(sys.argv[2], sys.argv[3])
"""
_STATUS = """
import sys
from haytham.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
"""
_LISTED = """
heavy = ("jsonschema", "fastjsonschema", "rich", "asyncio", "yaml", "mistune", "filelock", "sqlite3")
heavy += ("logging", "subprocess", "socket", "concurrent", "shutil")
print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
"""


@pytest.mark.parametrize("command", ["load", "status"])
def test_reading_a_session_imports_no_parser_it_does_not_need(tmp_path: Path, command: str) -> None:
    """S3, S6: a new process that loads a session of a custom workflow (its own
    workflow.yaml, in the form haytham writes) or prints its status to a pipe parses the
    workflow without PyYAML, the markdown without mistune and the records without
    jsonschema, draws no rich table and loads no logging, git, threads or shutil (with its
    archive modules)."""
    from small_workflow import SMALL

    manager = CheckpointManager(tmp_path)
    manager.create_session(P, "s", "ada", SMALL, "full")
    manager.save_agent_output(P, "s", 1, "writer", "# Idea\n\nText with a [link](x) and `code`.\n")
    manager.save_checkpoint(P, "s", 1, "completed", [{"agent_name": "writer"}])
    manager.save_user_feedback(P, "s", 1, reviewed=True, approved=True, comments="Good.")
    code, args = _LOAD, [str(tmp_path), P, "s"]
    if command == "status":
        code, args = _STATUS, ["status", P, "s", "--base-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-c", code + _LISTED, *args], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"
    if command == "status":
        assert "Phase  Name" in done.stdout


def test_a_tar_export_holds_one_file_at_a_time(tmp_path: Path) -> None:
    """S9: the archive is written as each file is read, so exporting three 4 MB outputs
    never holds two of them (Python allocations, counted by tracemalloc: no timing)."""
    import tarfile
    import tracemalloc

    from haytham.transfer import export_session

    manager = CheckpointManager(tmp_path / "base")
    manager.create_session("p", "s", "u", execution_mode="mvp")
    size = 4_000_000
    for phase in (1, 2, 3):
        manager.save_agent_output("p", "s", phase, "writer", "z" * size + "\n")
    fresh = CheckpointManager(tmp_path / "base")
    tracemalloc.start()
    try:
        export_session(fresh, "p", "s", tmp_path / "s.tar.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * size
    with tarfile.open(tmp_path / "s.tar.gz") as archive:
        outputs = [m for m in archive.getmembers() if m.name.endswith("/writer.md")]
    assert len(outputs) == 3 and all(m.size > size for m in outputs)
