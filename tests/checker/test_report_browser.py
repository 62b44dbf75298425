"""`report.html` as a person sees it, in a real headless Chromium: a passing run (the one-command
demo, as a newcomer runs it) and a failing one (a double that lost WWW-Authenticate, judged
with an expected-failures file holding one expected and one stale entry, and compared with the
passing run). The verdict and the matrix come first, the Python and plugin table last; the
filters work; the timeline is drawn; no script error. Screenshots of both pages are written to
$PSC_SCREENSHOT_DIR when set (to look at them), else to the test's temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.checker.test_command import Finished, checker, installed_script, new_key, run_command
from tests.shared.browser import Browser, Page
from tests.shared.double import running_double

pytestmark = pytest.mark.browser

FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"
STALE_ID = "DEP-SUNSET-HEADER"  # the double sends Sunset: listing it is a stale entry
VIEWPORT_HEIGHT = 900


@dataclass
class Report:
    finished: Finished
    html: Path
    statement: dict


@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> Report:
    cwd = tmp_path_factory.mktemp("passing")
    finished = run_command(installed_script(), cwd)
    assert finished.status == 0, finished.describe()
    return Report(finished, cwd / "reports" / "report.html", finished.statement())


@pytest.fixture(scope="module")
def failing(tmp_path_factory, passing) -> Report:
    cwd = tmp_path_factory.mktemp("failing")
    known = cwd / "known.yaml"
    known.write_text(
        "expected_failures:\n"
        f"  - id: {FAULT_ID}\n    reason: the gateway drops the header (OPS-123)\n"
        f"  - id: {STALE_ID}\n    reason: fixed last week\n",
        encoding="utf-8",
    )
    keys = (new_key("main"), new_key("spare"))
    with running_double([f"{key}:free" for key in keys], faults=[FAULT]) as base_url:
        args = ["--base-url", base_url, "--api-key", keys[0], "--spare-api-key", keys[1]]
        args += ["--expected-failures", str(known), "--previous", str(passing.html.parent)]
        finished = run_command(checker(*args), cwd)
    assert finished.status == 1, finished.describe()  # the stale entry
    return Report(finished, cwd / "reports" / "report.html", finished.statement())


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    with Browser.start(tmp_path_factory.mktemp("chromium")) as started:
        yield started


def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("PSC_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def top(page: Page, selector: str) -> float:
    return page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().top + window.scrollY"
    )


def visible_rows(page: Page) -> list[str]:
    return page.evaluate(
        "[...document.querySelectorAll('#psc-matrix tbody tr')]"
        ".filter(row => !row.hidden && row.offsetParent !== null)"
        ".map(row => row.cells[0].textContent)"
    )


def choose(page: Page, select: str, value: str) -> None:
    """Pick an option as a person does: the value changes and the page hears `change`."""
    page.evaluate(
        f"(() => {{ const s = document.getElementById({select!r}); s.value = {value!r};"
        " s.dispatchEvent(new Event('change', {bubbles: true})); })()"
    )


def test_the_passing_report_opens_on_the_verdict_and_ends_with_the_environment(
    passing, browser, tmp_path
):
    page = browser.open(passing.html, height=VIEWPORT_HEIGHT)
    assert page.errors() == []
    assert page.evaluate("document.querySelector('.psc-verdict').textContent") == (
        "Verdict: conformant"
    )
    assert top(page, ".psc-verdict") < VIEWPORT_HEIGHT / 3, "the verdict is not on first sight"
    assert top(page, ".psc-verdict") < top(page, "#psc-matrix") < top(page, "#results-table")
    assert top(page, "#results-table") < top(page, "#environment"), "versions before results"
    assert page.evaluate("document.querySelector('#environment-header h2').textContent") == (
        "Environment (Python and plugins)"
    )
    rows = len(passing.statement["requirements"])
    assert len(visible_rows(page)) == rows
    first = page.screenshot(screenshots(tmp_path) / "passing-first-sight.png", full_page=False)
    whole = page.screenshot(screenshots(tmp_path) / "passing-whole.png")
    assert first.read_bytes().startswith(b"\x89PNG") and whole.stat().st_size > first.stat().st_size


def test_the_timeline_shows_the_exhaustion(passing, browser):
    page = browser.open(passing.html)
    box = page.evaluate(
        "(() => { const r = document.querySelector('svg.psc-timeline').getBoundingClientRect();"
        " return [r.width, r.height]; })()"
    )
    assert box[0] > 800 and box[1] > 200
    keys = page.evaluate(
        "[...document.querySelectorAll('svg.psc-timeline [data-key]')].map(e => e.dataset.key)"
    )
    assert {"main", "spare"} <= set(keys)
    marks = page.evaluate(
        "(() => { const boxes = s => [...document.querySelectorAll('svg.psc-timeline ' + s)]"
        ".map(e => { const b = e.getBBox(); return {x: b.x, width: b.width}; });"
        " return {limited: boxes('.psc-429'), waits: boxes('.psc-retry-after'),"
        " resets: boxes('.psc-reset')}; })()"
    )
    assert marks["limited"] and marks["waits"] and marks["resets"]
    limited_at = marks["limited"][0]["x"] + marks["limited"][0]["width"] / 2
    assert marks["waits"][0]["width"] > 0 and marks["waits"][0]["x"] == pytest.approx(limited_at)
    assert marks["resets"][0]["x"] >= limited_at, "the Reset is drawn before its 429"


def test_the_failing_report_shows_expected_and_stale_entries_and_the_regression(
    failing, browser, tmp_path
):
    page = browser.open(failing.html, height=VIEWPORT_HEIGHT)
    assert page.errors() == []
    text = page.evaluate("document.querySelector('.psc').innerText")
    assert "Verdict: not conformant" in text
    assert (
        "Exit status 1: not conformant (every failed requirement is a listed expected failure; "
        f"stale entries: {STALE_ID})"
    ) in text
    baseline = page.evaluate("document.getElementById('psc-baseline').innerText")
    assert f"{FAULT_ID}\texpected failure: failed, as listed" in baseline
    assert f"{STALE_ID}\tstale: the requirement passed; remove this entry" in baseline
    comparison = page.evaluate("document.getElementById('psc-comparison').innerText")
    assert f"regression\t{FAULT_ID}\tpassed\tfailed" in comparison
    # The failed requirement is the first row, and its evidence opens in place: the 401, its
    # headers and a curl line that names the key by its variable.
    assert visible_rows(page)[0] == FAULT_ID
    evidence = page.evaluate(
        "(() => { const d = document.querySelector('#psc-matrix tbody tr .psc-evidence');"
        " d.open = true; return d.innerText; })()"
    )
    assert "-> 401 Unauthorized" in evidence and "reproduce:" in evidence
    page.screenshot(screenshots(tmp_path) / "failing-first-sight.png", full_page=False)
    page.screenshot(screenshots(tmp_path) / "failing-whole.png")


def test_the_matrix_filters_by_outcome_and_by_area(failing, browser):
    page = browser.open(failing.html)
    outcomes = {e["id"]: e["outcome"] for e in failing.statement["requirements"]}

    choose(page, "psc-outcome", "failed")
    assert visible_rows(page) == [i for i, o in outcomes.items() if o == "failed"] == [FAULT_ID]
    choose(page, "psc-outcome", "expected")
    assert visible_rows(page) == [FAULT_ID]
    choose(page, "psc-outcome", "not-tested")
    assert visible_rows(page) == [i for i, o in outcomes.items() if o == "not-tested"]

    # Unfiltered, what needs attention comes first: failed, warned, not tested, then passed.
    rank = {"failed": 0, "warned": 1, "not-tested": 2, "passed": 3}
    choose(page, "psc-outcome", "all")
    shown = [outcomes[i] for i in visible_rows(page)]
    assert shown[0] == "failed"
    assert shown == sorted(shown, key=rank.__getitem__)
    choose(page, "psc-area", "Limits")
    limits = visible_rows(page)
    assert sorted(limits) == sorted(i for i in outcomes if i.startswith("LIM-"))
    assert page.evaluate("document.getElementById('psc-shown').textContent") == str(len(limits))
    choose(page, "psc-outcome", "failed")
    assert visible_rows(page) == []
