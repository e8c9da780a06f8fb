"""Retention: every rule in a dry run and for real, the never-remove guarantees, the event,
the lock, and the ``haytham prune`` command, on real sessions in tmp dirs.

Each rule is checked the same way: the dry run removes nothing and lists exactly what the
real run then removes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from haytham import CheckpointManager, InvalidArgumentError, LockTimeout, ProjectNotFoundError
from haytham.cli.ops import JSON_OUTPUT, parse_age, prune
from haytham.retention import CleanupReport, RetentionPolicy, cleanup
from haytham.store.events import Event

T0 = datetime(2024, 11, 1, 10, 0, tzinfo=timezone.utc)
MVP = (1, 2, 3, 6, 7)


class Clock:
    """A clock the test sets: every save is stamped with exactly the time wanted."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def at(self, days: float) -> Clock:
        self.now = T0 + timedelta(days=days)
        return self


def stamp(days: float) -> str:
    return (T0 + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make(
    m: CheckpointManager,
    clock: Clock,
    project: str,
    session: str,
    *,
    created: float,
    state: str,
    user: str = "ada",
) -> Path:
    """A session created on day ``created`` and last updated then, in ``state``:
    ``completed``, ``failed`` or ``in_progress`` (phase 1 done, the rest pending)."""
    clock.at(created)
    directory = m.create_session(project, session, user)
    phases = {"completed": MVP, "failed": (1,), "in_progress": (1,)}[state]
    for n in phases:
        status = "failed" if state == "failed" else "completed"
        m.save_checkpoint(
            project, session, n, status, agents=[], started=stamp(created), completed=stamp(created)
        )
    return directory


def names(report: CleanupReport) -> list[str]:
    return [
        f"{r.kind}:{r.project_id}/{r.session_id}" + (f"#{r.attempt}" if r.attempt else "")
        for r in report.removed
    ]


def dry_then_real(m: CheckpointManager, policy: RetentionPolicy, **kwargs: object) -> CleanupReport:
    """Run the dry run, check it changed nothing, run for real, check both list the same."""
    before = sorted(str(p) for p in m.base_dir.rglob("*"))
    dry = cleanup(m, policy, dry_run=True, **kwargs)  # type: ignore[arg-type]
    assert dry.dry_run
    assert sorted(str(p) for p in m.base_dir.rglob("*")) == before
    real = cleanup(m, policy, **kwargs)  # type: ignore[arg-type]
    assert not real.dry_run
    assert [r.to_dict() for r in real.removed] == [r.to_dict() for r in dry.removed]
    assert [s.to_dict() for s in real.skipped] == [s.to_dict() for s in dry.skipped]
    for removal in real.removed:
        assert not removal.path.exists()
    assert not list(m.base_dir.rglob("*.removing")), "no hidden leftover after a real run"
    return real


def remaining(m: CheckpointManager, project: str | None = None) -> list[str]:
    return sorted(f"{s.project_id}/{s.session_id}" for s in m.list_sessions(project_id=project))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def m(tmp_path: Path, clock: Clock) -> CheckpointManager:
    return CheckpointManager(tmp_path / "projects", clock=clock)


# ------------------------------------------------------------------------ age rule


def test_age_rule_removes_finished_sessions_last_updated_too_long_ago(
    m: CheckpointManager, clock: Clock
) -> None:
    make(m, clock, "acme", "old-done", created=0, state="completed")
    make(m, clock, "acme", "old-failed", created=1, state="failed")
    make(m, clock, "acme", "old-running", created=2, state="in_progress")
    make(m, clock, "acme", "new-done", created=35, state="completed")

    report = dry_then_real(m, RetentionPolicy(max_age_days=30), now=T0 + timedelta(days=40))

    assert names(report) == ["session:acme/old-done", "session:acme/old-failed"]
    assert {r.rule for r in report.removed} == {"max_age_days"}
    assert "more than 30 days ago" in report.removed[0].reason
    assert [s.session_id for s in report.skipped] == ["old-running"]
    assert "in progress" in report.skipped[0].reason
    assert remaining(m) == ["acme/new-done", "acme/old-running"]


def test_age_is_measured_from_last_updated_and_now_defaults_to_the_managers_clock(
    m: CheckpointManager, clock: Clock
) -> None:
    make(m, clock, "acme", "s", created=0, state="in_progress")
    clock.at(20)
    for n in MVP[1:]:  # finished on day 20: Last Updated moves, Created does not
        m.save_checkpoint("acme", "s", n, "completed", agents=[], started=stamp(20), completed=stamp(20))
    assert m.load_manifest("acme", "s").last_updated == stamp(20)

    clock.at(45)
    assert cleanup(m, RetentionPolicy(max_age_days=30), dry_run=True).removed == []
    clock.at(51)
    assert names(dry_then_real(m, RetentionPolicy(max_age_days=30))) == ["session:acme/s"]


@pytest.mark.parametrize(
    ("include_in_progress", "only_finished", "removed"),
    [(False, True, False), (False, False, False), (True, True, False), (True, False, True)],
)
def test_the_age_rule_removes_a_session_in_progress_only_with_both_switches(
    m: CheckpointManager, clock: Clock, include_in_progress: bool, only_finished: bool, removed: bool
) -> None:
    make(m, clock, "acme", "abandoned", created=0, state="in_progress")
    policy = RetentionPolicy(
        max_age_days=1, include_in_progress=include_in_progress, only_finished=only_finished
    )

    report = dry_then_real(m, policy, now=T0 + timedelta(days=10))

    assert names(report) == (["session:acme/abandoned"] if removed else [])
    assert remaining(m) == ([] if removed else ["acme/abandoned"])
    if not removed:
        why = "include_in_progress" if not include_in_progress else "only_finished"
        assert why in report.skipped[0].reason


def test_a_stale_manifest_never_makes_a_running_session_look_finished(
    m: CheckpointManager, clock: Clock
) -> None:
    directory = make(m, clock, "acme", "s", created=0, state="completed")
    m.save_checkpoint("acme", "s", 7, "in_progress", agents=[], started=stamp(0))
    manifest = directory / "session_manifest.md"
    manifest.write_text(manifest.read_text().replace("- Status: in_progress", "- Status: completed"))
    assert m.load_manifest("acme", "s").status == "completed"  # the manifest lies ...

    report = dry_then_real(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=10))

    assert report.removed == []  # ... but the checkpoints say phase 7 is running
    assert remaining(m) == ["acme/s"]


