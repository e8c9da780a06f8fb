"""Workflows as data: the phases, their agents and review gates, and which modes run which.

The store knows phases only through a ``Workflow``; the seven phases of ``idea_validation``
live here and nowhere else. A workflow may also say which Python callable plays each agent
(``callables``, the ``agents:`` mapping of workflow.yaml, ``NAME: module:function``); they are
only names here, imported when a run needs them (``haytham.run.runner.resolve_agents``). An
entry of ``agents:`` may instead be a mapping of its callable (``call:``) and the agent's
own policy keys, over the workflow's ``defaults:``; ``budget:`` sits at the top and on any
phase (the policy types live in ``haytham.format.policy``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, field
from functools import cached_property
from pathlib import Path
from typing import Any

from haytham.errors import DocumentError, InvalidArgumentError, UnknownPhaseError
from haytham.format.layout import FORMAT_VERSION, PHASE_DIR_PREFIX
from haytham.format.patterns import lazy
from haytham.format.policy import AgentPolicy, Budget, PolicyKeys, resolve_policy
from haytham.format.reader import decode
from haytham.format.reviewer import parse_reviewer
from haytham.format.schema import describe, schema_errors
from haytham.format.yamlfile import (
    MAX_YAML_CHARS,
    MAX_YAML_NODES,
    VERSION_KEY,
    line_of,
    parse_yaml,
    read_yaml,
    take_version,
)
from haytham.frozen import frozen
from haytham.records import RunStyle


@frozen
class PhaseDefinition:
    """One phase of a workflow."""

    number: int
    name: str
    directory: str
    """The phase's directory inside the session, ``phase_{n}_{slug}``."""
    agents: tuple[str, ...] = ()
    run_style: RunStyle = "single"
    review: bool = False
    """True when a person must approve the phase before the next one runs."""
    reviewers: tuple[str, ...] = ()
    """Who reviews the phase (``reviewers:``), each entry a name, an address or ``Name <email>``
    matched like a CODEOWNERS line (``haytham.format.reviewer.is_assigned``); none: anyone.

    Not part of the fingerprint: who reviews a phase shapes none of its files, so assigning
    or reassigning reviewers never makes a session "changed"."""
    budget: Budget | None = None
    """What the phase may spend (``budget:`` on the phase); None: no limit of its own.
    Not part of the fingerprint, like every policy (``haytham.format.policy``)."""


