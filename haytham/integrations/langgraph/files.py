"""LangGraph checkpoints as markdown files: names, values, and the two documents.

Names. A thread is a session and a namespace a folder; ``session_id_for`` and
``namespace_folder`` turn the ids LangGraph uses into names the store accepts, unchanged when
they already are one (see ``docs/langgraph.md``, "Names").

Values. Every channel value, metadata and pending write is written in the most readable form
that reads back as exactly the same value:

* ``text``: a string, verbatim as markdown when the document still splits the same way around
  it; ``text, fenced`` when it cannot (CRLF, a ``## `` line, an unclosed fence): in a
  ``verbatim`` fenced block, as haytham keeps feedback comments;
* ``json``: plain JSON data (dicts with string keys, lists, strings, numbers, booleans, None)
  in a fenced ``json`` block, indented, keys in their own order;
* ``bytes``: bytes in a fenced ``base64`` block;
* ``langgraph/{type}``: anything else through LangGraph's own serializer (``serde``), its
  bytes in a fenced ``base64`` block, with the Python type named for the reader.

Documents. ``render_checkpoint``/``parse_checkpoint`` and ``render_writes``/``parse_writes``
are exact inverses; parsing a file haytham did not write raises ``DocumentError`` naming the
line. The fence scanner is the store's own (``haytham.format.markdown.iter_fences``), imported
by what needs it (a writer, a hand-edited file), not by a reader of the files haytham wrote.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import json
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Protocol

from haytham.errors import DocumentError, UnsafeNameError
from haytham.format.layout import (
    FORMAT_VERSION,
    LANGGRAPH_NAMESPACE_PREFIX,
    LANGGRAPH_ROOT_NAMESPACE,
    LANGGRAPH_WRITES_SUFFIX,
)
from haytham.format.patterns import lazy
from haytham.format.values import read_fenced_text, read_text, write_fenced, write_text, write_title
from haytham.store.names import MAX_NAME_LENGTH, check_name, is_safe_name

# ------------------------------------------------------------------------------- names

ESCAPED_PREFIX = "lg_"
"""How a session id made from a thread id that is not a safe name starts."""
_KEPT = lazy(r"[A-Za-z0-9-]")


def _encode(text: str) -> str:
    """``text`` with every UTF-8 byte outside ``A-Z a-z 0-9 -`` written ``_XX``: injective."""
    return "".join(
        char if _KEPT.fullmatch(char) else "".join(f"_{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
        for char in text
    )


def _escaped(prefix: str, text: str) -> str:
    encoded = prefix + _encode(text)
    if len(encoded) <= MAX_NAME_LENGTH:
        return encoded
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return f"{prefix}sha256-{digest}"


def session_id_for(thread_id: str) -> str:
    """The session that keeps a thread: the thread id itself when it is a safe name that does
    not start with ``lg_``; otherwise ``lg_`` and the id with each unsafe byte as ``_XX``
    (``my thread`` is ``lg_my_20thread``), or ``lg_sha256-`` and a digest when that is too
    long. Two thread ids never share a session (up to a SHA-256 collision)."""
    if not isinstance(thread_id, str):
        raise UnsafeNameError(f"thread_id must be a string, got {thread_id!r}", field="thread_id")
    try:
        if not thread_id.startswith(ESCAPED_PREFIX):
            return check_name("thread_id", thread_id)
    except UnsafeNameError:
        pass
    return _escaped(ESCAPED_PREFIX, thread_id)


def namespace_folder(checkpoint_ns: str) -> str:
    """The folder of a namespace: ``root`` for the root (``""``), else ``ns-`` and the
    namespace with each unsafe byte as ``_XX`` (``child:1`` is ``ns-child_3A1``)."""
    if checkpoint_ns == "":
        return LANGGRAPH_ROOT_NAMESPACE
    return _escaped(LANGGRAPH_NAMESPACE_PREFIX, checkpoint_ns)


def checkpoint_file(checkpoint_id: str) -> str:
    """``{checkpoint_id}.md``; UnsafeNameError for an id that cannot name a file."""
    return f"{check_name('checkpoint_id', checkpoint_id)}.md"


def writes_file(checkpoint_id: str) -> str:
    """``{checkpoint_id}.writes.md``, the pending writes beside their checkpoint."""
    return f"{check_name('checkpoint_id', checkpoint_id)}{LANGGRAPH_WRITES_SUFFIX}"


def checkpoint_ids(names: Collection[str]) -> list[str]:
    """The checkpoint ids among a folder's file names, oldest first (ids sort by time).

    A cold ``get_tuple`` pays this on every name of the folder, so the loop tests only the
    suffix; the hidden names (a write under way, ``.md``), which sort together, are cut out
    of the sorted ids after it."""
    writes = LANGGRAPH_WRITES_SUFFIX
    ids = [name[:-3] for name in names if name.endswith(".md") and not name.endswith(writes)]
    ids.sort()
    if ids and ids[0] == "":  # the file ".md"
        del ids[0]
    hidden = bisect.bisect_left(ids, ".")
    del ids[hidden : bisect.bisect_left(ids, "/", hidden)]  # "/" follows "." and ends no name
    return ids


def newest_checkpoint(names: Sequence[str]) -> tuple[str | None, bool]:
    """The greatest of ``checkpoint_ids(names)`` that is a safe name, as every id haytham
    writes is (None when there is none: a file a person put in the folder under another name
    is passed over, not taken for the newest checkpoint), and whether the folder holds that
    checkpoint's pending writes (``{id}.writes.md`` among ``names``). Without sorting every
    name or making a set of them: what a ``get_tuple`` of the newest checkpoint needs of a
    folder of hundreds of files, in one pass over the names.

    The pass keeps the names greater than a ``floor``: the stem (``_stem``) of the greatest
    of the first and last few names as listed, which lies near the top whether the folder
    lists its names in no order of theirs (ext4's hash order) or by age either way, so that
    few are kept. The greatest name, ``last``, is among them when any is.
    ``last`` is ``{x}.md`` or ``{x}.writes.md`` of some ``x``; when ``x`` is an id (``{x}.md``
    is a name, not hidden, not a writes file's), ``x >= floor`` (so every name greater than
    ``x`` was kept) and no name is greater than ``x`` but those two, ``x`` is the greatest
    id: any id ``y > x`` makes the name ``{y}.md > x`` (``y`` either has ``x`` as a proper
    prefix or is greater at their first difference), and that name is neither ``{x}.md``
    (``y != x``) nor ``{x}.writes.md`` (``y`` would be ``{x}.writes``, whose ``.md`` is a
    writes file's name, so no id). In any other case (another file, ids that are prefixes
    of each other, a greatest id that is no safe name) the answer is found among
    ``checkpoint_ids``'s."""
    writes = LANGGRAPH_WRITES_SUFFIX
    if not names:
        return None, False
    floor = _stem(max(chain(names[:_SAMPLE], names[-_SAMPLE:])))
    kept = [name for name in names if name > floor]
    if kept:
        last = max(kept)
        candidate = _stem(last)
        checkpoint, pending = candidate + ".md", candidate + writes
        if (
            last.endswith(".md")
            and candidate >= floor
            and candidate[:1] not in ("", ".")
            and not checkpoint.endswith(writes)
        ):
            above = [name for name in kept if name > candidate]
            if checkpoint in above and len(above) == 1 + (pending in above) and is_safe_name(candidate):
                return candidate, pending in above
    newest = next((i for i in reversed(checkpoint_ids(names)) if is_safe_name(i)), None)
    return newest, newest is not None and newest + writes in names


_SAMPLE = 8
"""How many names at each end of a listing ``newest_checkpoint`` takes its floor from: the
greatest of 16 names in no particular order is greater than all but about a seventeenth of
the rest, and a listing by age, oldest or newest first, holds the greatest at one end."""


def _stem(name: str) -> str:
    """The ``x`` of a checkpoint's name ``{x}.md`` or its writes' ``{x}.writes.md``; any
    other name as it is."""
    if name.endswith(LANGGRAPH_WRITES_SUFFIX):
        return name[: -len(LANGGRAPH_WRITES_SUFFIX)]
    return name[:-3] if name.endswith(".md") else name


# ------------------------------------------------------------------------------ values


class Serde(Protocol):
    """The part of LangGraph's ``SerializerProtocol`` used here."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


SERDE_PREFIX = "langgraph/"
"""``Type: langgraph/msgpack``: a value LangGraph's serializer wrote (type ``msgpack``)."""
FENCED_TEXT = "text, fenced"
"""A string kept in a ``verbatim`` fenced block because it could not stand unfenced."""


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_plain_json(value: object) -> bool:
    """Whether ``json.loads(json.dumps(value))`` gives back a value of the very same types."""
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    if kind is str:
        return _is_text(value)  # type: ignore[arg-type]
    if kind is list:
        return all(is_plain_json(item) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        return all(
            type(key) is str and _is_text(key) and is_plain_json(item)
            for key, item in value.items()  # type: ignore[attr-defined]
        )
    return False


def _fence(text: str, info: str) -> str:
    """``text`` in a backtick fence longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marker = "`" * max(3, longest + 1)
    return f"{marker}{info}\n{text}\n{marker}" if text else f"{marker}{info}\n{marker}"


def _base64(data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))


_SPLIT = lazy(r"^## ", re.M)


def _safe_verbatim(text: str) -> bool:
    """Whether ``text`` can stand unfenced in a section and read back the same: no CR, every
    fence it opens closes inside it, and no line outside them starts a section (``## ``)."""
    if "\r" in text or "\ufeff" in text:
        return False
    from haytham.format.markdown import iter_fences  # a writer's check: a reader never imports it

    fences = list(iter_fences(text))
    if any(not f.closed for f in fences):
        return False
    starts = [f.start for f in fences]
    for match in _SPLIT.finditer(text):
        index = bisect.bisect_right(starts, match.start()) - 1
        if index < 0 or fences[index].end <= match.start():
            return False
    return True


def render_value(value: Any, serde: Serde) -> tuple[list[tuple[str, str]], str]:
    """The fields (``Type``, maybe ``Python Type``) and body that hold ``value``."""
    if type(value) is str and _is_text(value):
        if _safe_verbatim(value):
            return [("Type", "text")], value
        return [("Type", FENCED_TEXT)], write_fenced(value)
    if is_plain_json(value):
        return [("Type", "json")], _fence(json.dumps(value, indent=2, ensure_ascii=False), "json")
    if type(value) is bytes:
        return [("Type", "bytes")], _fence(_base64(value), "base64")
    kind, data = serde.dumps_typed(value)
    fields = [("Type", SERDE_PREFIX + kind), ("Python Type", _python_type(value))]
    return fields, _fence(_base64(data), "base64")


def _python_type(value: object) -> str:
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, (list, tuple)) and value:
        inner = sorted({type(item).__qualname__ for item in value})
        name += f" of {', '.join(inner)}"
    return name


_SCAN_JSON: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]
"""The JSON decoder's scanner (C): one value from a position, without ``json.loads``'s
layers (``decode``, ``raw_decode``, a whitespace match at each end) around it."""


def _json(content: str) -> Any:
    """``json.loads(content)``: a block as ``render_value`` writes it (no space before the
    value, none or a line break after it) by the scanner alone, anything else by
    ``json.loads``, which also words the error."""
    try:
        value, end = _SCAN_JSON(content, 0)
    except (StopIteration, ValueError):
        return json.loads(content)
    if end != len(content) and content[end:].strip(" \t\n\r"):  # JSON's whitespace, as json.loads
        return json.loads(content)
    return value


def parse_value(section: Section, serde: Serde, path: Where = None) -> Any:
    """The value a section's ``Type`` field and body hold (the inverse of render_value);
    ``path``: the file, for the error that names it."""
    kind = section.fields.get("Type")
    block = section.block
    if kind == "json" and block is not None and not block[3]:  # read in place, not cut out first
        start, end = block[1], block[2] - 1  # the content, to the line break before the closing fence
        try:
            value, stop = _SCAN_JSON(section.source, start)
        except (StopIteration, ValueError):
            pass  # not in render_value's shape: the whole content's parse below words the error
        else:
            if stop == end and section.source[end] == "\n":  # the value is the whole content
                return value
    if kind is None:
        raise section.error("has no '- Type:' line", path)
    if kind == "text":
        return section.body
    if kind != FENCED_TEXT and kind not in ("json", "bytes") and not kind.startswith(SERDE_PREFIX):
        raise section.error(f"has the unknown Type {kind!r}", path)
    fence = section.fence
    if fence is None:
        raise section.error("has no closed fenced block", path)
    info, content = fence
    if kind == FENCED_TEXT:
        return read_fenced_text(info, content)
    if kind == "json":
        try:
            return _json(content)
        except ValueError as error:
            raise section.error(f"holds JSON that does not parse: {error}", path) from None
    try:
        data = base64.b64decode("".join(content.split()), validate=True)
    except (binascii.Error, ValueError):
        raise section.error("holds base64 that does not decode", path) from None
    if kind == "bytes":
        return data
    return serde.loads_typed((kind[len(SERDE_PREFIX) :], data))


# ---------------------------------------------------------------------------- sections

Where = Path | str | None
"""The file a document was read from, for the error that names it: a ``Path``, or its text
(a reader of hundreds of files makes no ``Path`` of each for an error it will seldom raise)."""


def _as_path(where: Where) -> Path | None:
    return None if where is None else Path(where)


@dataclass(slots=True)
class Section:
    """One ``## `` section: its title, its ``- Label: value`` lines, the rest verbatim.

    A section is a view of its document's text (``source``), which it shares with the other
    sections of that document: the body and the fenced block are cut out of the text only when
    asked for, so a 50 KB value is neither copied when the file is split nor kept twice by the
    saver's cache (``cache.ThreadFiles``). Not to be changed once made (the cache shares it);
    not frozen only because a frozen dataclass is several times slower to make, and a cold
    read makes thousands."""

    title: str
    fields: dict[str, str]
    start: int
    """Where the section's ``## `` line starts in ``source``."""
    source: str
    """The whole document the section is part of."""
    body_start: int
    body_end: int
    block: tuple[str, int, int, int] | None = None
    """The first fenced block of the body when it has a closed one: its info string, where
    its content starts and ends in ``source``, and its indentation (``markdown.Fence``)."""

    @property
    def line(self) -> int:
        """The number of the section's ``## `` line (counted when an error names it)."""
        return 1 + self.source.count("\n", 0, self.start)

    def error(self, message: str, path: Where) -> DocumentError:
        """``section '## Title' {message}`` at the section's line of ``path``."""
        return DocumentError(f"section '## {self.title}' {message}", path=_as_path(path), line=self.line)

    @property
    def body(self) -> str:
        """The text after the fields and the blank line, verbatim."""
        return self.source[self.body_start : self.body_end]

    @property
    def fence(self) -> tuple[str, str] | None:
        """The info string and the content of the first fenced block of the body, the
        content's lines joined by line breaks (``markdown.fence_lines``); None without a
        closed one."""
        if self.block is None:
            return None
        info, start, end, indent = self.block
        if indent:  # a hand-indented fence: its lines lose the indentation, as mistune reads them
            from haytham.format import markdown

            return info, "\n".join(
                markdown.fence_lines(self.source, markdown.Fence(start, end, start, end, info, indent, True))
            )
        if end > start and self.source[end - 1] == "\n":  # the line break before the closing fence
            end -= 1
        return info, self.source[start:end]  # one copy of the value, not two


_FIELD = lazy(r"- ([^:\n]+): (.*)")
_HEADER = lazy(
    r"## ([^\n]*)\n(?:- Type: ([^\n]*)\n(?!- ))?((?:- [^:\n]+: [^\n]*\n)*)(?:\n(`{3,})([^`\n]*)\n)?"
)
"""A section's title line, its field lines and, when its body is a fenced value, the blank
line and the opening fence line (its backticks and info), as ``render_section`` writes them.
A value's one field, ``- Type:``, is taken by the pattern itself (no second pattern run over
the fields of most sections)."""
_FIELDS = lazy(r"- ([^:\n]+): ([^\n]*)\n")


def render_section(title: str, fields: Sequence[tuple[str, str]], body: str | None = None) -> str:
    """``## title``, a line per field, then (after a blank line) the body and a line break."""
    lines = [f"## {title}\n", *(f"- {label}: {value}\n" for label, value in fields)]
    if body is not None:
        lines.append(f"\n{body}\n")
    return "".join(lines)


def render_document(title: str, sections: Sequence[str]) -> str:
    return f"# {title}\n\n" + "\n".join(sections)


_BACKTICK_HOPS = 64
"""How many backticks ``_find_run`` steps over one at a time before it leaves the rest of
the search to ``str.find`` of the whole run."""


def _find_run(text: str, marker: str, start: int) -> int:
    """``text.find(marker, start)`` for a run of backticks, faster on a long value: CPython
    finds one character with ``memchr`` (a 50 KB value in under a microsecond) but a run of
    three by stepping through every character (about 35 microseconds), so this hops from
    backtick to backtick, and after ``_BACKTICK_HOPS`` of them (a value full of code) leaves
    the rest to ``str.find``."""
    find, starts_with = text.find, text.startswith
    position = start
    for _ in range(_BACKTICK_HOPS):
        position = find("`", position)
        if position < 0 or starts_with(marker, position):
            return position
        position += 1
    return find(marker, position)


def _canonical_sections(text: str, newline: int) -> list[Section] | None:
    """The sections of a document in exactly the shape ``render_document`` writes (its first
    line break at ``newline``), found by stepping from section to section: a fenced value is
    skipped by one ``str.find`` of its closing fence, which is longer than any backtick run
    inside it (``_fence``, ``write_fenced``). The same sections as ``split_sections``'s
    general parse; None at the first thing that is not in that shape (a hand edit, a value
    of verbatim text that holds a fence), which the general parse then reads and, if it is
    wrong, names the line of."""
    find, starts_with, size = text.find, text.startswith, len(text)
    if newline < 0 or not starts_with("\n## ", newline + 1):
        return None
    match, fields_in = _HEADER.match, _FIELDS.findall
    start = newline + 2
    sections: list[Section] = []
    while True:  # text[start:] starts with "## "
        header = match(text, start)
        if header is None:
            return None
        title, kind, fields_text, marker, info = header.groups()
        fields = {"Type": kind} if kind is not None else dict(fields_in(fields_text)) if fields_text else {}
        offset = header.end()
        block = None
        following: int | None  # where the next section starts; None after the last
        if marker is not None:  # a fenced value: skipped to its closing line, the marker alone
            if "\r" in info or info != info.strip():
                return None
            body_start = header.start(4)
            close = find("`", offset)  # most values hold no backtick: the closing fence's first
            if close >= 0 and not starts_with(marker, close):
                close = _find_run(text, marker, close + 1)
            body_end = close + len(marker)
            if close < 0 or (close > offset and text[close - 1] != "\n") or not starts_with("\n", body_end):
                return None
            block = (info, offset, close, 0)
            if body_end + 1 == size:
                following = None
            elif starts_with("\n## ", body_end + 1):
                following = body_end + 2
            else:
                return None
        elif offset == size:  # the last section, without a body
            body_start = body_end = size - 1
            following = None
        elif text[offset] != "\n":
            return None
        elif starts_with("## ", offset + 1):  # no body: the next section follows the blank line
            body_start = body_end = offset - 1
            following = offset + 1
        else:  # verbatim text, up to the next section, with no fence in it
            body_start = offset + 1
            head = find("\n## ", body_start)
            following = None if head < 0 else head + 1
            body_end = size - 1 if head < 0 else head - 1
            if (
                body_end < body_start
                or text[body_end] != "\n"
                or find("```", body_start, body_end) >= 0
                or find("~~~", body_start, body_end) >= 0
            ):
                return None
        sections.append(Section(title, fields, start, text, body_start, body_end, block))
        if following is None:
            return sections
        start = following


def split_sections(text: str, path: Where) -> tuple[str, list[Section]]:
    """The title line and the sections of a document written by ``render_document`` (or
    edited since by hand): the parse a saver's cold read pays per file. Only the titles and
    fields are copied out of ``text`` (the values stay in it, see ``Section``); a document in
    exactly the shape haytham writes is read by ``_canonical_sections``, anything else by
    ``_general_sections``, which finds the same sections in any text."""
    newline = text.find("\n")
    first = text if newline < 0 else text[:newline]
    if not first.startswith("# "):
        raise DocumentError("the first line is not a '# ' title", path=_as_path(path), line=1)
    sections = _canonical_sections(text, newline)
    return first[2:], _general_sections(text, path) if sections is None else sections


def _general_sections(text: str, path: Where) -> list[Section]:
    """The sections of any text whose first line is a ``# `` title: a ``## `` line outside
    every fenced block starts one (``markdown.iter_fences``, the store's fence scanner)."""
    from haytham.format.markdown import iter_fences  # what a hand-edited file needs

    fences = list(iter_fences(text))
    starts = [f.start for f in fences]
    heads: list[int] = []
    position = 0
    for each in fences:  # a heading counts between fences only: the lines inside one are not looked at
        heads += [match.start() for match in _SPLIT.finditer(text, position, each.start)]
        position = each.end
    heads += [match.start() for match in _SPLIT.finditer(text, position)]
    sections = []
    find, size, last_head = text.find, len(text), len(heads) - 1
    for number, start in enumerate(heads):
        # the section ends before the line break after its body (and the blank line before the next)
        end = size - 1 if number == last_head else heads[number + 1] - 2
        title_end = find("\n", start, end)
        if title_end < 0:
            title_end = end
        fields: dict[str, str] = {}
        offset = title_end + 1
        while offset < end and text[offset] != "\n":
            field_end = find("\n", offset, end)
            if field_end < 0:
                field_end = end
            found = _FIELD.fullmatch(text, offset, field_end)
            if found is None:
                raise DocumentError(
                    f"{text[offset:field_end]!r} is not a '- Label: value' line",
                    path=_as_path(path),
                    line=1 + text.count("\n", 0, offset),
                )
            fields[found.group(1)] = found.group(2)
            offset = field_end + 1
        body_start = offset + 1 if offset < end else end
        index = bisect.bisect_left(starts, body_start)
        block: tuple[str, int, int, int] | None = None
        if index < len(fences) and fences[index].start < end and fences[index].closed:
            fence = fences[index]
            block = (fence.info, fence.content_start, fence.content_end, fence.indent)
        sections.append(Section(text[start + 3 : title_end], fields, start, text, body_start, end, block))
    return sections


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class StoredCheckpoint:
    """What one checkpoint file holds."""

    thread_id: str
    checkpoint_ns: str
    checkpoint: dict[str, Any]
    """LangGraph's ``Checkpoint``, ``channel_values`` included."""
    metadata: dict[str, Any]
    parent_id: str | None


@dataclass(frozen=True)
class StoredWrite:
    """One pending write: the task that made it, its index, channel, value and task path."""

    task_id: str
    index: int
    channel: str
    value: Any
    task_path: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.index)

    @property
    def replay_key(self) -> tuple[str, str, int]:
        """Where the write falls in its super-step: LangGraph's ``writes_sort_key``
        (task path, task id, index), the order live execution applies writes in."""
        return (self.task_path, self.task_id, self.index)


