"""``haytham sync``: fetch, merge with haytham's merge driver, push; never force.

A git remote is the shared store of many machines (``docs/many-machines.md``). ``sync``
makes this clone and the remote agree:

1. It checks that the ``haytham`` merge driver is configured in this clone (its git config
   is not cloned). Without it git would merge session manifests line by line, so ``sync``
   refuses (``DriverNotConfigured``) unless asked to set it up (``set_up_driver``).
2. It fetches the remote's branch and merges it. A conflict on a claim file only (two
   workers raced for a session) is settled for the remote's side: the remote's claim is
   the one that won. Any other conflict is a true contradiction: the merge is undone
   (``git merge --abort``), so the working tree and every local commit are exactly as
   before, and ``SyncConflict`` names each file and line that conflicted.
3. It pushes (a plain push, never ``--force``). When the push is rejected because another
   machine pushed first, it fetches, merges and pushes again, waiting a little longer each
   time (exponential backoff with jitter), at most ``attempts`` times.

A push the remote refuses for another reason (a hook, its permissions, a protected branch)
is not a race and is not retried: ``RemoteRefused`` quotes what the remote answered. A lock
file in the remote (``HEAD.lock``, ``refs/heads/main.lock``) looks like a race at first (a
push in progress there holds it for a moment); one that is still there after
``STALE_LOCK_SECONDS`` was left by an interrupted git process, and ``RemoteRefused`` names it
and says to remove it.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from pathlib import Path

from haytham.errors import ConflictSpot, DriverNotConfigured, PushRejected, RemoteRefused, SyncConflict
from haytham.format.layout import CLAIM_FILE
from haytham.format.patterns import lazy
from haytham.frozen import frozen
from haytham.git.merge import DRIVER, setup
from haytham.git.recovery import recover_interrupted, set_aside_for_merge
from haytham.git.repository import DEFAULT_REMOTE, GitError, commit_paths, knows_author, repo_root, run_git

DEFAULT_ATTEMPTS = 12
"""How many times a rejected push is retried (fetch, merge, push) before giving up."""
FALLBACK_IDENTITY = ("haytham", "haytham@localhost")
"""Who a merge commit is by when git knows no user in this clone (a worker host)."""
_RACE = lazy(r"\[rejected\].*\((?:fetch first|non-fast-forward)\)|is at [0-9a-f]+ but expected [0-9a-f]+")
"""What git says when another machine pushed first (or moved the branch at that very moment)."""
_LOCKED = lazy(r"Unable to create '([^']+\.lock)': File exists")
"""What git says when a lock file in the remote is in the way (a push in progress, or a stale one)."""
STALE_LOCK_SECONDS = 2.0
"""A remote lock that has refused pushes for this long (or, on this machine, is this old) is
stale: a push in progress holds it for milliseconds."""


@frozen
class SyncResult:
    """What a sync did."""

    remote: str
    branch: str
    merged: bool
    """True when the remote had commits this clone did not (they are merged now)."""
    pushed: bool
    """True when the remote now has this clone's commits (False: nothing to push, or no push asked)."""
    retries: int
    """How many pushes were rejected because another machine pushed first."""
    driver_set_up: bool
    """True when this sync configured the merge driver in this clone."""
    recovered: tuple[str, ...] = ()
    """What this sync undid of an interrupted run or sync first, a sentence each (a stale index
    lock removed, a half-done merge undone, a dead run's files kept in ``.haytham-kept``)."""


def backoff_pause(attempt: int, backoff: float = 0.05) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): ``backoff`` doubling up to 2 s,
    times a random factor in [0.5, 1.5) so that machines rejected together spread out."""
    return min(2.0, backoff * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.5)


def driver_configured(root: Path) -> bool:
    """Whether ``merge.haytham.driver`` is set in this clone's git config."""
    found = run_git(["config", "--get", f"merge.{DRIVER}.driver"], root, check=False)
    return found.returncode == 0 and bool(found.stdout.strip())


