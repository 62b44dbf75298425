"""Limits: the headers on every response, Remaining counting, exhaustion, 429, back-off, reset.

Every response any test receives is already checked for the three headers, integer values, the
plan's figure and a plausible Unix-time Reset (conformance/response_checks.py). Here: the
behaviour across requests, ending with the one scenario that spends a key's quota.
"""

from __future__ import annotations

import time

import pytest

from conformance.checks import cannot_check, expect
from conformance.ratelimit import (
    Snapshot,
    counting_problem,
    refused_within_quota,
    served_beyond_limit,
    snapshot,
)
from conformance.response_checks import retry_after_seconds

BURST = 4
# Never send more than about two windows' worth while looking for the 429.
WINDOWS_OF_SLACK = 2
MAX_RESET_WAIT = 61.0


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


def test_remaining_counts_each_request(client):
    """A few requests back to back: Remaining falls by one each time within one window."""
    history = [snapshot(client.get("/categories", pace=False)) for _ in range(BURST)]
    if any(s.status == 429 for s in history):
        pytest.skip("the main key was limited during the burst; the exhaustion test judges that")
    check_counting(history)


def check_counting(history: list[Snapshot]) -> None:
    problem = counting_problem(history)
    expect(
        "LIM-REMAINING-COUNTS",
        problem is None,
        f"X-RateLimit-Remaining must fall by one per request: {problem}",
        history[-1].exchange,
    )


@pytest.mark.exhausts
def test_exhaustion_429_retry_after_and_reset(client, settings):
    """Spend the exhaustion key's quota: the request after Remaining reached 0 is a 429 with
    Retry-After; nothing is sent until the wait is over; then a request is served again."""
    label = settings.exhaustion_key
    per_minute = settings.plan_limits[0]
    history = [fresh_window(client, label)]
    # The main key's room just before the spare is spent (the client first waits out its window
    # if it had none): what the per-key check compares with.
    main_before = snapshot(client.get("/categories", key="main")) if label != "main" else None
    refused = spend_quota(client, label, history, per_minute)
    judge_burst(history, per_minute)
    if refused is None:
        return
    check_refusal(refused, per_minute)
    if main_before is not None:
        check_other_key_unaffected(client, main_before, per_minute)
    check_recovery(client, label, refused)


def fresh_window(client, label: str) -> Snapshot:
    """Start the burst as a window starts, so the whole window is there to spend the quota in
    (and the judgement is exact); where the window ends too far ahead, start at once."""
    probe = snapshot(client.get("/categories", key=label))
    if probe.reset is None or not plausible_reset(probe):
        return probe
    wait_for_server_time(probe, probe.reset)
    return snapshot(client.get("/categories", key=label))


def quota_ceiling(first: Snapshot, per_minute: int | None) -> int:
    figure = per_minute or first.limit or 60
    return WINDOWS_OF_SLACK * figure + 4


def spend_quota(client, label, history, per_minute) -> Snapshot | None:
    """Send on `label` until a 429 (returned) or the ceiling; each response joins `history`."""
    ceiling = quota_ceiling(history[0], per_minute)
    for _ in range(ceiling):
        current = snapshot(client.get("/categories", key=label, retry_on_429=False, pace=False))
        history.append(current)
        if current.status == 429:
            return current
        if not current.served:
            previous = history[-2]
            expect(
                "LIM-429-WHEN-EXCEEDED",
                previous.remaining not in (0, None),
                f"a request beyond the limit must be answered 429, got {current.status}",
                current.exchange,
            )
            return None
    judge_no_refusal(history, per_minute)
    return None


def judge_no_refusal(history: list[Snapshot], per_minute: int | None) -> None:
    """No 429 came: a failure only if one window served more than its limit. Windows that
    roll over faster than this run can send leave the question open, never failed."""
    limit = per_minute or history[0].limit or 60
    fullest = fullest_window(history)
    if len(fullest) <= limit:
        pytest.skip(
            f"windows rolled over before {limit} requests could be sent in one: the limit "
            "could not be reached from here"
        )
    expect(
        "LIM-429-WHEN-EXCEEDED",
        False,
        f"{len(fullest)} requests on one key were served in one window of a limit of {limit}",
        fullest[-1].exchange,
    )


def fullest_window(history: list[Snapshot]) -> list[Snapshot]:
    """The served responses of the window that served most (one window when Reset is absent)."""
    windows: dict[int | None, list[Snapshot]] = {}
    for seen in history:
        if seen.served:
            windows.setdefault(seen.reset, []).append(seen)
    return max(windows.values(), key=len, default=[])


