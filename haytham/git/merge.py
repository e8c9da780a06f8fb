"""Merging haytham's files in git: the ``haytham`` merge driver, and ``setup`` to enable it.

Most session files never conflict: phase files are written by one runner at a time, history
entries are new immutable files, and two clones running different sessions touch different
directories. A few files are legitimately changed on two machines at once, and a line-based
merge either conflicts on them for no reason or, worse, merges them wrongly:

- ``session_manifest.md``: a runner advances phase 3 on one machine while a phase 2 retry
  lands from another. Its rows, status and totals are derived from the checkpoints, so
  ``merge_manifest`` merges what it means instead of its lines.
- ``{project}/history/changelog.md``: both clones append blocks. ``merge=union`` is not
  safe here: git's union merge drops lines the two new blocks share (``- Mode: mvp``) and
  glues blocks together, so ``merge_changelog`` keeps whole blocks, ordered by time.
- ``{project}/outputs/latest_requirements.md``: both clones completed a session; the
  newest version wins (``merge_latest``).

``setup`` writes the ``.gitattributes`` lines that send these files to the driver and
registers the driver in the repository's git config. The config is not cloned: every clone
runs ``haytham git setup`` once (without it git falls back to its line merge, which at worst
stops with a conflict). The driver leaves a normal conflict (markers, exit 1, a message on
stderr) only for true contradictions, such as two different sessions with the same id.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from haytham.errors import DocumentError, HaythamError
from haytham.format import MANIFEST, layout
from haytham.format.patterns import lazy
from haytham.format.reader import decode
from haytham.frozen import frozen
from haytham.git.repository import GitError, relative_to_root, repo_root, run_git
from haytham.records import PhaseRow, SessionManifest, SessionMetrics
from haytham.store import fs as _storage
from haytham.store import progress as _progress
from haytham.store.clock import parse_timestamp

DRIVER = "haytham"
"""The merge driver's name in ``.gitattributes`` (``merge=haytham``) and git config."""
DRIVER_DESCRIPTION = "haytham: session manifests, project changelogs and latest requirements"
ATTRIBUTES_FILE = layout.GITATTRIBUTES_FILE
ATTRIBUTES_COMMENT = "# haytham: merge these files by what they mean (haytham git setup)"
MANIFEST_NAME = layout.MANIFEST_FILE
CHANGELOG_NAME = layout.CHANGELOG_FILE
LATEST_NAME = layout.LATEST_FILE
MARKER = 7
"""Conflict marker length, git's default."""

STATUS_RANK = {
    "pending": 0,
    "in_progress": 1,
    "failed": 2,
    "requires_retry": 2,
    "completed": 3,
    "skipped": 3,
}
"""How far along a phase status is; when both sides changed a row, the further one wins."""
IDENTITY_FIELDS = ("session_id", "project_id", "user_id", "execution_mode", "created")
"""Manifest fields that make a session what it is: two sides that differ here are two
different sessions, a contradiction no merge can resolve."""
DERIVED_FIELDS = ("phases", "status", "current", "metrics", "last_updated", "history_head")
"""Manifest fields merged by their meaning; every other field is merged three ways."""
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
_BLOCK_TIME = lazy(r"## (\S+)")
_DRIVER_COMMAND = "-m haytham.cli.merge_driver %O %A %B %P"


# ----------------------------------------------------------------------------- setup


@frozen
class SetupResult:
    """What ``setup`` did; nothing is changed when the repository was already set up."""

    root: Path
    """The repository's top directory."""
    attributes: Path
    """The ``.gitattributes`` file written to."""
    added_lines: tuple[str, ...]
    """Attribute lines that were missing and were added."""
    config_changed: bool
    """True when the driver's git config was written or updated."""
    driver: str
    """The driver command registered as ``merge.haytham.driver``."""

    @property
    def changed(self) -> bool:
        return bool(self.added_lines) or self.config_changed


def driver_command(python: str | None = None) -> str:
    """``<python> -m haytham.cli.merge_driver %O %A %B %P`` (this interpreter by default).

    ``haytham.cli.merge_driver`` is an entry point of its own, without the command line's
    click group (git starts it once per conflicting file), so the driver works whether or
    not ``haytham git`` is registered in the main command line.
    """
    return f"{shlex.quote(python or sys.executable)} {_DRIVER_COMMAND}"