# ---------------------------------------------------------------------- count rules


def test_keep_n_sessions_per_project_removes_the_oldest_by_created(
    m: CheckpointManager, clock: Clock
) -> None:
    for day, name in enumerate(["s1", "s2", "s3", "s4"]):
        make(m, clock, "acme", name, created=day, state="completed")
    make(m, clock, "other", "x1", created=0, state="completed")
    clock.at(30)  # s1 is the most recently *updated*, but still the oldest by Created
    m.save_checkpoint("acme", "s1", 1, "completed", agents=[], started=stamp(30), completed=stamp(30))

    report = dry_then_real(m, RetentionPolicy(max_sessions_per_project=2))

    assert names(report) == ["session:acme/s1", "session:acme/s2"]
    assert {r.rule for r in report.removed} == {"max_sessions_per_project"}
    assert "project acme keeps its 2 newest sessions" in report.removed[0].reason
    assert remaining(m) == ["acme/s3", "acme/s4", "other/x1"]


def test_created_times_are_compared_as_times_not_text(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "first", created=1 / 86400, state="completed")  # ...T10:00:01Z
    make(m, clock, "acme", "second", created=1.5 / 86400, state="completed")  # ...T10:00:01.500000Z
    created = [m.load_manifest("acme", s).created for s in ("first", "second")]
    assert sorted(created) == created[::-1]  # as text, the later one sorts first

    assert names(dry_then_real(m, RetentionPolicy(max_sessions_per_project=1))) == ["session:acme/first"]


def test_count_rules_keep_sessions_in_progress_unless_included(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "running", created=0, state="in_progress")
    make(m, clock, "acme", "done", created=1, state="completed")
    make(m, clock, "acme", "newest", created=2, state="completed")
    policy = RetentionPolicy(max_sessions_per_project=1)

    report = dry_then_real(m, policy)
    assert names(report) == ["session:acme/done"]
    assert [s.session_id for s in report.skipped] == ["running"]

    report = dry_then_real(m, RetentionPolicy(max_sessions_per_project=1, include_in_progress=True))
    assert names(report) == ["session:acme/running"]
    assert remaining(m) == ["acme/newest"]


