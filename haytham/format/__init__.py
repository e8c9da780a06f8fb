"""The four kinds of session file, each with the same verbs: ``read``, ``parse``, ``render``.

The names below are imported from their modules on first use (PEP 562), so importing
``haytham.format.layout`` (every file name) does not import the parsers.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from haytham.format.agent_output import AGENT_OUTPUT
    from haytham.format.checkpoint import CHECKPOINT
    from haytham.format.document import DocumentFormat, ReadCache
    from haytham.format.feedback import FEEDBACK
    from haytham.format.history_entry import HISTORY_ENTRY
    from haytham.format.manifest import MANIFEST

_HOMES = {
    "AGENT_OUTPUT": "haytham.format.agent_output",
    "CHECKPOINT": "haytham.format.checkpoint",
    "DocumentFormat": "haytham.format.document",
    "ReadCache": "haytham.format.document",
    "FEEDBACK": "haytham.format.feedback",
    "HISTORY_ENTRY": "haytham.format.history_entry",
    "MANIFEST": "haytham.format.manifest",
}

__all__ = [
    "AGENT_OUTPUT",
    "CHECKPOINT",
    "FEEDBACK",
    "HISTORY_ENTRY",
    "MANIFEST",
    "DocumentFormat",
    "ReadCache",
]


def __getattr__(name: str) -> _typing.Any:
    """A name of ``__all__``, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'haytham.format' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
