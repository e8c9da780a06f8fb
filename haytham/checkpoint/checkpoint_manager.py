"""The import path of the product document; the manager lives in ``haytham.store.manager``."""

from haytham.store.manager import CheckpointManager

__all__ = ["CheckpointManager"]
