"""Generated code: one fastjsonschema predicate a schema kind (``haytham.format.schema``).

``python3 dev.py schemas`` writes the modules; a test fails when one is stale. The code
fastjsonschema generates raises its own exception classes; the modules here raise these
instead, so that reading valid files never imports fastjsonschema (and what it imports);
and they test numbers against ``Decimal`` here, so that they never import ``decimal`` either.
"""

from __future__ import annotations

import sys
from typing import Any


class JsonSchemaValueException(ValueError):
    """An instance a generated predicate refuses (fastjsonschema's class of the same name)."""

    def __init__(
        self,
        message: str,
        value: Any = None,
        name: str | None = None,
        definition: Any = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition = definition
        self.rule = rule


class JsonSchemaValuesException(ValueError):
    """Several refusals at once (fastjsonschema's class of the same name)."""

    def __init__(self, errors: Any = None) -> None:
        super().__init__(errors)
        self.errors = errors


class _DecimalType(type):
    """``isinstance(value, Decimal)`` without importing ``decimal`` (a millisecond of every
    command's start, issue 26): a value can be a ``decimal.Decimal`` only once something
    imported that module, so the check asks the module only if it is there."""

    def __instancecheck__(cls, value: object) -> bool:
        decimal = sys.modules.get("decimal")
        return decimal is not None and isinstance(value, decimal.Decimal)


class Decimal(metaclass=_DecimalType):
    """What the generated predicates test numbers against in place of ``decimal.Decimal``
    (fastjsonschema's code takes a ``Decimal`` for a number): ``isinstance`` answers alike."""
