"""``haytham serve`` and ``haytham report`` through Starlette's test client (issue 16).

Every page and form on real session files in a tmp dir: the inbox, session and phase pages
show the lifecycle's states; the review form writes user_feedback.md through the library
(lines added by hand stay); a form rendered from an older user_feedback.md is refused with
both versions shown and nothing lost; CSRF, the host check, the access token off-localhost,
the name checks and the escaping of agent output are each refused or escaped as they must
be; errors are 4xx pages, never a traceback. The real browser is in test_web_e2e.py.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from click.testing import CliRunner
from starlette.testclient import TestClient
from web_demo import awaiting_demo, client_of

from haytham import CheckpointManager
from haytham.cli.main import cli
from haytham.cli.web import is_loopback
from haytham.run.demo import run_demo
from haytham.web.app import create_app
from haytham.web.security import CSP, Guard

P, S = "demo", "idea-001"
ROOT = Path(__file__).resolve().parent.parent
HAYTHAM = Path(sys.executable).parent / "haytham"
WAIT = 30.0
"""How long to wait for a served page (a bound on waiting, not a measured time)."""
HOSTILE = (
    "# Findings\n\n<script>alert('x')</script>\n\n"
    "An image <img src=x onerror=alert(1)> and [a link](javascript:alert(2)) and "
    '[another](JaVaScRiPt:alert(3)) and <a href="javascript:alert(4)">raw</a>.\n\n'
    "![pixel](https://tracker.example/p.png)\n"
)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def manager(base: Path) -> CheckpointManager:
    """A demo session stopped at phase 1's review gate."""
    return awaiting_demo(base)


@pytest.fixture
def client(manager: CheckpointManager) -> Iterator[TestClient]:
    with client_of(manager) as test_client:
        yield test_client


def feedback_file(manager: CheckpointManager, phase: int = 1) -> Path:
    return manager.phase_dir(P, S, phase) / "user_feedback.md"


def form_fields(html: str) -> dict[str, str]:
    """The hidden fields of the review form of a page: csrf and version."""
    found = dict(re.findall(r'name="(csrf|version)" value="([^"]*)"', html))
    assert "csrf" in found, html
    return found


def phase_url(phase: int = 1) -> str:
    return f"/p/{P}/s/{S}/phase/{phase}"


def review(
    client: TestClient, decision: str, comments: str = "", changes: str = "", phase: int = 1
) -> tuple[int, str]:
    """Load the phase page and submit its review form as a browser would; (status, final page)."""
    fields = form_fields(client.get(phase_url(phase)).text)
    data = {**fields, "decision": decision, "comments": comments, "changes": changes}
    response = client.post(phase_url(phase) + "/review", data=data)
    return response.status_code, response.text


def assert_clean_error(response: object, status: int) -> None:
    text = response.text  # type: ignore[attr-defined]
    assert response.status_code == status, text  # type: ignore[attr-defined]
    assert "Traceback" not in text and 'id="error-message"' in text


# ------------------------------------------------------------------------- pages


def test_the_inbox_lists_the_phase_awaiting_review_with_tokens_and_cost(
    client: TestClient, manager: CheckpointManager
) -> None:
    checkpoint = manager.load_checkpoint(P, S, 1)
    page = client.get("/")
    assert page.status_code == 200
    assert '<span class="count" id="count">1</span>' in page.text
    row = re.search(r'<tr class="kind-awaiting_review">(.*?)</tr>', page.text, re.S)
    assert row is not None
    assert f'href="{phase_url(1)}"' in row.group(1)
    assert f"{checkpoint.total_tokens:,}" in row.group(1)
    assert f"${checkpoint.cost:.4f}" in row.group(1)
    assert manager.state(P, S).current.describe() in row.group(1)  # type: ignore[union-attr]


