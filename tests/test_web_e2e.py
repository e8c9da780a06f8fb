"""``haytham serve`` and ``haytham report`` in a real Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium), end to end (issue 16).

The server runs as a subprocess on a free port over a demo session that awaits review; the
browser opens the inbox, clicks through to the phase, requests changes through the form; the
test checks user_feedback.md on disk, runs ``haytham resume`` and watches the open page pick
up attempt 2 by itself (the page polls), reads the diff, approves, resumes, and sees the
session complete. The report is then opened with the browser's network off and must render
completely. A screenshot of every page is kept under the test's tmp dir; with
``HAYTHAM_SCREENSHOTS=DIR`` the inbox, phase, sessions, broken-review and correction
screenshots are also copied to DIR as ``serve-NAME.png`` (the
README's images: ``HAYTHAM_SCREENSHOTS=docs/images python3 dev.py test -m slow -n 0
tests/test_web_e2e.py``).

Without Chromium, its driver or Selenium the test is skipped, except in CI (the ``CI``
variable set), where it fails: ``.ci/run`` installs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from haytham import CheckpointManager

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
HAYTHAM = Path(sys.executable).parent / "haytham"
P, S = "demo", "idea-001"
REVIEWER = "Ada Reviewer <ada@example.com>"
"""Who reviews from the served pages (not the machine's git author, which the screenshots would show)."""

try:
    import selenium  # noqa: F401

    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

_MISSING = [
    what
    for what, there in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER), ("selenium", HAVE_SELENIUM))
    if not there
]
if _MISSING:
    message = f"the browser tests need {', '.join(_MISSING)} (apt-get install chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests: {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from test_web import WAIT, serving  # noqa: E402

pytestmark = pytest.mark.slow


def haytham(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(HAYTHAM), *args, "--base-dir", str(base)], capture_output=True, text=True, cwd=base.parent
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A demo session stopped at phase 1's review gate, made by the command line."""
    base = tmp_path / "projects"
    haytham(base, "demo", "--review", "manual")
    return base


@pytest.fixture
def server(base: Path, tmp_path: Path) -> Iterator[str]:
    """``haytham serve`` on a free port; its address once it answers."""
    with serving(tmp_path, "--base-dir", str(base), "--reviewer", REVIEWER) as (url, _):
        yield url


def chrome(profile: Path, *extra: str) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        f"--user-data-dir={profile}",
        *extra,
    ):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = chrome(tmp_path / "chrome-profile")
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, css: str, text: str | None = None) -> Any:
    """The element ``css`` once it is on the page (holding ``text`` when given)."""

    def found(d: Any) -> Any:
        try:
            for element in d.find_elements(By.CSS_SELECTOR, css):
                if text is None or text in element.text:
                    return element
        except WebDriverException as error:  # the page reloaded itself while it was read
            if "does not belong to the document" not in str(error):
                raise
        return False

    wait = WebDriverWait(
        driver, WAIT, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    )
    return wait.until(found)


def settled(driver: Any, server: str) -> None:
    """Wait until the open page shows the session's files as they are now: the page polls its
    session's version and reloads when it changed, so a page rendered from the current
    version will not reload again."""

    def current(d: Any) -> bool:
        live = d.find_element(By.TAG_NAME, "body").get_attribute("data-live")
        with urllib.request.urlopen(server.rstrip("/") + live, timeout=5) as response:
            version = json.load(response)["version"]
        return bool(d.find_element(By.TAG_NAME, "body").get_attribute("data-version") == version)

    WebDriverWait(
        driver, WAIT, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
    ).until(current)


def screenshot(driver: Any, folder: Path, name: str) -> Path:
    """A full-page screenshot of what the browser shows, kept under the test's tmp dir."""
    folder.mkdir(exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height), 600), 4000))
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    driver.set_window_size(1280, 1000)
    copy_to = os.environ.get("HAYTHAM_SCREENSHOTS")
    if copy_to and name in ("inbox", "phase", "sessions", "broken-review", "correction"):
        shutil.copyfile(path, Path(copy_to) / f"serve-{name}.png")
    return path


