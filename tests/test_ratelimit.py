"""Unit tests of `conformance.ratelimit`: reading one key's responses as a limiter's story."""

from __future__ import annotations

from conformance.client import Exchange
from conformance.ratelimit import (
    Snapshot,
    counting_problem,
    refused_within_quota,
    served_beyond_limit,
    snapshot,
)

NOW = 1_740_830_400
RESET = NOW + 30
PER_MINUTE, PER_DAY = 60, 1_000


def exchange(status: int = 200, headers: list[tuple[str, str]] | None = None) -> Exchange:
    return Exchange(
        id=1,
        key_label="spare",
        method="GET",
        url="http://petstore.test/v1/categories",
        request_headers={},
        request_body=None,
        status=status,
        response_headers=headers or [],
        response_body="[]",
        started_at=NOW,
        elapsed=0.01,
        _full_body="[]",
    )


def snap(
    remaining: int | None, *, status: int = 200, limit: int = PER_MINUTE, reset: int = RESET
) -> Snapshot:
    return Snapshot(exchange(status), limit, remaining, reset)


def falling(start: int, count: int, **kwargs) -> list[Snapshot]:
    return [snap(start - i, **kwargs) for i in range(count)]


# -- snapshot -------------------------------------------------------------------------------


def test_snapshot_reads_the_three_headers():
    ex = exchange(
        headers=[
            ("x-ratelimit-limit", "60"),
            ("X-RateLimit-Remaining", "12"),
            ("X-RateLimit-Reset", str(RESET)),
        ]
    )
    taken = snapshot(ex)
    assert (taken.limit, taken.remaining, taken.reset) == (60, 12, RESET)
    assert taken.served and taken.status == 200


def test_snapshot_of_bad_headers_knows_nothing():
    ex = exchange(headers=[("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "12")])
    taken = snapshot(ex)
    assert (taken.limit, taken.remaining, taken.reset) == (None, None, None)


def test_a_429_is_not_served():
    assert not snap(0, status=429).served


# -- counting_problem -----------------------------------------------------------------------


def test_a_steady_fall_by_one_passes():
    assert counting_problem(falling(59, 10)) is None


def test_remaining_standing_still_fails():
    problem = counting_problem([snap(40) for _ in range(5)])
    assert problem is not None and "did not count" in problem


def test_a_fall_by_two_fails():
    history = [snap(59), snap(58), snap(56), snap(55)]
    problem = counting_problem(history)
    assert problem is not None and "fell by 2" in problem


def test_one_standing_still_step_among_falls_is_tolerated():
    # A sliding window gave one request back while this one was counted.
    assert counting_problem([snap(50), snap(49), snap(49), snap(48)]) is None


def test_a_sliding_window_giving_requests_back_is_tolerated():
    history = [snap(10, reset=RESET), snap(9, reset=RESET), snap(14, reset=RESET + 3)]
    history += [snap(13, reset=RESET + 3), snap(12, reset=RESET + 3)]
    assert counting_problem(history) is None


def test_a_new_window_resets_the_comparison():
    # 55 -> 59 would be "fell by -4"; 50 -> 59 across windows would hide a jump: neither counts.
    history = falling(52, 3) + falling(59, 3, reset=RESET + 60)
    assert counting_problem(history) is None


def test_a_jump_across_a_window_change_is_not_a_fall_by_more_than_one():
    history = [snap(59, reset=RESET), snap(58, reset=RESET), snap(40, reset=RESET + 60)]
    history += [snap(39, reset=RESET + 60)]
    assert counting_problem(history) is None


def test_a_change_of_reported_limit_resets_the_comparison():
    history = [snap(59), snap(58), snap(990, limit=PER_DAY), snap(989, limit=PER_DAY)]
    assert counting_problem(history) is None


def test_responses_that_were_not_served_are_not_compared():
    history = [snap(5), snap(5, status=400), snap(4)]
    assert counting_problem(history) is None
    history = [snap(5), snap(3, status=429), snap(2)]
    assert counting_problem(history) is None


def test_a_fall_by_two_is_caught_even_when_falls_by_one_follow():
    assert counting_problem([snap(9), snap(7), snap(6)]) is not None


def test_too_few_steps_say_nothing():
    assert counting_problem([]) is None
    assert counting_problem([snap(5)]) is None
    assert counting_problem([snap(5), snap(5)]) is None


def test_responses_without_headers_are_not_compared():
    history = [snap(None), snap(None), snap(None)]
    assert counting_problem(history) is None


# -- served_beyond_limit --------------------------------------------------------------------


def test_a_request_served_after_remaining_zero_in_the_same_window_is_caught():
    history = [snap(1), snap(0), snap(0)]
    assert served_beyond_limit(history) is history[2]


def test_a_request_served_after_a_429_with_remaining_zero_in_the_same_window_is_caught():
    history = [snap(0), snap(0, status=429), snap(0)]
    assert served_beyond_limit(history) is history[2]


def test_a_429_after_remaining_zero_is_right():
    assert served_beyond_limit([snap(1), snap(0), snap(0, status=429)]) is None


def test_serving_again_in_a_new_window_is_right():
    history = [snap(0), snap(0, status=429), snap(59, reset=RESET + 60)]
    assert served_beyond_limit(history) is None


def test_serving_while_remaining_is_above_zero_is_right():
    assert served_beyond_limit(falling(5, 5)) is None


# -- refused_within_quota -------------------------------------------------------------------


def test_a_429_while_the_per_minute_quota_remains_is_caught():
    history = [snap(10), snap(9), snap(9, status=429)]
    assert refused_within_quota(history, PER_MINUTE) is history[2]


def test_a_429_while_the_per_day_quota_remains_is_legitimate():
    # The headers report the daily limit: the per-minute limit may refuse whatever it says.
    history = [snap(900, limit=PER_DAY), snap(899, limit=PER_DAY, status=429)]
    assert refused_within_quota(history, PER_MINUTE) is None


def test_a_429_after_remaining_zero_is_not_refused_within_quota():
    history = [snap(1), snap(0), snap(0, status=429)]
    assert refused_within_quota(history, PER_MINUTE) is None


def test_a_429_in_another_window_is_not_compared():
    history = [snap(10), snap(0, status=429, reset=RESET + 60)]
    assert refused_within_quota(history, PER_MINUTE) is None


def test_without_a_known_per_minute_figure_nothing_is_refused_within_quota():
    assert refused_within_quota([snap(10), snap(9, status=429)], None) is None


def test_a_429_after_a_refused_request_is_not_compared():
    history = [snap(10, status=400), snap(9, status=429)]
    assert refused_within_quota(history, PER_MINUTE) is None
