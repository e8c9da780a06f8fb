"""Where a session manifest's progress disagrees with its phase checkpoints, located by line.

The manifest's Phase Status, Status, Current Phase and Metrics are derived from the
checkpoints; after a crash between two writes they can be out of date until the next save
or ``haytham doctor --fix`` (reads never write, so loading leaves them).
``validate_session`` reports each disagreement at the line a person would edit: the phase's
table row, the ``- Status:`` item, or the section heading.
Lines come from the markdown section parser, as the manifest reader finds them (fenced code
blocks are skipped), not from a search of the raw text.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from haytham.errors import Issue
from haytham.format.guard import read_file
from haytham.format.markdown import Section, iter_unfenced_lines, normalise_label, parse_document
from haytham.records import SessionManifest

REPAIR = "(run haytham doctor --fix, or save the session, to repair the manifest)"
LAGGING = (
    "(a review saved by hand, an output corrected by hand, or a merge that changed an earlier phase, "
    "shows at once in haytham list and status, which read the files, and in the manifest after the "
    "next write; run haytham doctor --fix to write it now)"
)
_ROW_FIELDS = (
    ("status", "Status"),
    ("started", "Started"),
    ("completed", "Completed"),
    ("duration", "Duration"),
    ("name", "Name"),
    ("number", "Phase"),
)


def disagreements(
    path: Path,
    written: SessionManifest,
    derived: SessionManifest,
    unreadable: set[int],
    reviewed: frozenset[int] = frozenset(),
) -> list[Issue]:
    """Where the manifest ``written`` at ``path`` differs from ``derived`` (its files').

    Phases whose checkpoint or review file cannot be read are left out: that file is the
    problem, and its own issues say why. Every disagreement is a warning: the manifest is
    derived data, haytham reads the true state from the files, and ``haytham doctor --fix``
    (or the next save) rewrites it. A row that differs only in its state, for a phase with a
    review file (``reviewed``) or one that is or was stale, says why it lags: a review saved
    by hand, or a git merge that brought another attempt of an earlier phase, reaches the
    manifest at the next write (``haytham list`` and ``status`` read the files and show it at
    once). Status,
    Current Phase and Metrics are compared only once every row agrees, since a wrong row
    explains them.
    """
    if written.phases == derived.phases and _same_totals(written, derived):
        return []
    lines = _Lines(path)
    issues = []
    for index, (old, new) in enumerate(zip(written.phases, derived.phases, strict=False)):
        if old == new or old.number in unreadable:
            continue
        lagging = old.number in reviewed or "stale" in (old.status, new.status)
        if lagging and old == dataclasses.replace(new, status=old.status):
            cause = "by its Built From" if "stale" in (old.status, new.status) else "after its review file"
            message = (
                f"phase {old.number}: Status is {_show(old.status)} here but {_show(new.status)} "
                f"{cause} {LAGGING}"
            )
            issues.append(Issue(path, lines.row(index), "Phase Status", message, severity="warning"))
            continue
        differences = [
            f"{label} is {_show(getattr(old, attr))} here but {_show(getattr(new, attr))} in its checkpoint"
            for attr, label in _ROW_FIELDS
            if getattr(old, attr) != getattr(new, attr)
        ]
        message = f"phase {old.number}: {'; '.join(differences)} {REPAIR}"
        issues.append(Issue(path, lines.row(index), "Phase Status", message, severity="warning"))
    if len(written.phases) != len(derived.phases):
        message = f"has {len(written.phases)} rows but the mode runs {len(derived.phases)} phases {REPAIR}"
        issues.append(Issue(path, lines.heading("Phase Status"), "Phase Status", message, severity="warning"))
    if unreadable or written.phases != derived.phases:
        return issues
    for label, line, old_value, new_value in (
        ("Status", lines.status(), _words(written.status), _words(derived.status)),
        ("Current Phase", lines.heading("Current Phase"), _current(written), _current(derived)),
        ("Metrics", lines.heading("Metrics"), _totals(written), _totals(derived)),
    ):
        if old_value != new_value:
            message = f"is {old_value} here but {new_value} from the phases' files {REPAIR}"
            issues.append(Issue(path, line, label, message, severity="warning"))
    return issues


def folder_disagreements(path: Path, manifest: SessionManifest) -> list[Issue]:
    """Errors where the manifest at ``path`` (``{project}/sessions/{session}/...``) names a
    project or session other than its folders.

    Every command finds a session by its folders (``haytham status acme s1`` opens
    ``acme/sessions/s1``), so a Session ID edited to another name would make the session
    appear under a name nothing can open; ``haytham list`` shows it under its folders' names.
    """
    directory = path.parent
    expected = (
        ("Project ID", manifest.project_id, directory.parent.parent.name),
        ("Session ID", manifest.session_id, directory.name),
    )
    wrong = [(label, found, folder) for label, found, folder in expected if found != folder]
    if not wrong:
        return []
    lines = _Lines(path)
    return [
        Issue(
            path,
            lines.metadata(label),
            label,
            f"is {found!r} but the session's folder is {folder!r}: haytham finds a session by its "
            f"folders, so write {folder!r} here or rename the folder to {found!r}",
        )
        for label, found, folder in wrong
    ]


def _words(state: str) -> str:
    return state.replace("_", " ")


def _current(manifest: SessionManifest) -> str:
    current = manifest.current
    return f"phase {current.number} {current.name} ({_words(current.status)})"


def _totals(manifest: SessionManifest) -> str:
    metrics = manifest.metrics
    return f"{metrics.total_tokens} tokens, ${metrics.total_cost:.4f}, {metrics.total_duration:g}s"


def _same_totals(written: SessionManifest, derived: SessionManifest) -> bool:
    return (written.status, written.current, written.metrics) == (
        derived.status,
        derived.current,
        derived.metrics,
    )


class _Lines:
    """The lines of a manifest's parts, found by its sections as the reader finds them."""

    def __init__(self, path: Path) -> None:
        self.document = parse_document(read_file(path).decode("utf-8", "replace"))

    def heading(self, title: str) -> int | None:
        section = self.document.find(title)
        return None if section is None else section.line

    def row(self, index: int) -> int | None:
        """The line of the Phase Status table's row ``index`` (0 = the first phase row)."""
        rows = _table_rows(self.document.find("Phase Status"))
        return rows[index] if index < len(rows) else None

    def status(self) -> int | None:
        """The line of the Metadata section's ``- Status:`` item."""
        return self.metadata("Status")

    def metadata(self, wanted: str) -> int | None:
        """The line of the Metadata section's ``- {wanted}:`` item."""
        section = self.document.find("Metadata")
        if section is None:
            return None
        key = normalise_label(wanted)
        for number, line in iter_unfenced_lines(section.body, section.body_line):
            if not line.lstrip().startswith("- "):
                continue
            label, colon, _ = line.strip().removeprefix("- ").partition(":")
            if colon and normalise_label(label) == key:
                return number
        return None


def _table_rows(section: Section | None) -> list[int]:
    """The lines of a table's data rows: every ``|`` line but the header and the rule."""
    if section is None:
        return []
    found = [
        number
        for number, line in iter_unfenced_lines(section.body, section.body_line)
        if line.strip().startswith("|") and not _is_rule(line)
    ]
    return found[1:]  # the first is the header


def _is_rule(line: str) -> bool:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return all(cell.strip(":").strip("-") == "" and "-" in cell for cell in cells if cell)


def _show(value: object) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float):
        return f"{value:g}s"
    return repr(value)
