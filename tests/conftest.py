"""Shared test set-up: the tests folder is importable (workers, crash harness), the
``isolated_git`` fixture for the tests that run real git, and the ``counters`` fixture for
the tests that count work (``tests/workcount.py``), and Hypothesis without its per-example
deadline: the suite asserts no timings, and a 200 ms deadline fails a correct example on a
loaded machine (a flaky test, seen on a 2-core machine running several suites)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

settings.register_profile("haytham", deadline=None)
settings.load_profile("haytham")

SLOW_TIER = "slow"
"""The marker expression of the slow tier (``python3 dev.py test -m slow``, in ``.ci/run``)."""


def pytest_configure(config: pytest.Config) -> None:
    """The slow tier also runs every Hypothesis property with all its examples: the default
    run tries a sample of each (``property_tiers``), so that it stays under three minutes,
    and ``-m slow`` becomes ``-m "slow or property"`` with ``HAYTHAM_EXHAUSTIVE=1``. (xdist
    workers get the same arguments and come here before they collect.)"""
    if config.option.markexpr == SLOW_TIER:
        os.environ["HAYTHAM_EXHAUSTIVE"] = "1"
        config.option.markexpr = f"{SLOW_TIER} or property"


sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from workcount import WorkCounters


@pytest.fixture
def counters(tmp_path: Path) -> Iterator[WorkCounters]:
    """The work done on the files under the test's ``tmp_path`` (and in haytham's parsing,
    index and ordering code), counted from outside haytham while the test runs
    (``workcount.counting``; ``reset`` starts again from zero)."""
    from workcount import counting

    with counting(tmp_path) as counts:
        yield counts


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git (the merge driver it starts, and every process started here) sees no system or
    user configuration: each test's clones are configured by the test alone."""
    home = tmp_path / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("GIT_") or key == "XDG_CONFIG_HOME":
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
