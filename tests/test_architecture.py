"""The layering of docs/architecture.md, checked on every import in haytham/.

Every ``import`` and ``from ... import`` is read with ``ast``: at module level, inside
functions and under ``if TYPE_CHECKING:``. Each module belongs to one layer, and a layer may
import only the layers docs/architecture.md names. Every import counts for those rules,
TYPE_CHECKING ones too, so a type annotation cannot reach upward either. Import cycles are
forbidden between modules, counting imports inside functions and under ``if TYPE_CHECKING:``
(an annotation that names a module importing this one is a cycle of the design, even if it
never runs; docs/architecture.md says how to avoid one).

The checker is plain functions over :class:`Import` records, so the last tests feed it a
synthetic package to prove it catches a violation and a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "haytham"

FEATURES = (
    "compare",
    "transfer",
    "retention",
    "analytics",
    "projects",
    "config",
    "migrate",
    "notify",
    "otel",
)
"""The feature modules: haytham/<name>.py, built on the store's public API."""

BELOW_FEATURES = {"base", "format", "store"}
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "format": {"base", "format"},
    "store": {"base", "format", "store"},
    "feature": BELOW_FEATURES | {"feature"},
    "run": BELOW_FEATURES | {"feature", "git", "run"},
    "git": BELOW_FEATURES | {"feature", "git"},
    "web": BELOW_FEATURES | {"feature", "web"},
    "integrations": BELOW_FEATURES | {"feature", "integrations"},
    "facade": BELOW_FEATURES | {"feature", "run", "git", "facade", "reexport"},
    "reexport": BELOW_FEATURES | {"feature", "run", "git", "facade", "reexport"},
    "cli": BELOW_FEATURES | {"feature", "run", "git", "web", "facade", "reexport", "cli"},
    "main": {"cli"},
}
"""Which layers each layer may import (docs/architecture.md, "Who may import whom")."""


def layer_of(module: str) -> str | None:
    """The layer of a module of the haytham package, or None for one no rule knows yet."""
    parts = module.split(".")
    if parts[0] != "haytham":
        return None
    if len(parts) == 1:
        return "facade"
    top = parts[1]
    if top in ("errors", "records", "frozen", "version") and len(parts) == 2:
        return "base"
    if top in FEATURES and len(parts) == 2:
        return "feature"
    if top == "__main__" and len(parts) == 2:
        return "main"
    return {
        "format": "format",
        "store": "store",
        "run": "run",
        "git": "git",
        "web": "web",
        "cli": "cli",
        "integrations": "integrations",
        "checkpoint": "reexport",
        "project": "reexport",
    }.get(top)


@dataclass(frozen=True)
class Import:
    """One module of haytham importing another, and where."""

    importer: str
    line: int
    imported: str
    where: str  # "module level", "a function" or "TYPE_CHECKING"

    @property
    def file(self) -> str:
        return module_file(self.importer)

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.where}): {self.importer} imports {self.imported}"


def module_file(module: str) -> str:
    """The path of a module's file relative to the repository, as a message shows it."""
    path = PACKAGE.parent / Path(*module.split("."))
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(ROOT))


def package_modules(package: Path = PACKAGE) -> dict[str, str]:
    """Every module of the package by dotted name, with its source."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path.read_text(encoding="utf-8")
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, source: str, modules: Iterable[str]) -> list[Import]:
    """The imports of haytham modules in ``source``, wherever they stand in it.

    ``from package import name`` imports the submodule ``package.name`` when there is one,
    and the package itself otherwise; a relative import is resolved against ``module``.
    """
    known = set(modules)
    is_package = any(other.startswith(module + ".") for other in known)
    found: list[Import] = []

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "TYPE_CHECKING")
            for child in node.orelse:
                visit(child, where)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and where == "module level":
            where = "a function"
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module, node.lineno, alias.name, where))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append(Import(module, node.lineno, target if target in known else base, where))
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(ast.parse(source), "module level")
    return [i for i in found if i.imported.split(".")[0] == "haytham" and i.imported != module]


def all_imports(modules: Mapping[str, str]) -> list[Import]:
    return [i for name, source in modules.items() for i in imports_of(name, source, modules)]


def unknown_modules(modules: Iterable[str]) -> list[str]:
    return [
        f"{m}: no layer; add it to docs/architecture.md and layer_of()" for m in modules if not layer_of(m)
    ]


def layer_violations(imports: Iterable[Import]) -> list[str]:
    """Every import a layer may not make, as "file:line (where): importer [layer] imports ..."."""
    problems = []
    for i in imports:
        mine, theirs = layer_of(i.importer), layer_of(i.imported)
        if mine is None or theirs is None:
            continue  # reported by unknown_modules
        if theirs not in ALLOWED[mine]:
            allowed = ", ".join(sorted(ALLOWED[mine]))
            problems.append(
                f"{i.file}:{i.line} ({i.where}): {i.importer} [{mine}] imports {i.imported} [{theirs}];"
                f" {mine} may import only {allowed}"
            )
    return problems


def import_cycles(imports: Iterable[Import]) -> list[str]:
    """One cycle through each group of modules that import each other, with file:line per step.

    Imports under TYPE_CHECKING count too: an annotation that names a module which imports
    this one is a cycle in the design, even if it never runs (docs/architecture.md).
    """
    edges: dict[str, dict[str, Import]] = {}
    for i in imports:
        edges.setdefault(i.importer, {}).setdefault(i.imported, i)
    problems = []
    for group in _strongly_connected(edges):
        if len(group) < 2:
            continue
        start = min(group)
        path = _shortest_path_back(start, edges, group)
        steps = " -> ".join(f"{i.imported} ({i.file}:{i.line}, {i.where})" for i in path)
        problems.append(f"cycle: {start} -> {steps}")
    return sorted(problems)


def _strongly_connected(edges: Mapping[str, Mapping[str, Import]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively."""
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, {})))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups


