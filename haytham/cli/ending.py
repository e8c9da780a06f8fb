"""How a ``haytham`` process ends: what its command made is left to the exit, not collected.

A short command (``haytham status``, ``validate`` of two files, the merge driver git starts
once per conflicting file) imports a few hundred modules and builds their classes, functions
and compiled patterns, and then exits. Python's shutdown runs the cyclic garbage collector
over all of them while it clears the modules, which cost such a command a tenth of its CPU
time (status of a 7-phase session: 135 ms to 123 ms, medians of 21 interleaved runs; issue
26). ``gc.freeze()`` just before the exit moves every object alive then out of the
collector's reach; the shutdown still frees each one as its last reference goes, the
``atexit`` hooks (the notify hook's deliveries) and the flush of the output streams run as
before, and nothing haytham makes relies on the collector to finish it (haytham has no
``__del__``; every file it writes is closed, and synced, where it is written).
"""

from __future__ import annotations

import gc


def leave_to_exit() -> None:
    """Call as the process ends (from its entry point, never from a library call): every
    object alive now is left to the interpreter's shutdown instead of being collected."""
    gc.freeze()
