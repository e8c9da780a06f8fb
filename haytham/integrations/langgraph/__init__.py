"""haytham as a LangGraph checkpointer: ``HaythamSaver`` keeps each thread as a session.

Needs the ``langgraph`` extra (``pip install 'haytham[langgraph]'``); haytham itself never
imports this package. ``docs/langgraph.md`` describes the mapping and the files.
"""

from __future__ import annotations

try:
    import langgraph.checkpoint.base  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a process without the extra
    raise ImportError(
        "haytham.integrations.langgraph needs LangGraph: pip install 'haytham[langgraph]'"
    ) from error

from typing import TYPE_CHECKING, Any

from haytham.integrations.langgraph.saver import HaythamSaver

if TYPE_CHECKING:
    from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW, open_review, resume_command

__all__ = ["LANGGRAPH_WORKFLOW", "HaythamSaver", "open_review", "resume_command"]

_REVIEW = ("LANGGRAPH_WORKFLOW", "open_review", "resume_command")


def __getattr__(name: str) -> Any:
    """The review's names, imported when first asked for: a process that only reads
    checkpoints never loads the workflow and review machinery (PEP 562)."""
    if name in _REVIEW:
        from haytham.integrations.langgraph import review

        return getattr(review, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