@frozen
class Workflow:
    """A named, ordered set of phases and the execution modes that select among them."""

    name: str
    phases: tuple[PhaseDefinition, ...]
    modes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_retries: int = 3
    callables: Mapping[str, str] = field(default_factory=dict)
    """Agent name -> ``module:function`` of the callable that plays it (may name only some).

    Not part of the fingerprint: which code plays an agent is how a session is run, not
    what its files hold, so binding or rebinding agents never makes a session "changed"."""
    defaults: PolicyKeys = field(default_factory=PolicyKeys)
    """The policy keys of ``defaults:``: every agent's, unless it sets a key itself."""
    agent_policies: Mapping[str, PolicyKeys] = field(default_factory=dict)
    """Agent name -> the policy keys of its ``agents:`` mapping (only agents written so)."""
    budget: Budget | None = None
    """What the whole session may spend (``budget:`` at the top); None: no limit.

    The policies and budgets are not part of the fingerprint: they decide how an agent is
    run (how often it is tried, how long it may take, when a run stops for a person), not
    what the session's files are, so tuning them keeps existing sessions runnable."""
    run_by: str | None = None
    """The framework that runs the workflow's sessions in haytham's stead (``run_by:``, a
    name of ``haytham.format.run_by``: ``langgraph``, ``crewai``), written by an integration;
    None: haytham runs them. Not part of the fingerprint: sessions written before the mark
    read unchanged, and the mark says who resumes a session, not what its files are."""

    def policy_of(self, agent: str) -> AgentPolicy:
        """The policy ``agent`` runs under: its own keys over ``defaults:`` over the
        built-in policy (one try, no timeout, ``on_exhausted: fail``)."""
        return resolve_policy(self.defaults, self.agent_policies.get(agent, PolicyKeys()))

    @cached_property
    def _by_number(self) -> dict[int, PhaseDefinition]:
        """Each phase by its number (the first, were a number given twice), made once: a
        lookup is then constant time, so a walk over the phases stays linear in them."""
        found: dict[int, PhaseDefinition] = {}
        for phase in self.phases:
            found.setdefault(phase.number, phase)
        return found

    @cached_property
    def _selected(self) -> dict[str, tuple[tuple[PhaseDefinition, ...], frozenset[int]]]:
        """``phases_for`` of each mode asked for (and its numbers), made once per mode."""
        return {}

    def phase(self, number: object) -> PhaseDefinition:
        """The phase with this number, or UnknownPhaseError naming the valid numbers."""
        if isinstance(number, int) and not isinstance(number, bool):
            found = self._by_number.get(number)
            if found is not None:
                return found
        valid = ", ".join(str(p.number) for p in self.phases)
        raise UnknownPhaseError(
            f"phase {number!r} is not a phase of workflow {self.name!r} (expected one of {valid})",
            field="phase_num",
        )

    def phases_for(self, mode: str) -> tuple[PhaseDefinition, ...]:
        """The phases an execution mode runs, in order."""
        if mode not in self.modes:
            raise InvalidArgumentError(
                f"execution_mode {mode!r} is not a mode of workflow {self.name!r} "
                f"(expected one of {', '.join(self.modes)})",
                field="execution_mode",
            )
        return self._mode(mode)[0]

    def _mode(self, mode: str) -> tuple[tuple[PhaseDefinition, ...], frozenset[int]]:
        known = self._selected.get(mode)
        if known is None:
            phases = tuple(self.phase(n) for n in self.modes[mode])
            known = self._selected[mode] = (phases, frozenset(p.number for p in phases))
        return known

    def fingerprint(self) -> str:
        """A short hash of the definition: it changes whenever a phase, agent or mode does.

        ``callables``, each phase's ``reviewers``, the policies and the budgets are left out:
        they decide which code runs an agent, who reviews and how a run goes, not the shape
        of the session's files, so adding or changing them keeps existing sessions runnable.
        """
        data = {
            "name": self.name,
            "phases": [_shape(p) for p in self.phases],
            "modes": {k: list(v) for k, v in sorted(self.modes.items())},
            "max_retries": self.max_retries,
        }
        import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()
        return f"sha256:{digest[:16]}"

    def phase_in_mode(self, number: object, mode: str) -> PhaseDefinition:
        """The phase, refusing one that exists but that ``mode`` does not run."""
        phase = self.phase(number)
        selected = self.phases_for(mode)
        if phase.number not in self._mode(mode)[1]:
            numbers = ", ".join(str(p.number) for p in selected)
            raise UnknownPhaseError(
                f"phase {phase.number} ({phase.name}) is not run in {mode!r} mode (its phases are {numbers})",
                field="phase_num",
            )
        return phase


def _shape(phase: PhaseDefinition) -> dict[str, Any]:
    """What of a phase the fingerprint covers: every field but ``reviewers`` and ``budget``."""
    shape = asdict(phase)
    del shape["reviewers"], shape["budget"]
    return shape


IDEA_VALIDATION = Workflow(
    name="idea_validation",
    phases=(
        PhaseDefinition(1, "Concept Expansion", "phase_1_concept", ("concept_expansion",), review=True),
        PhaseDefinition(
            2,
            "Market Research",
            "phase_2_market_research",
            ("market_intelligence", "competitor_analysis"),
            run_style="parallel",
        ),
        PhaseDefinition(3, "Niche Selection", "phase_3_niche_selection", ("niche_selector",)),
        PhaseDefinition(4, "Product Strategy", "phase_4_product_strategy", ("product_strategist",)),
        PhaseDefinition(5, "Business Planning", "phase_5_business_planning", ("business_planner",)),
        PhaseDefinition(6, "Validation", "phase_6_validation", ("validator",)),
        PhaseDefinition(7, "Final Synthesis", "phase_7_synthesis", ("synthesizer",)),
    ),
    modes={"mvp": (1, 2, 3, 6, 7), "full": (1, 2, 3, 4, 5, 6, 7)},
)

BUILTIN_WORKFLOWS: Mapping[str, Workflow] = {IDEA_VALIDATION.name: IDEA_VALIDATION}


