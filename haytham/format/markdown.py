"""A markdown section parser on mistune: top-level headings split a document into sections.

mistune decides what is a heading (so a ``## Output`` line inside a fenced block, a block
quote or an HTML block is not one); this module records where each top-level heading starts,
which mistune's tokens do not carry, and turns the result into frozen dataclasses with
1-based line numbers. Section bodies are slices of the source, never re-rendered text.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterator
from typing import Any

from haytham.format.patterns import lazy
from haytham.frozen import frozen


@frozen
class Section:
    """A heading and the source lines up to the next heading of the same or a higher level."""

    title: str
    """The heading's text as mistune reads it: markers removed, inline markdown resolved
    (``Metadata``). Use it to recognise a section."""
    source_title: str
    """The heading's text as written: markers and an ATX closing ``#`` sequence removed, but
    no inline markdown resolved (``*a* \\#`` stays as is). Use it to read a value from it."""
    level: int
    """1 for ``#``, 2 for ``##``."""
    line: int
    """The 1-based line of the heading."""
    body: str
    """The source after the heading line, up to the next section's heading."""
    body_line: int
    """The 1-based line where ``body`` starts."""


@frozen
class Document:
    """A parsed markdown file: its title heading and its sections, in order."""

    title: Section | None
    """The first level-1 heading, if the document starts with one."""
    sections: tuple[Section, ...]
    """Every other top-level heading of level 1 or 2, in order."""

    def find(self, title: str) -> Section | None:
        """The first section whose title matches ``title`` ignoring case and spacing."""
        by_title: dict[str, Section] | None = self.__dict__.get("_by_title")
        if by_title is None:  # made on first use; not a field, so equality is unchanged
            by_title = {}
            for section in self.sections:
                by_title.setdefault(normalise_label(section.title), section)
            object.__setattr__(self, "_by_title", by_title)
        return by_title.get(normalise_label(title))


@functools.cache
def _mistune_parser() -> Any:
    """mistune's parser, made with the heading-locating block parser on first use: files in
    the shape haytham writes never need it (``_fast_headings``), so a process that reads only
    such files never imports mistune."""
    import mistune
    from mistune.block_parser import BlockParser
    from mistune.core import BlockState

    class _LocatingState(BlockState):
        """A BlockState that remembers where its newest paragraph began."""

        paragraph_start: int = 0

        def add_paragraph(self, text: str) -> None:
            last = self.last_token()
            if not (last and last["type"] == "paragraph"):
                self.paragraph_start = self.cursor
            super().add_paragraph(text)

    class _LocatingBlockParser(BlockParser):
        """Records ``(offset, token)`` for every top-level heading as mistune finds it."""

        state_cls = _LocatingState

        def parse_method(self, m: re.Match[str], state: BlockState) -> int | None:
            last_before = state.last_token()
            end = super().parse_method(m, state)
            if state.parent is None and m.lastgroup in ("atx_heading", "setex_heading"):
                token = state.last_token()
                if token is not None and token["type"] == "heading" and token is not last_before:
                    start = m.start()
                    headings: list[tuple[int, dict[str, Any]]] = state.env.setdefault("headings", [])
                    headings.append((start, token))
                elif (
                    m.lastgroup == "setex_heading"
                    and last_before is not None
                    and last_before["type"] == "heading"
                    and isinstance(state, _LocatingState)
                ):
                    # A setext underline turns the paragraph above it into the heading.
                    headings = state.env.setdefault("headings", [])
                    headings.append((state.paragraph_start, last_before))
            return end

    return mistune.Markdown(renderer=None, block=_LocatingBlockParser(), plugins=[]), _LocatingState


_WS = lazy(r"\s+")


_NORMALISED: dict[str, str] = {}


def normalise_label(label: str) -> str:
    """Labels compare without regard to case or runs of white space."""
    found = _NORMALISED.get(label)
    if found is None:
        found = _WS.sub(" ", label).strip().casefold()
        if len(label) <= 200 and len(_NORMALISED) < 4096:  # the few labels files use, kept
            _NORMALISED[label] = found
    return found


def _inline_text(children: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for child in children:
        if "raw" in child:
            parts.append(child["raw"])
        elif "children" in child:
            parts.append(_inline_text(child["children"]))
        elif child.get("type") in ("softbreak", "linebreak"):
            parts.append(" ")
    return "".join(parts)


def parse_document(text: str, *, fast: bool = True) -> Document:
    """Split ``text`` into its title and its level-1/2 sections.

    Files in the simple shape haytham writes go through a line scanner (``_fast_headings``)
    that finds exactly the headings mistune would; anything it does not fully understand
    goes to mistune (``parse_with_mistune``). Both give the same Document; ``fast=False``
    always asks mistune (the tests compare the two).
    """
    found = _fast_headings(text) if fast else None
    if found is None:
        return parse_with_mistune(text)
    sections: list[Section] = []
    line = 1
    counted = 0
    for index, (start, level, title) in enumerate(found):
        end = found[index + 1][0] if index + 1 < len(found) else len(text)
        newline = text.find("\n", start)
        heading_end = len(text) if newline < 0 else newline + 1
        line += text.count("\n", counted, start)
        body_line = line + (newline >= 0)
        counted = start
        sections.append(Section(title, title, level, line, text[heading_end:end], body_line))
    return _document(sections)


def parse_with_mistune(text: str) -> Document:
    """``parse_document`` by mistune alone: any text, however it is written.

    Lines end at LF only. mistune would also end a line at a lone CR, and its offsets would
    then drift, so it parses a copy with each CR turned into a space (same length); bodies are
    sliced from ``text`` itself, so a CR inside a section survives.
    """
    parser, state_class = _mistune_parser()
    state = state_class()
    parser.parse(text.replace("\r", " "), state)
    found: list[tuple[int, dict[str, Any]]] = state.env.get("headings", [])
    line_starts = line_offsets(text)
    heads = sorted(
        ((start, token) for start, token in found if token["attrs"]["level"] <= 2),
        key=lambda item: item[0],
    )
    sections: list[Section] = []
    for index, (start, token) in enumerate(heads):
        end = heads[index + 1][0] if index + 1 < len(heads) else len(text)
        heading_end = _heading_end(text, start, token)
        line = bisect.bisect_right(line_starts, start)
        sections.append(
            Section(
                title=_inline_text(token.get("children", [])).strip(),
                source_title=_source_title(text[start:heading_end], token),
                level=token["attrs"]["level"],
                line=line,
                body=text[heading_end:end],
                body_line=bisect.bisect_right(line_starts, heading_end),
            )
        )
    return _document(sections)


def _document(sections: list[Section]) -> Document:
    title = sections[0] if sections and sections[0].level == 1 else None
    return Document(title=title, sections=tuple(sections[1:] if title else sections))


# The line scanner. It accepts a document only when every line outside fenced code is of a
# kind whose meaning cannot depend on CommonMark's finer rules, so that its headings are
# exactly mistune's; on anything else it returns None and mistune decides. Accepted outside
# fences (a whitelist; each line matches at most one kind):
#   - blank lines (spaces and tabs only);
#   - paragraph lines starting with a character that starts no block (not white space, `#`,
#     `>`, `<`, a backtick, `~`, `-`, `*`, `+`, `=`, `_`, `[`, `]`, `\` or a digit), or with a
#     number not followed by `.` or `)`;
#   - list items `- x`, `* x`, `+ x`, `1. x`, `1) x` whose text starts the same way (or is a
#     checkbox `[x]` not followed by `:`);
#   - lines indented by spaces whose text starts the same way;
#   - headings `# Title` / `## Title` of plain words (letters, digits, single spaces,
#     punctuation that is not markdown, `_` only inside a word), and `###...` lines (level 3
#     and more are not sections).
# Fences open at the start of a line and close as mistune closes them. Anything else (HTML,
# block quotes, setext underlines, thematic breaks, indented or nested fences, tabs before
# text, link reference definitions, CR, control characters, a BOM) sends the whole document
# to mistune.
_UNSAFE_CHARS = lazy("[\\x00-\\x08\\x0b-\\x1f\\x7f\\x85\\u2028\\u2029\\ufeff]")
_ASCII_CONTROL = bytes([*range(0x09), *range(0x0B, 0x20), 0x7F])
"""The ASCII characters of ``_UNSAFE_CHARS``: all control characters but tab and LF."""
_TITLE_CHAR = r"""(?:[^\W_]|[:.,()'"/+=?%;@$-]|(?<=[^\W_])_(?=[^\W_]))"""
_SAFE_TITLE = rf"{_TITLE_CHAR}+(?: {_TITLE_CHAR}+)*"
_PLAIN_FIRST = r"[^\s#><`~\-*+=_\[\]\\\d]"
_NUMBER = r"\d+(?![\d.)])"
_TEXT_FIRST = rf"(?:{_PLAIN_FIRST}|{_NUMBER}|\[[ xX]?\](?!:))"
_SAFE_START = (
    rf"(?:[-*+] {_TEXT_FIRST}"
    rf"|\d{{1,9}}[.)] {_TEXT_FIRST}"
    rf"|{_PLAIN_FIRST}"
    rf"|{_NUMBER}"
    rf"|#{{1,2}} {_SAFE_TITLE}$"
    r"|###"
    rf"| +(?:{_PLAIN_FIRST}|{_NUMBER})"
    r"|[ \t]*$)"
)
"""How a line outside fences may start (what follows on the line does not matter)."""
_SAFE_FIRST_LINE = lazy(_SAFE_START, re.M)
_UNSAFE_NEXT_LINE = lazy(rf"\n(?!{_SAFE_START})", re.M)
_HEADING_START = lazy(r"\n#")


def plain_characters(text: str) -> bool:
    """Whether ``text`` holds no control character but tab and LF, and no character that
    some reader takes for a line break or ignores (NEL, LS, PS, BOM): the texts the line
    scanner and the kinds' canonical readers accept."""
    if text.isascii():  # control characters are found faster in bytes
        return len(text.encode("ascii").translate(None, _ASCII_CONTROL)) == len(text)
    return _UNSAFE_CHARS.search(text) is None


def _fast_headings(text: str) -> list[tuple[int, int, str]] | None:
    """``(offset, level, title)`` of each level-1/2 heading, or None to let mistune decide."""
    if not plain_characters(text):
        return None
    found: list[tuple[int, int, str]] = []
    position = 0
    size = len(text)
    fences = iter_fences(text) if "```" in text or "~~~" in text else iter(())
    while position <= size:
        fence = next(fences, None)
        if fence is not None and fence.indent:  # an indented fence may belong to a list item
            return None
        stop = size if fence is None else fence.start
        if _SAFE_FIRST_LINE.match(text, position, stop) is None or _UNSAFE_NEXT_LINE.search(
            text, position, stop
        ):
            return None
        starts = [m.start() + 1 for m in _HEADING_START.finditer(text, position, stop)]
        if text.startswith("#", position) and position < stop:
            starts.insert(0, position)
        for start in starts:
            level = 1 if text.startswith("# ", start) else 2 if text.startswith("## ", start) else 0
            if level:
                end = text.find("\n", start, stop)
                found.append((start, level, text[start + level + 1 : stop if end < 0 else end]))
        if fence is None or not fence.closed:
            break
        position = fence.end
    return found


_ATX_OPEN = lazy(r" {0,3}#{1,6}(?=[ \t]|$)")
_ATX_CLOSE = lazy(r"(?:^|[ \t]+)#+[ \t]*$")


def _source_title(source: str, token: dict[str, Any]) -> str:
    """The text of a heading whose source lines are ``source``, without inline parsing."""
    lines = source.rstrip("\n").split("\n")
    if token.get("style") == "setext":
        return " ".join(line.strip(" \t") for line in lines[:-1])
    content = _ATX_OPEN.sub("", lines[0], count=1).strip(" \t")
    return _ATX_CLOSE.sub("", content).strip(" \t")


def _heading_end(text: str, start: int, token: dict[str, Any]) -> int:
    """Offset just after the heading's last line (two lines for a setext heading)."""
    lines = 2 if token.get("style") == "setext" else 1
    position = start
    for _ in range(lines):
        newline = text.find("\n", position)
        position = len(text) if newline < 0 else newline + 1
    return position


def line_offsets(text: str) -> list[int]:
    """The offset where each line of ``text`` starts."""
    offsets = [0]
    find = text.find
    position = find("\n")
    while position >= 0:
        offsets.append(position + 1)
        position = find("\n", position + 1)
    return offsets


# Fenced code blocks: the one implementation. A fence is what mistune (CommonMark) takes for
# one at the top level of a text: an opening line of 0-3 spaces and 3 or more backticks or
# tildes (a backtick fence's info string has no backtick), closed by the first later line of
# 0-3 spaces and at least as many of the same character and nothing but spaces and tabs, or
# else running to the end. The patterns are mistune's own. A bare CR counts as a space, as in
# ``parse_with_mistune``. The tests compare it with mistune on generated texts and on every
# CommonMark example.
_FENCE_OPENER = lazy(r"^( {0,3})(`{3,}|~{3,})[ \t]*(.*?)$", re.M)


@functools.lru_cache(maxsize=64)
def _fence_closer(marker: str) -> re.Pattern[str]:
    """mistune's own closing-line pattern for a fence opened by ``marker``."""
    return re.compile(r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*(?:\n|$)", re.M)


def _find_closer(source: str, marker: str, start: int) -> re.Match[str] | None:
    """``_fence_closer(marker).search(source, start)`` (``start`` a line start), found by
    looking only at the lines where ``marker`` occurs within three characters of the line's
    start: a fenced value of 50 KB is skipped with ``str.find`` rather than tried line by line."""
    pattern = _fence_closer(marker)
    position = start
    while True:
        found = source.find(marker, position)
        if found < 0:
            return None
        line_start = max(source.rfind("\n", start, found) + 1, start)
        if found - line_start <= 3:
            closer = pattern.match(source, line_start)
            if closer is not None:
                return closer
        next_line = source.find("\n", found)
        if next_line < 0:
            return None
        position = next_line + 1


@frozen
class Fence:
    """A fenced code block of a text, by offsets into it."""

    start: int
    """Where the opening line starts."""
    end: int
    """Just after the closing line and its line break (the text's end if never closed)."""
    content_start: int
    content_end: int
    """The content: from the line after the opener to the start of the closing line."""
    info: str
    """The info string, stripped (``verbatim crlf``)."""
    indent: int
    """Spaces before the opening fence; as many are removed from each content line."""
    closed: bool


def iter_fences(text: str, start: int = 0, stop: int | None = None) -> Iterator[Fence]:
    """The fenced blocks of ``text`` in order, from ``start`` (a line start); with ``stop``
    only those that open before it (they may close after it). Lazy: a caller that stops
    early scans no further than it needed to."""
    source = text.replace("\r", " ") if "\r" in text else text
    size = len(text)
    limit = size if stop is None else stop
    position = start
    while position < limit or position == limit == 0:
        opener = _FENCE_OPENER.search(source, position, limit)
        if opener is None:
            return
        marker, info = opener.group(2), opener.group(3)
        if marker[0] == "`" and "`" in info:  # a paragraph line, not a fence
            position = opener.end() + 1
            continue
        content_start = min(opener.end() + 1, size)
        closer = _find_closer(source, marker, content_start) if content_start < size else None
        indent = len(opener.group(1))
        if closer is None:
            yield Fence(opener.start(), size, content_start, size, info.strip(), indent, closed=False)
            return
        yield Fence(opener.start(), closer.end(), content_start, closer.start(), info.strip(), indent, True)
        position = closer.end()
        if position == size:
            return


def fence_lines(text: str, fence: Fence) -> list[str]:
    """The content lines of ``fence`` in ``text``, its indentation removed as mistune does."""
    content = text[fence.content_start : fence.content_end]
    if not content:
        return []
    lines = content.removesuffix("\n").split("\n")
    if fence.indent:
        lines = [_strip_spaces(line, fence.indent) for line in lines]
    return lines


def _strip_spaces(line: str, most: int) -> str:
    count = 0
    while count < most and count < len(line) and line[count] == " ":
        count += 1
    return line[count:]


def first_fence(body: str, body_line: int, after_line: int = 0) -> tuple[str, list[str]] | None:
    """The info and content lines of the first fenced block of ``body`` (whose first line is
    ``body_line``) that opens after line ``after_line``."""
    line = body_line
    counted = 0
    for fence in iter_fences(body):
        line += body.count("\n", counted, fence.start)
        counted = fence.start
        if line > after_line:
            return fence.info, fence_lines(body, fence)
    return None


def iter_unfenced_lines(body: str, first_line: int) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for the lines of ``body`` outside fenced code blocks."""
    if len(body) <= 65536 and "```" not in body and "~~~" not in body:
        return zip(itertools.count(first_line), body.split("\n"))  # no fence can open
    return _iter_unfenced_lines(body, first_line)


def _iter_unfenced_lines(body: str, first_line: int) -> Iterator[tuple[int, str]]:
    number = first_line
    position = 0
    for fence in iter_fences(body):
        for line in _lazy_lines(body, position, fence.start):
            yield number, line
            number += 1
        number += body.count("\n", fence.start, fence.end)
        position = fence.end
        if not (fence.closed and body.endswith("\n", 0, fence.end)):
            return  # the fence runs to the end of the text
    yield from zip(itertools.count(number), _lazy_lines(body, position, None))


def _lazy_lines(text: str, start: int, stop: int | None) -> Iterator[str]:
    """The lines of ``text[start:stop]`` split on LF only, without copying it all at once.

    ``stop`` is a line start, so the lines before it are whole; with None the last piece
    (after the final LF, maybe empty) is a line too, as ``str.split`` gives it."""
    position = start
    while True:
        newline = text.find("\n", position, len(text) if stop is None else stop)
        if newline < 0:
            if stop is None:
                yield text[position:]
            return
        yield text[position:newline]
        position = newline + 1
