"""``checkpoint.md``: the state of one phase (formats.md, "phase_{n}_{slug}/checkpoint.md")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FEEDBACK_FILE, FORMAT_VERSION
from haytham.format.markdown import plain_characters
from haytham.format.patterns import lazy
from haytham.format.reader import Reader
from haytham.format.sections import VERSION_FIELD, FieldSpec, SectionSpec, labels_of, write_fields
from haytham.records import PHASE_STATUSES, RUN_STYLES, AgentRun, PhaseCheckpoint

TITLE = "Phase Checkpoint: "
METADATA = SectionSpec(
    "Metadata",
    (
        FieldSpec("phase_number", "Phase Number"),
        FieldSpec("phase_name", "Phase Name"),
        FieldSpec("status", "Status"),
        FieldSpec("started", "Started"),
        FieldSpec("completed", "Completed"),
        FieldSpec("duration", "Duration"),
        FieldSpec("retry_count", "Retry Count"),
        FieldSpec("execution_mode", "Execution Mode"),
        VERSION_FIELD,
    ),
)
AGENTS = SectionSpec("Agents in Phase", attr="agents")
"""One ``- {agent_name}: {status}`` line per agent."""
INPUTS = SectionSpec(
    "Inputs",
    (
        FieldSpec("previous_phase", "Previous Phase"),
        FieldSpec("required_context", "Required Context"),
        FieldSpec("user_parameters", "User Parameters"),
    ),
    required=False,
)
BUILT_FROM = SectionSpec("Built From", required=False, attr="built_from")
"""One ``- Phase {n}: {outputs digest}`` line per earlier phase whose outputs the agents were
given; written only when there is one."""
BUILT_FROM_LABEL = "Phase "
OUTPUTS = SectionSpec(
    "Outputs",
    (
        FieldSpec("agent_outputs", "Agent Outputs"),
        FieldSpec("user_feedback_file", "User Feedback"),
        FieldSpec("outputs_digest", "Outputs Digest"),
    ),
    required=False,
)
"""Outputs Digest is written only when the phase completed."""
METRICS = SectionSpec(
    "Metrics",
    (
        FieldSpec("total_tokens", "Total Tokens"),
        FieldSpec("input_tokens", "Input Tokens"),
        FieldSpec("output_tokens", "Output Tokens"),
        FieldSpec("cost", "Cost"),
        FieldSpec("agent_execution_times", "Agent Execution Times"),
        FieldSpec("agent_tokens", "Agent Tokens"),
        FieldSpec("agent_costs", "Agent Costs"),
    ),
)
NEXT_PHASE = SectionSpec(
    "Next Phase",
    (
        FieldSpec("next_phase", "Phase Number"),
        FieldSpec("next_phase_name", "Phase Name"),
        FieldSpec("ready", "Ready to Execute"),
        FieldSpec("blocking", "Blocking Issues"),
    ),
    required=False,
)
ERRORS = SectionSpec("Errors", required=False, attr="errors")
"""Written only when there are errors, one list item each."""
HELD = SectionSpec("Held", required=False, attr="held")
"""Written only while the runner holds the phase for a person's decision, one reason each
(a budget passed, an agent with side effects that may have run)."""
SECTIONS = (METADATA, AGENTS, INPUTS, BUILT_FROM, OUTPUTS, METRICS, NEXT_PHASE, ERRORS, HELD)


_STATUS = "|".join(PHASE_STATUSES)
_TEXT = v.PLAIN_TEXT
_FILE = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def _pairs_of(value: str) -> str:
    """A pattern for ``write_pairs`` of agents' values spelt by ``value`` (or ``-``)."""
    pair = rf"{v.NAME}: (?:-|{value})"
    return rf"(?:none|{pair}(?:, {pair})*)"