_KNOWN_KEYS = ("v", "id", "ts", "channel_values", "channel_versions", "versions_seen")


def _text_or_dash(value: str) -> str:
    """A one-line field: ``-`` for the empty string (the root namespace, no task path)."""
    return "-" if value == "" else write_text(value)


def _dash_or_text(raw: str) -> str:
    return read_text(raw) or ""


def render_checkpoint(stored: StoredCheckpoint, serde: Serde) -> str:
    """The markdown of one checkpoint: a summary for people, then every value exactly."""
    checkpoint, metadata = stored.checkpoint, stored.metadata
    step = metadata.get("step")
    source = metadata.get("source")
    summary = [
        ("Thread", write_text(stored.thread_id)),
        ("Namespace", _text_or_dash(stored.checkpoint_ns)),
        ("Checkpoint", write_text(checkpoint["id"])),
        ("Parent", write_text(stored.parent_id)),
        ("Step", str(step) if type(step) is int else "-"),
        ("Source", write_text(source) if isinstance(source, str) else "-"),
        ("Created", write_text(checkpoint.get("ts"))),
        ("LangGraph Version", str(checkpoint.get("v", "-"))),
        ("Format", str(FORMAT_VERSION)),
    ]
    sections = [render_section("Metadata", summary)]

    def value_section(title: str, value: Any) -> None:
        fields, body = render_value(value, serde)
        sections.append(render_section(title, fields, body))

    value_section("Run Metadata", metadata)
    value_section("Channel Versions", _sorted(checkpoint.get("channel_versions", {})))
    seen = checkpoint.get("versions_seen", {})
    value_section("Versions Seen", {node: _sorted(seen[node]) for node in sorted(seen)})
    other = {k: v for k, v in checkpoint.items() if k not in _KNOWN_KEYS}
    if other:
        value_section("Other Fields", other)
    values = checkpoint.get("channel_values", {})
    for name in sorted(values):
        value_section(f"Channel: {write_title(name)}", values[name])
    return render_document(f"LangGraph Checkpoint: {write_title(checkpoint['id'])}", sections)


