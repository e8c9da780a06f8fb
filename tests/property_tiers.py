"""How many examples a Hypothesis property tries: a representative sample in the default run,
every example in the slow tier.

A property decorated with ``property_settings(N, ...)`` is marked ``property`` and tries
``N // SAMPLE_SHARE`` examples (at least ``MIN_SAMPLE``) in the default run, which must stay
under three minutes on two cores; CI's slow tier runs the same properties again with all
``N`` (``HAYTHAM_EXHAUSTIVE=1 python3 dev.py test -m "slow or property"``, in ``.ci/run``).
The differential properties (the fast readers against the general one) are most of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import settings

EXHAUSTIVE = os.environ.get("HAYTHAM_EXHAUSTIVE") == "1"
"""Whether this run tries every example (CI's slow tier) or a sample (the default run)."""
SAMPLE_SHARE = 5
MIN_SAMPLE = 10

Test = TypeVar("Test", bound=Callable[..., Any])


def examples(exhaustive: int) -> int:
    """The examples a property tries in this run, out of its ``exhaustive`` count."""
    return exhaustive if EXHAUSTIVE else max(exhaustive // SAMPLE_SHARE, min(MIN_SAMPLE, exhaustive))


def property_settings(exhaustive: int, **options: Any) -> Callable[[Test], Test]:
    """Hypothesis ``settings`` (no deadline: the suite asserts no timings) with this run's
    share of ``exhaustive`` examples, and the ``property`` mark that puts the test in both tiers."""
    chosen = settings(max_examples=examples(exhaustive), deadline=None, **options)

    def decorate(test: Test) -> Test:
        marked: Test = pytest.mark.property(chosen(test))
        return marked

    return decorate
