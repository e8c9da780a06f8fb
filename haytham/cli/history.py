"""The command line's time-travel and transfer commands: history, diff, fork, export, import.

Each command parses its arguments, calls the library (``haytham.compare`` for diff,
``haytham.transfer`` for export and import, ``haytham.otel`` for ``export --otel``) and
prints; read commands take ``--json``.
``haytham.cli.main`` registers ``COMMANDS`` in its group.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import click

from haytham import transfer
from haytham.cli.common import base_dir_option, command, emit_json, json_option, suggest
from haytham.cli.git import Commits, commit_options
from haytham.compare import Comparison, compare
from haytham.errors import NotFoundError
from haytham.format.patterns import lazy
from haytham.records import PHASE_STATUSES, Attempt, HistoryEntry
from haytham.store.advice import refuse_outside
from haytham.store.manager import CheckpointManager

ENTRY_KEYS = (
    "entry_id",
    "parent",
    "phase_number",
    "phase_name",
    "attempt",
    "status",
    "timestamp",
    "name",
    "reason",
)
"""The keys of each entry in ``history --json`` (the checkpoint text is left out)."""
JSON_OUTPUT: dict[str, dict[str, str]] = {
    "history": {
        "project_id": "the project id",
        "session_id": "the session id",
        "entries": "the matching history entries, oldest first",
        "entries[].entry_id": "12 hex digits; a unique prefix is enough for `diff`",
        "entries[].parent": "the id of the entry saved before it, or null for the first",
        "entries[].phase_number": "phase number",
        "entries[].phase_name": "phase name",
        "entries[].attempt": "1 for the first run of the phase, 2 after its first retry, ...",
        "entries[].status": "the phase status that save wrote",
        "entries[].timestamp": "ISO 8601 UTC timestamp",
        "entries[].name": "the name given to the save, or null",
        "entries[].reason": "the reason given for the save, or null",
    },
    "diff": {
        "same": "true when nothing differs",
        "metadata": "the fields that changed, an object: field name -> [old, new]",
        "status": "[old, new] when the status changed, else null",
        "metrics": "every metric either side knows, an object: name -> [old, new, new - old]",
        "agents": "every agent output of either side (`phase:agent` for sessions)",
        "agents[].agent": "the agent",
        "agents[].change": "`added`, `removed`, `changed` or `same`",
        "agents[].diff": "a unified diff from `a/{agent}.md` to `b/{agent}.md`, empty when the same",
    },
}
"""Each ``--json`` command's keys, for ``haytham.cli.main.JSON_OUTPUT`` (``metadata`` and
``metrics`` of ``diff`` are objects whose keys are the names of what changed)."""
_REFERENCE = lazy(
    r"(?P<project>[^/@:#]+)/(?P<session>[^/@:#]+)"
    r"(?:@(?P<entry>[^/@]+)|:(?P<phase>[0-9]+)#(?P<attempt>[0-9]+))?"
)


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain aligned columns, no trailing spaces: readable on a terminal and in a pipe."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


# ---------------------------------------------------------------------- history


@command("history")
@click.argument("project")
@click.argument("session")
@click.option("--phase", type=int, metavar="N", help="Only entries of this phase.")
@click.option("--status", type=click.Choice(PHASE_STATUSES), help="Only entries with this status.")
@click.option("--name", metavar="X", help="Only entries saved with this name.")
@click.option("--since", metavar="T", help="Only entries at or after this ISO 8601 UTC time.")
@click.option("--until", metavar="T", help="Only entries at or before this ISO 8601 UTC time.")
@base_dir_option
@json_option
def history_command(
    project: str,
    session: str,
    phase: int | None,
    status: str | None,
    name: str | None,
    since: str | None,
    until: str | None,
    base_dir: Path,
    as_json: bool,
) -> None:
    """List a session's history: one entry per checkpoint or review saved, oldest first.

    Each entry's id (or a unique prefix) can be compared with haytham diff
    PROJECT/SESSION@ID PROJECT/SESSION@ID.
    """
    manager = CheckpointManager(base_dir)
    entries = manager.history(
        project, session, phase=phase, status=status, name=name, since=since, until=until
    )
    if as_json:
        emit_json(
            {
                "project_id": project,
                "session_id": session,
                "entries": [{key: getattr(e, key) for key in ENTRY_KEYS} for e in entries],
            }
        )
        return
    if not entries:
        click.echo(f"No history entries of {project}/{session} match")
        return
    rows = [
        [
            e.entry_id,
            e.timestamp,
            f"{e.phase_number} {e.phase_name}",
            str(e.attempt),
            e.status,
            e.name or "-",
            e.reason or "-",
        ]
        for e in entries
    ]
    click.echo(_columns(["Entry", "Time", "Phase", "Attempt", "Status", "Name", "Reason"], rows))


# ------------------------------------------------------------------------- diff


@dataclasses.dataclass(frozen=True)
class _Reference:
    """One side of ``diff``: a session, a history entry of it, or an attempt of one of its phases."""

    project: str
    session: str
    entry: str | None = None
    phase: int | None = None
    attempt: int | None = None

    @property
    def kind(self) -> str:
        return "entry" if self.entry is not None else "attempt" if self.phase is not None else "session"


def _reference(value: str, hint: str) -> _Reference:
    match = _REFERENCE.fullmatch(value)
    if match is None:
        raise click.BadParameter(
            f"{value!r} is not PROJECT/SESSION, PROJECT/SESSION@ENTRY or PROJECT/SESSION:PHASE#ATTEMPT",
            param_hint=hint,
        )
    phase, attempt = match["phase"], match["attempt"]
    return _Reference(
        match["project"],
        match["session"],
        match["entry"],
        None if phase is None else int(phase),
        None if attempt is None else int(attempt),
    )


def _entry(
    manager: CheckpointManager, project: str, session: str, entry_id: str
) -> tuple[HistoryEntry, dict[str, str]]:
    entry = manager.history_entry(project, session, entry_id)
    return entry, manager.entry_state(project, session, entry)[1]


def _attempt(manager: CheckpointManager, ref: _Reference) -> Attempt:
    """The attempt ``ref`` names (the current one is the highest number)."""
    assert ref.phase is not None
    assert ref.attempt is not None
    attempts = {a.number: a for a in manager.load_attempts(ref.project, ref.session, ref.phase)}
    if ref.attempt not in attempts:
        raise NotFoundError(
            f"phase {ref.phase} of {ref.project}/{ref.session} has no attempt {ref.attempt} "
            f"(it has {', '.join(map(str, attempts)) or 'none'})"
        )
    return attempts[ref.attempt]


@command("diff")
@click.argument("a")
@click.argument("b")
@base_dir_option
@json_option
def diff_command(a: str, b: str, base_dir: Path, as_json: bool) -> None:
    """Show what changed from A to B: two sessions, two history entries, or two attempts.

    A and B are PROJECT/SESSION (the sessions as they are now), PROJECT/SESSION@ENTRY (the
    state a history entry recorded; see haytham history) or PROJECT/SESSION:PHASE#ATTEMPT
    (an attempt of a phase: 1 is its first run, each send-back adds one, and the current
    attempt has the highest number), e.g. haytham diff acme/s-001:2#1 acme/s-001:2#2.
    An entry and a session compare the entry's phase then with that phase now, e.g.
    haytham diff acme/s-001@3f2a9c acme/s-001.
    Metadata, status and metrics changes come first, then a unified diff of each agent
    output that differs. The exit code is 0 whether or not anything differs.
    """
    first, second = _reference(a, "A"), _reference(b, "B")
    mixed = {first.kind, second.kind} == {"entry", "session"}  # an entry and the session now
    if first.kind != second.kind and not mixed:
        raise click.UsageError(
            f"compare two of a kind (two sessions, two history entries or two attempts) or an entry "
            f"with a session as it is now, not a "
            f"{first.kind} and a{'n' if second.kind[0] in 'ae' else ''} {second.kind}"
        )
    manager = CheckpointManager(base_dir)
    comparison: Comparison
    if mixed:
        then = first if first.entry is not None else second
        now = second if then is first else first
        assert then.entry is not None
        entry = manager.history_entry(then.project, then.session, then.entry)
        sides = (entry, (manager, now.project, now.session))
        comparison = compare(*(sides if then is first else sides[::-1]))
    elif first.entry is not None and second.entry is not None:
        old, old_outputs = _entry(manager, first.project, first.session, first.entry)
        new, new_outputs = _entry(manager, second.project, second.session, second.entry)
        comparison = compare(old, new, outputs=(old_outputs, new_outputs))
    elif first.kind == "attempt":
        comparison = compare(_attempt(manager, first), _attempt(manager, second))
    else:
        comparison = compare(
            (manager, first.project, first.session), (manager, second.project, second.session)
        )
    if as_json:
        emit_json(comparison.to_dict())
        return
    click.echo(f"--- {a}\n+++ {b}")
    if comparison.same:
        click.echo("No differences")
        return
    if comparison.status is not None:
        click.echo(f"status: {comparison.status[0] or '-'} -> {comparison.status[1] or '-'}")
    for key, (old_value, new_value) in comparison.metadata.items():
        click.echo(f"{key}: {_shown(old_value)} -> {_shown(new_value)}")
    for key, (old_number, new_number, delta) in comparison.metrics.items():
        if old_number != new_number:
            change = "" if delta is None else f" ({delta:+g})"
            click.echo(f"{key}: {_shown(old_number)} -> {_shown(new_number)}{change}")
    unchanged = [agent.agent for agent in comparison.agents if agent.change == "same"]
    if unchanged:
        click.echo(f"unchanged: {', '.join(unchanged)}")
    for agent in comparison.agents:
        if agent.change != "same":
            click.echo(f"{agent.agent}: {agent.change}")
            click.echo(agent.diff, nl=False)


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if not value or "\n" in value else value
    return str(list(value) if isinstance(value, tuple) else value)


# ------------------------------------------------------------------------- fork


@command("fork")
@click.argument("project")
@click.argument("session")
@click.argument("new")
@click.option("--from-phase", type=int, metavar="N", help="The first phase NEW runs again.")
@click.option(
    "--from-entry",
    metavar="ID",
    help="Fork from history entry ID (or a unique prefix; see haytham history) instead: NEW "
    "starts at the entry's phase, with the earlier phases as they were at that entry.",
)
@click.option("--user", help="Who NEW belongs to (default: SESSION's user).")
@base_dir_option
def fork_command(
    project: str,
    session: str,
    new: str,
    from_phase: int | None,
    from_entry: str | None,
    user: str | None,
    base_dir: Path,
) -> None:
    """Start session NEW from SESSION's phases before --from-phase (or --from-entry).

    SESSION is never changed. NEW gets copies of the earlier phases' checkpoints, outputs,
    feedback and attempts, records where it came from, and runs again from phase N with
    haytham resume. (Resume continues a session; fork starts a new one.) With --from-entry
    the earlier phases are as the history entry saw them: their attempt then, its outputs
    (refused when they are no longer on disk) and its review.
    """
    if (from_phase is None) == (from_entry is None):
        raise click.UsageError("give exactly one of --from-phase N and --from-entry ID")
    manager = CheckpointManager(base_dir)
    refuse_outside(manager, project, session, "fork", command=suggest)
    directory = manager.fork_session(project, session, new, from_phase, from_entry=from_entry, user_id=user)
    where = f"phase {from_phase}"
    if from_entry is not None:
        entry = manager.history_entry(project, session, from_entry)
        where = f"entry {entry.entry_id} (phase {entry.phase_number})"
    click.echo(f"Forked {project}/{session} at {where} into {project}/{new} ({directory})")
    click.echo(f"Next: run {suggest('resume', project, new)}")


# ------------------------------------------------------------- export / import


@command("export")
@click.argument("project")
@click.argument("session")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write FILE: .json for the JSON document, .tar.gz or .tgz for an archive (default: JSON on stdout).",
)
@click.option(
    "--otel",
    is_flag=True,
    help="Send the session as an OpenTelemetry trace over OTLP/HTTP instead (needs haytham[otel]).",
)
@click.option(
    "--endpoint",
    metavar="URL",
    help="With --otel: the OTLP/HTTP traces URL (default: haytham.yaml's otel.endpoint, "
    "else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else http://localhost:4318/v1/traces).",
)
@click.option(
    "--headers",
    "headers",
    multiple=True,
    metavar="K=V",
    help="With --otel: an HTTP header to send (an API key); repeat for more.",
)
@click.option(
    "--content",
    is_flag=True,
    help="With --otel: put each agent output's text in its span (default: its path and digest).",
)
@base_dir_option
def export_command(
    project: str,
    session: str,
    output: Path | None,
    otel: bool,
    endpoint: str | None,
    headers: tuple[str, ...],
    content: bool,
    base_dir: Path,
) -> None:
    """Export a session: every file of it, as one JSON document or a .tar.gz archive.

    Lock and temporary files are left out; haytham import reads either form back, byte
    for byte. With --otel the session is sent to an OpenTelemetry collector (Phoenix,
    Langfuse, ...) as one trace: phases, agents, tokens, costs and reviews (docs/otel.md);
    sending it again sends the same ids, which the collector de-duplicates.
    """
    manager = CheckpointManager(base_dir)
    if otel:
        if output is not None:
            raise click.UsageError("--otel sends the session to a collector; it takes no --output")
        _export_otel(manager, project, session, endpoint, headers, content)
        return
    for given, name in ((endpoint, "--endpoint"), (headers, "--headers"), (content, "--content")):
        if given:
            raise click.UsageError(f"{name} is an option of --otel")
    if output is None:
        click.echo(transfer.dump_export(transfer.export_session(manager, project, session)), nl=False)
        return
    if not output.name.endswith((".json", *transfer.ARCHIVE_SUFFIXES)):
        raise click.BadParameter(
            f"{str(output)!r} must end with .json, .tar.gz or .tgz", param_hint="--output"
        )
    transfer.export_session(manager, project, session, output)
    click.echo(f"Exported {project}/{session} to {output}")


def _export_otel(
    manager: CheckpointManager,
    project: str,
    session: str,
    endpoint: str | None,
    headers: tuple[str, ...],
    content: bool,
) -> None:
    """``export --otel``: haytham.yaml's ``otel`` settings under the options, then the library."""
    from haytham import otel as _otel
    from haytham.config import find_config

    configured = find_config().otel or _otel.OtelConfig()
    sent = _otel.export_trace(
        manager,
        project,
        session,
        endpoint=endpoint or configured.endpoint or _otel.default_endpoint(),
        headers={**configured.headers, **_otel.parse_headers(headers)},
        content=content,
    )
    click.echo(
        f"Exported {project}/{session} to {sent.endpoint} as trace {sent.trace_id} ({sent.spans} spans)"
    )


