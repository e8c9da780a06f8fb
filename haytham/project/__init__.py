"""Projects: ``project.yaml``, versioned outputs and the changelog."""

from haytham.projects import ProjectManager

__all__ = ["ProjectManager"]
