"""haytham as CrewAI's flow persistence: ``HaythamFlowPersistence`` keeps each flow run as a session.

Needs the ``crewai`` extra (``pip install 'haytham[crewai]'``); haytham itself never imports
this package. ``docs/crewai.md`` describes the mapping and the files.
"""

from __future__ import annotations

import warnings

try:
    with warnings.catch_warnings():
        # CrewAI's own import warns about its packages (an ImportWarning from crewai.rag):
        # not the caller's to act on.
        warnings.simplefilter("ignore", ImportWarning)
        import crewai.flow.async_feedback.types
        import crewai.flow.persistence.base  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a process without the extra
    raise ImportError("haytham.integrations.crewai needs CrewAI: pip install 'haytham[crewai]'") from error

from haytham.errors import UnencodableValueError
from haytham.integrations.crewai.persistence import HaythamFlowPersistence
from haytham.integrations.crewai.review import ReviewAnswer, resume_from_review, review_answer

__all__ = [
    "HaythamFlowPersistence",
    "ReviewAnswer",
    "UnencodableValueError",
    "resume_from_review",
    "review_answer",
]