def ensure_driver(root: Path, base_dir: Path | None, *, set_up: bool) -> bool:
    """Check the merge driver is configured; with ``set_up`` configure it (and commit the
    ``.gitattributes`` lines if they were missing). True when it was set up now."""
    if driver_configured(root):
        return False
    if not set_up:
        raise DriverNotConfigured(
            f"the haytham merge driver is not configured in {root} (its git config is not cloned), so "
            "git would merge session files line by line; nothing was merged. Run `haytham git setup` "
            "once in this clone, or `haytham sync --setup-driver`",
            path=root,
        )
    ensure_attributes(root, base_dir if base_dir is not None else root / "projects")
    return True


def ensure_attributes(root: Path, base_dir: Path) -> None:
    """Set up the merge driver for ``base_dir`` and commit the ``.gitattributes`` lines it added."""
    result = setup(root, base_dir)
    if result.added_lines:
        who = None if knows_author(root) else FALLBACK_IDENTITY
        commit_paths(
            root, [result.attributes], "haytham: merge session files with haytham's driver", identity=who
        )


def current_branch(root: Path) -> str:
    """The branch checked out in ``root`` (GitError on a detached HEAD)."""
    found = run_git(["symbolic-ref", "--quiet", "--short", "HEAD"], root, check=False)
    if found.returncode != 0:
        raise GitError(f"{root} is not on a branch (detached HEAD); check out a branch to sync", path=root)
    return found.stdout.decode("utf-8").strip()


def sync(
    path: str | os.PathLike[str],
    remote: str = DEFAULT_REMOTE,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    set_up_driver: bool = False,
    push: bool = True,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff: float = 0.05,
    on_retry: Callable[[int, float], None] | None = None,
) -> SyncResult:
    """Fetch ``remote``, merge its branch with the haytham driver, push (module docstring).

    ``base_dir`` (default ``path``/projects) is where ``set_up_driver`` points the
    ``.gitattributes`` lines. ``on_retry(n, seconds)`` is told of each rejected push before
    waiting. Raises DriverNotConfigured, SyncConflict, or GitError when git fails otherwise
    (an unreachable remote, pushes rejected ``attempts`` times); local commits are never lost.
    """
    root = repo_root(path)
    base = Path(base_dir).absolute().resolve() if base_dir is not None else root / "projects"
    notes = recover_interrupted(root)
    if _merging(root):
        raise GitError(
            f"a merge is in progress in {root}: finish it (fix the files, git commit) or undo it "
            "(git merge --abort), then sync again",
            path=root,
        )
    set_now = ensure_driver(root, Path(base_dir) if base_dir is not None else None, set_up=set_up_driver)
    branch = current_branch(root)
    pusher = Pusher(root, remote, branch)
    merged = False
    retries = 0
    for attempt in range(attempts + 1):
        if attempt:
            pause = backoff_pause(attempt, backoff)
            if on_retry is not None:
                on_retry(attempt, pause)
            time.sleep(pause)
        merged = _fetch_and_merge(root, remote, branch, base, notes) or merged
        if not push or not _ahead(root, remote, branch):
            return SyncResult(remote, branch, merged, False, retries, set_now, tuple(notes))
        if pusher.push():
            return SyncResult(remote, branch, merged, True, retries, set_now, tuple(notes))
        retries += 1
    raise PushRejected(
        f"the push to {remote}/{branch} was rejected {retries} times (other machines kept pushing "
        f"first); your commits are kept in {root}: run haytham sync again",
        path=root,
    )


