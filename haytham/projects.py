"""``ProjectManager``: projects around sessions, with versioned requirements and a changelog.

A project is the directory ``{base_dir}/{project_id}``::

    project.yaml               # who, which idea, which mode, status; written rarely
    sessions/{session_id}/     # made by CheckpointManager, the only writer of manifests
    outputs/requirements_{time}_{session_id}.md, outputs/latest_requirements.md
    history/changelog.md       # one short block per event, appended

``project.yaml`` holds no session list and no totals: those are derived from ``sessions/``,
so two git clones that run different sessions never conflict on it. For the same reason a
requirements version is a file named by its completion time and session, and its number
is derived when the directory is read (see ``order_versions``): two clones that complete
sessions at once add two different files instead of both writing ``requirements_v2.md``.
Every read-modify-write of a project's files happens under the project's OS lock, and a
call that fails puts back what it had changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import unicodedata
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from haytham.errors import (
    DocumentError,
    HaythamError,
    InvalidArgumentError,
    Issue,
    ProjectNotFoundError,
    SessionExistsError,
    UnsafeNameError,
)
from haytham.format.guard import read_file
from haytham.format.layout import (
    CHANGELOG_FILE,
    FORMAT_VERSION,
    HISTORY_DIR,
    LATEST_FILE,
    MANIFEST_FILE,
    OUTPUTS_DIR,
    PREFERENCES_FILE,
    PROJECT_FILE,
    REQUIREMENTS_NUMBERED,
    REQUIREMENTS_TIMED,
    SESSIONS_DIR,
    TRASH_SUFFIX,
    USERS_DIR,
)
from haytham.format.reader import decode
from haytham.format.schema import describe, schema_errors
from haytham.format.values import write_text
from haytham.format.workflow import IDEA_VALIDATION
from haytham.format.yamlfile import VERSION_KEY, line_of, parse_yaml, read_yaml, take_version
from haytham.records import PROJECT_STATUSES
from haytham.store import fs as _storage
from haytham.store import journal
from haytham.store.clock import Clock, format_timestamp, utc_now
from haytham.store.manager import CheckpointManager
from haytham.store.names import check_name, check_path_name, check_user_id, user_dir_name

CHANGELOG = Path(HISTORY_DIR) / CHANGELOG_FILE
_TIMESTAMP_FIELDS = ("created", "last_updated")
_LEGACY_TIMESTAMPS = {"created": "created_at", "last_updated": "updated_at"}
"""project.yaml of the first implementation (version 0) names its times ``created_at`` and
``updated_at``; reading gives them under haytham's names as well, keeping every key."""