def test_keep_n_sessions_per_user_counts_across_projects(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "a1", created=0, state="completed", user="ada")
    make(m, clock, "beta", "a2", created=1, state="failed", user="ada")
    make(m, clock, "acme", "a3", created=2, state="completed", user="ada")
    make(m, clock, "acme", "b1", created=0, state="completed", user="bob")

    report = dry_then_real(m, RetentionPolicy(max_sessions_per_user=1))

    assert names(report) == ["session:acme/a1", "session:beta/a2"]
    assert {r.rule for r in report.removed} == {"max_sessions_per_user"}
    assert remaining(m) == ["acme/a3", "acme/b1"]


def test_project_and_user_scopes_limit_what_is_looked_at(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "a1", created=0, state="completed", user="ada")
    make(m, clock, "acme", "b1", created=0, state="completed", user="bob")
    make(m, clock, "beta", "a2", created=0, state="completed", user="ada")
    policy = RetentionPolicy(max_age_days=1)
    now = T0 + timedelta(days=5)

    assert names(dry_then_real(m, policy, project_id="beta", now=now)) == ["session:beta/a2"]
    assert names(dry_then_real(m, policy, user_id="bob", now=now)) == ["session:acme/b1"]
    assert remaining(m) == ["acme/a1"]
    with pytest.raises(ProjectNotFoundError, match="'nope' does not exist"):
        cleanup(m, policy, project_id="nope")


def test_a_scoped_run_removes_exactly_its_part_of_a_full_run(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "a1", created=0, state="completed", user="ada")
    make(m, clock, "beta", "a2", created=1, state="completed", user="ada")
    make(m, clock, "acme", "a3", created=2, state="completed", user="ada")
    policy = RetentionPolicy(max_sessions_per_user=1)  # ada's newest is acme/a3
    full = cleanup(m, policy, dry_run=True)
    assert names(full) == ["session:acme/a1", "session:beta/a2"]

    assert names(dry_then_real(m, policy, project_id="beta")) == ["session:beta/a2"]
    assert names(dry_then_real(m, policy, project_id="acme")) == ["session:acme/a1"]
    assert remaining(m) == ["acme/a3"]


def test_the_default_policy_removes_nothing(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "s", created=0, state="completed")
    assert RetentionPolicy().is_empty
    assert dry_then_real(m, RetentionPolicy(), now=T0 + timedelta(days=9999)).removed == []


# -------------------------------------------------------------------- attempt rule


def retried(
    m: CheckpointManager, clock: Clock, project: str, session: str, attempts: int, *, finish: bool
) -> Path:
    """A session whose phase 1 ran ``attempts`` times (each earlier one sent back)."""
    make(m, clock, project, session, created=0, state="completed" if finish else "in_progress")
    for attempt in range(2, attempts + 1):
        m.save_agent_output(project, session, 1, "concept_expansion", f"attempt {attempt - 1}")
        m.save_user_feedback(project, session, 1, reviewed=True, approved=False, action="retry")
        assert m.start_attempt(project, session, 1) == attempt
        m.save_agent_output(project, session, 1, "concept_expansion", f"attempt {attempt}")
        agents = [{"agent_name": "concept_expansion"}]
        m.save_checkpoint(project, session, 1, "completed", agents=agents, retry_count=attempt - 1)
    if finish and attempts > 1:
        # the later phases were built on attempt 1: they are stale until they run again on
        # the current attempt, as a resume runs them, and only then is the session finished
        for n in MVP[1:]:
            m.save_checkpoint(project, session, n, "completed", agents=[])
        assert m.state(project, session).state == "completed"
    return m.phase_dir(project, session, 1)