class Pusher:
    """Push HEAD to a remote's branch and tell a race from a refusal (module docstring)."""

    def __init__(self, root: Path, remote: str, branch: str) -> None:
        self.root, self.remote, self.branch = root, remote, branch
        self._locks: dict[str, float] = {}
        """Each remote lock file met in the rejections in a row, and when it was first met."""

    def push(self) -> bool:
        """True when the push landed; False when another machine pushed first (fetch, merge,
        push again). Raises RemoteRefused when the remote refused it for another reason,
        GitError when git failed otherwise (an unreachable remote)."""
        done = run_git(
            ["push", "--quiet", self.remote, f"HEAD:refs/heads/{self.branch}"], self.root, check=False
        )
        if done.returncode == 0:
            self._locks.clear()
            return True
        said = done.stderr.decode("utf-8", "replace")
        locked = _LOCKED.search(said)
        if locked is not None:
            lock = os.path.normpath(locked.group(1))
            first = self._locks.setdefault(lock, time.monotonic())
            self._locks = {lock: first}
            if time.monotonic() - first >= STALE_LOCK_SECONDS or _age(lock) >= STALE_LOCK_SECONDS:
                raise RemoteRefused(
                    f"the remote {self.remote} refused the push to {self.branch}: its lock file {lock} "
                    f"is in the way and has been for more than {STALE_LOCK_SECONDS:g}s, so a git process "
                    "on the remote was interrupted and left it (no other machine is pushing): remove "
                    f"{lock} if no git process is running there, then run haytham sync again; your "
                    f"commits are kept in {self.root}",
                    path=self.root,
                    said=_remote_said(said),
                    lock=lock,
                )
            return False
        self._locks.clear()
        if _RACE.search(said):
            return False
        quoted = "; ".join(_remote_said(said)) or one_line(said)
        if "[remote rejected]" in said or "remote:" in said:
            raise RemoteRefused(
                f"the remote {self.remote} refused the push to {self.branch}: {quoted}. That is not "
                "another machine pushing first, so it was not retried: fix what the remote says (a "
                "hook, its permissions, a protected branch), then run haytham sync again; your "
                f"commits are kept in {self.root}",
                path=self.root,
                said=_remote_said(said),
            )
        raise GitError(
            f"git push {self.remote} {self.branch} failed in {self.root}: {quoted}", path=self.root
        )


def _remote_said(said: str) -> tuple[str, ...]:
    """What the remote answered: its ``remote:`` lines (git's lock advice left out) and the
    ``[remote rejected]`` line, each stripped."""
    lines = []
    for line in said.splitlines():
        line = line.strip()
        if line.startswith("remote:"):
            text = line[len("remote:") :].strip()
            if text and not _LOCK_ADVICE.search(text):
                lines.append(f"remote: {text}")
        elif "[remote rejected]" in line or "[rejected]" in line:
            lines.append(line)
    return tuple(lines)


_LOCK_ADVICE = lazy(
    r"^(?:Another git process seems|an editor opened by|are terminated then|may have crashed in|"
    r"remove the file manually)"
)
"""The lines of git's advice about a lock file, which RemoteRefused replaces with its own."""


def one_line(said: str) -> str:
    """git's message as one line: its non-empty lines, stripped, joined with "; "."""
    return "; ".join(line.strip() for line in said.splitlines() if line.strip())


def _age(path: str) -> float:
    """How long ago ``path`` (a remote's lock, visible when the remote is on this machine) was
    last changed; 0 when it cannot be seen from here."""
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return 0.0


def _merging(root: Path) -> bool:
    return run_git(["rev-parse", "-q", "--verify", "MERGE_HEAD"], root, check=False).returncode == 0


def _remote_ref(root: Path, remote: str, branch: str) -> str | None:
    found = run_git(["rev-parse", "-q", "--verify", f"refs/remotes/{remote}/{branch}"], root, check=False)
    return found.stdout.decode("ascii").strip() if found.returncode == 0 else None


def _ahead(root: Path, remote: str, branch: str) -> bool:
    """Whether HEAD has commits the remote's branch (as last fetched) lacks."""
    theirs = _remote_ref(root, remote, branch)
    if theirs is None:
        return run_git(["rev-parse", "-q", "--verify", "HEAD"], root, check=False).returncode == 0
    count = run_git(["rev-list", "--count", f"{theirs}..HEAD"], root)
    return int(count.stdout.decode("ascii").strip() or "0") > 0


def fetch(root: Path, remote: str, branch: str) -> str | None:
    """Fetch the remote's branch; its commit, or None when the remote has no such branch yet."""
    done = run_git(["fetch", "--quiet", remote], root, check=False)
    if done.returncode != 0:
        said = one_line(done.stderr.decode("utf-8", "replace"))
        raise GitError(f"git fetch {remote} failed in {root}: {said}", path=root)
    return _remote_ref(root, remote, branch)


