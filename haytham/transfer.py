"""Export a session as one JSON document or a ``.tar.gz``, and import either one back.

An export carries every file of the session that haytham knows (the manifest, the phase
files and their attempts, the history, ``workflow.yaml``) byte for byte, and nothing else:
no lock, no temporary file, no stray notes. An import checks everything: the document
against ``schemas/export.schema.json``, every path (relative, no ``..``, a name a session
holds), every tar member (regular files and directories only), every markdown file against
its format, and that the ids agree. It reads the export one file at a time: each file is
checked as it is written into a hidden staging directory, which is renamed into place only
once every check passed, so a failed or interrupted import never leaves half a session
behind, and an archive is imported in about the memory of its largest file.

Inputs are bounded (docs/formats.md, "Limits"): an archive is read as a stream, member by
member, and each member's size (at most ``MAX_FILE_BYTES``, and its kind's limit), the sum
of them and of the whole decompressed stream (at most ``MAX_EXPORT_BYTES``) and the number of
members (at most ``MAX_MEMBERS``) are checked from the headers before any data is read, so a
small ``.tar.gz`` that expands to gigabytes is refused without using the memory. A ``.json``
export, parsed whole, is refused above ``MAX_JSON_BYTES`` before it is read. Exports are
written as streams too.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import mmap
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast, overload

from haytham.errors import (
    DocumentError,
    InvalidArgumentError,
    SessionExistsError,
    UnsafePathError,
    storage_error,
)
from haytham.format import MANIFEST, guard
from haytham.format.agent_output import AGENT_OUTPUT, MAPPED_FROM, MAX_OUTPUT_BYTES
from haytham.format.guard import map_file, opened, read_file
from haytham.format.layout import HISTORY_DIR, MANIFEST_FILE, SESSIONS_DIR, WORKFLOW_FILE
from haytham.format.reader import decode
from haytham.format.schema import describe, schema_errors
from haytham.format.workflow import Workflow, load_workflow
from haytham.records import PhaseCheckpoint, SessionManifest
from haytham.store import fs as _storage
from haytham.store.copy import (
    Staging,
    is_session_directory,
    is_session_path,
    read_session_file,
    read_session_files,
    session_listing,
    write_session_dir,
)
from haytham.store.names import check_inside, check_name, check_no_case_twin, check_path_name
from haytham.store.session_files import kind_of

if TYPE_CHECKING:
    from haytham.store.manager import CheckpointManager

FORMAT = "haytham-session"
"""The ``format`` of an export document."""
VERSION = 1
"""The ``version`` of the export format this module writes and reads."""
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
"""The suffixes of an export written as an archive; ``.json`` is the document."""
MAX_FILE_BYTES = MAX_OUTPUT_BYTES
"""The largest file an export may hold: an agent output's limit (each other file is held to
its kind's, ``MAX_DOCUMENT_BYTES``)."""
MAX_EXPORT_BYTES = 1024 * 1024 * 1024
"""The largest archive: its files together once decompressed. An archive is imported file by
file (in about the memory of its largest file), so this bounds the disk it may fill."""
MAX_JSON_BYTES = 256 * 1024 * 1024
"""The largest ``.json`` export: it is parsed whole, so it is held in memory several times."""
MAX_MEMBERS = 250_000
"""The most members (files and folders) an archive may hold: room for a session at any one of
the sizes haytham supports (docs/formats.md, "Limits": 100,000 history entries, 10,000
attempts of a phase, 1,000 phases), and the bound on what a hostile archive makes import do."""
HEADER_BYTES = 2048
"""What the tar stream may hold per member beyond its file's bytes: its header, a PAX header
for a long name, and the padding of its data to 512 bytes."""
EXPECTED = "session_manifest.md, workflow.yaml, history/*.md, phase_*/*.md or phase_*/attempts/N/*.md"


# -------------------------------------------------------------------- exporting


