"""The commands people wait on at every step import only what they use: counted, never timed.

``haytham status P S``, ``haytham validate A B`` (the pre-commit hook) and the merge driver
(one process per conflicting file, ``python -m haytham.cli.merge_driver``) start in about the
time of their imports. Each is run
here in a process of its own, as a person or git runs it, and the modules it loaded are
read from that process's ``sys.modules`` at exit: the heavy ones (YAML, the schema
validator, SQLite, the web stack, asyncio) and the parts of haytham a command does not use
(the doctor for ``status``, the store for the merge driver) must not be among them. Nor may
a dataclass whose methods were compiled from text as the module was imported (about half a
millisecond a class on Python 3.11): the records on these paths are made with
``haytham.frozen.frozen``, and the one class ``dataclass`` itself makes is the one that gives
``@frozen`` its parameters.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from haytham import CheckpointManager

PROBE = """
import atexit, gc, runpy, sys
out, module = sys.argv[1], sys.argv[2]
def compiled():
    for name, loaded in list(sys.modules.items()):
        for value in list(vars(loaded).values()) if name.startswith("haytham") and loaded else ():
            code = getattr(getattr(value, "__eq__", None), "__code__", None)
            if isinstance(value, type) and hasattr(value, "__dataclass_fields__") and code is not None:
                if value.__module__ == name and code.co_filename == "<string>":
                    yield f"compiled dataclass: {name}.{value.__qualname__}"
                if value.__module__ == name and type(vars(value).get("__init__")).__name__ == "_LazyInit":
                    yield f"uncompiled init: {name}.{value.__qualname__}"
def dump():
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("\\n".join(sorted(sys.modules)))
        handle.write(f"\\nfrozen objects: {bool(gc.get_freeze_count())}")
        handle.write("".join(f"\\n{line}" for line in compiled()))
atexit.register(dump)
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__")
"""
HEAVY = frozenset(
    {"yaml", "jsonschema", "fastjsonschema", "mistune", "sqlite3", "rich", "jinja2", "starlette", "asyncio"}
    | {"email", "http", "tarfile", "importlib.metadata", "haytham.web", "haytham.transfer"}
    | {"decimal"}  # the generated schema predicates test numbers against checks.Decimal
)
"""Modules none of the three commands needs when the files are valid (``importlib.metadata``:
the version is ``haytham.__version__``, never read from the installed metadata)."""
WRITE_PATH = frozenset(
    {"haytham.store.transaction", "haytham.store.saving", "haytham.store.reruns", "haytham.store.journal"}
    | {"haytham.store.reads", "haytham.store.shown", "haytham.store.review_time", "haytham.store.arguments"}
)
"""The modules of a session's writes, which a command that only reads imports none of."""
SESSION_CHECKS = frozenset(
    {"haytham.store.validation", "haytham.store.orphans", "haytham.store.disagreements"}
)
"""What validate checks whole session folders with, which files given alone do not need."""
FEATURES = frozenset({"haytham.notify", "haytham.otel", "haytham.retention", "haytham.projects"})
"""What haytham.yaml can switch on (the notify hook, trace exports, pruning) and the project
manager: a command that only asks where the sessions are imports none of them."""


ONE_COMPILED = {"haytham.frozen._Params"}
"""The dataclasses whose methods ``dataclass`` compiles when ``haytham.frozen`` is imported."""


def uncompiled(modules: set[str]) -> set[str]:
    """The ``@frozen`` classes whose ``__init__`` was never compiled (none was made), from ``loaded``."""
    prefix = "uncompiled init: "
    return {line.removeprefix(prefix) for line in modules if line.startswith(prefix)}


def compiled(modules: set[str]) -> set[str]:
    """The dataclasses of haytham whose methods ``dataclass`` compiled, from ``loaded``."""
    prefix = "compiled dataclass: "
    return {line.removeprefix(prefix) for line in modules if line.startswith(prefix)}


