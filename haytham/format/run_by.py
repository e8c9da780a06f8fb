"""The frameworks that run a session in haytham's stead, and how a person resumes each.

A LangGraph thread (``haytham.integrations.langgraph``) and a CrewAI flow run
(``haytham.integrations.crewai``) are sessions that haytham's runner never runs: the graph or
the flow writes them, pauses in them for a person, and is resumed by its own code once the
person answered. Their session's workflow copy says so with ``run_by: NAME`` (the
``Workflow.run_by`` mark, which the integration writes and the fingerprint leaves out), and
what the advice of ``haytham status``, ``feedback``, ``review`` and the pages tells a person
to do with such a session is here, once: resume the graph or flow with its snippet, never
``haytham resume``.

Sessions written before the mark are known by what the integration has always written: the
workflow's name and the integration's own folder in the session (``langgraph/``,
``crewai/``), which no session of haytham's own has (``recognise``).
"""

from __future__ import annotations

from collections.abc import Callable

from haytham.format.layout import CREWAI_DIR, LANGGRAPH_DIR
from haytham.frozen import frozen


@frozen
class RunBy:
    """A framework that runs sessions: its mark, how people call it, and how to resume it."""

    name: str
    """The mark in the workflow copy (``run_by: langgraph``), also its workflow's name."""
    label: str
    """Its name for people: ``LangGraph``."""
    runs: str
    """What of it runs a session: ``graph``, ``flow``."""
    resume: str
    """The Python that resumes it with the reviewer's answer, as its docs write it."""
    folder: str
    """The folder it keeps in every session it writes (``layout``), by which a session
    written before the mark is known."""


LANGGRAPH = RunBy(
    "langgraph", "LangGraph", "graph", "graph.invoke(resume_command(saver, config), config)", LANGGRAPH_DIR
)
CREWAI = RunBy("crewai", "CrewAI", "flow", "resume_from_review(FlowClass, persistence, flow_id)", CREWAI_DIR)
KNOWN: dict[str, RunBy] = {known.name: known for known in (LANGGRAPH, CREWAI)}
"""Every framework haytham has an integration for, by its mark."""


def run_by(mark: str | None) -> RunBy | None:
    """The framework a workflow's ``run_by`` names; one haytham does not know is said by its
    name alone (resumed "with its own code")."""
    if mark is None:
        return None
    return KNOWN.get(mark) or RunBy(mark, mark, "run", "its own code", "")


def recognise(workflow_name: str, has_folder: Callable[[str], bool]) -> RunBy | None:
    """The framework that wrote a session without the mark, from what is there: a workflow
    of its name and its folder in the session (``has_folder(folder) -> bool``, asked only
    when the name is one of theirs); None for every other session."""
    known = KNOWN.get(workflow_name)
    if known is None or not has_folder(known.folder):
        return None
    return known