def describe_changes(old: Workflow, new: Workflow) -> list[str]:
    """What differs between two definitions, one short sentence per difference."""
    changes: list[str] = []
    if old.name != new.name:
        changes.append(f"the name changed from {old.name!r} to {new.name!r}")
    before = {p.number: p for p in old.phases}
    after = {p.number: p for p in new.phases}
    for number in sorted(before.keys() - after.keys()):
        changes.append(f"phase {number} ({before[number].name}) was removed")
    for number in sorted(after.keys() - before.keys()):
        changes.append(f"phase {number} ({after[number].name}) was added")
    for number in sorted(before.keys() & after.keys()):
        was, now = before[number], after[number]
        for attr in ("name", "directory", "agents", "run_style", "review"):
            if getattr(was, attr) != getattr(now, attr):
                changes.append(f"phase {number} {attr}: {getattr(was, attr)!r} -> {getattr(now, attr)!r}")
    for mode in sorted(set(old.modes) | set(new.modes)):
        if old.modes.get(mode) != new.modes.get(mode):
            changes.append(f"mode {mode!r}: {old.modes.get(mode)!r} -> {new.modes.get(mode)!r}")
    if old.max_retries != new.max_retries:
        changes.append(f"max_retries: {old.max_retries} -> {new.max_retries}")
    return changes


def dump_workflow(workflow: Workflow) -> str:
    """The YAML text of ``workflow``, in the form ``load_workflow`` reads."""
    data: dict[str, Any] = {
        VERSION_KEY: FORMAT_VERSION,
        "name": workflow.name,
        "max_retries": workflow.max_retries,
    }
    if workflow.run_by is not None:
        data["run_by"] = workflow.run_by
    data["modes"] = {k: list(v) for k, v in workflow.modes.items()}
    data["phases"] = []
    for phase in workflow.phases:
        item: dict[str, Any] = {
            "number": phase.number,
            "name": phase.name,
            "directory": phase.directory,
            "agents": list(phase.agents),
            "run_style": phase.run_style,
        }
        if phase.review:
            item["review"] = True
        if phase.reviewers:
            item["reviewers"] = list(phase.reviewers)
        if phase.budget is not None:
            item["budget"] = phase.budget.as_data()
        data["phases"].append(item)
    import yaml  # only when a workflow is written

    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None)
    agents = _agents_data(workflow)
    if agents:  # one agent a line, however long the mapping
        text += yaml.safe_dump(
            {"agents": agents}, sort_keys=False, allow_unicode=True, default_flow_style=False
        )
    policies: dict[str, Any] = {}
    if workflow.defaults:
        policies["defaults"] = workflow.defaults.as_data()
    if workflow.budget is not None:
        policies["budget"] = workflow.budget.as_data()
    if policies:
        text += yaml.safe_dump(policies, sort_keys=False, allow_unicode=True, default_flow_style=None)
    return text


def _agents_data(workflow: Workflow) -> dict[str, Any]:
    """The ``agents:`` mapping: ``NAME: module:function``, or a mapping when the agent has
    policy keys of its own (its ``call:`` first, when it has one)."""
    agents: dict[str, Any] = {}
    names = list(workflow.callables) + [n for n in workflow.agent_policies if n not in workflow.callables]
    for name in names:
        own = workflow.agent_policies.get(name, PolicyKeys())
        spec = workflow.callables.get(name)
        if not own:
            if spec is not None:
                agents[name] = spec
            continue
        agents[name] = ({"call": spec} if spec is not None else {}) | own.as_data()
    return agents


def load_workflow(path: str | Path, data: bytes | None = None) -> Workflow:
    """Read a workflow from a YAML file, checked against ``schemas/workflow.schema.json``.

    Errors are DocumentErrors naming the file, the line and the field. ``data`` is the
    file's bytes when the caller has read them already. A file in the exact form
    ``dump_workflow`` writes (a session's own workflow.yaml) is read without PyYAML (see
    ``canonical_data``); any other file, and any file with a mistake, is read by PyYAML.
    """
    path = Path(path)
    text = read_yaml(path) if data is None else decode(data, path)
    fast = canonical_data(text)
    if fast is not None:
        try:
            return _workflow_from(fast, path, None)
        except DocumentError:
            pass  # read again below, by PyYAML, for the line of the mistake
    node, loaded = parse_yaml(text, path)
    if not isinstance(loaded, dict) or node is None:
        raise DocumentError("a workflow file must be a YAML mapping", path=path, line=1)
    take_version(node, loaded, path)
    return _workflow_from(loaded, path, node)


