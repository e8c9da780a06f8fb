"""An output corrected by hand is a fact (issue 23, defect 4).

A person appends a correction to phase 1's agent output of a completed session. The files
now say that phase 1's outputs are not the ones its checkpoint recorded: the correction is
kept as phase 1's output (the phase stays done, flagged ``lifecycle.EDITED``), and every
phase built on the old outputs is stale. ``status``, ``validate``, ``doctor`` and, once the
manifest is written, ``list`` say so, naming the file; ``resume`` records the correction
and runs the later phases again on it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from workcount import WorkCounters

from haytham.cli.main import cli
from haytham.format.layout import CHECKPOINT_FILE
from haytham.store import index as _index
from haytham.store import lifecycle
from haytham.store import progress as _progress
from haytham.store.manager import CheckpointManager

P, S = "demo", "idea-001"
EDITED = "phase_1_concept/concept_expansion.md"
CORRECTION = "- Correction (by hand): the buyers are small agencies, not solo founders.\n"


def haytham(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "haytham", *args, "--base-dir", str(base)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A completed demo session (five phases, each built on the ones before it)."""
    base = tmp_path / "projects"
    made = haytham(base, "demo")
    assert made.returncode == 0, made.stderr
    return base


def correct_by_hand(base: Path) -> Path:
    output = base / P / "sessions" / S / EDITED
    with output.open("a", encoding="utf-8") as handle:
        handle.write(CORRECTION)
    return output


def test_a_hand_correction_makes_the_phases_built_on_it_stale_in_every_view(base: Path) -> None:
    correct_by_hand(base)

    status = haytham(base, "status", P, S)
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line for line in status.stdout.splitlines() if line[:1].isdigit()}
    assert f"approved ({lifecycle.EDITED}: {EDITED})" in rows["1"]
    for number in ("2", "3", "6", "7"):
        assert f"stale (built on phase 1, which changed since: {EDITED})" in rows[number]
    assert "Session demo/idea-001: user demo-user, idea_validation (mvp mode), in_progress" in status.stdout
    state = json.loads(haytham(base, "status", P, S, "--json").stdout)
    assert state["stale_phases"] == {"2": [1], "3": [1], "6": [1], "7": [1]}
    assert state["edited_outputs"] == {"1": [EDITED]}

    validate = haytham(base, "validate", "--strict")
    assert validate.returncode != 0
    assert f"{EDITED}: Output: {EDITED} changed since phase 1 completed" in validate.stdout
    assert "phases 2, 3, 6, 7 built on the old outputs are stale" in validate.stdout
    assert f"phase 2 is stale (built on phase 1, which changed since: {EDITED})" in validate.stdout

    doctor = haytham(base, "doctor")
    assert doctor.returncode != 0
    assert f"{EDITED}: edited_output: changed since phase 1 completed" in doctor.stdout
    assert doctor.stdout.count("stale_phase") == 4

    # list reads the manifests: the hand edit reaches them at the next write (doctor --fix)
    assert haytham(base, "doctor", "--fix").returncode != 0  # the edit and stale phases remain
    listed = json.loads(haytham(base, "list", "--json").stdout)
    (row,) = [r for r in listed if r["session_id"] == S] if isinstance(listed, list) else listed["sessions"]
    assert (row["status"], row["current_phase"], row["current_state"]) == ("in_progress", 2, "stale")


def test_resume_runs_the_later_phases_again_and_keeps_the_correction(base: Path) -> None:
    output = correct_by_hand(base)
    corrected = output.read_text("utf-8")

    resumed = haytham(base, "resume", P, S)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert [line.split()[2] for line in resumed.stdout.splitlines() if "saved phase" in line] == [
        "2",
        "2",
        "3",
        "6",
        "7",
    ]
    assert output.read_text("utf-8") == corrected  # the person's correction, byte for byte
    manager = CheckpointManager(base)
    assert not (manager.phase_dir(P, S, 1) / "attempts").exists()  # phase 1 did not run again
    assert (manager.phase_dir(P, S, 2) / "attempts" / "1").is_dir()  # the old attempt is kept
    checkpoints = manager.load_checkpoints(P, S)
    now = _progress.outputs_digest_of(manager.phase_dir(P, S, 1), ["concept_expansion"])
    assert checkpoints[1].outputs_digest == now  # the correction is phase 1's output of record
    assert dict(checkpoints[2].built_from)[1] == now  # phase 2 was built on it
    assert manager.load_session(P, S)["status"] == "completed"
    kept = [e for e in manager.history(P, S) if e.reason == lifecycle.EDIT_KEPT]
    assert [e.phase_number for e in kept] == [1]
    strict = haytham(base, "validate", "--strict")
    assert strict.returncode == 0, strict.stdout


