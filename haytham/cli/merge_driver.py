"""git's merge driver for session files: ``python -m haytham.cli.merge_driver %O %A %B %P``.

Git starts the driver once for every session file both sides changed, so a sync of many
sessions pays its start-up many times over. It is therefore its own small entry point, not
a command of the click group: it reads its four arguments itself and imports only the merge
(``haytham.git.merge``), which is what ``haytham git setup`` registers. ``haytham git
merge-driver`` (``haytham.cli.git``, which clones set up before registered) runs ``merge``
below too, so both answer git alike: the file %A holds the merge, exit code 0 when it is
clean, 1 when conflict markers were left (described on standard error), 2 when the files
could not be merged (``haytham: cannot merge PATH: ...``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from haytham.cli.ending import leave_to_exit

USAGE = "usage: python -m haytham.cli.merge_driver BASE OURS THEIRS PATH (git's %O %A %B %P)"
"""What a call with other than four arguments prints, with exit code 2 (git never makes one)."""


def merge(base_file: str, ours_file: str, theirs_file: str, path: str) -> int:
    """Merge ``base_file``, ``ours_file`` and ``theirs_file`` of ``path`` into ``ours_file``;
    what git should know goes to standard error, and the exit code for git is returned."""
    from haytham.errors import HaythamError
    from haytham.git.merge import describe_conflicts, run_driver

    try:
        result = run_driver(base_file, ours_file, theirs_file, path)
    except (HaythamError, OSError) as error:
        print(f"haytham: cannot merge {path}: {error}", file=sys.stderr, flush=True)
        return 2
    if result.conflicts:
        print(describe_conflicts(path, result.conflicts), file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """The driver as git runs it: ``argv`` (default ``sys.argv[1:]``) is ``%O %A %B %P``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4:
        print(USAGE, file=sys.stderr, flush=True)
        sys.exit(2)
    base_file, ours_file, theirs_file, path = args
    code = merge(base_file, ours_file, theirs_file, path)
    leave_to_exit()
    sys.exit(code)


if __name__ == "__main__":
    main()
