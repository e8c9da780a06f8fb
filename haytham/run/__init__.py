"""Running workflows: the phase runner and the demo agents."""
