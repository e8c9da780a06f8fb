"""Scale inside the limits (issue 24, item 11): every command stays linear in the phases of a
workflow, the attempts of a phase and the entries of a history, pinned by counting work.

Each test makes a session of N and of 2N phases (or attempts, or history entries) with
``tests/scale_trees.py``, runs one operation on each, and asserts that the work it did, as
``tests/workcount.py`` counts it from outside haytham (files opened, parsed, listed and
stat'ed, and the lines of haytham's own code executed), at most doubles. A path that does
quadratic work (a lookup that walks every phase, done once per phase) fails these tests
deterministically, at any load; none of them measures time (``benchmarks/scale.py`` does).
The limits themselves (docs/formats.md, "Limits") are tested here too: what ``export``
writes, ``import`` reads back, and what ``import`` would refuse, ``export`` refuses first.
"""

from __future__ import annotations

import tarfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from scale_trees import PROJECT, SESSION, long_history, many_attempts, many_phases
from workcount import counting

from haytham.errors import DocumentError
from haytham.store import progress as _progress
from haytham.store.manager import CheckpointManager

N_PHASES = 25
"""The small workflow; every test compares it with one of ``2 * N_PHASES`` phases. Both are
long enough for their workflow.yaml to be read by PyYAML (a list of modes of 21 phases or
more is folded, so a shorter workflow takes the canonical reader, which does less work)."""
N_ATTEMPTS = 20
N_ENTRIES = 40
SLACK = 8
"""Linear work is ``a + b * n``, and ``a`` may be a little below zero (the first phase has no
phase before it to read: ``3n - 2`` files parsed), so twice the items may cost a few units
more than twice the work. A path that does something for each pair of items costs hundreds
more at these sizes."""
FILE_WORK = ("opened", "parsed", "listed", "stated")
Sizes = tuple[Path, Path]
"""The roots of the small and of the large tree: ``{root}/tree`` holds the session."""


@pytest.fixture(autouse=True)
def _deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    """No index, and no output digest remembered within an operation (a file is remembered
    only once it is older than ``RACY_NS``, which would make the counts depend on the clock)."""
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    monkeypatch.setattr(_progress, "RACY_NS", 10**18)


def _work(root: Path, operation: Callable[[], object]) -> dict[str, int]:
    """The work ``operation`` does on the files under ``root`` and in haytham's code, as a new
    process would do it (no output digest remembered)."""
    _progress.DIGESTS.clear()
    with counting(root, lines=True) as counts:
        operation()
    return counts.snapshot()


def _assert_at_most_doubles(small: dict[str, int], large: dict[str, int], keys: tuple[str, ...]) -> None:
    """Twice the items cost at most twice the work (give or take ``SLACK``), and the lines of
    haytham's code run do grow with them (so the count sees the items at all)."""
    assert small["lines"] < large["lines"], (small["lines"], large["lines"])
    for key in keys:
        assert large[key] <= 2 * small[key] + SLACK, (key, small[key], large[key])


def _compare(
    sizes: Sizes, operation: Callable[[Path, CheckpointManager], object]
) -> tuple[dict[str, int], dict[str, int]]:
    """The work of ``operation(root, manager)`` on the small and on the large tree, each
    through a new manager (nothing read before is remembered)."""
    small, large = (_work(root, lambda r=root: operation(r, CheckpointManager(r / "tree"))) for root in sizes)
    return small, large


def _made(
    factory: pytest.TempPathFactory, make: Callable[[Path, int], CheckpointManager], size: int
) -> Sizes:
    roots = []
    for count in (size, 2 * size):
        root = factory.mktemp(f"{make.__name__}-{count}")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HAYTHAM_INDEX", "0")
            make(root / "tree", count)
        roots.append(root)
    return roots[0], roots[1]


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> Sizes:
    """A session of a workflow of N_PHASES phases, and one of twice as many."""
    return _made(tmp_path_factory, many_phases, N_PHASES)


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> Sizes:
    """A session whose phase 1 has N_ATTEMPTS attempts, and one with twice as many."""
    return _made(tmp_path_factory, many_attempts, N_ATTEMPTS)


@pytest.fixture(scope="module")
def entries(tmp_path_factory: pytest.TempPathFactory) -> Sizes:
    """A session with N_ENTRIES history entries, and one with twice as many."""
    return _made(tmp_path_factory, long_history, N_ENTRIES)


def _stats(root: Path, manager: CheckpointManager) -> object:
    from haytham.analytics import summarize

    return summarize(manager, project_id=PROJECT, session_id=SESSION)


def _report(root: Path, manager: CheckpointManager) -> object:
    from haytham.web.report import report_html

    return report_html(manager, PROJECT, SESSION)


