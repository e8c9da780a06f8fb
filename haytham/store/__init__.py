"""The core: files, locks, names, history, scanning, the doctor and the CheckpointManager.

It imports only ``haytham.format``, ``haytham.records`` and ``haytham.errors`` (and itself);
every feature (compare, transfer, retention, analytics, projects, config, run, git, cli) is
built on its public API and none is imported here (``docs/architecture.md``;
``tests/test_public_api.py`` checks it).

One concept per module: ``fs`` (atomic writes, locks), ``names``, ``clock``, ``arguments``
(checks of the manager's arguments), ``lifecycle`` (every phase and session state, as
data), ``progress`` (the manifest derived through the lifecycle), ``review_time``,
``durations`` (a phase's duration: the time it ran, not the time it waited), ``history``,
``attempts``, ``fork``, ``copy`` (whole session folders), ``scan`` (listing),
``index``, ``validation`` and ``disagreements`` (linting session files), ``doctor``,
``events`` and ``manager`` (``CheckpointManager``, which ties them together).
"""