_CANONICAL = lazy(
    rf"# {TITLE}(?P<phase_name>{_TEXT})\n"
    r"\n"
    r"## Metadata\n"
    rf"- Phase Number: (?P<phase_number>{v.WHOLE_NUMBER})\n"
    r"- Phase Name: (?P=phase_name)\n"
    rf"- Status: (?P<status>{_STATUS})\n"
    rf"- Started: (?:-|(?P<started>{v.TIMESTAMP}))\n"
    rf"- Completed: (?:-|(?P<completed>{v.TIMESTAMP}))\n"
    rf"- Duration: (?:-|(?P<duration>{v.SECONDS}))\n"
    rf"- Retry Count: (?P<retry_count>{v.COUNT})\n"
    rf"- Execution Mode: (?P<execution_mode>{'|'.join(RUN_STYLES)})\n"
    rf"- Format: {FORMAT_VERSION}\n"
    r"\n"
    r"## Agents in Phase\n"
    rf"(?P<agents>(?:- {v.NAME}: (?:{_STATUS})\n)*)"
    r"\n"
    r"## Inputs\n"
    rf"- Previous Phase: (?:None|(?P<previous_phase>{_TEXT}))\n"
    rf"- Required Context: (?P<required_context>\[\]|{_TEXT})\n"
    rf"- User Parameters: (?P<user_parameters>\{{\}}|{_TEXT})\n"
    r"\n"
    rf"(?:## Built From\n(?P<built_from>(?:- Phase {v.WHOLE_NUMBER}: {_TEXT}\n)+)\n)?"
    r"## Outputs\n"
    rf"- Agent Outputs: \[(?P<agent_outputs>{_FILE}(?:, {_FILE})*)?\]\n"
    rf"- User Feedback: (?P<user_feedback_file>{_TEXT})\n"
    r"(?:- Outputs Digest: (?P<outputs_digest>[0-9a-f]{16})\n)?"
    r"\n"
    r"## Metrics\n"
    rf"- Total Tokens: (?:-|(?P<total_tokens>{v.COUNT}))\n"
    rf"- Input Tokens: (?:-|(?P<input_tokens>{v.COUNT}))\n"
    rf"- Output Tokens: (?:-|(?P<output_tokens>{v.COUNT}))\n"
    rf"- Cost: (?:-|(?P<cost>{v.COST}))\n"
    rf"- Agent Execution Times: (?P<times>{_pairs_of(v.SECONDS)})\n"
    rf"- Agent Tokens: (?P<tokens>{_pairs_of(v.COUNT)})\n"
    rf"- Agent Costs: (?P<costs>{_pairs_of(v.COST)})\n"
    r"\n"
    r"## Next Phase\n"
    rf"- Phase Number: (?:-|(?P<next_phase>{v.WHOLE_NUMBER}))\n"
    rf"- Phase Name: (?:None|(?P<next_phase_name>{_TEXT}))\n"
    r"- Ready to Execute: (?:true|false)\n"
    rf"- Blocking Issues: (?:none|{_TEXT})\n"
    rf"(?:\n## Errors\n(?P<errors>(?:- {_TEXT}\n)+))?"
    rf"(?:\n## Held\n(?P<held>(?:- {_TEXT}\n)+))?"
)
"""A checkpoint exactly as ``render`` writes it, with values in their plainest spelling:
what ``CheckpointFormat._canonical`` reads. Anything else goes to the general reader."""
_LINE_PAIR = lazy(r"- (.*?): (.*)\n")


def _canonical_pairs(raw: str, convert: Callable[[str], Any]) -> dict[str, Any]:
    """The agents' values of a ``write_pairs`` list the pattern took, as ``_pairs`` reads them:
    ``convert`` is given only a value in the pattern's spelling, ``-`` is None."""
    if raw == "none":
        return {}
    # The pattern took ``NAME: value`` pairs joined by ", ", and neither a name (``v.NAME``)
    # nor a value in the pattern's spelling holds ", " or ": ": a split takes them apart.
    pairs = (item.partition(": ") for item in raw.split(", "))
    return {name: None if value == "-" else convert(value) for name, _, value in pairs}


