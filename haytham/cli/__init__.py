"""The ``haytham`` command line: one module per command group, on the library's public API."""

from haytham.cli.main import main

__all__ = ["main"]
