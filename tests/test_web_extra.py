"""Without the web extra, ``haytham serve`` and ``haytham report`` say in one line what to
install, whichever of the extra's modules is missing.

Each package the ``web`` extra requires (read from haytham's installed metadata, so a
package added to the extra is covered) has its modules made unimportable in a real
``haytham`` process, as an interpreter without it finds them (``sys.modules[name] = None``).
Found by a user trial: a core install's ``haytham serve`` ended in a traceback (no module
``anyio``), because a list of the extra's modules had missed one the pages import.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from haytham import CheckpointManager
from haytham.run.demo import run_demo


def web_extra_distributions() -> dict[str, list[str]]:
    """The distributions the ``web`` extra requires, each with its top-level modules."""
    wanted = {
        canonicalize_name(requirement.name)
        for requirement in map(Requirement, requires("haytham") or [])
        if requirement.marker is not None and requirement.marker.evaluate({"extra": "web"})
    }
    modules: dict[str, list[str]] = {name: [] for name in wanted}
    for module, distributions in packages_distributions().items():
        for distribution in map(canonicalize_name, distributions):
            if distribution in wanted and not module.startswith("_"):
                modules[distribution].append(module)
    return {name: sorted(found) for name, found in sorted(modules.items())}


DISTRIBUTIONS = web_extra_distributions()
ONE_LINE = re.compile(
    r"Error: this command needs the web extra, which is not installed \(no module '[\w.]+'\): "
    r"pip install 'haytham\[web\]'\n"
)


def without(distribution: str, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``haytham *argv`` in a process where ``distribution``'s modules cannot be imported."""
    blocked = DISTRIBUTIONS[distribution]
    probe = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # what an interpreter without the distribution finds\n"
        "from haytham.cli.main import main\n"
        f"sys.argv = ['haytham', *{list(argv)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120
    )


def test_the_extra_brings_the_modules_the_pages_import() -> None:
    modules = {module for found in DISTRIBUTIONS.values() for module in found}
    assert {"anyio", "starlette", "jinja2", "uvicorn"} <= modules
    assert all(DISTRIBUTIONS.values()), DISTRIBUTIONS


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_serve_without_a_package_of_the_extra_says_what_to_install_before_it_listens(
    tmp_path: Path, distribution: str
) -> None:
    """Every package of the extra is needed by the server (python-multipart at its first
    review form, so ``serve`` checks for it at start), and none is missing unseen."""
    done = without(distribution, tmp_path, "serve", "--port", "0")
    assert done.returncode == 1, done.stderr
    assert ONE_LINE.fullmatch(done.stderr), done.stderr


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_report_without_a_package_of_the_extra_works_or_says_what_to_install(
    tmp_path: Path, distribution: str
) -> None:
    run_demo(CheckpointManager(tmp_path / "projects"), "idea-001")
    done = without(distribution, tmp_path, "report", "demo", "idea-001", "-o", "page.html")
    if done.returncode == 0:  # the report renders templates only: it needs Jinja2, not the server
        assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!doctype html>")
        assert distribution not in ("jinja2", "markupsafe")
    else:
        assert done.returncode == 1 and ONE_LINE.fullmatch(done.stderr), done.stderr
        assert not (tmp_path / "page.html").exists()
