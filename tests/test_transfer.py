"""Export a session as JSON or .tar.gz and import it back: byte for byte, or not at all."""

from __future__ import annotations

import errno
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_fork_compare import START, build_session, clock_from, tree

from haytham import (
    CheckpointManager,
    DocumentError,
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    UnsafePathError,
    transfer,
)
from haytham.cli.history import export_command, import_command
from haytham.errors import StorageError
from haytham.format.schema import schema_errors
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.store.copy import is_session_path, write_session_dir

P, S = "acme", "s-1"
LOCK = ".haytham.lock"


def session_files(directory: Path) -> dict[str, bytes | None]:
    """The session's files and directories, without the lock (never exported)."""
    return {k: v for k, v in tree(directory).items() if not k.endswith(LOCK)}


@pytest.fixture
def source(tmp_path: Path) -> CheckpointManager:
    """A session with an attempt, history, CRLF and BOM files on disk and non-ASCII text."""
    manager = CheckpointManager(base_dir=tmp_path / "source", clock=clock_from(START))
    build_session(manager)
    feedback = manager.phase_dir(P, S, 1) / "user_feedback.md"
    feedback.write_bytes(b"\xef\xbb\xbf" + feedback.read_bytes().replace(b"\n", b"\r\n"))  # a Windows editor
    assert manager.load_feedback(P, S, 1) is not None
    return manager


@pytest.fixture
def target(tmp_path: Path) -> CheckpointManager:
    return CheckpointManager(base_dir=tmp_path / "target", clock=clock_from(START))


def test_a_json_round_trip_gives_byte_identical_files(
    source: CheckpointManager, target: CheckpointManager
) -> None:
    document = transfer.export_session(source, P, S)
    assert schema_errors("export", document) == []
    assert document["format"] == "haytham-session" and document["version"] == 1
    assert (document["project_id"], document["session_id"]) == (P, S)
    assert "phase_1_concept/attempts/1/concept_expansion.md" in document["files"]
    assert any(path.startswith("history/") for path in document["files"])
    assert document["files"]["phase_1_concept/user_feedback.md"].startswith("\ufeff# User Feedback")
    assert LOCK not in json.dumps(document)
    text = transfer.dump_export(document)
    directory = transfer.import_session(target, json.loads(text))
    assert directory == target.session_dir(P, S)
    assert session_files(directory) == session_files(source.session_dir(P, S))
    assert target.validate_session(P, S) == [] and target.check(P, S) == []
    assert target.history(P, S) == source.history(P, S)


def test_a_json_file_round_trip(source: CheckpointManager, target: CheckpointManager, tmp_path: Path) -> None:
    path = transfer.export_session(source, P, S, tmp_path / "s-1.json")
    assert path.read_text(encoding="utf-8") == transfer.dump_export(transfer.export_session(source, P, S))
    directory = transfer.import_session(target, path)
    assert session_files(directory) == session_files(source.session_dir(P, S))


def test_a_tar_round_trip_gives_byte_identical_files(
    source: CheckpointManager, target: CheckpointManager, tmp_path: Path
) -> None:
    archive = transfer.export_session(source, P, S, tmp_path / "s-1.tar.gz")
    with tarfile.open(archive) as opened:
        members = opened.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names) and names[0] == "acme/sessions/s-1"
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 and not m.uname for m in members)
    assert all(m.isfile() or m.isdir() for m in members)
    assert not any(name.endswith(LOCK) or name.endswith(".haytham-tmp") for name in names)
    directory = transfer.import_session(target, archive)
    assert session_files(directory) == session_files(source.session_dir(P, S))
    assert target.load_attempts(P, S, 1)[0].outputs == source.load_attempts(P, S, 1)[0].outputs


def test_the_archive_is_deterministic(source: CheckpointManager, tmp_path: Path) -> None:
    first = transfer.export_session(source, P, S, tmp_path / "a.tgz").read_bytes()
    second = transfer.export_session(source, P, S, tmp_path / "b.tar.gz").read_bytes()
    assert first == second


