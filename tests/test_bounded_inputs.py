"""Bounded inputs: YAML bombs, oversized archives, JSON and markdown files fail fast with a
clear error naming the file, never with a MemoryError or a traceback."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import CheckpointManager, DocumentError, transfer
from haytham.cli.main import cli
from haytham.format import CHECKPOINT, guard
from haytham.format.yamlfile import MAX_YAML_CHARS, parse_yaml
from haytham.projects import ProjectManager

P, S = "acme", "s-1"
# The bomb: nine levels of nine aliases, 9**9 (387 million) strings from 342 bytes.
BOMB = textwrap.dedent(
    """\
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    """
)
BOMB_MESSAGE = (
    "expands to more than 100,000 values through its aliases (*name): refused as a YAML bomb; "
    "write the values out or use fewer aliases"
)


# ------------------------------------------------------------------------------ YAML


def test_the_billion_laughs_in_preferences_fails_fast_naming_the_file(tmp_path: Path) -> None:
    projects = ProjectManager(base_dir=tmp_path / "base")
    projects.update_user_preferences("grace", {"tone": "short"})
    path = tmp_path / "base" / "_users" / "grace" / "preferences.yaml"
    path.write_text(BOMB, encoding="utf-8")
    with pytest.raises(DocumentError) as caught:
        projects.get_user_preferences("grace")
    assert str(caught.value) == f"{path}:6: {BOMB_MESSAGE}"


def test_prune_dry_run_on_a_bomb_haytham_yaml_prints_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAYTHAM_BASE_DIR", raising=False)
    (tmp_path / "haytham.yaml").write_text(BOMB, encoding="utf-8")
    result = CliRunner().invoke(cli, ["prune", "--dry-run"])
    assert result.exit_code == 1
    assert result.output == f"Error: haytham.yaml:6: {BOMB_MESSAGE}\n"
    assert not isinstance(result.exception, MemoryError)


def test_a_bomb_in_an_exported_workflow_yaml_is_refused_on_import(tmp_path: Path) -> None:
    manager = CheckpointManager(base_dir=tmp_path / "base")
    manager.create_session(P, S, "u")
    document = transfer.export_session(manager, P, S)
    document["files"]["workflow.yaml"] = BOMB
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "other"), path)
    assert str(caught.value) == f"{path}:workflow.yaml:6: {BOMB_MESSAGE}"
    assert not (tmp_path / "other" / P / "sessions" / S).exists()


def test_an_alias_that_holds_itself_is_refused() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_yaml("x: &a [1, *a]\n", Path("w.yaml"))
    assert (
        str(caught.value) == "w.yaml:1: holds a value that contains itself through an alias (*name): refused"
    )


def test_a_few_aliases_are_still_read() -> None:
    _, data = parse_yaml("base: &agents [a, b]\nother: *agents\n", Path("w.yaml"))
    assert data == {"base": ["a", "b"], "other": ["a", "b"]}


def test_an_overlong_yaml_file_is_refused_before_it_is_parsed() -> None:
    text = "# " + "x" * MAX_YAML_CHARS + "\n"
    with pytest.raises(DocumentError) as caught:
        parse_yaml(text, Path("haytham.yaml"))
    assert str(caught.value) == (
        f"haytham.yaml: is {len(text):,} characters long: haytham reads YAML files of at most 1,000,000"
    )


# ------------------------------------------------------------------------- archives


def _header_only_archive(path: Path, name: str, size: int) -> Path:
    """A .tar.gz whose one member claims ``size`` bytes but whose data was cut off: an
    import must refuse it from the header alone, before reading any data."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    with gzip.open(path, "wb") as zipped:
        zipped.write(info.tobuf(format=tarfile.PAX_FORMAT))
    return path


def test_a_member_claiming_gigabytes_is_refused_from_its_header(tmp_path: Path) -> None:
    archive = _header_only_archive(
        tmp_path / "bomb.tar.gz", f"{P}/sessions/{S}/phase_1_concept/writer.md", 2 << 30
    )
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), archive)
    assert str(caught.value) == (
        f"{archive}: member '{P}/sessions/{S}/phase_1_concept/writer.md' is 2 GB: a file of an export "
        "may be at most 256 MB"
    )
    assert not (tmp_path / "base").exists()


def test_a_member_past_its_kinds_limit_is_refused_from_its_header(tmp_path: Path) -> None:
    """An agent output may be 256 MB; a checkpoint, parsed whole, only 64 MB."""
    archive = _header_only_archive(
        tmp_path / "bomb.tar.gz", f"{P}/sessions/{S}/phase_1_concept/checkpoint.md", 100 << 20
    )
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), archive)
    assert str(caught.value) == (
        f"{archive}: member '{P}/sessions/{S}/phase_1_concept/checkpoint.md' is 100 MB: such a file of "
        "an export may be at most 64 MB"
    )
    assert not (tmp_path / "base").exists()