def test_keep_n_attempts_removes_the_oldest_archived_attempts_never_the_current(
    m: CheckpointManager, clock: Clock
) -> None:
    phase = retried(m, clock, "acme", "s", 4, finish=True)
    assert [a.number for a in m.load_attempts("acme", "s", 1)] == [1, 2, 3, 4]

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=2))
    assert names(report) == ["attempt:acme/s#1", "attempt:acme/s#2"]
    assert [(r.rule, r.phase) for r in report.removed] == [("max_attempts_per_phase", 1)] * 2
    assert [a.number for a in m.load_attempts("acme", "s", 1)] == [3, 4]

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=1))
    assert names(report) == ["attempt:acme/s#3"]
    attempts = m.load_attempts("acme", "s", 1)
    assert [a.number for a in attempts] == [4]
    assert attempts[0].outputs == {"concept_expansion": "attempt 4"}  # the current attempt is intact
    assert not (phase / "attempts").exists()
    assert m.check("acme", "s") == []
    assert m.validate_session("acme", "s") == []


def test_without_a_current_checkpoint_the_newest_archived_attempt_is_the_latest(
    m: CheckpointManager, clock: Clock
) -> None:
    phase = retried(m, clock, "acme", "s", 3, finish=True)
    (phase / "checkpoint.md").rename(phase.parent / "kept-aside.md")  # a hand-made mess

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=1, include_in_progress=True))

    assert names(report) == ["attempt:acme/s#1"]
    assert (phase / "attempts" / "2").is_dir()


def test_attempts_of_a_session_in_progress_are_kept_unless_included(
    m: CheckpointManager, clock: Clock
) -> None:
    phase = retried(m, clock, "acme", "s", 3, finish=False)
    m.save_user_feedback("acme", "s", 1, reviewed=True, approved=False, action="retry")
    m.start_attempt("acme", "s", 1)  # attempt 4 is running; it retries because of attempt 3's review

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=1))
    assert report.removed == []
    assert "in progress" in report.skipped[0].reason
    assert sorted(p.name for p in (phase / "attempts").iterdir()) == ["1", "2", "3"]

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=1, include_in_progress=True))
    assert names(report) == ["attempt:acme/s#1", "attempt:acme/s#2"]
    remaining_attempts = m.load_attempts("acme", "s", 1)
    assert [a.number for a in remaining_attempts] == [3, 4]
    feedback = remaining_attempts[0].feedback
    assert feedback is not None and not feedback.approved  # the re-run can still read its review


def test_sessions_removed_by_a_session_rule_are_not_also_listed_by_attempt(
    m: CheckpointManager, clock: Clock
) -> None:
    retried(m, clock, "acme", "s", 3, finish=True)
    policy = RetentionPolicy(max_attempts_per_phase=1, max_age_days=1)
    report = dry_then_real(m, policy, now=T0 + timedelta(days=10))
    assert names(report) == ["session:acme/s"]


# --------------------------------------------------------------------- guarantees


def test_a_session_removal_is_done_under_the_session_lock(tmp_path: Path, clock: Clock) -> None:
    m = CheckpointManager(tmp_path / "projects", clock=clock, lock_timeout=0.2)
    directory = make(m, clock, "acme", "s", created=0, state="completed")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from filelock import FileLock
                with FileLock({str(directory / ".haytham.lock")!r}):
                    print("held", flush=True)
                    sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout):
            cleanup(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=5))
        assert remaining(m) == ["acme/s"]
        assert m.validate_session("acme", "s") == []
    finally:
        holder.communicate("done\n", timeout=30)
    assert names(dry_then_real(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=5))) == [
        "session:acme/s"
    ]


def test_a_session_saved_after_planning_is_kept(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "a", created=0, state="completed")
    make(m, clock, "acme", "b", created=1, state="completed")

    def save_b_meanwhile(done: int, total: int) -> None:
        if done == 1:
            clock.at(50)
            m.save_checkpoint("acme", "b", 7, "completed", agents=[], started=stamp(50), completed=stamp(50))

    report = cleanup(
        m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=10), progress=save_b_meanwhile
    )

    assert names(report) == ["session:acme/a"]
    assert [(s.session_id, s.reason) for s in report.skipped] == [
        ("b", "the session changed since the cleanup was planned")
    ]
    assert remaining(m) == ["acme/b"]


