"""The ``notify:`` hook of haytham.yaml: tell another program when a phase starts awaiting
its review and when a review decides it.

A ``Notifier`` subscribes to a manager's events (``store.events``): the blank review a phase
starts awaiting its review with (``feedback_saved`` with ``created``), a checkpoint saved
completed while the phase awaits its review (``phase_completed``), and a review that moves the
phase (``feedback_saved`` with ``moved_from``: approved, sent back, skipped). For each it
builds one JSON event (``EVENT_VERSION``, the keys of ``EVENT_KEYS``, docs/notify.md) from
what the files say now (``CheckpointManager.state``, the review, the workflow's
``reviewers:``) and delivers it in a background thread: the configured command gets it on
its standard input, the configured URL as the body of a POST. Nothing of a delivery ever
reaches the run: a command that fails or hangs, a URL that refuses or times out is logged on
the ``haytham`` logger and appended to ``{base_dir}/.haytham-cache/notify-failures.log``,
which ``haytham doctor`` shows (``recent_failures``). ``flush`` waits for the deliveries
under way, at most their timeout: the command line calls it before it exits, and every
notifier is flushed at the interpreter's exit for any other program.

Reviews written by hand (an editor outside haytham, a ``git pull``) make no haytham write and
so no event: they are not notified.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from haytham.errors import HaythamError, InvalidArgumentError
from haytham.format.guard import read_file
from haytham.format.layout import INDEX_DIR, NOTIFY_FAILURES_FILE
from haytham.store import fs as _storage
from haytham.store import lifecycle
from haytham.store.advice import run_by_of
from haytham.store.events import Event, logger
from haytham.store.manager import CheckpointManager

EVENT_VERSION = 1
"""The version of the event's shape; a change that removes or renames a key raises it."""
NotifyEvent = Literal["awaiting_review", "review_decided"]
EVENT_KEYS: Mapping[str, str] = {
    "version": f"the shape's version ({EVENT_VERSION})",
    "event": "`awaiting_review` (a phase starts awaiting its review) or `review_decided` (a review moved it)",
    "project": "the project id",
    "session": "the session id",
    "phase": "the phase number",
    "phase_name": "the phase's name",
    "attempt": "the phase's attempt (1 for the first run)",
    "state": "the phase's lifecycle state now (`awaiting_review`, `approved`, `sent_back`, `skipped`)",
    "previous_state": "for `review_decided`, the state the review moved the phase from; else null",
    "outcome": "for `review_decided`, `approved`, `sent_back` or `skipped`; else null",
    "comments": "for `review_decided`, the review's comments; else null",
    "reviewer": "for `review_decided`, who reviewed as the review records it, or null",
    "reviewers": "who the workflow assigns to review the phase (`reviewers:`); empty: anyone",
    "time": "when haytham saw the change, ISO 8601 UTC",
    "session_dir": "the session's folder, absolute",
    "command": "the haytham command that acts next: the review for `awaiting_review`, "
    "the resume after a decision (for a session LangGraph or CrewAI runs, the Python that "
    "resumes its graph or flow: haytham.format.run_by)",
}
"""The keys of every event, in order (docs/notify.md is written from the same list)."""
DEFAULT_TIMEOUT = 5.0
"""Seconds a command or a POST may take before it counts as failed."""
MAX_LOG_BYTES = 64 * 1024
"""The failure log is cut to its newer half beyond this size: it stays small, whatever fails."""


@dataclass(frozen=True)
class NotifyConfig:
    """``notify:`` of haytham.yaml: a command, a URL, or both, and their timeout."""

    command: str | None = None
    """Run (split like a shell line, run without a shell) with the event on its standard input."""
    url: str | None = None
    """An ``http://`` or ``https://`` URL the event is POSTed to as ``application/json``."""
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if self.command is not None and not shlex.split(self.command):
            raise InvalidArgumentError("notify.command is empty", field="command")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"notify.url {self.url!r} is not an http:// or https:// URL", field="url"
            )
        if not self.timeout > 0:
            raise InvalidArgumentError(
                f"notify.timeout {self.timeout!r} is not a positive number", field="timeout"
            )


@dataclass(frozen=True)
class Failure:
    """One delivery that failed, as the failure log keeps it."""

    time: str
    event: str
    project: str
    session: str
    phase: int
    target: str
    """``command`` or ``url``."""
    error: str

    def __str__(self) -> str:
        return (
            f"{self.time}: notify {self.target} failed for {self.event} of "
            f"{self.project}/{self.session} phase {self.phase}: {self.error}"
        )


