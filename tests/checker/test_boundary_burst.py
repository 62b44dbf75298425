"""The exhaustion's burst goes late in its window (`conformance.suite.exhaustion`), so that the
window after the reset is spent just after it, across the boundary: a limiter in front refilled
continuously at the plan's figure has then given back a quarter of the quota at most, whatever
second the run began in."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.suite.exhaustion import BOUNDARY_SHARES, go_late_in_its_window


class StubClient:
    """What `go_late_in_its_window` asks of a client: one GET, the run's exchanges, a wait."""

    def __init__(self, reset_in: float, remaining: int = 59):
        """A key whose window began with its first request (the run's first contact), a whole
        minute before its Reset, and now has `reset_in` seconds left."""
        self.reset_in, self.remaining = reset_in, remaining
        self.status = 200
        self.exchanges: list[Exchange] = []
        self.waited: list[float] = []
        if reset_in <= 60:
            self.get("/categories", "spare", at=time.time() - (60 - reset_in))

    def get(
        self,
        path: str,
        key: str,
        at: float | None = None,
        elapsed: float = 0.002,
        retry_on_429: bool = True,
    ) -> Exchange:
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
            status=self.status,
            response_headers=headers,
            response_body="[]",
            started_at=sent,
            elapsed=elapsed,
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
    assert waited == pytest.approx(left - BOUNDARY_SHARES[0] * 60, abs=1.5)


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


def test_asked_again_after_a_429_a_key_still_refused_is_not_retried_nor_timed() -> None:
    """Issue 51: asked again after its burst's 429, a window that never resets refused each
    retry past the reset it announced, until the run's bound for one key ended it unjudged.
    The spender's own probe, after the refusal's Retry-After, follows instead."""
    client = StubClient(reset_in=40.0, remaining=0)
    client.status = 429
    assert not go_late_in_its_window(client, "spare", 60, retry_on_429=False)
    assert client.waited == []
    assert len(client.exchanges) == 2  # the window's first request, and the one asked again


class AlignedClient(StubClient):
    """Windows of `window` seconds aligned to the clock, the run's responses met partway
    through them: the first saw `first_left` of its window, the latest `left` of its own. Once
    the client has waited, the key is in the next window, just begun."""

    def __init__(self, window: float, first_left: float, left: float):
        self.window = window
        super().__init__(reset_in=left)
        self.exchanges.clear()
        self.get("/categories", "spare", at=time.time() - (first_left - left))

    def wait(self, key: str, seconds: float, reason: str) -> float:
        if not self.waited:
            self.reset_in = self.window - 0.1
        return super().wait(key, seconds, reason)


def test_a_window_met_partway_is_measured_whole_before_going_late() -> None:
    """A 10 s minute met 4 s in looked 6 s long, too short to begin late in: a busy machine's
    run met the front refilled continuously there and sent its burst at once (not caught)."""
    client = AlignedClient(window=10.0, first_left=6.0, left=0.7)
    assert go_late_in_its_window(client, "spare", 60)
    until_reset, until_late = client.waited
    assert until_reset == pytest.approx(0.7, abs=0.6)  # Resets in whole seconds
    assert until_late == pytest.approx(9.9 - BOUNDARY_SHARES[0] * 10, abs=1.0)


def test_windows_met_partway_twice_are_measured_whole_too() -> None:
    """The first response saw 2.6 s of one window, the latest 7.2 s of the next: 7.2 s is
    still too short for a quarter of two seconds, and not the window."""
    client = AlignedClient(window=10.0, first_left=2.6 - 10.0 + 7.2, left=7.2)
    assert go_late_in_its_window(client, "spare", 60)
    until_reset, until_late = client.waited
    assert until_reset == pytest.approx(7.2, abs=0.6)
    assert until_late == pytest.approx(9.9 - BOUNDARY_SHARES[0] * 10, abs=1.0)


def test_a_short_window_met_partway_stays_short() -> None:
    """A 3 s minute (the tests' doubles) is seen whole after its reset, and spent at once."""
    client = AlignedClient(window=3.0, first_left=2.0, left=0.5)
    assert not go_late_in_its_window(client, "spare", 60)
    assert len(client.waited) == 1


def test_round_trips_too_slow_for_a_quarter_begin_with_half_the_window_left() -> None:
    client = StubClient(reset_in=50.0)
    for _ in range(5):  # round trips this slow land 60 requests in half the window, not a quarter
        client.get("/categories", "spare", elapsed=3.4)
    assert go_late_in_its_window(client, "spare", 60)
    (waited,) = client.waited
    assert waited == pytest.approx(50.0 - BOUNDARY_SHARES[1] * 60, abs=1.5)
