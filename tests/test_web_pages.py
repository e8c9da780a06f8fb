"""The look and structure of the review pages (issue 25, items 2 and 9, times, the sessions page).

Each test ran against the pages as they were and failed there:

- item 2: a 60 MB agent output made a 62 MB phase page with the review form below it; now
  the page shows the form first, at most ``SHOWN_OUTPUT_BYTES`` of each output and a link to
  the raw file, which a route of its own streams as ``text/plain`` through the guarded read;
- item 9: raw ISO times with microseconds, a three-line fork form in every history row,
  attempts run together, "model - · · -", the inbox's two columns saying the same thing, a
  "Next:" without the command, no page listing every session, no search or sort;
- times: ``<time datetime="ISO">`` to the second in UTC, rewritten to local time by app.js
  (inlined, by hash, in the self-contained report).

Everything runs on real session files in ``tmp_path`` through Starlette's test client.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_module
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from click.testing import CliRunner
from starlette.testclient import TestClient
from web_demo import awaiting_demo, client_of
from workcount import WorkCounters

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.format.layout import MANIFEST_FILE
from haytham.run.demo import run_demo
from haytham.store import index as _index
from haytham.store import progress as _progress
from haytham.web.app import create_app
from haytham.web.pages import SESSIONS_PER_PAGE, SHOWN_OUTPUT_BYTES
from haytham.web.security import HEADERS

P, S = "demo", "idea-001"
MiB = 1024 * 1024
FIRST_LINE = "The first line of a long output."
LAST_LINE = "The very last line, never on the page."


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """A demo session stopped at phase 1's review gate."""
    return awaiting_demo(tmp_path / "projects")


@pytest.fixture
def client(manager: CheckpointManager) -> Iterator[TestClient]:
    with client_of(manager) as test_client:
        yield test_client


def phase_url(phase: int = 1, session: str = S) -> str:
    return f"/p/{P}/s/{session}/phase/{phase}"


def first_agent(manager: CheckpointManager, phase: int = 1) -> str:
    return manager.load_checkpoint(P, S, phase).agents[0].agent_name