def _shortest_path_back(
    start: str, edges: Mapping[str, Mapping[str, Import]], group: set[str]
) -> list[Import]:
    """The imports of a shortest cycle from ``start`` back to itself inside ``group``."""
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, step in sorted(edges.get(node, {}).items()):
                if target not in group or target in came_from:
                    continue
                came_from[target] = step
                if target == start:
                    path = [step]
                    while path[0].importer != start:
                        path.insert(0, came_from[path[0].importer])
                    return path
                following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in a cycle but no path leads back to it")


# ------------------------------------------------------------------ the rules on haytham/

MODULES = package_modules()
IMPORTS = all_imports(MODULES)


def test_the_checker_sees_the_whole_package() -> None:
    assert "haytham.store.manager" in MODULES and "haytham.format.layout" in MODULES
    assert len(IMPORTS) > 100
    assert {"module level", "TYPE_CHECKING"} <= {i.where for i in IMPORTS}


def test_every_module_has_a_layer() -> None:
    assert unknown_modules(MODULES) == []


def test_every_import_follows_the_layers() -> None:
    problems = layer_violations(IMPORTS)
    if problems:
        pytest.fail("imports against the layers of docs/architecture.md:\n" + "\n".join(problems))


def test_no_import_cycles() -> None:
    problems = import_cycles(IMPORTS)
    if problems:
        pytest.fail("import cycles (docs/architecture.md forbids them):\n" + "\n".join(problems))


# ------------------------------------------------------------------ the checker itself


def _synthetic(sources: dict[str, str]) -> list[Import]:
    return all_imports(sources)


def test_the_checker_finds_a_layer_violation_at_every_depth() -> None:
    imports = _synthetic(
        {
            "haytham.store.fs": "import os\nfrom haytham.format import layout\n",
            "haytham.format.layout": "from haytham.errors import PathError\n",
            "haytham.errors": "",
            "haytham.store.manager": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from haytham.run.runner import PhaseRunner\n"
                "def fork():\n"
                "    from haytham import transfer\n"
                "    return transfer\n"
            ),
            "haytham.transfer": "from .store import manager\n",
            "haytham.run.runner": "",
            "haytham.cli.main": "from haytham import CheckpointManager\n",
            "haytham.git.merge": "import haytham.cli.main\n",
        }
    )
    assert layer_violations(imports) == [
        "haytham/store/manager.py:3 (TYPE_CHECKING): haytham.store.manager [store] imports"
        " haytham.run.runner [run]; store may import only base, format, store",
        "haytham/store/manager.py:5 (a function): haytham.store.manager [store] imports"
        " haytham.transfer [feature]; store may import only base, format, store",
        "haytham/git/merge.py:1 (module level): haytham.git.merge [git] imports"
        " haytham.cli.main [cli]; git may import only base, feature, format, git, store",
    ]


def test_the_checker_finds_a_cycle_through_a_function_and_through_type_checking() -> None:
    imports = _synthetic(
        {
            "haytham.compare": "from haytham.store.manager import Attempt\n",
            "haytham.store.manager": "def compare():\n    from haytham.compare import compare\n",
            "haytham.store.doctor": "if TYPE_CHECKING:\n    from haytham.store.manager import X\n",
            "haytham.store.scan": "from haytham.store import doctor\n",
        }
    )
    assert import_cycles(imports) == [
        "cycle: haytham.compare -> haytham.store.manager (haytham/compare.py:1, module level)"
        " -> haytham.compare (haytham/store/manager.py:2, a function)"
    ]
    typed_back = _synthetic(
        {
            "haytham.store.doctor": "if TYPE_CHECKING:\n    from haytham.store.manager import X\n",
            "haytham.store.manager": "from haytham.store import doctor\n",
        }
    )
    assert import_cycles(typed_back) == [
        "cycle: haytham.store.doctor -> haytham.store.manager (haytham/store/doctor.py:2, TYPE_CHECKING)"
        " -> haytham.store.doctor (haytham/store/manager.py:1, module level)"
    ]
    doctor_closes_it = [*imports, Import("haytham.store.doctor", 9, "haytham.store.scan", "a function")]
    assert len(import_cycles(doctor_closes_it)) == 2
    assert "cycle: haytham.store.doctor -> haytham.store.scan (haytham/store/doctor.py:9" in str(
        import_cycles(doctor_closes_it)
    )


def test_the_checker_knows_every_layer_and_no_stranger() -> None:
    assert layer_of("haytham") == "facade"
    assert layer_of("haytham.records") == layer_of("haytham.errors") == layer_of("haytham.frozen") == "base"
    assert layer_of("haytham.format.schemas") == "format"
    assert layer_of("haytham.project.project_manager") == "reexport"
    assert layer_of("haytham.__main__") == "main"
    assert unknown_modules(["haytham.helpers", "haytham.errors.extra"]) == [
        "haytham.helpers: no layer; add it to docs/architecture.md and layer_of()",
        "haytham.errors.extra: no layer; add it to docs/architecture.md and layer_of()",
    ]
