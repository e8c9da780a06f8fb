"""Each enumeration has one home: the Literal types of ``haytham.records``.

The schema files name an enumeration (``$ref: #/$defs/PhaseStatus``) and never list its
values; loading fills them in from the Literal, so the schemas' enums and the Python data
cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from haytham import records
from haytham.format.schema import SCHEMA_KINDS, load_schema, schema_errors, validator

SCHEMAS = Path(records.__file__).parent / "format" / "schemas"
ALL_KINDS = sorted(p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json"))


def enums(node: Any, where: str = "") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        if "enum" in node:
            yield where, node["enum"]
        for key, value in node.items():
            yield from enums(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from enums(value, f"{where}/{index}")


def test_every_schema_kind_is_listed() -> None:
    assert set(SCHEMA_KINDS) <= set(ALL_KINDS)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_no_schema_file_lists_an_enumeration(kind: str) -> None:
    shipped = json.loads((SCHEMAS / f"{kind}.schema.json").read_text("utf-8"))
    assert list(enums(shipped)) == []


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_loaded_enum_is_a_literal_of_records(kind: str) -> None:
    schema = load_schema(kind)
    for where, values in enums(schema):
        name = where.split("/")[-1]
        assert where == f"/$defs/{name}"
        assert tuple(values) == get_args(getattr(records, name)) == records.ENUMERATIONS[name]


def test_the_status_properties_take_their_values_from_records() -> None:
    def values(kind: str, *path: str) -> tuple[str, ...]:
        node: Any = validator(kind).schema
        for step in path:
            node = node[step]
        name = node["$ref"].removeprefix("#/$defs/")
        return tuple(validator(kind).schema["$defs"][name]["enum"])

    assert values("checkpoint", "properties", "status") == records.PHASE_STATUSES
    assert values("checkpoint", "properties", "agents", "items", "properties", "status") == (
        records.PHASE_STATUSES
    )
    assert values("checkpoint", "properties", "execution_mode") == records.RUN_STYLES
    assert values("agent_output", "properties", "status") == records.PHASE_STATUSES
    assert values("history_entry", "properties", "status") == records.PHASE_STATUSES
    assert values("manifest", "properties", "status") == records.SESSION_STATUSES
    # A manifest row holds a lifecycle state; one written before the lifecycle may hold a
    # checkpoint status (requires_retry), which is read as written.
    row_status = validator("manifest").schema["properties"]["phases"]["items"]["properties"]["status"]
    assert [choice["$ref"] for choice in row_status["anyOf"]] == ["#/$defs/PhaseState", "#/$defs/PhaseStatus"]
    assert tuple(validator("manifest").schema["$defs"]["PhaseState"]["enum"]) == records.PHASE_STATES
    assert values("feedback", "properties", "action") == records.FEEDBACK_ACTIONS
    assert values("project", "properties", "status") == records.PROJECT_STATUSES
    assert (
        values("workflow", "properties", "phases", "items", "properties", "run_style") == records.RUN_STYLES
    )


def test_the_tuples_are_the_literals() -> None:
    assert get_args(records.PhaseStatus) == records.PHASE_STATUSES
    assert get_args(records.RunStyle) == records.RUN_STYLES
    assert get_args(records.FeedbackAction) == records.FEEDBACK_ACTIONS
    assert get_args(records.ProjectStatus) == records.PROJECT_STATUSES
    assert get_args(records.SessionStatus) == records.SESSION_STATUSES


def test_an_enumeration_error_names_the_value_and_the_choices() -> None:
    (error,) = schema_errors("feedback", {"action": "maybe"} | _valid_feedback())
    assert error.validator == "enum"
    assert list(error.absolute_path) == ["action"]
    assert error.validator_value == list(records.FEEDBACK_ACTIONS)


def _valid_feedback() -> dict[str, Any]:
    return {
        "phase_name": "P",
        "reviewed": True,
        "approved": True,
        "timestamp": None,
        "comments": "",
        "requested_changes": [],
        "retry_count": 0,
    }


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_shipped_schema_is_a_valid_draft_2020_12_schema(kind: str) -> None:
    """The metaschema check that used to run in every process on first use runs here."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(load_schema(kind))
    except SchemaError as error:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{kind}.schema.json: {error.message}")


def test_the_generated_predicates_are_current() -> None:
    """``haytham/format/checks/`` holds what ``python3 dev.py schemas`` writes; a stale file
    would only be slow (it is not used), so the failure asks for regeneration."""
    from haytham.format.schema import stale_checks

    assert stale_checks() == [], "run: python3 dev.py schemas"


def test_a_predicate_is_stale_when_its_schema_changed_not_when_fastjsonschema_did(tmp_path: Path) -> None:
    import shutil

    import fastjsonschema

    from haytham.format.schema import _HERE, CHECKS_FOLDER, stale_checks

    folder = tmp_path / "checks"
    shutil.copytree(_HERE / CHECKS_FOLDER, folder)
    assert stale_checks(folder) == []
    kind = SCHEMA_KINDS[0]
    path = folder / f"{kind}.py"
    text = path.read_text("utf-8")
    older = text.replace(f'VERSION = "{fastjsonschema.VERSION}"', 'VERSION = "0.0.1"') + "# older code\n"
    path.write_text(older, "utf-8")
    assert stale_checks(folder) == []  # another release's code for the same schema still stands
    path.write_text(text + "# edited\n", "utf-8")
    assert stale_checks(folder) == [kind]  # this release would write it differently
    path.write_text(text.replace("SCHEMA_DIGEST = ", 'SCHEMA_DIGEST = "0" + '), "utf-8")
    assert stale_checks(folder) == [kind]
    path.unlink()
    assert stale_checks(folder) == [kind]


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_the_generated_predicate_is_the_one_in_use(kind: str) -> None:
    import importlib

    from haytham.format.schema import certainly_valid

    module = importlib.import_module(f"haytham.format.checks.{kind}")
    assert certainly_valid(kind).__closure__[0].cell_contents is module.validate  # type: ignore[index]


def test_a_generated_predicate_takes_a_decimal_for_a_number_as_fastjsonschema_does(tmp_path: Path) -> None:
    # The generated code tests numbers against haytham.format.checks.Decimal, which stands in
    # for decimal.Decimal without importing it: it must answer as fastjsonschema's own code.
    import decimal

    from haytham import CheckpointManager
    from haytham.format.checks import Decimal
    from haytham.format.document import to_json
    from haytham.format.schema import certainly_valid, compile_schema

    manager = CheckpointManager(tmp_path)
    manager.create_session("P", "S", "ada", execution_mode="mvp")
    manager.save_checkpoint("P", "S", 1, "completed", [{"agent_name": "writer", "tokens": 5}], duration=2.5)
    data = to_json(manager.load_checkpoint("P", "S", 1))
    generated, compiled = certainly_valid("checkpoint"), compile_schema(load_schema("checkpoint"))
    for duration, valid in ((decimal.Decimal("1.5"), True), ("1.5", False), (1.5, True), (None, True)):
        instance = {**data, "duration": duration}
        assert generated(instance) is compiled(instance) is valid, duration
    assert isinstance(decimal.Decimal("1.5"), Decimal)
    assert not isinstance(1.5, Decimal) and not isinstance("1.5", Decimal)
