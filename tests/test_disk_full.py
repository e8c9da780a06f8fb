"""A disk that fills up during a multi-file operation leaves the store exactly as it was.

Every ``os.write`` of an operation fails in turn with ENOSPC (the first, then the second,
... until the operation finishes without reaching it). Each failure must raise a
HaythamError that is also an OSError with errno ENOSPC, names the file it could not write
and keeps the OSError as its cause, and every byte under the base directory (hidden files
included, lock files aside) must be as it was before the call.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from haytham.errors import HaythamError, StorageError
from haytham.format.layout import LOCK_FILE

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fault_ops

OPERATIONS = (
    "save_checkpoint",
    "review",
    "correct_output",
    "start_attempt",
    "archive_from",
    "complete_session",
    "archive_project",
    "change_workflow",
    "fork",
    "import",
    "import_overwrite",
)


def everything(base: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for directory, folders, files in os.walk(base):
        relative = Path(directory).relative_to(base)
        for name in folders:
            found[(relative / name).as_posix()] = None
        for name in files:
            if name != LOCK_FILE:
                found[(relative / name).as_posix()] = (Path(directory) / name).read_bytes()
    return found


@pytest.mark.parametrize("operation", OPERATIONS)
def test_no_space_at_any_write_changes_nothing_and_names_the_file(
    operation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup, run = fault_ops.OPERATIONS[operation]
    template = tmp_path / "template"
    setup(template)
    before = everything(fault_ops.base(template))
    real_write = os.write
    root = tmp_path / "full"
    failed_at = 0
    while True:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(template, root)
        calls = [0]

        def write(fd: int, data: Any, fail_at: int = failed_at + 1, calls: list[int] = calls) -> int:
            calls[0] += 1
            if calls[0] == fail_at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", write)
        try:
            run(root)
        except HaythamError as error:
            failure: HaythamError | None = error
        else:
            failure = None
        finally:
            monkeypatch.setattr(os, "write", real_write)
        if failure is None:
            break
        failed_at += 1
        check_failure(failure)
        assert everything(fault_ops.base(root)) == before, f"{operation}: write {failed_at} left a change"
    assert failed_at >= 2, f"{operation} wrote fewer files than expected"


def check_failure(error: HaythamError) -> None:
    """The error a user sees: typed, an OSError still, naming the file, keeping its cause."""
    assert isinstance(error, StorageError)
    assert isinstance(error, OSError)
    assert error.errno == errno.ENOSPC
    assert isinstance(error.__cause__, OSError)
    assert error.__cause__.errno == errno.ENOSPC
    assert error.path is not None
    assert str(error) == f"no space left on device while writing {error.path}"