def _workflow_from(data: dict[str, Any], path: Path, node: Any) -> Workflow:
    """The workflow of a loaded mapping (its ``format`` key taken), checked against the
    schema and for consistency; ``node`` is PyYAML's node tree for the lines of mistakes,
    or None when the text was read by ``canonical_data`` (mistakes then have no line)."""
    invalid = schema_errors("workflow", data)
    if invalid:
        keys = list(invalid[0].absolute_path)
        field_name = ".".join(str(k) for k in keys) or None
        raise DocumentError(describe(invalid[0]), path=path, line=_line(node, keys), field=field_name)
    phases = []
    for item in data["phases"]:
        number = item["number"]
        phases.append(
            PhaseDefinition(
                number=number,
                name=item["name"],
                directory=item.get("directory") or f"{PHASE_DIR_PREFIX}{number}_{_slug(item['name'])}",
                agents=tuple(item["agents"]),
                run_style=item.get("run_style", "parallel" if len(item["agents"]) > 1 else "single"),
                review=item.get("review", False),
                reviewers=tuple(item.get("reviewers", ())),
                budget=Budget.from_data(item.get("budget")),
            )
        )
    agents: dict[str, Any] = data.get("agents", {})
    workflow = Workflow(
        data["name"],
        tuple(phases),
        {k: tuple(v) for k, v in data["modes"].items()},
        data.get("max_retries", 3),
        {
            name: spec if isinstance(spec, str) else spec["call"]
            for name, spec in agents.items()
            if isinstance(spec, str) or "call" in spec
        },
        PolicyKeys.from_data(data.get("defaults", {})),
        {
            name: own
            for name, spec in agents.items()
            if isinstance(spec, dict) and (own := PolicyKeys.from_data(spec))
        },
        Budget.from_data(data.get("budget")),
        data.get("run_by"),
    )
    _check_consistent(workflow, path, node)
    return workflow


def _line(node: Any, keys: Sequence[Any]) -> int | None:
    """The line of ``keys`` in PyYAML's node tree; None without one."""
    return None if node is None else line_of(node, keys)


# ------------------------------------------------------------- the canonical form

_NAME = r"[A-Za-z][A-Za-z0-9._-]*"
"""A name written plain: it starts with a letter, so YAML reads it as a string unless it
is one of ``_YAML_WORDS`` (no number, date or other tag of YAML 1.1 starts with a letter)."""
_PHASE_NAME = r"[A-Za-z][A-Za-z0-9._()-]*(?: [A-Za-z0-9._()-]+)*"
"""A phase name written plain: words of those characters, one space apart."""
_CALLABLE = (
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
)
"""``module:function`` in ASCII, written plain (a colon not followed by a space)."""
_REVIEWER = (
    r"[A-Za-z][A-Za-z0-9._+-]*(?:@[A-Za-z0-9.-]+)?(?: [A-Za-z][A-Za-z0-9._+-]*)*"
    r"(?: <[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+>)?"
)
"""A ``reviewers:`` entry written plain in a flow list: a name of words, an address, or
``Name <address>``, without the characters YAML's flow style would quote."""
_COUNT = r"0|[1-9][0-9]*"
_YAML_WORDS = frozenset(
    form
    for word in ("yes", "no", "true", "false", "on", "off", "null", "y", "n")
    for form in (word, word.title(), word.upper())
)
"""Words YAML 1.1 reads as booleans or null (and the one-letter booleans of the spec, which
PyYAML reads as strings but other readers may not): never written plain."""
_WIDTH = 80
"""PyYAML's line width: no line of ``dump_workflow`` that is shorter is ever folded."""


def canonical_data(text: str) -> dict[str, Any] | None:
    """The mapping PyYAML would load from ``text`` (without its ``format`` key), when
    ``text`` is exactly what ``dump_workflow`` writes for it; None for any other text.

    A session's workflow.yaml is written by ``dump_workflow`` and read by every command
    that opens the session, so it is read here without importing PyYAML (about 15 ms of
    every new process). The text is split into keys and values, then written again by
    ``_canonical_text``, which writes only plain scalars YAML reads as themselves (see
    ``_NAME``): the mapping is returned only when that gives back the same text. So a
    hand-edited file, a comment, a quoted or folded value or anything unusual is None
    and PyYAML reads it (tests/test_workflow_canonical.py checks both against PyYAML).
    A text beyond the limits of ``parse_yaml`` (its length, its number of values) is None
    too, so that PyYAML's reading refuses it as before.
    """
    if len(text) > MAX_YAML_CHARS or not text.startswith("format: ") or not text.endswith("\n"):
        return None  # beyond the limits, for parse_yaml to refuse it
    data: dict[str, Any] = {}
    section: dict[str, Any] | list[Any] | None = None
    phase: dict[str, Any] | None = None
    for line in text[:-1].split("\n"):
        if line.startswith("  "):
            key, colon, value = line[2:].partition(": ")
            if not colon:
                return None
            if isinstance(section, dict):
                section[key] = _flow(value, int) if section is data.get("modes") else value
            elif phase is not None:
                phase[key] = _scalar(key, value)
            else:
                return None
        elif line.startswith("- number: "):
            if not isinstance(section, list):
                return None
            phase = {"number": _scalar("number", line[10:])}
            section.append(phase)
        elif line in ("modes:", "phases:", "agents:"):
            key = line[:-1]
            if key in data:
                return None
            section = data[key] = [] if key == "phases" else {}
            phase = None
        else:
            key, colon, value = line.partition(": ")
            if not colon or key in data or key not in ("format", "name", "max_retries", "run_by"):
                return None
            data[key] = _scalar(key, value)
    version = data.pop("format", None)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        return None
    try:
        written = _canonical_text(version, data)
    except (KeyError, TypeError, ValueError):
        return None
    if written != text or 2 + _nodes(data) > MAX_YAML_NODES:  # 2: the format key and value
        return None
    return data


