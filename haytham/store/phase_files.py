"""The files of a phase folder: which of them are agent outputs, in the order to show them.

Below scanning, listing and the lifecycle's facts, which all need it: a ``*.md`` file of a
phase folder is an agent's output unless it is one of the phase's own files
(``layout.OWN_SESSION_FILES``) or hidden.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from haytham.format.layout import OWN_SESSION_FILES


def agent_files(directory: Path, order: Sequence[str] = ()) -> list[Path]:
    """Agent output files of a phase directory: ``*.md`` except the phase's own and hidden
    files, those named in ``order`` first, then the rest by name.

    Read with one ``os.scandir`` (whose entries know their type), not a ``stat`` per file.
    Every entry but a folder counts, a FIFO, device or symlink too: reading it then refuses
    it with an error naming it (``haytham.format.guard``), where skipping it would make an
    output vanish without a word.
    """
    with os.scandir(directory) as entries:
        return agents_among(directory, list(entries), order)


def agents_among(
    directory: Path, entries: Sequence[os.DirEntry[str]], order: Sequence[str] = ()
) -> list[Path]:
    """``agent_files`` of ``directory`` from its ``entries``, listed already by the caller."""
    rank = {name: index for index, name in enumerate(order)}
    names = [
        e.name
        for e in entries
        if e.name.endswith(".md")
        and not e.name.startswith(".")
        and e.name not in OWN_SESSION_FILES
        and not e.is_dir(follow_symlinks=False)
    ]
    names.sort(key=lambda n: (rank.get(n[:-3], len(rank)), n))
    return [directory / name for name in names]
