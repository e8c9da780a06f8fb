"""The README's commands and Python examples are true: the examples run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_first_shell_block_holds_the_two_fresh_machine_commands() -> None:
    first = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first is not None
    commands = first.group(1).strip().splitlines()
    assert commands == ["python3 dev.py demo", "python3 dev.py test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 dev.py test" in ci


def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert (tmp_path / "projects" / "acme" / "sessions" / "s-002" / "session_manifest.md").is_file()
    assert os.getcwd() == str(tmp_path)
