"""The 652 CommonMark spec examples (``tests/data/commonmark-examples.json``, copied from the
project's shared reference data) as pytest parameters for the differential tests, which
check that a fast reader agrees with the general one: every tenth example runs in the
default run, as a sample that spans every section of the spec (the examples are in spec
order), and all the others in the slow tier, which CI also runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

EXAMPLES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "data" / "commonmark-examples.json").read_text("utf-8")
)
SAMPLE_EVERY = 10


def sampled_examples() -> list[Any]:
    """Every example as a parameter: every ``SAMPLE_EVERY``-th in the default run, the rest slow."""
    return [
        pytest.param(
            example,
            id=f"example-{example['example']}",
            marks=() if i % SAMPLE_EVERY == 0 else pytest.mark.slow,
        )
        for i, example in enumerate(EXAMPLES)
    ]
