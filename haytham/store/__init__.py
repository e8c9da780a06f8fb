"""The core: files, locks, names, history, scanning, the doctor and the CheckpointManager.

It imports only ``haytham.format``, ``haytham.records`` and ``haytham.errors`` (and itself);
every feature (compare, transfer, retention, analytics, projects, config, run, git, cli) is
built on its public API and none is imported here (``docs/architecture.md``;
``tests/test_public_api.py`` checks it).

One concept per module: ``fs`` (atomic writes, locks), ``journal`` (multi-file changes),
``names``, ``clock``, ``arguments`` (checks of the manager's arguments), ``lifecycle`` (every
phase and session state, as data), ``progress`` (the facts the lifecycle derives from, and
the manifest rendered from its view), ``review_time``, ``durations`` (a phase's duration:
the time it ran, not the time it waited), ``lease`` (who holds a session's run lease, read
without taking it), ``interrupted`` (the agents a crash left started and never finished),
``watch`` (a long-running server's file-system events), ``orphans`` (session folders that
lost their manifest), ``derived`` (a
listing's summary of a session, derived from its files), ``phase_files`` (which files of a
phase folder are agent outputs), ``history``, ``attempts``, ``fork``,
``copy`` (whole session folders), ``scan`` (the sessions under a base directory and their
listing), ``session_files`` (which files are session files, of what kind, under any
paths), ``index``, ``validation`` and ``disagreements`` (linting session files, results
remembered in the index), ``doctor``, ``events``; ``store`` (what every
operation shares), ``session`` (a session as read), ``reads`` (what one transaction read),
``transaction`` (the one write path), ``saving`` and ``reruns`` (the writes, each a
transaction), ``shown`` (what a reviewer was shown of a phase, which a review is checked
against), ``handle`` (``SessionHandle``: one session's reads and writes) and ``manager``
(``CheckpointManager``, the product document's facade).
"""

PUBLIC_MODULES = (
    "manager",
    "handle",
    "transaction",
    "lifecycle",
    "progress",
    "scan",
    "listing",
    "session_files",
    "doctor",
    "events",
    "fs",
    "journal",
    "copy",
    "names",
    "clock",
    "durations",
    "lease",
    "orphans",
    "advice",
    "shown",
    "review_time",
    "watch",
    "interrupted",
)
"""The store's public API: the modules the layers above may import, and of them only names
without a leading underscore (``tests/test_public_api.py`` checks every import outside
``store/``). The others (``store``, ``session``, ``reads``, ``saving``, ``reruns``,
``arguments``, ``attempts``, ``fork``, ``history``, ``index``, ``validation``,
``disagreements``, ``derived``, ``phase_files``) are how the store does its work, free to
change. ``review_time`` is public for its ``CommitLookup``: what the layers above that talk to
git (``haytham.git.reviews``) give the analytics to date hand reviews."""
