"""haytham: the sessions of phased multi-agent workflows, kept as plain markdown files.

Everything a program needs is importable from here: the managers (``CheckpointManager``
is the core; ``ProjectManager`` builds projects on it), the runner and what agents get and
return, workflow definitions, every record a public method returns, and every error.
Features live in their own modules: ``haytham.compare.compare``, ``haytham.transfer``
(``export_session``, ``import_session``), ``haytham.retention.cleanup``,
``haytham.analytics`` and ``haytham.config``.
"""

from haytham.compare import AgentDiff, Comparison
from haytham.errors import (
    AlreadyExistsError,
    DocumentError,
    GitError,
    HaythamError,
    InvalidArgumentError,
    Issue,
    LockTimeout,
    NotFoundError,
    PathError,
    PhaseNotFoundError,
    ProjectExistsError,
    ProjectNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    StaleReviewError,
    StorageError,
    StorageIsADirectoryError,
    StorageNotADirectoryError,
    StoragePermissionError,
    UnknownPhaseError,
    UnsafeNameError,
    UnsafePathError,
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

__version__ = "0.1.0"

__all__ = [
    "IDEA_VALIDATION",
    "AgentContext",
    "AgentDiff",
    "AgentOutput",
    "AgentResult",
    "AgentRun",
    "AlreadyExistsError",
    "Attempt",
    "CheckpointManager",
    "Comparison",
    "CurrentPhase",
    "DocumentError",
    "Event",
    "Finding",
    "GitError",
    "HaythamError",
    "HistoryEntry",
    "InvalidArgumentError",
    "Issue",
    "LockTimeout",
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
    "UnknownPhaseError",
    "UnsafeNameError",
    "UnsafePathError",
    "UserFeedback",
    "Workflow",
    "WorkflowChangedError",
    "__version__",
]
