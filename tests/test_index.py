"""The index in ``{base_dir}/.haytham-cache`` is only a memory: the files decide.

``list_sessions`` and ``validate_paths`` remember what they learnt from each manifest and
each session in a SQLite file beside the sessions and use it while the files are unchanged.
Whatever happens to the files (hand edits, a new session, a deleted one, a change that keeps
the size and even the modification time) and to the index (deleted, damaged, unreadable,
written by other code), the answers must be exactly those of a run without any index.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from haytham import CheckpointManager
from haytham.store import derived, phase_files, scan, session_files
from haytham.store import fs as _storage
from haytham.store import index as _index

P = "proj"
SESSIONS = 55  # past index.INDEX_MIN_SESSIONS, so that a listing makes the index


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled as soon as they are written (the real rule waits 3 s)."""
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("index-tree")
    manager = CheckpointManager(base)
    manager.create_session(P, "s00", "ada", execution_mode="mvp")
    manager.save_agent_output(P, "s00", 1, "writer", "# Draft\n\ntext\n", model="m")
    manager.save_checkpoint(P, "s00", 1, "completed", [{"agent_name": "writer", "tokens": 5, "cost": 0.5}])
    manager.save_user_feedback(P, "s00", 1, True, True, "fine")
    template = manager.session_dir(P, "s00")
    for number in range(1, SESSIONS):
        target = manager.session_dir(P, f"s{number:02d}")
        target.mkdir(parents=True)
        for path in sorted(template.rglob("*")):
            destination = target / path.relative_to(template)
            if path.is_dir():
                destination.mkdir(exist_ok=True)
            elif path.suffix == ".md":
                text = path.read_text(encoding="utf-8")
                destination.write_text(text.replace("Session ID: s00", f"Session ID: s{number:02d}"), "utf-8")
    return base


@pytest.fixture
def base(tree: Path, tmp_path: Path) -> Path:
    """A fresh copy of the tree, without an index."""
    copy = tmp_path / "base"
    for path in sorted(tree.rglob("*")):
        if _index.INDEX_DIR in path.parts:
            continue
        destination = copy / path.relative_to(tree)
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(path.read_bytes())
    return copy


def without_index(monkeypatch: pytest.MonkeyPatch, call: object) -> object:
    with monkeypatch.context() as patch:
        patch.setenv("HAYTHAM_INDEX", "0")
        return call()  # type: ignore[operator]


def listing(base: Path) -> tuple[list[scan.SessionSummary], list[object]]:
    summaries, issues = scan.list_sessions(base)
    return summaries, list(issues)


def entries(base: Path, kind: str) -> int:
    """How many sessions the index remembers for ``kind``: ``summary`` (a listing's rows, in
    their own table) or ``validate``."""
    query = (
        ("SELECT count(*) FROM summaries", ())
        if kind == "summary"
        else ("SELECT count(*) FROM entries WHERE kind = ?", (kind,))
    )
    with sqlite3.connect(base / _index.INDEX_DIR / _index.INDEX_FILE) as connection:
        return int(connection.execute(*query).fetchone()[0])


def manifest_of(base: Path, session: str) -> Path:
    return base / P / "sessions" / session / "session_manifest.md"