def judge_burst(history: list[Snapshot], per_minute: int | None) -> None:
    check_counting(history)
    beyond = served_beyond_limit(history)
    expect(
        "LIM-429-WHEN-EXCEEDED",
        beyond is None,
        "the request after a response showing X-RateLimit-Remaining: 0 (same window) must be "
        f"answered 429, but it was served with {beyond.status if beyond else ''}",
        beyond.exchange if beyond else None,
    )
    early = refused_within_quota(history, per_minute)
    expect(
        "LIM-QUOTA-HONOURED",
        early is None,
        "a request within the announced quota (the previous response showed Remaining above 0 "
        "in the same window) must be served, not refused with 429",
        early.exchange if early else None,
    )


def check_refusal(refused: Snapshot, per_minute: int | None) -> None:
    expect(
        "LIM-429-WHEN-EXCEEDED",
        True,
        "a request beyond the limit was answered 429",
        refused.exchange,
    )
    if refused.limit is not None and refused.limit == per_minute:
        expect(
            "LIM-REMAINING-COUNTS",
            refused.remaining == 0,
            f"a 429 for the per-minute limit must show X-RateLimit-Remaining: 0, "
            f"got {refused.remaining}",
            refused.exchange,
        )


def check_other_key_unaffected(client, before: Snapshot, per_minute: int | None) -> None:
    """The spare key is limited now; the main key must still be served, if its own per-minute
    quota had room just before (otherwise its 429 could be its own, and fair)."""
    if per_minute is None or before.limit != per_minute or not before.remaining:
        cannot_check(
            "LIM-PER-KEY",
            "the main key's own per-minute quota was not known to have room (the headers "
            "report another window), so a 429 on it could be its own",
        )
        return
    other = client.get("/categories", key="main", retry_on_429=False)
    expect(
        "LIM-PER-KEY",
        other.status != 429,
        "with the spare key limited, a request on the main key must still be served, "
        f"got {other.status}",
        other,
    )


def check_recovery(client, label: str, refused: Snapshot) -> None:
    """Once Retry-After has passed a request is served; once Reset has passed, too."""
    retry_after = retry_after_seconds(refused.exchange)
    # The client holds the key until Retry-After (or its own back-off) is over.
    after_wait = client.get("/categories", key=label, retry_on_429=False)
    if retry_after is not None:
        expect(
            "LIM-RETRY-AFTER-HONEST",
            200 <= after_wait.status < 300,
            f"a request sent once Retry-After ({retry_after:.0f} s) had passed must be served, "
            f"got {after_wait.status}",
            after_wait,
        )
    if refused.reset is None:
        return  # LIM-HEADERS-PRESENT has already failed this response
    if not plausible_reset(refused):
        ahead = refused.reset - refused.server_now
        cannot_check(
            "LIM-RESET-HONEST",
            f"the 429's X-RateLimit-Reset lies {ahead:.0f} s ahead (the headers report a longer "
            f"window, such as the day's); a run does not wait more than {MAX_RESET_WAIT:.0f} s",
        )
        return
    if 200 <= after_wait.status < 300 and snapshot(after_wait).server_now >= refused.reset:
        expect("LIM-RESET-HONEST", True, "served after the reset time", after_wait)
        return
    wait_for_server_time(refused, refused.reset)
    after_reset = client.get("/categories", key=label, retry_on_429=False)
    expect(
        "LIM-RESET-HONEST",
        200 <= after_reset.status < 300,
        f"a request sent once X-RateLimit-Reset ({refused.reset}) had passed must be served, "
        f"got {after_reset.status}",
        after_reset,
    )


def plausible_reset(refused: Snapshot) -> bool:
    ahead = refused.reset - refused.server_now
    return -1 <= ahead <= MAX_RESET_WAIT


def wait_for_server_time(seen: Snapshot, target: float) -> None:
    """Sleep until the server's clock reaches `target` (a Unix time).

    `Date` has one-second resolution, too coarse to catch the start of a short window; when
    our clock agrees with it (same host, or synchronised clocks), our clock is the better
    measure. Otherwise translate through `Date`, erring late."""
    exchange = seen.exchange
    received = exchange.started_at + exchange.elapsed
    if -0.1 <= received - seen.server_now <= 1.1:
        deadline = target + 0.05
    else:
        deadline = received + (target - seen.server_now) + 1.0
    delay = deadline - time.time()
    if delay > 0:
        time.sleep(delay)