def test_a_second_status_reads_no_output_and_a_changed_one_is_hashed_once(
    base: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """The outputs digests are remembered by the files' identity (in the process): an
    unchanged session's outputs are never read again, a changed output once."""
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))  # files written just now may be remembered
    _progress.DIGESTS.clear()

    def status() -> int:
        counters.reset()
        result = CliRunner().invoke(cli, ["status", P, S, "--base-dir", str(base)])
        assert result.exit_code == 0, result.output
        return counters.hashed

    assert status() == 6  # every output of the five completed phases (phase 2 has two)
    assert status() == 0
    correct_by_hand(base)
    assert status() == 1  # phase 1's one output, read once for the digest
    assert status() == 0


def test_an_output_changed_just_now_is_not_remembered(base: Path, counters: WorkCounters) -> None:
    """git's racy rule: a file changed within ``RACY_NS`` of hashing may change again in the
    same tick of the file clock, so its digest is computed again at the next read."""
    _progress.DIGESTS.clear()
    output = correct_by_hand(base)
    phase_dir = output.parent
    counters.reset()
    first = _progress.outputs_digest_of(phase_dir)
    second = _progress.outputs_digest_of(phase_dir)
    assert first == second
    assert counters.hashed == 2


def test_digests_kept_in_the_index_spare_a_new_process_the_reads(
    base: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """``OutputDigests`` has the shape of the index's entries, so a listing keeps them there."""
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))
    phase_dir = CheckpointManager(base).phase_dir(P, S, 2)
    index = _index.Index.open(base)
    assert index is not None
    digests = _progress.OutputDigests(index.entries(_progress.DIGEST_KIND))
    counters.reset()
    digest = _progress.outputs_digest_of(phase_dir, cache=digests)
    assert counters.hashed == 2
    index.store(_progress.DIGEST_KIND, digests.learnt(index.settled))
    index.close()

    reopened = _index.Index.open(base)
    assert reopened is not None
    fresh = _progress.OutputDigests(reopened.entries(_progress.DIGEST_KIND))
    reopened.close()
    counters.reset()
    assert _progress.outputs_digest_of(phase_dir, cache=fresh) == digest
    assert counters.hashed == 0
    with (phase_dir / "competitor_analysis.md").open("a", encoding="utf-8") as handle:
        handle.write("- One more competitor.\n")
    assert _progress.outputs_digest_of(phase_dir, cache=fresh) != digest
    assert counters.hashed == 2  # the phase's digest is one hash over both outputs


def test_a_legacy_checkpoint_without_a_digest_is_never_stale(base: Path) -> None:
    """A checkpoint written before outputs digests records none: nothing can be compared."""
    manager = CheckpointManager(base)
    checkpoint = manager.phase_dir(P, S, 1) / CHECKPOINT_FILE
    text = checkpoint.read_text("utf-8")
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("- Outputs Digest:")]
    assert len(lines) == len(text.splitlines()) - 1
    checkpoint.write_text("".join(lines), "utf-8")
    correct_by_hand(base)
    state = manager.load_session(P, S)
    assert state["status"] == "completed"
    assert state["stale_phases"] == {} and state["edited_outputs"] == {}


def test_a_fork_of_a_session_with_a_corrected_output_writes_the_manifest_its_files_say(base: Path) -> None:
    """The fork copies the corrected output, so the phases it keeps that were built on the old
    one are stale in the fork too: its new manifest says so (it was derived from the recorded
    digests, and said ``completed`` while ``status`` said stale)."""
    correct_by_hand(base)
    manager = CheckpointManager(base)
    manager.fork_session(P, S, "fork-1", 6)
    view = manager.state(P, "fork-1")
    assert [p.state for p in view.phases] == ["approved", "stale", "stale", "pending", "pending"]
    manifest = manager.load_manifest(P, "fork-1")
    assert [r.status for r in manifest.phases] == [p.state for p in view.phases]
    assert manifest.status == view.state
    assert [i for i in manager.validate_session(P, "fork-1") if i.field == "Phase Status"] == []


def test_the_process_digests_stay_within_their_bound_while_a_listing_learns_every_phase(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running server digests the phases of every session a writer makes (issue 26,
    S14): the process's shared digests hold at most ``max_entries`` phases, however many it
    saw, while each listing's ``IndexedDigests`` still hands every phase it computed to its
    index."""
    monkeypatch.setattr(_progress, "RACY_NS", -(10**15))
    manager = CheckpointManager(base)
    folders = [manager.phase_dir(P, S, number) for number in (1, 2, 3, 6, 7)]
    shared = _progress.OutputDigests(max_entries=2, learns=False)
    for _ in range(2):  # two listings: the second learns each phase again, nothing is kept twice
        listing = _progress.IndexedDigests(None, shared=shared)
        for folder in folders:
            _progress.outputs_digest_of(folder, cache=listing)
        assert len(listing.learnt()) == len(folders)
        assert len(shared) == 2
    assert not _progress.DIGESTS.learns  # the process's own digests are the bounded kind
    assert len(_progress.OutputDigests(max_entries=2)) == 0
