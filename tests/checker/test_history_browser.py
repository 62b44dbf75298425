"""`history.html` as a person sees it, in a real headless Chromium: the thirty nights of
tests/checker/test_history.py (real runs of the double, faults coming and going) open on the
newest verdict, the failing requirements with the night they began failing and the unstable
ones, in the first screen; the grid and the three charts are drawn; nothing is loaded from
anywhere and no script runs. The hostile history shows its text as text. Screenshots go to
$PSC_SCREENSHOT_DIR when set (history-*.png), else to the test's temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import cli
from tests.checker.test_history import (  # noqa: F401 (nights: a fixture)
    AUTH,
    ERROR,
    HOSTILE,
    LIST,
    NIGHTS,
    hostile_statements,
    nights,
)
from tests.checker.test_report_browser import screenshots
from tests.shared.browser import Browser, Page

pytestmark = pytest.mark.browser
VIEWPORT_HEIGHT = 900


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    with Browser.start(tmp_path_factory.mktemp("chromium")) as started:
        yield started


def written(out: Path, *runs: Path) -> Path:
    assert cli.main(["history", *map(str, runs), "--out", str(out)]) == 0
    return out / "history.html"


def nothing_loaded_nor_run(page: Page) -> None:
    assert page.errors() == []
    assert page.evaluate("document.scripts.length") == 0
    assert page.evaluate("performance.getEntriesByType('resource').length") == 0
    policy = page.evaluate(
        "document.querySelector('meta[http-equiv=Content-Security-Policy]').content"
    )
    assert policy.startswith("default-src 'none'")


def test_thirty_nights_show_since_when_and_the_unstable_first(nights, browser, tmp_path):  # noqa: F811
    page = browser.open(written(tmp_path / "out", nights.folder), height=VIEWPORT_HEIGHT)
    nothing_loaded_nor_run(page)
    strip = page.evaluate("[...document.querySelectorAll('#strip span')].map(s => s.className)")
    assert len(strip) == NIGHTS and strip[0] == "not-conformant" and strip[-1] == "conformant"
    failing = page.evaluate(
        "[...document.querySelectorAll('#failing + ul li')].map(l => l.innerText)"
    )
    assert f"{AUTH} failing since 2026-11-21 (10 nights)" in failing
    assert f"{ERROR} failing since 2026-11-29 (2 nights), unstable (5 flips)" in failing
    unstable = page.evaluate("document.querySelector('#unstable + ul').innerText")
    assert f"{LIST}: flipped 10 times; now passed since 2026-11-29 (2 nights)" in unstable
    # What needs attention is on the first screen, above the grid.
    assert (
        page.evaluate("document.querySelector('#unstable + ul').getBoundingClientRect().bottom")
        < VIEWPORT_HEIGHT
    )
    cells = page.evaluate(
        f"[...document.querySelector('#grid tr[data-id={AUTH}]').cells].map(c => c.className)"
    )
    assert cells[4:] == ["f"] * 10 + ["p"] * 20, "newest night first"
    for name in ("seconds", "requests", "memory"):
        box = page.evaluate(
            f"(() => {{ const s = document.getElementById('chart-{name}'); const r = "
            "s.getBoundingClientRect(); return [s.querySelectorAll('circle').length, r.width, "
            "r.height, s.querySelectorAll('polyline').length, Math.min(...[...s.querySelectorAll("
            "'text')].map(t => t.getBBox().x))]; })()"
        )
        assert box[0] == NIGHTS and box[1] > 800 and box[2] > 100 and box[3] == 1, (name, box)
        assert box[4] >= 0, f"a label of the {name} chart starts left of the picture"
    page.screenshot(screenshots(tmp_path) / "history-30-nights.png")
    page.evaluate("document.getElementById('charts').scrollIntoView()")
    page.screenshot(screenshots(tmp_path) / "history-30-nights-charts.png", full_page=False)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(screenshots(tmp_path) / "history-30-nights-first-screen.png", full_page=False)


def test_a_hostile_history_shows_its_text_as_text(browser, tmp_path):
    page = browser.open(
        written(tmp_path / "out", *hostile_statements(tmp_path / "hostile")),
        height=VIEWPORT_HEIGHT,
    )
    nothing_loaded_nor_run(page)
    assert page.evaluate("document.images.length") == 0
    shown = page.evaluate("document.body.innerText")
    assert "<script>alert(1)</script>" in shown and "<img src=http://evil/>" in shown
    assert HOSTILE not in shown  # its control characters are shown escaped, not raw
    assert page.evaluate("document.querySelectorAll('#grid tbody tr').length") == 500
    # The largest figures believed (10**15) still label their axis inside the picture.
    lefts = page.evaluate(
        "[...document.querySelectorAll('svg.chart text')].map(t => t.getBBox().x)"
    )
    assert len(lefts) == 12 and min(lefts) >= 0, lefts
    page.screenshot(screenshots(tmp_path) / "history-hostile.png", full_page=False)
