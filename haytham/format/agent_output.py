"""``{agent_name}.md``: one agent's output, kept verbatim from ``## Output`` to the end.

The header is parsed with the section parser; the output is found by a fence-aware scan for
the first top-level ``## Output`` line and sliced from the source, so a megabyte of output
never goes through mistune. Two optional Metadata fields make the slice exact: ``Final
Newlines`` (how many line breaks ended the text) and ``Line Endings: crlf``.

A file larger than ``MAPPED_FROM`` is read mapped (``read_mapped``): the header is decoded
from the start of the file, the ``## Output`` line found there exactly as in the whole text,
and the content decoded once, straight from the mapping. Loading a 100 MB output then holds
the content and little else, where decoding the file whole would hold its text and the
content sliced from it at once.
"""

from __future__ import annotations

import dataclasses
import mmap
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from haytham.errors import DocumentError, Issue
from haytham.format import values as v
from haytham.format.document import DocumentFormat, ReadCache, _record_or_raise
from haytham.format.guard import map_file, read_start
from haytham.format.layout import FORMAT_VERSION
from haytham.format.markdown import first_fence, iter_fences, normalise_label, plain_characters
from haytham.format.patterns import lazy
from haytham.format.reader import Reader
from haytham.format.sections import VERSION_FIELD, FieldSpec, SectionSpec, labels_of, write_fields
from haytham.format.tries import TRIES, as_tries, read_tries, write_tries
from haytham.records import PHASE_STATUSES, AgentOutput

TITLE = "Agent Output: "
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
"""The largest agent output file haytham reads (docs/formats.md, "Limits"). Larger than
``MAX_DOCUMENT_BYTES`` of the other files, which are parsed whole: an output is read mapped
(``read_mapped``), in about the memory of its content."""
MAX_CORRECTED_BYTES = 32 * 1024 * 1024
"""The largest output file a reviewer may correct (``correct_output``): the original is kept
whole in the correction's history entry, a file haytham reads up to ``MAX_DOCUMENT_BYTES``
(64 MB), beside the checkpoint."""
MAPPED_FROM = 1024 * 1024
"""Files of more bytes than this are read mapped, not read whole."""
_HEAD_BYTES = 64 * 1024
"""How much of a mapped file is decoded first to find ``## Output`` (doubled until found)."""
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
        FieldSpec("corrected", "Corrected"),
        FieldSpec("final_newlines", "Final Newlines"),
        FieldSpec("line_endings", "Line Endings"),
        VERSION_FIELD,
    ),
)
"""``- Phase: {number} - {name}`` holds both phase_number and phase_name; Corrected (when a
person corrected the content: ``correct_output``), Final Newlines and Line Endings are written
only when needed."""
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
SECTIONS = (METADATA, EXECUTION_DETAILS, TRIES, ERROR_DETAILS, OUTPUT)


def _heading_line(section: SectionSpec) -> str:
    """A pattern for the section's ``##`` heading line as people may write it."""
    return r" {0,3}##[ \t]+" + re.escape(section.title) + r"[ \t]*#*[ \t]*"


_OUTPUT_LINE = lazy("^" + _heading_line(OUTPUT) + r"\r?$", re.IGNORECASE | re.M)


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


class _Output:
    """Where a document's output starts and how its content is taken: from the whole text."""

    def __init__(self, text: str) -> None:
        self.text = text
        """The text that holds the header and the ``## Output`` line (here, all of it)."""
        self.split = split_output(text)
        """``split_output`` of the whole document."""

    @property
    def header(self) -> str:
        """The text before ``## Output`` (all of it when there is none)."""
        return self.text if self.split is None else self.text[: self.split[0]]

    def content(self, final_newlines: int | None, crlf: bool, legacy: bool) -> tuple[str, dict[str, Any]]:
        """The content (``decode_content``) and, with ``legacy``, the error details a file of
        version 0 appended after it (``legacy_error_tail``)."""
        assert self.split is not None
        return _content(self.text, self.split[1], final_newlines, crlf, legacy)


def _content(
    text: str, body_start: int, final_newlines: int | None, crlf: bool, legacy: bool
) -> tuple[str, dict[str, Any]]:
    """``_Output.content`` of ``text`` whose output body starts at ``body_start``."""
    details: dict[str, Any] = {}
    if legacy:
        found = legacy_error_tail(text[body_start:])
        if found is not None:
            text = text[: body_start + found[0]]
            details = found[1]
    return decode_content(text, body_start, final_newlines, crlf), details


