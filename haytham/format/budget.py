"""The one spelling of a budget (``format.policy.Budget``) in a review's ``Raised Budget``.

A workflow's ``budget:`` (for the session, and for any phase) limits what a run may spend, in
tokens, in dollars, or both. A review that approves a phase held for its budget records the
budget the run may spend from then on as text: ``400000 tokens, $10.0000`` (either part may be
left out). ``read_budget`` reads it back, leniently (``400,000 tokens``, ``$10``, in any
order), and names what it cannot read.
"""

from __future__ import annotations

import re

from haytham.format import values as v
from haytham.format.patterns import lazy
from haytham.format.policy import Budget

_PARTS = lazy(
    r"(?P<tokens>[0-9](?:[0-9]|[,_](?=[0-9]{3}))*)\s*tokens?\b|\$\s*(?P<cost>[0-9]+(?:\.[0-9]+)?)",
    re.IGNORECASE,
)
_EXPECTED = "expected '400000 tokens', '$10.00' or both"
_SEPARATORS = lazy(r"[\s,;]*(?:and)?[\s,;]*", re.IGNORECASE)


def read_budget(text: str) -> Budget | str:
    """The budget ``text`` says (``400,000 tokens``, ``$10``, both in any order), or why it is
    not one (for a located error)."""
    tokens: int | None = None
    cost: float | None = None
    position = 0
    for found in _PARTS.finditer(text):
        between = text[position : found.start()]
        if not _SEPARATORS.fullmatch(between):
            return f"{between.strip()!r} in {text!r} is not a budget ({_EXPECTED})"
        position = found.end()
        if found["tokens"] is not None:
            tokens = int(found["tokens"].replace(",", "").replace("_", ""))
        else:
            cost = float(found["cost"])
    rest = text[position:]
    if not _SEPARATORS.fullmatch(rest) or (tokens is None and cost is None):
        return f"{text!r} is not a budget ({_EXPECTED})"
    return Budget(tokens, cost)


def write_budget(budget: Budget) -> str:
    """``400000 tokens, $10.0000``: what ``read_budget`` reads back as ``budget``."""
    parts = []
    if budget.tokens is not None:
        parts.append(f"{budget.tokens} tokens")
    if budget.cost is not None:
        parts.append(v.write_cost(budget.cost))
    return ", ".join(parts)
