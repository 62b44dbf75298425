"""The exhaustion's burst goes late in its window (`conformance.suite.exhaustion`), so that the
window after the reset is spent just after it, across the boundary: a limiter in front refilled
continuously at the plan's figure has then given back a quarter of the quota at most, whatever
second the run began in."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.suite.exhaustion import BOUNDARY_SHARE, go_late_in_its_window


class StubClient:
    """What `go_late_in_its_window` asks of a client: one GET, the run's exchanges, a wait."""

    def __init__(self, reset_in: float, remaining: int = 59):
        """A key whose window began with its first request (the run's first contact), a whole
        minute before its Reset, and now has `reset_in` seconds left."""
        self.reset_in, self.remaining = reset_in, remaining
        self.exchanges: list[Exchange] = []
        self.waited: list[float] = []
        if reset_in <= 60:
            self.get("/categories", "spare", at=time.time() - (60 - reset_in))

    def get(self, path: str, key: str, at: float | None = None) -> Exchange:
        now = time.time()
        sent = now if at is None else at
        headers = [
            ("Date", formatdate(sent, usegmt=True)),
            ("X-RateLimit-Limit", "60"),
            ("X-RateLimit-Remaining", str(self.remaining)),
            ("X-RateLimit-Reset", str(round(now + self.reset_in))),
        ]
        exchange = Exchange(
            id=len(self.exchanges),
            key_label=key,
            method="GET",
            url="http://127.0.0.1:8000/v1/categories",
            request_headers={},
            request_body=None,
            status=200,
            response_headers=headers,
            response_body="[]",
            started_at=sent,
            elapsed=0.002,
            _full_body="[]",
        )
        self.exchanges.append(exchange)
        return exchange

    def wait(self, key: str, seconds: float, reason: str) -> float:
        self.waited.append(seconds)
        return seconds


@pytest.mark.parametrize("left", [59.0, 45.0, 30.0, 20.0])
def test_the_burst_waits_until_a_quarter_of_its_window_is_left(left: float) -> None:
    client = StubClient(reset_in=left)
    assert go_late_in_its_window(client, "spare", 60)
    (waited,) = client.waited
    assert waited == pytest.approx(left - BOUNDARY_SHARE * 60, abs=1.5)


def test_met_in_its_last_quarter_it_waits_for_the_next_ones() -> None:
    """Too late in this window for the wave to land before its last second: late in the next."""
    client = StubClient(reset_in=10.0)
    assert go_late_in_its_window(client, "spare", 60)
    (waited,) = client.waited
    assert waited == pytest.approx(10.0 + 60 - 15, abs=1.5)


def test_headers_that_hide_the_minute_send_the_burst_at_once() -> None:
    client = StubClient(reset_in=20 * 3600.0)  # the day's Reset
    assert not go_late_in_its_window(client, "spare", 60)
    assert client.waited == []


def test_a_reset_in_the_past_sends_the_burst_at_once() -> None:
    """A Reset before its response's Date (the window's start, a local time) times nothing: a
    run that took it for a window met late waited a minute for it, and three more after."""
    client = StubClient(reset_in=-3600.0)
    assert not go_late_in_its_window(client, "spare", 60)
    assert client.waited == []
