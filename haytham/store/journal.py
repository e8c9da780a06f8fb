"""One mechanism for every change of more than one file: stage, commit a record, apply, forget.

A ``Change`` collects the steps of one operation (write a file, remove a file, make a
folder, move a staged folder into place, rename a folder, remove a folder haytham owns).
Nothing a reader looks at changes while it is being built:

1. Every new file's content is staged as a hidden temporary file in the change's own folder
   (``.{name}.{pid}.{hex}.haytham-tmp``) and fsynced; a folder that does not exist yet is
   made by a ``mkdir`` step after the commit point, so no reader ever sees a new folder (an
   attempt) half filled. Staging in one folder means the next writer finds everything a
   change that never committed left by listing that one folder.
2. The record ``.haytham-journal`` is written into the change's folder (the session folder,
   or the project folder for project-level and folder-level operations) and fsynced with
   its folder. That is the commit point: before it the operation has not happened (the
   staged files are leftovers, removed by the next writer or ``doctor --fix``); after it the
   operation has happened, whatever else a kill interrupts.
3. The steps are applied in order, every touched folder is fsynced once, and the record is
   removed.

A redo change (``Change(..., redo=True)``: a session's changes, ``store/transaction.py``)
stages its files without an fsync (a full disk still fails before the commit point); its
record holds every new content too and is the one fsync before the commit point; the files
are then renamed in, one ``syncfs``
(``sync_filesystem``) makes them all durable, and only then is the record removed, so a
power loss that empties a file renamed in leaves the record that rewrites it. The record
keeps the boot id it was written under: recovery under another boot rewrites every file not
holding its new content (docs/architecture.md, "Multi-file changes").

``recover(folder)`` rolls an interrupted operation forward and removes what an operation
that never committed staged: the next writer runs it under the folder's lock before it
changes anything, and so does ``doctor --fix``. It is idempotent
and never loses a person's edit: each file step records the hash of its target before and
after; a target that holds neither was edited by a person since, and is left as it is and
reported (``Conflict``).

No step goes through a symlink: every path a step stages, replaces, creates, renames or
removes is checked by ``fs.check_no_symlink`` (below the roots ``fs.locked``/``fs.confined``
set, or the change's folder) when the step is planned, before anything of it is staged, so a
refused call changes nothing. ``recover`` checks every step of a record the same way before
it applies any. A failure of the file system is a ``StorageError`` naming the file, made by
``haytham.errors.storage_error`` like every other primitive's.

An operation of exactly one atomic step (moving a staged session folder into place) needs
no record: the rename itself is the commit point.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import errno
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from haytham.errors import StorageAction, storage_error
from haytham.format.agent_output import MAX_OUTPUT_BYTES
from haytham.format.guard import chunks
from haytham.format.layout import JOURNAL_FILE, STAGING_SUFFIX, TMP_SUFFIX
from haytham.frozen import frozen
from haytham.store import fs

JOURNAL_VERSION = 1
SYNC_NEW_NAMES = False
"""Whether to fsync the folders holding newly created names (staged files, the record)
before the commit point. On Linux's journaling file systems (ext4, xfs, btrfs) the fsync of
a newly created file also makes its name durable, so this is off: an operation costs one
fsync per staged file, one for the record and one per touched folder. Set it for a file
system without that guarantee."""
REDO_LOG = True
"""Whether a session's changes keep the new contents in the record (a redo log) instead of
staging each file fsynced: the record is then the only fsynced write before the commit
point, the files are written and renamed without an fsync each, and one ``syncfs`` of the
file system makes them durable before the record is removed (see ``Change``). Off, or where
the platform has no ``syncfs`` or boot id, every file is staged and fsynced as before."""
REDO_MAX_BYTES = 4 << 20
"""The most new content a redo record holds. A change that writes more (a large agent output)
leaves the redo design as it grows: its staged files are fsynced and its record holds no
content, so a 256 MB output costs no base64 copy of itself in memory or on disk."""
StepKind = Literal["replace", "remove", "mkdir", "move", "rename", "rmtree"]
ABSENT = "absent"


class Unread(enum.Enum):
    UNREAD = "unread"


UNREAD = Unread.UNREAD
"""``Change.write``'s ``current`` when the caller has not read the target: it is read there."""


