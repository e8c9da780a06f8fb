"""An import reads an archive one file at a time: checked, staged, let go.

The memory of an import is checked as a size bound (the peak of traced memory is the largest
file plus a fixed slack, deterministic, no timing), and a member that fails its check after
others were staged still leaves nothing behind.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tracemalloc
from pathlib import Path

import pytest
from workcount import WorkCounters, counting

from haytham import CheckpointManager, transfer
from haytham.errors import DocumentError, SessionExistsError
from haytham.format import AGENT_OUTPUT, guard

P, S = "acme", "s-1"
SIZE = 20 * 1000 * 1000
SLACK = 3 * 1000 * 1000
"""Besides the largest file: the gzip and tar buffers, one chunk, the small files' records."""


def _session(base: Path, *contents: str) -> CheckpointManager:
    manager = CheckpointManager(base_dir=base)
    manager.create_session(P, S, "u")
    for number, content in enumerate(contents):
        manager.save_agent_output(P, S, 1, f"agent{number}", content)
    return manager


def _leftovers(base: Path) -> list[Path]:
    return [p for p in base.rglob("*") if "haytham-staging" in p.name or p.name.endswith(".haytham-tmp")]


def test_importing_an_archive_of_two_20_mb_outputs_holds_one_of_them(tmp_path: Path) -> None:
    source = _session(tmp_path / "source", "x" * SIZE + "\n", "y" * SIZE + "\n")
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    target = CheckpointManager(base_dir=tmp_path / "base")
    tracemalloc.start()
    try:
        transfer.import_session(target, archive)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= SIZE + SLACK, peak  # holding both files' texts would need 2 x SIZE
    outputs = target.get_phase_outputs(P, S, [1])[1]
    assert outputs == {"agent0": "x" * SIZE + "\n", "agent1": "y" * SIZE + "\n"}
    for name in ("agent0.md", "agent1.md"):
        staged = next((tmp_path / "base").rglob(name)).read_bytes()
        assert staged == next((tmp_path / "source").rglob(name)).read_bytes()


def _rewritten(archive: Path, target: Path, change: dict[str, bytes]) -> Path:
    """``archive`` with the data of the members named in ``change`` replaced."""
    with (
        tarfile.open(archive) as old,
        gzip.open(target, "wb") as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as new,
    ):
        for member in old.getmembers():
            data = old.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            for suffix, replacement in change.items():
                if member.name.endswith(suffix):
                    data = replacement
            if data is None:
                new.addfile(member)
            else:
                member.size = len(data)
                new.addfile(member, io.BytesIO(data))
    return target


@pytest.mark.parametrize(
    ("suffix", "data", "message"),
    [
        ("agent1.md", b"# Agent Output: agent1\n\xff\n", "is not UTF-8"),
        ("agent1.md", b"# Agent Output: agent1\n\n## Metadata\n- Agent: agent1\n", "is missing"),
        ("session_manifest.md", b"# Session Manifest\n", "is missing"),
    ],
)
def test_a_bad_file_after_staged_ones_leaves_nothing_behind(
    tmp_path: Path, suffix: str, data: bytes, message: str
) -> None:
    source = _session(tmp_path / "source", "x" * 2_000_000, "y")
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    bad = _rewritten(archive, tmp_path / "bad.tar.gz", {suffix: data})
    with pytest.raises(DocumentError, match=message) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), bad)
    assert str(caught.value).startswith(f"{bad}:{'phase_1_concept/' if 'agent' in suffix else ''}{suffix}")
    assert not (tmp_path / "base").exists()  # no session, no staging, no project folder


def test_an_existing_session_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    source = _session(tmp_path / "source", "x" * 2_000_000)
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    target = _session(tmp_path / "base", "old")
    before = sorted(p.relative_to(tmp_path / "base") for p in (tmp_path / "base").rglob("*"))
    with pytest.raises(SessionExistsError, match="already exists"):
        transfer.import_session(target, archive)
    assert sorted(p.relative_to(tmp_path / "base") for p in (tmp_path / "base").rglob("*")) == before
    assert target.get_phase_outputs(P, S, [1])[1] == {"agent0": "old"}
    transfer.import_session(target, archive, overwrite=True)
    assert target.get_phase_outputs(P, S, [1])[1] == {"agent0": "x" * 2_000_000}
    assert not _leftovers(tmp_path / "base")


def test_an_output_may_be_larger_than_the_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit of an agent output is its own (``MAX_OUTPUT_BYTES``): exported and imported
    past ``MAX_DOCUMENT_BYTES``, which still holds the other files."""
    source = _session(tmp_path / "source", "x" * 300_000)
    monkeypatch.setattr(guard, "MAX_DOCUMENT_BYTES", 100_000)
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    target = CheckpointManager(base_dir=tmp_path / "base")
    transfer.import_session(target, archive)
    assert target.get_phase_outputs(P, S, [1])[1] == {"agent0": "x" * 300_000}
    bad = _rewritten(
        archive, tmp_path / "bad.tar.gz", {"session_manifest.md": b"# Session Manifest\n" + b"x" * 200_000}
    )
    with pytest.raises(DocumentError, match=r"may be at most 97\.7 KB"):
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "other"), bad)
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("outputs", [4, 8])
def test_an_import_opens_and_parses_each_file_once(tmp_path: Path, outputs: int) -> None:
    """Counted work, as tests/test_work_counts.py does: each staged file is read back once
    and each markdown file parsed once, so an import is linear in its files (the files
    opened are counted in the base directory imported into: the archive itself is read
    too, once, from outside it)."""
    source = _session(tmp_path / "source", *(f"output {n}\n" * (n * 40_000) for n in range(outputs)))
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    with tarfile.open(archive) as opened:
        files = [m.name.split("/", 3)[3] for m in opened.getmembers() if m.isfile()]
    assert sum(name.endswith(".md") for name in files) > outputs  # outputs, the manifest, history
    with counting(tmp_path / "base") as counters:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), archive)
    staged = [name for name in files if name not in ("session_manifest.md", "workflow.yaml")]
    assert counters.opened == len(staged)
    assert counters.parsed == sum(name.endswith(".md") for name in files)


def test_loading_a_large_output_opens_and_parses_it_once(tmp_path: Path, counters: WorkCounters) -> None:
    path = tmp_path / "writer.md"
    source = _session(tmp_path / "source", "z" * 3_000_000)
    path.write_bytes(next((tmp_path / "source").rglob("agent0.md")).read_bytes())
    del source
    counters.reset()
    assert AGENT_OUTPUT.load(path).content == "z" * 3_000_000
    assert (counters.opened, counters.parsed) == (1, 1)