def attribute_lines(prefix: str) -> list[str]:
    """The ``.gitattributes`` lines for a base directory at ``prefix`` (repository-relative)."""
    safe = re.fullmatch(r"[A-Za-z0-9._/-]*", prefix) is not None and prefix not in (".", "")
    head = f"{prefix.strip('/')}/" if safe else ""
    one_level = f"{head}*/" if safe else "**/"
    return [
        f"{head}**/{MANIFEST_NAME} merge={DRIVER}",
        f"{one_level}history/{CHANGELOG_NAME} merge={DRIVER}",
        f"{one_level}outputs/{LATEST_NAME} merge={DRIVER}",
    ]


def setup(
    repo_path: str | os.PathLike[str] = ".",
    base_dir: str | os.PathLike[str] = "projects",
    *,
    python: str | None = None,
) -> SetupResult:
    """Send haytham's shared files to the ``haytham`` merge driver in this repository.

    Adds the missing lines of ``attribute_lines`` to the repository's top ``.gitattributes``
    (commit it, so every clone merges the same way) and sets ``merge.haytham.name`` and
    ``merge.haytham.driver`` in the repository's own git config (each clone runs this
    once). A relative ``base_dir`` is taken relative to ``repo_path``. Running it again
    changes nothing.
    """
    root = repo_root(repo_path)
    base = Path(base_dir)
    if not base.is_absolute():
        base = Path(repo_path) / base
    prefix = relative_to_root(root, base)
    attributes = root / ATTRIBUTES_FILE
    try:
        existing = attributes.read_bytes().decode("utf-8")
    except FileNotFoundError:
        existing = ""
    except UnicodeDecodeError:
        raise GitError(f"{attributes} is not UTF-8; haytham leaves it alone", path=attributes) from None
    present = {line.strip() for line in existing.splitlines()}
    missing = [line for line in attribute_lines(prefix) if line not in present]
    if missing:
        newline = "\r\n" if "\r\n" in existing else "\n"  # the file's own line endings
        text = existing if not existing or existing.endswith("\n") else existing + newline
        added = ([ATTRIBUTES_COMMENT] if ATTRIBUTES_COMMENT not in present else []) + missing
        gap = newline if text and ATTRIBUTES_COMMENT not in present else ""
        _storage.atomic_write(attributes, text + gap + "".join(line + newline for line in added))
    command = driver_command(python)
    changed = False
    for key, value in ((f"merge.{DRIVER}.name", DRIVER_DESCRIPTION), (f"merge.{DRIVER}.driver", command)):
        current = run_git(["config", "--local", "--get", key], root, check=False)
        if current.returncode != 0 or current.stdout.decode("utf-8", "replace").rstrip("\n") != value:
            run_git(["config", "--local", key, value], root)
            changed = True
    return SetupResult(root, attributes, tuple(missing), changed, command)


# ------------------------------------------------------------------------ the driver


@frozen
class MergeResult:
    """The outcome of one merge: the text to keep and the contradictions left in it."""

    text: bytes
    conflicts: tuple[str, ...] = ()
    """One sentence per contradiction; the text then holds conflict markers."""


def run_driver(base_file: str, ours_file: str, theirs_file: str, path: str) -> MergeResult:
    """What git's ``%O %A %B %P`` ask for: merge the three files, write the result to %A.

    ``path`` (``%P``) is the file's path in the repository; its name picks the merge, and
    its directory is where the history entries and requirement versions are looked up.
    A file of any other name gets a line merge, as if no driver were configured.
    """
    base, ours, theirs = (Path(f).read_bytes() for f in (base_file, ours_file, theirs_file))
    name = PurePosixPath(path).name
    lookup = _Lookup(path)
    try:
        if name == MANIFEST_NAME:
            text, conflicts = merge_manifest(
                _text(base), _text(ours), _text(theirs), entry_time=lookup.entry_time
            )
            result = MergeResult(text.encode("utf-8"), tuple(conflicts))
        elif name == CHANGELOG_NAME:
            text, conflicts = merge_changelog(_text(base), _text(ours), _text(theirs))
            result = MergeResult(text.encode("utf-8"), tuple(conflicts))
        elif name == LATEST_NAME:
            data, conflicts = merge_latest(base, ours, theirs, lookup.version_rank)
            result = MergeResult(data, tuple(conflicts))
        else:
            result = _line_merge(base_file, ours_file, theirs_file, path)
    except DocumentError as error:
        result = _line_merge(base_file, ours_file, theirs_file, path)
        if result.conflicts:
            result = MergeResult(
                result.text, (f"haytham could not read one side ({error})", *result.conflicts)
            )
    Path(ours_file).write_bytes(result.text)
    return result


