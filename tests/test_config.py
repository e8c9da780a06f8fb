"""``haytham.yaml``: every key does something, every mistake is located at file and line,
``open_store`` finds the file and cleans up on start when asked; on real files in tmp dirs."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from haytham import CheckpointManager, DocumentError, NotFoundError
from haytham.cli.ops import prune
from haytham.config import CONFIG_FILE, HaythamConfig, find_config, load_config, open_store
from haytham.retention import RetentionPolicy

OLD = datetime(2024, 1, 1, tzinfo=timezone.utc)
FULL = """\
storage:
  base_dir: data/sessions
retention:
  max_attempts_per_phase: 3
  max_sessions_per_project: 50
  max_sessions_per_user: 20
  max_age_days: 90.5
  only_finished: false
  include_in_progress: true
cleanup_on_start: true
"""


def write(folder: Path, text: str, name: str = CONFIG_FILE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def finished_session(base_dir: Path, project: str, session: str, user: str = "ada") -> None:
    """A completed session created and last updated on 2024-01-01."""
    m = CheckpointManager(base_dir, clock=lambda: OLD)
    m.create_session(project, session, user)
    for n in (1, 2, 3, 6, 7):
        m.save_checkpoint(project, session, n, "completed", agents=[])


def test_every_key_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "root", FULL)
    config = load_config(path)
    assert config == HaythamConfig(
        base_dir=tmp_path / "root" / "data" / "sessions",
        retention=RetentionPolicy(
            max_attempts_per_phase=3,
            max_sessions_per_project=50,
            max_sessions_per_user=20,
            max_age_days=90.5,
            only_finished=False,
            include_in_progress=True,
        ),
        cleanup_on_start=True,
        path=path,
    )


def test_an_empty_file_and_no_file_mean_the_defaults(tmp_path: Path) -> None:
    empty = load_config(write(tmp_path, ""))
    assert empty.base_dir == tmp_path / "projects"
    assert empty.retention == RetentionPolicy() and empty.retention.is_empty
    assert empty.cleanup_on_start is False
    assert find_config(tmp_path / "nowhere") == HaythamConfig(base_dir=tmp_path / "nowhere" / "projects")
    sections = load_config(write(tmp_path, "storage:\nretention:\n"))
    assert sections.base_dir == tmp_path / "projects" and sections.retention == RetentionPolicy()
    nulls = load_config(write(tmp_path, "retention:\n  max_age_days: null\n  max_sessions_per_user: ~\n"))
    assert nulls.retention == RetentionPolicy()


def test_base_dir_is_relative_to_the_files_folder_not_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "root", "storage:\n  base_dir: store\n")
    monkeypatch.chdir(tmp_path)
    manager = load_config(Path("root") / CONFIG_FILE).manager()
    assert isinstance(manager, CheckpointManager)
    assert manager.base_dir == Path("root") / "store"
    manager.create_session("acme", "s-001", "ada")
    assert (tmp_path / "root" / "store" / "acme" / "sessions" / "s-001" / "session_manifest.md").is_file()

    absolute = write(tmp_path / "other", f"storage:\n  base_dir: {tmp_path / 'abs'}\n")
    assert load_config(absolute).base_dir == tmp_path / "abs"
    assert load_config(path).manager(clock=lambda: OLD).clock() == OLD


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("storage:\n  base_dir: x\nretention:\n  keep: 3\n", 4, "retention.keep", "unknown key 'keep'"),
        (
            "cleanup: true\n",
            1,
            "cleanup",
            "unknown key 'cleanup' (expected one of cleanup_on_start, notify, otel, retention, review, "
            "storage)",
        ),
        ("storage:\n  path: x\n", 2, "storage.path", "unknown key 'path' (expected one of base_dir)"),
        ("retention:\n  max_age_days: soon\n", 2, "retention.max_age_days", "'soon' is not a number"),
        (
            "retention:\n\n  max_attempts_per_phase: 0\n",
            3,
            "retention.max_attempts_per_phase",
            "0 is below the minimum 1",
        ),
        (
            "retention:\n  max_sessions_per_user: 2.5\n",
            2,
            "retention.max_sessions_per_user",
            "2.5 is not a whole number",
        ),
        ("retention:\n  only_finished: maybe\n", 2, "retention.only_finished", "'maybe' is not a boolean"),
        ("cleanup_on_start: 1\n", 1, "cleanup_on_start", "1 is not a boolean"),
        ("storage: projects\n", 1, "storage", "'projects' is not a mapping"),
        ("storage:\n  base_dir: ''\n", 2, "storage.base_dir", "''"),
        ("retention:\n  max_age_days: .inf\n", 2, "retention.max_age_days", "not a finite number of days"),
        ("retention:\n  max_age_days: 1\n  max_age_days: 2\n", 3, "retention.max_age_days", "given twice"),
        ("retention:\n  max_age_days: [1\n", 3, None, "is not valid YAML"),
        ("- storage\n", 1, None, "must be a YAML mapping"),
        ("retention: !!python/object:os.system {}\n", 1, None, "is not valid YAML"),
    ],
)
def test_mistakes_are_located_at_file_line_and_key(
    tmp_path: Path, text: str, line: int, field: str | None, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DocumentError) as error:
        load_config(path)
    assert (error.value.path, error.value.line, error.value.field) == (path, line, field)
    assert message in str(error.value)
    assert str(error.value).startswith(f"{path}:{line}: ")


def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        load_config(tmp_path / CONFIG_FILE)
    with pytest.raises(NotFoundError):
        open_store(tmp_path / CONFIG_FILE)


def test_open_store_uses_the_current_directorys_file_or_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert open_store().base_dir == Path("projects")
    write(tmp_path, "storage:\n  base_dir: elsewhere\n")
    assert open_store().base_dir == Path("elsewhere")
    assert open_store(write(tmp_path / "sub", "storage:\n  base_dir: b\n")).base_dir == tmp_path / "sub" / "b"


def test_cleanup_on_start_applies_the_retention_before_returning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "projects"
    for name in ("s-1", "s-2", "s-3"):
        finished_session(base, "acme", name)
    retention = "retention:\n  max_sessions_per_project: 1\n"
    monkeypatch.chdir(tmp_path)

    write(tmp_path, retention + "cleanup_on_start: false\n")
    assert len(open_store().list_sessions()) == 3

    write(tmp_path, retention)  # cleanup_on_start defaults to false
    assert len(open_store().list_sessions()) == 3

    write(tmp_path, retention + "cleanup_on_start: true\n")
    manager = open_store()
    assert [s.session_id for s in manager.list_sessions()] == ["s-3"]


def test_cleanup_on_start_honours_only_finished_and_include_in_progress(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    finished_session(base, "acme", "old")
    running = CheckpointManager(base, clock=lambda: OLD)
    running.create_session("acme", "running", "bob")
    finished_session(base, "beta", "other", user="ada")
    path = write(
        tmp_path,
        """\
        retention:
          max_age_days: 30
          include_in_progress: true
          only_finished: true
        cleanup_on_start: true
        """,
    )
    manager = open_store(path)  # only_finished keeps the running session from the age rule
    assert sorted(s.session_id for s in manager.list_sessions()) == ["running"]

    write(
        tmp_path,
        "retention:\n  max_age_days: 30\n  include_in_progress: true\n  only_finished: false\n"
        "cleanup_on_start: true\n",
    )
    assert open_store(path).list_sessions() == []


def test_prune_takes_its_defaults_from_haytham_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "data"
    finished_session(base, "acme", "old")
    finished_session(base, "acme", "older")
    write(tmp_path, "storage:\n  base_dir: data\nretention:\n  max_age_days: 30\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAYTHAM_BASE_DIR", raising=False)

    result = CliRunner().invoke(prune, ["--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["rule"] for r in data["removed"]] == ["max_age_days", "max_age_days"]

    result = CliRunner().invoke(prune, ["--older-than", "5000d", "--json"])  # an option wins
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["removed"] == []

    write(tmp_path, "retention:\n  max_age_days: 30\n  maxage: 1\n")
    result = CliRunner().invoke(prune, ["--dry-run"])
    assert result.exit_code == 1
    assert result.output == f"Error: {CONFIG_FILE}:3: retention.maxage: unknown key 'maxage' " + (
        "(expected one of include_in_progress, max_age_days, max_attempts_per_phase, "
        "max_sessions_per_project, max_sessions_per_user, only_finished)\n"
    )
