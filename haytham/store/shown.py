"""What a reviewer was shown of a phase, so that a decision applies only to that.

A review page (and ``haytham feedback`` when it starts) reads the phase's attempt, the digest
of its agent outputs and the version of its ``user_feedback.md``; the decision carries them
back (``save_user_feedback(expected_version=Shown(...))``), and the store compares them with
the files under the session's lock, in the same hold as the write. A decision on anything
else (a new attempt ran, an output changed, the review file changed) is refused with a
``StaleReviewError`` naming what changed, and nothing is written. The review file's version
alone is not enough: a re-run leaves the same blank review template for the next attempt,
so an approval of attempt 1 would land on attempt 2.

The one home of this value, its text form (the hidden field of a page's form) and the words
for what changed.
"""

from __future__ import annotations

from pathlib import Path

from haytham.errors import InvalidArgumentError
from haytham.format import ReadCache
from haytham.format.layout import FEEDBACK_FILE
from haytham.format.patterns import lazy
from haytham.frozen import frozen
from haytham.records import PhaseCheckpoint
from haytham.store import fs
from haytham.store import progress as _progress

_TOKEN = lazy(r"a(?P<attempt>[1-9][0-9]{0,11})-(?P<outputs>[0-9a-f]{16})-(?P<review>[0-9a-f]{20}|none)")
"""The text form of a ``Shown``: ``a{attempt}-{outputs digest}-{review file version}``."""


@frozen
class Shown:
    """What a reviewer was shown of a phase when they decided."""

    attempt: int
    """The phase's attempt (its checkpoint's Retry Count + 1; 1 before any checkpoint)."""
    outputs: str
    """``lifecycle.outputs_digest`` of the phase's agent output files as they were."""
    review: str
    """``fs.file_version`` of the phase's user_feedback.md as it was (``fs.NO_FILE``: none)."""

    @property
    def token(self) -> str:
        """The text a page's form carries back (``parse`` reads it)."""
        return f"a{self.attempt}-{self.outputs}-{self.review}"

    @classmethod
    def parse(cls, token: str) -> Shown:
        """The ``Shown`` a form sent back as ``token``; InvalidArgumentError when it is not one."""
        found = _TOKEN.fullmatch(token)
        if found is None:
            raise InvalidArgumentError(
                f"{token[:80]!r} is not the version of a review page (expected a{{attempt}}-{{outputs}}-"
                "{review}): reload the page and review again",
                field="version",
            )
        return cls(int(found["attempt"]), found["outputs"], found["review"])

    def changes(self, now: Shown) -> tuple[str, ...]:
        """What changed between this (what was shown) and ``now``, in words; empty when nothing did.

        A new attempt names the attempt and leaves the outputs unsaid (they are another
        attempt's); an output or the review file is named when it changed within the attempt."""
        found = []
        if now.attempt != self.attempt:
            if now.attempt > self.attempt:
                found.append(f"a new attempt ran (attempt {now.attempt}; attempt {self.attempt} was shown)")
            else:
                found.append(f"the phase is at attempt {now.attempt} now (attempt {self.attempt} was shown)")
        elif now.outputs != self.outputs:
            found.append("an agent output changed")
        if now.review != self.review:
            found.append(f"{FEEDBACK_FILE} changed (edited by hand or brought by git)")
        return tuple(found)


def attempt_of(checkpoint: PhaseCheckpoint | None) -> int:
    """The attempt a phase's checkpoint is of (1 when the phase has none)."""
    return checkpoint.retry_count + 1 if checkpoint is not None else 1


def shown_now(
    directory: Path,
    checkpoint: PhaseCheckpoint | None,
    digests: _progress.OutputDigests | None,
    reads: ReadCache | None,
    review: str | None = None,
) -> Shown:
    """What the phase folder ``directory`` shows now, its checkpoint being ``checkpoint``:
    the outputs digest through ``digests`` (an unchanged folder is not read again);
    ``review``: the review file's version when the caller read it already (else it is read)."""
    agents = [run.agent_name for run in checkpoint.agents] if checkpoint is not None else []
    outputs = _progress.outputs_digest_of(directory, agents, digests, reads=reads)
    if review is None:
        review = fs.file_version(directory / FEEDBACK_FILE)[0]
    return Shown(attempt_of(checkpoint), outputs, review)


__all__ = ["Shown", "attempt_of", "shown_now"]
