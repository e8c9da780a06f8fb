"""The public face: what ``import haytham`` offers, and that store/ stays below the features."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import haytham
from haytham import errors

STORE = Path(haytham.__file__).parent / "store"
ALLOWED = ("haytham.format", "haytham.records", "haytham.errors", "haytham.frozen", "haytham.store")


def test_the_runner_agents_records_and_errors_import_from_the_package() -> None:
    from haytham import AgentContext, AgentResult, Attempt, Comparison, Finding, HistoryEntry, PhaseRunner

    assert PhaseRunner.__module__ == "haytham.run.runner"
    assert (AgentContext.__name__, AgentResult.__name__) == ("AgentContext", "AgentResult")
    assert Attempt.__module__ == HistoryEntry.__module__ == "haytham.records"
    assert Comparison.__module__ == "haytham.compare"
    assert Finding.__module__ == "haytham.store.doctor"


def test_all_names_each_public_name_once_and_every_one_exists() -> None:
    names = haytham.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(haytham, n)] == []
    public = {n for n in vars(haytham) if not n.startswith("_") and not inspect.ismodule(getattr(haytham, n))}
    assert public - set(names) == set()


def test_every_error_is_exported() -> None:
    kinds = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.HaythamError)
    }
    assert "WorkflowChangedError" in kinds and "GitError" in kinds
    assert kinds - set(haytham.__all__) == set()


def test_every_error_class_is_defined_in_errors_py() -> None:
    """One home for the errors: every subclass of ``HaythamError`` in every module of haytham
    (the optional extras' too) is defined in ``haytham/errors.py``, so each is exported with
    the others; a module may still name one under an older import path."""
    found = []
    for module in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if module.name == "haytham.__main__":
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.HaythamError)
                and value.__module__ != "haytham.errors"
            ):
                found.append(f"{value.__module__}.{value.__name__}")
    assert sorted(set(found)) == []


def test_every_exception_haytham_defines_is_a_haytham_error() -> None:
    """One base class: a caller that catches ``HaythamError`` catches every error haytham
    raises on purpose. The generated schema checks' exceptions are fastjsonschema's own
    (``haytham.format.checks``), caught inside the schema module and never raised out."""
    found = []
    for module in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if module.name == "haytham.__main__" or module.name.startswith("haytham.format.checks"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("haytham.")
                and not issubclass(value, errors.HaythamError)
            ):
                found.append(f"{value.__module__}.{value.__name__}")
    assert sorted(set(found)) == []


def test_moved_errors_keep_their_old_import_paths() -> None:
    from haytham.git.repository import GitError
    from haytham.run.runner import WorkflowChangedError

    assert GitError is errors.GitError and WorkflowChangedError is errors.WorkflowChangedError


def test_store_imports_only_format_and_the_base_and_itself() -> None:
    found = []
    for path in sorted(STORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # function-level too
            modules = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            found += [
                f"{path.name}: {m}"
                for m in modules
                if (m == "haytham" or m.startswith("haytham.")) and not m.startswith(ALLOWED)
            ]
    assert found == []


def test_the_layers_above_the_store_use_only_its_public_api() -> None:
    """Outside ``store/``, an import of the store names a module of ``store.PUBLIC_MODULES``
    and, from it, no private name."""
    from haytham import store

    found = []
    for path in sorted(Path(haytham.__file__).parent.rglob("*.py")):
        if STORE in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "haytham.store":
                    modules = [(alias.name, "") for alias in node.names]
                elif node.module.startswith("haytham.store."):
                    modules = [(node.module.split(".")[2], alias.name) for alias in node.names]
                else:
                    continue
            elif isinstance(node, ast.Import):
                modules = [
                    (alias.name.split(".")[2], "")
                    for alias in node.names
                    if alias.name.startswith("haytham.store.")
                ]
            else:
                continue
            for module, name in modules:
                if module not in store.PUBLIC_MODULES or name.startswith("_"):
                    found.append(f"{path.relative_to(STORE.parent)}:{node.lineno}: {module} {name}".rstrip())
    assert found == []


def test_the_version_has_one_home() -> None:
    """``haytham/version.py`` is the version's one home: the installed distribution's
    metadata (pyproject.toml reads it from there), ``haytham.__version__`` and ``haytham
    --version`` say the same."""
    from importlib.metadata import version

    from click.testing import CliRunner

    from haytham.cli.main import cli

    assert haytham.__version__ == version("haytham")
    assert CliRunner().invoke(cli, ["--version"]).output == f"haytham, version {version('haytham')}\n"