def test_export_refuses_a_target_of_no_known_form(source: CheckpointManager, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\.json, \.tar\.gz or \.tgz"):
        transfer.export_session(source, P, S, tmp_path / "s.zip")
    assert not (tmp_path / "s.zip").exists()


def test_export_leaves_out_lock_temporary_and_unknown_files(source: CheckpointManager) -> None:
    phase = source.phase_dir(P, S, 2)
    (phase / ".market_intelligence.md.123.abcd.haytham-tmp").write_text("half a write")
    (phase / "notes.txt").write_text("a person's notes")
    (source.session_dir(P, S) / ".DS_Store").write_bytes(b"\0")
    files = transfer.export_session(source, P, S)["files"]
    assert not any("haytham-tmp" in f or "notes" in f or "DS_Store" in f or LOCK in f for f in files)
    assert "phase_2_market_research/market_intelligence.md" in files


def test_export_refuses_a_symlink_in_the_session(source: CheckpointManager, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    (source.phase_dir(P, S, 2) / "linked.md").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="symlink"):
        transfer.export_session(source, P, S)


def test_export_of_a_missing_session_is_not_found(source: CheckpointManager) -> None:
    with pytest.raises(SessionNotFoundError):
        transfer.export_session(source, P, "nope")


def test_a_custom_workflow_travels_with_its_session(target: CheckpointManager, tmp_path: Path) -> None:
    flow = Workflow("solo", (PhaseDefinition(1, "Only", "phase_1_only", ("writer",)),), {"one": (1,)})
    manager = CheckpointManager(base_dir=tmp_path / "custom", clock=clock_from(START))
    manager.create_session(P, "w", "ada", flow, "one")
    manager.save_agent_output(P, "w", 1, "writer", "text")
    document = transfer.export_session(manager, P, "w")
    assert "workflow.yaml" in document["files"]
    directory = transfer.import_session(target, document)  # the target manager does not know "solo"
    assert session_files(directory) == session_files(manager.session_dir(P, "w"))
    assert target.session_workflow(P, "w") == flow


def test_import_under_other_ids_rewrites_only_the_manifest(
    source: CheckpointManager, target: CheckpointManager
) -> None:
    directory = transfer.import_session(
        target, transfer.export_session(source, P, S), project_id="other", session_id="copy"
    )
    assert directory == target.session_dir("other", "copy")
    manifest = target.load_manifest("other", "copy")
    assert (manifest.project_id, manifest.session_id) == ("other", "copy")
    assert manifest.history_head == source.load_manifest(P, S).history_head
    mine, theirs = session_files(directory), session_files(source.session_dir(P, S))
    assert {k for k in mine if mine[k] != theirs[k]} == {"session_manifest.md"}
    assert target.validate_session("other", "copy") == []


def test_import_refuses_an_existing_session_unless_overwrite(
    source: CheckpointManager, target: CheckpointManager
) -> None:
    document = transfer.export_session(source, P, S)
    transfer.import_session(target, document)
    stale = target.phase_dir(P, S, 3) / "stale_agent.md"
    stale.write_bytes((target.phase_dir(P, S, 3) / "niche_selector.md").read_bytes())
    before = tree(target.base_dir)
    with pytest.raises(SessionExistsError, match="overwrite=True"):
        transfer.import_session(target, document)
    assert tree(target.base_dir) == before
    directory = transfer.import_session(target, document, overwrite=True)
    assert not stale.exists()
    assert session_files(directory) == session_files(source.session_dir(P, S))
    assert not [
        p for p in (target.base_dir / P).iterdir() if p.name.startswith(".") and p.name != ".haytham.lock"
    ]  # no staging left


def _bad(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return change


BAD_DOCUMENTS: dict[str, tuple[Callable[[dict[str, Any]], None], type[Exception], str]] = {
    "wrong format": (lambda d: d.update(format="zip"), DocumentError, "not a haytham export"),
    "newer version": (lambda d: d.update(version=2), DocumentError, "version"),
    "no files": (lambda d: d.pop("files"), DocumentError, "files"),
    "a file that is not text": (
        lambda d: d["files"].update({"history/x.md": 3}),
        DocumentError,
        "not a string",
    ),
    "no manifest": (lambda d: d["files"].pop("session_manifest.md"), DocumentError, "session_manifest.md"),
    "a ../ path": (lambda d: d["files"].update({"../../evil.md": "x"}), UnsafePathError, "relative"),
    "a nested ../ path": (
        lambda d: d["files"].update({"phase_1_concept/../../x.md": "x"}),
        UnsafePathError,
        "outside",
    ),
    "an absolute path": (lambda d: d["files"].update({"/etc/evil.md": "x"}), UnsafePathError, "absolute"),
    "a Windows path": (lambda d: d["files"].update({"C:\\evil.md": "x"}), UnsafePathError, "absolute"),
    "an unexpected name": (
        lambda d: d["files"].update({"notes.txt": "x"}),
        UnsafePathError,
        "not a file a session",
    ),
    "a hidden file": (
        lambda d: d["files"].update({"phase_1_concept/.x.md": "x"}),
        UnsafePathError,
        "not a file",
    ),
    "a phase of another workflow": (
        lambda d: d["files"].update(
            {"phase_9_other/a.md": d["files"]["phase_3_niche_selection/niche_selector.md"]}
        ),
        UnsafePathError,
        "no phase directory",
    ),
    "a checkpoint that does not parse": (
        lambda d: d["files"].update(
            {"phase_2_market_research/checkpoint.md": "# Phase Checkpoint: x\n\nnothing\n"}
        ),
        DocumentError,
        "phase_2_market_research/checkpoint.md",
    ),
    "an output under another name": (
        lambda d: d["files"].update(
            {"phase_3_niche_selection/other.md": d["files"]["phase_3_niche_selection/niche_selector.md"]}
        ),
        DocumentError,
        "does not match the file name",
    ),
    "a manifest of another session": (lambda d: d.update(session_id="s-9"), DocumentError, "s-9"),
    "a case twin": (
        lambda d: d["files"].update(
            {"phase_2_market_research/Market_Intelligence.md": d["files"]["phase_1_concept/checkpoint.md"]}
        ),
        UnsafePathError,
        "letter case",
    ),
    "a lone surrogate": (
        lambda d: d["files"].update({"phase_1_concept/concept_expansion.md": "\ud800"}),
        DocumentError,
        "surrogate",
    ),
}


@pytest.mark.parametrize("case", BAD_DOCUMENTS)
def test_import_refuses_a_bad_document_and_writes_nothing(
    source: CheckpointManager, target: CheckpointManager, case: str
) -> None:
    change, error, message = BAD_DOCUMENTS[case]
    document = json.loads(json.dumps(transfer.export_session(source, P, S)))
    change(document)
    with pytest.raises(error, match=message):
        transfer.import_session(target, document)
    assert not target.base_dir.exists()


def test_import_refuses_an_unknown_workflow(source: CheckpointManager, target: CheckpointManager) -> None:
    document = transfer.export_session(source, P, S)
    manifest = document["files"]["session_manifest.md"]
    document["files"]["session_manifest.md"] = manifest.replace("idea_validation", "secret_flow")
    with pytest.raises(InvalidArgumentError, match="secret_flow"):
        transfer.import_session(target, document)
    assert not target.base_dir.exists()


def _archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            archive.addfile(info, None if data is None else io.BytesIO(data))
    return path


def _member(
    name: str, data: bytes | None = None, kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    if data is not None:
        info.size = len(data)
    return info, data


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            _member("acme/sessions/s-1/phase_1_concept/evil.md", kind=tarfile.SYMTYPE, link="/etc/passwd"),
            "symlink",
        ),
        (_member("acme/sessions/s-1/phase_1_concept/hard.md", kind=tarfile.LNKTYPE, link="x"), "hard link"),
        (_member("acme/sessions/s-1/phase_1_concept/dev.md", kind=tarfile.CHRTYPE), "device"),
        (_member("acme/sessions/s-1/../../evil.md", b"x"), "outside"),
        (_member("/tmp/evil.md", b"x"), "absolute"),
        (_member("acme/sessions/s-2/session_manifest.md", b"x"), "one session"),
        (_member("acme/sessions/s-1/notes.txt", b"x"), "not a file a session holds"),
    ],
)
def test_import_refuses_a_bad_archive_member_and_writes_nothing(
    source: CheckpointManager,
    target: CheckpointManager,
    tmp_path: Path,
    extra: tuple[tarfile.TarInfo, bytes | None],
    message: str,
) -> None:
    good = transfer.export_session(source, P, S, tmp_path / "good.tar.gz")
    with tarfile.open(good) as opened:
        members = [(m, opened.extractfile(m).read() if m.isfile() else None) for m in opened.getmembers()]  # type: ignore[union-attr]
    bad = _archive(tmp_path / "bad.tar.gz", [*members, extra])
    with pytest.raises(UnsafePathError, match=message):
        transfer.import_session(target, bad)
    assert not target.base_dir.exists()
    assert not (tmp_path / "etc").exists() and not (tmp_path / "evil.md").exists()


