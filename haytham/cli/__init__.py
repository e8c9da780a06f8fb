"""The ``haytham`` command line: one module per command group, on the library's public API.

``haytham.cli.main`` holds the group and ``main()``. This package imports nothing itself, so
``python -m haytham.cli.git`` (the merge driver git runs) loads only what it needs and never
finds its own module already imported.
"""
