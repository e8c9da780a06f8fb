"""Projects: ``project.yaml``, versioned outputs and the changelog."""

from haytham.project.project_manager import ProjectManager

__all__ = ["ProjectManager"]