def test_import_refuses_files_that_are_not_exports(target: CheckpointManager, tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{"format": "haytham-session",\n  oops}')
    (tmp_path / "dup.json").write_text('{"format": "a", "format": "b"}')
    (tmp_path / "plain.tar.gz").write_bytes(b"not gzip at all")
    (tmp_path / "export.zip").write_bytes(b"PK")
    with pytest.raises(DocumentError, match="not valid JSON") as info:
        transfer.import_session(target, tmp_path / "broken.json")
    assert info.value.line == 2
    with pytest.raises(DocumentError, match="'format' appears twice") as info:
        transfer.import_session(target, tmp_path / "dup.json")
    assert info.value.path == tmp_path / "dup.json"
    with pytest.raises(DocumentError, match=r"tar\.gz"):
        transfer.import_session(target, tmp_path / "plain.tar.gz")
    with pytest.raises(InvalidArgumentError, match=r"\.json, \.tar\.gz or \.tgz"):
        transfer.import_session(target, tmp_path / "export.zip")
    with pytest.raises(InvalidArgumentError, match="not list"):
        transfer.import_session(target, [1, 2])  # type: ignore[arg-type]
    assert not target.base_dir.exists()


def test_a_failed_write_leaves_no_staging_and_no_new_directories(tmp_path: Path) -> None:
    session = tmp_path / "base" / "acme" / "sessions" / "s-1"
    with pytest.raises(StorageError) as raised:  # "a" is a file, so "a/b" cannot be written
        write_session_dir(session, {"a": b"1", "a/b": b"2"})
    assert raised.value.errno == errno.ENOTDIR and "a/b" in str(raised.value)  # names the file
    assert not (tmp_path / "base").exists()


def test_session_paths_are_the_names_a_session_holds() -> None:
    accepted = [
        "session_manifest.md",
        "workflow.yaml",
        "history/20241124T100000Z_0123456789ab.md",
        "phase_1_concept/checkpoint.md",
        "phase_1_concept/agent.md",
        "phase_1_concept/attempts/2/user_feedback.md",
    ]
    refused = [
        "phase_1_concept/session_manifest.md",
        "phase_1_concept/notes.txt",
        "other/agent.md",
        "phase_1_concept/attempts/x/agent.md",
        "phase_1_concept/deeper/agent.md",
        ".haytham.lock",
        "history/.x.md.1.ab.haytham-tmp",
        "workflow.yml",
    ]
    assert [p for p in accepted if not is_session_path(p)] == []
    assert [p for p in refused if is_session_path(p)] == []


# -------------------------------------------------------------------------- CLI


def test_export_command_writes_each_form(source: CheckpointManager, tmp_path: Path) -> None:
    base = ["--base-dir", str(source.base_dir)]
    runner = CliRunner()
    result = runner.invoke(export_command, [P, S, *base])
    assert result.exit_code == 0
    assert result.output == transfer.dump_export(transfer.export_session(source, P, S))
    for name in ("s.json", "s.tar.gz"):
        result = runner.invoke(export_command, [P, S, "-o", str(tmp_path / name), *base])
        assert result.exit_code == 0 and f"Exported acme/s-1 to {tmp_path / name}" in result.output
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["session_id"] == S
    assert tarfile.is_tarfile(tmp_path / "s.tar.gz")
    result = runner.invoke(export_command, [P, S, "-o", str(tmp_path / "s.txt"), *base])
    assert result.exit_code == 2 and not (tmp_path / "s.txt").exists()
    result = runner.invoke(export_command, [P, "nope", *base])
    assert result.exit_code == 1 and result.output.startswith("Error: ")


def test_import_command_imports_refuses_and_overwrites(source: CheckpointManager, tmp_path: Path) -> None:
    archive = transfer.export_session(source, P, S, tmp_path / "s.tar.gz")
    base = ["--base-dir", str(tmp_path / "restored")]
    runner = CliRunner()
    result = runner.invoke(import_command, [str(archive), *base])
    assert result.exit_code == 0 and "Imported" in result.output
    restored = tmp_path / "restored" / P / "sessions" / S
    assert session_files(restored) == session_files(source.session_dir(P, S))
    result = runner.invoke(import_command, [str(archive), *base])
    assert result.exit_code == 1
    assert (
        result.output.startswith("Error: session acme/s-1 already exists") and result.output.count("\n") == 1
    )
    result = runner.invoke(import_command, [str(archive), "--overwrite", *base])
    assert result.exit_code == 0
    result = runner.invoke(import_command, [str(archive), "--session", "s-copy", *base])
    assert result.exit_code == 0 and (tmp_path / "restored" / P / "sessions" / "s-copy").is_dir()
    assert runner.invoke(import_command, [str(tmp_path / "missing.json"), *base]).exit_code == 2