def loaded(tmp_path: Path, module: str, *args: str, base_dir_variable: bool = True) -> set[str]:
    """The modules ``python -m module args`` had loaded when it exited (successfully); with
    ``base_dir_variable`` false, HAYTHAM_BASE_DIR is not set, so the command looks for a
    haytham.yaml in its directory as a pre-commit hook's does."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
    env = {key: value for key, value in os.environ.items() if key != "HAYTHAM_BASE_DIR"}
    if base_dir_variable:
        env["HAYTHAM_BASE_DIR"] = str(tmp_path / "projects")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), module, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(out.read_text("utf-8").split("\n"))


def test_each_entry_point_leaves_what_its_command_made_to_the_exit(tmp_path: Path) -> None:
    # haytham.cli.ending: the objects alive at the end are frozen, so the interpreter's
    # shutdown does not run the garbage collector over every module the command imported.
    path = _sides(tmp_path)
    assert "frozen objects: True" in loaded(tmp_path, "haytham", "status", "P", "S")
    assert "frozen objects: True" in loaded(
        tmp_path, "haytham.cli.merge_driver", "base.md", "ours.md", "theirs.md", path
    )
    git = loaded(tmp_path, "haytham.cli.git", "merge-driver", "base.md", "ours.md", "theirs.md", path)
    assert "frozen objects: True" in git
    assert "frozen objects: False" in loaded(tmp_path, "haytham.format.layout")  # the probe can tell


def _session(tmp_path: Path) -> Path:
    manager = CheckpointManager(tmp_path / "projects")
    manager.create_session("P", "S", "ada", execution_mode="mvp")
    manager.save_agent_output("P", "S", 1, "writer", "# Draft\n\ntext\n", model="m")
    manager.save_checkpoint("P", "S", 1, "completed", [{"agent_name": "writer", "tokens": 5, "cost": 0.5}])
    return manager.session_dir("P", "S")


def test_version_imports_no_metadata_record_or_store(tmp_path: Path) -> None:
    modules = loaded(tmp_path, "haytham", "--version")
    assert not modules & HEAVY
    assert not {m for m in modules if m == "haytham.records" or m.startswith(("haytham.store", "rich"))}


def test_status_imports_neither_the_heavy_modules_nor_the_doctor(tmp_path: Path) -> None:
    _session(tmp_path)
    modules = loaded(tmp_path, "haytham", "status", "P", "S")
    assert "haytham.store.manager" in modules  # the probe saw the command run
    assert not modules & HEAVY
    assert not modules & FEATURES
    assert not modules & {"haytham.store.doctor", "haytham.store.validation", "haytham.store.copy"}
    assert not modules & {"haytham.store.scan", "haytham.store.derived"}  # the listing's, not status's
    assert "haytham.store.orphans" not in modules  # a session folder without a manifest: not this one
    assert "difflib" not in modules  # a near-miss heading or label's, and these files have none
    # a write's: the transaction, the saves and re-runs, the journal and what a reviewer was shown
    assert not modules & WRITE_PATH
    assert not modules & {"haytham.store.history", "haytham.store.attempts", "haytham.store.fork"}
    assert {"haytham.records", "haytham.store.lifecycle", "haytham.format.policy"} <= modules
    assert compiled(modules) == ONE_COMPILED  # the records, lifecycle views, policies: @frozen
    # and the __init__ of a record it never makes is never compiled
    assert {"haytham.records.HistoryEntry", "haytham.records.Claim", "haytham.errors.Issue"} <= uncompiled(
        modules
    )
    assert not {"haytham.records.SessionManifest", "haytham.records.PhaseCheckpoint"} & uncompiled(modules)


def test_validate_of_two_files_imports_none_of_the_heavy_modules(tmp_path: Path) -> None:
    session = _session(tmp_path)
    files = [session / "session_manifest.md", next(session.glob("phase_1_*")) / "checkpoint.md"]
    modules = loaded(tmp_path, "haytham", "validate", *map(str, files))
    assert "haytham.store.session_files" in modules  # the probe saw the command run
    assert not modules & SESSION_CHECKS  # two files, no session folder
    assert not modules & WRITE_PATH
    assert "hashlib" not in modules  # no digest is made of two valid files: OpenSSL is not loaded
    assert not modules & HEAVY
    assert not modules & FEATURES
    assert not modules & {"haytham.store.doctor", "haytham.config"}  # doctor's; the variable answered
    assert not modules & {"haytham.store.scan", "haytham.store.derived"}  # files alone: no listing
    assert compiled(modules) == ONE_COMPILED


def test_validate_as_a_pre_commit_hook_runs_it_reads_no_settings_it_does_not_need(tmp_path: Path) -> None:
    # No --base-dir and no HAYTHAM_BASE_DIR: haytham.yaml is looked for (there is none, so the
    # base directory is ./projects), and nothing that file could switch on is imported for it.
    session = _session(tmp_path)
    assert not (tmp_path / "haytham.yaml").exists()
    files = [session / "session_manifest.md", next(session.glob("phase_1_*")) / "checkpoint.md"]
    modules = loaded(tmp_path, "haytham", "validate", *map(str, files), base_dir_variable=False)
    assert {"haytham.config", "haytham.store.session_files"} <= modules
    assert not modules & SESSION_CHECKS
    assert not modules & HEAVY
    assert not modules & FEATURES
    assert "haytham.store.doctor" not in modules


def _sides(tmp_path: Path) -> str:
    """base.md, ours.md and theirs.md of a manifest whose sides merge cleanly; its path in the repository."""
    manifest = (_session(tmp_path) / "session_manifest.md").read_text("utf-8")
    theirs = manifest.replace("- Total Tokens: 5\n", "- Total Tokens: 7\n")
    assert theirs != manifest
    for name, text in (("base.md", manifest), ("ours.md", manifest), ("theirs.md", theirs)):
        (tmp_path / name).write_text(text, "utf-8")
    return "projects/P/sessions/S/session_manifest.md"


def test_the_merge_driver_imports_no_command_line_no_store_and_no_yaml(tmp_path: Path) -> None:
    # What `haytham git setup` registers: the merge alone, without click or the command group.
    path = _sides(tmp_path)
    modules = loaded(tmp_path, "haytham.cli.merge_driver", "base.md", "ours.md", "theirs.md", path)
    assert "- Total Tokens: 7" in (tmp_path / "ours.md").read_text("utf-8")  # it merged
    assert "haytham.git.merge" in modules
    assert not modules & HEAVY
    assert not modules & FEATURES
    assert not modules & {"click", "haytham.cli.common", "haytham.cli.git", "haytham.cli.main"}
    assert not modules & {"haytham.store.manager", "haytham.git.autocommit", "haytham.git.sync"}
    assert "hashlib" not in modules  # a merge makes no digest
    assert "haytham.records" in modules
    assert compiled(modules) == ONE_COMPILED


def test_the_driver_of_clones_set_up_before_imports_no_store_and_no_yaml(tmp_path: Path) -> None:
    path = _sides(tmp_path)
    modules = loaded(tmp_path, "haytham.cli.git", "merge-driver", "base.md", "ours.md", "theirs.md", path)
    assert "- Total Tokens: 7" in (tmp_path / "ours.md").read_text("utf-8")  # it merged
    assert not modules & HEAVY
    assert not modules & {"haytham.store.manager", "haytham.git.autocommit", "haytham.projects"}
    assert not modules & FEATURES
    assert not modules & {"haytham.git.sync", "haytham.git.recovery", "haytham.store.events"}  # sync's
