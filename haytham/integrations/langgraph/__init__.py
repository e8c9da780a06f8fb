"""haytham as a LangGraph checkpointer: ``HaythamSaver`` keeps each thread as a session.

Needs the ``langgraph`` extra (``pip install 'haytham[langgraph]'``); haytham itself never
imports this package. ``docs/langgraph.md`` describes the mapping and the files.
"""

from __future__ import annotations

try:
    import langgraph.checkpoint.base
    import langgraph.types  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a process without the extra
    raise ImportError(
        "haytham.integrations.langgraph needs LangGraph: pip install 'haytham[langgraph]'"
    ) from error

from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW, open_review, resume_command
from haytham.integrations.langgraph.saver import HaythamSaver

__all__ = ["LANGGRAPH_WORKFLOW", "HaythamSaver", "open_review", "resume_command"]
