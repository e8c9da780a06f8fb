"""The exceptions haytham raises: one base class, a few named kinds.

Every error keeps the built-in base a caller would already catch (``ValueError`` for bad
input, ``FileNotFoundError`` for a missing session, ``FileExistsError``, ``TimeoutError``),
and carries ``path``, ``line`` and ``field`` wherever they are known, so a message can point
a person at the exact spot to fix.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from haytham.frozen import frozen

if TYPE_CHECKING:  # named in annotations only: every command imports the errors, not all the records
    from haytham.records import Claim, LeaseHolder


class HaythamError(Exception):
    """Base class of every error haytham raises on purpose."""

    path: Path | None = None
    line: int | None = None
    field: str | None = None


class InvalidArgumentError(HaythamError, ValueError):
    """An argument given to the API is not acceptable (unknown status, bad number, ...)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnsafeNameError(InvalidArgumentError):
    """An id or agent name cannot be used as a path component."""


class UnsafePathError(InvalidArgumentError):
    """A path would leave ``base_dir`` (through a symlink) or clash with a sibling's name."""


class UnknownPhaseError(InvalidArgumentError):
    """A phase number is not in the workflow, or not in the session's execution mode."""


class UnencodableValueError(InvalidArgumentError):
    """A value of a CrewAI flow state is neither JSON-native nor of the allow-listed types
    haytham stores (``haytham.integrations.crewai.values``); ``field`` says where it is
    (``state['items'][2]``)."""


class DocumentError(HaythamError, ValueError):
    """A session file does not parse or does not validate; names file, line, field, value."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        super().__init__(str(Issue(path, line, field, message)))


class PathError(HaythamError):
    """An error about a path, whose message is the whole story.

    It comes first among the bases of errors that also derive from an OSError kind, so
    their text is the message rather than OSError's ``[Errno ...]`` form.
    """

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0])


class NotFoundError(PathError, FileNotFoundError):
    """A project, session, phase or file that was asked for does not exist."""


class ProjectNotFoundError(NotFoundError):
    """The project directory does not exist."""


class SessionNotFoundError(NotFoundError):
    """The session directory or its manifest does not exist."""


class PhaseNotFoundError(NotFoundError):
    """The phase directory or its checkpoint does not exist."""


class AlreadyExistsError(PathError, FileExistsError):
    """Creating something that is already there; the existing one is left untouched."""


class SessionExistsError(AlreadyExistsError):
    """``create_session`` was called for a session that already exists."""


class ProjectExistsError(AlreadyExistsError):
    """``create_project`` was called with the id of an existing project."""


class StorageError(PathError, OSError):
    """The file system refused a read or write (no space, read-only, permission, a folder
    where a file should be, a symlink leading out): the message names the file in plain words.

    It is an ``OSError`` with the original's ``errno``, so ``except OSError`` still catches it,
    and the original ``OSError`` is its ``__cause__``.
    """

    brief: str = ""
    """The message with the file called "this file", for a report that names it already."""

    def __init__(
        self, message: str, *, path: Path | None = None, cause: OSError | None = None, brief: str = ""
    ) -> None:
        super().__init__(message, path=path)
        self.brief = brief or message
        if cause is not None:
            self.errno = cause.errno
            self.strerror = cause.strerror
        self.filename = None if path is None else str(path)


class StoragePermissionError(StorageError, PermissionError):
    """A StorageError for ``EACCES``/``EPERM``: still a ``PermissionError``."""


class UnsafeFileError(StorageError):
    """A file haytham will not read or write through: a symlink leading out of the base
    directory, a FIFO, device or socket where a file should be, or (for a write in place) a
    file with more than one hard link. Nothing of it was read or written."""


class StorageIsADirectoryError(StorageError, IsADirectoryError):
    """A StorageError for a folder where a file should be: still an ``IsADirectoryError``."""


class StorageNotADirectoryError(StorageError, NotADirectoryError):
    """A StorageError for a file where a folder should be: still a ``NotADirectoryError``."""


_KINDS: dict[int, type[StorageError]] = {
    errno.EACCES: StoragePermissionError,
    errno.EPERM: StoragePermissionError,
    errno.EISDIR: StorageIsADirectoryError,
    errno.ENOTDIR: StorageNotADirectoryError,
}
_PLAIN_REASONS = {
    errno.ENOSPC: "no space left on device while {doing} {path}",
    errno.EDQUOT: "disk quota exceeded while {doing} {path}",
    errno.EROFS: "cannot {do} {path}: the file system is read-only",
    errno.EACCES: "cannot {do} {path}: permission denied",
    errno.EPERM: "cannot {do} {path}: permission denied",
    errno.EISDIR: "{path} is a folder where a file should be",
    errno.ENOTDIR: "cannot {do} {path}: a part of the path is a file where a folder should be",
    errno.ENAMETOOLONG: "cannot {do} {path}: the name is too long for the file system",
}


StorageAction = Literal["read", "write", "create", "remove", "access"]
"""What was being done to the file; ``access`` when that is not known (an OSError met by the
command line)."""


def storage_error(error: OSError, path: os.PathLike[str] | str, action: StorageAction) -> OSError:
    """The error to raise for ``error`` met while doing ``action`` to ``path``: a StorageError
    in plain words that names the file, or ``error`` itself when it is a HaythamError already
    or a missing or existing file (``FileNotFoundError``/``FileExistsError``, which callers
    test for as such and whose message names the file)."""
    if isinstance(error, (HaythamError, FileNotFoundError, FileExistsError)):
        return error
    doing = {"read": "reading", "write": "writing", "create": "creating", "remove": "removing"}.get(
        action,
        "writing",  # no space, no quota: met only while writing
    )
    template = _PLAIN_REASONS.get(error.errno or 0, "cannot {do} {path}: {reason}")
    reason = (error.strerror or str(error)).lower()
    message = template.format(do=action, doing=doing, path=path, reason=reason)
    brief = template.format(do=action, doing=doing, path="this file", reason=reason)
    kind = _KINDS.get(error.errno or 0, StorageError)
    return kind(message, path=Path(path), cause=error, brief=brief)


class LockTimeout(PathError, TimeoutError):
    """Waiting for a session's lock took longer than the configured timeout."""


