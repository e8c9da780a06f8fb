"""A workflow.yaml in the form ``dump_workflow`` writes is read without PyYAML, and exactly
as PyYAML reads it (``haytham.format.workflow.canonical_data``).

The shortcut is sound only if every text it accepts is one PyYAML loads to the same mapping,
and useful only if it accepts what haytham writes. Both are checked here against PyYAML
itself: on rendered workflows whose names are drawn from plain, quoted, boolean-looking,
numeric-looking and long values, on those texts mutated by hand-edit-like changes, and on
the workflow files of the repository. ``load_workflow`` must give the same workflow, and the
same error (message, line, field), with and without the shortcut.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from property_tiers import property_settings

from haytham.errors import DocumentError
from haytham.format.workflow import (
    IDEA_VALIDATION,
    PhaseDefinition,
    Workflow,
    _canonical_text,
    _nodes,
    _workflow_from,
    canonical_data,
    dump_workflow,
    load_workflow,
)
from haytham.format.yamlfile import MAX_YAML_CHARS, MAX_YAML_NODES, parse_yaml, take_version

PROPERTY = property_settings(100, suppress_health_check=[HealthCheck.too_slow])
TRICKY = [
    "yes",
    "No",
    "ON",
    "off",
    "True",
    "null",
    "NULL",
    "y",
    "n",
    "~",
    "1",
    "1.5",
    "0x1f",
    "1e3",
    "2024-01-01",
    "1:30",
    ".inf",
    ".NaN",
    "<<",
    "=",
    "a #b",
    "a: b",
    "'a'",
    '"a"',
    "[a]",
    "{a}",
    "&x",
    "*x",
    "!!str a",
    "-a",
    "a,b",
    "a b",
    "a  b",
    " a",
    "a ",
    "é",
    "a\tb",
    "x" * 90,
    "1_000",
    "e1",
    "_x",
    "a.b",
    "a-b",
    "phase_1_x",
    "Phase (1)",
    "mod:fn",
    "my.mod:fn.attr",
    "a:b:c",
]
"""Values that YAML reads as something else, that PyYAML quotes or folds, or that are plain."""

plain_names = st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,12}", fullmatch=True)
names = st.one_of(
    st.sampled_from(TRICKY),
    plain_names,
    st.text(alphabet="aZ09._-: #'\"[],&*!yesnotrul", min_size=1, max_size=12),
)
plain_phase_names = st.from_regex(r"[A-Z][a-z]{1,8}( [A-Za-z0-9()]{1,8}){0,3}", fullmatch=True)
CALLABLES = ["m:f", "mod:fn", "my.mod:fn.attr", "a:b:c", "x y:z", "1m:f", "m:f "]
REVIEWERS = [
    "alice@example.com",
    "Bob Smith <bob@example.com>",
    "Carol",
    "yes",
    "Smith, Bob",
    "a: b",
    "#ops",
    "@alice",
    "O'Neil",
    "<dan@example.com>",
    "Ève Müller",
]
"""``reviewers:`` entries, plain (written fast) or not (quoted by PyYAML, read by it)."""


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    """Workflows whose names are all plain (half of them, the form haytham writes fast) or
    drawn from every kind of value, plain or not."""
    plain = draw(st.booleans())
    name = plain_names if plain else names
    phase_name = plain_phase_names if plain else st.one_of(names, plain_phase_names)
    count = draw(st.integers(1, 4))
    numbers = draw(st.lists(st.integers(1, 12), min_size=count, max_size=count, unique=True))
    phases = []
    for number in numbers:
        agents = tuple(draw(st.lists(name, min_size=1, max_size=3, unique=True)))
        phases.append(
            PhaseDefinition(
                number,
                draw(phase_name),
                draw(st.sampled_from([f"phase_{number}_x", f"phase_{number}_{draw(name)}"])),
                agents,
                draw(st.sampled_from(["single", "parallel", "sequential"])),
                draw(st.booleans()),
                tuple(draw(st.lists(st.sampled_from(REVIEWERS), max_size=3, unique=True))),
            )
        )
    modes = draw(
        st.dictionaries(
            name, st.lists(st.sampled_from(numbers), min_size=1, unique=True), min_size=1, max_size=3
        )
    )
    every = [a for p in phases for a in p.agents]
    callables = draw(st.dictionaries(st.sampled_from(every), st.sampled_from(CALLABLES), max_size=2))
    return Workflow(
        draw(name),
        tuple(phases),
        {k: tuple(v) for k, v in modes.items()},
        draw(st.integers(0, 12)),
        callables,
        run_by=draw(st.one_of(st.none(), st.sampled_from(["langgraph", "crewai"]), name)),
    )


def pyyaml_data(text: str) -> Any:
    """What PyYAML loads, without the ``format`` key; an exception when it loads nothing."""
    data = yaml.safe_load(text)
    if isinstance(data, dict):
        data.pop("format", None)
    return data


def slow_load(path: Path) -> Workflow:
    """``load_workflow`` without the shortcut: PyYAML always."""
    text = path.read_text("utf-8")
    node, data = parse_yaml(text, path)
    if not isinstance(data, dict) or node is None:
        raise DocumentError("a workflow file must be a YAML mapping", path=path, line=1)
    take_version(node, data, path)
    return _workflow_from(data, path, node)


def outcome(load: Any, path: Path) -> Any:
    """The workflow, or the error's message, file, line and field."""
    try:
        return load(path)
    except DocumentError as error:
        return ("error", str(error), error.line, error.field)


