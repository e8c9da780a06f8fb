"""The JSON Schemas shipped in ``haytham/format/schemas/``, each loaded and compiled once.

Enumerations are not written in the schema files: a property whose values are, say, a
phase status refers to ``#/$defs/PhaseStatus``, and loading fills that definition's
``enum`` from ``haytham.records.ENUMERATIONS`` (the Literal types), so every status list
has one home.

Every record read is checked against its schema. jsonschema walks a schema generically and
costs more than parsing the file, so each schema is also compiled by fastjsonschema into a
predicate that answers "certainly valid"; only when it cannot say so does jsonschema run,
and jsonschema alone produces the errors. The predicate may be stricter than jsonschema (it
says "not sure", and jsonschema decides), never looser: the tests check that.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported only when a record is not certainly valid
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

from haytham.format.patterns import lazy
from haytham.format.values import MAX_AMOUNT, MAX_WHOLE_NUMBER
from haytham.records import ENUMERATIONS

_HERE = Path(__file__).parent
"""``haytham/format``: the schemas ship beside this module (``importlib.resources`` would cost
more to import than every schema costs to read)."""
SCHEMA_KINDS = ("manifest", "checkpoint", "agent_output", "feedback", "history_entry", "project", "workflow")


SCHEMAS_FOLDER = "schemas"
"""Where the JSON Schemas ship, below ``haytham/format``."""
CHECKS_FOLDER = "checks"
"""Where their generated predicates ship, below ``haytham/format`` (``python3 dev.py schemas``)."""


def schemas_digest(folder: Path = _HERE) -> str:
    """A hash of what decides whether a record is valid: the bytes of every shipped schema
    and generated predicate below ``folder`` (``haytham/format``), the enumerations that fill
    their ``$defs`` and the bounds put on their numbers.

    Content, never a file's time: reinstalling or upgrading haytham rewrites these files with
    the same bytes, and must not change the hash (``haytham.store.index`` keys on it).
    """
    import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

    digest = hashlib.sha256(json.dumps([sorted(ENUMERATIONS.items()), MAX_AMOUNT, MAX_WHOLE_NUMBER]).encode())
    for sub, suffix in ((SCHEMAS_FOLDER, ".json"), (CHECKS_FOLDER, ".py")):
        directory = folder / sub
        for name in sorted(os.listdir(directory)):
            if name.endswith(suffix):
                digest.update(f"{sub}/{name}\0".encode())
                digest.update((directory / name).read_bytes())
    return digest.hexdigest()


@cache
def _schema_text(kind: str) -> str:
    return (_HERE / SCHEMAS_FOLDER / f"{kind}.schema.json").read_text("utf-8")


def load_schema(kind: str) -> dict[str, Any]:
    """The schema of ``kind`` as shipped, with each ``$defs`` enumeration filled in.

    A ``$defs`` entry named after a Literal of ``haytham.records`` (``PhaseStatus``) gets
    that Literal's values as its ``enum``; a new dict each call, so callers may keep it.
    """
    schema: dict[str, Any] = json.loads(_schema_text(kind))
    for name, definition in schema.get("$defs", {}).items():
        values = ENUMERATIONS.get(name)
        if values is None:
            raise LookupError(f"{kind}.schema.json: $defs/{name} names no enumeration of haytham.records")
        definition["enum"] = list(values)
    if kind in SCHEMA_KINDS:  # config.yaml checks its numbers itself, naming their units
        _bound_numbers(schema)
    return schema


def _bound_numbers(node: Any) -> None:
    """Give every number property without a ``maximum`` the sane bound of its kind
    (``values.MAX_WHOLE_NUMBER`` for whole numbers, ``values.MAX_AMOUNT`` for the others),
    so an absurd count, token total or duration read from a file is a located schema error,
    never a value that makes later code allocate, loop or overflow."""
    if isinstance(node, list):
        for item in node:
            _bound_numbers(item)
        return
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "maximum" not in node and ("integer" in kinds or "number" in kinds):
        node["maximum"] = MAX_AMOUNT if "number" in kinds else MAX_WHOLE_NUMBER
    for value in node.values():
        _bound_numbers(value)


@cache
def validator(kind: str) -> Draft202012Validator:
    """The validator for one document kind, built on first use and kept.

    Only records that the compiled predicate is not sure of get here, so jsonschema is
    imported then and not at start. The shipped schemas are checked against the metaschema
    by a test (``Draft202012Validator.check_schema``), not in every process.
    """
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(kind))


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
        names = {
            "integer": "a whole number",
            "number": "a number",
            "boolean": "a boolean",
            "object": "a mapping",
        }
        wanted = " or ".join(names.get(k, f"a {k}") for k in kinds if k != "null")
        if "boolean" in kinds:
            wanted += " (expected true/false, yes/no)"
        return f"{value!r} is not {wanted}"
    if keyword == "pattern" and "timestamp" in str(schema.get("description", "")):
        return f"{value!r} is not an ISO 8601 UTC timestamp (expected like 2024-11-24T10:00:00Z)"
    if keyword == "minimum":
        return f"{value!r} is below the minimum {expected}"
    if keyword == "minProperties":
        return f"{value!r} is empty (write at least one key, or leave it out)"
    if keyword == "maximum":
        return f"{value!r} is more than a file may hold (at most {expected:,.0f})"
    return str(error.message)


Check = Callable[[Any], bool]


@cache
def certainly_valid(kind: str) -> Check:
    """A predicate that is True only for instances jsonschema accepts for ``kind``.

    The predicate's code is generated once, ahead of time, into ``haytham/format/checks/``
    (``python3 dev.py schemas``; a test fails when a file there is stale), because
    generating and compiling it costs tens of milliseconds a schema in every new process. A
    file whose recorded schema digest does not match is not used: the predicate is then
    compiled here, as before. The generated code raises the exception classes of
    ``haytham.format.checks``, so a process whose records are all valid never imports
    fastjsonschema itself.
    """
    schema = load_schema(kind)
    try:
        module = importlib.import_module(f"{_CHECKS}.{kind}")
    except ImportError:
        module = None
    if module is not None and getattr(module, "SCHEMA_DIGEST", None) == schema_digest(schema):
        return _predicate(module.validate)
    return compile_schema(schema)


def compile_schema(schema: Any) -> Check:
    """A fastjsonschema predicate for ``schema``: True only for instances it accepts.

    Formats are not checked, as jsonschema checks none by default; defaults are never
    written into the instance. A schema fastjsonschema cannot compile gives a predicate that
    is never sure, so jsonschema decides every time.
    """
    import fastjsonschema

    try:
        validate = fastjsonschema.compile(
            schema, handlers=_NO_REMOTE_REFS, use_default=False, use_formats=False
        )
    except (fastjsonschema.JsonSchemaDefinitionException, re.error):
        return _never
    return _predicate(validate)


def _predicate(validate: Callable[[Any], Any]) -> Check:
    def check(instance: Any) -> bool:
        try:
            validate(instance)
        except (TypeError, ValueError, RecursionError):  # refused (both libraries' exceptions are
            return False  # ValueErrors), or a value it was not made for: not sure
        return True

    return check


_CHECKS = "haytham.format.checks"
"""The package of the generated predicates, one module a schema kind."""


def schema_digest(schema: Any) -> str:
    """What a generated predicate was made from: a hash of the loaded schema."""
    import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]


def generated_check(kind: str) -> str:
    """The text of ``haytham/format/checks/{kind}.py``: fastjsonschema's code for the schema."""
    import fastjsonschema

    schema = load_schema(kind)
    code = fastjsonschema.compile_to_code(
        schema, handlers=_NO_REMOTE_REFS, use_default=False, use_formats=False
    )
    imported = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException"
    if imported not in code:
        raise LookupError("fastjsonschema's generated code no longer imports its exceptions as expected")
    code = code.replace(
        imported, f"from {_CHECKS} import JsonSchemaValueException, JsonSchemaValuesException"
    )
    if code.count(_DECIMAL) != 1:
        raise LookupError("fastjsonschema's generated code no longer imports Decimal as expected")
    code = code.replace(_DECIMAL, f"from {_CHECKS} import Decimal")  # no import of decimal
    code = _LOCALS_FORMAT.sub(_as_f_string, code)
    header = (
        f"# Generated by `python3 dev.py schemas` from {kind}.schema.json; do not edit.\n"
        "# ruff: noqa\n# mypy: ignore-errors\n# fmt: off\n"
        f'SCHEMA_DIGEST = "{schema_digest(schema)}"\n'
    )
    return header + code.rstrip() + "\n"