class ProjectManager:
    """Keeps projects, their sessions and their requirement versions under ``base_dir``."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str] = "projects",
        *,
        clock: Clock | None = None,
        lock_timeout: float = _storage.DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.clock: Clock = clock or utc_now
        self.lock_timeout = lock_timeout
        self.checkpoints = CheckpointManager(self.base_dir, clock=self.clock, lock_timeout=lock_timeout)
        """The CheckpointManager of the same base directory, clock and lock timeout: the only
        writer of session manifests, which ``start_session`` and friends go through."""

    def project_dir(self, project_id: str) -> Path:
        """Where a project lives; any id that names a folder safely is reachable (new ids
        are made by ``create_project`` under the strict rule)."""
        return self.base_dir / check_path_name("project_id", project_id)

    # --------------------------------------------------------------- projects

    def create_project(
        self,
        user_id: str,
        startup_idea: str,
        project_name: str | None = None,
        execution_mode: str = "mvp",
    ) -> dict[str, Any]:
        """Create the project's directories, project.yaml and changelog; return its data.

        The id is a slug of the name plus 8 random hex digits, so it is always a safe name.
        """
        check_user_id(user_id)
        _check_text("startup_idea", startup_idea)
        if project_name is None:
            project_name = _default_title(startup_idea)
        name = _check_text("project_name", project_name).strip()
        if not isinstance(execution_mode, str) or execution_mode not in IDEA_VALIDATION.modes:
            raise InvalidArgumentError(
                f"execution_mode {execution_mode!r} is not a mode of workflow {IDEA_VALIDATION.name!r} "
                f"(expected one of {', '.join(IDEA_VALIDATION.modes)})",
                field="execution_mode",
            )
        now = self._now()
        _storage.make_dirs(self.base_dir)
        _storage.ensure_gitignore(self.base_dir)
        directory = self._unused_project_dir(name)
        data: dict[str, Any] = {
            "project_id": directory.name,
            "user_id": user_id,
            "project_name": name,
            "startup_idea": startup_idea,
            "execution_mode": execution_mode,
            "workflow_type": IDEA_VALIDATION.name,
            "status": "active",
            "created": now,
            "last_updated": now,
        }
        try:
            for sub in (SESSIONS_DIR, OUTPUTS_DIR, HISTORY_DIR):
                with _storage.confined(self.base_dir):  # no symlink below base_dir is written through
                    _storage.make_dirs(directory / sub)
            _storage.atomic_write(
                directory / CHANGELOG, _heading(name) + _block(now, "Project created", _summary(data))
            )
            _write_project(directory, data)  # last: a project exists once its project.yaml does
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return dict(data)

    def get_project(self, project_id: str) -> dict[str, Any]:
        """The project's data as read from its project.yaml."""
        return self._read_project(project_id)

    def list_user_projects(self, user_id: str, status: str | None = None) -> list[dict[str, Any]]:
        """The user's projects (optionally only those with ``status``), oldest first.

        Directories without a project.yaml are skipped. A project.yaml that cannot be read
        is left out here, so one damaged project never hides the others; ``project_issues``
        reports it.
        """
        check_user_id(user_id)
        if status is not None:
            _check_status(status)
        found = [
            data
            for data in self._read_projects()[0]
            if data["user_id"] == user_id and status in (None, data["status"])
        ]
        return sorted(found, key=lambda d: (d["created"], d["project_id"]))

    def project_issues(self) -> list[Issue]:
        """One error for every project.yaml under ``base_dir`` that cannot be read, located
        like ``validate``'s findings (file, line, field)."""
        return self._read_projects()[1]

    def _read_projects(self) -> tuple[list[dict[str, Any]], list[Issue]]:
        """Every readable project, and an Issue for each project.yaml that is not."""
        try:
            entries = sorted(self.base_dir.iterdir())
        except FileNotFoundError:
            return [], []
        found: list[dict[str, Any]] = []
        issues: list[Issue] = []
        for entry in entries:
            if not _is_safe(entry.name) or not (entry / PROJECT_FILE).is_file():
                continue
            try:
                found.append(self._read_project(entry.name))
            except HaythamError as error:
                path = error.path or entry / PROJECT_FILE
                issues.append(Issue(path, error.line, error.field, _message_of(error)))
        return found, issues

    def get_project_status(self, project_id: str) -> dict[str, Any]:
        """The project's data plus its sessions, latest requirements version and totals.

        Everything beyond project.yaml is derived from the files, never stored twice.
        ``completed_sessions`` counts the sessions ``complete_session`` completed, as the
        first implementation did: those a requirements version names, and those the
        ``sessions`` list of a first implementation's project.yaml records as ``completed``
        (whether every phase of a session is done is its own ``status``).
        """
        data = self._read_project(project_id)
        sessions_dir = self.project_dir(project_id) / SESSIONS_DIR
        names = sorted(p.name for p in sessions_dir.iterdir()) if sessions_dir.is_dir() else []
        sessions = [
            self.checkpoints.load_session(project_id, name)
            for name in names
            if _is_safe(name) and (sessions_dir / name / MANIFEST_FILE).is_file()
        ]
        sessions.sort(key=lambda s: (s["created"], s["session_id"]))
        metrics = [s["metrics"] for s in sessions]
        return {
            **data,
            "sessions": sessions,
            "session_count": len(sessions),
            "completed_sessions": len(_completed_sessions(data, self.project_dir(project_id) / OUTPUTS_DIR)),
            "latest_version": _latest_version(self.project_dir(project_id) / OUTPUTS_DIR),
            "total_tokens": sum(m["total_tokens"] for m in metrics),
            "total_cost": round(sum(m["total_cost"] for m in metrics), 4),
            "total_duration": round(sum(m["total_duration"] for m in metrics), 1),
        }

    def archive_project(self, project_id: str) -> dict[str, Any]:
        """Mark the project archived; its files stay as they are."""
        directory = self.project_dir(project_id)
        with self._editing(project_id) as data:
            data = {**data, "status": "archived", "last_updated": self._now()}
            with journal.Change(directory, "archive_project") as change:
                change.write(directory / PROJECT_FILE, _project_text(data))
                self._stage_log(
                    change, data, "Project archived", [("Status", "archived")], data["last_updated"]
                )
        return data

    def delete_project(self, project_id: str) -> None:
        """Remove the project's directory and everything in it.

        Refuses a project directory that is a symlink or lies outside ``base_dir``, so a
        planted link can never make it delete anything else.
        """
        directory = self.project_dir(project_id)
        if directory.is_symlink():
            raise InvalidArgumentError(
                f"project directory {directory} is a symlink; refusing to delete through it",
                field="project_id",
            )
        if not (directory / PROJECT_FILE).is_file():
            raise self._missing(project_id)
        if directory.resolve().parent != self.base_dir.resolve():
            raise InvalidArgumentError(
                f"project directory {directory} resolves outside {self.base_dir}; refusing to delete it",
                field="project_id",
            )
        trash = self.base_dir / f".{project_id}.{secrets.token_hex(4)}{TRASH_SUFFIX}"
        with self._lock(directory, project_id):
            os.rename(directory, trash)  # the commit point: others see the whole project or none of it
            _storage.fsync_dir(self.base_dir)
        # Committed: what is left of the trash is removed by doctor --fix if this is killed.
        shutil.rmtree(trash, ignore_errors=True)

    # --------------------------------------------------------------- sessions

    def start_session(self, project_id: str, workflow_type: str = "idea_validation") -> dict[str, Any]:
        """Create a new session of the project through CheckpointManager; return its state."""
        with self._editing(project_id) as data:
            session_dir = self._create_session(data, workflow_type)
            try:
                session = self.checkpoints.load_session(project_id, session_dir.name)
                fields = [("Session", session_dir.name), ("Workflow", session["workflow_type"])]
                fields.append(("Mode", session["execution_mode"]))
                self._log(data, "Session started", fields, session["created"])
            except BaseException:
                shutil.rmtree(session_dir, ignore_errors=True)
                raise
        return session

    def complete_session(
        self,
        project_id: str,
        session_id: str,
        requirements_content: str,
        metrics: Mapping[str, object] | None = None,
    ) -> dict[str, Any]:
        """Save the session's requirements as a new version and as the latest.

        The version's file is ``outputs/requirements_{time}_{session_id}.md``, chosen under
        the project lock so concurrent completions never share one, and unique across git
        clones; its number is its place among the versions (``list_requirements``).
        ``latest_requirements.md`` is a copy of the newest version. The content is stored
        byte for byte and checked by reading it back.
        """
        _check_text("requirements_content", requirements_content, blank_ok=True)
        extra = _check_metrics(metrics)
        directory = self.project_dir(project_id)
        with self._editing(project_id) as data:
            self.checkpoints.load_manifest(project_id, session_id)
            outputs = directory / OUTPUTS_DIR
            latest = outputs / LATEST_FILE
            names = os.listdir(outputs) if outputs.is_dir() else []
            done = _completed_version(outputs, names, session_id, requirements_content)
            if done is not None:  # a retry of a completion that happened: no second version
                return {"version": done[0], "path": str(outputs / done[1]), "latest_path": str(latest)}
            now = self._now()
            path = _unused_version_path(outputs, now, session_id)
            versions = order_versions([*names, path.name])
            version = next(number for number, name in versions if name == path.name)
            newest = outputs / versions[-1][1]  # this one, unless a clone's clock ran ahead
            fields = [("Session", session_id), ("File", f"outputs/{path.name}")]
            with journal.Change(directory, "complete_session") as change:
                change.write(path, requirements_content)
                change.write(
                    latest, requirements_content if newest == path else read_file(newest).decode("utf-8")
                )
                self._stage_log(change, data, "Session completed", fields + extra, now)
            if read_file(path) != requirements_content.encode("utf-8"):
                raise DocumentError("reads back different from what was written", path=path)
        return {"version": version, "path": str(path), "latest_path": str(latest)}

    def list_requirements(self, project_id: str) -> list[dict[str, Any]]:
        """The project's requirement versions, oldest first: ``{"version", "path"}`` each.

        Numbers are derived from the files (see ``order_versions``), so after a git merge of
        two clones' completions they run 1, 2, 3, ... again, ordered by completion time.
        """
        self._read_project(project_id)
        outputs = self.project_dir(project_id) / "outputs"
        try:
            names = os.listdir(outputs)
        except FileNotFoundError:
            return []
        return [{"version": number, "path": str(outputs / name)} for number, name in order_versions(names)]

    # ------------------------------------------------------------ preferences

    def get_user_preferences(self, user_id: str) -> dict[str, Any]:
        """The user's preferences, ``{}`` when none were saved."""
        return _read_preferences(self._preferences_path(user_id))

    def update_user_preferences(self, user_id: str, preferences: dict[str, Any]) -> dict[str, Any]:
        """Merge ``preferences`` into the saved ones (top-level keys replace); return all."""
        path = self._preferences_path(user_id)
        if not isinstance(preferences, dict):
            raise InvalidArgumentError(
                f"preferences must be a dict, got {type(preferences).__name__}", field="preferences"
            )
        update = _plain(preferences, "preferences")
        with _storage.confined(self.base_dir):  # no symlink below base_dir is written through
            _storage.make_dirs(path.parent)
        _storage.ensure_gitignore(self.base_dir)
        with _storage.locked(
            path.parent, self.lock_timeout, f"the preferences of {user_id}", root=self.base_dir
        ):
            merged = {**_read_preferences(path), **update}
            text = yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
            _storage.atomic_write(path, text)
        return merged

    # ---------------------------------------------------------------- helpers

    def _now(self) -> str:
        """The clock's time as a timestamp; a naive clock is refused before anything is written."""
        moment = self.clock()
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise InvalidArgumentError(f"clock returned {moment!r}, not an aware datetime", field="clock")
        return format_timestamp(moment)

    def _missing(self, project_id: str) -> ProjectNotFoundError:
        path = self.project_dir(project_id) / PROJECT_FILE
        return ProjectNotFoundError(
            f"project {project_id!r} does not exist under {self.base_dir} (no {path})", path=path
        )

    def _lock(self, directory: Path, project_id: str) -> Any:
        return _storage.locked(directory, self.lock_timeout, f"project {project_id}", root=self.base_dir)

    def _read_project(self, project_id: str) -> dict[str, Any]:
        path = self.project_dir(project_id) / PROJECT_FILE
        try:
            data = read_file(path)
        except (FileNotFoundError, NotADirectoryError):
            raise self._missing(project_id) from None
        return _parse_project(decode(data, path), path, project_id)

    @contextlib.contextmanager
    def _editing(self, project_id: str) -> Iterator[dict[str, Any]]:
        """Hold the project's lock and yield its data, read again once the lock is held."""
        self._read_project(project_id)  # first, so a missing project gets no lock file
        directory = self.project_dir(project_id)
        with self._lock(directory, project_id):
            journal.recover(directory)  # finish what a killed writer left half done
            yield self._read_project(project_id)

    def _log(
        self,
        project: Mapping[str, Any],
        event: str,
        fields: Sequence[tuple[str, object]],
        timestamp: str | None = None,
    ) -> None:
        """Append one event to the changelog: read, add, rewrite atomically (lock held)."""
        path = self.project_dir(project["project_id"]) / CHANGELOG
        _storage.make_dirs(path.parent)
        _storage.atomic_write(path, self._logged(project, event, fields, timestamp))

    def _stage_log(
        self,
        change: journal.Change,
        project: Mapping[str, Any],
        event: str,
        fields: Sequence[tuple[str, object]],
        timestamp: str | None = None,
    ) -> None:
        """Stage the changelog with one event appended, as part of ``change`` (lock held)."""
        path = self.project_dir(project["project_id"]) / CHANGELOG
        change.write(path, self._logged(project, event, fields, timestamp))

    def _logged(
        self,
        project: Mapping[str, Any],
        event: str,
        fields: Sequence[tuple[str, object]],
        timestamp: str | None,
    ) -> str:
        """The changelog's text with one more event."""
        path = self.project_dir(project["project_id"]) / CHANGELOG
        try:
            text = decode(read_file(path), path)
        except FileNotFoundError:
            text = _heading(project["project_name"])
        if not text.endswith("\n"):
            text += "\n"
        return text + _block(timestamp or self._now(), event, fields)

    def _unused_project_dir(self, name: str) -> Path:
        slug = _slug(name)
        while True:
            directory = self.base_dir / check_name("project_id", f"{slug}-{uuid.uuid4().hex[:8]}")
            if not directory.exists():
                return directory

    def _create_session(self, project: Mapping[str, Any], workflow_type: str) -> Path:
        """Create a session with a fresh id: the time, then random hex against collisions."""
        for _ in range(5):
            digits = re.sub(r"[^0-9]", "", self._now())
            try:
                return self.checkpoints.create_session(
                    project["project_id"],
                    f"session-{digits[:8]}-{digits[8:14]}-{secrets.token_hex(3)}",
                    project["user_id"],
                    workflow_type,
                    project["execution_mode"],
                )
            except SessionExistsError:
                continue
        raise SessionExistsError(f"could not find an unused session id in project {project['project_id']}")

    def _preferences_path(self, user_id: str) -> Path:
        """``_users/{folder}/preferences.yaml``: the folder is ``user_dir_name`` of the id,
        never the id itself, since a user id is data (``grace@example.com``)."""
        return self.base_dir / USERS_DIR / user_dir_name(user_id) / PREFERENCES_FILE


