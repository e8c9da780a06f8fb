"""Shared test set-up: the tests folder is importable (workers, crash harness), and the
``isolated_git`` fixture for the tests that run real git."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


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