def big_output(manager: CheckpointManager, size: int) -> Path:
    """Phase 1's first agent wrote ``size`` bytes of markdown: saved by the library, then grown
    on disk a block at a time (never held whole in this process)."""
    agent = first_agent(manager)
    manager.save_agent_output(P, S, 1, agent, f"# Findings\n\n{FIRST_LINE}\n")
    path = manager.phase_dir(P, S, 1) / f"{agent}.md"
    line = ("- a finding, with **emphasis** and <b>markup</b> to escape " * 4)[:199] + "\n"
    block = (line * (MiB // len(line))).encode()
    with path.open("ab") as file:
        while file.tell() + len(block) < size:
            file.write(block)
        file.write(f"{LAST_LINE}\n".encode())
    return path


def text_of(fragment: str) -> str:
    """What a person reads in an HTML fragment: tags dropped, entities decoded, spaces squeezed."""
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


# ------------------------------------------------------------------ item 2: big outputs


def test_the_page_of_a_60_mb_output_is_under_1_mb_with_the_review_form_first(
    manager: CheckpointManager, client: TestClient
) -> None:
    path = big_output(manager, 60 * MiB)
    page = client.get(phase_url(1))
    assert page.status_code == 200
    body = page.content
    assert len(body) < 1_000_000, f"the page is {len(body):,} bytes"
    text = page.text
    assert FIRST_LINE in text and LAST_LINE not in text
    form, output = text.index('id="review-form"'), text.index(f'id="output-1-{first_agent(manager)}"')
    assert form < output  # reachable without scrolling past the outputs
    cut = re.search(r'<p class="truncated" id="cut-1-[^"]+">(.*?)</p>', text, re.S)
    assert cut is not None
    raw = f"{phase_url(1)}/raw/{first_agent(manager)}"
    assert f'href="{raw}"' in cut.group(1)
    assert f"{path.stat().st_size / MiB:,.1f} MiB" in cut.group(1)
    assert f"first {SHOWN_OUTPUT_BYTES // 1024} KiB" in text_of(cut.group(1))
    assert SHOWN_OUTPUT_BYTES == 256 * 1024


def test_the_raw_route_streams_the_whole_output_as_plain_text_with_the_security_headers(
    manager: CheckpointManager, client: TestClient
) -> None:
    path = big_output(manager, 3 * MiB)
    with client.stream("GET", f"{phase_url(1)}/raw/{first_agent(manager)}") as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "text/plain; charset=utf-8"
        for name, value in HEADERS.items():
            assert answer.headers[name] == value
        pieces = list(answer.iter_raw())
    assert b"".join(pieces) == path.read_bytes()
    assert len(pieces) > 1  # streamed in pieces, not one body made whole


def test_the_raw_route_serves_an_earlier_attempts_output(
    manager: CheckpointManager, client: TestClient
) -> None:
    agent = first_agent(manager)
    before = (manager.phase_dir(P, S, 1) / f"{agent}.md").read_bytes()
    manager.start_attempt(P, S, 1)
    answer = client.get(f"{phase_url(1)}/raw/{agent}?attempt=1")
    assert answer.status_code == 200 and answer.content == before


def test_the_raw_route_refuses_what_is_not_an_agent_output_of_the_session(
    manager: CheckpointManager, client: TestClient, tmp_path: Path
) -> None:
    agent = first_agent(manager)
    secret = tmp_path / "secret.md"
    secret.write_text("# Not yours\n")
    phase = manager.phase_dir(P, S, 1)
    os.symlink(secret, phase / "leak.md")  # a link out of the tree, named like an output
    (phase / "inside.md").symlink_to(phase / "checkpoint.md")  # a link to the phase's own file
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / f"{agent}.md").write_text("# Not yours either\n")
    (phase / "attempts").mkdir()
    (phase / "attempts" / "5").symlink_to(outside)  # a folder that leads out of the tree
    refused = [
        f"{phase_url(1)}/raw/checkpoint",
        f"{phase_url(1)}/raw/user_feedback",
        f"{phase_url(1)}/raw/nobody",
        f"{phase_url(1)}/raw/leak",
        f"{phase_url(1)}/raw/inside",
        f"{phase_url(1)}/raw/%2E%2E",
        f"{phase_url(1)}/raw/{agent}?attempt=7",
        f"{phase_url(1)}/raw/{agent}?attempt=5",
        f"{phase_url(1)}/raw/{agent}?attempt=x",
        f"{phase_url(99)}/raw/{agent}",
        f"/p/{P}/s/nope/phase/1/raw/{agent}",
        f"/p/{P}/s/{S}/phase/1/raw/session_manifest",
    ]
    for url in refused:
        answer = client.get(url)
        assert answer.status_code == 404, (url, answer.text[:300])
        assert "# Not yours" not in answer.text and "Traceback" not in answer.text
        assert answer.headers["content-security-policy"] == HEADERS["content-security-policy"]


def test_the_diffs_of_earlier_attempts_stay_bounded(manager: CheckpointManager, client: TestClient) -> None:
    agent = first_agent(manager)
    line = "a line of the first attempt, long enough to count " * 3 + "\n"
    manager.save_agent_output(P, S, 1, agent, line * (4 * MiB // len(line)))
    manager.start_attempt(P, S, 1)
    manager.save_agent_output(P, S, 1, agent, line.replace("first", "second") * (4 * MiB // len(line)))
    manager.start_attempt(P, S, 1)
    manager.save_agent_output(P, S, 1, agent, line.replace("first", "third") * (4 * MiB // len(line)))
    page = client.get(phase_url(1))
    assert page.status_code == 200
    assert page.text.count('<pre class="diff">') == 2
    assert len(page.content) < 1_500_000, f"the page is {len(page.content):,} bytes"
    assert "lines of the diff are shown" in page.text


# ------------------------------------------------------------------------------ times


TIME = re.compile(r'<time datetime="([^"]+)" title="([^"]+)">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)</time>')


def test_times_are_time_elements_to_the_second_with_the_iso_value(
    manager: CheckpointManager, client: TestClient
) -> None:
    page = client.get(f"/p/{P}/s/{S}").text
    manifest = manager.load_manifest(P, S)
    shown = {iso: text for iso, title, text in TIME.findall(page) if iso == title}
    assert manifest.created in shown and manifest.last_updated in shown
    for entry in manager.history(P, S):
        assert entry.timestamp in shown
        assert shown[entry.timestamp] == entry.timestamp[:10] + " " + entry.timestamp[11:19] + " UTC"
    visible = text_of(page)
    assert not re.search(r"\d\d:\d\d:\d\d\.\d", visible)  # no microseconds anywhere a person reads
    phase = client.get(phase_url(1)).text
    started = manager.load_checkpoint(P, S, 1).started
    assert started and any(iso == started for iso, _, _ in TIME.findall(phase))


def test_a_time_shown_again_is_not_parsed_again_and_is_escaped(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The times of a page are remembered by their text (bounded): a page loaded again parses
    none; the text is escaped, and text that is not a time is shown as it is."""
    from haytham.web import templating

    templating._when_text.cache_clear()
    parsed: list[str] = []
    real = templating.parse_timestamp

    def counting(text: str) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(templating, "parse_timestamp", counting)
    first = client.get(f"/p/{P}/s/{S}").text
    assert parsed and len(parsed) == len(set(parsed))  # each distinct time once
    parsed.clear()
    assert TIME.findall(client.get(f"/p/{P}/s/{S}").text) == TIME.findall(first) and parsed == []
    odd = '2026-01-02T03:04:05+00:00"><b'
    assert templating._when(odd) == odd  # not a time: as it is (the template escapes it)
    quoted = str(templating._when("2026-01-02T03:04:05+00:00"))
    assert quoted == (
        '<time datetime="2026-01-02T03:04:05+00:00" title="2026-01-02T03:04:05+00:00">'
        "2026-01-02 03:04:05 UTC</time>"
    )
    assert templating._when(None) == "-" and templating._when("") == "-"


def test_app_js_rewrites_times_and_the_report_inlines_it_by_hash(
    manager: CheckpointManager, tmp_path: Path
) -> None:
    script = (Path(__file__).parent.parent / "haytham/web/static/app.js").read_text("utf-8")
    assert "time[datetime]" in script  # the rewrite to local time is in the one script
    target = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", P, S, "-o", str(target), "--base-dir", str(manager.base_dir)])
    assert result.exit_code == 0, result.output
    report = target.read_text("utf-8")
    inline = re.findall(r"<script>(.*?)</script>", report, re.S)
    assert len(inline) == 1 and "src=" not in re.sub(r"<script>.*?</script>", "", report, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', report)
    assert csp is not None and f"script-src 'sha256-{digest}'" in csp.group(1)
    assert "default-src 'none'" in csp.group(1) and "connect-src" not in csp.group(1)
    assert TIME.search(report) is not None


# -------------------------------------------------------------------- item 9: polish


def test_history_rows_are_one_line_with_a_small_fork_link(
    manager: CheckpointManager, client: TestClient
) -> None:
    page = client.get(f"/p/{P}/s/{S}").text
    history = re.search(r'<table class="history">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert history is not None
    rows = re.findall(r"<tr>(.*?)</tr>", history.group(1), re.S)
    entries = manager.history(P, S)
    assert len(rows) == len(entries)
    for row in rows:
        assert "<form" not in row and "<input" not in row and "<button" not in row
        assert re.search(r'<a class="fork-link" href="\?from_entry=[0-9a-f]+#fork">fork</a>', row)
    entry = entries[0].entry_id
    chosen = client.get(f"/p/{P}/s/{S}?from_entry={entry}").text
    fork_form = re.search(r'<form[^>]*id="fork".*?</form>', chosen, re.S)
    assert fork_form is not None and f'name="from_entry" value="{entry}"' in fork_form.group(0)
    csrf = re.search(r'name="csrf" value="([^"]+)"', chosen)
    assert csrf is not None
    forked = client.post(
        f"/p/{P}/s/{S}/fork", data={"csrf": csrf.group(1), "from_entry": entry, "new_session": "from-entry"}
    )
    assert forked.status_code == 200 and manager.load_manifest(P, "from-entry").forked_from is not None
    assert client.get(f"/p/{P}/s/{S}?from_entry=nothing").status_code == 404


def test_attempts_are_separate_items(manager: CheckpointManager, client: TestClient) -> None:
    manager.save_user_feedback(P, S, 1, True, False, "again", ["more"])
    manager.start_attempt(P, S, 1)
    page = client.get(f"/p/{P}/s/{S}").text
    row = re.search(r'<tr id="timeline-1">(.*?)</tr>', page, re.S)
    assert row is not None
    items = re.findall(r'<li class="attempt[^"]*"[^>]*>(.*?)</li>', row.group(1), re.S)
    assert [text_of(i).split(":")[0] for i in items] == ["Attempt 1", "Attempt 2"]
    assert "sent back" in text_of(items[0])
    assert not re.search(r"[a-z]\d", text_of(row.group(1)))  # no "sent back2"


def test_absent_metadata_is_omitted(manager: CheckpointManager, client: TestClient) -> None:
    manager.save_agent_output(P, S, 1, first_agent(manager), "# Plain\n")  # no model, tokens, cost
    page = client.get(phase_url(1)).text
    meta = re.search(rf'id="output-1-{first_agent(manager)}">.*?<p class="agent-meta">(.*?)</p>', page, re.S)
    assert meta is not None
    said = text_of(meta.group(1))
    assert "model" not in said and " - " not in said and "· ·" not in said and not said.endswith("-")
    assert said == "completed"


def test_the_inbox_says_what_is_needed_once(manager: CheckpointManager, client: TestClient) -> None:
    page = client.get("/").text
    head = re.search(r"<thead>(.*?)</thead>", page, re.S)
    assert head is not None
    columns = re.findall(r"<th[^>]*>(.*?)</th>", head.group(1))
    assert "Needs" in columns and "State" not in columns
    row = re.search(r'<tr class="kind-awaiting_review">(.*?)</tr>', page, re.S)
    assert row is not None and text_of(row.group(1)).count("awaiting review") == 0
    assert "review" in text_of(row.group(1))
    assert 'href="/sessions"' in page  # the sessions page, from the inbox header


def test_next_shows_the_command_to_type(manager: CheckpointManager, client: TestClient) -> None:
    page = client.get(f"/p/{P}/s/{S}").text
    assert f"<code>haytham feedback {P} {S} 1 --approve</code>" in page
    manager.create_session(P, "broken", "ada", "idea_validation")
    manager.save_checkpoint(P, "broken", 1, "failed", [], errors=["the model timed out"])
    failed = client.get(f"/p/{P}/s/broken").text
    nxt = re.search(r'<p class="next">(.*?)</p>', failed, re.S)
    assert nxt is not None
    assert f"<code>haytham resume {P} broken</code>" in nxt.group(1)
    assert "Next: run (" not in text_of(failed)


# ---------------------------------------------------------------------- sessions page


def many(manager: CheckpointManager) -> None:
    """Sessions of two projects and three states beside the demo's one awaiting review."""
    assert run_demo(manager, "done-1", review="approve", project_id="other").status == "completed"
    manager.create_session(P, "broken", "grace", "idea_validation")
    manager.save_checkpoint(P, "broken", 1, "failed", [], errors=["the model timed out"])
    manager.create_session(P, "fresh", "linus", "idea_validation")


def listed(page: str) -> list[str]:
    return re.findall(r'<tr class="session" id="session-([^"]+)">', page)


def test_the_sessions_page_lists_every_session_with_its_columns(
    manager: CheckpointManager, client: TestClient
) -> None:
    many(manager)
    page = client.get("/sessions")
    assert page.status_code == 200
    rows = listed(page.text)
    assert sorted(rows) == sorted([f"{P}/{S}", "other/done-1", f"{P}/broken", f"{P}/fresh"])
    row = re.search(r'<tr class="session" id="session-other/done-1">(.*?)</tr>', page.text, re.S)
    assert row is not None
    summary = next(s for s in manager.list_sessions() if s.session_id == "done-1")
    said = text_of(row.group(1))
    assert (
        "completed" in said and f"{summary.total_tokens:,}" in said and f"${summary.total_cost:.4f}" in said
    )
    assert TIME.search(row.group(1)) is not None
    assert 'href="/p/other/s/done-1"' in row.group(1)


def test_the_sessions_page_searches_filters_and_sorts_with_plain_links(
    manager: CheckpointManager, client: TestClient
) -> None:
    many(manager)
    assert listed(client.get("/sessions?q=brok").text) == [f"{P}/broken"]
    assert listed(client.get("/sessions?q=GRACE").text) == [f"{P}/broken"]  # the user, any case
    assert sorted(listed(client.get("/sessions?project=other").text)) == ["other/done-1"]
    assert listed(client.get("/sessions?state=failed").text) == [f"{P}/broken"]
    by_id = listed(client.get("/sessions?sort=session&order=asc").text)
    assert by_id == sorted(by_id, key=lambda s: s.split("/")[1])
    backwards = listed(client.get("/sessions?sort=session&order=desc").text)
    assert backwards == list(reversed(by_id))
    by_tokens = client.get("/sessions?sort=tokens&order=desc").text
    assert listed(by_tokens)[-1] in (f"{P}/broken", f"{P}/fresh")
    heading = re.search(r'<a[^>]*href="([^"]*sort=tokens[^"]*)"', client.get("/sessions?q=e").text)
    assert heading is not None and "q=e" in html_module.unescape(heading.group(1))  # the search is kept
    for bad in ("/sessions?sort=nope", "/sessions?order=up", "/sessions?page=0", "/sessions?page=x"):
        assert client.get(bad).status_code == 400, bad


def test_the_sessions_page_is_paginated(manager: CheckpointManager, client: TestClient) -> None:
    sessions = manager.session_dir(P, S).parent
    for number in range(SESSIONS_PER_PAGE + 5):
        name = f"copy-{number:03d}"
        shutil.copytree(sessions / S, sessions / name)
        manifest = sessions / name / MANIFEST_FILE
        manifest.write_text(manifest.read_text("utf-8").replace(S, name), "utf-8")
    first = client.get("/sessions?sort=session&order=asc").text
    assert len(listed(first)) == SESSIONS_PER_PAGE
    assert re.search(r'href="[^"]*page=2[^"]*"[^>]*>next', first)
    second = client.get("/sessions?sort=session&order=asc&page=2").text
    assert len(listed(second)) == 6 and not set(listed(first)) & set(listed(second))
    assert client.get("/sessions?page=3").status_code == 404


def test_a_warm_sessions_page_reads_no_session_file_again(
    manager: CheckpointManager, monkeypatch: pytest.MonkeyPatch, counters: WorkCounters
) -> None:
    """The page comes from the store's cached listing: once the index knows the sessions,
    a request stats each fact file and opens or parses none, for N and for 2N sessions."""
    monkeypatch.setenv("HAYTHAM_INDEX", "1")
    monkeypatch.setattr(_index, "RACY_NS", -(10**15))  # files written just now may be remembered
    sessions = manager.session_dir(P, S).parent
    app = create_app(str(manager.base_dir))
    runs = []
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for count in (60, 120):
            for number in range(count):
                name = f"copy-{number:03d}"
                if not (sessions / name).exists():
                    shutil.copytree(sessions / S, sessions / name)
                    manifest = sessions / name / MANIFEST_FILE
                    manifest.write_text(manifest.read_text("utf-8").replace(S, name), "utf-8")
            assert client.get("/sessions").status_code == 200  # learns the new sessions
            _progress.DIGESTS.clear()
            counters.reset()
            page = client.get("/sessions?sort=tokens&q=copy")
            assert page.status_code == 200 and len(listed(page.text)) == min(count, SESSIONS_PER_PAGE)
            runs.append(counters.snapshot())
    for run in runs:
        assert run["opened"] == 0 and run["parsed"] == 0, runs
    assert runs[1]["index_rows"] > runs[0]["index_rows"] > 0