@frozen
class Conflict:
    """A step recovery did not apply because a person changed its target since."""

    path: Path
    message: str


@frozen
class Step:
    kind: StepKind
    path: str
    """The target, relative to the record's folder (``/``-separated)."""
    staged: str | None = None
    """The staged file or folder (``replace``, ``move``), or the source (``rename``)."""
    before: str | None = None
    """sha256 of the target before (``replace``, ``remove``), or ``absent``."""
    after: str | None = None
    """sha256 of the new content (``replace``)."""
    mtime_ns: int | None = None
    """A modification time to keep (``replace`` of a migrated file)."""
    content: str | None = None
    """The new content, base64 (``replace`` of a redo record): recovery rewrites it."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """The sha256 of the file at ``path``, ``absent`` when there is none (or not a file)."""
    hashed = hashlib.sha256()
    try:
        for piece in chunks(path, MAX_OUTPUT_BYTES):
            hashed.update(piece)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return ABSENT
    return hashed.hexdigest()


def fsync_dir(directory: Path) -> None:
    """fsync the folder ``directory`` (or a file: the same call); StorageError names it."""
    with _naming(directory):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_BOOT: list[str] = []
"""This boot's id, read once (``boot_id``)."""


def boot_id() -> str | None:
    """The id of the running boot (Linux), None where there is none. A redo record keeps it:
    recovery under another boot knows a power loss (or a reboot) may have dropped the writes
    the record's operation made without an fsync, so it rewrites every file from the record."""
    if not _BOOT:
        try:
            with open("/proc/sys/kernel/random/boot_id", "rb") as handle:
                _BOOT.append(handle.read().decode("ascii").strip())
        except (OSError, UnicodeDecodeError):
            _BOOT.append("")
    return _BOOT[0] or None


_SYNCFS: list[Any] = []


def _syncfs_function() -> Any:
    """libc's ``syncfs`` (Linux), None elsewhere; looked up once, ctypes imported only then."""
    if not _SYNCFS:
        function = None
        try:
            import ctypes

            function = ctypes.CDLL(None, use_errno=True).syncfs
            function.argtypes = [ctypes.c_int]
        except (OSError, AttributeError, ImportError):
            function = None
        _SYNCFS.append(function)
    return _SYNCFS[0]


def redo_available() -> bool:
    """Whether this platform can keep a redo record: it has ``syncfs`` and a boot id."""
    return REDO_LOG and boot_id() is not None and _syncfs_function() is not None


def sync_filesystem(folder: Path) -> None:
    """Make every write to the file system holding ``folder`` durable: one ``syncfs`` call,
    the batched flush of a redo record's files (a write-ahead log's checkpoint). Where there
    is no ``syncfs`` (a redo record recovered on another platform), ``os.sync``."""
    syncfs = _syncfs_function()
    if syncfs is None:
        os.sync()
        return
    with _naming(folder):
        fd = os.open(folder, os.O_RDONLY)
        try:
            if syncfs(fd) != 0:
                import ctypes

                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code), os.fspath(folder))
        finally:
            os.close(fd)