def test_review_a_demo_session_in_chromium_then_read_its_report_offline(
    base: Path, server: str, browser: Any, tmp_path: Path
) -> None:
    shots = tmp_path / "screenshots"
    manager = CheckpointManager(base)
    feedback = manager.phase_dir(P, S, 1) / "user_feedback.md"

    # the inbox lists the phase; click through to it and read the rendered output
    browser.get(server)
    assert wait_for(browser, "#count").text == "1"
    screenshot(browser, shots, "inbox")
    browser.find_element(By.CSS_SELECTOR, "a.phase-link").click()
    heading = wait_for(browser, ".markdown h1", "Concept")
    assert heading.tag_name == "h1"  # markdown rendered, not shown as text
    assert wait_for(browser, "#phase-state").text == "awaiting review"
    screenshot(browser, shots, "phase")

    # request changes through the form; the file on disk says so
    browser.find_element(By.ID, "comments").send_keys("Be concrete about who pays.")
    browser.find_element(By.ID, "changes").send_keys("Name the paying customer\nGive a price")
    browser.find_element(By.ID, "request-changes").click()
    wait_for(browser, ".notice", "sent back")
    assert wait_for(browser, "#phase-state").text == "sent back"
    text = feedback.read_text()
    assert "Be concrete about who pays." in text and "Name the paying customer" in text
    assert "- Approved: false" in text and manager.state(P, S).phase(1).state == "sent_back"
    screenshot(browser, shots, "sent-back")

    # resume in another process: the open page notices and shows attempt 2 with its diff
    haytham(base, "resume", P, S)
    wait_for(browser, "#attempt-number", "2")  # the page reloaded by itself
    settled(browser, server)
    assert browser.find_element(By.ID, "phase-state").text == "awaiting review"
    earlier = wait_for(browser, "#attempt-1-1")
    assert "Be concrete about who pays." in earlier.text  # the review that sent it back
    added = [e.text for e in earlier.find_elements(By.CSS_SELECTOR, ".d-add")]
    assert "+- Addressed: Name the paying customer" in added
    screenshot(browser, shots, "attempt-2")

    # approve; the next resume finishes the session, which its page shows
    browser.find_element(By.ID, "approve").click()
    wait_for(browser, ".notice", "approved")
    assert wait_for(browser, "#phase-state").text == "approved"
    haytham(base, "resume", P, S)
    browser.get(f"{server}p/{P}/s/{S}")
    assert wait_for(browser, "#session-state").text == "completed"
    states = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".timeline tbody .badge")]
    assert states == [view.describe() for view in manager.state(P, S).phases]
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart rect")) > 0
    screenshot(browser, shots, "session")
    browser.get(server)
    assert wait_for(browser, "#count").text == "0"
    browser.find_element(By.ID, "sessions-link").click()  # every session, the completed one too
    assert wait_for(browser, "tr.session", S).find_element(By.CSS_SELECTOR, ".badge").text == "completed"
    screenshot(browser, shots, "sessions")

    # the report, opened with the network off, renders completely
    report = tmp_path / "report.html"
    haytham(base, "report", P, S, "-o", str(report))
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    browser.get(report.as_uri())
    assert wait_for(browser, "#session-state").text == "completed"
    for view in manager.state(P, S).phases:
        section = browser.find_element(By.ID, f"phase-{view.number}")
        assert section.find_element(By.CSS_SELECTOR, ".markdown h1").is_displayed()
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 6 and all(c.size["width"] > 0 and c.size["height"] > 0 for c in charts)
    header = browser.find_element(By.CSS_SELECTOR, "header.top")
    assert header.value_of_css_property("background-color") == "rgba(31, 45, 68, 1)"  # the inline CSS applied
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert "Be concrete about who pays." in browser.find_element(By.ID, "attempt-1-1").text
    screenshot(browser, shots, "report")
    for name in ("inbox", "phase", "sent-back", "attempt-2", "session", "sessions", "report"):
        assert (shots / f"{name}.png").stat().st_size > 0


LOCAL = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30$")
"""A time as app.js shows it in Asia/Kolkata (UTC+05:30 all year: no daylight saving time)."""


