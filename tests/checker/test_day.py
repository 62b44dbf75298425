"""Unit tests of judging a window spent from its start (`conformance.judging.spent_window`) and
a key's day (`conformance.judging.day`), and of the day profile's cost (`conformance.settings`)."""

from __future__ import annotations

import calendar
from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.judging import checks
from conformance.judging.day import Day, day_crossed, judge_day
from conformance.judging.day_refusal import days_evidence, said_by_its_headers
from conformance.judging.ratelimit import ServerClock, Snapshot
from conformance.judging.spent_window import SpentWindow, broken_promise, judge_window
from conformance.settings import Settings, default_deadline, describe_day_plan

NOW = 1_740_830_400.0  # 2025-03-01 12:00:00 UTC
RESET = NOW + 50
PER_MINUTE, PER_DAY = 60, 1_000
SAME = ServerClock(0.0)


def exchange(status: int = 200, *, at: float = NOW, headers: bool = True) -> Exchange:
    return Exchange(
        id=int(at * 1000),
        key_label="spare",
        method="GET",
        url="http://petstore.test/v1/categories",
        request_headers={},
        request_body=None,
        status=status,
        response_headers=[("Date", formatdate(at, usegmt=True))],
        response_body="[]",
        started_at=at,
        elapsed=0.001,
        _full_body="[]",
    )


def snap(
    remaining: int | None,
    *,
    status: int = 200,
    at: float = NOW,
    limit: int | None = PER_MINUTE,
    reset: float | None = RESET,
) -> Snapshot:
    return Snapshot(exchange(status, at=at), limit, remaining, reset)


def sequence(opening: int, served: int, *, refusal: Snapshot | None = None) -> SpentWindow:
    """A window opened with Remaining `opening`, then `served` requests one at a time, each
    answered before the next was sent, Remaining falling by one."""
    spent = [snap(opening - i, at=NOW + i * 0.01) for i in range(1, served + 1)]
    if refusal is not None:
        spent.append(refusal)
    return SpentWindow("window 1 of the day", snap(opening), spent)


@pytest.fixture(autouse=True)
def ledger() -> checks.Ledger:
    return checks.start_run()


def outcomes(ledger: checks.Ledger, requirement: str) -> list[bool]:
    return [r.passed for r in ledger.results if r.requirement_id == requirement]


# -- a window spent from its start -------------------------------------------------------------


def test_a_window_that_serves_its_announced_quota_keeps_its_promise(ledger) -> None:
    window = sequence(59, 59, refusal=snap(0, status=429, at=NOW + 1))
    assert broken_promise(window, PER_MINUTE) is None
    assert not judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-QUOTA-HONOURED") == [True]
    assert outcomes(ledger, "LIM-429-WHEN-EXCEEDED") == [True]


def test_a_remaining_one_too_high_breaks_its_promise_at_the_last_request(ledger) -> None:
    """Counted after answering: the response that said Remaining 1 was the last served."""
    window = sequence(60, 59, refusal=snap(0, status=429, at=NOW + 1))
    refusal, served = broken_promise(window, PER_MINUTE)
    assert (refusal.status, served) == (429, 59)
    judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-QUOTA-HONOURED") == [False]
    message = next(r.message for r in ledger.results if not r.passed)
    assert "said X-RateLimit-Remaining: 1 (a promise broken at its last request)" in message


def test_a_front_refusing_inside_the_announced_quota_breaks_the_promise(ledger) -> None:
    front = snap(None, status=429, at=NOW + 1, limit=None, reset=None)
    window = sequence(59, 3, refusal=front)
    judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-QUOTA-HONOURED") == [False]
    failure = next(r for r in ledger.results if not r.passed)
    assert "without rate-limit headers" in failure.message
    assert failure.exchange is window.opening.exchange  # not hidden by the front's own cause


def test_a_refusal_in_the_windows_last_second_still_breaks_the_promise(ledger) -> None:
    """Only the key's own requests followed the promise, and time only gives requests back: on
    a loaded machine the last requests may come late in the window, the promise stands."""
    late = snap(0, status=429, at=RESET - 0.5)
    refusal, served = broken_promise(sequence(59, 3, refusal=late), PER_MINUTE)
    assert (refusal, served) == (late, 3)


