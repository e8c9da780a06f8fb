"""LangGraph's own conformance suite against HaythamSaver; prints the report as JSON.

``python tests/langgraph_conformance.py BASE_DIR`` runs every capability on ``BASE_DIR``
(shared with whatever else runs there); without an argument, on a fresh temporary directory
per capability. The tests run it in-process and in two processes at once on one directory.

The installed suite (``langgraph-checkpoint-conformance`` 0.0.2) has no
``delta_channel_history`` capability yet; LangGraph's main branch has, and its spec is
vendored in ``langgraph_delta_spec/``. ``validate`` runs it after the installed suite, on a
fresh saver, and adds its result to the report as the newer suite does (an extended
capability, so the level is FULL only when it passes too). Once the installed suite knows the
capability, its own spec runs instead and nothing is added.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test
from langgraph.checkpoint.conformance import validate as installed_validate
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.conformance.initializer import RegisteredCheckpointer
from langgraph.checkpoint.conformance.report import CapabilityReport, CapabilityResult
from langgraph_delta_spec.delta_channel_history import (
    ALL_DELTA_CHANNEL_HISTORY_TESTS,
    run_delta_channel_history_tests,
)

from haytham.integrations.langgraph import HaythamSaver

DELTA = "delta_channel_history"
VENDORED = DELTA not in {capability.value for capability in Capability}
"""Whether the installed suite lacks the capability, so the vendored spec runs."""


async def validate(registered: RegisteredCheckpointer) -> CapabilityReport:
    """The installed suite's report, with ``delta_channel_history`` from the vendored spec
    when the installed suite does not run it."""
    report = await installed_validate(registered)
    if not VENDORED:
        return report
    async with registered.enter_lifespan(), registered.create() as saver:
        if type(saver).aget_delta_channel_history is BaseCheckpointSaver.aget_delta_channel_history:
            report.results[DELTA] = CapabilityResult(detected=False, tests_skipped=1)
            return report
        passed, failed, failures = await run_delta_channel_history_tests(saver)
    report.results[DELTA] = CapabilityResult(
        detected=True,
        passed=failed == 0,
        tests_passed=passed,
        tests_failed=failed,
        failures=failures,
    )
    return report


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


def run_on(name: str, make: Callable[[], contextlib.AbstractAsyncContextManager[Any]]) -> CapabilityReport:
    """The suite's report for another checkpointer (LangGraph's own, to check the vendored
    spec against): ``make()`` enters a fresh one."""

    @checkpointer_test(name=name)
    async def saver() -> AsyncIterator[Any]:
        async with make() as entered:
            yield entered

    return asyncio.run(validate(saver))


def report_text(report: CapabilityReport) -> str:
    """The suite's own printed report, with the vendored capability's line among the
    extended ones, as the newer suite prints it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report.print_report()
    text = out.getvalue()
    result = report.results.get(DELTA)
    if not VENDORED or result is None:
        return text
    if not result.detected:
        icon, suffix = "⊘ ", "(not implemented)"
    elif result.passed:
        icon, suffix = "✅", f"(vendored spec, {len(ALL_DELTA_CHANNEL_HISTORY_TESTS)} tests)"
    else:
        icon, suffix = "❌", f"({result.tests_failed} failed)"
    head, extended, tail = text.partition("  EXTENDED CAPABILITIES\n")
    lines, blank, rest = tail.partition("\n\n")
    return f"{head}{extended}{lines}\n      {icon} {DELTA:20s} {suffix}{blank}{rest}"


def main(argv: list[str]) -> int:
    report = run(argv[0] if argv else None)
    data: dict[str, Any] = report.to_dict()
    data["text"] = report_text(report)
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
