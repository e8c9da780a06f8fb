"""No file of a tree is read around the guarded path (issue 24): every module's ``open``,
``os.open``, ``read_bytes`` and ``read_text`` calls are found with ``ast``; only the modules
below may make them, each for the reason given. A new raw read elsewhere (the one that let
``report`` copy a symlinked output's outside target) fails here, naming its line.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from haytham.format.guard import absolute

PACKAGE = Path(__file__).resolve().parent.parent / "haytham"
ALLOWED = {
    "format/guard.py": "the guarded read itself",
    "store/fs.py": "writes, lock files (O_NOFOLLOW, checked), folders opened to fsync them",
    "store/journal.py": "its own record (O_NOFOLLOW) and folders opened to fsync them",
    "store/index.py": "the index's own marker file, written",
    "store/lease.py": "the system's /proc/locks table",
    "format/schema.py": "the package's own JSON Schemas",
    "web/templating.py": "the package's own static files",
    "cli/docs.py": "the repository's docs/cli.md, for the developer command",
    "cli/common.py": "os.devnull",
    "cli/review.py": "the editor's working copy in a temporary folder outside the tree",
    "git/autocommit.py": "the system's /proc entries",
    "git/merge.py": "the temporary files git hands the merge driver, and .gitattributes",
    "git/recovery.py": "git's own files of the clone (.git/MERGE_MSG) and its .gitattributes",
    "git/sync.py": "the clone's .gitattributes and .gitignore, which git itself reads",
}
READS = {"read_bytes", "read_text"}


def raw_reads(path: Path) -> list[int]:
    """Lines of ``path`` that open or read a file other than through a descriptor."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Call) and _is_raw_read(node)
    ]


def _is_raw_read(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Name):  # open(path), not open(fd) of a guarded descriptor
        first = call.args[0] if call.args else None
        return function.id == "open" and not (isinstance(first, ast.Name) and first.id == "fd")
    if not isinstance(function, ast.Attribute):
        return False
    owner = function.value.id if isinstance(function.value, ast.Name) else None
    if function.attr == "open":
        return owner in ("os", "io")
    return function.attr in READS and owner not in ("v", "values")  # values.read_text reads a value


def test_every_read_of_a_file_goes_through_the_guarded_path() -> None:
    outside = [
        f"haytham/{relative}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (relative := path.relative_to(PACKAGE).as_posix()) not in ALLOWED
        for line in raw_reads(path)
    ]
    assert outside == [], "read through haytham.format.guard instead: " + ", ".join(outside)


def test_the_check_finds_a_raw_read(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nopen(p)\nos.open(p, 0)\np.read_bytes()\np.read_text('utf-8')\n"
        "v.read_text(x)\nopen(fd, 'rb')\n",
        "utf-8",
    )
    assert raw_reads(sample) == [2, 3, 4, 5]


def test_every_allowed_module_exists() -> None:
    assert [m for m in ALLOWED if not (PACKAGE / m).is_file()] == []


@given(
    st.booleans(),
    st.lists(st.sampled_from(["a", "b.c", ".x", ".", "..", "", "x..", "~"]), max_size=6),
    st.booleans(),
)
def test_absolute_is_abspath(leading: bool, parts: list[str], trailing: bool) -> None:
    """``guard.absolute`` (the checks' spelling of a path) gives what ``os.path.abspath``
    gives, for normal paths it returns as given and for every other one alike."""
    text = ("/" if leading else "") + "/".join(parts) + ("/" if trailing else "")
    assert absolute(text) == os.path.abspath(text)
    assert absolute(Path(text or ".")) == os.path.abspath(Path(text or "."))