def test_the_inbox_lists_oldest_first_then_failed_and_stale_and_filters(
    client: TestClient, manager: CheckpointManager
) -> None:
    assert run_demo(manager, "idea-002", review="manual").status == "awaiting_review"
    assert run_demo(manager, "done-1", review="approve", project_id="other").status == "completed"
    failing = manager.load_checkpoint(P, S, 1)
    manager.create_session(P, "broken", "ada", "idea_validation")
    manager.save_checkpoint(P, "broken", 1, "failed", [], errors=["the model timed out"])
    # phase 1 of a finished session gets other outputs: the phases built on it go stale
    first = manager.load_checkpoint("other", "done-1", 1)
    agent = first.agents[0].agent_name
    manager.save_agent_output("other", "done-1", 1, agent, "# Different\n")
    manager.save_checkpoint("other", "done-1", 1, "completed", [{"agent_name": agent, "status": "completed"}])
    stale = [v.number for v in manager.state("other", "done-1").stale]
    assert stale and failing.retry_count == 0

    page = client.get("/?order=oldest").text  # the longest wait first (the default is newest)
    kinds = re.findall(r'<tr class="kind-(\w+)">.*?href="/p/([^/]+)/s/([^/]+)/phase/(\d+)"', page, re.S)
    assert kinds[:3] == [
        ("awaiting_review", P, S, "1"),
        ("awaiting_review", P, "idea-002", "1"),
        ("failed", P, "broken", "1"),
    ]
    assert [(k, int(n)) for k, p, s, n in kinds[3:]] == [("stale", n) for n in stale]
    assert f'id="count">{3 + len(stale)}<' in page

    only_failed = client.get("/?kind=failed").text
    assert 'id="count">1<' in only_failed and "the model" not in only_failed and "broken" in only_failed
    only_other = client.get("/?project=other").text
    assert f'id="count">{len(stale)}<' in only_other and S not in only_other
    assert_clean_error(client.get("/?kind=<b>"), 400)


def test_the_session_page_shows_the_lifecycle_states_charts_and_history(
    client: TestClient, manager: CheckpointManager
) -> None:
    page = client.get(f"/p/{P}/s/{S}")
    assert page.status_code == 200
    for view in manager.state(P, S).phases:
        row = re.search(rf'<tr id="timeline-{view.number}">(.*?)</tr>', page.text, re.S)
        assert row is not None and f"state-{view.state}" in row.group(1)
        assert view.describe() in row.group(1)
    assert 'id="session-state">awaiting review<' in page.text
    assert page.text.count('<svg class="chart"') == 6
    for entry in manager.history(P, S):
        assert entry.entry_id in page.text
    assert "<script>" not in page.text  # the page's only script is the linked file


def test_the_phase_page_renders_outputs_with_their_metadata(
    client: TestClient, manager: CheckpointManager
) -> None:
    page = client.get(phase_url(1)).text
    for agent in manager.load_checkpoint(P, S, 1).agents:
        output = manager.load_agent_output(P, S, 1, agent.agent_name)
        assert f'id="output-1-{agent.agent_name}"' in page
        assert f"model {output.model}" in page
    assert "<h1>Concept</h1>" in page  # markdown rendered
    assert 'id="approve"' in page and 'id="request-changes"' in page


def test_the_version_url_changes_when_a_file_of_the_session_changes(
    client: TestClient, manager: CheckpointManager
) -> None:
    before = client.get(f"/p/{P}/s/{S}/version").json()["version"]
    assert client.get(f"/p/{P}/s/{S}/version").json()["version"] == before
    path = feedback_file(manager)
    path.write_text(path.read_text() + "\n<!-- a note -->\n")
    assert client.get(f"/p/{P}/s/{S}/version").json()["version"] != before


def test_static_files_are_served_with_the_same_headers(client: TestClient) -> None:
    for name in ("style.css", "app.js"):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and response.headers["content-security-policy"] == CSP


# ------------------------------------------------------------------------- forms


