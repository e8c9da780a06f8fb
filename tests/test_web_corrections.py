"""The phase page's "Edit output" form (issue 25, "Corrections recorded").

A reviewer corrects an agent's output on the page, with the CSRF token and the version of
user_feedback.md the page was rendered from; the correction is recorded as by
``haytham feedback --edit`` (``CheckpointManager.correct_output``), and the page, then the
report, show the diff from the agent's output to the correction.
"""

from __future__ import annotations

import html as html_module
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") is None:  # in CI a missing extra fails; elsewhere it skips with the reason
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install 'haytham[web]'")

from starlette.testclient import TestClient
from web_demo import awaiting_demo, client_of

from haytham import CheckpointManager
from haytham.format.reviewer import parse_reviewer
from haytham.web.pages import EDITABLE_OUTPUT_CHARS
from haytham.web.report import report_html

P, S = "demo", "idea-001"
CORRECTION = "The buyers are small agencies, not solo founders."


@pytest.fixture
def manager(tmp_path: Path) -> CheckpointManager:
    """A demo session stopped at phase 1's review gate."""
    return awaiting_demo(tmp_path / "projects")


@pytest.fixture
def client(manager: CheckpointManager) -> Iterator[TestClient]:
    with client_of(manager) as test_client:
        yield test_client


def agent_of(manager: CheckpointManager) -> str:
    return manager.load_checkpoint(P, S, 1).agents[0].agent_name


def edit_form(page: str, agent: str) -> dict[str, str]:
    """The hidden fields and the text area of the agent's "Edit output" form."""
    found = re.search(rf'<form[^>]*id="correct-{re.escape(agent)}">(.*?)</form>', page, re.S)
    assert found is not None, page
    form = found.group(1)
    fields = dict(re.findall(r'name="(csrf|version|agent)" value="([^"]*)"', form))
    area = re.search(r'<textarea name="content"[^>]*>(.*?)</textarea>', form, re.S)
    assert area is not None
    return {**fields, "content": html_module.unescape(area.group(1))}


def test_the_page_corrects_an_output_and_shows_the_diff(
    client: TestClient, manager: CheckpointManager
) -> None:
    agent = agent_of(manager)
    original = manager.load_agent_output(P, S, 1, agent).content
    form = edit_form(client.get(f"/p/{P}/s/{S}/phase/1").text, agent)
    assert form["content"] == original
    corrected = original + CORRECTION + "\n"

    response = client.post(
        f"/p/{P}/s/{S}/phase/1/correct",
        data={**form, "content": corrected.replace("\n", "\r\n"), "approve": "yes"},  # as a browser sends it
        follow_redirects=False,
    )

    assert response.status_code == 303, response.text
    assert manager.load_agent_output(P, S, 1, agent).content == corrected  # CRLF back to LF
    review = manager.load_feedback(P, S, 1)
    assert review is not None and (review.approved, review.action) == (True, "modified")
    page = client.get(response.headers["location"]).text
    assert "Saved: your correction of" in page
    assert 'id="review-outcome">Review: modified' in page
    assert f'id="corrected-1-{agent}"' in page
    diff = re.search(rf'id="correction-1-{agent}".*?</details>', page, re.S)
    assert diff is not None
    assert f'<span class="d-add">+{CORRECTION}</span>' in diff.group(0)


def test_a_correction_from_a_page_out_of_date_is_refused(
    client: TestClient, manager: CheckpointManager
) -> None:
    agent = agent_of(manager)
    original = manager.load_agent_output(P, S, 1, agent).content
    form = edit_form(client.get(f"/p/{P}/s/{S}/phase/1").text, agent)
    manager.save_user_feedback(P, S, 1, reviewed=True, approved=False, comments="no", action="retry")

    response = client.post(
        f"/p/{P}/s/{S}/phase/1/correct", data={**form, "content": "other\n", "approve": "no"}
    )

    assert response.status_code == 409
    assert 'id="conflict"' in response.text
    assert manager.load_agent_output(P, S, 1, agent).content == original


def test_a_post_without_the_csrf_token_corrects_nothing(
    client: TestClient, manager: CheckpointManager
) -> None:
    agent = agent_of(manager)
    original = manager.load_agent_output(P, S, 1, agent).content
    form = edit_form(client.get(f"/p/{P}/s/{S}/phase/1").text, agent)

    response = client.post(f"/p/{P}/s/{S}/phase/1/correct", data={**form, "csrf": "forged", "content": "x\n"})

    assert response.status_code == 403
    assert manager.load_agent_output(P, S, 1, agent).content == original


def test_an_output_too_long_for_the_form_says_how_to_correct_it(
    client: TestClient, manager: CheckpointManager
) -> None:
    agent = agent_of(manager)
    long = "word " * (EDITABLE_OUTPUT_CHARS // 5 + 10)
    manager.save_agent_output(P, S, 1, agent, long)

    page = client.get(f"/p/{P}/s/{S}/phase/1").text

    assert f'id="correct-{agent}"' not in page
    refusal = re.search(rf'id="edit-refused-{agent}">([^<]*)<', page)
    assert refusal is not None
    assert f"haytham feedback {P} {S} 1 --edit {agent}" in refusal.group(1)


def test_the_report_shows_the_correction(manager: CheckpointManager) -> None:
    agent = agent_of(manager)
    original = manager.load_agent_output(P, S, 1, agent).content
    manager.correct_output(P, S, 1, agent, original + CORRECTION + "\n", approve=True)

    report = report_html(manager, P, S)

    assert f'id="correction-1-{agent}"' in report
    assert f'<span class="d-add">+{CORRECTION}</span>' in report
    assert f'id="correct-{agent}"' not in report  # the report is read only: no form to edit


def test_a_correction_records_who_made_it(manager: CheckpointManager) -> None:
    """Who and why (issue 25) hold for a correction as for a review: the page records the
    server's reviewer, the library the one it is given, and a correction by nobody keeps
    the Reviewer the review already names."""
    ann = parse_reviewer("Ann Reviewer <ann@example.com>")
    agent = agent_of(manager)
    original = manager.load_agent_output(P, S, 1, agent).content
    with client_of(manager, reviewer=ann) as browser:
        form = edit_form(browser.get(f"/p/{P}/s/{S}/phase/1").text, agent)
        sent = browser.post(
            f"/p/{P}/s/{S}/phase/1/correct",
            data={**form, "content": original + CORRECTION + "\n", "approve": "no"},
            follow_redirects=False,
        )
    assert sent.status_code == 303, sent.text
    review = manager.load_feedback(P, S, 1)
    assert review is not None and (review.action, review.reviewer) == ("modified", str(ann))

    manager.correct_output(P, S, 1, agent, original + "Again.\n")  # nobody named: Ann stays
    review = manager.load_feedback(P, S, 1)
    assert review is not None and review.reviewer == str(ann)
    manager.correct_output(P, S, 1, agent, original, reviewer="bob@example.com")
    review = manager.load_feedback(P, S, 1)
    assert review is not None and review.reviewer == "<bob@example.com>"