@overload
def export_session(
    manager: CheckpointManager, project_id: str, session_id: str, target: None = None
) -> dict[str, Any]: ...
@overload
def export_session(
    manager: CheckpointManager, project_id: str, session_id: str, target: str | os.PathLike[str]
) -> Path: ...
def export_session(
    manager: CheckpointManager,
    project_id: str,
    session_id: str,
    target: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | Path:
    """Export a session: the one way, whatever the form.

    Without ``target`` the result is the whole session as one JSON-ready document
    (``schemas/export.schema.json``): ``files`` maps each relative path to the file's exact
    text. With ``target`` the export is written there and ``target`` is returned, as a
    ``.json`` document (``dump_export``) or, for ``.tar.gz``/``.tgz``, a deterministic
    archive; any other suffix is an InvalidArgumentError. The export is a consistent
    snapshot even while a runner saves, and writes nothing into the session (``_snapshot``).
    """
    if target is None:
        files, _ = _snapshot(manager, project_id, session_id)
        return _document(files, project_id, session_id)
    path = Path(target)
    if path.name.endswith(ARCHIVE_SUFFIXES):
        _export_archive(manager, project_id, session_id, path)
        return path
    if path.suffix != ".json":
        raise InvalidArgumentError(
            f"{path} must end with .json, .tar.gz or .tgz (the form of the export)", field="target"
        )
    files, _ = _snapshot(manager, project_id, session_id)
    directory = manager.session_dir(project_id, session_id)
    if sum(len(data) for data in files.values()) > MAX_JSON_BYTES:  # its text holds them all
        raise _json_too_large(directory)
    document = _document(files, project_id, session_id)
    with _storage.atomic_stream(path) as handle:
        text = io.TextIOWrapper(handle, encoding="utf-8", newline="\n", write_through=False)
        json.dump(document, text, indent=2, ensure_ascii=False)
        text.write("\n")
        text.flush()
        text.detach()  # the stream stays open for atomic_stream to fsync and close
        if handle.tell() > MAX_JSON_BYTES:  # escapes made it larger: never put in place
            raise _json_too_large(directory)
    return path


def _json_too_large(directory: Path) -> DocumentError:
    return DocumentError(
        f"makes a .json export of more than {_size(MAX_JSON_BYTES)}, more than import reads back; "
        "export it as .tar.gz (docs/formats.md, Limits)",
        path=directory,
    )


def dump_export(document: Mapping[str, Any]) -> str:
    """The canonical JSON text of an export: indented, UTF-8, keys in order, final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _document(files: Mapping[str, bytes], project_id: str, session_id: str) -> dict[str, Any]:
    """The export document of a session's files."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "project_id": project_id,
        "session_id": session_id,
        "files": {path: _text(data, path) for path, data in files.items()},
    }


def _export_archive(manager: CheckpointManager, project_id: str, session_id: str, path: Path) -> None:
    """Write the session's ``.tar.gz`` to ``path`` as a consistent snapshot (``_snapshot``).

    Under the session's lock each file is read as it goes into the archive, so no more than
    one file is held at a time: a 500 MB session exports in the memory of its largest file.
    A session without a lock is read whole until two reads agree, as ``_snapshot`` does."""
    directory = check_inside(manager.base_dir, manager.session_dir(project_id, session_id))
    manager.load_manifest(project_id, session_id)  # a missing session is a NotFoundError
    with _storage.read_locked(directory, manager.lock_timeout, f"session {project_id}/{session_id}") as held:
        if held:
            names, directories = session_listing(directory)
            members = _members_of(project_id, session_id, names, directories)
            _refuse_members(len(members), directory)  # before the archive is begun
            with _storage.atomic_stream(path) as handle:
                _write_archive(handle, members, lambda name: read_session_file(directory, name), directory)
            return
    files, directories = _agreeing_reads(directory)
    members = _members_of(project_id, session_id, files, directories)
    _refuse_members(len(members), directory)
    with _storage.atomic_stream(path) as handle:
        _write_archive(handle, members, files.__getitem__, directory)


def _members_of(
    project_id: str, session_id: str, files: Iterable[str], directories: Iterable[str]
) -> dict[str, str | None]:
    """The members of a session's archive (each file's relative path, None for a folder)."""
    prefix = f"{project_id}/sessions/{session_id}"
    members: dict[str, str | None] = {prefix: None}  # member -> the file's relative path
    members.update({f"{prefix}/{d}": None for d in directories})
    for path in files:
        parent = PurePosixPath(path).parent
        while str(parent) != ".":
            members.setdefault(f"{prefix}/{parent}", None)
            parent = parent.parent
        members[f"{prefix}/{path}"] = path
    return members