def test_requesting_changes_writes_user_feedback_and_keeps_hand_added_lines(
    client: TestClient, manager: CheckpointManager
) -> None:
    path = feedback_file(manager)
    path.write_text(path.read_text() + "\n## My notes\nkeep this line\n")
    status, page = review(client, "changes", "Be *concrete*.", "- Name the buyer\n\nCite a source\r\n")
    assert status == 200 and "Saved: sent back" in page
    feedback = manager.load_feedback(P, S, 1)
    assert feedback is not None and feedback.reviewed and not feedback.approved
    assert feedback.comments == "Be *concrete*."
    assert feedback.requested_changes == ("Name the buyer", "Cite a source")
    assert feedback.retry_count == 1 and feedback.action == "retry"
    assert "## My notes\nkeep this line" in path.read_text()
    assert manager.state(P, S).phase(1).state == "sent_back"


def test_approving_moves_the_session_on(client: TestClient, manager: CheckpointManager) -> None:
    status, page = review(client, "approve", "Fine.")
    assert status == 200 and "Saved: approved" in page
    assert manager.state(P, S).phase(1).state == "approved"
    assert 'id="approve"' in page and 'id="request-changes"' in page  # saved again, or changed


def test_a_move_the_lifecycle_refuses_is_409_and_writes_nothing(
    client: TestClient, manager: CheckpointManager
) -> None:
    fields = form_fields(client.get(phase_url(1)).text)
    # meanwhile a runner starts the phase again: the page's file is unchanged, the move is not
    running = [{"agent_name": "concept_expansion", "status": "in_progress"}]
    manager.save_checkpoint(P, S, 1, "in_progress", running)
    before = feedback_file(manager).read_bytes()
    response = client.post(phase_url(1) + "/review", data={**fields, "decision": "approve"})
    assert_clean_error(response, 409)
    assert "a phase that is in progress cannot be approved" in response.text
    assert feedback_file(manager).read_bytes() == before


def test_a_stale_version_is_refused_shows_both_versions_and_loses_nothing(
    client: TestClient, manager: CheckpointManager
) -> None:
    fields = form_fields(client.get(phase_url(1)).text)
    path = feedback_file(manager)
    hand = path.read_text().replace(
        "## User Comments\n", "## User Comments\nWritten in an editor meanwhile.\n"
    )
    path.write_text(hand)
    data = {**fields, "decision": "changes", "comments": "Mine, from the page", "changes": "Shorter"}
    response = client.post(phase_url(1) + "/review", data=data)
    assert response.status_code == 409
    assert path.read_text() == hand  # the editor's text stays, nothing written over it
    current = re.search(r'id="conflict-current">(.*?)</pre>', response.text, re.S)
    submitted = re.search(r'id="conflict-submitted">(.*?)</pre>', response.text, re.S)
    assert current is not None and "Written in an editor meanwhile." in current.group(1)
    assert submitted is not None and "Mine, from the page" in submitted.group(1)
    assert "Shorter" in submitted.group(1)
    assert "Mine, from the page</textarea>" in response.text  # the person's text is still in the form
    fresh = form_fields(response.text)["version"]
    assert fresh != fields["version"]
    again = client.post(phase_url(1) + "/review", data={**data, "version": fresh, "csrf": fields["csrf"]})
    assert again.status_code == 200
    text = path.read_text()
    assert "Mine, from the page" in text and manager.state(P, S).phase(1).state == "sent_back"


def test_fork_and_rerun_go_through_the_library(client: TestClient, manager: CheckpointManager) -> None:
    fields = form_fields(client.get(f"/p/{P}/s/{S}").text)
    forked = client.post(
        f"/p/{P}/s/{S}/fork", data={"csrf": fields["csrf"], "new_session": "fork-1", "from_phase": "2"}
    )
    assert forked.status_code == 200 and forked.url.path == f"/p/{P}/s/fork-1"
    assert manager.load_manifest(P, "fork-1").forked_from is not None
    again = client.post(
        f"/p/{P}/s/{S}/fork", data={"csrf": fields["csrf"], "new_session": "fork-1", "from_phase": "2"}
    )
    assert_clean_error(again, 409)
    bad = client.post(
        f"/p/{P}/s/{S}/fork", data={"csrf": fields["csrf"], "new_session": "../x", "from_phase": "2"}
    )
    assert_clean_error(bad, 400)
    rerun = client.post(f"/p/{P}/s/{S}/rerun", data={"csrf": fields["csrf"], "from_phase": "1"})
    assert rerun.status_code == 200 and "will run again" in rerun.text
    assert [a.number for a in manager.load_attempts(P, S, 1)] == [1, 2]


