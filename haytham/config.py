"""``haytham.yaml``: a project's settings for where sessions live and how long they are kept.

The file sits in the project's root folder, the one that holds the base directory (the
current directory by default). It is checked against ``schemas/config.schema.json``; every
mistake, an unknown key included, is a DocumentError naming the file, the line and the key.
Every key does something: ``storage.base_dir`` is where ``manager()`` keeps sessions,
``retention`` is the ``RetentionPolicy`` of ``cleanup`` and ``haytham prune``, and
``cleanup_on_start`` makes ``open_store`` run that cleanup before handing out the store.

.. code-block:: yaml

    storage:
      base_dir: projects          # relative to this file's folder
    retention:
      max_attempts_per_phase: 3
      max_sessions_per_project: 50
      max_sessions_per_user: null # no limit
      max_age_days: 90
      only_finished: true
      include_in_progress: false
    cleanup_on_start: false
    review:
      reviewer: Alice Smith <alice@example.com>  # default: git's author
    notify:
      command: ./tell-the-team      # gets each event as JSON on its standard input
      url: http://127.0.0.1:9000/haytham   # and/or: each event POSTed as JSON
      timeout: 5
    otel:
      endpoint: http://localhost:6006/v1/traces   # haytham export --otel sends here
      headers: {authorization: Bearer my-key}     # sent with every export
      trace_url: http://localhost:6006/redirects/spans/{span_id}   # haytham serve links each output

``review.reviewer`` is who reviews from this clone when neither ``--reviewer`` nor
``HAYTHAM_REVIEWER`` says (``haytham.format.reviewer``). ``notify`` is told when a phase
starts awaiting its review and when a review decides it (``haytham.notify``, docs/notify.md);
``open_store`` attaches it to the manager it returns. ``otel`` is where ``haytham export
--otel`` sends a session's trace and the link ``haytham serve`` shows beside each agent output
(``haytham.otel.OtelConfig``, docs/otel.md).
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import DocumentError, InvalidArgumentError, NotFoundError
from haytham.format import layout
from haytham.format.reviewer import Reviewer, parse_reviewer
from haytham.format.schema import describe, schema_errors
from haytham.format.yamlfile import line_of, parse_yaml, read_yaml
from haytham.frozen import frozen

if TYPE_CHECKING:
    # PyYAML is imported when a haytham.yaml is read; the notify hook, the otel settings, the
    # retention policy and the manager when a file names them or a caller asks for them, so
    # that finding ./projects without a haytham.yaml (every command without --base-dir, the
    # pre-commit hook's validate among them) imports none of them.
    import yaml

    from haytham.notify import NotifyConfig
    from haytham.otel import OtelConfig
    from haytham.retention import RetentionPolicy
    from haytham.store.clock import Clock
    from haytham.store.manager import CheckpointManager

CONFIG_FILE = layout.CONFIG_FILE
DEFAULT_BASE_DIR = layout.DEFAULT_BASE_DIR


def _default_policy() -> RetentionPolicy:
    """``RetentionPolicy()``, which removes nothing (its module imported only when a
    config is made, not when a command only asks where the sessions are)."""
    from haytham.retention import RetentionPolicy

    return RetentionPolicy()


@frozen
class HaythamConfig:
    """The settings of ``haytham.yaml``, or the defaults when there is none."""

    base_dir: Path = Path(DEFAULT_BASE_DIR)
    """Where the sessions are kept, already joined to the config file's folder."""
    retention: RetentionPolicy = field(default_factory=_default_policy)
    cleanup_on_start: bool = False
    reviewer: Reviewer | None = None
    """``review.reviewer``: who reviews from this clone, when nothing more specific says."""
    notify: NotifyConfig | None = None
    """``notify``: the hook told of reviews awaited and decided; None without one."""
    otel: OtelConfig | None = None
    """``otel``: where trace exports go and the pages' trace links; None without it."""
    path: Path | None = None
    """The file these settings came from; None for the defaults."""

    def manager(self, *, clock: Clock | None = None) -> CheckpointManager:
        """``CheckpointManager(self.base_dir, clock=clock)``: derived from the one way to get
        a manager, with the configured base directory and nothing else."""
        from haytham.store.manager import CheckpointManager

        return CheckpointManager(self.base_dir, clock=clock)


def load_config(path: str | os.PathLike[str]) -> HaythamConfig:
    """Read and check a ``haytham.yaml``; errors are DocumentErrors at file, line and key.

    An empty file means the defaults. A relative ``storage.base_dir`` is taken from the
    file's folder, so the same file works whatever the current directory.
    """
    path = Path(path)
    try:
        text = read_yaml(path)
    except FileNotFoundError:
        raise NotFoundError(f"configuration file {path} does not exist", path=path) from None
    node, data = parse_yaml(text, path)
    if node is None:
        return HaythamConfig(base_dir=path.parent / DEFAULT_BASE_DIR, path=path)
    if not isinstance(data, dict):
        raise DocumentError("a configuration file must be a YAML mapping of settings", path=path, line=1)
    _check_duplicates(node, path, [])
    invalid = schema_errors("config", data)
    if invalid:
        raise _located(invalid[0], node, path)
    storage = data.get("storage") or {}
    retention = data.get("retention") or {}
    reviewer = (data.get("review") or {}).get("reviewer")
    notify = data.get("notify")
    otel = data.get("otel")
    from haytham.retention import RetentionPolicy

    try:
        policy = RetentionPolicy(**retention)
    except InvalidArgumentError as error:  # what the schema cannot say, such as .inf days
        keys = ["retention", error.field] if error.field else ["retention"]
        raise DocumentError(str(error), path=path, line=line_of(node, keys), field=".".join(keys)) from None
    return HaythamConfig(
        base_dir=path.parent / storage.get("base_dir", DEFAULT_BASE_DIR),
        retention=policy,
        cleanup_on_start=data.get("cleanup_on_start", False),
        reviewer=None if reviewer is None else _reviewer(reviewer, node, path),
        notify=None if not notify else _notify(notify, node, path),
        otel=None if not otel else _otel(otel, node, path),
        path=path,
    )