def _refuse_members(members: int, directory: Path) -> None:
    """Refuse (DocumentError, naming the session) an archive of more members than import
    reads: what export writes, import reads back."""
    if members > MAX_MEMBERS:
        raise DocumentError(
            f"holds {members:,} files and folders: an export may hold at most {MAX_MEMBERS:,}, "
            "more than import reads back (docs/formats.md, Limits)",
            path=directory,
        )


def _write_archive(
    handle: IO[bytes],
    members: Mapping[str, str | None],
    read: Callable[[str], bytes],
    directory: Path,
) -> None:
    """Write a deterministic ``.tar.gz`` of a session's ``members`` (``_members_of``) to
    ``handle``, as a stream, refusing (DocumentError, naming the session) one whose files come
    to more than import reads back (``MAX_EXPORT_BYTES``, ``_stream_limit``): the archive is
    then never written.

    Members are ``{project_id}/sessions/{session_id}/...`` (so ``tar -xzf`` into a base
    directory puts the session in its place), sorted, with mtime 0, uid and gid 0 and no
    owner names; the gzip header has no name and no time. The same session gives the same
    bytes.
    """
    _refuse_members(len(members), directory)
    total = 0
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for name in sorted(members):
            relative = members[name]
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if relative is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                archive.addfile(info)
            else:
                content = read(relative)  # each file read only as its member is written
                total += len(content)
                if total > MAX_EXPORT_BYTES:
                    raise DocumentError(
                        f"its files come to more than {_size(MAX_EXPORT_BYTES)}, the most an export "
                        "may be (docs/formats.md, Limits)",
                        path=directory,
                    )
                info.mode = 0o644
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
                del content
            if archive.offset + 2 * tarfile.BLOCKSIZE + tarfile.RECORDSIZE > _stream_limit():
                raise DocumentError(  # only names far longer than any haytham writes get here
                    f"makes an archive of more than {_size(_stream_limit())}, more than import reads "
                    "back (docs/formats.md, Limits)",
                    path=directory,
                )


def _snapshot(
    manager: CheckpointManager, project_id: str, session_id: str
) -> tuple[dict[str, bytes], list[str]]:
    """The session's files and directories as one consistent snapshot, without writing.

    A session haytham saves has a lock file: it is read under that lock, taken without
    writing (``fs.read_locked``: a read-only checkout works). Reads never create one, so a
    session without it (a legacy session, a git checkout) or whose lock cannot be had is read
    until two reads agree: a save in between shows as a difference.
    """
    directory = check_inside(manager.base_dir, manager.session_dir(project_id, session_id))
    manager.load_manifest(project_id, session_id)  # a missing session is a NotFoundError
    with _storage.read_locked(directory, manager.lock_timeout, f"session {project_id}/{session_id}") as held:
        if held:
            return read_session_files(directory)
    return _agreeing_reads(directory)


def _agreeing_reads(directory: Path) -> tuple[dict[str, bytes], list[str]]:
    """The session's files read until two reads agree (a save in between shows as a
    difference): the snapshot of a session whose lock cannot be had."""
    found = read_session_files(directory)
    while (again := read_session_files(directory)) != found:
        found = again
    return found


def _text(data: bytes, path: str) -> str:
    """The exact text of a file: strict UTF-8, BOM and CRLF kept."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        decode(data, Path(path))  # raises the located DocumentError
        raise


# -------------------------------------------------------------------- importing


class _Member(NamedTuple):
    """One file or directory of an export, as it is read: its data comes as chunks."""

    ids: tuple[str, str]
    relative: str
    chunks: Iterable[bytes] | None
    """The file's bytes, read as they are consumed; None for a directory."""