def test_leftovers_of_an_interrupted_cleanup_are_finished_by_the_next_run(
    m: CheckpointManager, clock: Clock
) -> None:
    phase = retried(m, clock, "acme", "s", 2, finish=True)
    sessions = phase.parent.parent
    debris = sessions / ".gone.removing"
    (debris / "phase_1_concept").mkdir(parents=True)
    (debris / "phase_1_concept" / "checkpoint.md").write_text("half deleted\n")
    (phase / "attempts" / ".7.removing").mkdir()

    report = dry_then_real(m, RetentionPolicy(max_attempts_per_phase=5))

    assert [(r.kind, r.rule, r.path) for r in report.removed] == [
        ("session", "leftover", debris),
        ("attempt", "leftover", phase / "attempts" / ".7.removing"),
    ]
    assert [a.number for a in m.load_attempts("acme", "s", 1)] == [1, 2]


def test_one_cleanup_done_event_with_what_was_removed(m: CheckpointManager, clock: Clock) -> None:
    make(m, clock, "acme", "old", created=0, state="completed")
    events: list[Event] = []
    m.on("cleanup_done", events.append)

    dry = cleanup(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=5), dry_run=True)
    real = cleanup(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=5))
    cleanup(m, RetentionPolicy(max_age_days=1), now=T0 + timedelta(days=5))

    assert [e.name for e in events] == ["cleanup_done"] * 3
    assert events[0].data == {"removed": [r.to_dict() for r in dry.removed], "dry_run": True}
    assert events[1].data == {"removed": [r.to_dict() for r in real.removed], "dry_run": False}
    assert events[1].data["removed"][0]["path"] == str(m.session_dir("acme", "old"))
    assert events[2].data == {"removed": [], "dry_run": False}
    assert events[1].path == m.base_dir


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_attempts_per_phase", 0),
        ("max_sessions_per_project", -1),
        ("max_sessions_per_user", True),
        ("max_age_days", float("inf")),
        ("max_age_days", -1),
        ("only_finished", "yes"),
        ("include_in_progress", 1),
    ],
)
def test_a_policy_refuses_values_it_cannot_apply(field: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError) as error:
        RetentionPolicy(**{field: value})  # type: ignore[arg-type]
    assert error.value.field == field


def test_now_must_be_timezone_aware(m: CheckpointManager) -> None:
    with pytest.raises(InvalidArgumentError, match="timezone-aware"):
        cleanup(m, RetentionPolicy(max_age_days=1), now=datetime(2024, 1, 1))


# --------------------------------------------------------------------- haytham prune


