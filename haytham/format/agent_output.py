"""``{agent_name}.md``: one agent's output, kept verbatim from ``## Output`` to the end.

The header is parsed with the section parser; the output is found by a fence-aware scan for
the first top-level ``## Output`` line and sliced from the source, so a megabyte of output
never goes through mistune. Two optional Metadata fields make the slice exact: ``Final
Newlines`` (how many line breaks ended the text) and ``Line Endings: crlf``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from haytham.errors import DocumentError
from haytham.format import values as v
from haytham.format.document import DocumentFormat
from haytham.format.layout import FORMAT_VERSION
from haytham.format.markdown import first_fence, iter_fences, normalise_label, plain_characters
from haytham.format.reader import Reader
from haytham.format.sections import VERSION_FIELD, FieldSpec, SectionSpec, labels_of, write_fields
from haytham.records import PHASE_STATUSES, AgentOutput

TITLE = "Agent Output: "
MAX_FINAL_NEWLINES = 1_000_000
"""The most line breaks ``Final Newlines`` may record. Reading puts that many line breaks
back, so the number is checked before anything is allocated (a hand-edited
``30000000000`` would otherwise ask for 30 GB); writing refuses an output past it."""


METADATA = SectionSpec(
    "Metadata",
    (
        FieldSpec("agent_name", "Agent"),
        FieldSpec("phase_number", "Phase"),
        FieldSpec("executed", "Executed"),
        FieldSpec("duration", "Duration"),
        FieldSpec("status", "Status"),
        FieldSpec("final_newlines", "Final Newlines"),
        FieldSpec("line_endings", "Line Endings"),
        VERSION_FIELD,
    ),
)
"""``- Phase: {number} - {name}`` holds both phase_number and phase_name; Final Newlines and
Line Endings are written only when needed."""
EXECUTION_DETAILS = SectionSpec(
    "Execution Details",
    (
        FieldSpec("model", "Model"),
        FieldSpec("input_tokens", "Input Tokens"),
        FieldSpec("output_tokens", "Output Tokens"),
        FieldSpec("tools_used", "Tools Used"),
        FieldSpec("cost", "Cost"),
    ),
    required=False,
)
ERROR_DETAILS = SectionSpec(
    "Error Details",
    (
        FieldSpec("error_type", "Error Type"),
        FieldSpec("error_message", "Error Message"),
        FieldSpec("stack_trace", "Stack Trace"),
    ),
    required=False,
)
"""Written for a failed agent or any error value, before ``## Output``."""
OUTPUT = SectionSpec("Output", attr="content")
"""The output verbatim, to the end of the file: found by ``split_output``, not the parser."""
SECTIONS = (METADATA, EXECUTION_DETAILS, ERROR_DETAILS, OUTPUT)


def _heading_line(section: SectionSpec) -> str:
    """A pattern for the section's ``##`` heading line as people may write it."""
    return r" {0,3}##[ \t]+" + re.escape(section.title) + r"[ \t]*#*[ \t]*"


_OUTPUT_LINE = re.compile("^" + _heading_line(OUTPUT) + r"\r?$", re.IGNORECASE | re.M)


def split_output(text: str) -> tuple[int, int, int] | None:
    """``(header_end, body_start, output_line)`` at the first top-level ``## Output``.

    The first ``## Output`` line that no fenced block holds. Offsets, not slices: a 10 MB
    output is copied once, when its content is taken, and is scanned only for its fences.
    """
    position = 0
    while True:
        found = _OUTPUT_LINE.search(text, position)
        if found is None:
            return None
        start = found.start()
        holder = next((f for f in iter_fences(text, position, start) if f.end > start), None)
        if holder is None:
            end = text.find("\n", start)
            return start, len(text) if end < 0 else end + 1, text.count("\n", 0, start) + 2
        if not holder.closed:
            return None
        position = holder.end


def encode_content(content: str) -> tuple[str, int, bool]:
    """The body to write after ``## Output``, its final newline count and CRLF flag."""
    crlf = "\r" in content and content.count("\r\n") == content.count("\n") == content.count("\r")
    text = content.replace("\r\n", "\n") if crlf else content
    stripped = text.rstrip("\n")
    body = "" if not stripped else "\n" + stripped + "\n"
    return body, len(text) - len(stripped), crlf


