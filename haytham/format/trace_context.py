"""The W3C Trace Context ids of a session (https://www.w3.org/TR/trace-context/), derived from
where things stand in it, so the runner and the OpenTelemetry export agree without sharing
any state: one trace per session, one span per place in it (the session's root, a phase
attempt, an agent run). An agent's own spans, started under the ``traceparent`` the runner
gives it, then fall under that agent's span of the exported trace (docs/otel.md)."""

from __future__ import annotations

import hashlib


def trace_id(project_id: str, session_id: str) -> str:
    """The session's trace id: 32 lowercase hex digits, never all zeros (SHA-256 of ``trace``,
    project and session joined by NUL, which no name holds)."""
    return _nonzero(hashlib.sha256(f"trace\0{project_id}\0{session_id}".encode()).hexdigest()[:32])


def span_id(project_id: str, session_id: str, *where: object) -> str:
    """A span id: 16 lowercase hex digits, never all zeros, from the session and the place in
    it: ``()`` the root, ``(phase, attempt)`` a phase attempt, ``(phase, attempt, agent)`` an
    agent run (SHA-256 of ``span`` and the parts joined by NUL)."""
    seed = "\0".join(["span", project_id, session_id, *(str(part) for part in where)])
    return _nonzero(hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16])


def traceparent(project_id: str, session_id: str, phase: int, attempt: int, agent: str) -> str:
    """``00-{trace id}-{parent id}-01`` of an agent run: version 00, sampled (level 1)."""
    return (
        f"00-{trace_id(project_id, session_id)}-{span_id(project_id, session_id, phase, attempt, agent)}-01"
    )


def _nonzero(digits: str) -> str:
    """The W3C spec makes an all-zero id invalid; a hash gives one once in 2**64 at worst."""
    return digits if digits.strip("0") else digits[:-1] + "1"
