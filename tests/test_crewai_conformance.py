"""The CrewAI conformance kit (``haytham.integrations.crewai.conformance``) against CrewAI's
own ``SQLiteFlowPersistence``, which must pass it (else the kit is wrong), and against
``HaythamFlowPersistence``: every test of the kit runs once for each store.

Skipped only where CrewAI is not installed and CI is not set (in CI it must run).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import crewai_env  # noqa: F401 - before CrewAI: no network
import pytest

try:
    from crewai.flow.persistence import SQLiteFlowPersistence
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("CrewAI is not installed: pip install 'haytham[crewai]'", allow_module_level=True)

from haytham.integrations.crewai import HaythamFlowPersistence
from haytham.integrations.crewai.conformance import *  # noqa: F403


@pytest.fixture(params=["sqlite", "haytham"])
def make_flow_persistence(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory of the store under test, over one folder of the test (picklable: the
    kit's other processes build it again)."""
    if request.param == "sqlite":
        return functools.partial(SQLiteFlowPersistence, str(tmp_path / "flow_states.db"))
    return functools.partial(HaythamFlowPersistence, str(tmp_path / "projects"), "crewai")