def test_members_adding_up_past_the_limit_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = CheckpointManager(base_dir=tmp_path / "source")
    source.create_session(P, S, "u")
    source.save_agent_output(P, S, 1, "writer", "x" * 5000)
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    monkeypatch.setattr(transfer, "MAX_EXPORT_BYTES", 4096)
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), archive)
    assert str(caught.value) == (f"{archive}: its files come to more than 4 KB, the most an export may be")
    monkeypatch.setattr(transfer, "MAX_EXPORT_BYTES", 1 << 20)
    monkeypatch.setattr(transfer, "MAX_MEMBERS", 3)
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), archive)
    assert str(caught.value) == f"{archive}: holds more than 3 members"
    assert not (tmp_path / "base").exists()


def test_an_oversized_json_export_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"files": {"x": "y" * 3000}}), encoding="utf-8")
    monkeypatch.setattr(transfer, "MAX_JSON_BYTES", 2048)
    with pytest.raises(DocumentError) as caught:
        transfer.import_session(CheckpointManager(base_dir=tmp_path / "base"), path)
    assert str(caught.value) == f"{path}: is 2.9 KB: an export may be at most 2 KB"


def test_an_export_archive_is_written_as_a_stream_and_reads_back(tmp_path: Path) -> None:
    source = CheckpointManager(base_dir=tmp_path / "source")
    source.create_session(P, S, "u")
    source.save_agent_output(P, S, 1, "writer", "draft")
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    again = transfer.export_session(source, P, S, tmp_path / "again.tar.gz")
    assert archive.read_bytes() == again.read_bytes()  # deterministic
    target = CheckpointManager(base_dir=tmp_path / "base")
    transfer.import_session(target, archive)
    assert target.load_agent_output(P, S, 1, "writer").content == "draft"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".haytham-tmp")]


@pytest.mark.slow
def test_a_small_archive_of_a_2_gb_member_is_refused_without_the_memory(tmp_path: Path) -> None:
    """The issue's case: ~2 MB of gzip that holds a 2 GB member, imported in a subprocess
    whose peak memory is measured."""
    archive = tmp_path / "zeros.tar.gz"
    info = tarfile.TarInfo(f"{P}/sessions/{S}/phase_1_concept/writer.md")
    info.size = 2 << 30

    class Zeros(io.RawIOBase):
        left = info.size

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            size = min(self.left, 1 << 20 if size < 0 else size)
            self.left -= size
            return bytes(size)

    with gzip.open(archive, "wb", compresslevel=1) as zipped, tarfile.open(fileobj=zipped, mode="w|") as tar:
        tar.addfile(info, Zeros())
    assert archive.stat().st_size < 16 << 20
    script = textwrap.dedent(
        f"""
        from haytham import CheckpointManager, DocumentError, transfer
        try:
            transfer.import_session(CheckpointManager(base_dir={str(tmp_path / "base")!r}), {str(archive)!r})
        except DocumentError as error:
            print(error)
        # VmHWM: this process's own peak; ru_maxrss keeps the forking parent's before exec,
        # which is the size of the test worker, not of the import
        with open("/proc/self/status") as status:
            print(next(line for line in status if line.startswith("VmHWM:")).split()[1])
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    message, peak_kb = result.stdout.splitlines()
    assert message.endswith("is 2 GB: a file of an export may be at most 256 MB")
    assert int(peak_kb) < 300 * 1024  # kilobytes on Linux: far below the member's 2 GB


# ------------------------------------------------------------------------- markdown


def test_an_oversized_markdown_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "checkpoint.md"
    path.write_text("# Phase Checkpoint: x\n" + "y" * 100_000, encoding="utf-8")
    monkeypatch.setattr(guard, "MAX_DOCUMENT_BYTES", 70_000)
    with pytest.raises(DocumentError) as caught:
        CHECKPOINT.load(path)
    assert str(caught.value) == (
        f"{path}: is 100,022 bytes long: haytham reads session files of at most 70,000 bytes "
        "(docs/formats.md, Limits)"
    )


def test_a_huge_yaml_file_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    from haytham.format.workflow import load_workflow

    path = tmp_path / "workflow.yaml"
    path.write_bytes(b"#" * (4 * MAX_YAML_CHARS + 1))
    with pytest.raises(DocumentError) as caught:
        load_workflow(path)
    assert str(caught.value) == (
        f"{path}: is 4,000,001 bytes long: haytham reads YAML files of at most 1,000,000 characters"
    )
