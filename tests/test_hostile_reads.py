"""Hostile files in a session (issue 24, items 1-3): every read goes through one guarded path.

A session arrives by ``git pull``, by import or by hand, so any of its files may be a
symlink out of the tree (git stores symlinks), a symlink to ``/dev/zero``, a FIFO or a
socket. Each test plants one such file in place of one file kind and runs every read
command, every page, ``report``, ``export`` and a save over it in a subprocess
(tests/hostile_reads_worker.py), each run under a deadline: no run may hang, end in a
traceback, or show a byte of an outside file; a refused file is named.

The default tier plants every hostile form under the agent output and the review (the files
people and pages show) and a symlink out under every kind; the slow tier runs the whole
matrix, every form under every kind.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from small_workflow import SMALL

from haytham import CheckpointManager, DocumentError, UnsafeFileError, UnsafePathError
from haytham.cli.main import cli
from haytham.format import layout
from haytham.run.lease import run_lease

P, S = "acme", "s-1"
SECRET = "OUTSIDE-SECRET-7f3a"
WORKER = Path(__file__).with_name("hostile_reads_worker.py")
DEADLINE = 20.0
"""Seconds each run may take; a healthy run takes well under one."""


def make_session(base: Path) -> CheckpointManager:
    manager = CheckpointManager(base, workflows=[SMALL])
    manager.create_session(P, S, "u", SMALL, "full")  # a workflow of its own: workflow.yaml
    manager.save_phase(P, S, 1, {"writer": "The idea, expanded.\n"}, "completed")
    manager.save_user_feedback(P, S, 1, False, False, comments="Sharper, please.")
    return manager


def kind_paths(manager: CheckpointManager) -> dict[str, Path]:
    """One file of each kind a session holds, by kind."""
    session = manager.session_dir(P, S)
    phase = manager.phase_dir(P, S, 1)
    history = sorted((session / layout.HISTORY_DIR).glob("*.md"))
    return {
        "manifest": session / layout.MANIFEST_FILE,
        "workflow": session / layout.WORKFLOW_FILE,
        "checkpoint": phase / layout.CHECKPOINT_FILE,
        "output": phase / "writer.md",
        "review": phase / layout.FEEDBACK_FILE,
        "history": history[-1],
        "phase folder": phase,
    }


def link_out(path: Path, outside: Path) -> None:
    """Replace ``path`` by a symlink to a copy of it outside the tree, shaped like a
    session file and holding SECRET (another project's file, say)."""
    target = outside / path.name
    if path.is_dir():
        shutil.copytree(path, target)
        for file in target.glob("*.md"):
            file.write_text(file.read_text("utf-8") + f"\n{SECRET}\n", "utf-8")
        shutil.rmtree(path)
    else:
        text = path.read_text("utf-8")
        target.write_text(text + ("" if path.suffix == ".yaml" else f"\n## Notes\n\n{SECRET}\n"), "utf-8")
        path.unlink()
    path.symlink_to(target)


def link_zero(path: Path, outside: Path) -> None:
    _remove(path)
    path.symlink_to("/dev/zero")


def fifo(path: Path, outside: Path) -> None:
    _remove(path)
    os.mkfifo(path)


def unix_socket(path: Path, outside: Path) -> None:
    _remove(path)
    short = Path(tempfile.mkdtemp(dir="/tmp")) / "s"  # a socket's path has at most 107 bytes
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(short))
    server.close()  # the socket file stays
    short.rename(path)
    short.parent.rmdir()


