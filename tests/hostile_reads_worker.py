"""Run every read command, every page, ``report``, ``export`` and a save over one session,
in this process, each under a deadline, and print one JSON line per run.

Used by tests/test_hostile_reads.py, which plants a hostile file (a symlink out of the tree,
a symlink to ``/dev/zero``, a FIFO, a socket, ...) in a session and runs this script as a
subprocess: a hang is then the script's deadline firing (SIGALRM interrupts a blocked
``open``), not a stuck test, and the address-space limit turns an unbounded read into a
quick MemoryError instead of exhausting the machine.

    python hostile_reads_worker.py BASE_DIR PROJECT SESSION PHASE SECRET DEADLINE
"""

from __future__ import annotations

import gzip
import json
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

MEMORY_LIMIT = 3 << 30
"""The address space this process may use: an unbounded read fails fast below it."""


class Deadline(Exception):
    """The run took longer than its deadline (a hang)."""


def _alarm(signum: int, frame: object) -> None:
    raise Deadline()


def main() -> None:
    base, project, session, phase, secret, deadline = sys.argv[1:7]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGALRM, _alarm)
    from haytham.cli.main import cli

    out = Path(tempfile.mkdtemp())
    session_args = [project, session]
    commands: dict[str, list[str]] = {
        "validate": ["validate", base],
        "list": ["list"],
        "status": ["status", *session_args],
        "show": ["show", *session_args],
        "doctor": ["doctor", *session_args],
        "report": ["report", *session_args, "-o", str(out / "report.html")],
        "export": ["export", *session_args, "-o", str(out / "export.tar.gz")],
        "export-json": ["export", *session_args],
        "stats": ["stats"],
        "history": ["history", *session_args],
        "feedback": ["feedback", *session_args, phase, "--approve"],
    }
    runner = CliRunner()

    def run_command(args: list[str]) -> tuple[int, str, BaseException | None]:
        result = runner.invoke(cli, [*args, "--base-dir", base] if args[0] != "validate" else args)
        error = None if isinstance(result.exception, SystemExit) else result.exception
        return result.exit_code, result.output, error

    for name, args in commands.items():
        _timed(name, lambda a=args: run_command(a), secret, deadline, out)  # type: ignore[misc]

    from starlette.testclient import TestClient

    from haytham.web.app import create_app

    pages = {
        "page /": "/",
        "page session": f"/p/{project}/s/{session}",
        "page phase": f"/p/{project}/s/{session}/phase/{phase}",
        "page report": f"/p/{project}/s/{session}/report",
    }
    with TestClient(create_app(base), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:

        def get(url: str) -> tuple[int, str, BaseException | None]:
            response = client.get(url)
            return response.status_code, response.text, None

        for name, url in pages.items():
            _timed(name, lambda u=url: get(u), secret, deadline, out)  # type: ignore[misc]


def _timed(
    name: str,
    run: Callable[[], tuple[int, str, BaseException | None]],
    secret: str,
    deadline: str,
    out: Path,
) -> None:
    for leftover in out.iterdir():
        leftover.unlink()
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, float(deadline))
    try:
        code, text, error = run()
    except Deadline:
        code, text, error = -1, "", Deadline()
    except BaseException as raised:
        code, text, error = -2, "", raised
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    written = b"".join(_contents(f) for f in out.iterdir())
    print(
        json.dumps(
            {
                "what": name,
                "code": code,
                "seconds": round(time.monotonic() - start, 2),
                "hung": isinstance(error, Deadline),
                "error": None if error is None else "".join(traceback.format_exception(error))[-2000:],
                "leaked": secret in text or secret.encode() in written,
                "output": text[-4000:],
                "traceback": "Traceback" in text or (code == 500 and "Internal Server Error" in text),
            }
        ),
        flush=True,
    )


def _contents(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


if __name__ == "__main__":
    main()