def write_new(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Create the file ``path`` (it must not exist) holding ``data`` (bytes, or chunks written
    as they come: an import streams a large file), fsynced; an OSError becomes a StorageError
    naming it, a symlink on the way an UnsafePathError."""
    fs.check_no_symlink(path)
    with _naming(path):
        _write_synced(path, data)


def make_folder(path: Path) -> None:
    """Create the folder ``path`` (an existing folder is fine); an OSError becomes a
    StorageError naming it, a symlink on the way an UnsafePathError."""
    fs.check_no_symlink(path)
    with _naming(path, "create"):
        if not path.is_dir():
            os.mkdir(path)


def _write_synced(path: Path, data: bytes | Iterable[bytes], *, sync: bool = True) -> None:
    """Create ``path`` (it must not exist) holding ``data``, fsynced unless ``sync`` is off
    (a redo record's file: the record holds its content until ``sync_filesystem``)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for chunk in (data,) if isinstance(data, bytes) else data:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _hidden_name(name: str, suffix: str) -> str:
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}{suffix}"


@contextlib.contextmanager
def _naming(path: str | os.PathLike[str], action: StorageAction = "write") -> Iterator[None]:
    """Turn an OSError while changing ``path`` into the StorageError that names it
    (``storage_error``, the one wording of every primitive)."""
    try:
        yield
    except OSError as error:
        wrapped = storage_error(error, path, action)
        if wrapped is error:
            raise
        raise wrapped from error


def _check(path: Path, folder: Path) -> None:
    """Refuse ``path`` when it or a folder on the way is a symlink: below the outermost root
    ``fs.locked``/``fs.confined`` set that holds it, else below ``folder`` (the change's)."""
    fs.check_no_symlink(path, None if fs.confining_root(path) is not None else folder)


class Change:
    """The steps of one multi-file operation, staged and then committed all at once.

    Use it as a context manager: on a normal exit it commits, on an exception it removes
    what it staged (the store is as it was). ``folder`` holds the record; every path a step
    touches must lie inside it. The caller holds the lock of ``folder``.

    ``redo`` (a change of files and folders only: ``write``, ``remove``, new folders; used
    where ``redo_available()``): each file is staged with no fsync (so a full disk still
    fails before the commit point); the record holds every new content too and is the one
    fsync before the commit point; the files are then renamed into place, one
    ``sync_filesystem`` makes them durable, and only then is the record removed. Recovery
    rewrites from the record every file that does not hold its new content (under another
    boot, whatever it holds: a power loss may have left it empty), so an operation whose
    record survives is redone whole.
    """

    def __init__(self, folder: Path, operation: str, *, redo: bool = False) -> None:
        self.folder = folder
        self.operation = operation
        self.redo = redo
        self.steps: list[Step] = []
        self._staged: list[Path] = []
        self._content_bytes = 0
        """How much new content the change's writes hold (``REDO_MAX_BYTES``)."""
        self._prefix = os.fspath(folder).rstrip(os.sep) + os.sep
        self._folders: set[Path] = set()
        """Target folders found to exist while planning (each is asked once)."""
        self._checked: set[Path] = set()
        """Folders this change has checked for symlinks down to them (``_check_target``)."""
        self._new_folders: dict[Path, Path] = {}
        """A target folder that does not exist yet -> the existing folder its files stage in."""
        self._sync_before: set[Path] = set()
        self._touched: set[Path] = set()
        self._targets: set[Path] = set()
        self.conflicts: list[Conflict] = []
        self.committed = False

    def __enter__(self) -> Change:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self.commit()
        elif not self.committed:
            self.discard()

    # ------------------------------------------------------------- planning

    def _relative(self, path: Path) -> str:
        text = os.fspath(path)
        if text == self._prefix[:-1]:
            return "."
        if not text.startswith(self._prefix):
            raise ValueError(f"{path} is outside the change's folder {self.folder}")
        relative = text[len(self._prefix) :]
        return relative if os.sep == "/" else PurePosixPath(*Path(relative).parts).as_posix()

    def _check_target(self, path: Path, parent: Path) -> None:
        """``_check`` of a file to write (in the folder ``parent``): its folder's way down is
        checked once per change (a phase's files share it), then the name itself."""
        if parent in self._checked:
            fs.check_no_symlink(path, parent)
            return
        _check(path, self.folder)
        self._checked.add(parent)

    def _claim(self, path: Path) -> None:
        if path in self._targets:
            raise ValueError(f"{path} is changed twice in one operation")
        self._targets.add(path)

    def _stage_folder(self, target: Path) -> Path:
        """Where a file for the folder ``target`` is staged: the folder itself, or, when it
        does not exist yet, its nearest existing ancestor (the folders are made by ``mkdir``
        steps after the commit point, so no reader ever sees a new folder half filled or a
        file of a new folder before the operation happened)."""
        if target in self._new_folders:
            return self._new_folders[target]
        if target in self._folders or target.is_dir():
            self._folders.add(target)
            return target
        if target == self.folder or self.folder not in target.parents:
            raise ValueError(f"{target} is outside the change's folder {self.folder}")
        existing = self._stage_folder(target.parent)
        self._new_folders[target] = existing
        self._touched.add(target.parent)
        self.steps.append(Step("mkdir", self._relative(target)))
        return existing

    def write(
        self,
        path: Path,
        data: str | bytes,
        *,
        mtime_ns: int | None = None,
        current: bytes | Unread | None = UNREAD,
    ) -> None:
        """Stage ``data`` (UTF-8 when text) to replace the file at ``path``; fsynced now.

        ``current``: the target's bytes as the caller read them under the lock for this
        operation (None: it found no file there), so that the before-image hash the record
        keeps needs no second read of the file; ``UNREAD`` (the default): it is read here."""
        content = data.encode("utf-8") if isinstance(data, str) else data
        parent = path.parent
        self._check_target(path, parent)
        if current is UNREAD and path.is_dir():
            error = IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            raise storage_error(error, path, "write")
        self._claim(path)
        self._stage_folder(parent)  # plans the mkdir steps of folders that do not exist yet
        before = file_digest(path) if current is UNREAD else ABSENT if current is None else digest(current)
        self._content_bytes += len(content)
        if self.redo and self._content_bytes > REDO_MAX_BYTES:
            self._leave_redo()
        folder = self.folder  # every file is staged here, where the next writer looks first
        name = _hidden_name(path.name, TMP_SUFFIX)
        staged = folder / name
        self._staged.append(staged)
        with _naming(path):  # a full disk fails here, before the commit point, in both designs
            _write_synced(staged, content, sync=not self.redo)
        self._sync_before.add(folder)
        self._touched.update((folder, parent))
        encoded = base64.b64encode(content).decode("ascii") if self.redo else None
        # The staged file lies directly in the change's folder: its name is its relative path.
        self.steps.append(
            Step("replace", self._relative(path), name, before, digest(content), mtime_ns, encoded)
        )

    def remove(self, path: Path) -> None:
        """Remove the file at ``path`` (nothing when there is none)."""
        _check(path, self.folder)
        before = file_digest(path)
        if before == ABSENT:
            return
        self._claim(path)
        self._touched.add(path.parent)
        self.steps.append(Step("remove", self._relative(path), before=before))

    def move_into_place(self, staged: Path, target: Path) -> None:
        """Move the complete, fsynced folder ``staged`` to ``target`` (which must not exist)."""
        self._no_redo()
        _check(staged, self.folder)
        _check(target, self.folder)
        self._claim(target)
        self._touched.update({target.parent, staged.parent})
        self.steps.append(Step("move", self._relative(target), self._relative(staged)))

    def rename(self, source: Path, target: Path) -> None:
        """Rename the folder ``source`` to ``target``."""
        self._no_redo()
        _check(source, self.folder)
        _check(target, self.folder)
        self._claim(target)
        self._touched.update({target.parent, source.parent})
        self.steps.append(Step("rename", self._relative(target), self._relative(source)))

    def remove_tree(self, path: Path) -> None:
        """Remove the folder ``path`` and everything in it (a folder haytham owns)."""
        self._no_redo()
        _check(path, self.folder)
        self._touched.add(path.parent)
        self.steps.append(Step("rmtree", self._relative(path)))

    def _leave_redo(self) -> None:
        """Go on as a change of staged, fsynced files: fsync what is staged so far and drop
        the contents from the steps (a change past ``REDO_MAX_BYTES``)."""
        self.redo = False
        for staged in self._staged:
            fsync_dir(staged)  # the same call makes a file's data durable
        self.steps = [replace(step, content=None) for step in self.steps]

    def _no_redo(self) -> None:
        if self.redo:  # recovery redoes a record's steps all over: only idempotent ones
            raise ValueError(f"a redo change of {self.folder} writes and removes files only")

    # ----------------------------------------------------------- committing

    def discard(self) -> None:
        """Remove everything staged: the operation did not happen."""
        for path in reversed(self._staged):
            _remove_any(path)
        self._staged.clear()
        self.steps.clear()

    def commit(self) -> list[Conflict]:
        """Make the staged changes durable and visible, all of them or (if killed) none until
        recovery rolls them forward."""
        if self.committed:
            return self.conflicts
        if not self.steps:
            self.committed = True
            return []
        record = self.folder / JOURNAL_FILE
        single = len(self.steps) == 1 and self.steps[0].kind in ("move", "rename")
        try:
            if SYNC_NEW_NAMES:
                for folder in sorted(self._sync_before, key=str):
                    with _naming(folder):
                        fsync_dir(folder)
            if not single:
                data = encode(self.operation, self.steps, boot_id() if self.redo else None)
                with _naming(record):
                    if os.path.lexists(record):  # an earlier operation's, already recovered
                        os.unlink(record)
                    _write_synced(record, data)
                    if SYNC_NEW_NAMES:
                        fsync_dir(self.folder)
        except BaseException:
            with contextlib.suppress(OSError):
                if not single and os.path.lexists(record):
                    os.unlink(record)
            self.discard()
            raise
        # Committed: from here on a failure leaves the record for recovery to finish.
        self.committed = True
        if self.redo:
            self.conflicts = _apply(self.folder, self.steps, check=False)  # renames, no fsync
            with _naming(self.folder):
                sync_filesystem(self.folder)  # the files are durable: the record may go
                os.unlink(record)
            self._staged.clear()
            return self.conflicts
        try:
            self.conflicts = _apply(self.folder, self.steps, check=False)
        except BaseException:
            if single:  # the one rename did not happen: nothing was committed
                self.committed = False
            raise
        with _naming(self.folder):
            for folder in sorted(self._touched, key=str):
                if folder.is_dir():
                    fsync_dir(folder)
            if not single:
                os.unlink(record)
        self._staged.clear()
        return self.conflicts


def _remove_any(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            import shutil  # only to remove a folder: it loads the archive modules too

            shutil.rmtree(path)
        else:
            path.unlink()


# ------------------------------------------------------------------ the record


def encode(operation: str, steps: list[Step], boot: str | None = None) -> bytes:
    """The record of ``steps``; ``boot``: the boot id a redo record is written under."""
    body: dict[str, Any] = {"operation": operation, "steps": [s.to_json() for s in steps]}
    if boot is not None:
        body["boot"] = boot
    text = json.dumps(body, sort_keys=True, ensure_ascii=True)
    # One line, not indented: json's C encoder writes it (indenting takes its pure-Python one).
    head = json.dumps({"check": digest(text.encode("ascii")), "haytham_journal": JOURNAL_VERSION})
    return (head[:-1] + ", " + text[1:] + "\n").encode("ascii")


def decode(data: bytes) -> tuple[str, list[Step], str | None] | None:
    """The operation, steps and (a redo record's) boot id of a record, or None for a record
    cut short or not haytham's."""
    try:
        loaded = json.loads(data.decode("ascii"))
        if not isinstance(loaded, dict) or loaded.get("haytham_journal") != JOURNAL_VERSION:
            return None
        body = {"operation": loaded["operation"], "steps": loaded["steps"]}
        if "boot" in loaded:
            body["boot"] = loaded["boot"]
        text = json.dumps(body, sort_keys=True, ensure_ascii=True)
        if digest(text.encode("ascii")) != loaded.get("check"):
            return None
        steps = [Step(**step) for step in body["steps"]]
        boot = body.get("boot")
        redo = boot is not None
        if redo and (not isinstance(boot, str) or any(s.kind not in _REDO_KINDS for s in steps)):
            return None
        for step in steps:
            if (step.content is not None) != (redo and step.kind == "replace"):
                return None
            if (
                step.content is not None
                and digest(base64.b64decode(step.content, validate=True)) != step.after
            ):
                return None  # a record whose content is not what it says it is: not haytham's
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    for step in steps:
        for relative in (step.path, step.staged):
            if relative is not None and not _safe_relative(relative):
                return None
    return str(body["operation"]), steps, boot


def _safe_relative(relative: object) -> bool:
    if not isinstance(relative, str) or not relative or "\\" in relative or "\0" in relative:
        return False
    parts = PurePosixPath(relative).parts
    return not PurePosixPath(relative).is_absolute() and all(p not in ("", ".", "..") for p in parts)


# ------------------------------------------------------------------- recovery


@dataclass
class Pending:
    """An interrupted operation found in a folder: its record and what it would do."""

    record: Path
    operation: str | None
    """None when the record is cut short (written before the commit point completed)."""
    steps: list[Step] = field(default_factory=list)
    boot: str | None = None
    """The boot a redo record was written under (None: a record of staged files)."""


def pending(folder: Path) -> Pending | None:
    """The record an interrupted operation left in ``folder``, if any (read only)."""
    record = folder / JOURNAL_FILE
    try:
        fd = os.open(record, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if os.path.islink(record):  # never read through: recovery refuses it, naming it
            return Pending(record, None)
        raise storage_error(error, record, "read") from error
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    found = decode(data)
    if found is None:
        return Pending(record, None)
    return Pending(record, found[0], found[1], found[2])


def recover(folder: Path, names: set[str] | None = None) -> list[Conflict]:
    """Finish the operation whose record is in ``folder`` (the caller holds its lock).

    A complete record is rolled forward; a record cut short means the operation never
    committed, so it is just removed. Then the files an operation that never committed
    staged in ``folder`` are removed (``remove_leftovers``). Returns the steps left undone
    because a person had changed their target since. ``names``: when given, filled with
    what ``folder`` holds afterwards (its one listing, for a caller that needs it too).
    """
    found = pending(folder)
    conflicts = [] if found is None else _roll_forward(folder, found)
    listed = _listing(folder)
    for path in remove_leftovers(folder, listed):  # what a change that never committed staged
        listed.discard(path.name)
    if names is not None:
        names.update(listed)
    return conflicts


def _roll_forward(folder: Path, found: Pending) -> list[Conflict]:
    """``recover`` of a folder that holds a record ``found``."""
    _check(found.record, folder)
    for step in found.steps:  # every path, before any step is applied
        for relative in (step.path, step.staged):
            if relative is not None:
                _check(folder / relative, folder)
    conflicts: list[Conflict] = []
    with _naming(found.record, "remove"):
        if found.operation is not None and found.boot is not None:
            conflicts = _redo(folder, found.steps, check=found.boot == boot_id())
            sync_filesystem(folder)
        elif found.operation is not None:
            conflicts = _apply(folder, found.steps, check=True)
            touched = {(folder / s.path).parent for s in found.steps}
            touched |= {(folder / s.staged).parent for s in found.steps if s.staged}
            for directory in sorted(touched, key=str):
                if directory.is_dir():
                    fsync_dir(directory)
        found.record.unlink(missing_ok=True)
        fsync_dir(folder)
    return conflicts


_REDO_KINDS = ("replace", "remove", "mkdir")


def _redo(folder: Path, steps: list[Step], *, check: bool) -> list[Conflict]:
    """Recovery of a redo record: its steps in order, each file written from the record to a
    hidden temporary file in ``folder`` and renamed into place, with no fsync (the caller
    syncs the file system before it removes the record). The files the change staged are not
    used: unsynced, a power loss may have emptied them; ``recover`` removes them after.

    ``check`` True: recovery in the boot that wrote the record (a process was killed, the
    page cache kept every write): a file holding its new content is done, one holding its old
    content is written, any other was changed by a person since and is left as it is (a ``Conflict``). False:
    recovery under another boot: a write not yet synced may have been lost or left the file
    empty, and the record is only removed after the sync, so every file not holding its new
    content is written again."""
    conflicts: list[Conflict] = []
    for step in steps:
        target = folder / step.path
        with _naming(target, _ACTIONS[step.kind]):
            if step.kind != "replace":
                conflict = _apply_step(step, os.fspath(target), None, check)
                if conflict is not None:
                    conflicts.append(conflict)
                continue
            now = file_digest(target)
            if now == step.after:
                continue
            if check and now != step.before:
                conflicts.append(Conflict(target, "changed by hand since; kept as it is, not replaced"))
                continue
            assert step.content is not None
            data = base64.b64decode(step.content)
            staged = folder / _hidden_name(target.name, TMP_SUFFIX)
            _write_synced(staged, data, sync=False)
            os.replace(staged, target)
            if step.mtime_ns is not None:
                os.utime(target, ns=(step.mtime_ns, step.mtime_ns))
    return conflicts


def _applied(folder: Path, step: Step) -> bool:
    """Whether the step is known to have been applied (its staged entry or source is gone)."""
    if step.kind in ("replace", "move"):
        assert step.staged is not None
        return not os.path.lexists(folder / step.staged)
    if step.kind == "rename":
        assert step.staged is not None
        return not os.path.lexists(folder / step.staged) and os.path.lexists(folder / step.path)
    return False


def _apply(folder: Path, steps: list[Step], *, check: bool) -> list[Conflict]:
    """Apply ``steps`` in order; with ``check`` (recovery) resume after the last step known
    to have been applied, and leave alone a target a person changed."""
    start = 0
    if check:
        for index in range(len(steps) - 1, -1, -1):
            if _applied(folder, steps[index]):
                start = index + 1
                break
    conflicts: list[Conflict] = []
    base = os.fspath(folder)  # the paths as text: a commit applies every step of a phase here
    for step in steps[start:]:
        target = os.path.join(base, step.path)
        with _naming(target, _ACTIONS[step.kind]):
            staged = os.path.join(base, step.staged) if step.staged else None
            conflict = _apply_step(step, target, staged, check)
        if conflict is not None:
            conflicts.append(conflict)
    return conflicts


_ACTIONS: dict[StepKind, StorageAction] = {
    "replace": "write",
    "remove": "remove",
    "mkdir": "create",
    "move": "write",
    "rename": "write",
    "rmtree": "remove",
}


def _apply_step(step: Step, target: str, staged: str | None, check: bool) -> Conflict | None:
    """Apply one step (``target`` and ``staged``: paths); the conflict when recovery
    (``check``) leaves its target alone."""
    if step.kind == "replace":
        assert staged is not None
        if check and not os.path.lexists(staged):  # recovery: applied before the kill
            return None
        if check and file_digest(target) not in (step.before, step.after):
            _remove_any(Path(staged))
            return Conflict(Path(target), "changed by hand since; kept as it is, not replaced")
        os.replace(staged, target)
        if step.mtime_ns is not None:
            os.utime(target, ns=(step.mtime_ns, step.mtime_ns))
    elif step.kind == "mkdir":
        if not os.path.isdir(target):
            os.mkdir(target)
    elif step.kind == "remove":
        now = file_digest(target)
        if now == ABSENT:
            return None
        if check and now != step.before:
            return Conflict(Path(target), "changed by hand since; kept, not removed")
        os.unlink(target)
    elif step.kind in ("move", "rename"):
        assert staged is not None
        if not os.path.lexists(staged):
            return None
        if os.path.lexists(target):
            return Conflict(Path(target), f"exists; {os.path.basename(staged)} was not moved there")
        os.rename(staged, target)
    elif step.kind == "rmtree" and os.path.isdir(target) and not os.path.islink(target):
        import shutil

        shutil.rmtree(target)
    return None


def leftovers(folder: Path, names: set[str] | None = None) -> list[Path]:
    """Staged temporary files and staging folders directly in ``folder`` (read only), among
    ``names`` when the caller listed it already."""
    found = _listing(folder) if names is None else names
    return sorted(folder / n for n in found if n.startswith(".") and n.endswith((TMP_SUFFIX, STAGING_SUFFIX)))


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return set()


def remove_leftovers(folder: Path, names: set[str] | None = None) -> list[Path]:
    """Remove what ``leftovers`` finds (the caller holds the folder's lock and there is no
    record: nothing staged there was committed)."""
    fs.check_no_symlink(folder)
    removed = []
    for path in leftovers(folder, names):
        with _naming(path, "remove"):
            _remove_any(path)
        removed.append(path)
    return removed


__all__ = [
    "ABSENT",
    "UNREAD",
    "Change",
    "Conflict",
    "Pending",
    "Step",
    "Unread",
    "file_digest",
    "leftovers",
    "pending",
    "recover",
    "remove_leftovers",
]
