"""The fault-injection worker: runs an operation of ``tests/fault_ops.py`` in a forked child
that SIGKILLs itself just before its Nth file-system change.

Run as ``python tests/fault_worker.py``; it reads ``ROOT OPERATION N`` lines on stdin and
answers each with one JSON line: ``{"outcome": "killed"}``, ``{"outcome": "done",
"changes": M}`` (the operation made M < N changes and finished) or ``{"outcome": "error",
"error": ...}``. The worker imports haytham once and forks a child per request, so every
kill point costs a fork, not an interpreter start; the child is a real process killed by a
real SIGKILL, and the file system it changes is real: the interposer only counts calls.

A file-system change is any call of ``os.open`` with a flag that writes, ``os.write``,
``os.fsync``, ``os.replace``, ``os.rename``, ``os.unlink``, ``os.remove``, ``os.rmdir``,
``os.mkdir``, ``os.utime``, ``os.truncate`` or ``os.ftruncate`` (``shutil.rmtree`` and
``pathlib`` go through these). An ``fsync`` is a kill point but is not carried out in the
child: a SIGKILL (unlike a power loss) keeps the page cache, so it changes no outcome, and
skipping it keeps every kill point cheap.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fault_ops

CHANGES = ("replace", "rename", "unlink", "remove", "rmdir", "mkdir", "utime", "truncate", "ftruncate")
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install(kill_at: int, counter: list[int]) -> None:
    """Wrap the os functions that change files: count each call, die before the Nth."""

    def before() -> None:
        counter[0] += 1
        if counter[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def counted(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before()
            return function(*args, **kwargs)

        return wrapper

    for name in CHANGES:
        setattr(os, name, counted(getattr(os, name)))
    real_open, real_write = os.open, os.write

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITING:
            before()
        return real_open(path, flags, *args, **kwargs)

    def writing(fd: int, data: Any) -> int:
        before()
        return real_write(fd, data)

    def syncing(fd: int) -> None:
        before()  # a kill point, but not flushed: after SIGKILL the page cache is what
        del fd  # every later reader sees, so durability does not change any outcome here

    os.open = opening  # type: ignore[assignment]
    os.write = writing  # type: ignore[assignment]
    os.fsync = syncing  # type: ignore[assignment]


def child(root: Path, operation: str, kill_at: int, pipe: int) -> None:
    counter = [0]
    real_write = os.write
    try:
        install(kill_at, counter)
        fault_ops.operation(operation)[1](root)
        answer = {"outcome": "done", "changes": counter[0]}
    except BaseException as error:  # reported to the test, which fails on it
        answer = {
            "outcome": "error",
            "error": f"{type(error).__name__}: {error}",
            "trace": traceback.format_exc(),
        }
    real_write(pipe, json.dumps(answer).encode())
    os._exit(0)


def serve() -> None:
    for line in sys.stdin:
        root, operation, kill_at = line.split()
        fault_ops.prepare(operation)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            child(Path(root), operation, int(kill_at), write)
        os.close(write)
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        os.close(read)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            answer = {"outcome": "killed"}
        else:
            answer = json.loads(b"".join(chunks) or b'{"outcome": "error", "error": "no answer"}')
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
