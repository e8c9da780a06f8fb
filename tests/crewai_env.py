"""CrewAI without the network: its documented opt-outs of telemetry and tracing, and its
storage in a temporary folder instead of the user's home. Imported before CrewAI by every
test and example that uses it (and inherited by the processes they start)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import warnings

OFFLINE = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "OTEL_SDK_DISABLED": "true",
}
os.environ.update(OFFLINE)
if "CREWAI_STORAGE_DIR" not in os.environ:  # made here (a child process inherits it): removed here
    os.environ["CREWAI_STORAGE_DIR"] = tempfile.mkdtemp(prefix="haytham-crewai-")
    atexit.register(shutil.rmtree, os.environ["CREWAI_STORAGE_DIR"], ignore_errors=True)

with warnings.catch_warnings():
    # CrewAI's own import warns about its packages (ImportWarning from crewai.rag): not
    # haytham's to fix, and the suite turns every warning into an error.
    warnings.simplefilter("ignore")
    with contextlib.suppress(ImportError):  # the tests that need it skip, or fail in CI
        import crewai  # noqa: F401
