"""A reviewer's answer to a paused CrewAI flow, and the flow resumed with it.

A pending ``@human_feedback`` is its method's phase awaiting review (``persistence``). Once a
person approves it or sends it back (``haytham feedback``, the editor, the review page),
``review_answer`` reads that review as CrewAI's feedback: the text is the comments and the
requested changes; the outcome is the ``emit`` outcome the comments start with, else, for an
approval, the default outcome (or the first). ``resume_from_review`` resumes the flow with it
through ``Flow.from_pending(flow_id).resume(feedback)``; an outcome the reviewer chose is
used as it is, without asking CrewAI's LLM to collapse the text into one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haytham.format.patterns import lazy
from haytham.integrations.crewai import files

if TYPE_CHECKING:
    from crewai.flow.flow import Flow

    from haytham.integrations.crewai.persistence import HaythamFlowPersistence

_FIRST_WORD = lazy(r"[`*_\"']*([^\s`*_\"',.;:!]+)")


@dataclass(frozen=True)
class ReviewAnswer:
    """What a reviewer answered to a paused flow, as CrewAI takes it."""

    approved: bool
    feedback: str
    """The text for ``Flow.resume``: the comments, then each requested change as ``- ...``."""
    outcome: str | None
    """The ``emit`` outcome chosen, or None (no outcomes, or a send-back naming none: CrewAI's
    LLM then collapses ``feedback``, as it does for any feedback)."""


def _chosen_outcome(comments: str, emit: list[str], default: str | None, approved: bool) -> str | None:
    found = _FIRST_WORD.match(comments.strip())
    if found is not None:
        word = found.group(1).lower()
        for outcome in emit:
            if outcome.lower() == word:
                return outcome
    if approved and emit:
        return default if default in emit else emit[0]
    return None


def review_answer(persistence: HaythamFlowPersistence, flow_uuid: str) -> ReviewAnswer | None:
    """The review of the run's pending feedback, or None when nothing waits or nobody answered."""
    number = persistence.pending_phase(flow_uuid)
    if number is None:
        return None
    session = persistence.session(flow_uuid)
    view = session.state().phase(number)
    if view.state not in ("approved", "sent_back"):
        return None
    review = session.feedback(number)
    comments = review.comments.strip() if review and review.comments else ""
    changes = list(review.requested_changes) if review else []
    feedback = "\n".join([*([comments] if comments else []), *(f"- {change}" for change in changes)])
    context = files.parse_feedback_context(session.agent_output(number, files.FEEDBACK_AGENT).content)
    emit = [str(outcome) for outcome in context.get("emit") or []]
    default = context.get("default_outcome")
    approved = view.state == "approved"
    return ReviewAnswer(approved, feedback, _chosen_outcome(comments, emit, default, approved))


def resume_from_review(
    flow_class: type[Flow[Any]], persistence: HaythamFlowPersistence, flow_uuid: str, **kwargs: Any
) -> Any:
    """Resume the paused run with its review; return what ``Flow.resume`` returns, or None
    (and nothing runs) while the review is not answered. ``kwargs`` go to ``from_pending``."""
    answer = review_answer(persistence, flow_uuid)
    if answer is None:
        return None
    flow = flow_class.from_pending(flow_uuid, persistence, **kwargs)
    outcome = answer.outcome
    if outcome is not None:
        pending = flow.pending_feedback
        if pending is not None and not answer.feedback.strip():
            pending.default_outcome = outcome  # CrewAI takes the default for an empty answer

        def chosen(feedback: str, outcomes: Any, llm: Any) -> str:
            return outcome

        setattr(flow, "_collapse_to_outcome", chosen)  # noqa: B010 - the reviewer chose it
    return flow.resume(answer.feedback)
