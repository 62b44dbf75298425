"""Unit tests of `conformance.judging.ratelimit`: reading one key's responses as a limiter's story,
per window and whatever order they arrived in, fairly to fixed and sliding windows alike."""

from __future__ import annotations

import random
from email.utils import formatdate

import pytest

from conformance.httpclient.client import Exchange
from conformance.judging.ratelimit import (
    ServerClock,
    Snapshot,
    counting,
    detours,
    of_the_key,
    own_count,
    refused_after_quota,
    refused_within_quota,
    reset_went_back,
    served_beyond_limit,
    settled_in_its_window,
    snapshot,
    windows,
)

NOW = 1_740_830_400.0
RESET = NOW + 30
PER_MINUTE, PER_DAY = 60, 1_000
SAME = ServerClock(0.0)  # the server keeps our time


def exchange(
    status: int = 200,
    headers: list[tuple[str, str]] | None = None,
    *,
    at: float = NOW,
    path: str = "/v1/categories",
    label: str = "spare",
    date: float | None = None,
) -> Exchange:
    date_header = [("Date", formatdate(at if date is None else date, usegmt=True))]
    return Exchange(
        id=1,
        key_label=label,
        method="GET",
        url=f"http://petstore.test{path}",
        request_headers={},
        request_body=None,
        status=status,
        response_headers=date_header + (headers or []),
        response_body="[]",
        started_at=at,
        elapsed=0.01,
        _full_body="[]",
    )


def snap(
    remaining: int | None,
    *,
    status: int = 200,
    limit: int = PER_MINUTE,
    reset: float = RESET,
    at: float = NOW,
    path: str = "/v1/categories",
) -> Snapshot:
    return Snapshot(exchange(status, at=at, path=path), limit, remaining, reset)


def tally_of(history: list[Snapshot]):
    return counting(history, SAME)


def falling(start: int, count: int, **kwargs) -> list[Snapshot]:
    return [snap(start - i, at=NOW + i * 0.01, **kwargs) for i in range(count)]


# -- snapshot -------------------------------------------------------------------------------


def test_snapshot_reads_the_three_headers():
    ex = exchange(
        headers=[
            ("x-ratelimit-limit", "60"),
            ("X-RateLimit-Remaining", "12"),
            ("X-RateLimit-Reset", str(int(RESET))),
        ]
    )
    taken = snapshot(ex)
    assert (taken.limit, taken.remaining, taken.reset) == (60, 12, RESET)
    assert taken.served and taken.counted and taken.complete


def test_snapshot_keeps_a_fraction_of_a_second_in_reset():
    ex = exchange(
        headers=[
            ("X-RateLimit-Limit", "60"),
            ("X-RateLimit-Remaining", "12"),
            ("X-RateLimit-Reset", "1795377056.8905156"),
        ]
    )
    assert snapshot(ex).reset == pytest.approx(1795377056.8905156)


