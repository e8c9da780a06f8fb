"""Session checkpoints: the manager that saves and loads a session's markdown files."""

from haytham.checkpoint.checkpoint_manager import CheckpointManager

__all__ = ["CheckpointManager"]