def assert_same(text: str, tmp: Path) -> None:
    """``canonical_data`` is None or what PyYAML loads; ``load_workflow`` as without it."""
    found = canonical_data(text)
    if found is not None:
        assert found == pyyaml_data(text)
        assert list(found) == list(pyyaml_data(text))  # the order of modes is meaningful
    path = tmp / "workflow.yaml"
    path.write_text(text, "utf-8", newline="")
    assert outcome(load_workflow, path) == outcome(slow_load, path)


@PROPERTY
@given(workflows())
def test_what_dump_workflow_writes_is_read_as_pyyaml_reads_it(workflow: Workflow) -> None:
    text = dump_workflow(workflow)
    found = canonical_data(text)
    if found is not None:
        assert found == pyyaml_data(text)
        assert list(found["modes"]) == list(workflow.modes)
        assert _workflow_from(found, Path("w.yaml"), None) == load_workflow(Path("w.yaml"), text.encode())


@PROPERTY
@given(workflows())
def test_the_canonical_writer_is_pyyamls_wherever_it_writes(workflow: Workflow) -> None:
    """Where ``_canonical_text`` writes a text it is byte for byte ``dump_workflow``'s, so
    every workflow haytham writes with plain names is read without PyYAML."""
    text = dump_workflow(workflow)
    data = pyyaml_data(text)
    try:
        written = _canonical_text(1, data)
    except ValueError:
        return
    assert written == text
    assert canonical_data(text) == data


MUTATIONS = st.one_of(
    st.tuples(st.just("replace"), st.sampled_from(TRICKY)),
    st.tuples(
        st.just("insert"), st.sampled_from([" ", "#", "\n", "  ", "- ", ": ", "'", "\r", "\t", "x", "---\n"])
    ),
    st.tuples(st.just("drop"), st.just("")),
    st.tuples(st.just("repeat"), st.just("")),
)


@PROPERTY
@given(workflows(), st.lists(st.tuples(MUTATIONS, st.integers(0, 10_000)), min_size=1, max_size=3))
def test_hand_edited_texts_are_read_as_pyyaml_reads_them(
    tmp_path_factory: pytest.TempPathFactory, workflow: Workflow, edits: list[tuple[tuple[str, str], int]]
) -> None:
    text = dump_workflow(workflow)
    for (how, what), where in edits:
        lines = text.split("\n")
        index = where % len(lines)
        if how == "replace":  # a value (after ": " or inside a flow list) replaced
            line = lines[index]
            cut = max(line.rfind(": "), line.rfind("[")) + 1
            if line[cut : cut + 1] == " ":
                cut += 1
            lines[index] = line[:cut] + what + ("]" if line.endswith("]") else "")
        elif how == "insert":
            at = where % (len(text) + 1)
            text = text[:at] + what + text[at:]
            continue
        elif how == "drop":
            del lines[index]
        else:
            lines.insert(index, lines[index])
        text = "\n".join(lines)
    assert_same(text, tmp_path_factory.mktemp("w"))