# ---------------------------------------------------------------------- security


def test_every_page_sends_the_security_headers(client: TestClient) -> None:
    for url in ("/", f"/p/{P}/s/{S}", phase_url(1), "/nowhere", f"/p/{P}/s/nope"):
        headers = client.get(url).headers
        assert headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("csrf", [None, "", "0" * 64, "forged"])
def test_a_post_without_the_right_csrf_token_is_refused(
    client: TestClient, manager: CheckpointManager, csrf: str | None
) -> None:
    fields = form_fields(client.get(phase_url(1)).text)
    before = feedback_file(manager).read_bytes()
    data = {"version": fields["version"], "decision": "approve"}
    if csrf is not None:
        data["csrf"] = csrf
    response = client.post(phase_url(1) + "/review", data=data)
    assert_clean_error(response, 403)
    assert feedback_file(manager).read_bytes() == before


def test_a_csrf_token_of_another_browser_or_site_is_refused(
    client: TestClient, manager: CheckpointManager
) -> None:
    fields = form_fields(client.get(phase_url(1)).text)
    before = feedback_file(manager).read_bytes()
    client.cookies.clear()
    client.cookies.set("haytham_csrf", "another-browser")
    data = {**fields, "decision": "approve"}
    assert client.post(phase_url(1) + "/review", data=data).status_code == 403
    fields = form_fields(client.get(phase_url(1)).text)
    evil = client.post(
        phase_url(1) + "/review",
        data={**fields, "decision": "approve"},
        headers={"origin": "http://evil.example"},
    )
    assert evil.status_code == 403
    assert feedback_file(manager).read_bytes() == before


def test_a_page_shows_only_the_notices_the_server_signed(client: TestClient) -> None:
    status, page = review(client, "approve")
    assert status == 200 and "Saved: approved." in page
    forged = client.get(phase_url(1) + "?said=Your+session+was+deleted&sig=0123").text
    assert "Your session was deleted" not in forged


def test_a_request_for_another_host_name_is_refused(client: TestClient) -> None:
    assert client.get("/", headers={"host": "evil.example"}).status_code == 403
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_off_localhost_every_request_needs_the_token(manager: CheckpointManager) -> None:
    guard = Guard(token="s3cret-token", hosts=("*",))
    with TestClient(
        create_app(str(manager.base_dir), guard=guard), base_url="http://10.0.0.5:8765"
    ) as client:
        for url in ("/", phase_url(1), "/static/app.js", "/?token=wrong"):
            assert client.get(url).status_code == 403
        entered = client.get("/?token=s3cret-token&kind=failed", follow_redirects=False)
        assert entered.status_code == 303 and entered.headers["location"] == "/?kind=failed"
        assert "HttpOnly" in entered.headers["set-cookie"]
        assert client.get("/").status_code == 200  # the cookie carries it from now on
    assert not is_loopback("0.0.0.0") and is_loopback("127.0.0.2") and is_loopback("localhost")


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/p/.hidden/s/x", 400),
        ("/p/a%00b/s/x", 400),
        ("/p/demo/s/%2e%2e", 400),
        ("/p/demo/s/a%5cb", 400),
        ("/p/demo/s/nope", 404),
        ("/p/nope/s/x/phase/1", 404),
        ("/p/demo/s/idea-001/phase/99", 404),
        ("/p/demo/s/idea-001/phase/one", 404),
        ("/p/demo/s/idea-001/phase/1/review", 405),
    ],
)
def test_every_path_segment_goes_through_the_name_checks(client: TestClient, url: str, status: int) -> None:
    assert_clean_error(client.get(url), status)