def _sorted(mapping: Mapping[str, Any]) -> Any:
    """A mapping with its keys in order, so that two checkpoints' versions diff line by line."""
    if type(mapping) is not dict:
        return mapping
    return {key: mapping[key] for key in sorted(mapping)}


def parse_checkpoint(text: str, serde: Serde, path: Where = None) -> StoredCheckpoint:
    """The inverse of render_checkpoint."""
    return checkpoint_from(split_sections(text, path)[1], serde, path)


def checkpoint_from(sections: Sequence[Section], serde: Serde, path: Where = None) -> StoredCheckpoint:
    """The checkpoint a checkpoint file's sections hold (``split_sections``), its values
    decoded now: new objects each call, so a caller may change what it gets without changing
    what the next caller gets (the saver keeps the sections of a file it read, not values)."""
    if not sections or sections[0].title != "Metadata":
        raise DocumentError("the first section is not '## Metadata'", path=_as_path(path), line=1)
    summary = sections[0].fields
    for label in ("Thread", "Namespace", "Checkpoint", "Parent", "Created", "LangGraph Version"):
        if label not in summary:
            raise DocumentError(
                f"'- {label}:' is missing", path=_as_path(path), line=sections[0].line, field=label
            )
    thread_id = read_text(summary["Thread"]) or ""
    checkpoint_id = read_text(summary["Checkpoint"]) or ""
    version = summary["LangGraph Version"]
    checkpoint: dict[str, Any] = {
        "v": int(version) if version.lstrip("-").isdigit() else version,
        "id": checkpoint_id,
        "ts": read_text(summary["Created"]),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
    }
    metadata: dict[str, Any] = {}
    for section in sections[1:]:
        value = parse_value(section, serde, path)
        title = section.title
        if title.startswith("Channel: "):  # most sections of a graph with many channels
            checkpoint["channel_values"][read_text(title[9:]) or ""] = value
        elif title == "Run Metadata":
            metadata = value
        elif title == "Channel Versions":
            checkpoint["channel_versions"] = value
        elif title == "Versions Seen":
            checkpoint["versions_seen"] = value
        elif title == "Other Fields":
            checkpoint.update(value)
        else:
            raise section.error("is not a section of a checkpoint", path)
    return StoredCheckpoint(
        thread_id,
        _dash_or_text(summary["Namespace"]),
        checkpoint,
        metadata,
        read_text(summary["Parent"]),
    )


