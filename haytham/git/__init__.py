"""git: the repository helper, the merge driver for session files and auto-commit."""
