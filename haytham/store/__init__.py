"""The core: files, locks, names, history, scanning, the doctor and the CheckpointManager.

It imports only ``haytham.format``, ``haytham.records`` and ``haytham.errors``; every feature
is built on its public API and none is imported here (``docs/architecture.md``).
"""