class AgentTimeout(HaythamError, TimeoutError):
    """An agent's try took longer than its ``timeout:``; it counts as a transient failure
    (``haytham.run.retry``)."""


class StaleReviewError(PathError):
    """A review was refused because the review file is no longer the version it was written
    against (edited by hand or brought by git since): nothing was written.

    ``expected`` is the version the caller saw, ``current`` the file's version now
    (``haytham.store.fs.file_version``; for a review checked against what its reviewer was
    shown, ``haytham.store.shown.Shown.token``). ``changed`` says in words what changed: a
    new attempt ran, an agent output changed, the review file changed."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        expected: str = "",
        current: str = "",
        changed: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, path=path)
        self.expected = expected
        self.current = current
        self.changed = changed


class MoveRefusedError(HaythamError, ValueError):
    """A review the lifecycle does not allow a reviewer on the phase as it stands now
    (approving a phase that never ran, sending back a failed one): nothing was written.

    ``event`` is the move the review makes (``approve``, ``send back``, ``skip``), ``state``
    the phase's state it was refused from (``haytham.store.lifecycle``); ``path`` is the
    phase's user_feedback.md and ``field`` the value that makes the move."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        field: str | None = None,
        event: str = "",
        state: str = "",
    ) -> None:
        super().__init__(message)
        self.path = path
        self.field = field
        self.event = event
        self.state = state


class ReviewConflictError(HaythamError):
    """A review from the page was refused: user_feedback.md changed since the page showed it
    (edited by hand or brought by git). ``current_text`` is the file as it is now (None: no
    file), so the page shows both versions and the reviewer loses nothing."""

    def __init__(self, message: str, current_text: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.current_text = current_text


class WorkflowChangedError(HaythamError, ValueError):
    """The workflow given to the runner is not the one the session was created with."""


class GitError(PathError, RuntimeError):
    """git is not installed, a path is not in a git repository, or a git command failed."""


Severity = Literal["error", "warning"]
"""How much an ``Issue`` matters; see ``Issue.severity``."""


class SessionBusyError(HaythamError):
    """Another runner is running this session; nothing was run."""

    def __init__(self, message: str, holder: LeaseHolder | None, path: Path) -> None:
        super().__init__(message)
        self.holder = holder
        self.path = path


class AgentImportError(HaythamError, LookupError):
    """A ``module:function`` that names an agent cannot be imported or is not callable."""


class WorkerStopped(HaythamError):
    """A stop was asked for in the middle of a run (raised at a safe point, then handled)."""


class SessionClaimed(HaythamError):
    """Another worker holds a valid claim of the session; it was not run here."""

    def __init__(self, message: str, claim: Claim) -> None:
        super().__init__(message)
        self.claim = claim


class PushRejected(GitError):
    """Every push was rejected because other machines kept pushing first; nothing is lost
    (the commits stay local) and a later sync pushes them."""


class RemoteRefused(GitError):
    """The remote refused a push for a reason other than another machine pushing first: a
    hook, its permissions, a protected branch, or a stale lock file in the remote. It is not
    retried (retrying cannot help); the commits stay local. ``said`` holds what the remote
    answered (its ``remote:`` lines and git's ``[remote rejected]`` line); ``lock`` is the
    remote's stale lock file when that is the reason."""

    def __init__(
        self, message: str, *, path: Path | None = None, said: tuple[str, ...] = (), lock: str | None = None
    ) -> None:
        super().__init__(message, path=path)
        self.said = said
        self.lock = lock


class DriverNotConfigured(GitError):
    """The haytham merge driver is not configured in this clone; nothing was merged."""


@frozen
class ConflictSpot:
    """Where a merge left a conflict: a file and the line of its first conflict marker."""

    path: str
    line: int | None

    def __str__(self) -> str:
        return f"{self.path} line {self.line}" if self.line is not None else self.path


class SyncConflict(GitError):
    """A true contradiction between this clone and the remote; the merge was undone."""

    def __init__(self, message: str, spots: tuple[ConflictSpot, ...], root: Path) -> None:
        super().__init__(message, path=root)
        self.spots = spots


@frozen
class Issue:
    """One problem found in a session file, located like a linter's message."""

    path: Path | None
    """The file, as built from the manager's ``base_dir``."""
    line: int | None
    """1-based line number, or None when the problem is the file as a whole."""
    field: str | None
    """The field label as written in the file (``Approved``), or None."""
    message: str
    """What is wrong: the value found, then what was expected."""
    severity: Severity = "error"
    """``error``: the data cannot be read or contradicts itself. ``warning``: haytham reads it
    right but something needs a person's attention or a repair (a stale phase, a legacy
    spelling, a review that contradicts itself)."""

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        where = "" if self.path is None else str(self.path)
        if self.line is not None:
            where = f"{where}:{self.line}"
        parts = [p for p in (where, self.field, self.message) if p]
        return ": ".join(parts)


class MissingExtraError(HaythamError):
    """A feature needs an optional extra that is not installed; the message says which and how
    to install it (``pip install 'haytham[otel]'``)."""


class CollectorError(HaythamError, ConnectionError):
    """An OpenTelemetry collector could not be reached or refused an export (``haytham.otel``);
    the message names the endpoint and, for a refusal, the HTTP status and the collector's words."""