def _fetch_and_merge(root: Path, remote: str, branch: str, base: Path, notes: list[str]) -> bool:
    """Fetch and merge the remote's branch; True when it brought commits. What a dead run left
    in the merge's way is moved aside first (``haytham.git.recovery``), each move in ``notes``."""
    theirs = fetch(root, remote, branch)
    if theirs is None:
        return False
    if run_git(["merge-base", "--is-ancestor", theirs, "HEAD"], root, check=False).returncode == 0:
        return False  # nothing new there
    identity = [] if knows_author(root) else ["-c", f"user.name={FALLBACK_IDENTITY[0]}"]
    identity += [] if knows_author(root) else ["-c", f"user.email={FALLBACK_IDENTITY[1]}"]
    message = f"haytham: sync with {remote}/{branch}"
    merged = run_git([*identity, "merge", "--no-edit", "-m", message, theirs], root, check=False)
    if merged.returncode != 0 and not _conflicted(root):  # git refused before merging
        aside = set_aside_for_merge(root, base, theirs)
        if aside is not None:
            notes.extend(aside.notes)
            merged = run_git([*identity, "merge", "--no-edit", "-m", message, theirs], root, check=False)
            if merged.returncode == 0 and aside.attributes:  # haytham's lines, if the remote's lack them
                ensure_attributes(root, base)
    if merged.returncode == 0:
        return True
    conflicted = _conflicted(root)
    if not conflicted:  # git refused before merging (a person's uncommitted changes in the way, ...)
        said = one_line((merged.stderr or merged.stdout).decode("utf-8", "replace"))
        raise GitError(
            f"git merge {remote}/{branch} failed in {root}: {said} (commit those files or move them "
            "away, then run haytham sync again)",
            path=root,
        )
    if all(Path(name).name == CLAIM_FILE for name in conflicted):
        for name in conflicted:  # the claim on the remote won the race: take it
            if run_git(["checkout", "--theirs", "--", name], root, check=False).returncode != 0:
                run_git(["rm", "--quiet", "--", name], root)
            else:
                run_git(["add", "--", name], root)
        run_git([*identity, "commit", "--quiet", "--no-edit"], root)
        return True
    spots = tuple(_first_marker(root, name) for name in conflicted)
    said = "\n".join(
        line
        for line in (merged.stdout + merged.stderr).decode("utf-8", "replace").splitlines()
        if line.startswith(("CONFLICT", "haytham:", "  - "))
    )
    run_git(["merge", "--abort"], root)
    where = "; ".join(str(spot) for spot in spots)
    raise SyncConflict(
        f"sync stopped at a true conflict with {remote}/{branch} in {where}. Nothing was lost: the "
        f"merge was undone, so your commits and working tree in {root} are as they were before sync "
        "(haytham doctor finds nothing to repair). To settle it: git merge "
        f"{remote}/{branch}, keep the right lines in each file named, run haytham validate, commit, "
        f"then haytham sync again.\n{said}".rstrip(),
        spots,
        root,
    )


def _conflicted(root: Path) -> list[str]:
    found = run_git(["diff", "--name-only", "--diff-filter=U", "-z"], root, check=False)
    return [name for name in found.stdout.decode("utf-8", "replace").split("\0") if name]


def _first_marker(root: Path, name: str) -> ConflictSpot:
    """The file and the line of its first ``<<<<<<<`` (None when it has none: a deleted side)."""
    try:
        lines = (root / name).read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return ConflictSpot(name, None)
    for number, line in enumerate(lines, 1):
        if line.startswith("<<<<<<<"):
            return ConflictSpot(name, number)
    return ConflictSpot(name, None)


__all__ = [
    "DEFAULT_REMOTE",
    "ConflictSpot",
    "DriverNotConfigured",
    "PushRejected",
    "Pusher",
    "RemoteRefused",
    "SyncConflict",
    "SyncResult",
    "backoff_pause",
    "current_branch",
    "driver_configured",
    "ensure_driver",
    "fetch",
    "sync",
]
