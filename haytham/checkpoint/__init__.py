"""Session checkpoints: the manager that saves and loads a session's markdown files."""

from haytham.store.manager import CheckpointManager

__all__ = ["CheckpointManager"]