def describe_conflicts(path: str, conflicts: Sequence[str]) -> str:
    """The message the driver prints on stderr when it leaves a conflict."""
    lines = [f"haytham: cannot merge {path} automatically:"]
    lines += [f"  - {conflict}" for conflict in conflicts]
    lines.append(
        "  The file now has conflict markers (<<<<<<< ours / >>>>>>> theirs) where the two sides "
        "contradict each other: keep the right lines, run `haytham validate`, then commit."
    )
    return "\n".join(lines)


def _text(data: bytes) -> str:
    return decode(data, None)


def _line_merge(base_file: str, ours_file: str, theirs_file: str, path: str) -> MergeResult:
    """git's own line merge (``git merge-file``), for files haytham cannot merge by meaning."""
    labels = ["-L", f"ours:{path}", "-L", f"base:{path}", "-L", f"theirs:{path}"]
    result = run_git(
        ["merge-file", "-p", *labels, ours_file, base_file, theirs_file], Path.cwd(), check=False
    )
    if result.returncode < 0 or result.returncode > 127:
        raise GitError(f"git merge-file failed on {path}: {result.stderr.decode('utf-8', 'replace')}")
    count = result.returncode
    conflicts = (f"{count} part(s) of the file were changed differently on both sides",) if count else ()
    return MergeResult(result.stdout, conflicts)