# -------------------------------------------------------------------- files


def _parse_project(text: str, path: Path, project_id: str) -> dict[str, Any]:
    """The checked mapping of a project.yaml; DocumentError names file, line, field, value."""
    node, loaded = parse_yaml(text, path)
    if node is None or not isinstance(loaded, dict):
        raise DocumentError(f"must be a mapping of fields, got {type(loaded).__name__}", path=path)
    data: dict[str, Any] = dict(loaded)
    take_version(node, data, path)
    for key, legacy in _LEGACY_TIMESTAMPS.items():
        if key not in data and legacy in data:
            data[key] = data[legacy]
    for key in (*_TIMESTAMP_FIELDS, *_LEGACY_TIMESTAMPS.values()):
        value = data.get(key)  # an unquoted timestamp written by hand loads as a datetime
        if isinstance(value, datetime) and value.tzinfo is not None:
            data[key] = format_timestamp(value)
    errors = schema_errors("project", data)
    if errors:
        field = str(errors[0].absolute_path[0]) if errors[0].absolute_path else None
        if field is not None and field not in loaded:  # read from its version-0 name
            field = _LEGACY_TIMESTAMPS.get(field, field)
        line = None if field is None else line_of(node, [field])
        raise DocumentError(describe(errors[0]), path=path, line=line, field=field)
    if data["project_id"] != project_id:
        raise DocumentError(
            f"{data['project_id']!r} is not the project's directory name {project_id!r}",
            path=path,
            line=line_of(node, ["project_id"]),
            field="project_id",
        )
    return data


