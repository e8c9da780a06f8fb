"""The JSON Schemas shipped in ``haytham/format/schemas/``, each compiled once into a validator.

Every record read is checked against its schema. jsonschema walks a schema generically and
costs more than parsing the file, so each schema is also compiled into a plain Python
predicate (``_compile``) that answers "certainly valid"; only when it cannot say so does
jsonschema run, and jsonschema alone produces the errors. The predicate is conservative: for
a keyword or a value it does not fully understand it says "not sure" (False), never "valid".
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

SCHEMA_KINDS = ("manifest", "checkpoint", "agent_output", "feedback", "history_entry", "project", "workflow")


@cache
def validator(kind: str) -> Draft202012Validator:
    """The validator for one document kind, built on first use and kept."""
    text = resources.files("haytham.format.schemas").joinpath(f"{kind}.schema.json").read_text("utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(kind: str, instance: Mapping[str, Any]) -> list[ValidationError]:
    """Every way ``instance`` breaks the schema of ``kind``, in document order of paths."""
    if certainly_valid(kind)(instance):
        return []
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


Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples", "default"})
_OBJECT_KEYWORDS = frozenset(
    {"properties", "required", "additionalProperties", "propertyNames", "minProperties"}
)
_ARRAY_KEYWORDS = frozenset({"items", "minItems", "uniqueItems"})
_TYPE_TESTS = {
    "string": "type({v}) is str",
    "integer": "type({v}) is int",
    "number": "type({v}) in _PLAIN",
    "boolean": "type({v}) is bool",
    "null": "{v} is None",
    "array": "type({v}) is list",
    "object": "type({v}) is dict",
}


@cache
def certainly_valid(kind: str) -> Check:
    """A predicate that is True only for instances jsonschema accepts for ``kind``."""
    return compile_schema(validator(kind).schema)


def compile_schema(schema: Any) -> Check:
    """Python source generated from ``schema`` and compiled: a predicate that says True only
    for instances the schema accepts. A keyword, a type or a value it does not know makes the
    whole predicate say False (not sure), so jsonschema decides. Types are tested exactly
    (``type(x) is str``), so a subclass is "not sure" too."""
    generator = _Generator()
    try:
        entry = generator.function(schema)
    except _Unsupported:
        return _never
    namespace = dict(generator.constants)
    exec("\n".join(generator.lines), namespace)
    check: Check = namespace[entry]
    return check


def _never(_: Any) -> bool:
    return False


class _Unsupported(Exception):
    pass


class _Generator:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.functions = 0
        self.constants: dict[str, Any] = {
            "_PLAIN": (int, float),
            "_MISSING": object(),
            "_not_a_number": _not_a_number,
            "_unique": _unique,
        }

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name

    def expression(self, schema: Any, v: str) -> str:
        """A boolean expression on variable ``v`` that is True only if ``v`` is valid."""
        if schema is True:
            return "True"
        if not isinstance(schema, dict):
            raise _Unsupported
        if any(key in _OBJECT_KEYWORDS or key in _ARRAY_KEYWORDS for key in schema):
            return f"{self.function(schema)}({v})"
        parts = [self.keyword(key, value, v) for key, value in schema.items() if key not in _ANNOTATIONS]
        return " and ".join(f"({part})" for part in parts) or "True"

    def keyword(self, key: str, value: Any, v: str) -> str:
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not kinds or any(k not in _TYPE_TESTS for k in kinds):
                raise _Unsupported
            return " or ".join(_TYPE_TESTS[k].format(v=v) for k in kinds)
        if key == "enum":
            if not isinstance(value, list) or not value or not all(type(e) is str for e in value):
                raise _Unsupported
            return f"type({v}) is str and {v} in {self.constant(frozenset(value))}"
        if key == "pattern":
            rx = self.constant(re.compile(value))
            return f"not isinstance({v}, str) or (type({v}) is str and {rx}.search({v}) is not None)"
        if key == "minimum":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Unsupported
            return f"(type({v}) in _PLAIN and {v} >= {value!r}) or _not_a_number({v})"
        if key == "minLength":
            if isinstance(value, bool) or not isinstance(value, int):
                raise _Unsupported
            return f"not isinstance({v}, str) or (type({v}) is str and len({v}) >= {value})"
        if key == "anyOf":
            if not isinstance(value, list) or not value:
                raise _Unsupported
            return " or ".join(f"({self.expression(sub, v)})" for sub in value)
        raise _Unsupported

    def function(self, schema: Any) -> str:
        """The name of a generated function checking ``schema`` (objects and arrays)."""
        if not isinstance(schema, dict):
            raise _Unsupported
        name = f"_f{self.functions}"
        self.functions += 1
        body: list[str] = []
        plain = {
            k: v
            for k, v in schema.items()
            if k not in _ANNOTATIONS and k not in _OBJECT_KEYWORDS and k not in _ARRAY_KEYWORDS
        }
        if plain:
            body.append(f"    if not ({self.expression(plain, 'x')}):")
            body.append("        return False")
        if any(k in _OBJECT_KEYWORDS for k in schema):
            body += self.object_block(schema)
        if any(k in _ARRAY_KEYWORDS for k in schema):
            body += self.array_block(schema)
        self.lines += [f"def {name}(x):", *body, "    return True", ""]
        return name

    def object_block(self, schema: dict[str, Any]) -> list[str]:
        if "patternProperties" in schema or "dependentRequired" in schema:
            raise _Unsupported
        lines = ["    if type(x) is dict:"]
        for name in schema.get("required", []):
            lines += [f"        if {name!r} not in x:", "            return False"]
        if "minProperties" in schema:
            lines += [f"        if len(x) < {int(schema['minProperties'])}:", "            return False"]
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False:
            declared = self.constant(frozenset(properties))
            lines += [f"        if not {declared}.issuperset(x):", "            return False"]
        elif extra is not True:
            declared = self.constant(frozenset(properties))
            check = self.expression(extra, "v")
            lines += [
                "        for k, v in x.items():",
                f"            if k not in {declared} and not ({check}):",
                "                return False",
            ]
        if "propertyNames" in schema:
            check = self.expression(schema["propertyNames"], "k")
            lines += ["        for k in x:", f"            if not ({check}):", "                return False"]
        for key, sub in properties.items():
            lines += [
                f"        v = x.get({key!r}, _MISSING)",
                f"        if v is not _MISSING and not ({self.expression(sub, 'v')}):",
                "            return False",
            ]
        lines += ["    elif isinstance(x, dict):", "        return False"]
        return lines

    def array_block(self, schema: dict[str, Any]) -> list[str]:
        if "prefixItems" in schema or "contains" in schema:
            raise _Unsupported
        lines = ["    if type(x) is list:"]
        if "minItems" in schema:
            lines += [f"        if len(x) < {int(schema['minItems'])}:", "            return False"]
        if schema.get("uniqueItems") is True:
            lines += ["        if not _unique(x):", "            return False"]
        if "items" in schema:
            items = schema["items"]
            if isinstance(items, list):
                raise _Unsupported
            lines += [
                "        for v in x:",
                f"            if not ({self.expression(items, 'v')}):",
                "                return False",
            ]
        lines += ["    elif isinstance(x, list):", "        return False"]
        return lines


def _not_a_number(x: Any) -> bool:
    """True for what jsonschema's ``minimum`` ignores: non-numbers and booleans."""
    return not isinstance(x, numbers.Number) or isinstance(x, bool)


def _unique(items: list[Any]) -> bool:
    kinds = {type(i) for i in items}
    if kinds <= {str} or kinds <= {int}:
        return len(set(items)) == len(items)
    return False
