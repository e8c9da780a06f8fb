"""Ids and agent names become directory and file names; this module decides which are safe.

Two rules, because data on disk must never become unreadable by a name rule:

- ``check_name`` is the rule for names haytham creates (a new project, session, fork or
  import): portable ASCII, safe on every file system.
- ``check_path_name`` is the rule for reaching what exists: any single path component that
  is safe to join to a path (no separator, no ``..``, no NUL or other control character, not
  absolute, not hidden). The first implementation made project ids of Unicode letters
  (``café_finder_``) and haytham must still read and continue them.

User ids are data, never path components: ``check_user_id`` checks only that one is text
that fits on a line; ``user_dir_name`` is the one place a user id is turned into a folder
name, by encoding it.

A path made of such names must also stay inside the base directory: ``check_inside``
resolves it; ``check_below`` and ``PhaseDirs`` give the same answer with one ``lstat`` a
name when no symlink is on the way (a session's folder and its phase folders are checked
on every operation).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection
from pathlib import Path

from haytham.errors import UnsafeNameError, UnsafePathError
from haytham.format.patterns import lazy

MAX_NAME_LENGTH = 100
_SAFE_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WINDOWS_RESERVED = lazy(r"(CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³])(\..*)?", re.IGNORECASE)
RULE = (
    "use letters, digits, '.', '_' and '-', start with a letter or digit, "
    f"and keep to {MAX_NAME_LENGTH} characters"
)
MAX_PATH_NAME_LENGTH = 255
"""The longest path component most file systems allow (in bytes: checked in UTF-8)."""
MAX_USER_ID_LENGTH = 1000
_PATH_UNSAFE = lazy(r"[/\\\x00-\x1f\x7f]")
_USER_DIR_SAFE = lazy(r"[A-Za-z0-9_-]")
_USER_ID_UNSAFE = lazy(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
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


def is_safe_name(name: str) -> bool:
    """Whether ``check_name`` takes ``name``: for a name found in a folder (a person may put
    any file there), which a reader passes over rather than refuses."""
    try:
        check_name("name", name)
    except UnsafeNameError:
        return False
    return True


def check_path_name(kind: str, name: object) -> str:
    """Return ``name`` if it can safely name an existing directory, else raise UnsafeNameError.

    Lenient on purpose (see the module docstring): letters of any script, spaces, ``@``
    and the like are fine; what could leave the parent directory or hide a file is not.
    """
    if not isinstance(name, str):
        raise UnsafeNameError(f"{kind} must be a string, got {name!r}", field=kind)
    if not name:
        raise UnsafeNameError(f"{kind} is empty", field=kind)
    if _PATH_UNSAFE.search(name) or name.startswith(".") or os.path.isabs(name):
        raise UnsafeNameError(
            f"{kind} {name!r} cannot name a folder safely: it may not hold '/', '\\' or control "
            "characters, nor start with '.'",
            field=kind,
        )
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise UnsafeNameError(f"{kind} {name!r} cannot be stored in UTF-8", field=kind) from None
    if size > MAX_PATH_NAME_LENGTH:
        raise UnsafeNameError(
            f"{kind} {name[:20]!r}... is {size} bytes long (at most {MAX_PATH_NAME_LENGTH})", field=kind
        )
    return name


def check_new_or_existing(kind: str, name: object, parent: Path) -> str:
    """``name`` for a folder in ``parent`` that a call may create: the strict rule of
    ``check_name``, unless the folder already exists and ``check_path_name`` accepts it (a
    project of the first implementation that a new session continues)."""
    try:
        return check_name(kind, name)
    except UnsafeNameError as strict:
        try:
            existing = check_path_name(kind, name)
        except UnsafeNameError:
            raise strict from None
        if not (parent / existing).is_dir():
            raise
        return existing


def check_user_id(user_id: object) -> str:
    """Return ``user_id`` if it is text on one line, else raise UnsafeNameError.

    A user id is data (``grace@example.com``, ``user-zoë``): it is written into files,
    escaped like any text, and never used as a path component.
    """
    if not isinstance(user_id, str):
        raise UnsafeNameError(f"user_id must be a string, got {user_id!r}", field="user_id")
    if not user_id.strip():
        raise UnsafeNameError("user_id is blank", field="user_id")
    if _USER_ID_UNSAFE.search(user_id):
        raise UnsafeNameError(f"user_id {user_id!r} holds a line break or control character", field="user_id")
    if len(user_id) > MAX_USER_ID_LENGTH:
        raise UnsafeNameError(
            f"user_id {user_id[:20]!r}... is {len(user_id)} characters long (at most {MAX_USER_ID_LENGTH})",
            field="user_id",
        )
    try:
        user_id.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeNameError(f"user_id {user_id!r} cannot be stored in UTF-8", field="user_id") from None
    return user_id


def user_dir_name(user_id: str) -> str:
    """The folder name that holds a user's files: the id itself when it is a safe name (as
    haytham always did), else the id's UTF-8 bytes with the first one and every one outside
    ``A-Z a-z 0-9 _ -`` written ``%XX`` (``grace@example.com`` is ``%67race%40example%2Ecom``).
    A safe name never starts with ``%``, so the two never meet; an encoding too long for a
    folder name is ``%%`` and the id's SHA-256."""
    check_user_id(user_id)
    try:
        return check_name("user_id", user_id)
    except UnsafeNameError:
        pass
    data = user_id.encode("utf-8")
    encoded = "".join(
        chr(byte) if index and _USER_DIR_SAFE.fullmatch(chr(byte)) else f"%{byte:02X}"
        for index, byte in enumerate(data)
    )
    if len(encoded) > MAX_NAME_LENGTH:
        import hashlib  # imported by a digest: OpenSSL costs 3 ms of a start (issue 26)

        return "%%" + hashlib.sha256(data).hexdigest()
    return encoded


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


