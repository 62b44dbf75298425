"""The rate-limit timeline of the report and the HAR built from the same exchanges: made from
recorded exchanges alone, whatever order a concurrent burst recorded them in, and small however
many there are."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ElementTree
from email.utils import formatdate

import httpx

from conformance.httpclient.client import RESPONSE_BODY_LIMIT, ConformanceClient, Exchange
from conformance.reports import har, timeline

SVG = "{http://www.w3.org/2000/svg}"
START = 1_790_000_000.0
LIMIT = 1000


def answer(number: int, key: str, at: float, status: int, remaining: int, **extra: str) -> Exchange:
    headers = [
        ("Date", formatdate(int(at), usegmt=True)),
        ("X-RateLimit-Limit", str(LIMIT)),
        ("X-RateLimit-Remaining", str(remaining)),
        ("X-RateLimit-Reset", str(int(START) + 60)),
        *extra.items(),
    ]
    return Exchange(
        number, key, "GET", "http://t/v1/categories", {}, None, status, headers, "", at, 0.01
    )


def burst(count: int) -> list[Exchange]:
    """`count` answers on the spare key counting down over 20 s, then 429s asking for 40 s,
    recorded in a shuffled order as a concurrent burst may record them."""
    answers = [
        answer(n + 1, "spare", START + n * 20 / count, 200, max(LIMIT - n, 0)) for n in range(count)
    ]
    answers += [
        answer(count + n + 1, "spare", START + 20 + n * 0.01, 429, 0, **{"Retry-After": "40"})
        for n in range(count // 2)
    ]
    answers.append(answer(len(answers) + 1, "main", START + 1, 200, 55))
    random.Random(7).shuffle(answers)
    return answers


def svg_of(page: str) -> ElementTree.Element:
    return ElementTree.fromstring(page[page.index("<svg") : page.index("</svg>") + 6])


def test_thousands_of_answers_are_thinned_and_every_mark_is_drawn():
    page = timeline.timeline_html(burst(10_000))
    root = svg_of(page)
    assert len(page) < 400_000, "the report must stay light"
    series = {p.get("data-key"): p.get("d") for p in root.iter(f"{SVG}path") if p.get("data-key")}
    assert set(series) == {"spare", "main"}
    assert series["spare"].count("M") <= 2 * timeline.PLOT_WIDTH
    marks = [p for p in root.iter(f"{SVG}path") if p.get("class") == "psc-429"]
    assert 1 <= len(marks) <= timeline.PLOT_WIDTH
    waits = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "psc-retry-after"]
    resets = [line for line in root.iter(f"{SVG}line") if line.get("class") == "psc-reset"]
    assert waits and resets
    assert "Retry-After 40 s" in waits[0].find(f"{SVG}title").text
    assert "5000 answer(s) 429" in page


def test_the_order_of_recording_does_not_change_the_picture():
    answers = burst(300)
    shuffled = timeline.timeline_html(answers)
    in_order = timeline.timeline_html(sorted(answers, key=lambda e: e.started_at))
    assert shuffled == in_order


def test_the_lowest_remaining_survives_thinning():
    page = timeline.timeline_html(burst(10_000))
    root = svg_of(page)
    bottom = timeline.TOP + timeline.PLOT_HEIGHT
    spare = next(p.get("d") for p in root.iter(f"{SVG}path") if p.get("data-key") == "spare")
    ys = [float(part.split()[1].rstrip("h0")) for part in spare.split("M")[1:]]
    assert max(ys) == bottom  # down to 0 Remaining
    assert min(ys) == timeline.TOP  # from the full quota


def test_a_run_without_429_says_so():
    page = timeline.timeline_html([answer(1, "main", START, 200, 59)])
    assert "no key was limited in this run" in page
    svg_of(page)  # well formed


def test_no_answers_no_picture():
    assert "<svg" not in timeline.timeline_html([])


# -- the HAR of the same exchanges -------------------------------------------------------------


def test_har_entries_are_sorted_by_start_and_redacted():
    secret = "sk-Timeline-Secret-77"

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, json={"id": 1, "name": "x" * RESPONSE_BODY_LIMIT})

    with ConformanceClient(
        "http://t/v1", {"main": secret}, transport=httpx.MockTransport(server)
    ) as client:
        client.post("/categories", json={"name": "Dogs"})
        exchanges = client.exchanges
    late = answer(2, "main", exchanges[0].started_at - 5, 200, 9)  # recorded last, sent first
    document = har.archive([*exchanges, late])
    text = json.dumps(document)
    assert secret not in text
    first, second = document["log"]["entries"]
    assert first["comment"].startswith("exchange #2") and second["comment"].startswith(
        "exchange #1"
    )
    request = second["request"]
    assert {"name": "Authorization", "value": "Bearer ***"} in request["headers"]
    assert request["postData"] == {
        "mimeType": "application/json",
        "params": [],
        "text": '{"name":"Dogs"}',
    }
    assert second["response"]["content"]["comment"].startswith("body cut")


def test_a_reset_that_is_no_moment_to_wait_for_is_not_drawn():
    # A Reset in milliseconds (or a day away) would squeeze the run into a sliver, or worse.
    limited = [
        answer(1, "spare", START, 200, 1),
        answer(2, "spare", START + 1, 429, 0, **{"Retry-After": "1"}),
    ]
    millis = {"X-RateLimit-Reset": str(int(START + 60) * 1000)}
    limited[1] = Exchange(
        **{**limited[1].__dict__, "response_headers": list(limited[1].response_headers)}
    )
    limited[1].response_headers[3] = ("X-RateLimit-Reset", millis["X-RateLimit-Reset"])
    root = svg_of(timeline.timeline_html(limited))
    assert not [line for line in root.iter(f"{SVG}line") if line.get("class") == "psc-reset"]
    assert [p for p in root.iter(f"{SVG}path") if p.get("class") == "psc-429"]


def test_a_client_timeline_rings_each_request_that_came_before_its_wait():
    from conformance.reports.timeline import ClientMark, client_timeline_html

    marks = [
        ClientMark(0.0, 429, 1.0, False),
        ClientMark(0.2, 429, 1.0, True),  # 0.2 s after a 429 that asked for 1 s
        ClientMark(1.3, 200, None, False),
    ]
    html = client_timeline_html([("retry-after-seconds", marks), ("success", [])])
    assert html.count('class="psc-early"') == 1
    assert html.count('class="psc-429"') == 2 and html.count('class="psc-retry-after"') == 2
    assert "retry-after-seconds" in html and ">success<" not in html  # no requests, no lane
    assert "1 came before a wait ended" in html
    assert client_timeline_html([("success", [])]) == "<p>The client sent no requests to draw.</p>"