class CheckpointFormat(DocumentFormat[PhaseCheckpoint]):
    kind = "checkpoint"
    labels: ClassVar[Mapping[str, str]] = labels_of(
        SECTIONS, {"output_file": "agent_outputs", "tokens": "agent_tokens", "agent_name": "agents"}
    )
    version_section: ClassVar[SectionSpec] = METADATA
    sections: ClassVar[tuple[SectionSpec, ...]] = SECTIONS

    def _collect(self, reader: Reader) -> dict[str, Any]:
        title_name = reader.expect_title(TITLE)
        meta_section = reader.section(METADATA)
        meta = reader.fields(meta_section)
        take = reader.take
        data: dict[str, Any] = {
            "phase_number": take(meta, "phase_number", v.read_int, section=meta_section),
            "phase_name": take(meta, "phase_name", v.read_text, default=title_name, required=False),
            "status": take(meta, "status", v.read_text, section=meta_section),
            "started": take(meta, "started", v.read_text, required=False),
            "completed": take(meta, "completed", v.read_text, required=False),
            "duration": take(meta, "duration", v.read_seconds, required=False),
            "retry_count": take(meta, "retry_count", v.read_int, default=0, required=False),
            "execution_mode": take(meta, "execution_mode", v.read_text, default="single", required=False),
        }
        if data["phase_name"] is None:
            data["phase_name"] = title_name

        agents_section = reader.section(AGENTS)
        statuses = reader.fields(agents_section, exact=True)
        inputs = reader.fields(reader.section(INPUTS))
        data["previous_phase"] = take(inputs, "previous_phase", _read_optional_name, required=False)
        data["required_context"] = take(
            inputs, "required_context", _read_kept("[]"), default="[]", required=False
        )
        data["user_parameters"] = take(
            inputs, "user_parameters", _read_kept("{}"), default="{}", required=False
        )

        data["built_from"] = _read_built_from(reader)
        outputs = reader.fields(reader.section(OUTPUTS))
        data["outputs_digest"] = take(outputs, "outputs_digest", v.read_text, required=False)
        files = take(outputs, "agent_outputs", v.read_list, default=[], required=False)
        data["user_feedback_file"] = take(
            outputs,
            "user_feedback_file",
            _read_kept(FEEDBACK_FILE),
            default=FEEDBACK_FILE,
            required=False,
        )

        metrics_section = reader.section(METRICS)
        metrics = reader.fields(metrics_section)
        for attr in ("total_tokens", "input_tokens", "output_tokens"):
            data[attr] = take(metrics, attr, v.read_int, required=False)
        data["cost"] = take(metrics, "cost", v.read_cost, required=False)
        times = _pairs(reader, metrics, "agent_execution_times", v.read_seconds)
        tokens = _pairs(reader, metrics, "agent_tokens", v.read_int)
        costs = _pairs(reader, metrics, "agent_costs", v.read_cost)

        if not isinstance(files, list):
            files = []
        agents = []
        for index, field in enumerate(statuses.values()):
            name = field.label
            reader.lines[("agents", index)] = field.line
            reader.labels_at[("agents", index, "status")] = name
            output_file = files[index] if index < len(files) else f"{name}.md"
            agents.append(
                {
                    "agent_name": name,
                    "status": v.read_text(field.value),
                    "output_file": output_file,
                    "duration": times.get(name),
                    "tokens": tokens.get(name),
                    "cost": costs.get(name),
                }
            )
        data["agents"] = agents

        following = reader.fields(reader.section(NEXT_PHASE))
        data["next_phase"] = take(following, "next_phase", v.read_int, required=False)
        data["next_phase_name"] = take(following, "next_phase_name", _read_optional_name, required=False)

        data["errors"] = _items(reader, ERRORS)
        data["held"] = _items(reader, HELD)
        return data

    def _build(self, data: dict[str, Any]) -> PhaseCheckpoint:
        agents = tuple(AgentRun(**agent) for agent in data.pop("agents"))
        built_from = tuple((int(n), str(d)) for n, d in data.pop("built_from"))
        errors, held = tuple(data.pop("errors")), tuple(data.pop("held"))
        return PhaseCheckpoint(agents=agents, errors=errors, held=held, built_from=built_from, **data)

    def _canonical(self, text: str) -> PhaseCheckpoint | None:
        """The checkpoint of a text in exactly ``render``'s shape (``_CANONICAL``), else None;
        also None when an agent or an earlier phase is named twice (the reader's error)."""
        found = _CANONICAL.fullmatch(text)
        if found is None or not plain_characters(text):
            return None
        statuses = _LINE_PAIR.findall(found["agents"])
        built = _LINE_PAIR.findall(found["built_from"] or "")
        if len({name for name, _ in statuses}) < len(statuses) or len({n for n, _ in built}) < len(built):
            return None
        files = found["agent_outputs"]
        outputs = files.split(", ") if files is not None else []
        times = _canonical_pairs(found["times"], lambda value: float(value[:-1]))  # 1.5s
        tokens = _canonical_pairs(found["tokens"], int)
        costs = _canonical_pairs(found["costs"], lambda value: float(value[1:]))  # $0.0100
        agents = tuple(
            AgentRun(
                name,
                status,
                outputs[index] if index < len(outputs) else f"{name}.md",
                times.get(name),
                tokens.get(name),
                costs.get(name),
            )
            for index, (name, status) in enumerate(statuses)
        )
        duration, cost = found["duration"], found["cost"]
        total, given, made = found["total_tokens"], found["input_tokens"], found["output_tokens"]
        following = found["next_phase"]
        errors, held = found["errors"], found["held"]
        return PhaseCheckpoint(
            phase_number=int(found["phase_number"]),
            phase_name=found["phase_name"],
            status=found["status"],  # type: ignore[arg-type]  # one of PHASE_STATUSES
            started=found["started"],
            completed=found["completed"],
            duration=None if duration is None else float(duration[:-1]),
            retry_count=int(found["retry_count"]),
            execution_mode=found["execution_mode"],  # type: ignore[arg-type]  # one of RUN_STYLES
            agents=agents,
            previous_phase=found["previous_phase"],
            next_phase=None if following is None else int(following),
            next_phase_name=found["next_phase_name"],
            total_tokens=None if total is None else int(total),
            input_tokens=None if given is None else int(given),
            output_tokens=None if made is None else int(made),
            cost=None if cost is None else float(cost[1:]),
            errors=() if errors is None else tuple(line[2:] for line in errors[:-1].split("\n")),
            held=() if held is None else tuple(line[2:] for line in held[:-1].split("\n")),
            required_context=found["required_context"],
            user_parameters=found["user_parameters"],
            user_feedback_file=found["user_feedback_file"],
            outputs_digest=found["outputs_digest"],
            built_from=tuple((int(number[len(BUILT_FROM_LABEL) :]), digest) for number, digest in built),
        )

    def render(self, record: PhaseCheckpoint) -> str:
        agents = record.agents
        metadata = {
            "phase_number": str(record.phase_number),
            "phase_name": v.write_text(record.phase_name),
            "status": record.status,
            "started": v.write_text(record.started),
            "completed": v.write_text(record.completed),
            "duration": v.write_seconds(record.duration),
            "retry_count": str(record.retry_count),
            "execution_mode": record.execution_mode,
        }
        inputs = {
            "previous_phase": _write_optional_name(record.previous_phase),
            "required_context": v.write_text(record.required_context),
            "user_parameters": v.write_text(record.user_parameters),
        }
        outputs = {
            "agent_outputs": v.write_list([a.output_file for a in agents]),
            "user_feedback_file": v.write_text(record.user_feedback_file),
            "outputs_digest": record.outputs_digest,
        }
        metrics = {
            "total_tokens": v.write_int(record.total_tokens),
            "input_tokens": v.write_int(record.input_tokens),
            "output_tokens": v.write_int(record.output_tokens),
            "cost": v.write_cost(record.cost),
            "agent_execution_times": v.write_pairs(
                [(a.agent_name, v.write_seconds(a.duration)) for a in agents]
            ),
            "agent_tokens": v.write_pairs([(a.agent_name, v.write_int(a.tokens)) for a in agents]),
            "agent_costs": v.write_pairs([(a.agent_name, v.write_cost(a.cost)) for a in agents]),
        }
        following = {
            "next_phase": v.write_int(record.next_phase),
            "next_phase_name": _write_optional_name(record.next_phase_name),
            "ready": v.write_bool(record.status == "completed"),
            "blocking": _blocking(record.errors),
        }
        lines = [
            f"# {TITLE}{v.write_title(record.phase_name)}",
            "",
            *write_fields(METADATA, metadata),
            "",
            AGENTS.heading,
            *(f"- {a.agent_name}: {a.status}" for a in agents),
            "",
            *write_fields(INPUTS, inputs),
            "",
        ]
        if record.built_from:
            lines += [
                BUILT_FROM.heading,
                *(f"- {BUILT_FROM_LABEL}{number}: {digest}" for number, digest in record.built_from),
                "",
            ]
        lines += [
            *write_fields(OUTPUTS, outputs),
            "",
            *write_fields(METRICS, metrics),
            "",
            *write_fields(NEXT_PHASE, following),
        ]
        if record.errors:
            lines += ["", ERRORS.heading, *(f"- {v.write_text(e)}" for e in record.errors)]
        if record.held:
            lines += ["", HELD.heading, *(f"- {v.write_text(reason)}" for reason in record.held)]
        return "\n".join(lines) + "\n"