def test_a_sliding_window_that_announced_nothing_promised_nothing(ledger) -> None:
    window = SpentWindow("the window after the reset", snap(0), [snap(0, status=429, at=NOW + 1)])
    assert broken_promise(window, PER_MINUTE) is None
    assert outcomes(ledger, "LIM-QUOTA-HONOURED") == []


def test_headers_reporting_the_day_are_the_days_to_judge(ledger) -> None:
    """Two served responses saying Remaining 0 of the day: LIM-DAY-ENFORCED's, not the
    minute's LIM-429-WHEN-EXCEEDED."""
    day = [snap(0, limit=PER_DAY, reset=NOW + 3600, at=NOW + i) for i in (1, 2)]
    window = SpentWindow("window 17 of the day", snap(1, limit=PER_DAY, reset=NOW + 3600), day)
    assert not judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-429-WHEN-EXCEEDED") == []


# -- the day ----------------------------------------------------------------------------------


def spent_day(served: int, refused: int, refusal: Snapshot | None, *, start: float = NOW) -> tuple:
    """A day of `served` requests and `refused` minute refusals of the spare key, a second
    apart from `start`, then `refusal`."""
    run = [exchange(at=start + i) for i in range(served)]
    run += [exchange(429, at=start + served + i) for i in range(refused)]
    day = Day("spare", PER_MINUTE, PER_DAY, refusal=refusal)
    day.windows.append(SpentWindow("window 1 of the day", snap(59, at=start)))
    if refusal is not None:
        run.append(refusal.exchange)
    return day, run


def day_refusal(at: float) -> Snapshot:
    return snap(0, status=429, at=at, limit=PER_DAY, reset=NOW + 20 * 3600)


def test_a_day_refused_at_its_figure_is_enforced_and_honoured(ledger) -> None:
    day, run = spent_day(1_000, 16, day_refusal(NOW + 2_000))
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-ENFORCED") == [True]
    assert outcomes(ledger, "LIM-DAY-HONOURED") == [True]


def test_a_day_refusing_at_90_percent_is_not_honoured(ledger) -> None:
    day, run = spent_day(900, 15, day_refusal(NOW + 2_000))
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-HONOURED") == [False]
    assert outcomes(ledger, "LIM-DAY-ENFORCED") == [True]


def test_minute_refusals_count_towards_the_day_a_server_may_count(ledger) -> None:
    day, run = spent_day(990, 10, day_refusal(NOW + 2_000))
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-HONOURED") == [True]


def test_a_day_never_enforced_fails(ledger) -> None:
    day, run = spent_day(1_061, 17, None)
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-ENFORCED") == [False]
    assert "the day never refused" in ledger.results[0].message


def test_a_run_across_midnight_proves_no_excess(ledger) -> None:
    """Served more than a day's figure, but UTC midnight fell among the requests: a calendar
    day may have ended, so the enforcement is not judged; what was seen is said."""
    before_midnight = calendar.timegm((2025, 3, 1, 23, 50, 0))
    day, run = spent_day(1_061, 17, None, start=before_midnight)
    assert "midnight UTC" in day_crossed(run, PER_DAY, SAME)
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-ENFORCED") == []
    assert "1,061 requests" in ledger.unavailable["LIM-DAY-ENFORCED"]


def test_a_days_reset_that_passed_is_a_new_day() -> None:
    passed = Snapshot(exchange(at=NOW), PER_DAY, 5, NOW + 10)
    run = [passed.exchange, exchange(at=NOW + 20)]
    run[0].response_headers += [
        ("X-RateLimit-Limit", "1000"),
        ("X-RateLimit-Remaining", "5"),
        ("X-RateLimit-Reset", str(int(NOW + 10))),
    ]
    assert "passed during the run" in day_crossed(run, PER_DAY, SAME)


# -- its cost ---------------------------------------------------------------------------------


def test_the_day_profile_says_its_cost_and_gets_the_time_and_requests_it_needs() -> None:
    settings = Settings("http://petstore.test/v1", "k" * 12, spare_api_key="s" * 12, profile="day")
    full = Settings("http://petstore.test/v1", "k" * 12, spare_api_key="s" * 12)
    assert "17 windows of 60, 1,000 requests, about 17 minutes" in describe_day_plan(settings)
    assert settings.run_deadline >= full.run_deadline + 17 * 60
    assert settings.budget >= full.budget + PER_DAY
    pro = default_deadline("day", (300, 10_000)) - default_deadline("full")
    assert pro >= 34 * 60


