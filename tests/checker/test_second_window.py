"""The window after the reset on a busy machine (issue 39): a window spent to its end without a
refusal ran into the next one, and its promise tells nothing. The next is spent from its start;
where none shows a refusal, LIM-QUOTA-HONOURED is unproven: no verdict, never "conformant".

The server below counts its windows in requests, not seconds: each window ends after
`rolls_after` requests, as a window does whose requests a busy machine held back past its end.
Its Remaining is one too high (counted after answering), the fault a window spent to its
last request catches."""

from __future__ import annotations

import math
import threading
import time
from email.utils import formatdate

import httpx
import pytest

from conformance.httpclient.client import ConformanceClient
from conformance.judging import checks
from conformance.judging.ratelimit import snapshot
from conformance.judging.verdict import NO_VERDICT, decide
from conformance.settings import Settings
from conformance.suite.exhaustion import SECOND_WINDOW_TRIES, spend_second_window

KEY = "spare-key-for-the-second-window"
LIMIT = 60


class RollingWindows:
    """Windows of LIMIT requests, Remaining one too high; the first `rolling` windows end
    after `rolls_after` requests (held back past their end), the later ones at LIMIT + 1."""

    def __init__(self, rolling: int, rolls_after: int = LIMIT // 2):
        self.rolling, self.rolls_after = rolling, rolls_after
        self.windows = 0
        self.used = 0
        self.requests = 0
        self.first_reset = math.ceil(time.time() + 30)
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            ends_after = self.rolls_after if self.windows < self.rolling else LIMIT + 1
            if self.used >= ends_after:
                self.windows, self.used = self.windows + 1, 0
            now = time.time()
            self.requests += 1
            served = self.used < LIMIT
            self.used += 1
            remaining = min(LIMIT, max(0, LIMIT - self.used) + (1 if served else 0))
            headers = {
                "Date": formatdate(now, usegmt=True),
                "X-RateLimit-Limit": str(LIMIT),
                "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(self.first_reset + 30 * self.windows),
            }
            if not served:
                headers["Retry-After"] = "30"
            return httpx.Response(200 if served else 429, headers=headers, json=[])


def spend(server: RollingWindows) -> checks.Ledger:
    """The window after the reset, from a fresh window's first response, with no real waits."""
    ledger = checks.start_run()
    transport = httpx.MockTransport(server)
    client = ConformanceClient(
        "http://petstore.test/v1", {"spare": KEY}, transport=transport, async_transport=transport
    )
    client.wait = lambda key, seconds, reason: 0.0  # type: ignore[method-assign]
    settings = Settings("http://petstore.test/v1", "k" * 16, spare_api_key=KEY)
    opening = snapshot(client.get("/categories", key="spare", retry_on_429=False))
    spend_second_window(client, settings, opening, lambda message: None)
    return ledger


def quota_results(ledger: checks.Ledger) -> list[bool]:
    return [r.passed for r in ledger.results if r.requirement_id == "LIM-QUOTA-HONOURED"]


def test_a_window_spent_from_its_start_catches_the_promise_broken_at_its_last_request():
    ledger = spend(RollingWindows(rolling=0))
    assert quota_results(ledger) == [False]
    assert ledger.unproven == {}


def test_a_window_that_ran_into_the_next_is_spent_again_and_catches_it():
    ledger = spend(RollingWindows(rolling=1))
    assert quota_results(ledger) == [False]
    failure = next(r for r in ledger.results if not r.passed)
    assert failure.message.startswith(f"window 2 of {SECOND_WINDOW_TRIES} spent from its start")


@pytest.mark.parametrize("rolls_after", [LIMIT // 2, LIMIT])
def test_windows_that_all_ran_into_the_next_leave_the_quota_unproven(rolls_after):
    """A pass of the first window is not proof then: no verdict, with the reason."""
    server = RollingWindows(rolling=100, rolls_after=rolls_after)
    ledger = spend(server)
    assert quota_results(ledger) == []
    # each try: its opening, what it announced and one more; no more
    assert server.requests <= 1 + SECOND_WINDOW_TRIES * (LIMIT + 1) + SECOND_WINDOW_TRIES - 1
    reason = ledger.unproven["LIM-QUOTA-HONOURED"]
    assert "each ran into the next before a refusal" in reason
    checks.expect("LIM-QUOTA-HONOURED", True, "the first window's 429 came after its quota")
    verdict = decide(ledger.results, unproven=ledger.unproven)
    assert verdict.verdict == NO_VERDICT
    assert "LIM-QUOTA-HONOURED" in (verdict.reason or "")
    entry = next(o for o in verdict.outcomes if o.requirement.id == "LIM-QUOTA-HONOURED")
    assert (entry.outcome, entry.reason) == ("not-tested", reason)


def test_a_failure_stands_even_where_a_later_check_could_not_finish():
    ledger = checks.start_run()
    checks.expect("LIM-QUOTA-HONOURED", False, "refused within the announced quota")
    checks.unproven("LIM-QUOTA-HONOURED", "a window ran into the next")
    verdict = decide(ledger.results, unproven=ledger.unproven)
    assert verdict.failed_requirements == ["LIM-QUOTA-HONOURED"]