def test_a_file_that_cannot_be_read_is_a_located_422_and_a_warning_in_the_inbox(
    client: TestClient, manager: CheckpointManager
) -> None:
    checkpoint = manager.phase_dir(P, S, 1) / "checkpoint.md"
    checkpoint.write_text("# not a checkpoint\n")
    for url in (f"/p/{P}/s/{S}", phase_url(1), f"/p/{P}/s/{S}/report"):
        response = client.get(url)
        assert_clean_error(response, 422)
        assert "checkpoint.md:1:" in response.text
    inbox = client.get("/")
    assert inbox.status_code == 200 and 'id="count">0<' in inbox.text
    assert re.search(r'class="warning">demo/idea-001: [^<]*checkpoint.md:1:', inbox.text)


def test_a_form_with_a_bad_decision_or_number_is_a_clear_400(client: TestClient) -> None:
    fields = form_fields(client.get(phase_url(1)).text)
    assert_clean_error(client.post(phase_url(1) + "/review", data={**fields, "decision": "maybe"}), 400)
    rerun = client.post(f"/p/{P}/s/{S}/rerun", data={"csrf": fields["csrf"], "from_phase": "x"})
    assert_clean_error(rerun, 400)


def hostile_session(manager: CheckpointManager) -> None:
    """Phase 1's first agent wrote script, event handlers and javascript: links."""
    agent = manager.load_checkpoint(P, S, 1).agents[0].agent_name
    manager.save_agent_output(P, S, 1, agent, HOSTILE, model="<b onmouseover=x>m</b>")


def assert_inert(html: str) -> None:
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert re.search(r"<[^>]*\bon(error|mouseover)\s*=", html, re.I) is None
    assert re.search(r"href\s*=\s*[\"']?\s*javascript:", html, re.I) is None
    assert re.search(r"<img\b", html) is None  # nothing is fetched from anywhere


def test_script_and_event_handlers_in_agent_output_never_reach_the_page(
    client: TestClient, manager: CheckpointManager
) -> None:
    hostile_session(manager)
    page = client.get(phase_url(1)).text
    assert_inert(page)
    assert "a link" in page and "[image: pixel]" in page  # the words stay, the links go


# ------------------------------------------------------------------------ report


def test_report_is_one_self_contained_file(manager: CheckpointManager, tmp_path: Path) -> None:
    hostile_session(manager)
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    result = CliRunner().invoke(cli, ["report", P, S, "-o", str(target), "--base-dir", str(manager.base_dir)])
    assert result.exit_code == 0, result.output
    html = target.read_text()
    assert_inert(html)
    assert "<link" not in html and html.count("<script") == 1  # app.js inline, allowed by its hash only
    assert "<script>// haytham serve and haytham report" in html and "script-src 'sha256-" in html
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html) is None
    assert "<style>" in html and '<svg class="chart"' in html
    assert 'font: 15px/1.5 system-ui, -apple-system, "Segoe UI"' in html  # the stylesheet, not escaped
    assert "default-src 'none'" in html  # the file itself forbids loading anything
    for view in manager.state(P, S).phases:
        assert f'id="phase-{view.number}"' in html
    printed = CliRunner().invoke(cli, ["report", P, S, "-o", "-", "--base-dir", str(manager.base_dir)])
    assert printed.exit_code == 0 and printed.output.startswith("<!doctype html>")


def test_report_has_reviews_attempts_and_diffs(base: Path) -> None:
    manager = CheckpointManager(base)
    assert run_demo(manager, S, review="reject").status == "completed"
    result = CliRunner().invoke(cli, ["report", P, S, "-o", str(base / "r.html"), "--base-dir", str(base)])
    assert result.exit_code == 0, result.output
    html = (base / "r.html").read_text()
    assert "Good start. Be concrete about who pays." in html  # the review that sent phase 1 back
    assert 'id="attempt-1-1"' in html and '<span class="d-add">+## Changes in attempt 2</span>' in html
    assert "$" in html and "Cost per phase" in html