# -- whose a refusal is ------------------------------------------------------------------------


def days_429(at: float, *, retry_after: str | None = None, **values) -> Snapshot:
    seen = snap(0, status=429, at=at, **values)
    if retry_after is not None:
        seen.exchange.response_headers.append(("Retry-After", retry_after))
    return seen


def test_a_days_429_after_minute_headers_is_the_days_not_a_broken_promise(ledger) -> None:
    """Flask-Limiter's and express-rate-limit's: the minute's headers until the day's 429,
    which names the day's figure. A refusal of the day, and a SHOULD warned: the headers
    announced 59 where the day had 39 left."""
    refusal = days_429(NOW + 1, limit=PER_DAY, reset=NOW + 20 * 3600, retry_after="72000")
    window = sequence(59, 39, refusal=refusal)
    window.days = days_evidence(refusal, PER_MINUTE, PER_DAY, SAME, [])
    assert "the day's 1,000, with Remaining 0" in window.days
    judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-QUOTA-HONOURED") == []
    assert outcomes(ledger, "LIM-REMAINING-NEAREST") == [False]


def test_the_days_figure_served_makes_a_headerless_429_the_days() -> None:
    refusal = days_429(NOW + 2000, limit=None, reset=None)
    served = [exchange(at=NOW + i) for i in range(PER_DAY)]
    assert "1,000 requests of this key served" in days_evidence(
        refusal, PER_MINUTE, PER_DAY, SAME, served + [refusal.exchange]
    )
    assert days_evidence(refusal, PER_MINUTE, PER_DAY, SAME, served[:-1]) == ""


@pytest.mark.parametrize(
    ("values", "days"),
    [
        ({"retry_after": "36000"}, True),  # asks for hours
        ({"reset": NOW + 5 * 3600}, True),  # resets hours away
        ({"retry_after": "30"}, False),  # a minute's
        ({"limit": PER_DAY, "reset": NOW + 3600}, True),
    ],
)
def test_a_429s_own_headers_say_whether_it_is_the_days(values: dict, days: bool) -> None:
    assert bool(said_by_its_headers(days_429(NOW, **values), PER_MINUTE, PER_DAY, SAME)) is days


def test_a_429_that_still_announces_quota_is_never_the_days_by_its_headers() -> None:
    refusal = snap(5, status=429, at=NOW, reset=NOW + 5 * 3600)
    assert said_by_its_headers(refusal, PER_MINUTE, PER_DAY, SAME) == ""


def test_a_day_not_reached_leaves_both_requirements_open(ledger) -> None:
    """A sliding minute that gave back too little, or a budget spent: no "passed" for a day
    the run never reached, and no verdict for the day profile."""
    day, run = spent_day(777, 0, None)
    judge_day(day, run, SAME)
    assert outcomes(ledger, "LIM-DAY-HONOURED") == []
    assert outcomes(ledger, "LIM-DAY-ENFORCED") == []
    assert "777 of its 1,000 served" in ledger.left_open["LIM-DAY-HONOURED"]
    assert "not reached" in ledger.left_open["LIM-DAY-ENFORCED"]


def test_a_day_refusing_a_windows_opening_after_a_spent_minute_keeps_the_nearest_window(
    ledger,
) -> None:
    """The response before said Remaining 0 (the minute's 429): nothing was promised."""
    refusal = days_429(NOW + 5, limit=PER_DAY, reset=NOW + 20 * 3600)
    window = SpentWindow("window 9 of the day", refusal, before=snap(0, status=429, at=NOW))
    window.days = "its X-RateLimit-Limit is the day's"
    judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-REMAINING-NEAREST") == [True]


def test_a_day_refusing_after_minute_headers_that_announced_more_is_warned(ledger) -> None:
    refusal = days_429(NOW + 5, limit=PER_DAY, reset=NOW + 20 * 3600)
    window = SpentWindow("window 9 of the day", refusal, before=snap(12, at=NOW))
    window.days = "its X-RateLimit-Limit is the day's"
    judge_window(window, PER_MINUTE, PER_DAY, SAME)
    assert outcomes(ledger, "LIM-REMAINING-NEAREST") == [False]
