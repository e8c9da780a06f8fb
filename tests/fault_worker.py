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

``ROOT OPERATION N power`` simulates a power loss instead (``PowerLoss``): the child tracks
which files hold writes no ``fsync`` (or ``journal.sync_filesystem``, a kill point too)
made durable, and sends them before it kills itself; the worker then empties each of them
that still exists, as a delayed allocation can leave a file renamed into place but never
flushed (the worst case for data; renames and unlinks are kept, the model does not revert
names). The child runs under a boot id of its own, so recovery knows a reboot happened. A
run that finishes answers ``undurable``: the files it leaves written but not durable.
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

from haytham.store import journal

CHANGES = ("replace", "rename", "unlink", "remove", "rmdir", "mkdir", "utime", "truncate", "ftruncate")
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class PowerLoss:
    """The files holding writes not yet made durable, as the wrappers of ``install`` see them."""

    def __init__(self, pipe: int, write: Callable[[int, bytes], int]) -> None:
        self.pipe, self.write = pipe, write
        self.paths: dict[int, str] = {}
        """Open descriptors -> the path each was opened with (every open, to forget reused fds)."""
        self.dirty: set[str] = set()

    def undurable(self) -> list[str]:
        return sorted(path for path in self.dirty if os.path.isfile(path))

    def send(self) -> None:
        """Tell the worker what a power loss now would lose, just before the kill."""
        self.write(self.pipe, json.dumps({"undurable": self.undurable()}).encode())


def install(kill_at: int, counter: list[int], power: PowerLoss | None = None) -> None:
    """Wrap the os functions that change files: count each call, die before the Nth."""

    def before() -> None:
        counter[0] += 1
        if counter[0] == kill_at:
            if power is not None:
                power.send()
            os.kill(os.getpid(), signal.SIGKILL)

    def counted(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before()
            return function(*args, **kwargs)

        return wrapper

    for name in CHANGES:
        setattr(os, name, counted(getattr(os, name)))
    real_open, real_write, real_replace, real_rename = os.open, os.write, os.replace, os.rename
    real_unlink, real_remove = os.unlink, os.remove

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITING:
            before()
        fd = real_open(path, flags, *args, **kwargs)
        if power is not None:
            power.paths[fd] = os.path.abspath(path)
        return fd

    def writing(fd: int, data: Any) -> int:
        before()
        if power is not None and fd in power.paths:
            power.dirty.add(power.paths[fd])
        return real_write(fd, data)

    def syncing(fd: int) -> None:
        before()  # a kill point, but not flushed: after SIGKILL the page cache is what
        if power is not None:  # every later reader sees; a power loss is simulated from
            power.dirty.discard(power.paths.get(fd, ""))  # what is left dirty

    def syncing_all(folder: Path) -> None:
        before()  # journal.sync_filesystem: everything written so far is durable
        if power is not None:
            power.dirty.clear()

    def moving(real: Callable[..., None]) -> Callable[..., None]:
        def wrapper(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            real(source, target, *args, **kwargs)  # counted by the wrapper of CHANGES
            if power is not None and os.path.abspath(source) in power.dirty:
                power.dirty.discard(os.path.abspath(source))
                power.dirty.add(os.path.abspath(target))

        return wrapper

    def removing(real: Callable[..., None]) -> Callable[..., None]:
        def wrapper(path: Any, *args: Any, **kwargs: Any) -> None:
            real(path, *args, **kwargs)
            if power is not None:
                power.dirty.discard(os.path.abspath(path))

        return wrapper

    os.open = opening  # type: ignore[assignment]
    os.write = writing  # type: ignore[assignment]
    os.fsync = syncing  # type: ignore[assignment]
    os.fdatasync = syncing  # type: ignore[assignment]
    os.replace, os.rename = moving(real_replace), moving(real_rename)  # type: ignore[assignment]
    os.unlink, os.remove = removing(real_unlink), removing(real_remove)  # type: ignore[assignment]
    journal.sync_filesystem = syncing_all  # type: ignore[assignment]


def child(root: Path, operation: str, kill_at: int, pipe: int, power_loss: bool) -> None:
    counter = [0]
    real_write = os.write
    power = PowerLoss(pipe, real_write) if power_loss else None
    if power is not None:
        journal.boot_id()
        journal._BOOT[:] = ["the boot before the simulated power loss"]
    try:
        install(kill_at, counter, power)
        fault_ops.operation(operation)[1](root)
        answer: dict[str, object] = {"outcome": "done", "changes": counter[0]}
        if power is not None:
            answer["undurable"] = power.undurable()
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
        root, operation, kill_at, *mode = line.split()
        fault_ops.prepare(operation)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            child(Path(root), operation, int(kill_at), write, mode == ["power"])
        os.close(write)
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        os.close(read)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            answer = {"outcome": "killed"}
            if mode == ["power"]:  # the power loss: what was not durable is gone
                lost = json.loads(b"".join(chunks))["undurable"]
                for path in lost:
                    os.truncate(path, 0)
                answer["emptied"] = lost
        else:
            answer = json.loads(b"".join(chunks) or b'{"outcome": "error", "error": "no answer"}')
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
