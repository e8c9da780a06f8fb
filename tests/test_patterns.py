"""Module-level regular expressions are compiled on first use (``haytham.format.patterns.lazy``)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import haytham
from haytham.format.patterns import lazy


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    text = "Phase 12: a, b\nphase_3_x"
    pattern = lazy(r"phase_(\d+)_", re.IGNORECASE)
    assert "match" not in vars(pattern)  # nothing compiled yet
    compiled = re.compile(r"phase_(\d+)_", re.IGNORECASE)
    assert pattern.search(text).group(1) == compiled.search(text).group(1) == "3"  # type: ignore[union-attr]
    assert pattern.match(text) is None
    assert pattern.sub("#", text) == compiled.sub("#", text)
    assert pattern.split(text) == compiled.split(text)
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert (pattern.pattern, pattern.flags, pattern.groups) == (compiled.pattern, compiled.flags, 1)
    assert vars(pattern)["search"].__self__ is vars(pattern)["sub"].__self__  # compiled once, kept
    with pytest.raises(AttributeError):
        pattern.no_such_method  # noqa: B018


def test_no_module_compiles_a_pattern_when_imported() -> None:
    """Every module of haytham but the generated schema checks (fastjsonschema's code)
    holds its patterns uncompiled until one is used."""
    compiled = []
    for info in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if info.name.startswith("haytham.format.checks"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (web, langgraph) that is not installed
            continue
        compiled += [f"{info.name}.{k}" for k, v in vars(module).items() if isinstance(v, re.Pattern)]
    assert compiled == []