class _Lookup:
    """Finds files the merge needs in every commit git may be merging.

    During a merge git has only our side in the work tree, so the other side's new history
    entries and requirement versions are looked up in the trees of the branch tips
    (HEAD, local and remote branches, FETCH_HEAD, ORIG_HEAD, MERGE_HEAD, REBASE_HEAD, ...).
    """

    def __init__(self, path: str) -> None:
        self.directory = PurePosixPath(path).parent
        self._root: Path | None = None
        self._tips: list[str] | None = None
        self._listings: dict[str, dict[str, set[str]]] = {}

    def _repo(self) -> Path | None:
        if self._root is None:
            try:
                self._root = repo_root(Path.cwd())
            except GitError:
                return None
        return self._root

    def _commits(self, root: Path) -> list[str]:
        if self._tips is None:
            found = run_git(
                ["for-each-ref", "--format=%(objectname)", "refs/heads", "refs/remotes"], root, check=False
            ).stdout.split()
            names = ["HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD"]
            names += [key[len("GITHEAD_") :] for key in os.environ if key.startswith("GITHEAD_")]
            for name in names:
                result = run_git(["rev-parse", "--verify", "-q", f"{name}^{{commit}}"], root, check=False)
                if result.returncode == 0:
                    found.append(result.stdout.strip())
            self._tips = list(dict.fromkeys(sha.decode("ascii") for sha in found))
        return self._tips

    def listing(self, directory: PurePosixPath) -> dict[str, set[str]]:
        """File name -> the blob ids it has in any tip, for one repository directory."""
        key = directory.as_posix()
        if key in self._listings:
            return self._listings[key]
        names: dict[str, set[str]] = {}
        root = self._repo()
        for commit in self._commits(root) if root is not None else []:
            result = run_git(["ls-tree", "-z", commit, "--", f"{key}/"], root or Path.cwd(), check=False)
            for item in result.stdout.split(b"\0"):
                meta, _, name = item.partition(b"\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == b"blob":
                    names.setdefault(PurePosixPath(os.fsdecode(name)).name, set()).add(
                        parts[2].decode("ascii")
                    )
        self._listings[key] = names
        return names

    def entry_time(self, entry_id: str) -> datetime | None:
        """The time in the file name of history entry ``entry_id`` (``{time}_{id}.md``)."""
        for name in self.listing(self.directory / layout.HISTORY_DIR):
            stamp, _, rest = name.partition("_")
            if rest == f"{entry_id}.md":
                try:
                    return datetime.strptime(stamp.replace("Z", "+0000"), _compact_format(stamp))
                except ValueError:
                    return None
        return None

    def version_rank(self, content: bytes) -> int | None:
        """The place, among all requirement versions, of the newest one holding ``content``."""
        root = self._repo()
        if root is None:
            return None
        blob = run_git(["hash-object", "--no-filters", "--stdin"], root, stdin=content, check=False)
        if blob.returncode != 0:
            return None
        wanted = blob.stdout.decode("ascii").strip()
        from haytham.projects import order_versions  # PyYAML and the project store: only here, not
        # in every run of the merge driver (git starts one per conflicting file)

        listing = self.listing(self.directory)
        order = order_versions(listing)
        places = [index for index, (_, name) in enumerate(order) if wanted in listing[name]]
        return max(places, default=None)


def _compact_format(stamp: str) -> str:
    return "%Y%m%dT%H%M%S.%f%z" if "." in stamp else "%Y%m%dT%H%M%S%z"


# ------------------------------------------------------------------------ manifests


def merge_manifest(
    base_text: str,
    ours_text: str,
    theirs_text: str,
    *,
    entry_time: Callable[[str], datetime | None] | None = None,
) -> tuple[str, list[str]]:
    """Merge two versions of a session manifest by meaning; return ``(text, conflicts)``.

    - Phase rows merge three ways: a row changed on one side only takes that side; a row
      changed on both takes the one further along (``STATUS_RANK``: pending < in_progress
      < failed/requires_retry < completed/skipped), then the later Completed, then Started.
    - Status and Current Phase are recomputed from the merged rows, as the store does.
    - Metrics cannot be recomputed from rows: when the two sides changed different phases
      they are the base plus both sides' changes, which is exact; otherwise the side
      further along. Either way ``CheckpointManager.load_session`` derives them from the
      checkpoints in memory, and the next save or ``haytham doctor --fix`` writes them.
    - Last Updated is the later one; History Head is the newer entry (by ``entry_time``,
      the time of an entry id, else the side updated last). The history itself needs no
      merge: its entries are separate files.
    - Session ID, Project ID, User ID, Execution Mode and Created must be equal, and other
      fields (Workflow Type, ...) may change on one side only: anything else is a
      contradiction, reported in ``conflicts`` and marked in the text.

    An empty ``base_text`` means there is no common version (both sides added the file).
    Raises DocumentError when ours or theirs cannot be read as a manifest.
    """
    ours = MANIFEST.parse(ours_text)
    theirs = MANIFEST.parse(theirs_text)
    if ours == theirs:
        return ours_text, []
    base = _parse_base(base_text)
    conflicts: list[str] = []
    fields: dict[str, tuple[Any, Any]] = {}
    for field in dataclasses.fields(SessionManifest):
        if field.name in DERIVED_FIELDS:
            continue
        label = MANIFEST.labels.get(field.name, field.name)
        o, t = getattr(ours, field.name), getattr(theirs, field.name)
        b = getattr(base, field.name) if base is not None else None
        if o == t:
            fields[field.name] = (o, o)
        elif field.name not in IDENTITY_FIELDS and base is not None and o == b:
            fields[field.name] = (t, t)
        elif field.name not in IDENTITY_FIELDS and base is not None and t == b:
            fields[field.name] = (o, o)
        else:
            fields[field.name] = (o, t)
            conflicts.append(f"{label} is {o!r} on our side and {t!r} on theirs")
    rows, changed_ours, changed_theirs = _merge_rows(base, ours, theirs)
    merged = dataclasses.replace(
        ours,
        **{name: pair[0] for name, pair in fields.items()},
        phases=rows,
        status=_progress.session_status(rows),
        current=_progress.current_phase(rows) if rows else ours.current,
        metrics=_merge_metrics(base, ours, theirs, disjoint=not changed_ours & changed_theirs),
        last_updated=max(ours.last_updated, theirs.last_updated, key=_moment),
        history_head=_merge_head(base, ours, theirs, entry_time),
    )
    if not conflicts:
        if merged == ours:
            return ours_text, []
        if merged == theirs:
            return theirs_text, []
        try:
            MANIFEST.check_record(merged)
        except DocumentError as error:
            return _two_way(ours_text, theirs_text), [f"the merged manifest would be invalid: {error}"]
        return MANIFEST.render(merged), []
    theirs_view = dataclasses.replace(merged, **{name: pair[1] for name, pair in fields.items()})
    return _two_way(MANIFEST.render(merged), MANIFEST.render(theirs_view)), conflicts


def _parse_base(text: str) -> SessionManifest | None:
    if not text.strip():
        return None
    try:
        return MANIFEST.parse(text)
    except DocumentError:
        return None


def _merge_rows(
    base: SessionManifest | None, ours: SessionManifest, theirs: SessionManifest
) -> tuple[tuple[PhaseRow, ...], set[int], set[int]]:
    """The merged rows, and the phase numbers whose row each side changed."""
    b = {row.number: row for row in base.phases} if base is not None else {}
    o = {row.number: row for row in ours.phases}
    t = {row.number: row for row in theirs.phases}
    if base is not None and list(o) == list(b):
        numbers = list(t)  # only theirs changed which phases the session runs
    else:
        numbers = list(o) + [n for n in t if n not in o and (base is None or n not in b)]
    rows = []
    for number in numbers:
        row = _pick_row(b.get(number), o.get(number), t.get(number))
        if row is not None:
            rows.append(row)
    changed_ours = {n for n in set(o) | set(b) if o.get(n) != b.get(n)}
    changed_theirs = {n for n in set(t) | set(b) if t.get(n) != b.get(n)}
    return tuple(rows), changed_ours, changed_theirs


def _pick_row(base: PhaseRow | None, ours: PhaseRow | None, theirs: PhaseRow | None) -> PhaseRow | None:
    if ours == theirs:
        return ours
    if ours is None or theirs is None:
        return ours if theirs is None else theirs
    if base is not None and ours == base:
        return theirs
    if base is not None and theirs == base:
        return ours
    return max(ours, theirs, key=_row_progress)


def _row_progress(row: PhaseRow) -> tuple[int, datetime, datetime, str]:
    """How far along a row is; the last item only makes the choice the same on every side."""
    return (STATUS_RANK.get(row.status, 0), _moment(row.completed), _moment(row.started), repr(row))


def _moment(timestamp: str | None) -> datetime:
    if not timestamp:
        return _EARLIEST
    try:
        return parse_timestamp(timestamp)
    except ValueError:
        return _EARLIEST


def _session_progress(manifest: SessionManifest) -> tuple[int, datetime, str]:
    return (
        sum(STATUS_RANK.get(row.status, 0) for row in manifest.phases),
        _moment(manifest.last_updated),
        repr(manifest.metrics),
    )


def _merge_metrics(
    base: SessionManifest | None, ours: SessionManifest, theirs: SessionManifest, *, disjoint: bool
) -> SessionMetrics:
    o, t = ours.metrics, theirs.metrics
    if o == t:
        return o
    if base is not None and disjoint:
        b = base.metrics
        summed = SessionMetrics(
            total_duration=round(o.total_duration + t.total_duration - b.total_duration, 6),
            total_tokens=o.total_tokens + t.total_tokens - b.total_tokens,
            total_cost=round(o.total_cost + t.total_cost - b.total_cost, 6),
        )
        if min(summed.total_duration, summed.total_tokens, summed.total_cost) >= 0:
            return summed
    return max(ours, theirs, key=_session_progress).metrics


def _merge_head(
    base: SessionManifest | None,
    ours: SessionManifest,
    theirs: SessionManifest,
    entry_time: Callable[[str], datetime | None] | None,
) -> str | None:
    o, t = ours.history_head, theirs.history_head
    b = base.history_head if base is not None else None
    if o == t or t is None or (base is not None and t == b):
        return o
    if o is None or (base is not None and o == b):
        return t
    if entry_time is not None:
        times = entry_time(o), entry_time(t)
        if times[0] is not None and times[1] is not None:
            return max((times[0], o), (times[1], t))[1]
    return max((_moment(ours.last_updated), o), (_moment(theirs.last_updated), t))[1]


# ----------------------------------------------------------------------- changelogs


def merge_changelog(base_text: str, ours_text: str, theirs_text: str) -> tuple[str, list[str]]:
    """Merge a project changelog by whole blocks; return ``(text, conflicts)``.

    A changelog is a heading and ``## {time} — {event}`` blocks that are only ever
    appended. The merge keeps the common blocks, then every block either side added,
    ordered by time (a block on both sides once). A side that changed an older block or
    the heading differently from the other is a contradiction, marked in the text.
    """
    if ours_text == theirs_text:
        return ours_text, []
    base = _blocks(base_text)
    ours, theirs = _blocks(ours_text), _blocks(theirs_text)
    heading = _pick(base[0] if base_text.strip() else None, ours[0], theirs[0])
    common = base[1]
    if heading is None or ours[1][: len(common)] != common or theirs[1][: len(common)] != common:
        return _two_way(ours_text, theirs_text), [
            "the two sides changed the changelog's heading or an older entry differently "
            "(haytham only merges entries added at the end)"
        ]
    added = dict.fromkeys(ours[1][len(common) :] + theirs[1][len(common) :])
    blocks = common + sorted(added, key=lambda block: (_block_time(block), block))
    text = _join_blocks(heading, blocks)
    if text == _join_blocks(*ours):
        return ours_text, []
    return text, []


def _blocks(text: str) -> tuple[str, list[str]]:
    """The heading and the ``## `` blocks, each without surrounding blank lines."""
    heading: list[str] = []
    blocks: list[list[str]] = []
    for line in text.split("\n"):
        if line.startswith("## "):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            heading.append(line)
    return "\n".join(heading).strip("\n"), ["\n".join(block).strip("\n") for block in blocks]


def _join_blocks(heading: str, blocks: Iterable[str]) -> str:
    return heading + "\n" + "".join(f"\n{block}\n" for block in blocks)


def _block_time(block: str) -> datetime:
    found = _BLOCK_TIME.match(block)
    moment = _moment(found.group(1)) if found else _EARLIEST
    return moment if moment != _EARLIEST else datetime.max.replace(tzinfo=timezone.utc)


def _pick(base: str | None, ours: str, theirs: str) -> str | None:
    """Three-way choice of one value: None when both sides changed it differently."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


# --------------------------------------------------------------- latest requirements


def merge_latest(
    base: bytes, ours: bytes, theirs: bytes, rank: Callable[[bytes], int | None]
) -> tuple[bytes, list[str]]:
    """Merge ``latest_requirements.md``: a copy of the newest requirements version.

    A side that did not change it gives way to the other; when both completed a session,
    the content of the version that comes later (``rank``: its place in
    ``order_versions``, which sorts by completion time) wins. When that cannot be found
    out, the two are left as a conflict.
    """
    if ours == theirs or theirs == base:
        return ours, []
    if ours == base:
        return theirs, []
    ranks = rank(ours), rank(theirs)
    if ranks[0] is not None and ranks[1] is not None:
        return (ours if ranks[0] >= ranks[1] else theirs), []
    text = _two_way(ours.decode("utf-8", "replace"), theirs.decode("utf-8", "replace"))
    return text.encode("utf-8"), [
        "both sides changed the latest requirements and haytham could not find which version "
        "each is (keep the newer one, as in outputs/requirements_*.md)"
    ]


# ---------------------------------------------------------------------- conflicts


def _two_way(ours: str, theirs: str) -> str:
    """``ours`` with every region where ``theirs`` differs shown as a conflict."""
    a, b = ours.splitlines(keepends=True), theirs.splitlines(keepends=True)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += a[i1:i2]
            continue
        out.append("<" * MARKER + " ours\n")
        out += _ended(a[i1:i2])
        out.append("=" * MARKER + "\n")
        out += _ended(b[j1:j2])
        out.append(">" * MARKER + " theirs\n")
    return "".join(out)


def _ended(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines


__all__ = [
    "DRIVER",
    "HaythamError",
    "MergeResult",
    "SetupResult",
    "attribute_lines",
    "describe_conflicts",
    "driver_command",
    "merge_changelog",
    "merge_latest",
    "merge_manifest",
    "run_driver",
    "setup",
]
