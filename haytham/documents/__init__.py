"""The four kinds of session file, each with the same verbs: ``read``, ``parse``, ``render``."""

from haytham.documents.agent_output import AGENT_OUTPUT
from haytham.documents.base import DocumentFormat
from haytham.documents.checkpoint import CHECKPOINT
from haytham.documents.feedback import FEEDBACK
from haytham.documents.history_entry import HISTORY_ENTRY
from haytham.documents.manifest import MANIFEST

__all__ = ["AGENT_OUTPUT", "CHECKPOINT", "FEEDBACK", "HISTORY_ENTRY", "MANIFEST", "DocumentFormat"]