@pytest.mark.parametrize("reset", ["5", "0", "1795377056890"])
def test_a_reset_that_is_no_unix_time_times_nothing(reset):
    """@fastify/rate-limit's default Reset is the seconds until the reset: read as a moment in
    1970 it made the burst take every 429 for one in its window's last second (LIM-RESET-UNIX-TIME
    judges the header; the burst and the windows must not use it)."""
    headers = [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0")]
    taken = snapshot(exchange(429, [*headers, ("X-RateLimit-Reset", reset)]))
    assert (taken.limit, taken.remaining, taken.reset) == (60, 0, None)


@pytest.mark.parametrize(("before", "kept"), [(3600, False), (2, False), (1, True), (0, True)])
def test_a_reset_before_its_date_times_nothing(before: int, kept: bool):
    """A Reset in the past (a window's start, a local time taken for UTC) fails
    LIM-RESET-UNIX-TIME; timed by it, every 429 seemed to come in its window's last second.
    Within the second Date and Reset are each rounded by, it is the window's end."""
    headers = [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0")]
    reset = ("X-RateLimit-Reset", str(int(NOW) - before))
    taken = snapshot(exchange(429, [*headers, reset]))
    assert (taken.reset is not None) is kept


def test_snapshot_of_bad_headers_knows_nothing():
    ex = exchange(headers=[("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "12")])
    taken = snapshot(ex)
    assert (taken.limit, taken.remaining, taken.reset) == (None, None, None)
    assert not taken.complete


def test_a_429_is_neither_served_nor_counted_but_a_400_is_counted():
    assert not snap(0, status=429).served and not snap(0, status=429).counted
    assert snap(3, status=400).counted and not snap(3, status=400).served


# -- the server's clock, and what a sliding window cannot have changed unseen --------------


def settled(seen: Snapshot) -> bool:
    return settled_in_its_window([seen], SAME, seen)


def test_a_response_a_second_before_its_reset_is_settled():
    assert settled(snap(5, at=RESET - 1.5))
    assert not settled(snap(5, at=RESET - 0.5))


def test_a_remote_servers_clock_is_read_from_its_freshest_date_erring_late():
    # The server runs an hour behind us; its Date is truncated, and often a second stale.
    fresh = exchange(at=NOW + 0.02, date=NOW - 3600)
    stale = exchange(at=NOW + 0.5, date=NOW - 3601)
    truncated = exchange(at=NOW + 0.9, date=NOW - 3600)
    clock = ServerClock.of([stale, truncated, fresh])
    assert clock.offset == pytest.approx(-3600.03)
    assert clock.uncertainty == 2.0
    seen = Snapshot(fresh, PER_MINUTE, 5, NOW - 3597)
    assert clock.handled_from(seen) == pytest.approx(NOW - 3600.01)
    assert clock.handled_by(seen) == pytest.approx(NOW - 3598)
    assert settled_in_its_window([seen], clock, seen)
    later = Snapshot(fresh, PER_MINUTE, 5, NOW - 3598)
    assert not settled_in_its_window([later], clock, later)


def test_a_server_on_this_machine_keeps_our_time_however_stale_its_date():
    # uvicorn on a busy machine refreshes its cached Date late: every Date may lag a second.
    lagging = [exchange(at=NOW + i * 0.3, date=NOW + i * 0.3 - 1.6) for i in range(10)]
    local = [Exchange(**{**e.__dict__, "url": "http://127.0.0.1:8000/v1/x"}) for e in lagging]
    assert ServerClock.of(local) == ServerClock(0.0, 0.0)
    assert ServerClock.of(lagging).offset == pytest.approx(-1.61)  # remote: only a lower bound


def test_without_date_the_server_is_taken_to_keep_our_time():
    undated = Exchange(**{**exchange().__dict__, "response_headers": []})
    assert ServerClock.of([undated]).offset == 0.0


# -- counting -------------------------------------------------------------------------------


def test_a_steady_fall_by_one_passes():
    tally = tally_of(falling(59, 10))
    assert tally.judged and tally.problem is None


def test_responses_in_any_order_count_alike():
    history = falling(59, 30)
    random.Random(7).shuffle(history)
    assert tally_of(history).problem is None


def test_remaining_standing_still_fails():
    problem = tally_of([snap(40, at=NOW + i) for i in range(5)]).problem
    assert problem is not None and "does not count" in problem


def test_remaining_falling_by_two_fails():
    history = [snap(58 - 2 * i, at=NOW + i * 0.01) for i in range(6)]
    problem = tally_of(history).problem
    assert problem is not None and "2.0 per request" in problem


def test_a_server_past_its_limit_stays_at_zero_without_a_counting_fault():
    history = falling(5, 6) + [snap(0, at=NOW + 1) for _ in range(5)]
    assert tally_of(history).problem is None


def test_requests_the_handler_refused_count_too():
    history = [snap(59 - i, status=400 if i % 2 else 201, at=NOW + i * 0.01) for i in range(8)]
    assert tally_of(history).problem is None


def test_answers_whose_remaining_cannot_be_read_are_steps_it_fell_across_unseen():
    """Every third answer says Remaining -1 or 1e400 (issue 51): the others, read alone, fell
    by 1.5 a request, but across every request sent they fell by one."""
    history = falling(59, 30)
    for i in range(1, 29, 3):  # the first and the last read: 29 over 19 steps alone
        headers = [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", ("-1", "1e400")[i % 2])]
        garbled = exchange(
            200, [*headers, ("X-RateLimit-Reset", str(int(RESET)))], at=NOW + i * 0.01
        )
        history[i] = snapshot(garbled)
    tally = tally_of(history)
    assert tally.judged and tally.problem is None
    assert tally.steps == 29


def test_a_sliding_window_giving_requests_back_near_its_reset_is_not_judged():
    # Requests of a burst one window ago expire one by one within Reset's last second: each new
    # request is balanced by one given back, and Remaining stands still. Not a fault.
    tail = [snap(3, at=RESET - 0.9 + i * 0.1) for i in range(6)]
    assert tally_of(falling(59, 5) + tail).problem is None


def test_a_few_requests_are_not_enough_to_judge():
    assert not tally_of(falling(59, 3)).judged
    assert tally_of(falling(59, 3)).problem is None


def test_windows_are_judged_apart():
    history = falling(59, 5) + falling(59, 5, reset=RESET + 60)
    assert tally_of(history).problem is None


# -- enforcement ----------------------------------------------------------------------------


def test_a_second_request_served_at_zero_is_beyond_the_limit():
    history = falling(3, 4) + [snap(0, at=NOW + 0.5)]
    assert served_beyond_limit(history, True, SAME) is history[-1]


def test_two_requests_in_flight_together_both_at_zero_are_within_the_limit():
    """Flask-Limiter and slowapi read Remaining as they answer: the last two of a quota, in
    flight together, both say 0 when each was counted before the other answered."""
    history = falling(3, 3) + [snap(0, at=NOW + 0.5), snap(0, at=NOW + 0.505)]
    assert served_beyond_limit(history, True, SAME) is None


def test_one_request_served_at_zero_is_within_the_limit():
    assert served_beyond_limit(falling(3, 4), True, SAME) is None


def test_when_remaining_does_not_count_only_the_number_served_tells():
    # Remaining double counts: zeros galore, but not more served than the limit.
    history = [snap(max(0, 58 - 2 * i), at=NOW + i * 0.01) for i in range(60)]
    assert served_beyond_limit(history, False, SAME) is None
    history.append(snap(0, at=NOW + 0.9))
    assert served_beyond_limit(history, False, SAME) is history[-1]


def test_unsettled_responses_do_not_prove_a_limit_broken():
    history = falling(3, 4) + [snap(0, at=RESET - 0.5)]
    assert served_beyond_limit(history, True, SAME) is None


def test_a_429_while_quota_was_left_is_refused_within_quota():
    history = falling(3, 3) + [snap(0, status=429, at=NOW + 0.5)]
    assert refused_within_quota(history, PER_MINUTE, SAME) is history[-1]


@pytest.mark.parametrize("bad", ["-1", "1e400"])
def test_a_429_after_an_answer_whose_remaining_cannot_be_read_proves_nothing(bad: str):
    """The answer that would have said Remaining 0 said -1 or 1e400 (LIM-HEADERS-VALID's
    failure, issue 51): whether its window showed 0 before the 429 is unknown."""
    headers = [
        ("X-RateLimit-Limit", str(PER_MINUTE)),
        ("X-RateLimit-Remaining", bad),
        ("X-RateLimit-Reset", str(int(RESET))),
    ]
    garbled = snapshot(exchange(200, headers, at=NOW + 0.04))
    assert garbled.remaining is None
    refusal = snap(0, status=429, at=NOW + 0.5)
    assert refused_within_quota([*falling(3, 3), garbled, refusal], PER_MINUTE, SAME) is None
    # One sent after the refusal was answered could not have said 0 before it.
    late = snapshot(exchange(200, headers, at=NOW + 0.6))
    assert refused_within_quota([*falling(3, 3), refusal, late], PER_MINUTE, SAME) is refusal


def test_a_429_after_the_quota_was_spent_is_honest_in_any_order():
    history = falling(3, 4) + [snap(0, status=429, at=NOW + 0.02)]
    random.Random(3).shuffle(history)
    assert refused_within_quota(history, PER_MINUTE, SAME) is None


def test_a_block_past_the_spent_window_is_not_a_refusal_within_quota():
    # The quota spent, then a 429 whose Reset names the end of a block 3 s on: a window of
    # its own, of refusals that say Remaining 0 (seen in CI, retry-after-too-short's double).
    history = falling(3, 4) + [snap(0, status=429, reset=RESET + 3, at=NOW + 0.05)]
    assert len(windows(history, SAME)) == 2
    assert refused_within_quota(history, PER_MINUTE, SAME) is None
    early = [snap(5, status=429, reset=RESET + 3, at=NOW + 0.05)]
    assert refused_within_quota(falling(3, 4) + early, PER_MINUTE, SAME) is early[0]


def test_a_429_under_daily_headers_is_not_judged_against_remaining():
    history = falling(900, 3, limit=PER_DAY) + [snap(897, status=429, limit=PER_DAY)]
    assert refused_within_quota(history, PER_MINUTE, SAME) is None


# -- a Reset that jitters by a second ----------------------------------------------------------


def jittering(start: int, count: int) -> list[Snapshot]:
    """One fixed window whose Reset is read as now + a TTL in whole seconds: it wanders
    between two values, back and forth, as the time's fraction goes round."""
    return [snap(start - i, reset=RESET + (i % 3 == 1), at=NOW + i * 0.01) for i in range(count)]


def test_a_reset_that_jitters_by_a_second_is_still_one_window():
    history = jittering(59, 20)
    assert len(windows(history, SAME)) == 1
    assert tally_of(history).problem is None  # split in two, each half would fall by 1.5


def test_a_429_whose_reset_jittered_still_follows_its_remaining_0():
    history = jittering(3, 4) + [snap(0, status=429, reset=RESET + 1, at=NOW + 0.05)]
    assert refused_within_quota(history, PER_MINUTE, SAME) is None


def test_a_sliding_windows_reset_moving_on_is_another_window():
    earlier = falling(59, 5)
    moved = falling(55, 5, reset=RESET + 1)
    later = [
        Snapshot(exchange(at=NOW + 1 + i * 0.01), PER_MINUTE, s.remaining, s.reset)
        for i, s in enumerate(moved)
    ]
    assert len(windows(earlier + later, SAME)) == 2


def test_a_whole_quota_served_before_a_429_proves_it_honoured():
    history = falling(59, 60) + [snap(0, status=429, at=NOW + 1)]
    assert refused_after_quota(history, PER_MINUTE, SAME) is history[-1]
    assert refused_after_quota(history[:30] + history[-1:], PER_MINUTE, SAME) is None


# -- one count per caller ---------------------------------------------------------------------


def detour(first: int, other: int, back: int) -> list[Snapshot]:
    return [
        snap(first, at=NOW),
        snap(other, at=NOW + 0.01, path="/v1/store/orders"),
        snap(back, at=NOW + 0.02),
    ]


def test_one_counter_across_endpoints_shows_no_problem():
    [found] = detours(detour(40, 39, 38), SAME)
    assert found.problem is None


def test_a_quota_per_endpoint_shows_as_a_detour_that_did_not_count():
    [found] = detours(detour(40, 59, 39), SAME)
    assert "the request on GET /v1/store/orders did not count" in found.problem
    [same_level] = detours(detour(40, 41, 39), SAME)  # the two counts happen to be close
    assert same_level.problem is not None


def test_a_detour_late_in_its_window_or_through_an_unknown_path_is_not_judged():
    late = [
        Snapshot(exchange(at=RESET - 0.5 + i * 0.01), PER_MINUTE, r, RESET)
        for i, r in enumerate((40, 59, 39))
    ]
    assert detours(late, SAME) == []
    unknown = detour(40, 40, 39)
    unknown[1] = snap(40, at=NOW + 0.01, path="/v1/no-such-path")
    assert detours(unknown, SAME) == []


def test_a_window_per_endpoint_shows_as_reset_going_back():
    history = [
        snap(50, reset=RESET),
        snap(59, reset=RESET + 12, path="/v1/pets/1", at=NOW + 0.1),
        snap(49, reset=RESET, at=NOW + 0.2),
    ]
    problem = reset_went_back(history)
    assert problem is not None and "went back" in problem
    assert reset_went_back(jittering(59, 10)) is None


def test_the_key_history_leaves_out_refusals_and_other_keys_and_is_in_send_order():
    late = exchange(at=NOW + 2, label="main")
    early = exchange(at=NOW + 1, label="main")
    refused = [exchange(status, at=NOW, label="main") for status in (401, 403)]
    history = of_the_key([late, *refused, exchange(at=NOW, label="spare"), early], "main")
    assert [s.exchange for s in history] == [early, late]


# -- statuses where no header reads ---------------------------------------------------------


def bare(count: int, *, start: float = NOW, status: int = 200) -> list[Snapshot]:
    """`count` answers without headers, 0.01 s apart (a burst)."""
    return [Snapshot(exchange(status, at=start + i * 0.01), None, None, None) for i in range(count)]


def test_a_429_after_fewer_requests_than_a_minutes_quota_is_within_it():
    history = bare(40) + bare(1, start=NOW + 0.5, status=429)
    own = own_count(history, history[-1])
    assert own.sent_in_minute == 41 and own.within(PER_MINUTE, PER_DAY)
    assert not own.after(PER_MINUTE)


def test_a_429_once_a_minute_let_a_whole_quota_through_is_after_it():
    history = bare(60) + bare(1, start=NOW + 1, status=429)
    own = own_count(history, history[-1])
    assert own.after(PER_MINUTE) and not own.within(PER_MINUTE, PER_DAY)


def test_requests_older_than_a_minute_count_for_neither():
    history = bare(60) + bare(10, start=NOW + 61) + bare(1, start=NOW + 62, status=429)
    own = own_count(history, history[-1])
    assert own.sent_in_minute == 11 and own.counted_in_minute == 10
    assert own.within(PER_MINUTE, None) and not own.within(PER_MINUTE, 50)


def test_a_refusal_after_an_earlier_one_may_be_its_penalty_and_is_not_judged():
    history = bare(5) + bare(1, start=NOW + 0.2, status=429) + bare(1, start=NOW + 3, status=429)
    assert not own_count(history, history[-1]).within(PER_MINUTE, PER_DAY)


def headerless_429(at: float) -> Snapshot:
    return Snapshot(exchange(429, at=at), None, None, None)


def test_a_headerless_429_inside_what_the_headers_announced_breaks_their_promise():
    """A front with a rolling count refuses 67 requests into 12.5 s on a 10 s minute: the
    service's window had reset, and its last answer said 13 were left. A minute's count of the
    key (more than a quota) must not read that as a window spent."""
    first = [snap(19 - i, at=NOW + i * 0.1, reset=NOW + 2) for i in range(20)]
    second = [snap(59 - i, at=NOW + 3 + i * 0.2, reset=NOW + 12) for i in range(47)]
    history = first + second + [headerless_429(NOW + 12.5)]
    own = own_count(history, history[-1])
    assert own.after(PER_MINUTE)  # what the key's own count alone would have passed
    assert own.broken_promise(PER_MINUTE) is second[-1]
    assert own.spent_since_promise == 0


def test_requests_in_flight_after_the_promise_may_have_spent_it():
    """Three sent together after a Remaining of 3, the refusal among them: any of them may have
    been counted first, so the refusal may be the fourth after the promise."""
    promise = snap(3, at=NOW)
    wave = [snap(2, at=NOW + 0.02), snap(1, at=NOW + 0.021), snap(0, at=NOW + 0.022)]
    history = [promise, *wave, headerless_429(NOW + 0.0215)]
    history.sort(key=lambda s: s.exchange.started_at)
    refusal = next(s for s in history if s.status == 429)
    assert own_count(history, refusal).broken_promise(PER_MINUTE) is None
    fewer = [promise, wave[0], refusal]
    assert own_count(fewer, refusal).broken_promise(PER_MINUTE) is promise


def test_a_promise_of_another_window_than_the_minute_is_not_the_minute_s():
    history = [snap(500, limit=PER_DAY), headerless_429(NOW + 1)]
    assert own_count(history, history[-1]).broken_promise(PER_MINUTE) is None
    history = [snap(0), headerless_429(NOW + 1)]
    assert own_count(history, history[-1]).broken_promise(PER_MINUTE) is None