def import_session(
    manager: CheckpointManager,
    source: Mapping[str, Any] | str | os.PathLike[str],
    *,
    project_id: str | None = None,
    session_id: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Import an export under ``manager.base_dir`` (the one way); return its directory.

    ``source`` is an export document, a ``.json`` file or a ``.tar.gz``/``.tgz`` archive.
    ``project_id`` and ``session_id`` put the session under other ids (its manifest is
    rewritten to say so). An existing session is refused (SessionExistsError) unless
    ``overwrite=True``, which replaces it whole.

    The files are read one at a time: each is checked and written to a hidden staging
    directory, then let go, so an archive is imported in about the memory of its largest
    file. Only when every file passed (and the manifest, the workflow and the ids agree) is
    the staging directory renamed into place (``write_session_dir``): a failed or
    interrupted import leaves no session behind, or the complete one.
    """
    origin: Path | None = None
    with contextlib.ExitStack() as stack:
        members: Iterator[_Member]
        if isinstance(source, Mapping):
            found, members = _document_members(source, None)
        elif isinstance(source, (str, os.PathLike)):
            origin = Path(source)
            if origin.name.endswith(ARCHIVE_SUFFIXES):
                archive = _archive_members(origin)
                stack.callback(archive.close)  # the archive's file, when the import stops early
                first = next(archive, None)
                if first is None:
                    raise DocumentError("the archive is empty", path=origin)
                found, members = first.ids, itertools.chain([first], archive)
            elif origin.suffix == ".json":
                found, members = _document_members(_load_json(origin), origin)
            else:
                raise InvalidArgumentError(
                    f"{origin} must end with .json, .tar.gz or .tgz (the form of the export)", field="source"
                )
        else:
            raise InvalidArgumentError(
                f"source must be an export document or the path of a .json or .tar.gz file, not "
                f"{type(source).__name__}",
                field="source",
            )
        check_path_name("project_id", found[0])
        check_path_name("session_id", found[1])
        wanted = (
            check_name("project_id", project_id or found[0]),
            check_name("session_id", session_id or found[1]),
        )
        target = check_inside(manager.base_dir, manager.session_dir(*wanted))
        importer = _Importer(manager, origin, found, wanted, target, overwrite)
        importer.refuse_existing()  # before anything is read or written; again under the lock
        with _storage.confined(manager.base_dir):  # never through a symlink below base_dir
            write_session_dir(
                target,
                lambda staging: importer.fill(staging, members),
                overwrite=overwrite,
                lock_timeout=manager.lock_timeout,
                what=f"session {wanted[0]}/{wanted[1]}",
            )
    _storage.ensure_gitignore(manager.base_dir)
    return target


class _Importer:
    """The checks of one import, file by file as the files are staged, then of the whole."""

    def __init__(
        self,
        manager: CheckpointManager,
        origin: Path | None,
        found: tuple[str, str],
        wanted: tuple[str, str],
        target: Path,
        overwrite: bool,
    ) -> None:
        self.manager = manager
        self.origin = origin
        self.found = found
        self.wanted = wanted
        self.target = target
        self.overwrite = overwrite
        self.folded: dict[str, str] = {}
        self.facts: list[tuple[str, int | str | None]] = []
        """Each staged file and what the later checks need of its record, never its content:
        a checkpoint's phase number, an agent output's agent name."""
        self.manifest: tuple[SessionManifest, bytes] | None = None
        self.workflow: bytes | None = None

    def refuse_existing(self) -> None:
        """SessionExistsError when the session is there and may not be replaced."""
        if self.target.exists() and not self.overwrite:
            project_id, session_id = self.wanted
            raise SessionExistsError(
                f"session {project_id}/{session_id} already exists at {self.target}; it was "
                "left untouched (overwrite=True, or haytham import --overwrite, replaces it)",
                path=self.target,
            )

    def fill(self, staging: Staging, members: Iterable[_Member]) -> None:
        """Check and stage every file of the export, then check the whole (``finish``)."""
        for member in members:
            if member.chunks is not None:
                self.add(staging, member.relative, member.chunks)
        self.finish(staging)

    def add(self, staging: Staging, relative: str, chunks: Iterable[bytes]) -> None:
        """Check one file's path, stage it, and check it as its kind (read back mapped)."""
        origin = self.origin
        _check_relative(relative, origin)
        twin = self.folded.setdefault(relative.casefold(), relative)
        if twin != relative:
            raise UnsafePathError(
                f"{relative!r} and {twin!r} differ only by letter case: they cannot both exist on "
                "a case-insensitive file system",
                field="path",
            )
        shown = _shown(origin, relative)
        if relative in (MANIFEST_FILE, WORKFLOW_FILE):  # small; written last (a rename rewrites it)
            data = b"".join(chunks)
            if relative == WORKFLOW_FILE:
                _text(data, str(shown))
                self.workflow = data
            else:
                record = MANIFEST.parse(decode(data, shown), shown)
                self.manifest = (record, data)
            return
        path = staging.write(relative, chunks)
        kind = kind_of(Path(relative))
        assert kind is not None  # is_session_path accepted the name
        if kind is AGENT_OUTPUT:
            mapped = map_file(path, AGENT_OUTPUT.max_bytes, MAPPED_FROM)
            try:
                output = AGENT_OUTPUT.parse_mapped(mapped, shown)
            finally:
                if isinstance(mapped, mmap.mmap):
                    mapped.close()
            self.facts.append((relative, output.agent_name))
            del output  # its content: the largest thing an import holds, one file at a time
        else:
            found = kind.parse(decode(read_file(path, kind.max_bytes), shown), shown)
            number = found.phase_number if isinstance(found, PhaseCheckpoint) else None
            self.facts.append((relative, number))

    def finish(self, staging: Staging) -> None:
        """The checks of the whole export, then the manifest and the empty phase directories."""
        origin = self.origin
        if self.manifest is None:
            raise DocumentError(f"the export has no {MANIFEST_FILE}", path=origin)
        manifest, data = self.manifest
        if (manifest.project_id, manifest.session_id) != self.found:
            raise DocumentError(
                f"the manifest is of session {manifest.project_id}/{manifest.session_id}, but the export "
                f"says {self.found[0]}/{self.found[1]}",
                path=_shown(origin, MANIFEST_FILE),
                field="Session ID",
            )
        workflow = _workflow(self.manager, manifest, self.workflow, origin)
        phases = workflow.phases_for(manifest.execution_mode)
        directories = {phase.directory: phase.number for phase in workflow.phases}
        for relative, fact in self.facts:
            parts = relative.split("/")
            if parts[0] == HISTORY_DIR or len(parts) == 1:
                continue
            if parts[0] not in directories:
                raise UnsafePathError(
                    f"{relative!r} is in {parts[0]!r}, which is no phase directory of workflow "
                    f"{workflow.name!r}",
                    field="path",
                )
            if isinstance(fact, int) and fact != directories[parts[0]]:
                raise DocumentError(
                    f"{fact} is not this directory's phase {directories[parts[0]]}",
                    path=_shown(origin, relative),
                    field="Phase Number",
                )
            if isinstance(fact, str) and fact != PurePosixPath(relative).stem:
                raise DocumentError(
                    f"{fact!r} does not match the file name {parts[-1]!r}",
                    path=_shown(origin, relative),
                    field="Agent",
                )
        project_id, session_id = self.wanted
        if (project_id, session_id) != (manifest.project_id, manifest.session_id):
            renamed = replace(manifest, project_id=project_id, session_id=session_id)
            MANIFEST.check_record(renamed)
            data = MANIFEST.render(renamed).encode("utf-8")
        check_no_case_twin(self.manager.base_dir, project_id, "project_id")
        check_no_case_twin(self.target.parent, session_id, "session_id")
        self.refuse_existing()
        staging.write(MANIFEST_FILE, data)
        if self.workflow is not None:
            staging.write(WORKFLOW_FILE, self.workflow)
        for phase in phases:
            staging.folder(phase.directory)


def _load_json(path: Path) -> object:
    data = _read_bounded(path, MAX_JSON_BYTES)
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except UnicodeDecodeError:
        decode(data, path)  # raises the located DocumentError
        raise
    except json.JSONDecodeError as error:
        raise DocumentError(f"is not valid JSON: {error.msg}", path=path, line=error.lineno) from None
    except DocumentError as error:
        raise DocumentError(error.message, path=path, field=error.field) from None


def _read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, refused (DocumentError) when it holds more than ``limit``, which
    is checked before the file is read into memory."""
    try:
        with opened(path) as (fd, info), open(fd, "rb", closefd=False) as handle:
            size = info.st_size
            if size > limit:
                raise DocumentError(f"is {_size(size)}: an export may be at most {_size(limit)}", path=path)
            data = handle.read(limit + 1)
    except OSError as error:
        raise storage_error(error, path, "read") from error
    if len(data) > limit:
        raise DocumentError(f"is larger than {_size(limit)}, the most an export may be", path=path)
    return data


def _size(count: int) -> str:
    """A byte count for people: ``2.0 GB``, ``64 MB``, ``512 bytes``."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (JSON would silently keep the last)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DocumentError(f"the key {key!r} appears twice", field=key)
        found[key] = value
    return found


def _document_members(document: object, origin: Path | None) -> tuple[tuple[str, str], Iterator[_Member]]:
    """The ids and files of an export document that passes its schema."""
    if not isinstance(document, Mapping):
        raise DocumentError(f"a haytham export is a JSON object, not {type(document).__name__}", path=origin)
    errors = schema_errors("export", document)
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path) or None
        raise DocumentError(f"is not a haytham export: {describe(errors[0])}", path=origin, field=where)
    ids = (document["project_id"], document["session_id"])
    return ids, _document_files(ids, dict(document["files"]), origin)


