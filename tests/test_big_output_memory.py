"""Memory bounded by the limits (issue 24, item 2): every read command over the largest agent
output haytham accepts (256 MiB) stays within the bound docs/formats.md ("Limits") documents:
about twice the output's size (its mapped pages, which are the system's page cache, and its
text) plus 100 MB. Peak RSS of each command is measured in its own process (``os.wait4``).

Slow tier: the output alone is a 255 MiB file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workcount import HAYTHAM_PEAK_MEMORY

pytestmark = pytest.mark.slow
P, S = "acme", "s-1"
SIZE = 255 * 1024 * 1024
BOUND = 2 * SIZE + 100 * 1024 * 1024


MAKE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from small_workflow import SMALL
from haytham import CheckpointManager
manager = CheckpointManager(Path(sys.argv[1]), workflows=[SMALL])
manager.create_session("acme", "s-1", "u", SMALL, "full")
line = "x" * 99 + "\\n"
manager.save_phase("acme", "s-1", 1, {"writer": line * (int(sys.argv[3]) // len(line))}, "completed")
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session, made in a process of its own: the test worker never holds the output (a
    process it forks would start with its memory, and other tests measure theirs)."""
    base = tmp_path_factory.mktemp("big") / "base"
    here = str(Path(__file__).parent)
    subprocess.run([sys.executable, "-c", MAKE, str(base), here, str(SIZE)], check=True)
    assert (base / P / "sessions" / S / "phase_1_idea" / "writer.md").stat().st_size > SIZE
    return base


def peak_rss(args: list[str], cwd: Path) -> tuple[int, int]:
    """The exit code and peak resident memory in bytes of ``haytham ARGS`` run alone."""
    done = subprocess.run(
        [sys.executable, "-c", HAYTHAM_PEAK_MEMORY, *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return done.returncode, int(done.stderr.split()[-1]) * 1024


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "base"],
        ["list", "--base-dir", "base"],
        ["status", P, S, "--base-dir", "base"],
        ["show", P, S, "--base-dir", "base"],
        ["doctor", P, S, "--base-dir", "base"],
        ["export", P, S, "-o", "out.tar.gz", "--base-dir", "base"],
        ["stats", "--base-dir", "base"],
        ["feedback", P, S, "1", "--approve", "--base-dir", "base"],
    ],
    ids=lambda args: args[0],
)
def test_a_read_of_the_largest_output_stays_within_the_documented_bound(base: Path, args: list[str]) -> None:
    code, peak = peak_rss(args, base.parent)
    assert code in (0, 1)
    assert peak <= BOUND, f"haytham {' '.join(args)}: peak {peak / 2**20:.0f} MiB > {BOUND / 2**20:.0f} MiB"