def _remove(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


FORMS: dict[str, Callable[[Path, Path], None]] = {
    "symlink out": link_out,
    "symlink to /dev/zero": link_zero,
    "FIFO": fifo,
    "socket": unix_socket,
}
KINDS = ("manifest", "workflow", "checkpoint", "output", "review", "history", "phase folder")
DEFAULT_TIER = {(form, kind) for form in FORMS for kind in ("output", "review")} | {
    ("symlink out", kind) for kind in KINDS
}
CASES = [
    pytest.param(form, kind, marks=() if (form, kind) in DEFAULT_TIER else pytest.mark.slow)
    for form in FORMS
    for kind in KINDS
    if not (kind == "phase folder" and form != "symlink out")
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def run_worker(base: Path, phase: int = 1) -> list[dict[str, object]]:
    completed = subprocess.run(
        [sys.executable, str(WORKER), str(base), P, S, str(phase), SECRET, str(DEADLINE)],
        capture_output=True,
        text=True,
        timeout=DEADLINE * 20,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(("form", "kind"), CASES)
def test_no_read_hangs_crashes_or_shows_an_outside_file(
    tmp_path: Path, outside: Path, form: str, kind: str
) -> None:
    base = tmp_path / "base"
    manager = make_session(base)
    FORMS[form](kind_paths(manager)[kind], outside)
    runs = run_worker(base)
    assert len(runs) == 15, runs
    for run in runs:
        where = f"{run['what']} over a {form} as the {kind}: {run}"
        assert not run["hung"], where
        assert run["error"] is None, where
        assert not run["traceback"], where
        assert not run["leaked"], where
        assert run["code"] != 500, where
    if form == "symlink out":
        validate = next(run for run in runs if run["what"] == "validate")
        assert "leads out of" in str(validate["output"]), validate


@pytest.mark.parametrize("form", FORMS)
def test_the_library_refuses_each_form_naming_the_file(tmp_path: Path, outside: Path, form: str) -> None:
    """The library's own read of an output: the located, typed error, nothing of the target."""
    manager = make_session(tmp_path / "base")
    path = kind_paths(manager)["output"]
    FORMS[form](path, outside)
    with pytest.raises(UnsafeFileError) as raised:
        manager.get_phase_outputs(P, S, [1])
    assert str(path) in str(raised.value)
    assert SECRET not in str(raised.value)


def test_a_symlink_that_stays_inside_the_tree_is_followed(tmp_path: Path) -> None:
    """The documented choice: a link inside the base directory to a file inside it is read
    (it leaves nothing); writes still never go through a link."""
    base = tmp_path / "base"
    manager = make_session(base)
    path = kind_paths(manager)["output"]
    kept = base / "kept.md"
    path.rename(kept)
    path.symlink_to(os.path.relpath(kept, path.parent))
    assert manager.get_phase_outputs(P, S, [1])[1]["writer"] == "The idea, expanded.\n"


def test_a_lease_hard_linked_out_of_the_tree_is_never_written(tmp_path: Path, outside: Path) -> None:
    """Item 4: a run writes its lease record into ``.haytham-run.lease``; a second hard link
    of that file outside the tree would receive it. The run is refused, naming the file."""
    manager = make_session(tmp_path / "base")
    victim = outside / "notes.txt"
    victim.write_text("mine\n", "utf-8")
    lease = manager.session_dir(P, S) / layout.LEASE_FILE
    os.link(victim, lease)
    with pytest.raises(UnsafeFileError, match="hard links"), run_lease(manager.session_dir(P, S), f"{P}/{S}"):
        pass
    assert victim.read_text("utf-8") == "mine\n"


def test_a_lock_file_hard_linked_out_of_the_tree_refuses_the_save(tmp_path: Path, outside: Path) -> None:
    manager = make_session(tmp_path / "base")
    victim = outside / "notes.txt"
    victim.write_text("mine\n", "utf-8")
    lock = manager.session_dir(P, S) / layout.LOCK_FILE
    lock.unlink()
    os.link(victim, lock)
    with pytest.raises(UnsafeFileError, match="hard links"):
        manager.save_user_feedback(P, S, 1, True, True)
    assert victim.read_text("utf-8") == "mine\n"


def test_a_session_folder_linked_to_another_session_is_read_but_never_written(tmp_path: Path) -> None:
    """Item 4: a review through a session folder that is a symlink to another session wrote
    into that other session. The link stays inside the tree, so reads follow it; no write
    goes through it, and the other session's files keep every byte."""
    base = tmp_path / "base"
    manager = make_session(base)
    manager.create_session(P, "s-2", "u", SMALL, "full")
    twin = manager.session_dir(P, "s-2")
    shutil.rmtree(twin)
    twin.symlink_to(S)
    before = {p: p.read_bytes() for p in manager.session_dir(P, S).rglob("*") if p.is_file()}
    assert manager.get_phase_outputs(P, "s-2", [1])[1]["writer"] == "The idea, expanded.\n"
    with pytest.raises(UnsafePathError, match="symlink"):
        manager.save_user_feedback(P, "s-2", 1, True, True)
    after = {p: p.read_bytes() for p in manager.session_dir(P, S).rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize(
    "notes",
    [b"caf\xe9 (Latin-1)", b"a lone surrogate \xed\xa0\x80 encoded as UTF-8"],
    ids=["latin-1", "surrogate"],
)
def test_a_persons_bytes_that_are_not_utf8_are_never_dropped(tmp_path: Path, notes: bytes) -> None:
    """Item 5: ``haytham feedback --approve`` rewrote a review whose person's section held
    bytes that are not UTF-8 and dropped them (and the comments) without a word. Now it
    refuses with the file and line, and every byte stays."""
    base = tmp_path / "base"
    manager = make_session(base)
    path = kind_paths(manager)["review"]
    path.write_bytes(path.read_bytes() + b"\n## My notes\n\n" + notes + b"\n")
    before = path.read_bytes()
    line = before[: before.index(notes)].count(b"\n") + 1
    result = CliRunner().invoke(cli, ["feedback", P, S, "1", "--approve", "--base-dir", str(base)])
    assert result.exit_code == 1, result.output
    assert f"{path}:{line}: byte" in result.output and "nothing was written" in result.output
    assert "Traceback" not in result.output
    assert path.read_bytes() == before
    with pytest.raises(DocumentError, match="not UTF-8"):
        manager.save_user_feedback(P, S, 1, True, True)
    assert path.read_bytes() == before


@pytest.mark.parametrize("form", FORMS)
def test_a_writers_read_of_a_file_that_may_be_missing_keeps_every_guard(
    tmp_path: Path, outside: Path, form: str
) -> None:
    """``guard.read_existing``, the read a writer makes of each file it may replace under the
    lock (``store.reads.Reads``): None only for a missing file; the file's bytes; and each
    hostile form refused exactly as ``read_file`` refuses it, naming the file."""
    from haytham.format.guard import read_existing, read_file

    manager = make_session(tmp_path / "base")
    path = kind_paths(manager)["review"]
    assert read_existing(path.with_name("absent.md")) is None
    assert read_existing(path) == path.read_bytes()
    FORMS[form](path, outside)
    refusals = []
    for read in (read_file, read_existing):
        with pytest.raises((UnsafeFileError, DocumentError)) as raised:
            read(path, 1 << 16)
        refusals.append((type(raised.value), str(raised.value)))
    assert refusals[0] == refusals[1]
    assert str(path) in refusals[1][1] and SECRET not in refusals[1][1]


@pytest.mark.skipif(not os.path.isfile("/proc/self/maps"), reason="stale fstat sizes: Linux's /proc")
def test_a_file_longer_than_its_fstat_size_is_read_to_its_end(tmp_path: Path) -> None:
    """The guarded read takes one ``read`` as the whole file only when it gives exactly the
    size ``fstat`` saw; a file that holds more than that (one that grew between the ``fstat``
    and the ``read``, as every file of ``/proc`` has: its size says 0, and its reads stop
    short a page at a time) is read on to its end, never cut. A file whose size is right is
    read whole too, past the first chunk."""
    from haytham.format.guard import read_file_stat

    data, info = read_file_stat("/proc/self/maps")
    assert info.st_size == 0 and data.endswith(b"\n")
    assert b"[stack]" in data  # near the end, several pages in
    path = tmp_path / "big.md"
    content = os.urandom(200_000)
    path.write_bytes(content)
    assert read_file_stat(path)[0] == content
    path.write_bytes(b"")
    assert read_file_stat(path)[0] == b""