def _document_files(ids: tuple[str, str], texts: dict[str, str], origin: Path | None) -> Iterator[_Member]:
    """The files of an export document as members, each text encoded as it is taken."""
    for relative, text in texts.items():
        _check_relative(relative, origin)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise DocumentError(
                "holds a lone surrogate, which UTF-8 cannot store", path=_shown(origin, relative)
            ) from None
        yield _Member(ids, relative, (data,))


def _archive_members(path: Path) -> Generator[_Member, None, None]:
    """The members of a ``.tar.gz`` export, one at a time as the stream is read; every
    member's header is checked before its data is read (which the caller does, from
    ``chunks``, before it asks for the next member)."""
    seen: set[str] = set()
    ids: tuple[str, str] | None = None
    total = count = 0
    try:
        with (
            opened(path) as (fd, _),
            open(fd, "rb", closefd=False) as raw,
            gzip.GzipFile(fileobj=raw, mode="rb") as unzipped,
            _open_stream(_Bounded(unzipped, path)) as archive,
        ):
            for member in archive:  # one header at a time: nothing is read ahead
                count += 1
                if count > MAX_MEMBERS:
                    raise DocumentError(f"holds more than {MAX_MEMBERS:,} members", path=path)
                parts = _relative_parts(member.name, path)
                total += member.size
                if member.size > MAX_FILE_BYTES:
                    raise DocumentError(
                        f"member {member.name!r} is {_size(member.size)}: a file of an export may be at "
                        f"most {_size(MAX_FILE_BYTES)}",
                        path=path,
                    )
                if total > MAX_EXPORT_BYTES:
                    raise DocumentError(
                        f"its files come to more than {_size(MAX_EXPORT_BYTES)}, the most an export may be",
                        path=path,
                    )
                if member.issym() or member.islnk():
                    kind = "a symlink" if member.issym() else "a hard link"
                    raise UnsafePathError(
                        f"{path}: member {member.name!r} is {kind} (to {member.linkname!r}); an export "
                        "holds regular files and directories only",
                        field="path",
                    )
                if not (member.isfile() or member.isdir()):
                    raise UnsafePathError(
                        f"{path}: member {member.name!r} is a device or pipe; an export holds regular "
                        "files and directories only",
                        field="path",
                    )
                if len(parts) < 3 or parts[1] != SESSIONS_DIR:
                    raise UnsafePathError(
                        f"{path}: member {member.name!r} is not under PROJECT/sessions/SESSION/",
                        field="path",
                    )
                if ids is None:
                    ids = (parts[0], parts[2])
                elif (parts[0], parts[2]) != ids:
                    raise UnsafePathError(
                        f"{path}: member {member.name!r} is not under {ids[0]}/sessions/{ids[1]}/ like "
                        "the others: an export holds one session",
                        field="path",
                    )
                relative = "/".join(parts[3:])
                if member.isdir():
                    if relative and not is_session_directory(relative):
                        raise UnsafePathError(
                            f"{path}: member {member.name!r} is not a directory a session holds",
                            field="path",
                        )
                    yield _Member(ids, relative, None)
                    continue
                if relative in seen:
                    raise UnsafePathError(f"{path}: member {member.name!r} appears twice", field="path")
                seen.add(relative)
                _check_relative(relative, path)
                limit = _file_limit(relative)
                if member.size > limit:
                    raise DocumentError(
                        f"member {member.name!r} is {_size(member.size)}: such a file of an export may "
                        f"be at most {_size(limit)}",
                        path=path,
                    )
                stream = archive.extractfile(member)
                assert stream is not None  # a regular file always has data
                yield _Member(ids, relative, _chunks(stream, path))
    except _UNREADABLE as error:
        raise DocumentError(f"is not a readable .tar.gz archive ({error})", path=path) from None
    except OSError as error:
        raise storage_error(error, path, "read") from error