def _write_project(directory: Path, data: Mapping[str, Any]) -> None:
    _storage.atomic_write(directory / PROJECT_FILE, _project_text(data))


def _project_text(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump({VERSION_KEY: FORMAT_VERSION, **data}, sort_keys=False, allow_unicode=True)


def _read_preferences(path: Path) -> dict[str, Any]:
    try:
        text = read_yaml(path)
    except FileNotFoundError:
        return {}
    _, loaded = parse_yaml(text, path)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise DocumentError(f"must be a mapping of preferences, got {type(loaded).__name__}", path=path)
    try:
        return dict(_plain(loaded, "preferences"))
    except InvalidArgumentError as error:
        raise DocumentError(str(error), path=path, field=error.field) from None


def order_versions(names: Iterable[str]) -> list[tuple[int, str]]:
    """The requirement versions among ``names`` in order, each with its number.

    Files numbered in their name (``requirements_v7.md``, written by earlier haytham or by
    hand) keep their number and come first; files named by time come after, ordered by
    their completion time then name and numbered on from the highest numbered one. Other
    names are not versions and are left out.
    """
    names = list(names)
    numbered = sorted(
        (int(found.group(1)), name) for name in names if (found := REQUIREMENTS_NUMBERED.fullmatch(name))
    )
    timed = sorted(
        (moment, name)
        for name in names
        if (found := REQUIREMENTS_TIMED.fullmatch(name))
        and (moment := _parse_compact(found.group(1))) is not None
    )
    start = numbered[-1][0] if numbered else 0
    return numbered + [(start + index, name) for index, (_, name) in enumerate(timed, 1)]


def _completed_sessions(data: Mapping[str, Any], outputs: Path) -> set[str]:
    """The ids of the sessions ``complete_session`` completed: named by a requirements version
    (``requirements_{time}_{session}.md``), or recorded ``completed`` in the ``sessions`` list
    that the first implementation kept in project.yaml (its versions do not name a session)."""
    try:
        names = os.listdir(outputs)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    done = {
        found.group(2).split("~")[0]
        for _, name in order_versions(names)
        if (found := REQUIREMENTS_TIMED.fullmatch(name)) is not None
    }
    recorded = data.get("sessions")
    for entry in recorded if isinstance(recorded, list) else []:
        if isinstance(entry, dict) and entry.get("status") == "completed" and entry.get("session_id"):
            done.add(str(entry["session_id"]))
    return done


def _latest_version(outputs: Path) -> int | None:
    try:
        names = os.listdir(outputs)
    except FileNotFoundError:
        return None
    versions = order_versions(names)
    return versions[-1][0] if versions else None


def _compact(timestamp: str) -> str:
    """``2024-11-24T10:00:04Z`` as ``20241124T100004Z``: sortable and safe in a file name."""
    return timestamp.replace("-", "").replace(":", "")


def _parse_compact(text: str) -> datetime | None:
    try:
        return datetime.strptime(
            text.replace("Z", "+0000"), "%Y%m%dT%H%M%S.%f%z" if "." in text else "%Y%m%dT%H%M%S%z"
        )
    except ValueError:
        return None


def _unused_version_path(outputs: Path, timestamp: str, session_id: str) -> Path:
    """``requirements_{time}_{session_id}.md``; a second completion of the session in the
    same clock tick gets ``~2``, ``~3``, ... before ``.md`` (they sort after the first)."""
    stem = f"requirements_{_compact(timestamp)}_{session_id}"
    path = outputs / f"{stem}.md"
    count = 1
    while path.exists():
        count += 1
        path = outputs / f"{stem}~{count}.md"
    return path


def _completed_version(
    outputs: Path, names: list[str], session_id: str, content: str
) -> tuple[int, str] | None:
    """The newest version of ``session_id`` when it holds exactly ``content`` (the
    completion is being retried), else None."""
    expected = content.encode("utf-8")
    for number, name in reversed(order_versions(names)):
        found = REQUIREMENTS_TIMED.fullmatch(name)
        if found is None or found.group(2).split("~")[0] != session_id:
            continue
        try:
            same = read_file(outputs / name) == expected
        except OSError:
            return None
        return (number, name) if same else None
    return None


# ---------------------------------------------------------------- changelog


def _one_line(value: object) -> str:
    """A value on one line: text that could start a line or a heading is JSON-quoted."""
    if value is None or isinstance(value, str):
        text = write_text(value)
        return json.dumps(value, ensure_ascii=False) if text.startswith("#") else text
    return json.dumps(value)


def _heading(project_name: str) -> str:
    return f"# Changelog: {_one_line(project_name)}\n"


def _block(timestamp: str, event: str, fields: Sequence[tuple[str, object]]) -> str:
    lines = [f"\n## {timestamp} — {event}"]
    lines += [f"- {key}: {_one_line(value)}" for key, value in fields]
    return "\n".join(lines) + "\n"


def _summary(data: Mapping[str, Any]) -> list[tuple[str, object]]:
    return [
        ("Project", data["project_id"]),
        ("User", data["user_id"]),
        ("Mode", data["execution_mode"]),
        ("Idea", data["startup_idea"]),
    ]


# --------------------------------------------------------------- arguments


def _check_text(field: str, value: object, *, blank_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string, got {value!r}", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidArgumentError(
            f"{field} holds {error.object[error.start : error.end]!r}, which UTF-8 cannot store",
            field=field,
        ) from None
    if not blank_ok and not value.strip():
        raise InvalidArgumentError(f"{field} is blank", field=field)
    return value


def _is_safe(name: str) -> bool:
    """True for a folder name a project may have: any name ``check_path_name`` accepts
    (ids of the first implementation included) but haytham's own ``_users`` folder."""
    if name == USERS_DIR:
        return False
    try:
        check_path_name("name", name)
    except UnsafeNameError:
        return False
    return True


def _message_of(error: HaythamError) -> str:
    """The error's own words, without the location an Issue carries separately."""
    return error.message if isinstance(error, DocumentError) else str(error)


def _check_status(status: object) -> None:
    if status not in PROJECT_STATUSES:
        raise InvalidArgumentError(
            f"status {status!r} is not valid (expected one of {', '.join(PROJECT_STATUSES)})", field="status"
        )


def _check_metrics(metrics: Mapping[str, object] | None) -> list[tuple[str, object]]:
    """Metrics as changelog fields: safe names for keys, one scalar per value."""
    if metrics is None:
        return []
    if not isinstance(metrics, Mapping):
        raise InvalidArgumentError(f"metrics must be a dict, got {metrics!r}", field="metrics")
    fields: list[tuple[str, object]] = []
    for key, value in metrics.items():
        check_name("metrics key", key)
        if value is not None and not isinstance(value, (str, int, float)):
            raise InvalidArgumentError(
                f"metrics[{key!r}] is {value!r}: use a string, number, boolean or None", field="metrics"
            )
        fields.append((key, _plain(value, f"metrics[{key!r}]")))
    return fields


def _plain(value: object, where: str) -> Any:
    """A plain copy of a JSON-like value, which safe_dump writes and safe_load reads back."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(_check_text(where, value, blank_ok=True))
    if isinstance(value, list):
        return [_plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise InvalidArgumentError(f"{where} has the key {key!r}, which is not a string", field=where)
        return {str(key): _plain(item, f"{where}[{key!r}]") for key, item in value.items()}
    raise InvalidArgumentError(
        f"{where} is {value!r} ({type(value).__name__}): use str, int, float, bool, None, "
        "list, or dict with str keys",
        field=where,
    )


def _default_title(idea: str) -> str:
    """Up to six words of the idea's first line, without trailing punctuation."""
    words = idea.strip().splitlines()[0].split()[:6]
    title = " ".join(words).rstrip(".,;:!?-")[:60].strip()
    return title[:1].upper() + title[1:] if title else "Untitled project"


def _slug(name: str) -> str:
    """``My Café App!`` -> ``my-cafe-app``; ``project`` when nothing of the name is left."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:50].rstrip("-") or "project"


__all__ = ["PROJECT_STATUSES", "ProjectManager", "order_versions"]
