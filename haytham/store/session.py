"""A session as read from its folder: the snapshot every read and write of it starts from."""

from __future__ import annotations

from pathlib import Path

from haytham.errors import UnknownPhaseError
from haytham.format.workflow import PhaseDefinition, Workflow
from haytham.frozen import frozen
from haytham.records import SessionManifest
from haytham.store.names import PhaseDirs, check_inside


@frozen
class Session:
    """A session as one read found it: where it is, its manifest, and which phases it runs.

    A snapshot, not a handle: a writer reads it under the session's lock (``Transaction``),
    a reader without one; neither keeps it beyond the operation."""

    base_dir: Path
    directory: Path
    manifest: SessionManifest
    workflow: Workflow
    phases: tuple[PhaseDefinition, ...]

    def phase(self, number: object) -> PhaseDefinition:
        return self.workflow.phase_in_mode(number, self.manifest.execution_mode)

    def phase_dir(self, number: object) -> Path:
        return self.phase_location(number)[0]

    def phase_location(self, number: object) -> tuple[Path, bool]:
        """The phase's folder, checked as ``check_inside`` checks it, and whether it is an
        existing folder: one ``lstat`` (``PhaseDirs``; the session folder was checked when
        the session was opened)."""
        return PhaseDirs(self.base_dir, self.directory, session_checked=True).get(
            self.phase(number).directory
        )

    def read_phase(self, number: object) -> PhaseDefinition:
        """For reading: a phase of the mode, or a phase of the workflow outside the mode
        whose folder exists (the first implementation saved phases 4 and 5 of mvp
        sessions). ``validate`` reports such a folder as a warning; saving still refuses it."""
        try:
            return self.phase(number)
        except UnknownPhaseError:
            phase = self.workflow.phase(number)  # a phase the workflow lacks stays an error
            if not (self.directory / phase.directory).is_dir():
                raise
            return phase

    def read_phase_dir(self, number: object) -> Path:
        return check_inside(self.base_dir, self.directory / self.read_phase(number).directory)