def test_a_listing_makes_the_index_and_gives_what_the_files_say(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = without_index(monkeypatch, lambda: listing(base))
    assert not (base / _index.INDEX_DIR).exists()
    assert listing(base) == expected  # reads every manifest, fills the index
    assert entries(base, "summary") == SESSIONS
    assert listing(base) == expected  # from the index
    assert len(expected[0]) == SESSIONS


def test_hand_edits_new_and_deleted_sessions_show_at_once(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing(base)
    path = manifest_of(base, "s07")
    path.write_text(path.read_text("utf-8").replace("- User ID: ada", "- User ID: bob"), "utf-8")
    broken = manifest_of(base, "s08")
    broken.write_text(broken.read_text("utf-8").replace("- Status: in_progress", "- Status: maybe"), "utf-8")
    manifest_of(base, "s09").unlink()
    fresh = base / P / "sessions" / "s99"
    fresh.mkdir()
    fresh.joinpath("session_manifest.md").write_bytes(manifest_of(base, "s00").read_bytes())
    found = listing(base)
    assert found == without_index(monkeypatch, lambda: listing(base))
    by_id = {s.path.name: s for s in found[0]}
    assert by_id["s07"].user_id == "bob"
    assert "s08" not in by_id and "s09" not in by_id and "s99" in by_id
    errors = [str(i.path) for i in found[1] if i.is_error]  # type: ignore[attr-defined]
    assert errors == [str(broken), str(manifest_of(base, "s09"))]  # s09's phase folders are orphans
    copied = [i for i in found[1] if not i.is_error]  # type: ignore[attr-defined]
    assert [(str(i.path), i.field) for i in copied] == [(str(fresh / "session_manifest.md"), "Session ID")]
    assert listing(base) == found


def test_a_change_that_keeps_size_and_modification_time_is_seen(base: Path) -> None:
    listing(base)
    path = manifest_of(base, "s03")
    before = path.stat()
    text = path.read_text("utf-8")
    path.write_text(text.replace("- User ID: ada", "- User ID: eve"), "utf-8")  # same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same mtime too
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    by_id = {s.path.name: s for s in listing(base)[0]}
    assert by_id["s03"].user_id == "eve"  # the change time moved: the index is not trusted


def test_deleting_or_damaging_the_index_loses_nothing(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = without_index(monkeypatch, lambda: listing(base))
    issues = without_index(monkeypatch, lambda: CheckpointManager(base).validate_paths())
    manager = CheckpointManager(base)
    assert listing(base) == expected and manager.validate_paths() == issues
    index_file = base / _index.INDEX_DIR / _index.INDEX_FILE
    for path in (base / _index.INDEX_DIR).iterdir():
        if path.is_file():
            path.unlink()
    assert listing(base) == expected and manager.validate_paths() == issues
    index_file.write_bytes(b"this is not a database" * 100)
    for name in ("-wal", "-shm"):
        Path(f"{index_file}{name}").unlink(missing_ok=True)
    assert listing(base) == expected and manager.validate_paths() == issues


def test_an_index_of_other_code_is_ignored(base: Path) -> None:
    listing(base)
    index_file = base / _index.INDEX_DIR / _index.INDEX_FILE
    with sqlite3.connect(index_file) as connection:
        connection.execute("UPDATE entries SET value = '{\"issues\": []}'")
        connection.execute("UPDATE summaries SET user_id = 'mallory', listed = 0")
        connection.execute("UPDATE meta SET value = 'other' WHERE key = 'stamp'")
    assert len(listing(base)[0]) == SESSIONS


def test_files_changed_in_the_last_seconds_are_not_remembered(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_index, "RACY_NS", 3_000_000_000)
    listing(base)  # every file was written a moment ago
    assert entries(base, "summary") == 0


def test_validation_is_remembered_per_session_until_a_file_changes(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = CheckpointManager(base)
    assert manager.validate_paths() == []
    assert entries(base, "validate") == SESSIONS
    feedback = base / P / "sessions" / "s05" / "phase_1_concept" / "user_feedback.md"
    feedback.write_text(feedback.read_text("utf-8").replace("- Approved: true", "- Approved: maybe"), "utf-8")
    found = manager.validate_paths()
    assert found == without_index(monkeypatch, lambda: CheckpointManager(base).validate_paths())
    assert [(i.path, i.field) for i in found] == [(feedback, "Approved")]
    output = base / P / "sessions" / "s06" / "phase_1_concept" / "writer.md"
    output.unlink()
    (output.parent / "stray.md").write_text("# Agent Output: stray\n", "utf-8")
    found = manager.validate_paths()
    assert found == without_index(monkeypatch, lambda: CheckpointManager(base).validate_paths())
    # phase 1's outputs are no longer those its checkpoint recorded: a warning names the gone file
    assert {i.path for i in found} == {feedback, output.parent / "stray.md", output}
    feedback.write_text(feedback.read_text("utf-8").replace("- Approved: maybe", "- Approved: true"), "utf-8")
    assert {i.path for i in manager.validate_paths()} == {output.parent / "stray.md", output}


def test_validation_depends_on_the_workflow_definitions(base: Path) -> None:
    from haytham.format.workflow import BUILTIN_WORKFLOWS, Workflow

    builtin = BUILTIN_WORKFLOWS["idea_validation"]
    assert CheckpointManager(base).validate_paths() == []
    smaller = Workflow(builtin.name, builtin.phases[:1], {"mvp": (1,), "full": (1,)}, builtin.max_retries)
    changed = CheckpointManager(base, workflows=[smaller]).validate_paths()
    # every manifest lists the 5 phases of the built-in definition against this one's 1
    assert sorted((i.path, i.line, i.field) for i in changed) == [
        (base / P / "sessions" / f"s{n:02d}" / "session_manifest.md", 16, "Phase Status")
        for n in range(SESSIONS)
    ]
    assert {i.message.split(" (")[0] for i in changed} == {"has 5 rows but the mode runs 1 phases"}
    assert CheckpointManager(base).validate_paths() == []


def test_a_read_only_base_directory_is_read_without_an_index(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = without_index(monkeypatch, lambda: listing(base))
    mode = base.stat().st_mode
    base.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.geteuid() == 0:  # root writes anyway: make the index's first write fail instead

            def refuse(*args: object, **kwargs: object) -> None:
                raise PermissionError(13, "Permission denied")

            monkeypatch.setattr(Path, "mkdir", refuse)
        assert listing(base) == expected
        assert CheckpointManager(base).validate_paths() == []
    finally:
        base.chmod(mode)
    assert not (base / _index.INDEX_DIR).exists()


def test_small_trees_get_no_index(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.create_session(P, "only", "ada")
    assert [s.session_id for s in manager.list_sessions()] == ["only"]
    assert manager.validate_paths() == []
    assert sorted(os.listdir(tmp_path)) == [".gitignore", P]


def test_the_index_is_kept_out_of_version_control(base: Path) -> None:
    listing(base)
    assert ".haytham-cache/" in _storage.GITIGNORE_TEXT.splitlines()
    assert (base / _index.INDEX_DIR / ".gitignore").read_text("utf-8").splitlines()[-1] == "*"


def test_the_environment_can_turn_the_index_off(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    listing(base)
    CheckpointManager(base).validate_paths()
    assert not (base / _index.INDEX_DIR).exists()


def test_sessions_that_are_gone_are_forgotten(base: Path) -> None:
    manager = CheckpointManager(base)
    manager.validate_paths()
    listing(base)
    shutil.rmtree(base / P / "sessions" / "s10")
    assert len(manager.validate_paths()) == 0
    assert len(listing(base)[0]) == SESSIONS - 1
    assert entries(base, "validate") == SESSIONS - 1
    assert entries(base, "summary") == SESSIONS - 1


# ------------------------------------------------------------------ the faster tree walks


def odd_tree(root: Path) -> Path:
    """A base directory with everything a walk can trip on."""
    base = root / "odd"
    for project in ("p1", "p2", ".hidden", "z"):
        for session in ("a", "b", ".h", "c"):
            directory = base / project / "sessions" / session
            directory.mkdir(parents=True)
            if session != "c":
                (directory / "session_manifest.md").write_text("x", "utf-8")
    (base / "p3" / "sessions").mkdir(parents=True)
    (base / "p3" / "sessions" / "file.md").write_text("x", "utf-8")
    (base / "p3" / "sessions" / "dir-manifest" / "session_manifest.md").mkdir(parents=True)
    (base / "p4").mkdir()
    (base / "p4" / "sessions").write_text("not a directory", "utf-8")
    (base / "sessions" / "top").mkdir(parents=True)
    (base / "sessions" / "top" / "session_manifest.md").write_text("x", "utf-8")
    (base / "linked").symlink_to(base / "p1", target_is_directory=True)
    (base / "p1" / "sessions" / "broken").mkdir()
    (base / "p1" / "sessions" / "broken" / "session_manifest.md").symlink_to(base / "nowhere")
    phase = base / "p1" / "sessions" / "a" / "phase_1_x"
    phase.mkdir()
    for name in ("w.md", "checkpoint.md", "user_feedback.md", ".hidden.md", "UPPER.MD", "a.b.md", "x.txt"):
        (phase / name).write_text("x", "utf-8")
    (phase / "dir.md").mkdir()
    (phase / "link.md").symlink_to(phase / "w.md")
    (phase / "dangling.md").symlink_to(phase / "missing.md")
    (base / "loose.md").write_text("x", "utf-8")
    return base


def test_session_discovery_matches_the_globs(tmp_path: Path) -> None:
    base = odd_tree(tmp_path)
    for root in (base, base / "p1", base / "p1" / "sessions" / "a", base / "nowhere", base / "loose.md"):
        assert [d for d, _, _ in scan.session_manifests(root)] == list(scan._glob_session_dirs(root))


def _plain_agent_files(directory: Path, order: tuple[str, ...]) -> list[Path]:
    """The rule stated plainly: ``*.md`` entries but real folders (a symlink, a FIFO, a
    dangling link count: reading one names it), not hidden, not the phase's own, ordered."""
    own = {"checkpoint.md", "user_feedback.md", "session_manifest.md"}
    rank = {name: index for index, name in enumerate(order)}
    found = (
        p
        for p in directory.iterdir()
        if p.suffix == ".md"
        and p.name not in own
        and not p.name.startswith(".")
        and not (p.is_dir() and not p.is_symlink())
    )
    return sorted(found, key=lambda p: (rank.get(p.stem, len(rank)), p.name))


def test_agent_files_match_the_plain_rule(tmp_path: Path) -> None:
    phase = odd_tree(tmp_path) / "p1" / "sessions" / "a" / "phase_1_x"
    for order in ((), ("w",), ("link", "a.b", "zzz")):
        assert phase_files.agent_files(phase, order) == _plain_agent_files(phase, order)


def test_session_files_outside_sessions_match_the_plain_walk(tmp_path: Path) -> None:
    base = odd_tree(tmp_path)
    for roots in (
        [base],
        [base / "p1"],
        [base / "p1" / "sessions" / "a" / "phase_1_x"],
        [base / "loose.md", base],
    ):
        sessions = {d for root in roots if root.is_dir() for d in scan.session_dirs(root)}
        expected: list[Path] = []  # what validate_paths did before: rglob, then a parents test
        for root in roots:
            for path in [root] if root.is_file() else sorted(root.rglob("*.md")):
                inside = any(d in path.parents for d in sessions)
                if path not in expected and session_files.kind_of(path) is not None and not inside:
                    expected.append(path)
        assert list(session_files.session_files(roots, outside=sessions)) == expected


def test_counting_session_files_gives_what_listing_them_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``count_session_files`` (``haytham validate``'s count, walked as text) agrees with
    ``session_files`` for every kind of root, overlapping ones and the current folder too."""
    base = odd_tree(tmp_path)
    session = base / "p1" / "sessions" / "a"
    (session / "history").mkdir()
    for name in ("20261126T103908.396159Z_ef3c99b10985.md", "changelog.md"):
        (session / "history" / name).write_text("x", "utf-8")
    (session / "attempts" / "1").mkdir(parents=True)
    (session / "attempts" / "1" / "w.md").write_text("x", "utf-8")
    for roots in (
        [base],
        [base / "p1"],
        [session],
        [session / "phase_1_x"],
        [session / "history"],
        [base / "loose.md", base],
        [session, base / "p1", session / "session_manifest.md"],
        [base / "missing"],
    ):
        assert session_files.count_session_files(roots) == len(list(session_files.session_files(roots)))
    monkeypatch.chdir(base)
    for relative in (
        [Path(".")],
        [Path("."), Path("p1")],
        [Path("p1/sessions/a/session_manifest.md"), Path(".")],
    ):
        found = list(session_files.session_files(relative))
        assert session_files.count_session_files(relative) == len(found) > 0


def test_validation_counts_what_a_walk_of_its_own_counts(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``validate_tree`` counts the session files on the walk that keys each session in the
    index (``haytham validate`` walks the tree once): the count is ``count_session_files``'s,
    cold, warm and without an index, with a session holding a symlink, a folder named
    ``*.md``, history entries, archived attempts and a hidden temporary folder in them."""
    sessions = base / P / "sessions"
    phase = next((sessions / "s01").glob("phase_1_*"))
    (phase / "notes.md").mkdir()
    (phase / ".half.md.tmp").write_text("x", "utf-8")
    attempts = phase / "attempts"
    (attempts / "1").mkdir(parents=True)
    (attempts / "1" / "writer.md").write_text("x", "utf-8")
    (attempts / ".staged.tmp").mkdir()  # walked by the count, passed over by the index's key
    (attempts / ".staged.tmp" / "checkpoint.md").write_text("x", "utf-8")
    (sessions / "s02" / "history" / "changelog.md").parent.mkdir(exist_ok=True)
    (sessions / "s02" / "history" / "changelog.md").write_text("x", "utf-8")
    linked = next((sessions / "s03").glob("phase_1_*"))
    (linked / "extra.md").symlink_to(linked / "writer.md")
    (base / P / "loose.md").write_text("x", "utf-8")
    for roots in ([base], [base / P], [sessions / "s01", phase / "checkpoint.md"], [phase]):
        expected = (session_files.count_session_files(roots), len(session_files.sessions_under(roots)))
        alone = without_index(monkeypatch, lambda roots=roots: CheckpointManager(base).validate_tree(roots))
        cold = CheckpointManager(base).validate_tree(roots)
        warm = CheckpointManager(base).validate_tree(roots)
        assert (alone.files, alone.sessions) == (cold.files, cold.sessions) == expected
        assert (warm.files, warm.sessions) == expected and warm.issues == cold.issues == alone.issues
    assert entries(base, "validate") == SESSIONS - 1  # remembered: all but the one with a symlink
    before = CheckpointManager(base).validate_tree([base]).files
    (phase / "later.md").write_text("x", "utf-8")  # a file more in a remembered session
    warm = CheckpointManager(base).validate_tree([base])
    assert warm.files == session_files.count_session_files([base]) == before + 1


# ------------------------------------------------------------------ the index across upgrades


def _installed_copy(root: Path) -> Path:
    """A copy of the haytham package under ``root`` (as another install would lay it out),
    without compiled files; returns the copy's package folder."""
    package = Path(_index.__file__).resolve().parent.parent
    shutil.copytree(package, root / "haytham", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "haytham"


def _probe(base: Path) -> bool:
    """Whether the row ``_plant_probe`` put in the index is still there."""
    with sqlite3.connect(base / _index.INDEX_DIR / _index.INDEX_FILE) as connection:
        return connection.execute("SELECT count(*) FROM entries WHERE kind = 'probe'").fetchone() == (1,)


def _plant_probe(base: Path) -> None:
    with sqlite3.connect(base / _index.INDEX_DIR / _index.INDEX_FILE) as connection:
        connection.execute("INSERT INTO entries VALUES ('probe', 'p', 'i', 'v')")


def _list_with(package: Path, base: Path) -> None:
    """``haytham list`` run by the haytham installed at ``package``, in a process of its own."""
    environment = {**os.environ, "PYTHONPATH": str(package.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "haytham", "list", "--base-dir", str(base)],
        env=environment,
        cwd=package.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") > SESSIONS  # every session listed (and a header)


def test_the_stamp_follows_the_schemas_not_the_rest_of_the_source(tmp_path: Path) -> None:
    package = _installed_copy(tmp_path)
    assert _index.stamp(package / "format") == _index.stamp()  # another install of the same release
    scan_module = package / "store" / "scan.py"
    scan_module.write_text(scan_module.read_text("utf-8") + "\n# a fix elsewhere\n", "utf-8")
    (package / "cli" / "__init__.py").write_bytes((package / "cli" / "__init__.py").read_bytes() + b"\n")
    assert _index.stamp(package / "format") == _index.stamp()
    schema = package / "format" / "schemas" / "feedback.schema.json"
    schema.write_text(schema.read_text("utf-8").replace('"type": "object"', '"type": "object" ', 1), "utf-8")
    assert _index.stamp(package / "format") != _index.stamp()


def test_an_upgrade_keeps_the_index_unless_a_schema_changed(base: Path, tmp_path: Path) -> None:
    listing(base)  # makes the index, stamped by this haytham
    _plant_probe(base)
    upgraded = _installed_copy(tmp_path / "upgraded")
    for module in (upgraded / "cli" / "sessions.py", upgraded / "store" / "validation.py"):
        module.write_text(module.read_text("utf-8") + "\n# changed by the upgrade\n", "utf-8")
    _list_with(upgraded, base)
    assert _probe(base)  # the upgraded haytham kept every row
    assert entries(base, "summary") == SESSIONS

    schema = upgraded / "format" / "schemas" / "manifest.schema.json"
    schema.write_text(schema.read_text("utf-8").replace('"type": "object"', '"type": "object" ', 1), "utf-8")
    _list_with(upgraded, base)
    assert not _probe(base)  # a changed schema may change what is valid: the index starts over


def test_a_remembered_key_is_the_key_the_files_have_now(base: Path) -> None:
    """``derived.still`` (the warm check of a remembered session) gives the key ``gather``
    gave while the fact files are unchanged, another one after a file is rewritten in place
    with its size and modification time kept, and None once a fact file is gone."""
    folder = manifest_of(base, "s00").parent
    facts = derived.gather(str(folder), manifest_of(base, "s00").stat(), "")
    names = derived.SEPARATOR.join(facts.names)
    assert "phase_1_concept/writer.md" in facts.names and facts.key

    def now() -> str | None:
        return derived.still(str(folder), manifest_of(base, "s00").stat(), names, "")

    assert now() == facts.key
    assert derived.still(str(folder), manifest_of(base, "s00").stat(), names, "salt") != facts.key
    output = folder / "phase_1_concept" / "writer.md"
    before, phase = output.stat(), output.parent.stat()
    output.write_bytes(output.read_bytes().swapcase())  # in place, the same size
    os.utime(output, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert output.parent.stat().st_mtime_ns == phase.st_mtime_ns  # no folder says it changed
    assert output.stat().st_size == before.st_size
    assert now() not in (None, facts.key)
    output.unlink()
    assert now() is None


def test_a_stat_beyond_64_bits_still_keys_a_session(base: Path) -> None:
    """A file id wider than 64 bits (ReFS gives 128) cannot be packed as a number: the key
    takes it written out, and two such ids give two keys."""
    folder = manifest_of(base, "s01").parent
    real = manifest_of(base, "s01").stat()

    def wide(inode: int) -> os.stat_result:
        fields = list(real)
        fields[stat.ST_INO] = inode
        times = (
            real.st_atime,
            real.st_mtime,
            real.st_ctime,
            real.st_atime_ns,
            real.st_mtime_ns,
            real.st_ctime_ns,
        )
        made = os.stat_result((*fields, *times))
        assert (made.st_ino, made.st_mtime_ns, made.st_ctime_ns) == (
            inode,
            real.st_mtime_ns,
            real.st_ctime_ns,
        )
        return made

    names = derived.SEPARATOR.join(derived.gather(str(folder), None, "").names)
    keys = []
    for inode in (2**70, 2**70 + 1):
        found = derived.key_of(str(folder), wide(inode), names.split(derived.SEPARATOR), "")
        assert found is not None
        assert derived.still(str(folder), wide(inode), names, "") == found[0]
        keys.append(found[0])
    assert keys[0] != keys[1]


def _site(folder: Path, version: str | None, module: str = "yaml", distribution: str = "PyYAML") -> str:
    """A site folder holding ``module`` (a package) and, when ``version``, the dist-info an
    installer writes beside it; the package's ``__init__.py``, as ``find_spec`` gives it."""
    package = folder / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"# installed in {folder.name}\n", "utf-8")
    if version is not None:
        (folder / f"{distribution}-{version}.dist-info").mkdir()
    return str(package / "__init__.py")


def test_two_installs_of_one_parser_release_give_one_stamp(tmp_path: Path) -> None:
    """A parser is known by its release, not by where it was installed: two environments
    (a pipx haytham, a project's venv) that share a tree would otherwise throw each other's
    index away at every alternation. Without a dist-info beside it, by its file's stat."""
    first = _site(tmp_path / "venv-a", "6.0.4", distribution="pyyaml")
    second = _site(tmp_path / "venv-b", "6.0.4", distribution="PyYAML")  # older pips kept the case
    newer = _site(tmp_path / "venv-c", "6.0.5")
    bare = _site(tmp_path / "checkout", None)
    identity = _index.parser_identity
    assert identity("yaml", first) == identity("yaml", second) == "yaml==6.0.4"
    assert identity("yaml", newer) == "yaml==6.0.5"
    assert identity("yaml", bare).startswith(f"yaml={bare}:")
    (tmp_path / "venv-a" / "PyYAML-6.0.3.dist-info").mkdir()  # two releases claim the folder: by stat
    assert identity("yaml", first).startswith(f"yaml={first}:")


def test_the_stamp_knows_the_installed_parsers_by_their_release() -> None:
    from importlib.metadata import version

    import yaml

    assert _index.parser_identity("yaml", str(yaml.__file__)) == f"yaml=={version('pyyaml')}"
