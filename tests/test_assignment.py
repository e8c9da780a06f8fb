"""Assignment (issue 25): a phase's ``reviewers:`` in the workflow, validated where it is
written; ``haytham list --awaiting-review --mine`` and the inbox filtered by the current
reviewer, answered by a warm listing without reading any workflow."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from workcount import WorkCounters

from haytham import CheckpointManager, DocumentError
from haytham.cli import main as cli_main
from haytham.format.layout import MANIFEST_FILE, WORKFLOW_FILE
from haytham.format.workflow import PhaseDefinition, Workflow, dump_workflow, load_workflow
from haytham.store import index as _index

P = "acme"
ALICE = "Alice Smith <alice@example.com>"


def flow(reviewers: tuple[str, ...]) -> Workflow:
    """Two phases, the first gated and assigned to ``reviewers`` (none: anyone)."""
    return Workflow(
        "assigned",
        (
            PhaseDefinition(1, "Draft", "phase_1_draft", ("writer",), review=True, reviewers=reviewers),
            PhaseDefinition(2, "Edit", "phase_2_edit", ("editor",)),
        ),
        {"all": (1, 2)},
    )


def awaiting(base: Path, session: str, reviewers: tuple[str, ...]) -> Path:
    """A session whose phase 1 (assigned to ``reviewers``) awaits its review."""
    manager = CheckpointManager(base)
    directory = manager.create_session(P, session, "ada", flow(reviewers), "all")
    blank = {"reviewed": False, "approved": False, "action": "pending"}  # as the runner leaves it
    manager.save_phase(P, session, 1, {"writer": "# Draft\n"}, feedback=blank)
    assert manager.state(P, session).phase(1).state == "awaiting_review"
    return directory


def listed(base: Path, *args: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    """``haytham list --json ARGS``: session id -> its current_reviewers."""
    result = CliRunner().invoke(cli_main.cli, ["list", "--json", "--base-dir", str(base), *args], env=env)
    assert result.exit_code == 0, result.output
    return {s["session_id"]: s["current_reviewers"] for s in json.loads(result.stdout)["sessions"]}


# ---------------------------------------------------------------------- the workflow


def test_reviewers_round_trip_through_the_session_workflow_and_leave_the_fingerprint(tmp_path: Path) -> None:
    assigned = flow(("alice@example.com", "Bob Smith <bob@example.com>", "Carol"))
    text = dump_workflow(assigned)
    assert "  reviewers: [alice@example.com, Bob Smith <bob@example.com>, Carol]\n" in text
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    assert load_workflow(path) == assigned
    assert assigned.fingerprint() == flow(()).fingerprint()  # who reviews shapes no file
    directory = awaiting(tmp_path / "projects", "s-1", ("Carol",))
    assert load_workflow(directory / WORKFLOW_FILE).phase(1).reviewers == ("Carol",)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("'<>'", "'<>' names no reviewer"),
        ("'Ann <a@x> <b@y>'", "names no reviewer"),
        ("''", "should be non-empty"),
    ],
)
def test_a_reviewers_entry_that_names_nobody_is_an_error_at_its_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: assigned\nmodes:\n  all: [1]\nphases:\n  - number: 1\n    name: Draft\n"
        "    agents: [writer]\n    review: true\n"
        f"    reviewers:\n      - alice@example.com\n      - {entry}\n"
    )
    with pytest.raises(DocumentError) as raised:
        load_workflow(path)
    assert raised.value.line == 11
    assert "phases.0.reviewers" in str(raised.value)
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"{path}:11: ")


# ---------------------------------------------------------------------- list --mine


def test_list_mine_keeps_the_phases_assigned_to_the_reviewer_and_the_unassigned(tmp_path: Path) -> None:
    base = tmp_path / "projects"
    awaiting(base, "for-alice", ("alice@example.com",))
    awaiting(base, "for-anyone", ())
    awaiting(base, "for-bob", ("Bob Smith",))
    everyone = listed(base, "--awaiting-review")
    assert everyone == {"for-alice": ["alice@example.com"], "for-anyone": [], "for-bob": ["Bob Smith"]}
    assert set(listed(base, "--awaiting-review", "--reviewer", ALICE)) == {"for-alice", "for-anyone"}
    assert set(listed(base, "--awaiting-review", "--mine", env={"HAYTHAM_REVIEWER": "bob smith"})) == {
        "for-anyone",
        "for-bob",
    }
    assert listed(base, "--awaiting-review", env={"HAYTHAM_REVIEWER": "bob smith"}) == everyone  # no --mine
    table = CliRunner().invoke(
        cli_main.cli,
        ["list", "--awaiting-review", "--reviewer", "nobody@example.com", "--base-dir", str(base)],
    )
    assert table.exit_code == 0, table.output
    assert "for-anyone" in table.output and "for-alice" not in table.output and "for-bob" not in table.output


def test_mine_reads_the_reviewer_from_haytham_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "projects"
    awaiting(base, "for-alice", ("alice@example.com",))
    awaiting(base, "for-bob", ("bob@example.com",))
    (tmp_path / "haytham.yaml").write_text("review:\n  reviewer: Alice <ALICE@example.com>\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAYTHAM_REVIEWER", raising=False)
    assert set(listed(base, "--awaiting-review", "--mine")) == {"for-alice"}


SESSIONS = 55
"""Past ``index.INDEX_MIN_SESSIONS``: a listing makes the index."""


def test_a_warm_mine_listing_reads_no_workflow_and_sees_a_reassignment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    base = tmp_path / "projects"
    first = awaiting(base, "s-00", ("alice@example.com",))
    names = ["s-00"]
    for number in range(1, SESSIONS):
        name = f"s-{number:02d}"
        shutil.copytree(first, first.parent / name)
        manifest = first.parent / name / MANIFEST_FILE
        manifest.write_text(manifest.read_text("utf-8").replace("Session ID: s-00", f"Session ID: {name}"))
        names.append(name)
    assert set(listed(base, "--awaiting-review", "--reviewer", ALICE)) == set(names)  # makes the index
    assert (base / _index.INDEX_DIR).is_dir()
    counters.reset()
    assert set(listed(base, "--awaiting-review", "--reviewer", ALICE)) == set(names)
    assert listed(base, "--awaiting-review", "--reviewer", "bob@example.com") == {}
    assert counters.opened == 0 and counters.parsed == 0  # no workflow, no checkpoint read
    moved = first.parent / names[3] / WORKFLOW_FILE  # reassigned by hand (or by git pull)
    moved.write_text(moved.read_text("utf-8").replace("alice@example.com", "bob@example.com"))
    assert listed(base, "--awaiting-review", "--reviewer", "bob@example.com") == {
        names[3]: ["bob@example.com"]
    }
    assert len(listed(base, "--awaiting-review", "--reviewer", ALICE)) == SESSIONS - 1
    monkeypatch.setenv("HAYTHAM_INDEX", "0")
    assert listed(base, "--awaiting-review", "--reviewer", "bob@example.com") == {
        names[3]: ["bob@example.com"]
    }


def test_mine_without_anyone_to_be_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no haytham.yaml
    monkeypatch.delenv("HAYTHAM_REVIEWER", raising=False)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.delenv(key, raising=False)
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")  # git makes up no author
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    result = CliRunner().invoke(cli_main.cli, ["list", "--mine", "--base-dir", str(tmp_path / "projects")])
    assert result.exit_code == 2, result.output
    assert "--mine needs to know who you are" in result.output


# ---------------------------------------------------------------------- the inbox


def test_the_inbox_filters_by_reviewer_and_by_the_servers_own_identity(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")
    from starlette.testclient import TestClient

    from haytham.format.reviewer import parse_reviewer
    from haytham.web.app import create_app

    base = tmp_path / "projects"
    awaiting(base, "for-alice", ("alice@example.com",))
    awaiting(base, "for-anyone", ())
    awaiting(base, "for-bob", ("Bob Smith",))

    def shown(page: str) -> set[str]:
        return {name for name in ("for-alice", "for-anyone", "for-bob") if f">{name}</a>" in page}

    app = create_app(str(base), reviewer=parse_reviewer(ALICE))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        everyone = client.get("/")
        assert everyone.status_code == 200
        assert shown(everyone.text) == {"for-alice", "for-anyone", "for-bob"}
        assert "for alice@example.com" in everyone.text  # who each phase is assigned to
        assert f"mine ({ALICE.replace('<', '&lt;').replace('>', '&gt;')})" in everyone.text
        assert shown(client.get("/", params={"reviewer": "bob smith"}).text) == {"for-anyone", "for-bob"}
        assert shown(client.get("/", params={"mine": "1"}).text) == {"for-alice", "for-anyone"}
        refused = client.get("/", params={"reviewer": "<>"})
        assert refused.status_code == 400 and "names no reviewer" in refused.text
    with TestClient(create_app(str(base)), base_url="http://127.0.0.1") as client:
        nobody = client.get("/", params={"mine": "1"})
        assert nobody.status_code == 400 and "has no reviewer identity" in nobody.text
        assert "mine (" not in client.get("/").text


def test_the_sessions_page_filters_by_assigned_reviewer(tmp_path: Path) -> None:
    """The sessions page's reviewer filter (issue 25, "filter by project, state and reviewer"):
    its choices are the entries of the current phases' ``reviewers:``, and a choice keeps the
    sessions whose current phase names it."""
    from starlette.testclient import TestClient

    from haytham.web.app import create_app

    base = tmp_path / "projects"
    awaiting(base, "a1", ("alice@example.com", "Bob"))
    awaiting(base, "b1", ("Bob",))
    awaiting(base, "c1", ())
    with TestClient(create_app(str(base)), base_url="http://127.0.0.1") as client:
        page = client.get("/sessions").text
        assert '<option value="alice@example.com">' in page and '<option value="Bob">' in page

        def rows(query: str) -> list[str]:
            found = client.get(f"/sessions?{query}")
            assert found.status_code == 200, found.text
            return sorted(re.findall(r'<tr class="session" id="session-([^"]+)">', found.text))

        assert rows("reviewer=alice@example.com") == [f"{P}/a1"]
        assert rows("reviewer=Bob") == [f"{P}/a1", f"{P}/b1"]
        assert rows("") == [f"{P}/a1", f"{P}/b1", f"{P}/c1"]
        assert rows("reviewer=nobody@example.com") == []