_ATTACHED: weakref.WeakKeyDictionary[CheckpointManager, Notifier] = weakref.WeakKeyDictionary()
_EVERY: weakref.WeakSet[Notifier] = weakref.WeakSet()


class Notifier:
    """Delivers the events of one or more managers to a ``NotifyConfig``'s command and URL."""

    def __init__(self, config: NotifyConfig, base_dir: Path) -> None:
        self.config = config
        self.base_dir = base_dir
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._announced: set[tuple[str, str, int, int]] = set()
        _EVERY.add(self)

    def attach(self, manager: CheckpointManager) -> Notifier:
        """Subscribe to ``manager``'s events (once: a manager already attached keeps its notifier)."""
        known = _ATTACHED.get(manager)
        if known is not None:
            return known
        manager.on("feedback_saved", lambda event: self._saw(manager, event))
        manager.on("phase_completed", lambda event: self._saw(manager, event))
        _ATTACHED[manager] = self
        return self

    # ------------------------------------------------------------ from events to JSON

    def _saw(self, manager: CheckpointManager, event: Event) -> None:
        """Turn a store event into a notification when it starts or ends a review's wait."""
        p, s, number = event.project_id, event.session_id, event.phase
        if p is None or s is None or number is None:
            return
        data = event.data
        if event.name == "feedback_saved" and data.get("moved_from"):
            self.deliver(build_event(manager, "review_decided", p, s, number, str(data["moved_from"])))
        elif event.name == "phase_completed" or (data.get("created") and not data.get("reviewed")):
            view = manager.state(p, s).phase(number)
            if view.state != "awaiting_review":
                return
            key = (p, s, number, view.attempt)
            with self._lock:
                if key in self._announced:  # save_phase says it twice: completed, then the blank review
                    return
                self._announced.add(key)
            self.deliver(build_event(manager, "awaiting_review", p, s, number))

    # ------------------------------------------------------------ delivery

    def deliver(self, payload: Mapping[str, Any]) -> None:
        """Send ``payload`` to the command and the URL, each in a thread of its own."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        targets = [("command", self._run)] if self.config.command else []
        targets += [("url", self._post)] if self.config.url else []
        for target, send in targets:
            thread = threading.Thread(
                target=self._send,
                args=(target, send, body, payload),
                name=f"haytham-notify-{target}",
                daemon=True,
            )
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            thread.start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for the deliveries under way, at most ``timeout`` seconds (default: the
        configured timeout and one second more); True when none is left."""
        bound = time.monotonic() + (self.config.timeout + 1 if timeout is None else timeout)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, bound - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)

    @staticmethod
    def flush_all(timeout: float | None = None) -> bool:
        """``flush`` every notifier of this process (each at most ``timeout`` seconds, default
        its own timeout and one more); True when no delivery is left under way."""
        return all([notifier.flush(timeout) for notifier in list(_EVERY)])

    def _send(self, target: str, send: Any, body: bytes, payload: Mapping[str, Any]) -> None:
        try:
            send(body)
        except Exception as error:  # whatever fails is the hook's: logged and recorded, never raised
            self._failed(target, payload, error)

    def _run(self, body: bytes) -> None:
        assert self.config.command is not None
        try:
            done = subprocess.run(
                shlex.split(self.config.command),
                input=body,
                capture_output=True,
                timeout=self.config.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(
                f"{self.config.command!r} ran past its {self.config.timeout:g} s timeout"
            ) from None
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            tail = f": {said[-1]}" if said else ""
            raise RuntimeError(f"{self.config.command!r} exited with status {done.returncode}{tail}")

    def _post(self, body: bytes) -> None:
        import urllib.request  # only when a URL is configured

        assert self.config.url is not None
        request = urllib.request.Request(
            self.config.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(
            request, timeout=self.config.timeout
        ) as answer:  # http(s) only: checked in NotifyConfig
            answer.read(1024)

    def _failed(self, target: str, payload: Mapping[str, Any], error: BaseException) -> None:
        where = self.config.command if target == "command" else self.config.url
        message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        logger().warning(
            "haytham: notify %s %r failed for %s: %s", target, where, payload.get("event"), message
        )
        failure = Failure(
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            str(payload.get("event")),
            str(payload.get("project")),
            str(payload.get("session")),
            int(payload.get("phase") or 0),
            target,
            message,
        )
        with self._lock:
            record_failure(self.base_dir, failure)


@atexit.register
def _at_exit() -> None:
    """At the interpreter's exit, wait for the deliveries still under way (each notifier at
    most its timeout and one second more): their threads are daemons, which exit would kill."""
    Notifier.flush_all()


def build_event(
    manager: CheckpointManager,
    name: NotifyEvent,
    project_id: str,
    session_id: str,
    number: int,
    previous_state: str | None = None,
) -> dict[str, Any]:
    """The JSON event (``EVENT_KEYS``) of phase ``number`` as its files say it now."""
    view = manager.state(project_id, session_id).phase(number)
    phase = manager.session_workflow(project_id, session_id).phase(number)
    decided = name == "review_decided"
    feedback = manager.load_feedback(project_id, session_id, number) if decided else None
    verdict = lifecycle.verdict(feedback)
    reviewer = getattr(feedback, "reviewer", None)
    return {
        "version": EVENT_VERSION,
        "event": name,
        "project": project_id,
        "session": session_id,
        "phase": number,
        "phase_name": phase.name,
        "attempt": view.attempt,
        "state": view.state,
        "previous_state": previous_state,
        "outcome": verdict if decided and verdict in ("approved", "sent_back", "skipped") else None,
        "comments": feedback.comments if feedback is not None else None,
        "reviewer": None if reviewer in (None, "") else str(reviewer),
        "reviewers": list(phase.reviewers),
        "time": manager.now(),
        "session_dir": os.path.abspath(manager.session_dir(project_id, session_id)),
        "command": _command(manager, name, project_id, session_id, number),
    }


def _command(
    manager: CheckpointManager, name: NotifyEvent, project_id: str, session_id: str, number: int
) -> str:
    """What acts next on the event: the review, or the resume after a decision, which for a
    session another framework runs is that framework's code (``advice.run_by_of``)."""
    if name == "awaiting_review":
        return shlex.join(["haytham", "feedback", project_id, session_id, str(number)])
    outside = run_by_of(manager, project_id, session_id)
    if outside is not None:
        return outside.resume
    return shlex.join(["haytham", "resume", project_id, session_id])


# ------------------------------------------------------------------ the failure log


def failures_path(base_dir: Path) -> Path:
    """Where the failed deliveries of ``base_dir``'s sessions are kept."""
    return base_dir / INDEX_DIR / NOTIFY_FAILURES_FILE


def record_failure(base_dir: Path, failure: Failure) -> None:
    """Add ``failure`` to the failure log (one JSON object a line), written whole each time
    (``fs.atomic_write``) and cut to its newer half beyond ``MAX_LOG_BYTES``. Two processes
    failing at the same instant may keep one line of the two: it is a diagnostic, not a
    record. A log that cannot be written is only logged."""
    path = failures_path(base_dir)
    line = json.dumps(failure.__dict__, ensure_ascii=False) + "\n"
    try:
        if not base_dir.is_dir() or path.parent.is_symlink():
            return
        if not path.parent.is_dir():
            path.parent.mkdir(exist_ok=True)
            _storage.atomic_write(path.parent / ".gitignore", "# haytham's rebuildable index\n*\n")
        lines = [*_log_text(path).splitlines(keepends=True), line]
        while len(lines) > 1 and sum(len(item) for item in lines) > MAX_LOG_BYTES:
            lines = lines[len(lines) // 2 :]
        _storage.atomic_write(path, "".join(lines))
    except (OSError, HaythamError) as error:
        logger().warning("haytham: could not record a notify failure in %s: %s", path, error)


def _log_text(path: Path) -> str:
    """The failure log's text ("" when there is none yet)."""
    try:
        return read_file(path, MAX_LOG_BYTES * 2).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def recent_failures(
    base_dir: Path, project_id: str | None = None, session_id: str | None = None, limit: int = 20
) -> list[Failure]:
    """The newest ``limit`` failures of the log (of one project or session), oldest first."""
    try:
        text = _log_text(failures_path(base_dir))
    except (OSError, HaythamError):
        return []
    found: list[Failure] = []
    for line in text.splitlines():
        try:
            failure = Failure(**json.loads(line))
        except (ValueError, TypeError):
            continue  # a line cut short by a crash, or written by other code
        if (project_id is None or failure.project == project_id) and (
            session_id is None or failure.session == session_id
        ):
            found.append(failure)
    return found[-limit:]
