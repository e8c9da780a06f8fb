"""haytham: the sessions of phased multi-agent workflows, kept as plain markdown files."""

from haytham.errors import (
    AlreadyExistsError,
    DocumentError,
    HaythamError,
    InvalidArgumentError,
    Issue,
    LockTimeout,
    NotFoundError,
    PhaseNotFoundError,
    ProjectExistsError,
    ProjectNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    UnknownPhaseError,
    UnsafeNameError,
    UnsafePathError,
)
from haytham.format.workflow import IDEA_VALIDATION, PhaseDefinition, Workflow
from haytham.projects import ProjectManager
from haytham.records import (
    AgentOutput,
    AgentRun,
    CurrentPhase,
    PhaseCheckpoint,
    PhaseRow,
    SessionManifest,
    SessionMetrics,
    UserFeedback,
)
from haytham.store.manager import CheckpointManager

__version__ = "0.1.0"

__all__ = [
    "IDEA_VALIDATION",
    "AgentOutput",
    "AgentRun",
    "AlreadyExistsError",
    "CheckpointManager",
    "CurrentPhase",
    "DocumentError",
    "HaythamError",
    "InvalidArgumentError",
    "Issue",
    "LockTimeout",
    "NotFoundError",
    "PhaseCheckpoint",
    "PhaseDefinition",
    "PhaseNotFoundError",
    "PhaseRow",
    "ProjectExistsError",
    "ProjectManager",
    "ProjectNotFoundError",
    "SessionExistsError",
    "SessionManifest",
    "SessionMetrics",
    "SessionNotFoundError",
    "UnknownPhaseError",
    "UnsafeNameError",
    "UnsafePathError",
    "UserFeedback",
    "Workflow",
    "__version__",
]
