"""``checkpoint.md``: the state of one phase (formats.md, "phase_{n}_{slug}/checkpoint.md")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.reader import Reader
from haytham.records import AgentRun, PhaseCheckpoint

TITLE = "Phase Checkpoint: "


class CheckpointFormat(DocumentFormat[PhaseCheckpoint]):
    kind = "checkpoint"
    labels: ClassVar[Mapping[str, str]] = {
        "phase_number": "Phase Number",
        "phase_name": "Phase Name",
        "status": "Status",
        "started": "Started",
        "completed": "Completed",
        "duration": "Duration",
        "retry_count": "Retry Count",
        "execution_mode": "Execution Mode",
        "agents": "Agents in Phase",
        "previous_phase": "Previous Phase",
        "required_context": "Required Context",
        "user_parameters": "User Parameters",
        "agent_outputs": "Agent Outputs",
        "output_file": "Agent Outputs",
        "user_feedback_file": "User Feedback",
        "total_tokens": "Total Tokens",
        "input_tokens": "Input Tokens",
        "output_tokens": "Output Tokens",
        "cost": "Cost",
        "agent_execution_times": "Agent Execution Times",
        "agent_tokens": "Agent Tokens",
        "agent_costs": "Agent Costs",
        "tokens": "Agent Tokens",
        "next_phase": "Phase Number",
        "next_phase_name": "Phase Name",
        "ready": "Ready to Execute",
        "blocking": "Blocking Issues",
        "errors": "Errors",
        "agent_name": "Agents in Phase",
    }

    def _collect(self, reader: Reader) -> dict[str, Any]:
        title_name = reader.expect_title(TITLE)
        meta_section = reader.section("Metadata")
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

        agents_section = reader.section("Agents in Phase")
        statuses = reader.fields(agents_section, exact=True)
        inputs = reader.fields(reader.section("Inputs", required=False))
        data["previous_phase"] = take(inputs, "previous_phase", _read_optional_name, required=False)
        data["required_context"] = take(
            inputs, "required_context", _read_kept("[]"), default="[]", required=False
        )
        data["user_parameters"] = take(
            inputs, "user_parameters", _read_kept("{}"), default="{}", required=False
        )

        outputs = reader.fields(reader.section("Outputs", required=False))
        files = take(outputs, "agent_outputs", v.read_list, default=[], required=False)
        data["user_feedback_file"] = take(
            outputs,
            "user_feedback_file",
            _read_kept(FEEDBACK_FILE),
            default=FEEDBACK_FILE,
            required=False,
        )

        metrics_section = reader.section("Metrics")
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

        following = reader.fields(reader.section("Next Phase", required=False))
        data["next_phase"] = take(following, "next_phase", v.read_int, required=False)
        data["next_phase_name"] = take(following, "next_phase_name", _read_optional_name, required=False)

        errors_section = reader.section("Errors", required=False)
        errors: list[str] = []
        if errors_section is not None:
            reader.lines[("errors",)] = errors_section.line
            for line in errors_section.body.split("\n"):
                item = line.strip()
                if item[:2] in ("- ", "* ", "+ "):
                    errors.append(v.read_text(item[2:]) or "")
        data["errors"] = errors
        return data

    def _build(self, data: dict[str, Any]) -> PhaseCheckpoint:
        agents = tuple(AgentRun(**agent) for agent in data.pop("agents"))
        return PhaseCheckpoint(agents=agents, errors=tuple(data.pop("errors")), **data)

    def render(self, record: PhaseCheckpoint) -> str:
        agents = record.agents
        lines = [
            f"# {TITLE}{v.write_title(record.phase_name)}",
            "",
            "## Metadata",
            f"- Phase Number: {record.phase_number}",
            f"- Phase Name: {v.write_text(record.phase_name)}",
            f"- Status: {record.status}",
            f"- Started: {v.write_text(record.started)}",
            f"- Completed: {v.write_text(record.completed)}",
            f"- Duration: {v.write_seconds(record.duration)}",
            f"- Retry Count: {record.retry_count}",
            f"- Execution Mode: {record.execution_mode}",
            "",
            "## Agents in Phase",
            *(f"- {a.agent_name}: {a.status}" for a in agents),
            "",
            "## Inputs",
            f"- Previous Phase: {_write_optional_name(record.previous_phase)}",
            f"- Required Context: {v.write_text(record.required_context)}",
            f"- User Parameters: {v.write_text(record.user_parameters)}",
            "",
            "## Outputs",
            f"- Agent Outputs: {v.write_list([a.output_file for a in agents])}",
            f"- User Feedback: {v.write_text(record.user_feedback_file)}",
            "",
            "## Metrics",
            f"- Total Tokens: {v.write_int(record.total_tokens)}",
            f"- Input Tokens: {v.write_int(record.input_tokens)}",
            f"- Output Tokens: {v.write_int(record.output_tokens)}",
            f"- Cost: {v.write_cost(record.cost)}",
            "- Agent Execution Times: "
            + v.write_pairs([(a.agent_name, v.write_seconds(a.duration)) for a in agents]),
            "- Agent Tokens: " + v.write_pairs([(a.agent_name, v.write_int(a.tokens)) for a in agents]),
            "- Agent Costs: " + v.write_pairs([(a.agent_name, v.write_cost(a.cost)) for a in agents]),
            "",
            "## Next Phase",
            f"- Phase Number: {v.write_int(record.next_phase)}",
            f"- Phase Name: {_write_optional_name(record.next_phase_name)}",
            f"- Ready to Execute: {v.write_bool(record.status == 'completed')}",
            f"- Blocking Issues: {_blocking(record.errors)}",
        ]
        if record.errors:
            lines += ["", "## Errors", *(f"- {v.write_text(e)}" for e in record.errors)]
        return "\n".join(lines) + "\n"


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
