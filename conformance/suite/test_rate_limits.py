"""Limits: the headers on every response, one count per caller, exhaustion, 429, back-off, reset.

Every response any test receives is already checked for the three headers, their values, the
plan's figure and a plausible Unix-time Reset (conformance/response_checks.py). Here: what the
run's own traffic on the main key shows about counting (three requests more only where that
traffic held no detour from one endpoint to another and back); and the one scenario that
spends a key's quota (conformance/suite/exhaustion.py).

Requests: 2 (5), plus the exhaustion: the window's quota + 1 on the exhausted key, and 2 to 4
more; in the day profile, the rest of that key's day (conformance/suite/day_quota.py).
"""

from __future__ import annotations

import pytest

from conformance.judging.checks import cannot_check, expect
from conformance.judging.ratelimit import (
    SETTLE_MARGIN,
    ServerClock,
    counting,
    detours,
    of_the_key,
    reset_went_back,
)
from conformance.suite.day_quota import spend_the_day
from conformance.suite.exhaustion import exhaust_and_recover

# Seconds of window a detour needs: the last one proves nothing, and three requests on a busy
# machine may take another.
DETOUR_ROOM = SETTLE_MARGIN + 1.0
DETOUR_TRIES = 2  # detours sent where the run's own traffic held none through another path


@pytest.mark.smoke
def test_headers_on_a_listing(client):
    """One plain request; the per-response checks judge its rate-limit headers."""
    exchange = client.get("/categories")
    expect(
        "LIM-HEADERS-PRESENT",
        exchange.header("X-RateLimit-Limit") is not None,
        f"GET /categories must carry the rate-limit headers, got a {exchange.status} without",
        exchange,
    )


def test_headers_on_an_unknown_path(client, run):
    """Which status an unknown path gets is not shown, but it is still an API response."""
    exchange = client.get(f"/{run.settings.name_prefix}no-such-path")
    expect(
        "LIM-HEADERS-PRESENT",
        exchange.header("X-RateLimit-Limit") is not None,
        f"an unknown path under the base address got a {exchange.status} without the "
        "rate-limit headers",
        exchange,
    )


@pytest.mark.history
def test_requests_count_against_one_limit(client):
    """The main key's requests of the whole run, on every endpoint: each lowers the one
    Remaining of the key (LIM-PER-CALLER), by one (LIM-REMAINING-COUNTS)."""
    clock = ServerClock.of(client.exchanges)
    history = of_the_key(client.exchanges, "main")
    # Only a detour through another path shows a limit kept per route (slowapi's default); one
    # through another method of the same path passes such a limiter. A detour sent that did not
    # land in one settled window (a reset in between, a loaded machine) is sent once more.
    for _ in range(DETOUR_TRIES):
        if any(detour.across_paths for detour in detours(history, clock)):
            break
        send_a_detour(client, history, clock)
        clock = ServerClock.of(client.exchanges)
        history = of_the_key(client.exchanges, "main")
    problem = reset_went_back(history) or next(
        (d.problem for d in detours(history, clock) if d.problem), None
    )
    if problem is None and not any(d.across_paths for d in detours(history, clock)):
        cannot_check(
            "LIM-PER-CALLER",
            "no request of the main key on one path, then another, then the first again, "
            "came early enough in one window with readable rate-limit headers to tell",
        )
    elif problem is not None:
        expect(
            "LIM-PER-CALLER",
            False,
            f"every request of a key must count against its one limit: {problem}",
            history[-1].exchange,
        )
        return  # Remaining cannot be judged for counting while it counts per endpoint
    else:
        expect("LIM-PER-CALLER", True, "one count across endpoints", history[-1].exchange)
    tally = counting(history, clock)
    if not tally.judged:
        pytest.skip("too few of the main key's responses fell in settled windows to judge counting")
    expect(
        "LIM-REMAINING-COUNTS",
        tally.problem is None,
        f"X-RateLimit-Remaining must fall by one per request: {tally.problem}",
        history[-1].exchange,
    )


def send_a_detour(client, history, clock) -> None:
    """GET /categories, GET /store/orders, GET /categories, early in a window with room for
    them: three requests, where the run's own traffic held no detour to judge."""
    latest = next((s for s in reversed(history) if s.complete), None)
    if latest is not None and latest.limit and latest.reset is not None:
        left = clock.seconds_left(latest.reset)
        if left < DETOUR_ROOM or (latest.remaining or 0) < 3:
            client.wait("main", clock.seconds_until(latest.reset), "a fresh window")
    for path in ("/categories", "/store/orders", "/categories"):
        client.get(path, pace=False)


@pytest.mark.exhausts
def test_exhaustion_429_retry_after_and_reset(client, settings, run, early_exhaustion):
    """Spend the exhaustion key's quota: the request beyond it is a 429 with Retry-After;
    nothing is sent until the wait is over; then a request is served again."""
    if early_exhaustion is not None:
        early_exhaustion.result()
    else:
        exhaust_and_recover(client, settings, run.announce)


@pytest.mark.day
@pytest.mark.exhausts
def test_day_quota_spent_window_after_window(client, settings, run):
    """The day profile: the exhaustion key spends its day, window after window, each window's
    announced quota at its start, until the day refuses (conformance/suite/day_quota.py)."""
    spend_the_day(client, settings, run.announce, run.progress.tracker("the day", "served"))