_DECIMAL = "from decimal import Decimal"
"""How fastjsonschema's code imports the class it tests numbers against (``checks.Decimal``
stands in for it)."""
_LOCALS_FORMAT = lazy(r'"((?:[^"\\{}]|\{[A-Za-z_][A-Za-z0-9_]*\})*)"\.format\(\*\*locals\(\)\)')
"""fastjsonschema's ``"...[{i}]".format(**locals())``, whose fields are plain names."""


def _as_f_string(found: re.Match[str]) -> str:
    """The same string as an f-string: evaluated alike, without building a dict of every
    local variable each time a list item is checked (most of the predicates' time)."""
    return f'f"{found.group(1)}"'


def stale_checks(folder: Path | None = None) -> list[str]:
    """The kinds whose generated predicate file is missing, was generated from another version
    of the schema, or differs from what ``generated_check`` writes with the fastjsonschema
    release that wrote it (``python3 dev.py schemas`` writes them; this module only reads).
    A file written by an older fastjsonschema release is not stale: its code stands alone.
    ``folder`` is where the files are (the package's own folder unless given)."""
    import fastjsonschema

    stale = []
    for kind in SCHEMA_KINDS:
        path = (folder or _HERE / CHECKS_FOLDER) / f"{kind}.py"
        text = path.read_text("utf-8") if path.is_file() else ""
        recorded = dict(_RECORDED.findall(text))
        if recorded.get("SCHEMA_DIGEST") != schema_digest(load_schema(kind)) or (
            recorded.get("VERSION") == fastjsonschema.VERSION and text != generated_check(kind)
        ):
            stale.append(kind)
    return stale


_RECORDED = lazy(r'^(SCHEMA_DIGEST|VERSION) = "([^"]*)"$', re.MULTILINE)
"""The schema digest and the fastjsonschema release a generated predicate file records."""


def _refuse_remote(uri: str) -> Any:
    import fastjsonschema

    raise fastjsonschema.JsonSchemaDefinitionException(f"{uri}: a schema here refers to nothing remote")


_NO_REMOTE_REFS: Mapping[str, Callable[[str], Any]] = {"http": _refuse_remote, "https": _refuse_remote}
"""fastjsonschema would fetch a remote ``$ref``; haytham's schemas have none, and never fetch."""


def _never(_: Any) -> bool:
    return False