def _read_built_from(reader: Reader) -> list[list[Any]]:
    """``- Phase {n}: {digest}`` lines, in the order written; a line that is not one is an error."""
    section = reader.section(BUILT_FROM)
    if section is None:
        return []
    reader.lines[("built_from",)] = section.line
    found: list[list[Any]] = []
    for field in reader.fields(section, exact=True).values():
        number = field.label[len(BUILT_FROM_LABEL) :].strip()
        digest = v.read_text(field.value) or ""
        if not field.label.startswith(BUILT_FROM_LABEL) or not number.isdigit():
            reader.error(field.line, BUILT_FROM.title, f"{field.label!r} is not 'Phase {{number}}'")
            continue
        reader.lines[("built_from", len(found))] = field.line
        found.append([int(number), digest])
    return found


def _items(reader: Reader, section_spec: SectionSpec) -> list[str]:
    """The list items of an optional section (``## Errors``, ``## Held``), as text."""
    section = reader.section(section_spec)
    items: list[str] = []
    if section is not None:
        reader.lines[(section_spec.attr or section_spec.title,)] = section.line
        for line in section.body.split("\n"):
            item = line.strip()
            if item[:2] in ("- ", "* ", "+ "):
                items.append(v.read_text(item[2:]) or "")
    return items


def _read_optional_name(raw: str) -> str | None:
    return None if raw.strip() in ("None", "-", "") else v.read_text(raw)


def _read_kept(default: str) -> Callable[[str], str]:
    """A reader for a value kept as written: free text, ``-`` meaning ``default``."""

    def read(raw: str) -> str:
        text = v.read_text(raw)
        return default if text is None else text

    return read


def _write_optional_name(name: str | None) -> str:
    if name is None:
        return "None"
    return v.write_text(name) if name not in ("None", "") else f'"{name}"'


def _blocking(errors: tuple[str, ...]) -> str:
    if not errors:
        return "none"
    return v.write_text(", ".join(errors))


def _pairs(reader: Reader, fields: Any, attr: str, convert: Any) -> dict[str, Any]:
    raw = reader.take(fields, attr, v.read_pairs, default=[], required=False)
    if isinstance(raw, str):
        label = reader.labels[attr]
        reader.error(reader.lines.get((attr,)), label, f"{raw!r} is not a list of 'agent: value'")
        return {}
    return {name: convert(value) for name, value in raw}


CHECKPOINT = CheckpointFormat()
