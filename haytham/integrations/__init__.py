"""Bridges between haytham's sessions and other frameworks, each behind its own optional extra.

A module here may import base, format, store and the feature modules, never ``run/``, ``git/``
or ``cli/``; nothing in haytham imports an integration, so the core never needs the framework
an integration is for (``docs/architecture.md``).
"""