class _MappedOutput(_Output):
    """The output of a file read mapped: ``text`` is the decoded start of the file, up to
    and with the ``## Output`` line; the content is decoded from the mapping when taken."""

    def __init__(self, head: str, split: tuple[int, int, int], buffer: mmap.mmap | bytes, body_at: int):
        self.text = head
        self.split = split
        self._buffer = buffer
        self._body_at = body_at
        """The byte offset in ``buffer`` of ``head[split[1]]``, the line after ``## Output``."""

    def content(self, final_newlines: int | None, crlf: bool, legacy: bool) -> tuple[str, dict[str, Any]]:
        """``_Output.content`` of the whole text, decoding the bytes it covers once (a
        UnicodeDecodeError when they are not UTF-8)."""
        buffer, start, end = self._buffer, self._body_at, len(self._buffer)
        if legacy:  # files of version 0 that failed: rare, read as the text path does
            return _content(_decode(buffer, start, end), 0, final_newlines, crlf, legacy)
        if buffer[start : start + 1] == b"\n":
            start += 1
        if final_newlines is None:
            if end > start and buffer[end - 1] == _LF:
                end -= 1
            content = _decode(buffer, start, end)
        else:
            trailing = end
            end = _before_newlines(buffer, start, end)
            if end + final_newlines <= trailing:
                content = _decode(buffer, start, end + final_newlines)
            else:  # the breaks are put back: two copies for a moment, as decode_content makes
                content = _decode(buffer, start, end) + "\n" * final_newlines
        return (content.replace("\n", "\r\n") if crlf else content), {}


_LF = ord("\n")
_BOM = "\ufeff".encode()


def _decode(buffer: mmap.mmap | bytes, start: int, end: int) -> str:
    """``buffer[start:end]`` decoded as UTF-8 without copying the bytes first."""
    with memoryview(buffer) as whole, whole[start:end] as part:
        return str(part, "utf-8")


def _before_newlines(buffer: mmap.mmap | bytes, start: int, end: int) -> int:
    """Where the line breaks that end ``buffer[start:end]`` begin (``rstrip`` on bytes, in
    steps, so a file of a million final line breaks is not copied whole)."""
    while end > start:
        step = buffer[max(start, end - _HEAD_BYTES) : end]
        kept = len(step.rstrip(b"\n"))
        end -= len(step) - kept
        if kept:
            break
    return end


def _all_crlf(buffer: mmap.mmap | bytes, start: int) -> bool:
    """Whether ``buffer[start:]`` has line breaks and every one is CRLF (``decode`` then
    turns them to LF), counted in steps."""
    crlf = lf = 0
    for at in range(start, len(buffer), 1 << 20):
        step = buffer[at : at + (1 << 20) + 1]  # one byte more: a CRLF across the step's end
        crlf += step.count(b"\r\n")
        lf += step.count(b"\n", 0, 1 << 20)
        if crlf != lf:
            return False
    return lf > 0


class _OutputReader(Reader):
    """The reader of an agent output: the section parser sees only the header."""

    def __init__(self, output: _Output, path: Path | None, labels: Mapping[str, str], *, fast: bool) -> None:
        super().__init__(output.text, path, labels, sections_text=output.header, fast=fast)
        self.output = output