_UNREADABLE = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)
_CHUNK = 1 << 20


def _chunks(stream: IO[bytes], path: Path) -> Iterator[bytes]:
    """A member's data in chunks of at most ``_CHUNK`` bytes, as the archive is read."""
    try:
        while chunk := stream.read(_CHUNK):
            yield chunk
    except _UNREADABLE as error:
        raise DocumentError(f"is not a readable .tar.gz archive ({error})", path=path) from None
    except OSError as error:
        raise storage_error(error, path, "read") from error


def _file_limit(relative: str) -> int:
    """The most bytes the file ``relative`` of an export may hold: its kind's limit."""
    kind = kind_of(Path(relative))
    return (kind.max_bytes if kind is not None else None) or guard.MAX_DOCUMENT_BYTES


def _open_stream(stream: io.RawIOBase) -> tarfile.TarFile:
    """A tar archive read from ``stream`` in stream mode (``r|``): headers one at a time, no seek."""
    opener: Any = tarfile.open  # the stubs know no overload for "r|" with a file object
    return cast(tarfile.TarFile, opener(fileobj=stream, mode="r|"))


class _Bounded(io.RawIOBase):
    """The decompressed stream of an archive, refused (DocumentError) once more than
    ``MAX_EXPORT_BYTES`` and the tar headers' share have come out of it: headers of absurd
    size (a PAX header claiming gigabytes) cannot drive memory up either."""

    def __init__(self, stream: io.BufferedIOBase, path: Path) -> None:
        self._stream = stream
        self._path = path
        self._left = _stream_limit()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self._left:
            size = self._left + 1
        data = self._stream.read(size)
        self._left -= len(data)
        if self._left < 0:
            raise DocumentError(
                f"expands to more than {_size(MAX_EXPORT_BYTES)}, the most an export may be", path=self._path
            )
        return data