def render_writes(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str, writes: Sequence[StoredWrite], serde: Serde
) -> str:
    """The markdown of a checkpoint's pending writes, in LangGraph's replay order."""
    sections = [
        render_section(
            "Metadata",
            [
                ("Thread", write_text(thread_id)),
                ("Namespace", _text_or_dash(checkpoint_ns)),
                ("Checkpoint", write_text(checkpoint_id)),
                ("Format", str(FORMAT_VERSION)),
            ],
        )
    ]
    for write in sorted(writes, key=lambda w: w.replay_key):
        fields, body = render_value(write.value, serde)
        head = [
            ("Task", write_text(write.task_id)),
            ("Index", str(write.index)),
            ("Task Path", _text_or_dash(write.task_path)),
        ]
        sections.append(render_section(f"Write: {write_title(write.channel)}", head + fields, body))
    return render_document(f"LangGraph Pending Writes: {write_title(checkpoint_id)}", sections)


def parse_writes(text: str, serde: Serde, path: Where = None) -> list[StoredWrite]:
    """The inverse of render_writes: the writes in the order they were written."""
    return writes_from(split_sections(text, path)[1], serde, path)


def writes_from(sections: Sequence[Section], serde: Serde, path: Where = None) -> list[StoredWrite]:
    """The pending writes a writes file's sections hold, their values decoded now (as
    ``checkpoint_from``)."""
    writes = []
    for section in sections[1:]:
        if not section.title.startswith("Write: "):
            raise section.error("is not a pending write", path)
        try:
            task_id = read_text(section.fields["Task"]) or ""
            index = int(section.fields["Index"])
            task_path = _dash_or_text(section.fields["Task Path"])
        except (KeyError, ValueError):
            raise section.error("needs '- Task:', '- Index:' (a number) and '- Task Path:'", path) from None
        value = parse_value(section, serde, path)
        writes.append(StoredWrite(task_id, index, read_text(section.title[7:]) or "", value, task_path))
    return writes
