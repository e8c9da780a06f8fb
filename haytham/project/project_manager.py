"""The import path of the product document; the manager lives in ``haytham.projects``."""

from haytham.projects import ProjectManager

__all__ = ["ProjectManager"]