def _nodes(value: Any) -> int:
    """How many YAML values ``value`` is (each key counts, as ``parse_yaml`` counts them)."""
    if isinstance(value, dict):
        return 1 + sum(1 + _nodes(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(item) for item in value)
    return 1


def _scalar(key: str, value: str) -> Any:
    """A value as ``canonical_data`` reads it: a count, a flow list of names, ``true``, or
    the text itself (checked when it is written again)."""
    if key in ("format", "max_retries", "number"):
        return int(value) if re.fullmatch(_COUNT, value) else None
    if key in ("agents", "reviewers"):
        return _flow(value, str)
    if key == "review":
        return True if value == "true" else None
    return value


def _flow(value: str, kind: type) -> list[Any] | None:
    """``[a, b]`` as a list of ``kind`` (counts or names); None when not that shape."""
    if not (value.startswith("[") and value.endswith("]")) or len(value) < 3:
        return None
    items = value[1:-1].split(", ")
    if kind is int:
        return [int(item) for item in items] if all(re.fullmatch(_COUNT, i) for i in items) else None
    return items


def _canonical_text(version: int, data: dict[str, Any]) -> str:
    """The text ``dump_workflow`` writes for ``data``, written by hand: ValueError when a
    value is outside the plain scalars YAML reads back as themselves, or a line would be
    longer than PyYAML folds at, KeyError or TypeError when ``data`` is not a workflow's
    shape. Only what this accepts is read without PyYAML."""
    if set(data) - {"name", "max_retries", "run_by", "modes", "phases", "agents"}:
        raise ValueError("unknown key")
    lines = [f"format: {_count(version)}", f"name: {_plain(data['name'], _NAME)}"]
    lines.append(f"max_retries: {_count(data['max_retries'])}")
    if "run_by" in data:
        lines.append(f"run_by: {_plain(data['run_by'], _NAME)}")
    lines.append("modes:")
    modes: dict[str, Any] = data["modes"]
    lines += [f"  {_plain(k, _NAME)}: [{', '.join(_count(n) for n in v)}]" for k, v in modes.items()]
    lines.append("phases:")
    for phase in data["phases"]:
        if set(phase) - {"number", "name", "directory", "agents", "run_style", "review", "reviewers"}:
            raise ValueError("unknown key")
        lines.append(f"- number: {_count(phase['number'])}")
        lines.append(f"  name: {_plain(phase['name'], _PHASE_NAME)}")
        lines.append(f"  directory: {_plain(phase['directory'], _NAME)}")
        lines.append(f"  agents: [{', '.join(_plain(a, _NAME) for a in phase['agents'])}]")
        lines.append(f"  run_style: {_plain(phase['run_style'], _NAME)}")
        if "review" in phase:
            if phase["review"] is not True:
                raise ValueError("review: false is never written")
            lines.append("  review: true")
        if "reviewers" in phase:
            if not phase["reviewers"]:
                raise ValueError("an empty list is written in flow style")
            lines.append(f"  reviewers: [{', '.join(_plain(r, _REVIEWER) for r in phase['reviewers'])}]")
    if "agents" in data:
        agents: dict[str, Any] = data["agents"]
        lines.append("agents:")
        lines += [f"  {_plain(k, _NAME)}: {_plain(v, _CALLABLE)}" for k, v in agents.items()]
    if not modes or not data["phases"] or ("agents" in data and not data["agents"]):
        raise ValueError("an empty mapping or list is written in flow style")
    if any(len(line) > _WIDTH for line in lines):
        raise ValueError("a long line may be folded")
    return "\n".join(lines) + "\n"


def _plain(value: object, pattern: str) -> str:
    if not isinstance(value, str) or value in _YAML_WORDS or not re.fullmatch(pattern, value):
        raise ValueError(f"{value!r} is not written plain here")
    return value


def _count(value: object) -> str:
    if type(value) is not int or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return str(value)


CALLABLE_SYNTAX = lazy(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
"""``module:function``: a dotted module path, a colon, and a (dotted) attribute of it."""


def split_callable(spec: str) -> tuple[str, str]:
    """``module:function`` as ``(module, function)``; InvalidArgumentError when not that form."""
    if not CALLABLE_SYNTAX.fullmatch(spec):
        raise InvalidArgumentError(
            f"{spec!r} is not module:function (e.g. my_agents:concept_expansion)", field="agents"
        )
    module, _, function = spec.partition(":")
    return module, function


def _check_consistent(workflow: Workflow, path: Path, node: Any) -> None:
    numbers = [p.number for p in workflow.phases]
    for index, phase in enumerate(workflow.phases):
        if numbers.count(phase.number) > 1:
            raise DocumentError(
                f"phase number {phase.number} is used twice",
                path=path,
                line=_line(node, ["phases", index, "number"]),
                field="number",
            )
    directories = [p.directory for p in workflow.phases]
    for index, phase in enumerate(workflow.phases):
        if directories.count(phase.directory) > 1:
            raise DocumentError(
                f"directory {phase.directory!r} is used twice",
                path=path,
                line=_line(node, ["phases", index]),
                field="directory",
            )
    for mode, selected in workflow.modes.items():
        for index, number in enumerate(selected):
            if number not in numbers:
                raise DocumentError(
                    f"mode {mode!r} names phase {number}, which is not defined (phases are "
                    f"{', '.join(map(str, numbers))})",
                    path=path,
                    line=_line(node, ["modes", mode, index]),
                    field=f"modes.{mode}",
                )
    for index, phase in enumerate(workflow.phases):
        for position, entry in enumerate(phase.reviewers):
            try:
                parse_reviewer(entry)
            except InvalidArgumentError as error:
                raise DocumentError(
                    str(error),
                    path=path,
                    line=_line(node, ["phases", index, "reviewers", position]),
                    field=f"phases.{index}.reviewers",
                ) from None
    names = [a for p in workflow.phases for a in p.agents]
    for name in dict.fromkeys([*workflow.callables, *workflow.agent_policies]):
        if name not in names:
            raise DocumentError(
                f"agents names {name!r}, which no phase runs (agents are {', '.join(dict.fromkeys(names))})",
                path=path,
                line=_line(node, ["agents", name]),
                field=f"agents.{name}",
            )
        spec = workflow.callables.get(name)
        if spec is not None and not CALLABLE_SYNTAX.fullmatch(spec):
            keys = ["agents", name] if name not in workflow.agent_policies else ["agents", name, "call"]
            raise DocumentError(
                f"{spec!r} is not module:function (e.g. my_agents:{name})",
                path=path,
                line=_line(node, keys),
                field=".".join(keys),
            )
    places = [(["defaults"], workflow.defaults)]
    places += [(["agents", name], own) for name, own in workflow.agent_policies.items()]
    for where, written in places:
        _check_policy(written, where, path, node)


def _check_policy(keys: PolicyKeys, where: list[str], path: Path, node: Any) -> None:
    """What the schema cannot say about one place's policy keys, located like its errors."""
    if keys.retry_on is not None and not CALLABLE_SYNTAX.fullmatch(keys.retry_on):
        raise DocumentError(
            f"{keys.retry_on!r} is not module:function (e.g. my_agents:is_transient)",
            path=path,
            line=_line(node, [*where, "retry_on"]),
            field=".".join([*where, "retry_on"]),
        )
    first, cap = keys.retry.get("initial_interval"), keys.retry.get("max_interval")
    if first is not None and cap is not None and first > cap:
        raise DocumentError(
            f"initial_interval {first} is longer than max_interval {cap}",
            path=path,
            line=_line(node, [*where, "retry", "initial_interval"]),
            field=".".join([*where, "retry", "initial_interval"]),
        )


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "phase"
