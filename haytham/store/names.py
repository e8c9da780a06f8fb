"""Ids and agent names become directory and file names; this module decides which are safe."""

from __future__ import annotations

import os
import re
from pathlib import Path

from haytham.errors import UnsafeNameError, UnsafePathError

MAX_NAME_LENGTH = 100
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WINDOWS_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³])(\..*)?", re.IGNORECASE)
RULE = (
    "use letters, digits, '.', '_' and '-', start with a letter or digit, "
    f"and keep to {MAX_NAME_LENGTH} characters"
)
RESERVED_AGENT_NAMES = frozenset({"checkpoint", "user_feedback", "session_manifest"})


def check_name(kind: str, name: object) -> str:
    """Return ``name`` if it is safe as one path component, else raise UnsafeNameError.

    ``kind`` is the argument's name (``project_id``, ``agent_name``) used in the message.
    """
    if not isinstance(name, str):
        raise UnsafeNameError(f"{kind} must be a string, got {name!r}", field=kind)
    if not name:
        raise UnsafeNameError(f"{kind} is empty: {RULE}", field=kind)
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafeNameError(f"{kind} {name[:20]!r}... is {len(name)} characters long: {RULE}", field=kind)
    if _SAFE_NAME.fullmatch(name) is None or name.endswith("."):
        raise UnsafeNameError(f"{kind} {name!r} is not a safe name: {RULE}", field=kind)
    if _WINDOWS_RESERVED.fullmatch(name):
        raise UnsafeNameError(
            f"{kind} {name!r} is a name Windows reserves for devices: choose another",
            field=kind,
        )
    return name


def check_agent_name(name: object) -> str:
    """Like check_name, and refuse the names of the session's own files."""
    agent = check_name("agent_name", name)
    if agent.lower() in RESERVED_AGENT_NAMES:
        raise UnsafeNameError(
            f"agent_name {agent!r} is reserved for the phase's own file: "
            f"choose a name other than {', '.join(sorted(RESERVED_AGENT_NAMES))}",
            field="agent_name",
        )
    return agent


def check_no_case_twin(directory: Path, name: str, kind: str) -> None:
    """Refuse ``name`` when ``directory`` holds a sibling that differs only by letter case.

    Such a pair cannot exist on macOS or Windows checkouts of the same git tree.
    """
    try:
        siblings = os.listdir(directory)
    except FileNotFoundError:
        return
    if name in siblings:
        return
    folded = name.casefold()
    for sibling in siblings:
        if sibling != name and sibling.casefold() == folded:
            raise UnsafePathError(
                f"{kind} {name!r} differs only by letter case from the existing {sibling!r} in "
                f"{directory}: names must stay distinct on case-insensitive file systems",
                field=kind,
            )


def check_inside(base_dir: Path, path: Path) -> Path:
    """Return ``path`` if it resolves inside ``base_dir``; a symlink leading out is refused."""
    resolved = path.resolve()
    root = base_dir.resolve()
    if resolved != root and root not in resolved.parents:
        raise UnsafePathError(
            f"{path} leads outside {base_dir} (to {resolved}): haytham never writes or reads "
            "through a symlink that leaves its base directory",
            field="path",
        )
    return path