def decode_content(text: str, start: int, final_newlines: int | None, crlf: bool) -> str:
    """The output held in ``text[start:]``: the inverse of encode_content. Takes one copy.

    With ``Final Newlines`` (haytham's files of an output ending in line breaks) the output
    is the body less the blank line after the heading and every line break at its end (an
    editor's extra blank lines vanish), then that many line breaks. Without it (haytham's
    other files, and every file of version 0) the output is the body less that blank line
    and exactly one final ``"\n"``, the writer's: both writers put the content's own line
    breaks before it.
    """
    if text.startswith("\n", start):
        start += 1
    end = len(text)
    if final_newlines is None:
        if end > start and text[end - 1] == "\n":
            end -= 1
        content = text[start:end]
    else:
        trailing = end
        while end > start and text[end - 1] == "\n":
            end -= 1
        if end + final_newlines <= trailing:  # the breaks are there: one slice, not two copies
            content = text[start : end + final_newlines]
        else:
            content = text[start:end] + "\n" * final_newlines
    return content.replace("\n", "\r\n") if crlf else content


_TOOL = r"[A-Za-z0-9][A-Za-z0-9_.:/-]*"
_CANONICAL_HEADER = re.compile(
    rf"# {TITLE}(?P<agent_name>{v.NAME})\n"
    r"\n"
    r"## Metadata\n"
    r"- Agent: (?P=agent_name)\n"
    rf"- Phase: (?P<phase_number>{v.WHOLE_NUMBER}) - (?P<phase_name>{v.PLAIN_TEXT})\n"
    rf"- Executed: (?:-|(?P<executed>{v.TIMESTAMP}))\n"
    rf"- Duration: (?:-|(?P<duration>{v.SECONDS}))\n"
    rf"- Status: (?P<status>{'|'.join(s for s in PHASE_STATUSES if s != 'failed')})\n"
    r"(?:- Final Newlines: (?P<final_newlines>[1-9][0-9]{0,6})\n)?"
    r"(?:- Line Endings: (?P<crlf>crlf)\n)?"
    rf"- Format: {FORMAT_VERSION}\n"
    r"\n"
    r"## Execution Details\n"
    rf"- Model: (?:-|(?P<model>{v.PLAIN_TEXT}))\n"
    rf"- Input Tokens: (?:-|(?P<input_tokens>{v.COUNT}))\n"
    rf"- Output Tokens: (?:-|(?P<output_tokens>{v.COUNT}))\n"
    rf"- Tools Used: \[(?:none|(?P<tools_used>{_TOOL}(?:, {_TOOL})*))\]\n"
    rf"- Cost: (?:-|(?P<cost>{v.COST}))\n"
    r"\n"
    r"## Output\n"
)
"""The header of an output exactly as ``render`` writes it for an agent that did not fail,
with values in their plainest spelling: what ``AgentOutputFormat._canonical`` reads."""


