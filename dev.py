#!/usr/bin/env python3
"""Set-up-free entry points: ``python3 dev.py demo|test|lint|schemas|phoenix``.

Each command makes ``.venv`` beside this file on first use and installs haytham into it
(with the test and lint tools for ``test`` and ``lint``), so a machine with only Python 3
and pip needs nothing else, and no system packages are touched. ``test`` passes its arguments
to pytest and runs the suite on every core; ``-n 0`` runs it in one process, ``-m slow`` runs
the slow tier (which the default run leaves out, and every Hypothesis property with all its
examples: tests/property_tiers.py). ``phoenix`` makes ``.venv-phoenix``, a
venv of its own with an Arize Phoenix server and client (the ``phoenix`` extra: heavy, with
pins and a pytest plugin of its own, so kept out of ``.venv``) for the slow tier's check of
``haytham export --otel`` against a real Phoenix (tests/test_otel_phoenix.py); only this
install needs the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


PHOENIX_VENV = ROOT / ".venv-phoenix"
"""The venv of the Phoenix server and client the slow tier exports to (``dev.py phoenix``)."""


def _install(extra: str, where: Path = VENV) -> None:
    python = where / PYTHON.relative_to(VENV)
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(where)
    marker = where / f".installed-{extra or 'runtime'}"
    stamp = str((ROOT / "pyproject.toml").stat().st_mtime_ns)
    if marker.exists() and marker.read_text() == stamp:
        return
    target = f".[{extra}]" if extra else "."
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", target],
        cwd=ROOT,
        check=True,
    )
    marker.write_text(stamp)


def _run(*args: str, environment: dict[str, str] | None = None) -> int:
    return subprocess.run([str(PYTHON), *args], cwd=ROOT, env=environment).returncode


def _with_bytecode() -> dict[str, str]:
    """This environment, with Python writing its bytecode caches (``PYTHONDONTWRITEBYTECODE``
    removed): the tests start hundreds of ``haytham`` processes, which, as from an installed
    haytham (pip compiles it), should not each compile every module from source; pytest's
    rewritten test modules are cached the same way. On two cores the default run took 182-194 s
    with the variable set, 143-159 s without."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


WORKERS = "auto"
"""pytest-xdist workers for ``test``: one per core (on 2 cores as fast as ``-n 2`` and faster than 3)."""
OWN_CHOICE = ("-n", "--numprocesses", "--dist", "--pdb", "--trace", "--co", "--collect-only")
"""Options with which ``test`` leaves the workers to the user: theirs, or one process."""


def _pytest_args(rest: list[str]) -> list[str]:
    """The user's arguments, after ``-n auto`` unless they choose the workers or need one process."""
    chosen = any(arg.startswith(OWN_CHOICE) or "no:xdist" in arg for arg in rest)
    return rest if chosen else ["-n", WORKERS, *rest]


SCHEMAS = """
from haytham.format.schema import SCHEMA_KINDS, generated_check, _HERE
for kind in SCHEMA_KINDS:
    (_HERE / "checks" / f"{kind}.py").write_text(generated_check(kind), "utf-8")
"""
"""``schemas``: write ``haytham/format/checks/``, the schema predicates generated ahead of time."""


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "help"
    rest = argv[1:]
    if command == "demo":
        _install("")
        return _run("examples/idea_validation.py", *rest)
    if command == "test":
        _install("dev,web")  # the route and browser tests of haytham serve need the web extra
        return _run("-m", "pytest", *_pytest_args(rest), environment=_with_bytecode())
    if command == "lint":
        _install("dev,web")  # mypy checks haytham/web/ against the web extra's types
        return (
            _run("-m", "ruff", "check", "haytham", "tests", "examples", "benchmarks", "dev.py")
            or _run("-m", "ruff", "format", "--check", "haytham", "tests", "examples", "benchmarks", "dev.py")
            or _run("-m", "mypy", "haytham")
        )
    if command == "phoenix":
        _install("phoenix", PHOENIX_VENV)
        return 0
    if command == "schemas":
        _install("")
        return _run("-c", SCHEMAS)
    print("usage: python3 dev.py demo|test|lint|schemas|phoenix [args...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