def find_config(directory: str | os.PathLike[str] = ".") -> HaythamConfig:
    """``{directory}/haytham.yaml`` when it exists, else the defaults (base dir ``projects``)."""
    path = _config_file(directory)
    return load_config(path) if path is not None else HaythamConfig(base_dir=_default_base_dir(directory))


def find_base_dir(directory: str | os.PathLike[str] = ".") -> Path:
    """``find_config(directory).base_dir``, without making the other settings when there is
    no haytham.yaml: what every command without ``--base-dir`` asks first (the pre-commit
    hook's ``validate`` among them), which needs neither the retention policy nor the hooks."""
    path = _config_file(directory)
    return load_config(path).base_dir if path is not None else _default_base_dir(directory)


def _config_file(directory: str | os.PathLike[str]) -> Path | None:
    """``{directory}/haytham.yaml`` when it is a file, else None."""
    candidate = Path(directory) / CONFIG_FILE
    return candidate if candidate.is_file() else None


def _default_base_dir(directory: str | os.PathLike[str]) -> Path:
    """Where the sessions are kept without a haytham.yaml in ``directory``."""
    return Path(directory) / DEFAULT_BASE_DIR


def open_store(
    config_path: str | os.PathLike[str] | None = None, *, clock: Clock | None = None
) -> CheckpointManager:
    """The CheckpointManager that ``haytham.yaml`` describes, cleaned up first if it says so.

    Without ``config_path`` the file is ``./haytham.yaml`` when there is one, else the
    defaults. The manager is ``config.manager()``, a plain ``CheckpointManager(base_dir)``,
    with the ``notify`` hook attached when the file has one (``haytham.notify.Notifier``).
    With ``cleanup_on_start: true`` it is handed to ``haytham.retention.cleanup`` with the
    configured policy first (the one way to clean up; nothing here removes anything itself);
    what it removed is logged on the ``haytham`` logger (nobody can have subscribed to the
    new manager's ``cleanup_done`` yet).
    """
    from haytham.notify import Notifier
    from haytham.retention import cleanup
    from haytham.store.events import logger

    config = find_config() if config_path is None else load_config(config_path)
    manager = config.manager(clock=clock)
    if config.notify is not None:
        Notifier(config.notify, manager.base_dir).attach(manager)
    if config.cleanup_on_start:
        report = cleanup(manager, config.retention)
        for removal in report.removed:
            logger().info("haytham: cleanup on start removed %s (%s)", removal.path, removal.reason)
    return manager


def _reviewer(text: str, node: yaml.Node, path: Path) -> Reviewer:
    """``review.reviewer`` as a Reviewer; a DocumentError at its line when it names nobody."""
    try:
        return parse_reviewer(text)
    except InvalidArgumentError as error:
        keys = ["review", "reviewer"]
        raise DocumentError(str(error), path=path, line=line_of(node, keys), field=".".join(keys)) from None


def _notify(data: dict[str, Any], node: yaml.Node, path: Path) -> NotifyConfig:
    """``notify`` as a NotifyConfig; a DocumentError at the line of the key that is wrong."""
    from haytham.notify import DEFAULT_TIMEOUT, NotifyConfig

    if not data.get("command") and not data.get("url"):
        message = "notify names neither a command nor a url: give one or both, or remove notify"
        raise DocumentError(message, path=path, line=line_of(node, ["notify"]), field="notify")
    try:
        return NotifyConfig(data.get("command"), data.get("url"), float(data.get("timeout", DEFAULT_TIMEOUT)))
    except InvalidArgumentError as error:
        keys = ["notify", error.field] if error.field else ["notify"]
        raise DocumentError(str(error), path=path, line=line_of(node, keys), field=".".join(keys)) from None


def _otel(data: dict[str, Any], node: yaml.Node, path: Path) -> OtelConfig:
    """``otel`` as an OtelConfig; a DocumentError at the line of a trace_url that cannot be filled."""
    from haytham.otel import OtelConfig

    try:
        return OtelConfig(data.get("endpoint"), dict(data.get("headers") or {}), data.get("trace_url"))
    except InvalidArgumentError as error:
        keys = ["otel", error.field] if error.field else ["otel"]
        raise DocumentError(str(error), path=path, line=line_of(node, keys), field=".".join(keys)) from None


def _located(error: Any, node: yaml.Node, path: Path) -> DocumentError:
    """A schema error as a DocumentError at the line of the key it is about."""
    keys = [str(k) for k in error.absolute_path]
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(str(k) for k in error.instance if k not in known)
        keys.append(unknown[0])
        message = f"unknown key {unknown[0]!r} (expected one of {', '.join(known)})"
        return DocumentError(message, path=path, line=line_of(node, keys), field=".".join(keys))
    return DocumentError(describe(error), path=path, line=line_of(node, keys), field=".".join(keys) or None)


def _check_duplicates(node: yaml.Node, path: Path, keys: list[str]) -> None:
    """YAML keeps the last of two equal keys silently; a settings file must not."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return
    seen: set[str] = set()
    for key, value in node.value:
        name = str(key.value)
        if name in seen:
            raise DocumentError(
                f"key {name!r} is given twice (the second would silently win)",
                path=path,
                line=int(key.start_mark.line) + 1,
                field=".".join([*keys, name]),
            )
        seen.add(name)
        _check_duplicates(value, path, [*keys, name])
