"""``## Tries`` of an agent output: every try of the run that wrote it, one line each.

::

    ## Tries
    - Try 1: 2026-12-05T06:00:00Z to 2026-12-05T06:00:01Z; rate_limit; then waited 2.0s; E: 429
    - Try 2: 2026-12-05T06:00:03Z to 2026-12-05T06:00:04Z; timeout; then waited 1.0s; E: "a\\nb"
    - Try 3: 2026-12-05T06:00:05Z to 2026-12-05T06:00:06Z; completed

Each line: when the try started and ended (``-`` for a try that never ended), how it ended
(``haytham.records.TryOutcome``), how long the runner waited before the next try (only
when there was a next), and the error's class name and message (the message written as
any free text is, ``values.write_text``: quoted when it holds a line break). The section is
written only for an agent run under a retry policy or a timeout, so the files of every
other run are as they were. A hand edit is read back and checked: a line out of this
shape, a number out of order or an unknown outcome is an error at its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haytham.format import values as v
from haytham.format.patterns import lazy
from haytham.format.reader import Reader
from haytham.format.sections import SectionSpec
from haytham.records import TRY_OUTCOMES, AgentTry

TRIES = SectionSpec("Tries", required=False, attr="tries")
"""Written after ``## Execution Details`` when the output has tries, one line each."""
LABEL = "Try "

_LINE = lazy(
    r"(?P<started>\S+) to (?P<ended>\S+); (?P<outcome>[a-z_]+)"
    r"(?:; then waited (?P<wait>\S+))?"
    r"(?:; (?P<error_type>[A-Za-z_][\w.]*): (?P<message>.*))?"
)
"""The value after ``- Try N:``; the message is the rest of the line."""


def write_tries(tries: Sequence[AgentTry]) -> list[str]:
    """The section's lines (its heading first); no lines for no tries."""
    if not tries:
        return []
    lines = [TRIES.heading]
    for found in tries:
        text = f"- {LABEL}{found.number}: {v.write_text(found.started)} to {v.write_text(found.ended)}; "
        text += found.outcome
        if found.wait is not None:
            text += f"; then waited {v.write_seconds(found.wait)}"
        if found.error_type is not None:
            text += f"; {found.error_type}: {v.write_text(found.error_message or '')}"
        lines.append(text)
    return lines


def read_tries(reader: Reader) -> list[dict[str, Any]]:
    """The tries of the document's ``## Tries`` as plain data (the schema checks them; their
    lines are recorded for its errors); errors at their lines for lines out of shape."""
    section = reader.section(TRIES)
    if section is None:
        return []
    reader.lines[("tries",)] = section.line
    tries: list[dict[str, Any]] = []
    for key, field in reader.fields(section).items():
        if not key.startswith(LABEL.strip().casefold() + " "):
            reader.error(field.line, field.label, f"is not a try (expected '- {LABEL}N: ...')")
            continue
        number = v.read_int(field.label[len(LABEL) :])
        found = _LINE.fullmatch(field.value)
        if found is None:
            reader.error(
                field.line,
                field.label,
                f"{field.value!r} is not 'STARTED to ENDED; OUTCOME[; then waited Ns][; ErrorType: message]'",
            )
            continue
        if number != len(tries) + 1:
            reader.error(field.line, field.label, f"is out of order (expected {LABEL}{len(tries) + 1})")
            continue
        if found["outcome"] not in TRY_OUTCOMES:
            reader.error(
                field.line, field.label, f"{found['outcome']!r} is not one of {', '.join(TRY_OUTCOMES)}"
            )
            continue
        path = ("tries", len(tries))
        reader.lines[path] = field.line
        reader.labels_at[path] = field.label
        message = found["message"]
        tries.append(
            {
                "number": number,
                "started": v.read_text(found["started"]),
                "ended": v.read_text(found["ended"]),
                "outcome": found["outcome"],
                "wait": None if found["wait"] is None else v.read_seconds(found["wait"]),
                "error_type": found["error_type"],
                "error_message": None if message is None else v.read_text(message) or "",
            }
        )
    return tries


def as_tries(items: Sequence[Any]) -> tuple[AgentTry, ...]:
    """Tries given as records or as plain data (what ``read_tries`` gives, or JSON)."""
    return tuple(item if isinstance(item, AgentTry) else AgentTry(**item) for item in items)
