"""The four kinds of session file, each with the same verbs: ``read``, ``parse``, ``render``."""

from haytham.format.agent_output import AGENT_OUTPUT
from haytham.format.checkpoint import CHECKPOINT
from haytham.format.document import DocumentFormat, ReadCache
from haytham.format.feedback import FEEDBACK
from haytham.format.history_entry import HISTORY_ENTRY
from haytham.format.manifest import MANIFEST

__all__ = [
    "AGENT_OUTPUT",
    "CHECKPOINT",
    "FEEDBACK",
    "HISTORY_ENTRY",
    "MANIFEST",
    "DocumentFormat",
    "ReadCache",
]
