"""The files of a phase folder: which of them are agent outputs, in the order to show them.

Below scanning, listing and the lifecycle's facts, which all need it: a ``*.md`` file of a
phase folder is an agent's output unless it is one of the phase's own files
(``layout.OWN_SESSION_FILES``) or hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from haytham.format.layout import OWN_SESSION_FILES
from haytham.frozen import frozen


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
    markdown = ((e.name, e.is_dir(follow_symlinks=False)) for e in entries if e.name.endswith(".md"))
    return [directory / name for name in agent_names(markdown, order)]


def agent_names(markdown: Iterable[tuple[str, bool]], order: Sequence[str] = ()) -> list[str]:
    """``agents_among``'s names from a listing's ``*.md`` entries, each with whether it is a
    folder (not following a symlink): the caller that listed the folder already."""
    rank = {name: index for index, name in enumerate(order)}
    names = [
        name
        for name, folder in markdown
        if not folder and not name.startswith(".") and name not in OWN_SESSION_FILES and name.endswith(".md")
    ]
    names.sort(key=lambda n: (rank.get(n[:-3], len(rank)), n))
    return names


@frozen
class Listed:
    """What one listing of a session folder and of its phase folders found, for a reader of
    the session's facts that then need not look again (``derived.gather`` makes it): a file
    is looked for only where the listing did not see for sure that there is none, and a phase
    folder's agent outputs are taken from its listing."""

    names: frozenset[str]
    """The casefolded names in the session folder (hidden ones aside)."""
    phases: Mapping[str, tuple[tuple[str, bool], ...]]
    """Each phase folder that was listed: its ``*.md`` entries (hidden ones aside), each with
    whether it is a folder (not following a symlink)."""

    def markdown(self, folder: str) -> tuple[tuple[str, bool], ...] | None:
        """The listed ``*.md`` entries of the phase folder ``folder``: none when the session
        folder surely holds no such entry, None when it was not listed (then look)."""
        found = self.phases.get(folder)
        if found is not None:
            return found
        return () if surely_absent(folder, self.names) else None

    def may_hold(self, folder: str, name: str) -> bool:
        """Whether ``folder/name`` may be there: False only when the listing saw that it is
        not (on any file system: ``surely_absent``)."""
        entries = self.markdown(folder)
        return entries is None or not surely_absent(name, frozenset(n.casefold() for n, _ in entries))

    def agents(self, folder: str, order: Sequence[str] = ()) -> list[str] | None:
        """``agent_files``' names in the phase folder ``folder``, None when it was not listed."""
        entries = self.markdown(folder)
        return None if entries is None else agent_names(entries, order)


def surely_absent(name: str, present: frozenset[str]) -> bool:
    """Whether the entry ``name`` cannot be in a folder whose casefolded names are
    ``present``, on any file system (one that ignores case, or Unicode normalisation, too):
    only a plain ASCII name is answered, anything else is looked for."""
    plain = name.isascii() and "/" not in name and name not in ("", ".", "..")
    return plain and name.casefold() not in present