@command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--overwrite", is_flag=True, help="Replace a session that already exists.")
@click.option("--project", "project_id", help="Import under this project id (default: the export's).")
@click.option("--session", "session_id", help="Import under this session id (default: the export's).")
@commit_options
@base_dir_option
def import_command(
    file: Path,
    overwrite: bool,
    project_id: str | None,
    session_id: str | None,
    commit: bool,
    push: bool,
    remote: str,
    base_dir: Path,
) -> None:
    """Import a session from FILE, a .json export or a .tar.gz archive.

    Each file is checked as it is staged in a hidden folder, and the session appears only
    when every check passed, so a bad archive leaves nothing behind; an existing session is
    refused unless --overwrite is given. With --commit the import is one commit; with --push it is
    pushed (haytham sync).
    """
    manager = CheckpointManager(base_dir)
    commits = Commits(manager, commit, push, remote)
    commits.pull()
    directory = transfer.import_session(
        manager, file, project_id=project_id, session_id=session_id, overwrite=overwrite
    )
    click.echo(f"Imported {file} into {directory}")
    if commits.auto is not None:
        commits.auto.record(directory.parent.parent.name, directory.name, f"imported from {file.name}")
    if not commits.finish():
        click.get_current_context().exit(1)


COMMANDS: list[click.Command] = [history_command, diff_command, fork_command, export_command, import_command]
"""The commands for ``haytham.cli.main`` to register, in the order of a session's life."""