def _export(root: Path, manager: CheckpointManager) -> object:
    from haytham.transfer import export_session

    return export_session(manager, PROJECT, SESSION, root / f"export-{uuid.uuid4().hex}.tar.gz")


def _import(root: Path, manager: CheckpointManager) -> object:
    from haytham.transfer import export_session, import_session

    archive = root / "export.tar.gz"
    if not archive.exists():
        export_session(manager, PROJECT, SESSION, archive)
    return import_session(CheckpointManager(root / f"import-{uuid.uuid4().hex}"), archive)


def _fork_last(root: Path, manager: CheckpointManager) -> object:
    phases = manager.session_workflow(PROJECT, SESSION).phases
    return manager.fork_session(PROJECT, SESSION, f"f-{uuid.uuid4().hex[:8]}", phases[-1].number)


def _fork_entry(root: Path, manager: CheckpointManager) -> object:
    entry = manager.history(PROJECT, SESSION)[-1].entry_id
    return manager.fork_session(PROJECT, SESSION, f"f-{uuid.uuid4().hex[:8]}", from_entry=entry)


# ------------------------------------------------------------------------------ phases


def test_stats_of_twice_the_phases_does_at_most_twice_the_work(phases: Sizes) -> None:
    """Was quadratic (cubic in the lines): ``Workflow.phase`` walked every phase, and
    ``phases_for`` called it for each; ``SessionView.phase`` walked them too."""
    small, large = _compare(phases, _stats)
    _assert_at_most_doubles(small, large, ("lines", *FILE_WORK))


def test_asking_a_view_for_each_of_twice_the_phases_does_at_most_twice_the_work(phases: Sizes) -> None:
    """Was quadratic: ``SessionView.phase`` (which the progress, the doctor, the pages and the
    command line ask once for each phase) walked every phase. Here alone: within a whole
    command, its share of the work is too small for the doubling to show."""
    views = [CheckpointManager(root / "tree").state(PROJECT, SESSION) for root in phases]
    small, large = (
        _work(root, lambda v=view: [v.phase(p.number) for p in v.phases])
        for root, view in zip(phases, views, strict=True)
    )
    _assert_at_most_doubles(small, large, ("lines",))


def test_a_report_of_twice_the_phases_does_at_most_twice_the_work(phases: Sizes) -> None:
    """Was quadratic: the report read the whole session again for every phase's page."""
    small, large = _compare(phases, _report)
    _assert_at_most_doubles(small, large, ("lines", *FILE_WORK))


@pytest.mark.parametrize("operation", [_fork_last, _fork_entry], ids=["from-phase", "from-entry"])
def test_forking_after_twice_the_phases_does_at_most_twice_the_work(
    phases: Sizes, operation: Callable[[Path, CheckpointManager], object]
) -> None:
    """Was quadratic: each copied phase looked through every file (and every entry of the
    history) for its own."""
    small, large = _compare(phases, operation)
    _assert_at_most_doubles(small, large, ("lines", *FILE_WORK))


@pytest.mark.parametrize("operation", [_export, _import], ids=["export", "import"])
def test_moving_twice_the_phases_does_at_most_twice_the_work(
    phases: Sizes, operation: Callable[[Path, CheckpointManager], object]
) -> None:
    small, large = _compare(phases, operation)
    _assert_at_most_doubles(small, large, ("lines", *FILE_WORK))


# ---------------------------------------------------------------------------- attempts


@pytest.mark.parametrize(
    "operation",
    [_stats, _report, _export, _import, _fork_last],
    ids=["stats", "report", "export", "import", "fork"],
)
def test_twice_the_attempts_cost_at_most_twice_the_work(
    attempts: Sizes, operation: Callable[[Path, CheckpointManager], object]
) -> None:
    small, large = _compare(attempts, operation)
    _assert_at_most_doubles(small, large, ("lines", *FILE_WORK))


# ----------------------------------------------------------------------------- history


@pytest.mark.parametrize(
    "operation", [_report, _export, _import, _fork_entry], ids=["report", "export", "import", "fork"]
)
def test_twice_the_history_costs_at_most_twice_the_work(
    entries: Sizes, operation: Callable[[Path, CheckpointManager], object]
) -> None:
    small, large = _compare(entries, operation)
    _assert_at_most_doubles(small, large, ("lines", "opened", "parsed"))


# ------------------------------------------------------------------------------ limits


def _small_session(base: Path) -> CheckpointManager:
    """A session of the default workflow with its first phase saved and reviewed."""
    manager = CheckpointManager(base)
    manager.create_session(PROJECT, SESSION, "ada")
    manager.save_agent_output(PROJECT, SESSION, 1, "writer", "text\n")
    manager.save_checkpoint(PROJECT, SESSION, 1, "completed", [{"agent_name": "writer"}])
    manager.save_user_feedback(PROJECT, SESSION, 1, True, True, comments="ok")
    return manager


