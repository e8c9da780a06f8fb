"""haytham: the sessions of phased multi-agent workflows, kept as plain markdown files.

Everything a program needs is importable from here: the managers (``CheckpointManager``
is the core; ``ProjectManager`` builds projects on it), the runner and what agents get and
return, workflow definitions, every record a public method returns, and every error.
Features live in their own modules: ``haytham.compare.compare``, ``haytham.transfer``
(``export_session``, ``import_session``), ``haytham.retention.cleanup``,
``haytham.analytics``, ``haytham.config`` and ``haytham.otel`` (``export_trace``: a
session as an OpenTelemetry trace, with the otel extra).
"""

import typing as _typing

from haytham.version import __version__

if _typing.TYPE_CHECKING:
    from haytham.compare import AgentDiff, Comparison
    from haytham.errors import (
        AgentImportError,
        AgentTimeout,
        AlreadyExistsError,
        CollectorError,
        DocumentError,
        DriverNotConfigured,
        GitError,
        HaythamError,
        InvalidArgumentError,
        Issue,
        LockTimeout,
        MissingExtraError,
        MoveRefusedError,
        NotFoundError,
        PathError,
        PhaseNotFoundError,
        ProjectExistsError,
        ProjectNotFoundError,
        PushRejected,
        RemoteRefused,
        ReviewConflictError,
        SessionBusyError,
        SessionClaimed,
        SessionExistsError,
        SessionNotFoundError,
        StaleReviewError,
        StorageError,
        StorageIsADirectoryError,
        StorageNotADirectoryError,
        StoragePermissionError,
        SyncConflict,
        UnencodableValueError,
        UnknownPhaseError,
        UnsafeFileError,
        UnsafeNameError,
        UnsafePathError,
        WorkerStopped,
        WorkflowChangedError,
    )
    from haytham.format.workflow import IDEA_VALIDATION, PhaseDefinition, Workflow
    from haytham.projects import ProjectManager
    from haytham.records import (
        AgentOutput,
        AgentRun,
        Attempt,
        CurrentPhase,
        HistoryEntry,
        PhaseCheckpoint,
        PhaseRow,
        SessionManifest,
        SessionMetrics,
        UserFeedback,
    )
    from haytham.run.runner import AgentContext, AgentResult, PhaseRunner
    from haytham.store.doctor import Finding
    from haytham.store.events import Event
    from haytham.store.manager import CheckpointManager
    from haytham.store.scan import SessionSummary

_HOMES: dict[str, str] = {
    "AgentDiff": "haytham.compare",
    "Comparison": "haytham.compare",
    "AgentImportError": "haytham.errors",
    "CollectorError": "haytham.errors",
    "MissingExtraError": "haytham.errors",
    "DriverNotConfigured": "haytham.errors",
    "PushRejected": "haytham.errors",
    "RemoteRefused": "haytham.errors",
    "SessionBusyError": "haytham.errors",
    "SessionClaimed": "haytham.errors",
    "SyncConflict": "haytham.errors",
    "WorkerStopped": "haytham.errors",
    "ReviewConflictError": "haytham.errors",
    "AgentTimeout": "haytham.errors",
    "AlreadyExistsError": "haytham.errors",
    "DocumentError": "haytham.errors",
    "GitError": "haytham.errors",
    "HaythamError": "haytham.errors",
    "InvalidArgumentError": "haytham.errors",
    "Issue": "haytham.errors",
    "LockTimeout": "haytham.errors",
    "MoveRefusedError": "haytham.errors",
    "NotFoundError": "haytham.errors",
    "PathError": "haytham.errors",
    "PhaseNotFoundError": "haytham.errors",
    "ProjectExistsError": "haytham.errors",
    "ProjectNotFoundError": "haytham.errors",
    "SessionExistsError": "haytham.errors",
    "SessionNotFoundError": "haytham.errors",
    "StaleReviewError": "haytham.errors",
    "StorageError": "haytham.errors",
    "StorageIsADirectoryError": "haytham.errors",
    "StorageNotADirectoryError": "haytham.errors",
    "StoragePermissionError": "haytham.errors",
    "UnencodableValueError": "haytham.errors",
    "UnknownPhaseError": "haytham.errors",
    "UnsafeFileError": "haytham.errors",
    "UnsafeNameError": "haytham.errors",
    "UnsafePathError": "haytham.errors",
    "WorkflowChangedError": "haytham.errors",
    "IDEA_VALIDATION": "haytham.format.workflow",
    "PhaseDefinition": "haytham.format.workflow",
    "Workflow": "haytham.format.workflow",
    "ProjectManager": "haytham.projects",
    "AgentOutput": "haytham.records",
    "AgentRun": "haytham.records",
    "Attempt": "haytham.records",
    "CurrentPhase": "haytham.records",
    "HistoryEntry": "haytham.records",
    "PhaseCheckpoint": "haytham.records",
    "PhaseRow": "haytham.records",
    "SessionManifest": "haytham.records",
    "SessionMetrics": "haytham.records",
    "UserFeedback": "haytham.records",
    "AgentContext": "haytham.run.runner",
    "AgentResult": "haytham.run.runner",
    "PhaseRunner": "haytham.run.runner",
    "Finding": "haytham.store.doctor",
    "Event": "haytham.store.events",
    "CheckpointManager": "haytham.store.manager",
    "SessionSummary": "haytham.store.scan",
}
"""Where each public name lives. ``import haytham`` imports none of them: a name's module is
imported when the name is first used, so ``haytham --version`` and a validation do not pay
for the runner (asyncio) or the features they do not use."""


def __getattr__(name: str) -> _typing.Any:
    """A public name, imported from its module on first use (PEP 562)."""
    import importlib

    if name in _HOMES:
        value: _typing.Any = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'haytham' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "IDEA_VALIDATION",
    "AgentContext",
    "AgentDiff",
    "AgentImportError",
    "AgentOutput",
    "AgentResult",
    "AgentRun",
    "AgentTimeout",
    "AlreadyExistsError",
    "Attempt",
    "CheckpointManager",
    "CollectorError",
    "Comparison",
    "CurrentPhase",
    "DocumentError",
    "DriverNotConfigured",
    "Event",
    "Finding",
    "GitError",
    "HaythamError",
    "HistoryEntry",
    "InvalidArgumentError",
    "Issue",
    "LockTimeout",
    "MissingExtraError",
    "MoveRefusedError",
    "NotFoundError",
    "PathError",
    "PhaseCheckpoint",
    "PhaseDefinition",
    "PhaseNotFoundError",
    "PhaseRow",
    "PhaseRunner",
    "ProjectExistsError",
    "ProjectManager",
    "ProjectNotFoundError",
    "PushRejected",
    "RemoteRefused",
    "ReviewConflictError",
    "SessionBusyError",
    "SessionClaimed",
    "SessionExistsError",
    "SessionManifest",
    "SessionMetrics",
    "SessionNotFoundError",
    "SessionSummary",
    "StaleReviewError",
    "StorageError",
    "StorageIsADirectoryError",
    "StorageNotADirectoryError",
    "StoragePermissionError",
    "SyncConflict",
    "UnencodableValueError",
    "UnknownPhaseError",
    "UnsafeFileError",
    "UnsafeNameError",
    "UnsafePathError",
    "UserFeedback",
    "WorkerStopped",
    "Workflow",
    "WorkflowChangedError",
    "__version__",
]
