"""Unit tests of LIM-PER-KEY's judgement (`conformance.suite.exhaustion`): the main key's answers
just after the spare key's 429, one request where its headers speak of its quota, a group sent
together where none do, so that a limiter shared by both keys and refilled continuously cannot
pass by the time a busy machine took to send one request."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.judging import checks
from conformance.judging.ratelimit import Snapshot
from conformance.settings import Settings
from conformance.suite.exhaustion import check_other_key_unaffected, given_back

NOW = 1_740_830_400.0
PRO = Settings(base_url="http://petstore.test/v1", api_key="k" * 16, plan="pro")  # 300 a minute


def answer(status: int, *, at: float, key: str = "main") -> Snapshot:
    exchange = Exchange(
        id=int(at * 1e6),
        key_label=key,
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
    return Snapshot(exchange, None, None, None)


SPARE_429 = answer(429, at=NOW, key="spare")
BEFORE = answer(200, at=NOW - 1)


@pytest.fixture(autouse=True)
def ledger() -> checks.Ledger:
    return checks.start_run()


def outcomes(ledger: checks.Ledger) -> list[bool]:
    return [r.passed for r in ledger.results if r.requirement_id == "LIM-PER-KEY"]


def group(statuses: list[int], *, after: float = 0.005) -> list[Snapshot]:
    return [answer(status, at=NOW + after) for status in statuses]


def test_a_shared_bucket_that_gave_a_few_back_refuses_the_rest_of_the_group(ledger) -> None:
    """A token bucket per address, three requests refilled by the time the group came."""
    check_other_key_unaffected(BEFORE, group([200] * 3 + [429] * 9), SPARE_429, PRO)
    assert outcomes(ledger) == [False]
    message = next(r.message for r in ledger.results if not r.passed)
    assert "got 429 (9 of 12 sent together)" in message


def test_a_group_served_whole_at_once_proves_limits_per_key(ledger) -> None:
    check_other_key_unaffected(BEFORE, group([200] * 12), SPARE_429, PRO)
    assert outcomes(ledger) == [True]


def test_a_group_served_whole_too_late_to_tell_leaves_it_untested(ledger) -> None:
    """Three seconds on, a pro plan's rate (five a second) gives back sixteen: twelve served
    prove nothing, and the run says why rather than pass it."""
    check_other_key_unaffected(BEFORE, group([200] * 12, after=3.0), SPARE_429, PRO)
    assert outcomes(ledger) == []
    assert "3.0 s after the spare key's 429" in ledger.unavailable["LIM-PER-KEY"]


def test_one_request_where_the_headers_speak_is_judged_as_before(ledger) -> None:
    check_other_key_unaffected(BEFORE, group([429], after=3.0), SPARE_429, PRO)
    assert outcomes(ledger) == [False]


def test_no_room_before_leaves_it_untested(ledger) -> None:
    check_other_key_unaffected(BEFORE, [], SPARE_429, PRO)
    assert outcomes(ledger) == [] and "LIM-PER-KEY" in ledger.unavailable


@pytest.mark.parametrize(("seconds", "back"), [(0.0, 1), (0.19, 1), (0.2, 2), (2.2, 12)])
def test_what_a_limiter_at_the_plans_rate_gives_back(seconds: float, back: int) -> None:
    assert given_back(seconds, 300) == back