def _members(archive: Path) -> int:
    with tarfile.open(archive) as opened:
        return len(opened.getmembers())


def test_an_archive_at_the_member_limit_imports_and_one_above_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What export writes, import reads back: the two share ``MAX_MEMBERS``. Export refuses,
    naming the session and before any archive exists, the session import would refuse
    after reading most of the archive (issue 24: 100,000 history entries exported, then
    refused on import)."""
    from haytham import transfer

    manager = _small_session(tmp_path / "base")
    first = tmp_path / "first.tar.gz"
    transfer.export_session(manager, PROJECT, SESSION, first)
    count = _members(first)
    monkeypatch.setattr(transfer, "MAX_MEMBERS", count)  # exactly full: exported, imported back
    at_limit = transfer.export_session(manager, PROJECT, SESSION, tmp_path / "at.tar.gz")
    imported = transfer.import_session(CheckpointManager(tmp_path / "other"), at_limit)
    assert (imported / "phase_1_concept" / "writer.md").is_file()
    monkeypatch.setattr(transfer, "MAX_MEMBERS", count - 1)
    target = tmp_path / "over.tar.gz"
    with pytest.raises(DocumentError) as caught:
        transfer.export_session(manager, PROJECT, SESSION, target)
    directory = manager.session_dir(PROJECT, SESSION)
    assert str(caught.value) == (
        f"{directory}: holds {count:,} files and folders: an export may hold at most {count - 1:,}, "
        "more than import reads back (docs/formats.md, Limits)"
    )
    assert not target.exists() and list(tmp_path.glob(".over.tar.gz*")) == []
    with pytest.raises(DocumentError, match=f"holds more than {count - 1:,} members"):
        transfer.import_session(CheckpointManager(tmp_path / "third"), first)  # as import says


def test_a_long_history_one_member_over_a_limit_of_50_is_refused_by_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case of the issue, small: a long history (41 entries, the session folder, seven
    phase folders, two files of phase 1 and the history folder), just over the (lowered)
    limit; at the limit, it goes and comes back."""
    from haytham import transfer

    manager = long_history(tmp_path / "base", 41)
    monkeypatch.setattr(transfer, "MAX_MEMBERS", 50)
    with pytest.raises(DocumentError, match=r": holds 51 files and folders: an export may hold at most 50,"):
        transfer.export_session(manager, PROJECT, SESSION, tmp_path / "s.tar.gz")
    assert not (tmp_path / "s.tar.gz").exists()
    monkeypatch.setattr(transfer, "MAX_MEMBERS", 51)
    archive = transfer.export_session(manager, PROJECT, SESSION, tmp_path / "s.tar.gz")
    imported = CheckpointManager(tmp_path / "other")
    transfer.import_session(imported, archive)
    assert len(imported.history(PROJECT, SESSION)) == 41


def test_an_archive_whose_files_import_would_find_too_large_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haytham import transfer

    manager = _small_session(tmp_path / "base")
    monkeypatch.setattr(transfer, "MAX_EXPORT_BYTES", 2048)
    target = tmp_path / "s.tar.gz"
    with pytest.raises(DocumentError) as caught:
        transfer.export_session(manager, PROJECT, SESSION, target)
    assert str(caught.value) == (
        f"{manager.session_dir(PROJECT, SESSION)}: its files come to more than 2 KB, the most an export "
        "may be (docs/formats.md, Limits)"
    )
    assert not target.exists()
    monkeypatch.setattr(transfer, "MAX_EXPORT_BYTES", 1 << 20)
    transfer.export_session(manager, PROJECT, SESSION, target)
    assert transfer.import_session(CheckpointManager(tmp_path / "other"), target).is_dir()


def test_a_json_export_import_would_find_too_large_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haytham import transfer

    manager = _small_session(tmp_path / "base")
    target = tmp_path / "s.json"
    size = transfer.export_session(manager, PROJECT, SESSION, target).stat().st_size
    target.unlink()
    for limit in (1024, size - 1):  # below the files' bytes; above them, below the document's
        monkeypatch.setattr(transfer, "MAX_JSON_BYTES", limit)
        with pytest.raises(
            DocumentError, match=r"makes a \.json export of more than .*export it as \.tar\.gz"
        ):
            transfer.export_session(manager, PROJECT, SESSION, target)
        assert not target.exists() and list(tmp_path.glob(".s.json*")) == []
    monkeypatch.setattr(transfer, "MAX_JSON_BYTES", size)
    transfer.export_session(manager, PROJECT, SESSION, target)
    assert transfer.import_session(CheckpointManager(tmp_path / "other"), target).is_dir()