@pytest.fixture
def store(
    m: CheckpointManager, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> CheckpointManager:
    """Sessions for the command, run from a folder without a haytham.yaml."""
    monkeypatch.chdir(tmp_path)
    make(m, clock, "acme", "old", created=0, state="completed", user="ada")
    make(m, clock, "acme", "running", created=0, state="in_progress", user="ada")
    make(m, clock, "acme", "bob1", created=1, state="completed", user="bob")
    make(m, clock, "acme", "bob2", created=2, state="completed", user="bob")
    retried(m, clock, "beta", "retried", 3, finish=True)
    return m


def run(m: CheckpointManager, *args: str) -> Result:
    result = CliRunner().invoke(prune, [*args, "--base-dir", str(m.base_dir)])
    assert "Traceback" not in result.output, result.output
    return result


def run_json(m: CheckpointManager, *args: str) -> dict[str, object]:
    result = run(m, *args, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return data


def test_prune_dry_run_lists_exactly_what_prune_removes(store: CheckpointManager, tmp_path: Path) -> None:
    args = ("--older-than", "30d", "--keep-attempts", "2")
    dry = run_json(store, *args, "--dry-run")
    assert remaining(store) == ["acme/bob1", "acme/bob2", "acme/old", "acme/running", "beta/retried"]
    real = run_json(store, *args)
    assert dry["dry_run"] is True and real["dry_run"] is False
    assert dry["removed"] == real["removed"]
    assert [(r["kind"], r["session_id"], r["attempt"]) for r in real["removed"]] == [  # type: ignore[attr-defined]
        ("session", "old", None),  # by project, then oldest first
        ("session", "bob1", None),
        ("session", "bob2", None),
        ("session", "retried", None),
    ]
    assert remaining(store) == ["acme/running"]


def test_prune_json_keys_are_the_documented_ones(store: CheckpointManager) -> None:
    data = run_json(store, "--keep-attempts", "1", "--older-than", "1d", "--project", "acme", "--dry-run")
    documented = JSON_OUTPUT["prune"]
    assert set(data) == {k for k in documented if "." not in k and "[" not in k}
    removed = data["removed"]
    assert isinstance(removed, list) and removed
    assert set(removed[0]) == {k.split(".", 1)[1] for k in documented if k.startswith("removed[].")}
    skipped = data["skipped"]
    assert isinstance(skipped, list) and skipped
    assert set(skipped[0]) == {k.split(".", 1)[1] for k in documented if k.startswith("skipped[].")}


def test_prune_keep_attempts_and_user_keep(store: CheckpointManager) -> None:
    result = run(store, "--keep-attempts", "1")
    assert result.exit_code == 0, result.output
    assert (
        "Removed attempt 1 of phase 1 of beta/retried: phase 1 keeps its 1 newest attempts" in result.output
    )
    assert result.output.rstrip().endswith("Removed 0 sessions and 2 attempts")

    result = run(store, "--user", "bob", "--keep", "1", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Would remove session acme/bob1: user bob keeps its 1 newest sessions" in result.output
    assert "Dry run: would remove 1 session and 0 attempts; nothing was removed" in result.output
    assert "bob2" not in result.output


def test_prune_keep_per_project_and_include_in_progress(store: CheckpointManager) -> None:
    result = run(store, "--project", "acme", "--keep", "1")
    assert result.exit_code == 0, result.output
    assert "Kept acme/running:" in result.output and "in progress" in result.output
    assert remaining(store, "acme") == ["acme/bob2", "acme/running"]

    result = run(store, "--project", "acme", "--keep", "1", "--include-in-progress")
    assert result.exit_code == 0, result.output
    assert remaining(store, "acme") == ["acme/bob2"]


@pytest.mark.parametrize(
    ("text", "days"), [("30d", 30.0), ("12h", 0.5), ("2w", 14.0), ("1.5d", 1.5), (" 3 d ", 3.0)]
)
def test_ages_accept_hours_days_and_weeks(text: str, days: float) -> None:
    assert parse_age(text) == days


@pytest.mark.parametrize("text", ["30", "30x", "d", "-1d", "1e3d"])
def test_prune_refuses_an_age_it_cannot_read(m: CheckpointManager, text: str) -> None:
    result = run(m, "--older-than", text)
    assert result.exit_code == 2
    assert "is not an age such as 30d, 12h or 2w" in result.output


def test_prune_without_any_rule_is_a_usage_error(store: CheckpointManager) -> None:
    result = run(store)
    assert result.exit_code == 2
    assert "nothing to prune" in result.output


def test_prune_errors_are_one_line_and_exit_1(store: CheckpointManager) -> None:
    result = run(store, "--project", "nope", "--older-than", "1d")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: project 'nope' does not exist under {store.base_dir}"
    ]
    result = run(store, "--project", "../x", "--older-than", "1d")
    assert result.exit_code == 1
    assert result.output.startswith("Error: project_id")


def test_prune_reads_the_base_dir_from_haytham_yaml_env_var_wins(
    store: CheckpointManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_root = tmp_path / "root"
    project_root.mkdir()
    (project_root / "haytham.yaml").write_text(f"storage:\n  base_dir: {store.base_dir}\n")
    monkeypatch.chdir(project_root)
    monkeypatch.delenv("HAYTHAM_BASE_DIR", raising=False)
    result = CliRunner().invoke(prune, ["--keep-attempts", "1", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["removed"]) == 2

    empty = tmp_path / "empty"
    result = CliRunner().invoke(
        prune, ["--keep-attempts", "1", "--json"], env={"HAYTHAM_BASE_DIR": str(empty)}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["removed"] == []
    assert len(m_attempts(store)) == 3


def m_attempts(m: CheckpointManager) -> list[int]:
    return [a.number for a in m.load_attempts("beta", "retried", 1)]
