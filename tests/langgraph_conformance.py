"""LangGraph's own conformance suite against HaythamSaver; prints the report as JSON.

``python tests/langgraph_conformance.py BASE_DIR`` runs every capability on ``BASE_DIR``
(shared with whatever else runs there); without an argument, on a fresh temporary directory
per capability. The tests run it in-process and in two processes at once on one directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from haytham.integrations.langgraph import HaythamSaver


def run(base_dir: str | None = None) -> CapabilityReport:
    """The suite's report for HaythamSaver on ``base_dir`` (or fresh directories)."""

    @checkpointer_test(name="HaythamSaver")
    async def saver() -> AsyncIterator[HaythamSaver]:
        if base_dir is not None:
            yield HaythamSaver(base_dir)
            return
        with tempfile.TemporaryDirectory() as directory:
            yield HaythamSaver(directory)

    return asyncio.run(validate(saver))


def report_text(report: CapabilityReport) -> str:
    """The suite's own printed report."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report.print_report()
    return out.getvalue()


def main(argv: list[str]) -> int:
    report = run(argv[0] if argv else None)
    data: dict[str, Any] = report.to_dict()
    data["text"] = report_text(report)
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