def _stream_limit() -> int:
    """The most bytes the decompressed stream of an archive may hold: its files, what each
    member adds (``HEADER_BYTES``) and the end of the archive. Export and import share it."""
    return MAX_EXPORT_BYTES + HEADER_BYTES * (MAX_MEMBERS + 1) + tarfile.RECORDSIZE


def _relative_parts(name: str, origin: Path | None) -> list[str]:
    """The parts of a relative ``/`` path, refusing absolute paths, ``..``, ``.`` and ``\\``."""
    where = f"{origin}: " if origin is not None else ""
    if name.startswith("/") or re.match(r"[A-Za-z]:", name) or "\\" in name:
        raise UnsafePathError(
            f"{where}{name!r} is an absolute path or uses '\\': an export holds relative paths only",
            field="path",
        )
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePathError(
            f"{where}{name!r} is not a plain relative path (empty, '.' or '..' parts): it could "
            "lead outside the session",
            field="path",
        )
    return parts


def _check_relative(relative: str, origin: Path | None) -> None:
    _relative_parts(relative, origin)
    if not is_session_path(relative):
        where = f"{origin}: " if origin is not None else ""
        raise UnsafePathError(
            f"{where}{relative!r} is not a file a session holds (expected {EXPECTED})", field="path"
        )


def _workflow(
    manager: CheckpointManager, manifest: SessionManifest, own_copy: bytes | None, origin: Path | None
) -> Workflow:
    """The workflow the imported session runs: its workflow.yaml, else a known one by name."""
    if own_copy is None:
        found = manager.workflows.get(manifest.workflow_type)
        if found is None:
            raise InvalidArgumentError(
                f"the session runs workflow {manifest.workflow_type!r}, which this manager does not "
                "know and the export does not carry (register it with CheckpointManager(workflows=...))",
                field="workflow_type",
            )
        return found
    with tempfile.TemporaryDirectory(prefix="haytham-import-") as scratch:
        path = Path(scratch) / WORKFLOW_FILE
        path.write_bytes(own_copy)
        try:
            return load_workflow(path)
        except DocumentError as error:
            raise DocumentError(
                error.message, path=_shown(origin, WORKFLOW_FILE), line=error.line, field=error.field
            ) from None


def _shown(origin: Path | None, relative: str) -> Path:
    """How a file of an export is named in messages: ``export.json:phase_1_concept/a.md``."""
    return Path(relative) if origin is None else Path(f"{origin}:{relative}")


__all__ = ["FORMAT", "VERSION", "dump_export", "export_session", "import_session"]