class AgentOutputFormat(DocumentFormat[AgentOutput]):
    kind = "agent_output"
    labels: ClassVar[Mapping[str, str]] = labels_of(SECTIONS, {"phase_name": "phase_number"})
    version_section: ClassVar[SectionSpec] = METADATA
    sections: ClassVar[tuple[SectionSpec, ...]] = SECTIONS

    def _reader(self, text: str, path: Path | None, *, fast: bool = True) -> Reader:
        split = split_output(text)
        header = text if split is None else text[: split[0]]
        return Reader(text, path, self.labels, sections_text=header, fast=fast)

    def _collect(self, reader: Reader) -> dict[str, Any]:
        title_name = reader.expect_title(TITLE)
        meta_section = reader.section(METADATA)
        meta = reader.fields(meta_section)
        take = reader.take
        phase = take(meta, "phase_number", str, default="", section=meta_section)
        number, _, name = phase.partition(" - ")
        data: dict[str, Any] = {
            "agent_name": take(meta, "agent_name", v.read_text, default=title_name, required=False),
            "phase_number": v.read_int(number),
            "phase_name": v.read_text(name) or "",
            "executed": take(meta, "executed", v.read_text, required=False),
            "duration": take(meta, "duration", v.read_seconds, required=False),
            "status": take(meta, "status", v.read_text, section=meta_section),
        }
        final_newlines = take(meta, "final_newlines", v.read_int, default=None, required=False)
        if final_newlines is None:
            pass  # version 0, or an output that does not end in a line break
        elif not isinstance(final_newlines, int) or final_newlines < 0:
            reader.error(
                reader.lines.get(("final_newlines",)),
                METADATA.label("final_newlines"),
                f"{final_newlines!r} is not a whole number of line breaks",
            )
            final_newlines = None
        elif final_newlines > MAX_FINAL_NEWLINES:
            reader.error(
                reader.lines.get(("final_newlines",)),
                METADATA.label("final_newlines"),
                f"{final_newlines} is more line breaks than an output may end with "
                f"(at most {MAX_FINAL_NEWLINES:,})",
            )
            final_newlines = None
        line_endings = take(meta, "line_endings", str, default="lf", required=False).casefold()
        if line_endings not in ("lf", "crlf"):
            reader.error(
                reader.lines.get(("line_endings",)),
                METADATA.label("line_endings"),
                f"{line_endings!r} is not a line ending (expected lf or crlf)",
            )

        details = reader.fields(reader.section(EXECUTION_DETAILS))
        data["model"] = take(details, "model", v.read_text, required=False)
        data["input_tokens"] = take(details, "input_tokens", v.read_int, required=False)
        data["output_tokens"] = take(details, "output_tokens", v.read_int, required=False)
        data["tools_used"] = take(details, "tools_used", _read_tools, default=[], required=False)
        data["cost"] = take(details, "cost", v.read_cost, required=False)
        data.update(_error_details(reader))

        split = split_output(reader.text)
        if split is None:
            reader.error(None, None, f"section '{OUTPUT.heading}' is missing")
            data["content"] = ""
            return data
        _, body_start, output_line = split
        reader.lines[("content",)] = output_line - 1
        text = reader.text
        if data["status"] == "failed" and reader.section(ERROR_DETAILS) is None:
            legacy = legacy_error_tail(text[body_start:])
            if legacy is not None:
                text = text[: body_start + legacy[0]]
                data.update(legacy[1])
        data["content"] = decode_content(text, body_start, final_newlines, line_endings == "crlf")
        return data

    def _canonical(self, text: str) -> AgentOutput | None:
        """The output of a text whose header is in exactly ``render``'s shape, else None.

        The general reader never looks past ``## Output`` except to take the content, so
        only the header must be plain (``plain_characters``); the content is decoded as
        ``_collect`` decodes it."""
        found = _CANONICAL_HEADER.match(text)
        if found is None or not plain_characters(text[: found.end()]):
            return None
        final_newlines = found["final_newlines"]
        newlines = None if final_newlines is None else int(final_newlines)
        if newlines is not None and newlines > MAX_FINAL_NEWLINES:
            return None
        duration, cost = found["duration"], found["cost"]
        input_tokens, output_tokens = found["input_tokens"], found["output_tokens"]
        tools = found["tools_used"]
        return AgentOutput(
            agent_name=found["agent_name"],
            phase_number=int(found["phase_number"]),
            phase_name=found["phase_name"],
            executed=found["executed"],
            duration=None if duration is None else float(duration[:-1]),
            status=found["status"],  # type: ignore[arg-type]  # one of PHASE_STATUSES
            model=found["model"],
            input_tokens=None if input_tokens is None else int(input_tokens),
            output_tokens=None if output_tokens is None else int(output_tokens),
            tools_used=() if tools is None else tuple(tools.split(", ")),
            content=decode_content(text, found.end(), newlines, found["crlf"] is not None),
            error_type=None,
            error_message=None,
            stack_trace=None,
            cost=None if cost is None else float(cost[1:]),
        )

    def check_record(self, record: AgentOutput, path: Path | None = None) -> None:
        """The schema's checks, and the bound on the line breaks that end the output."""
        super().check_record(record, path)
        if len(record.content) <= MAX_FINAL_NEWLINES:  # too short to end with too many
            return
        _, final_newlines, _ = encode_content(record.content)
        if final_newlines > MAX_FINAL_NEWLINES:
            raise DocumentError(
                f"the output ends with {final_newlines:,} line breaks; at most {MAX_FINAL_NEWLINES:,} "
                "can be recorded",
                path=path,
                field=self.labels["content"],
            )

    def _build(self, data: dict[str, Any]) -> AgentOutput:
        return AgentOutput(**{**data, "tools_used": tuple(data["tools_used"])})

    def render(self, record: AgentOutput) -> str:
        body, final_newlines, crlf = encode_content(record.content)
        metadata = {
            "agent_name": record.agent_name,
            "phase_number": f"{record.phase_number} - {v.write_text(record.phase_name)}",
            "executed": v.write_text(record.executed),
            "duration": v.write_seconds(record.duration),
            "status": record.status,
            "final_newlines": str(final_newlines) if final_newlines else None,
            "line_endings": "crlf" if crlf else None,
        }
        details = {
            "model": v.write_text(record.model),
            "input_tokens": v.write_int(record.input_tokens),
            "output_tokens": v.write_int(record.output_tokens),
            "tools_used": v.write_list(record.tools_used, empty="none"),
            "cost": v.write_cost(record.cost),
        }
        lines = [
            f"# {TITLE}{record.agent_name}",
            "",
            *write_fields(METADATA, metadata),
            "",
            *write_fields(EXECUTION_DETAILS, details),
        ]
        errors = (record.error_type, record.error_message, record.stack_trace)
        if record.status == "failed" or any(e is not None for e in errors):
            trace = record.stack_trace
            error_details = {
                "error_type": v.write_text(record.error_type),
                "error_message": v.write_text(record.error_message),
                "stack_trace": v.UNKNOWN if trace is None else "\n" + v.write_fenced(trace),
            }
            lines += ["", *write_fields(ERROR_DETAILS, error_details)]
        lines += ["", OUTPUT.heading]
        return "\n".join(lines) + "\n" + body


