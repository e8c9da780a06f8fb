"""Generated code: one fastjsonschema predicate a schema kind (``haytham.format.schema``).

``python3 dev.py schemas`` writes the modules; a test fails when one is stale. The code
fastjsonschema generates raises its own exception classes; the modules here raise these
instead, so that reading valid files never imports fastjsonschema (and what it imports).
"""

from __future__ import annotations

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
