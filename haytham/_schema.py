"""The JSON Schemas shipped in ``haytham/schemas/``, each compiled once into a validator."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

SCHEMA_KINDS = ("manifest", "checkpoint", "agent_output", "feedback", "history_entry", "project", "workflow")


@cache
def validator(kind: str) -> Draft202012Validator:
    """The validator for one document kind, built on first use and kept."""
    text = resources.files("haytham.schemas").joinpath(f"{kind}.schema.json").read_text("utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(kind: str, instance: Mapping[str, Any]) -> list[ValidationError]:
    """Every way ``instance`` breaks the schema of ``kind``, in document order of paths."""
    errors = validator(kind).iter_errors(instance)
    return sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])


def describe(error: ValidationError) -> str:
    """A message that starts with the offending value and says what was expected."""
    keyword: Any = error.validator
    value: Any = error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if keyword == "enum":
        return f"{value!r} is not one of {', '.join(map(str, expected))}"
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        names = {"integer": "a whole number", "number": "a number", "boolean": "a boolean"}
        wanted = " or ".join(names.get(k, f"a {k}") for k in kinds if k != "null")
        if "boolean" in kinds:
            wanted += " (expected true/false, yes/no)"
        return f"{value!r} is not {wanted}"
    if keyword == "pattern" and "timestamp" in str(schema.get("description", "")):
        return f"{value!r} is not an ISO 8601 UTC timestamp (expected like 2024-11-24T10:00:00Z)"
    if keyword == "minimum":
        return f"{value!r} is below the minimum {expected}"
    return str(error.message)
