"""Projects: ``project.yaml``, versioned outputs and the changelog."""