@pytest.mark.parametrize(
    "text",
    [
        dump_workflow(IDEA_VALIDATION),
        dump_workflow(IDEA_VALIDATION).replace("format: 1", "format: 0"),
        dump_workflow(IDEA_VALIDATION).replace("format: 1", "format: 99"),
        dump_workflow(IDEA_VALIDATION).replace("format: 1\n", ""),
        dump_workflow(IDEA_VALIDATION).replace("max_retries: 3", "max_retries: yes"),
        dump_workflow(IDEA_VALIDATION).replace("[1, 2, 3, 6, 7]", "[1, 2, 3, 6, 9]"),
        dump_workflow(IDEA_VALIDATION).replace("number: 2", "number: 1"),
        dump_workflow(IDEA_VALIDATION).replace(
            "directory: phase_2_market_research", "directory: phase_1_concept"
        ),
        dump_workflow(IDEA_VALIDATION) + "agents:\n  validator: not a callable\n",
        dump_workflow(IDEA_VALIDATION) + "agents:\n  nobody: m:f\n",
        dump_workflow(IDEA_VALIDATION) + "agents:\n  validator: m:f\n",
        dump_workflow(IDEA_VALIDATION).replace("review: true", "review: false"),
        dump_workflow(IDEA_VALIDATION).replace("run_style: single", "run_style: sideways", 1),
        dump_workflow(IDEA_VALIDATION).replace("\n", "\r\n"),
        dump_workflow(IDEA_VALIDATION).replace("name: idea_validation", "name: idea_validation # mine"),
    ],
)
def test_known_edits_give_the_same_workflow_or_error(text: str, tmp_path: Path) -> None:
    assert_same(text, tmp_path)


def test_what_haytham_writes_is_read_without_pyyaml() -> None:
    """The built-in workflow, the tests' small one and the benchmark's take the shortcut."""
    from small_workflow import SMALL

    bench = Workflow(
        "bench",
        tuple(
            PhaseDefinition(n, f"Phase {n}", f"phase_{n}_step", ("analyst", "critic", "writer"), "parallel")
            for n in range(1, 8)
        ),
        {"full": tuple(range(1, 8))},
        callables={"analyst": "benchmarks.agents:analyst"},
    )
    for workflow in (IDEA_VALIDATION, SMALL, bench):
        text = dump_workflow(workflow)
        assert canonical_data(text) == pyyaml_data(text)
        assert _workflow_from(pyyaml_data(text), Path("w.yaml"), None) == workflow


_ONE_MODE = dump_workflow(Workflow("w", (PhaseDefinition(1, "A", "phase_1_a", ("x",)),), {"m0": (1,)}))
_FIXED = 2 + _nodes(canonical_data(_ONE_MODE)) - 3
"""The YAML values of ``_ONE_MODE`` but its one mode (key, list, item: 3 values)."""
_AT_LIMIT = (MAX_YAML_NODES - _FIXED) // 3
"""The most modes a text like ``_ONE_MODE`` may have within ``MAX_YAML_NODES`` values."""


def _with_modes(count: int) -> str:
    return _ONE_MODE.replace("  m0: [1]\n", "".join(f"  m{i}: [1]\n" for i in range(count)))


def test_a_canonical_text_beyond_the_limits_is_left_to_pyyaml() -> None:
    """``parse_yaml`` refuses more than ``MAX_YAML_NODES`` values or ``MAX_YAML_CHARS``
    characters; ``canonical_data`` leaves such a text to it (the slow test below checks
    that PyYAML's reading counts values the same way)."""
    assert _FIXED + 3 * _AT_LIMIT <= MAX_YAML_NODES < _FIXED + 3 * (_AT_LIMIT + 1)
    assert canonical_data(_with_modes(_AT_LIMIT)) is not None
    assert canonical_data(_with_modes(_AT_LIMIT + 1)) is None
    assert canonical_data(dump_workflow(IDEA_VALIDATION) + "#" * MAX_YAML_CHARS) is None


@pytest.mark.slow
def test_the_limits_of_parse_yaml_hold_for_canonical_texts(tmp_path: Path) -> None:
    """At the limit and just beyond it, the same workflow or error as PyYAML's reading."""
    path = tmp_path / "workflow.yaml"
    for text in (_with_modes(_AT_LIMIT), _with_modes(_AT_LIMIT + 1)):
        path.write_text(text, "utf-8")
        assert outcome(load_workflow, path) == outcome(slow_load, path)
    assert outcome(load_workflow, path)[0] == "error"