def _read_tools(raw: str) -> list[str] | str:
    return v.read_list(raw, empty="none")


def _error_details(reader: Reader) -> dict[str, Any]:
    """Error Details written before ``## Output`` (haytham's order)."""
    section = reader.section(ERROR_DETAILS)
    fields = reader.fields(section)
    data: dict[str, Any] = {
        "error_type": reader.take(fields, "error_type", v.read_text, required=False),
        "error_message": reader.take(fields, "error_message", v.read_text, required=False),
        "stack_trace": None,
    }
    trace = fields.get(normalise_label(ERROR_DETAILS.label("stack_trace")))
    if section is not None and trace is not None and trace.value.strip() != v.UNKNOWN:
        fence = first_fence(section.body, section.body_line, trace.line)
        data["stack_trace"] = v.read_fenced(fence[0], fence[1]) if fence else trace.value
    return data


_LEGACY_ERROR_START = "\n\n## Error Details\n- Error Type: "
_LEGACY_MESSAGE = "\n- Error Message: "
_LEGACY_TRACE = "\n- Stack Trace:\n```\n"
_LEGACY_TRACE_END = "\n```\n"


def legacy_error_tail(body: str) -> tuple[int, dict[str, Any]] | None:
    """Where the output in ``body`` (the text after ``## Output``) ends, and the error details
    that the first implementation appended after it, or None when there are none.

    That writer put, after the content and its own final ``"\n"``, exactly
    ``"\n## Error Details\n- Error Type: {type}\n- Error Message: {message}\n"`` and, with a
    trace, ``"- Stack Trace:\n```\n{trace}\n```\n"``, escaping nothing. So the section is
    read from the end of the file, never through the markdown parser: the content before it
    may end inside an unclosed fence or hold ``## Error Details`` lines of its own, and the
    message may span lines. The last heading after which the rest has exactly that shape is
    the writer's. The values are kept as written (``Unknown`` and ``No message`` included).
    """
    found = body.rfind(_LEGACY_ERROR_START)
    while found >= 0:
        details = _legacy_error_fields(body[found + len(_LEGACY_ERROR_START) :])
        if details is not None:
            return found + 1, details
        found = body.rfind(_LEGACY_ERROR_START, 0, found)
    return None


def _legacy_error_fields(rest: str) -> dict[str, Any] | None:
    """Type, message and trace from what follows ``- Error Type: `` in a file of version 0."""
    error_type, separator, after = rest.partition(_LEGACY_MESSAGE)
    if not separator or "\n" in error_type or not after.endswith("\n"):
        return None
    trace_at = after.find(_LEGACY_TRACE) if after.endswith(_LEGACY_TRACE_END) else -1
    if trace_at < 0:
        return {"error_type": error_type, "error_message": after[:-1], "stack_trace": None}
    trace = after[trace_at + len(_LEGACY_TRACE) : -len(_LEGACY_TRACE_END)]
    return {"error_type": error_type, "error_message": after[:trace_at], "stack_trace": trace}


AGENT_OUTPUT = AgentOutputFormat()