def check_no_case_twin(
    directory: Path, name: str, kind: str, siblings: Collection[str] | None = None
) -> None:
    """Refuse ``name`` when ``directory`` holds a sibling that differs only by letter case.

    Such a pair cannot exist on macOS or Windows checkouts of the same git tree.
    ``siblings``: the folder's listing when the caller has it already.
    """
    if siblings is None:
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
    """Return ``path`` if it resolves inside ``base_dir``; a symlink leading out is refused.

    The check of a session or project folder before it is opened. Writes go further, in one
    place: ``fs.check_no_symlink`` refuses any symlink at all between the folder a write is
    confined to (a held lock's, ``fs.confined``) and the file it opens, creates or removes."""
    resolved = path.resolve()
    root = base_dir.resolve()
    if resolved != root and root not in resolved.parents:
        raise UnsafePathError(
            f"{path} leads outside {base_dir} (to {resolved}): haytham never writes or reads "
            "through a symlink that leaves its base directory",
            field="path",
        )
    return path


def check_below(base_dir: Path, path: Path) -> Path:
    """``check_inside(base_dir, path)`` for a ``path`` built as ``base_dir`` joined with plain
    names: one ``lstat`` per name below ``base_dir`` instead of resolving every component of
    both paths. When none of those names is a symlink the path resolves to the resolved base
    directory plus the names, so it is inside; otherwise ``check_inside`` itself decides."""
    base_parts = base_dir.parts
    parts = path.parts
    if parts[: len(base_parts)] != base_parts or ".." in parts:
        return check_inside(base_dir, path)
    current = os.fspath(base_dir)
    for name in parts[len(base_parts) :]:
        current = os.path.join(current, name)
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            continue  # resolving goes on with the name as it is, as realpath does
        if stat.S_ISLNK(mode):
            return check_inside(base_dir, path)
    return path


class PhaseDirs:
    """A session's phase directories, each checked as ``check_inside`` checks it, without
    resolving the session directory again for every phase.

    ``check_inside(base, session / name)`` resolves every component of the path. When ``name``
    is one plain component that is not a symlink, the result is the resolved session
    directory plus ``name``, so it is inside ``base`` exactly when the session directory is;
    anything else (a symlink, an odd name, a session outside) takes ``check_inside`` itself.
    ``session_checked`` says the caller has just checked the session directory itself.
    """

    def __init__(self, base_dir: Path, session_dir: Path, *, session_checked: bool = False) -> None:
        self.base_dir = base_dir
        self.session_dir = session_dir
        if session_checked:
            self._inside = True
        else:
            root = base_dir.resolve()
            home = session_dir.resolve()
            self._inside = home == root or root in home.parents

    def get(self, name: str) -> tuple[Path, bool]:
        """The phase directory ``name`` (checked) and whether it is an existing directory."""
        path = self.session_dir / name
        plain = name not in ("", ".", "..") and "/" not in name and (os.altsep or "/") not in name
        if self._inside and plain:
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return path, False
            if not stat.S_ISLNK(mode):
                return path, stat.S_ISDIR(mode)
        checked = check_inside(self.base_dir, path)
        return checked, checked.is_dir()