def test_times_read_in_local_time_on_pages_and_in_the_report(
    base: Path, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25: each ``<time>`` the server writes in UTC reads in the browser's time zone, to
    the second, with the ISO value kept as its title: on a served page (app.js) and in the
    report opened offline (app.js inline, allowed by its hash)."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # the browser started below inherits it
    driver = chrome(tmp_path / "tz-profile")
    try:
        report = tmp_path / "report.html"
        haytham(base, "report", P, S, "-o", str(report))
        for url in (f"{server}p/{P}/s/{S}", f"{server}sessions", report.as_uri()):
            driver.get(url)
            times = WebDriverWait(driver, WAIT, poll_frequency=0.1).until(
                lambda d: [
                    t for t in d.find_elements(By.CSS_SELECTOR, "time[datetime]") if LOCAL.match(t.text)
                ]
            )
            for element in times:
                iso = element.get_attribute("datetime")
                assert element.get_attribute("title") == iso
                moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
                local = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
                assert element.text == local.strftime("%Y-%m-%d %H:%M:%S UTC+05:30"), url
            logs = [
                entry for entry in driver.get_log("browser") if "Content Security Policy" in entry["message"]
            ]
            assert not logs, logs  # the report's inline script is allowed, nothing else was refused
    finally:
        driver.quit()


def test_a_60_mb_output_loads_with_the_review_form_in_view(base: Path, server: str, browser: Any) -> None:
    """Issue 25, item 2: Chromium did not finish loading the page of a 60 MB output in 120 s,
    and its review form sat below the output. Now the page loads, the form is in the first
    screen without scrolling, and the link to the whole file opens it as plain text."""
    manager = CheckpointManager(base)
    agent = manager.load_checkpoint(P, S, 1).agents[0].agent_name
    path = manager.phase_dir(P, S, 1) / f"{agent}.md"
    line = ("- a finding, with **emphasis** and a [link](https://example.com/x) " * 3)[:199] + "\n"
    block = (line * (2**20 // len(line))).encode()
    with path.open("ab") as file:
        while file.tell() + len(block) < 60 * 2**20:
            file.write(block)
        file.write(b"THE LAST LINE\n")
    browser.get(f"{server}p/{P}/s/{S}/phase/1")
    form = wait_for(browser, "#review-form")
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", form)
    assert 0 <= top < browser.execute_script("return window.innerHeight"), top  # no scrolling needed
    assert form.find_element(By.ID, "approve").is_displayed()
    link = browser.find_element(By.CSS_SELECTOR, f"#cut-1-{agent} a.raw-link")
    assert link.get_attribute("href").endswith(f"/p/{P}/s/{S}/phase/1/raw/{agent}")
    with urllib.request.urlopen(link.get_attribute("href"), timeout=WAIT) as raw:
        assert raw.headers["content-type"] == "text/plain; charset=utf-8"
        assert raw.read(64) == path.read_bytes()[:64]  # the file itself, from its first byte


def test_a_broken_review_locks_nobody_out_and_a_correction_is_recorded(
    base: Path, server: str, browser: Any, tmp_path: Path
) -> None:
    """Issue 25, item 1 and corrections, walked in Chromium: a mistake in user_feedback.md
    (``Approved: nope``) is shown at the top of the session and phase pages, which still show
    the outputs; the review form rewrites the broken file; then the reviewer corrects an
    output on the page, which records the correction (outcome modified, the diff shown, the
    original kept in the history)."""
    shots = tmp_path / "screenshots"
    manager = CheckpointManager(base)
    feedback = manager.phase_dir(P, S, 1) / "user_feedback.md"
    text = feedback.read_text()
    assert "- Approved: false" in text
    feedback.write_text(text.replace("- Approved: false", "- Approved: nope"))
    line = 1 + feedback.read_text().split("\n").index("- Approved: nope")

    browser.get(f"{server}p/{P}/s/{S}")
    problems = wait_for(browser, "#problems")
    assert "user_feedback.md" in problems.text and f"line {line}" in problems.text
    assert "Approved" in problems.find_element(By.CSS_SELECTOR, ".message").text
    browser.get(f"{server}p/{P}/s/{S}/phase/1")
    assert "user_feedback.md" in wait_for(browser, "#problems").text
    assert wait_for(browser, ".markdown h1", "Concept").is_displayed()  # the outputs still read
    assert "- Approved: nope" in browser.find_element(By.ID, "broken-review").text
    screenshot(browser, shots, "broken-review")

    # the form rewrites the broken review: the file reads again, the reviewer's text is in it
    browser.find_element(By.ID, "comments").send_keys("Fixed the review from the page.")
    browser.find_element(By.ID, "approve").click()
    wait_for(browser, ".notice", "approved")
    assert browser.find_elements(By.ID, "problems") == []
    saved = manager.load_feedback(P, S, 1)
    assert saved is not None and saved.approved and "Fixed the review from the page." in saved.comments
    assert saved.reviewer == REVIEWER

    # correct the agent's output on the page, as approved
    agent = manager.load_checkpoint(P, S, 1).agents[0].agent_name
    original = manager.load_agent_output(P, S, 1, agent).content
    browser.find_element(By.CSS_SELECTOR, ".edit-output summary").click()
    area = browser.find_element(By.CSS_SELECTOR, f"#correct-{agent} textarea")
    area.send_keys("\nA line the reviewer added.")
    browser.find_element(By.CSS_SELECTOR, f"#correct-{agent} button[value=no]").click()
    wait_for(browser, f"#correction-1-{agent}")
    assert wait_for(browser, "#review-outcome").text.startswith("Review: modified")
    added = [e.text for e in browser.find_elements(By.CSS_SELECTOR, f"#correction-1-{agent} .d-add")]
    assert "+A line the reviewer added." in added
    assert wait_for(browser, f"#corrected-1-{agent}").is_displayed()
    corrected = manager.load_agent_output(P, S, 1, agent).content
    assert corrected.endswith("A line the reviewer added.") and corrected.startswith(original.rstrip("\n"))
    kept = [e for e in manager.history(P, S) if e.original_output is not None]
    assert kept and original in kept[-1].original_output
    screenshot(browser, shots, "correction")
