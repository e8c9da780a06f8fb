"""How single values and free-text blocks are spelled in the files, both ways.

Writing is canonical and deterministic; reading is lenient. A value that could break its
line (a newline, a leading quote, surrounding spaces, ``-`` which means unknown) is written
as a JSON string literal, so every string round-trips exactly. Numbers that fail to parse
are handed on unchanged, so the JSON Schema reports them with the value that was found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from haytham.format.patterns import lazy

UNKNOWN = "-"
MAX_WHOLE_NUMBER = 10**12
"""The largest whole number a file may hold: token counts, retry counts, phase numbers,
attempts (a trillion tokens is far past any run; a larger value is damage or an attack)."""
MAX_AMOUNT = 10.0**12
"""The largest number with a fraction a file may hold: seconds (about 31,700 years) and
costs in dollars. It also keeps out ``1e999``, which Python reads as infinity."""
_UNSAFE_CLASS = r"\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff"
_UNSAFE_CHARS = lazy(f"[{_UNSAFE_CLASS}]")
_LIST_UNSAFE = lazy(r"[,\[\]]")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_SECONDS = lazy(rf"({_NUMBER})\s*(?:s|sec|secs|seconds)?", re.IGNORECASE)
_COST = lazy(rf"\$?\s*({_NUMBER})")
_LIST_ITEM = lazy(r'\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')
TRUE_WORDS = frozenset({"true", "yes", "y", "1", "x", "on"})
FALSE_WORDS = frozenset({"false", "no", "n", "0", "", "off"})


def _needs_quotes(value: str) -> bool:
    return (
        value == ""
        or value != value.strip()
        or value.startswith('"')
        or value == UNKNOWN
        or _UNSAFE_CHARS.search(value) is not None
    )


def _quote(value: str) -> str:
    ascii_only = re.search(r"[\ud800-\udfff]", value) is not None
    return json.dumps(value, ensure_ascii=ascii_only)


def write_text(value: str | None) -> str:
    """One line of free text; None is written as ``-``."""
    if value is None:
        return UNKNOWN
    return _quote(value) if _needs_quotes(value) else value


def write_title(value: str) -> str:
    """Free text at the end of a ``#`` heading: like write_text, and quoted when it ends in
    ``#``, which markdown would take for the heading's closing sequence."""
    return _quote(value) if _needs_quotes(value) or value.endswith("#") else value


def read_text(raw: str) -> str | None:
    """The inverse of write_text, lenient about a hand-written unquoted value."""
    raw = raw.strip()
    if raw == UNKNOWN:
        return None
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        try:
            decoded = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(decoded, str):
            return decoded
    return raw


_PLAIN_CHAR = r"[\w.,()/'+=?%;:@$!&-]"
PLAIN_TEXT = rf"[^\W_]{_PLAIN_CHAR}*(?: {_PLAIN_CHAR}+)*"
"""A regular expression for the text that ``write_text`` writes as it is and ``read_text``
reads back as itself, in any markdown line: a letter or digit first, single spaces, no
character markdown or the value syntax gives a meaning. The kinds' canonical readers use
it; any other value is left to the general reader."""
WHOLE_NUMBER = r"[1-9][0-9]{0,11}"
"""A regular expression for a whole number from 1 to just under ``MAX_WHOLE_NUMBER``, as
``str(int)`` writes it."""
COUNT = r"(?:0|[1-9][0-9]{0,11})"
"""A regular expression for a whole number from 0 to just under ``MAX_WHOLE_NUMBER``."""
SECONDS = r"(?:0|[1-9][0-9]{0,11})\.[0-9]s"
"""A regular expression for what ``write_seconds`` writes for a number of seconds."""
COST = r"\$(?:0|[1-9][0-9]{0,11})\.[0-9]{4}"
"""A regular expression for what ``write_cost`` writes for an amount."""
NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
"""A regular expression for an agent's name (the schemas' pattern)."""
TIMESTAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z"
"""A regular expression for the UTC timestamps the schemas accept, in ASCII digits."""


def write_int(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)


def read_int(raw: str) -> int | str | None:
    raw = raw.strip()
    if raw == UNKNOWN:
        return None
    try:
        return int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        return raw


def write_seconds(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:.1f}s"


def read_seconds(raw: str) -> float | str | None:
    raw = raw.strip()
    if raw == UNKNOWN:
        return None
    found = _SECONDS.fullmatch(raw)
    return float(found.group(1)) if found else raw


def write_cost(value: float | None) -> str:
    return UNKNOWN if value is None else f"${value:.4f}"


def read_cost(raw: str) -> float | str | None:
    raw = raw.strip()
    if raw == UNKNOWN:
        return None
    found = _COST.fullmatch(raw)
    return float(found.group(1)) if found else raw


def write_bool(value: bool) -> str:
    return "true" if value else "false"


def read_bool(raw: str) -> bool | str:
    word = raw.strip().casefold()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return raw.strip()


def write_list(items: Sequence[str], empty: str = "") -> str:
    """``[a, b]``; items that hold a comma or bracket, or equal ``empty``, are quoted."""
    if not items:
        return f"[{empty}]"
    parts = []
    for item in items:
        unsafe = _needs_quotes(item) or _LIST_UNSAFE.search(item) or item in ("", empty)
        parts.append(_quote(item) if unsafe else item)
    return "[" + ", ".join(parts) + "]"


def read_list(raw: str, empty: str = "") -> list[str] | str:
    raw = raw.strip()
    if raw == UNKNOWN:
        return []
    if not (raw.startswith("[") and raw.endswith("]")):
        return raw
    inner = raw[1:-1].strip()
    if inner in ("", empty):
        return []
    items: list[str] = []
    position = 0
    while position < len(inner):
        found = _LIST_ITEM.match(inner, position)
        if found is None or found.end() == position:
            return raw
        text = read_text(found.group(1))
        items.append("" if text is None else text)
        position = found.end()
    if inner.rstrip().endswith(","):
        return raw
    return items


def write_pairs(pairs: Sequence[tuple[str, str]]) -> str:
    """``name: value, name: value`` (names are safe agent names, values have no comma)."""
    return ", ".join(f"{name}: {value}" for name, value in pairs) if pairs else "none"


def read_pairs(raw: str) -> list[tuple[str, str]] | str:
    raw = raw.strip()
    if raw.casefold() in ("", "none", UNKNOWN):
        return []
    pairs = []
    for part in raw.split(","):
        name, colon, value = part.partition(":")
        if not colon:
            return raw
        pairs.append((name.strip(), value.strip()))
    return pairs


FENCE_INFO = "verbatim"


def write_fenced(text: str) -> str:
    """A fenced block whose lines are exactly ``text``; longer fence than any run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    info = FENCE_INFO
    if _is_crlf(text):
        info += " crlf"
        text = text.replace("\r\n", "\n")
    return f"{fence}{info}\n{text}\n{fence}"


def read_fenced(info: str, lines: Sequence[str]) -> str:
    """The text of a fenced block's content lines, restoring CRLF if the info says so."""
    return read_fenced_text(info, "\n".join(lines))


def read_fenced_text(info: str, text: str) -> str:
    """``read_fenced`` of the content lines already joined by line breaks."""
    words = info.split()
    if words[:1] == [FENCE_INFO] and "crlf" in words[1:]:
        text = text.replace("\n", "\r\n")
    return text


def _is_crlf(text: str) -> bool:
    """True when every line break in ``text`` is CRLF and there is at least one."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n") == text.count("\r")