def test_report_of_a_missing_session_is_one_error_line(base: Path) -> None:
    result = CliRunner().invoke(cli, ["report", P, "nope", "--base-dir", str(base)])
    assert result.exit_code == 1 and result.output.startswith("Error: ")
    unsafe = CliRunner().invoke(cli, ["report", P, "../x", "--base-dir", str(base)])
    assert unsafe.exit_code == 1 and "Traceback" not in unsafe.output


def test_without_the_web_extra_serve_and_report_say_how_to_install_it(tmp_path: Path) -> None:
    """The extra's modules made unimportable in a real process; the rest still works."""
    code = (
        "import sys\n"
        "for name in ('starlette', 'jinja2', 'uvicorn'): sys.modules[name] = None\n"
        "from haytham.cli.main import main\n"
        "main(sys.argv[1:])\n"
    )
    for args in (["serve"], ["report", P, S]):
        done = subprocess.run(
            [sys.executable, "-c", code, *args, "--base-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 1, done.stderr
        assert "pip install 'haytham[web]'" in done.stderr and "Traceback" not in done.stderr
    demo = subprocess.run(
        [sys.executable, "-c", code, "demo", "--base-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert demo.returncode == 0 and "completed" in demo.stdout


# ------------------------------------------------------------- the real server


ADDRESS_LINE = re.compile(r"^Serving .* at http://[^/]+:(\d+)/.*$", re.MULTILINE)
"""The line ``haytham serve`` prints once it listens, with the port the system chose."""


@contextlib.contextmanager
def serving(cwd: Path, *args: str) -> Iterator[tuple[str, str]]:
    """``haytham serve --port 0 ARGS`` as a process in ``cwd``; (its local address, the line it
    printed with the address to open) once it has printed it (it listens before it prints,
    and the system chose the port, so no other program can take it first), stopped at the end."""
    log_path = cwd / f"serve-{uuid.uuid4().hex}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(HAYTHAM), "serve", "--port", "0", *args], stdout=log, stderr=subprocess.STDOUT, cwd=cwd
        )
        deadline = time.monotonic() + WAIT
        try:
            while (found := ADDRESS_LINE.search(log_path.read_text())) is None:
                assert process.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "haytham serve printed no address"
                time.sleep(0.05)
            yield f"http://127.0.0.1:{found.group(1)}/", found.group(0)
        finally:
            process.terminate()
            process.wait(timeout=WAIT)


def test_serve_finds_the_base_dir_in_haytham_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "haytham.yaml").write_text("storage:\n  base_dir: data\n")
    run_demo(CheckpointManager(tmp_path / "data"), S, review="manual")
    monkeypatch.delenv("HAYTHAM_BASE_DIR", raising=False)
    with serving(tmp_path) as (url, printed):
        assert "Serving the sessions under data at http://127.0.0.1:" in printed
        with urllib.request.urlopen(url + f"p/{P}/s/{S}/phase/1") as response:
            assert "Concept Expansion" in response.read().decode()
    assert not (tmp_path / "projects").exists()


def test_serve_off_localhost_prints_a_token_and_refuses_requests_without_it(
    manager: CheckpointManager,
) -> None:
    with serving(manager.base_dir.parent, "--host", "0.0.0.0", "--base-dir", str(manager.base_dir)) as (
        url,
        printed,
    ):
        token = re.search(r"\?token=([\w-]+)", printed)
        assert token is not None, printed
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + f"p/{P}/s/{S}")
        assert refused.value.code == 403
        refused.value.close()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(url + f"?token={token.group(1)}") as response:  # then the cookie carries it
            assert response.status == 200 and response.url == url
        with browser.open(url + f"p/{P}/s/{S}") as response:
            assert response.status == 200