_TOOL = r"[A-Za-z0-9][A-Za-z0-9_.:/-]*"
_CANONICAL_HEADER = lazy(
    rf"# {TITLE}(?P<agent_name>{v.NAME})\n"
    r"\n"
    r"## Metadata\n"
    r"- Agent: (?P=agent_name)\n"
    rf"- Phase: (?P<phase_number>{v.WHOLE_NUMBER}) - (?P<phase_name>{v.PLAIN_TEXT})\n"
    rf"- Executed: (?:-|(?P<executed>{v.TIMESTAMP}))\n"
    rf"- Duration: (?:-|(?P<duration>{v.SECONDS}))\n"
    rf"- Status: (?P<status>{'|'.join(s for s in PHASE_STATUSES if s != 'failed')})\n"
    rf"(?:- Corrected: (?P<corrected>{v.TIMESTAMP})\n)?"
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
    max_bytes: ClassVar[int | None] = MAX_OUTPUT_BYTES

    def _reader(self, text: str, path: Path | None, *, fast: bool = True) -> Reader:
        return _OutputReader(_Output(text), path, self.labels, fast=fast)

    def _read_at(self, path: Path, cache: ReadCache | None) -> tuple[AgentOutput | None, list[Issue]]:
        found = map_file(path, self.max_bytes, MAPPED_FROM)
        if isinstance(found, bytes):
            return self.read_data(found, path, cache=cache)
        with found:  # never cached: such a text is longer than a cache keeps
            return self.read_mapped(found, path)

    def read_mapped(
        self, buffer: mmap.mmap | bytes, path: Path | None = None
    ) -> tuple[AgentOutput | None, list[Issue]]:
        """``read_data`` of a file's bytes, decoding only the header and the content.

        The same record and issues as ``read_data(bytes(buffer))`` (tests/test_agent_output_mapped.py
        compares them): the ``## Output`` line is found by ``split_output`` on a decoded
        start of the file that ends at a line break, and such a start is taken as an answer
        only when it is one for the whole text too (a line found outside every fence); every
        byte is decoded once, so bytes that are not UTF-8 are still refused. A file whose
        every line ends in CRLF (``decode`` rewrites it), or that is not UTF-8 (whose error
        ``decode`` locates), is read whole."""
        try:
            reader = self._mapped_reader(buffer, path)
            if reader is not None:
                return self._read_with(reader)
        except UnicodeDecodeError:
            pass
        return self.read_data(bytes(buffer), path)

    def parse_mapped(self, buffer: mmap.mmap | bytes, path: Path | None = None) -> AgentOutput:
        """``read_mapped``'s record, or its first error raised (DocumentError)."""
        return _record_or_raise(*self.read_mapped(buffer, path))

    def _mapped_reader(self, buffer: mmap.mmap | bytes, path: Path | None) -> Reader | None:
        """The reader of a mapped file, or None when it must be read whole."""
        size = len(buffer)
        skip = len(_BOM) if buffer[: len(_BOM)] == _BOM else 0
        if buffer.find(b"\r", skip) >= 0 and _all_crlf(buffer, skip):
            return None
        window = _HEAD_BYTES
        while True:
            stop = size if skip + window >= size else buffer.rfind(b"\n", skip, skip + window) + 1
            if stop == size:
                return None  # the output line is not in a start of the file: read it whole
            if stop > skip:
                head = _decode(buffer, skip, stop)
                split = split_output(head)
                if split is not None:
                    break
            window *= 2
        body_at = skip + len(head[: split[1]].encode("utf-8"))
        output = _MappedOutput(head, split, buffer, body_at)
        return _OutputReader(output, path, self.labels, fast=True)

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
            "corrected": take(meta, "corrected", v.read_text, required=False),
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
        data["tries"] = read_tries(reader)
        data.update(_error_details(reader))

        output = reader.output if isinstance(reader, _OutputReader) else _Output(reader.text)
        if output.split is None:
            reader.error(None, None, f"section '{OUTPUT.heading}' is missing")
            data["content"] = ""
            return data
        reader.lines[("content",)] = output.split[2] - 1
        legacy = data["status"] == "failed" and reader.section(ERROR_DETAILS) is None
        data["content"], details = output.content(final_newlines, line_endings == "crlf", legacy)
        data.update(details)
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
            corrected=found["corrected"],
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
        return AgentOutput(
            **{**data, "tools_used": tuple(data["tools_used"]), "tries": as_tries(data["tries"])}
        )

    def render(self, record: AgentOutput) -> str:
        body, final_newlines, crlf = encode_content(record.content)
        metadata = {
            "agent_name": record.agent_name,
            "phase_number": f"{record.phase_number} - {v.write_text(record.phase_name)}",
            "executed": v.write_text(record.executed),
            "duration": v.write_seconds(record.duration),
            "status": record.status,
            "corrected": record.corrected,
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
        if record.tries:
            lines += ["", *write_tries(record.tries)]
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


def load_start(path: Path, limit: int) -> tuple[AgentOutput, int, bool] | None:
    """The output at ``path`` with only the first ``limit`` bytes of its content (cut at the
    last line break within them, or at a character when there is none), the size of the file
    in bytes, and whether the content is whole; None when there is no file. Only about
    ``limit`` bytes are read, whatever the file's size: what a page shows of an output of
    hundreds of megabytes. A file not much longer than ``limit`` is read whole."""
    try:
        data, size = read_start(path, limit + _HEAD_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(data) <= limit + _HEAD_BYTES:  # the whole file
        return _record_or_raise(*AGENT_OUTPUT.read_data(data, path)), len(data), True
    cut = data.rfind(b"\n", 0, limit + _HEAD_BYTES) + 1 or len(data)
    record = _record_or_raise(*AGENT_OUTPUT.read_data(data[:cut], path))
    content = record.content.encode("utf-8")
    if len(content) > limit:
        end = content.rfind(b"\n", 0, limit) + 1 or limit
        record = dataclasses.replace(record, content=content[:end].decode("utf-8", "ignore"))
    return record, size, False
