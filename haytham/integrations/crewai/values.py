"""A CrewAI flow state as readable JSON, and back, without pickle.

A state is a ``dict`` (or a pydantic model, dumped with ``model_dump(mode="json")``, as
CrewAI's own SQLite store does). JSON-native values (text, numbers, booleans, null, lists
and objects with text keys) are written as they are, so the file reads like the state. Any
other value is one of an allow-list of types, written as a tagged object
``{"$haytham": TYPE, "value": ...}`` and read back as that type: ``datetime``, ``date``,
``time``, ``timedelta``, ``Decimal``, ``UUID``, ``bytes`` (base64), ``tuple``, ``set``,
``frozenset``, ``Path``, a ``dict`` whose keys are not all text (``[[key, value], ...]``),
and a dict that holds a ``"$haytham"`` key itself (escaped the same way, so no user value is
ever taken for a tag). A nested pydantic model is dumped to JSON like a model state. Any
other value is refused (``UnencodableValueError``, naming where it is in the state): nothing
is ever written that could only be read back by running code.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import PurePath, PurePosixPath
from typing import Any

from pydantic import BaseModel

from haytham.errors import InvalidArgumentError, UnencodableValueError
from haytham.format.patterns import lazy

TAG = "$haytham"
"""The key of a tagged value: ``{"$haytham": "datetime", "value": "2026-01-02T03:04:05"}``."""


def _where(path: str) -> str:
    return f"state{path}"


def _tagged(kind: str, value: Any) -> dict[str, Any]:
    return {TAG: kind, "value": value}


def encode(value: Any, path: str = "") -> Any:
    """``value`` as JSON-native data: as it is when it is JSON-native, else tagged."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return _tagged("float", repr(value))
        return value
    if isinstance(value, list):
        return [encode(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value) and TAG not in value:
            return {key: encode(item, f"{path}[{key!r}]") for key, item in value.items()}
        return _tagged(
            "dict",
            [
                [encode(key, f"{path}.keys()"), encode(item, f"{path}[{key!r}]")]
                for key, item in value.items()
            ],
        )
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        for kind, candidate in _ENCODERS.items():
            if isinstance(value, kind):
                encoder = candidate
                break
    if encoder is None:
        raise UnencodableValueError(
            f"{_where(path)} is a {type(value).__module__}.{type(value).__qualname__}, which haytham "
            "does not store: use JSON-native values (str, int, float, bool, None, list, dict), a "
            "pydantic model, or one of datetime, date, time, timedelta, Decimal, UUID, bytes, tuple, "
            "set, frozenset, Path",
            field=_where(path),
        )
    return encoder(value, path)


def _sorted_items(items: Any, path: str) -> list[Any]:
    encoded = [encode(item, f"{path}{{}}") for item in items]
    return sorted(encoded, key=lambda item: json.dumps(item, sort_keys=True))


_ENCODERS: dict[type, Callable[[Any, str], Any]] = {
    dt.datetime: lambda v, p: _tagged("datetime", v.isoformat()),
    dt.date: lambda v, p: _tagged("date", v.isoformat()),
    dt.time: lambda v, p: _tagged("time", v.isoformat()),
    dt.timedelta: lambda v, p: _tagged("timedelta", [v.days, v.seconds, v.microseconds]),
    Decimal: lambda v, p: _tagged("Decimal", str(v)),
    uuid.UUID: lambda v, p: _tagged("UUID", str(v)),
    bytes: lambda v, p: _tagged("bytes", base64.b64encode(v).decode("ascii")),
    tuple: lambda v, p: _tagged("tuple", [encode(item, f"{p}[{i}]") for i, item in enumerate(v)]),
    set: lambda v, p: _tagged("set", _sorted_items(v, p)),
    frozenset: lambda v, p: _tagged("frozenset", _sorted_items(v, p)),
    PurePath: lambda v, p: _tagged("Path", v.as_posix()),
}
"""The allow-list: each type, in the order ``isinstance`` tries them (a datetime is a date)."""


def _decode_tagged(kind: str, value: Any, path: str) -> Any:
    if kind == "datetime":
        return dt.datetime.fromisoformat(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    if kind == "time":
        return dt.time.fromisoformat(value)
    if kind == "timedelta":
        return dt.timedelta(days=value[0], seconds=value[1], microseconds=value[2])
    if kind == "Decimal":
        return Decimal(value)
    if kind == "UUID":
        return uuid.UUID(value)
    if kind == "bytes":
        return base64.b64decode(value.encode("ascii"), validate=True)
    if kind == "float":
        return float(value)
    if kind == "Path":
        return PurePosixPath(value) if "\\" in value else PurePath(value)
    if kind in ("tuple", "set", "frozenset"):
        items = [decode(item, f"{path}[{index}]") for index, item in enumerate(value)]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
    if kind == "dict":
        return {
            decode(key, f"{path}.keys()"): decode(item, f"{path}[{index}]")
            for index, (key, item) in enumerate(value)
        }
    raise InvalidArgumentError(f"{_where(path)} has an unknown {TAG} tag {kind!r}", field=_where(path))


def decode(value: Any, path: str = "") -> Any:
    """The value ``encode`` was given, from what it returned."""
    if isinstance(value, list):
        return [decode(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        kind = value.get(TAG)
        if isinstance(kind, str) and set(value) == {TAG, "value"}:
            try:
                return _decode_tagged(kind, value["value"], path)
            except (TypeError, ValueError, IndexError, KeyError) as error:
                raise InvalidArgumentError(
                    f"{_where(path)} is not a readable {kind}: {error}", field=_where(path)
                ) from None
        return {key: decode(item, f"{path}[{key!r}]") for key, item in value.items()}
    return value


def state_dict(state_data: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """A state as CrewAI hands it over (a dict or a pydantic model), as a dict."""
    if isinstance(state_data, BaseModel):
        return state_data.model_dump(mode="json")
    if isinstance(state_data, Mapping):
        return dict(state_data)
    raise InvalidArgumentError(
        f"state_data must be a dict or a pydantic model, got {type(state_data).__name__}", field="state_data"
    )


_UNSAFE = lazy("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")
"""Characters that could break a line or a file: controls (but the newline), the line and
paragraph separators, the byte order mark and lone surrogates."""


def _escape_unsafe(text: str) -> str:
    """JSON text with each ``_UNSAFE`` character written as ``\\uXXXX``: JSON itself escapes
    the controls inside strings, so what is left is only ever inside a string, where the
    escape means the same character."""
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def dumps(state: Mapping[str, Any]) -> str:
    """The encoded state as indented JSON: one value a line, so a diff of two saves shows
    only the lines that changed. Unicode stays readable; unsafe characters are escaped."""
    text = json.dumps(encode(dict(state)), indent=2, ensure_ascii=False, allow_nan=False)
    return _escape_unsafe(text)


def loads(text: str) -> dict[str, Any]:
    """The state ``dumps`` wrote."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise InvalidArgumentError("a stored state is not a JSON object", field="state")
    decoded = decode(data)
    assert isinstance(decoded, dict)
    return decoded
