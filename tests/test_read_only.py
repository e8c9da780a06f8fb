"""Reads work on a read-only tree (a checkout on a read-only mount, another user's files):
they take no lock file they cannot create, and a write says plainly that the tree is
read-only, naming the file.

The tree is made read-only for real. As a normal user, ``chmod -R a-w`` does it. As root
(CI), permissions do not stop writes, so the commands run either in a private mount
namespace where the tree is bind-mounted read-only (``unshare -rm``; ``EROFS``), or as user
``nobody`` (``setpriv``; ``EACCES``). The tests are parametrized, when collected, with the
mechanisms that work on this machine (``WORKING``, probed once), so none is skipped; one test
fails when none is possible, and then every parametrized test runs, and fails, with all of
them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from haytham import CheckpointManager
from haytham.run.demo import run_demo

P, S = "demo", "s1"
READS = [
    ["list"],
    ["status", P, S],
    ["show", P, S],
    ["validate"],
    ["history", P, S],
    ["diff", f"{P}/{S}", f"{P}/s2"],
    ["doctor", P, S],
]
# Runs inside the read-only view: each command through click's runner, results as JSON.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from click.testing import CliRunner
    from haytham.cli.main import cli
    results = []
    for args in json.loads(sys.argv[1]):
        result = CliRunner().invoke(cli, args)
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        results.append({"args": args, "code": result.exit_code, "output": result.output,
                        "traceback": crashed})
    print(json.dumps(results))
    """
)


def _can(command: list[str]) -> bool:
    if shutil.which(command[0]) is None:
        return False
    return subprocess.run(command, capture_output=True, check=False).returncode == 0


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


MECHANISMS = ["chmod", "unshare", "setpriv"]


def _available(mechanism: str, base: Path) -> bool:
    """Whether ``mechanism`` makes ``base`` read-only for real on this machine."""
    if mechanism == "chmod":
        return os.geteuid() != 0  # root writes whatever the permissions say
    if os.geteuid() != 0:
        return False  # both need root (CI runs as root)
    if mechanism == "unshare":
        return _can(
            ["unshare", "-rm", "sh", "-c", f"mount --bind -o ro {_quote(str(base))} {_quote(str(base))}"]
        )
    # nobody must be able to run this Python and import haytham (a checkout in /root cannot)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return _can([*nobody, sys.executable, "-c", "import haytham.cli.main"])


def _working() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="haytham-ro-probe-") as probe:
        return [m for m in MECHANISMS if _available(m, Path(probe))]


WORKING = _working()
"""The mechanisms that make a tree read-only on this machine: chmod as a normal user, the
read-only bind mount and ``nobody`` as root."""


def test_some_way_to_make_a_read_only_tree_exists_here() -> None:
    """The parametrized tests below run with the mechanisms this machine has: one must work."""
    assert WORKING, f"none of {MECHANISMS} can make a read-only tree on this machine"


@pytest.fixture
def tree() -> Iterator[Path]:
    """A base directory with a finished demo session and its copy, in a folder every user
    can reach (``nobody`` cannot enter pytest's private tmp folders)."""
    folder = Path(tempfile.mkdtemp(prefix="haytham-ro-"))
    folder.chmod(0o755)
    base = folder / "projects"
    run_demo(CheckpointManager(base_dir=base), session_id=S)
    shutil.copytree(base / P / "sessions" / S, base / P / "sessions" / "s2")
    manifest = base / P / "sessions" / "s2" / "session_manifest.md"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(f"Session ID: {S}", "Session ID: s2"))
    (folder / "out").mkdir()
    (folder / "out").chmod(0o777)
    yield base
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(folder)


def run_read_only(mechanism: str, base: Path, commands: list[list[str]]) -> list[dict[str, object]]:
    """Run ``commands`` (haytham's arguments) with ``base`` made read-only by ``mechanism``."""
    env = {**os.environ, "HAYTHAM_BASE_DIR": str(base), "PYTHONDONTWRITEBYTECODE": "1"}
    python = [sys.executable, "-c", DRIVER, json.dumps(commands)]
    if mechanism == "unshare":
        inner = f"mount --bind -o ro {base} {base} && exec " + " ".join(_quote(a) for a in python)
        argv = ["unshare", "-rm", "sh", "-c", inner]
    elif mechanism == "setpriv":
        _chmod_read_only(base)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *python]
    else:
        _chmod_read_only(base)
        argv = python
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=base.parent, check=False)
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout))


def _chmod_read_only(base: Path) -> None:
    for root, dirs, files in os.walk(base):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o555)
    base.chmod(0o555)


def snapshot(base: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(base)): (p.stat().st_mtime_ns, p.stat().st_size) for p in base.rglob("*")}


@pytest.mark.parametrize("mechanism", WORKING or MECHANISMS)
def test_every_read_command_works_on_a_read_only_tree(mechanism: str, tree: Path) -> None:
    before = snapshot(tree)
    out = tree.parent / "out"
    commands = [
        *READS,
        ["export", P, S, "-o", str(out / "s.json")],
        ["export", P, S, "-o", str(out / "s.tgz")],
    ]
    results = run_read_only(mechanism, tree, commands)
    for result in results:
        assert (result["code"], result["traceback"]) == (0, False), result
    status = results[1]["output"]
    assert isinstance(status, str) and "every phase is done" in status
    assert snapshot(tree) == before
    imported = CheckpointManager(base_dir=out / "base")
    from haytham import transfer

    transfer.import_session(imported, out / "s.tgz")
    assert imported.load_manifest(P, S).status == "completed"


@pytest.mark.parametrize("mechanism", WORKING or MECHANISMS)
def test_a_write_on_a_read_only_tree_names_the_lock_file_in_plain_words(mechanism: str, tree: Path) -> None:
    results = run_read_only(mechanism, tree, [["feedback", P, S, "1", "--approve"]])
    lock = tree / P / "sessions" / S / ".haytham.lock"
    reason = "the file system is read-only" if mechanism == "unshare" else "permission denied"
    assert results[0]["code"] == 1
    assert results[0]["output"] == f"Error: cannot write {lock}: {reason}\n"
    assert not results[0]["traceback"]


def test_a_read_lock_is_never_created_and_is_shared(tmp_path: Path) -> None:
    from haytham.errors import LockTimeout
    from haytham.store import fs

    with fs.read_locked(tmp_path, 1.0, "x") as held:
        assert held is False
    assert not (tmp_path / fs.LOCK_NAME).exists()  # a read never writes
    with fs.locked(tmp_path, 1.0, "x"):
        pass
    with fs.read_locked(tmp_path, 1.0, "x") as first, fs.read_locked(tmp_path, 0.0, "x") as second:
        assert (first, second) == (True, True)  # readers share
        with pytest.raises(LockTimeout), fs.locked(tmp_path, 0.0, "x"):
            pass  # a writer waits for the readers
    with fs.locked(tmp_path, 1.0, "x"), pytest.raises(LockTimeout), fs.read_locked(tmp_path, 0.0, "x"):
        pass  # and a reader for the writer
