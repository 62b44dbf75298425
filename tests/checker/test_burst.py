"""Unit tests of `conformance.burst.spender` and its `reach`: how waves are sized, and that spending
a quota stops as soon as the answer is known, at the first 429 or at the first request served
beyond the limit (or once this machine has shown it cannot send the quota in one window)."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from email.utils import formatdate

import httpx
import pytest

from conformance.burst.reach import CPU_PER_REQUEST, HTTPX_CPU_PER_REQUEST, Processes
from conformance.burst.spender import MAX_CONNECTIONS, Spender, fallback_wave, plan_wave
from conformance.burst.waves import Burst, Rate, Wave
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.ratelimit import earlier_in_its_window, snapshot

KEY = "sk-burst-test-key"


@pytest.mark.parametrize(
    ("requests", "round_trip", "seconds_left", "connections"),
    [
        (59, 0.002, 58.0, 1),  # free plan on the loopback: one connection is plenty
        (1_001, 0.1, 59.0, 4),  # business plan, a server 100 ms away, a fresh real minute
        (10_001, 0.1, 59.0, 39),  # enterprise plan of 10,000 a minute, 100 ms away
        (301, 0.04, 9.5, 3),  # pro plan, a 10-second minute, a slow server
    ],
)
def test_a_wave_is_sized_to_land_in_half_the_time_left(
    requests, round_trip, seconds_left, connections
):
    wave = plan_wave(requests, round_trip, seconds_left)
    assert wave == Wave(requests, connections)
    # each connection opens with one round trip, then sends one request per round trip; the
    # checker's own work per request comes on top
    landing = (
        round_trip + math.ceil(requests / connections) * round_trip + requests * CPU_PER_REQUEST
    )
    assert landing <= (seconds_left - 1) / 2


def test_no_wave_when_the_window_is_nearly_over_or_out_of_reach():
    assert plan_wave(59, 0.002, 0.9) is None
    assert plan_wave(100_001, 0.1, 59.0) is None  # would need more than MAX_CONNECTIONS
    assert plan_wave(100_001, 0.001, 59.0) is None  # 30 s of one process's CPU in 29 s
    assert plan_wave(MAX_CONNECTIONS, 1.0, 300.0) == Wave(MAX_CONNECTIONS, 1)


@pytest.mark.parametrize(
    ("requests", "round_trip", "seconds_left", "connections"),
    [
        (60, 0.1, 1.2, 8),  # a short minute on a busy machine: eight, as ever
        (10_001, 0.3, 58.0, 53),  # 100 ms away, measured at 300 ms on a busy runner
        (100_001, 0.1, 59.0, MAX_CONNECTIONS),
        (3, 0.1, 10.0, 3),
    ],
)
def test_a_wave_that_cannot_be_planned_gets_the_connections_its_round_trips_need(
    requests, round_trip, seconds_left, connections
):
    assert plan_wave(requests, round_trip, seconds_left) is None or requests == 3
    assert fallback_wave(requests, round_trip, seconds_left) == Wave(requests, connections)


class FixedWindowServer:
    """A limiter behind a mock transport: a fixed window from its creation, `limit + slack`
    requests admitted per window (or all, when not enforcing); headers report `reported`."""

    def __init__(self, limit=60, *, slack=0, enforce=True, window=60.0, reported=None):
        self.limit, self.slack, self.enforce, self.window = limit, slack, enforce, window
        self.reported = reported or limit
        self.start = time.time()
        self.used = 0
        self.statuses: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            now = time.time()
            admitted = not self.enforce or self.used < self.limit + self.slack
            self.used += admitted
            remaining = max(0, self.limit - self.used)
            reset = self.start + self.window
            if self.reported != self.limit:  # the day's window: reports it, enforces the minute
                remaining, reset = self.reported - self.used, self.start + 86_400
            headers = {
                "Date": formatdate(now, usegmt=True),
                "X-RateLimit-Limit": str(self.reported),
                "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(math.ceil(reset)),
            }
            status = 200 if admitted else 429
            if not admitted:
                headers["Retry-After"] = str(math.ceil(self.start + self.window - now))
            self.statuses.append(status)
            return httpx.Response(status, headers=headers, json=[])


def spend(server: FixedWindowServer, per_minute: int = 60):
    client = ConformanceClient(
        "http://petstore.test/v1",
        {"main": KEY},
        transport=httpx.MockTransport(server),
        async_transport=httpx.MockTransport(server),
    )
    probe = snapshot(client.get("/categories", key="main"))
    return Spender(client, "main", per_minute).spend(probe), client


def test_a_correct_limit_is_spent_to_exactly_one_429():
    burst, _ = spend(FixedWindowServer())
    assert burst.refused is not None and burst.refused.status == 429
    assert burst.beyond is None
    assert burst.requests == 60  # 59 left after the probe, and the one beyond
    assert burst.refused.remaining == 0


def test_a_limit_never_enforced_is_evident_after_the_quota_and_one_more():
    server = FixedWindowServer(enforce=False)
    burst, _ = spend(server)
    assert burst.refused is None and burst.beyond is not None
    assert burst.requests == 60  # no further request was needed to know
    assert 429 not in server.statuses


def test_a_limit_one_late_is_caught_in_the_same_wave():
    burst, _ = spend(FixedWindowServer(slack=1))
    assert burst.beyond is not None and burst.beyond.remaining == 0


def test_headers_of_the_day_window_spend_up_to_two_minutes_of_quota():
    burst, _ = spend(FixedWindowServer(reported=1_000))  # enforces 60 a minute, shows the day
    assert burst.refused is not None and burst.refused.status == 429
    never = FixedWindowServer(reported=1_000, enforce=False)
    burst, _ = spend(never)
    assert burst.beyond is not None
    assert burst.requests <= 2 * 60 + 4


def test_every_request_of_the_burst_is_recorded_and_counted():
    burst, client = spend(FixedWindowServer())
    assert client.requests_per_key() == {"main": 61}  # the probe and the burst
    assert len(client.exchanges) == 61
    assert {e.key_label for e in client.exchanges} == {"main"}
    assert all(KEY not in e.curl() for e in client.exchanges)


def spent_before(server: FixedWindowServer, requests: int) -> FixedWindowServer:
    server.used = requests
    return server


# Servers made when the test runs: a window opens when its server is made.
BEYOND_CASES = {
    "never enforced": (
        lambda: FixedWindowServer(enforce=False),
        "61 requests of this key were served in the window",
    ),
    "one late": (lambda: FixedWindowServer(slack=1), "with a limit of 60"),
    # five requests of this key went before the burst: it sees only 56 served
    "one late, seen with Remaining 0": (
        lambda: spent_before(FixedWindowServer(slack=1), 5),
        "2 requests were served in the window of X-RateLimit-Reset",
    ),
    "day window shown": (
        lambda: FixedWindowServer(reported=1_000, enforce=False),
        "served within a minute, more than 2 minutes' quota of the plan",
    ),
}


@pytest.mark.parametrize("case", BEYOND_CASES)
def test_the_failure_names_the_evidence_of_the_request_beyond(case):
    make_server, evidence = BEYOND_CASES[case]
    burst, client = spend(make_server())
    why = burst.beyond_evidence
    assert evidence in why
    assert "limit of 60" not in why or why.startswith("61 ")  # never "60 served, limit 60"


def served(reset: int, remaining: int, at: float):
    exchange = Exchange(
        id=0,
        key_label="main",
        method="GET",
        url="http://petstore.test/v1/categories",
        request_headers={},
        request_body=None,
        status=200,
        response_headers=[
            ("X-RateLimit-Limit", "60"),
            ("X-RateLimit-Remaining", str(remaining)),
            ("X-RateLimit-Reset", str(reset)),
        ],
        response_body="[]",
        started_at=at,
        elapsed=0.001,
    )
    return snapshot(exchange)


def test_three_short_minutes_of_quota_in_seconds_are_no_excess_where_headers_show_the_minute():
    # A 3-second minute (a test server's) serves its 60 three times over in nine seconds: each
    # window within its Limit, so nothing was served beyond it, however quick it was overall.
    start = math.floor(time.time()) - 30
    history = [
        served(start + 3 * w + 3, 59 - i, start + 3 * w + i * 0.01)
        for w in range(3)
        for i in range(60)
    ]
    spender = Spender(ConformanceClient("http://petstore.test/v1", {"main": KEY}), "main", 60)
    burst = Burst(history)
    assert spender.served_beyond_quota(burst, 60) is False
    assert burst.beyond is None


def test_a_request_its_window_served_before_the_probe_counts_against_the_quota():
    """A limit plus one: the key's request before the probe (the one that showed the window
    whole), then the probe and a wave of 59 whose last two came together, both saying
    Remaining 0. The burst alone saw 60 served; with the earlier one its window served 61."""
    start = math.floor(time.time()) - 30
    reset = start + 3
    earlier = served(reset, 59, start + 0.01)
    probe = served(reset, 58, start + 0.02)
    wave = [served(reset, max(0, 57 - i), start + 0.03 + min(i, 57) * 0.001) for i in range(59)]
    assert earlier_in_its_window([earlier, probe, *wave], probe) == [earlier]
    spender = Spender(ConformanceClient("http://petstore.test/v1", {"main": KEY}), "main", 60)
    alone = Burst([probe, *wave])
    assert spender.served_beyond_quota(alone, 60) is False
    burst = Burst([probe, *wave], before=[earlier])
    assert spender.served_beyond_quota(burst, 60) is True
    assert burst.beyond_evidence.startswith("61 requests of this key were served")


def history_of_one_window(requests: int, window: float) -> list:
    start = time.time()
    reset = math.ceil(start + window)
    return [served(reset, 59 - i % 60, start + i * 0.001) for i in range(requests)]


def spender_on(cpus: int) -> Spender:
    spender = Spender(ConformanceClient("http://petstore.test/v1", {"main": KEY}), "main", 60)
    spender.reach.cpus = cpus
    return spender


# A wave's rate: requests a second, from how many processes, with the senders' CPU per request,
# on how many connections, begun in a fresh window and at full width (or not).
# The target held back the first (0.1 ms each at 640 a second: 6 % busy); the checker the second.
SERVER_BOUND = Rate(640.0, 1, 0.0001, MAX_CONNECTIONS, fresh=True, full_width=True)
CHECKER_BOUND = Rate(812.5, 1, 0.0012, 8, fresh=True, full_width=True)


def test_a_quota_this_machine_cannot_land_in_one_window_is_out_of_reach_with_the_figures():
    spender = spender_on(cpus=1)
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [SERVER_BOUND, CHECKER_BOUND]
    assert spender.reach.beyond_reach(burst, 60_000) is True
    assert (
        "60,001 requests inside one window of 60 s need 2,000 requests a second to land within "
        "half of it" in burst.out_of_reach
    )
    assert "reached 812 at most, on 8 connections from the start of a fresh window" in (
        burst.out_of_reach
    )
    assert "(over 2 waves: 64 connections at 640 a second, then 8 connections at 812" in (
        burst.out_of_reach
    )


def test_a_quota_within_reach_or_a_refusal_keeps_the_burst_going():
    spender = spender_on(cpus=1)
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [dataclasses.replace(SERVER_BOUND, per_second=2_100.0)]
    assert spender.reach.beyond_reach(burst, 60_000) is False  # 2,000 a second land it
    # Fast enough for the whole window, not for half of it: a wave lands only if it starts at
    # the window's first instant, which a busy machine's do not.
    burst.rates = [dataclasses.replace(SERVER_BOUND, per_second=1_200.0)]
    assert spender.reach.beyond_reach(burst, 60_000) is True
    burst.out_of_reach = ""
    burst.rates = []
    assert spender.reach.beyond_reach(burst, 60_000) is False  # nothing timed yet
    burst.rates = [dataclasses.replace(SERVER_BOUND, per_second=10.0)]
    burst.refused = burst.history[-1]
    assert spender.reach.beyond_reach(burst, 60_000) is False  # a refusal tells more than a rate
    assert burst.out_of_reach == ""


def test_a_wave_too_slow_for_its_senders_goes_next_from_more_processes():
    spender = spender_on(cpus=2)
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [CHECKER_BOUND]
    assert spender.reach.beyond_reach(burst, 60_000) is False  # a second process may send
    processes = spender.reach.processes(burst, 60_000)
    assert processes == Processes(2, 2, CHECKER_BOUND.cpu_per_request)
    # 36 s of CPU from each even then: more than half the window, so the wave goes unplanned
    wave = plan_wave(60_001, 0.001, 59.0, processes) or fallback_wave(
        60_001, 0.001, 59.0, processes
    )
    assert wave.processes == 2
    # Two processes reached no more: as many as this process may run on; out of reach now.
    burst.rates.append(Rate(930.0, 2, 0.0021, 16, fresh=True, full_width=True))
    assert spender.reach.beyond_reach(burst, 60_000) is True
    assert "reached 930 at most, on 16 connections from 2 processes" in burst.out_of_reach


def test_a_wave_the_target_held_back_gets_no_more_processes():
    spender = spender_on(cpus=2)
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [SERVER_BOUND]
    assert spender.reach.processes(burst, 60_000).fewest == 1
    assert spender.reach.beyond_reach(burst, 60_000) is True  # more senders would not help


@pytest.mark.parametrize(
    ("requests", "per_request", "processes", "connections"),
    [
        (60_001, 0.0003, 1, 6),  # 18 s of one process's CPU in a 29 s landing: one
        (100_001, 0.0003, 2, 8),  # 30 s: two, 15 s each
        (100_001, 0.0007, None, None),  # 35 s each even from two: no plan
    ],
)
def test_the_plan_says_how_many_processes(requests, per_request, processes, connections):
    wave = plan_wave(requests, 0.001, 59.0, Processes(1, 2, per_request))
    if processes is None:
        assert wave is None
        fallback = fallback_wave(requests, 0.001, 59.0, Processes(1, 2, per_request))
        assert fallback.processes == 2  # what goes anyway: from as many as may send
    else:
        assert wave == Wave(requests, connections, processes)


def test_through_a_proxy_a_wave_goes_from_one_process_and_a_slow_one_is_out_of_reach():
    client = ConformanceClient("http://petstore.test/v1", {"main": KEY}, proxy="http://127.0.0.1:9")
    spender = Spender(client, "main", 60)
    assert spender.reach.cpus == 1  # httpx sends through the proxy, from this process
    # and costs more CPU a request than the burst's own transport, until a wave measures it
    first = spender.reach.processes(Burst(history_of_one_window(1, window=60)), 60_000)
    assert (
        first == Processes(1, 1, HTTPX_CPU_PER_REQUEST) and HTTPX_CPU_PER_REQUEST > CPU_PER_REQUEST
    )
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [CHECKER_BOUND]
    assert spender.reach.beyond_reach(burst, 60_000) is True  # no process more to send from


# A wave of 24 connections begun with two seconds of its window left: it ran into the next
# window, so no 429 could come, and it measured 950 a second.
LATE = Rate(950.0, 1, 0.0001, 24)


def test_a_wave_begun_late_in_a_window_is_not_the_machines_best():
    spender = spender_on(cpus=1)
    burst = Burst(history_of_one_window(300, window=60))
    burst.rates = [LATE]
    assert spender.reach.beyond_reach(burst, 60_000) is False
    assert burst.out_of_reach == ""
    # in a fresh window, but narrower than the rate measured per connection calls for
    narrow = dataclasses.replace(SERVER_BOUND, per_second=500.0, connections=32, full_width=False)
    burst.rates.append(narrow)
    assert spender.reach.beyond_reach(burst, 60_000) is False
    # at full width from the start of a fresh window: that tells, and only that counts
    burst.rates.append(SERVER_BOUND)
    assert spender.reach.beyond_reach(burst, 60_000) is True
    said = burst.out_of_reach
    assert "reached 640 at most, on 64 connections from the start of a fresh window" in said
    assert "3 waves: 24 connections at 950 a second (begun late in a window: not counted)" in said


def slow_wave_late_in_a_window() -> tuple[FixedWindowServer, ConformanceClient, Burst]:
    """A pro plan's 10-second window met with two seconds left, and the first wave, begun
    there: it ran into the next window and halfway through it, reaching 20 a second on 24
    connections, with no 429."""
    server = FixedWindowServer(limit=300, window=10)
    client = ConformanceClient(
        "http://petstore.test/v1",
        {"main": KEY},
        transport=httpx.MockTransport(server),
        async_transport=httpx.MockTransport(server),
    )

    def answer(elapsed: float, used: int):
        server.start, server.used = time.time() - elapsed, used
        return snapshot(client.get("/categories", key="main"))

    burst = Burst([answer(8, 0)])
    burst.add([answer(8, 1), answer(0, 0), answer(5, 200)])  # the wave's, in short
    burst.waves, burst.rates = [Wave(299, 24)], [Rate(20.0, 1, 0.0003, 24)]
    return server, client, burst


def test_after_a_slow_wave_the_next_goes_at_full_width_in_a_fresh_window(monkeypatch):
    server, client, burst = slow_wave_late_in_a_window()
    waits = []

    def the_window_ends(label, seconds, reason):
        waits.append(reason)
        server.start, server.used = time.time(), 0
        return 0.0

    monkeypatch.setattr(client, "wait", the_window_ends)
    wave = Spender(client, "main", 300).next_wave(burst, 300, 1_204)
    assert waits == ["a fresh window to spend its quota in"]
    assert wave is not None and wave.fresh and wave.full_width
    assert wave.requests == 300  # the fresh window's quota left, and one more
    # 301 in a window of 10 s need 30 a second: at 20 a second on 24, 36 connections
    assert wave.connections >= math.ceil(30 / (20.0 / 24))


def test_a_window_that_frees_one_request_at_its_reset_is_waited_out_whole(monkeypatch):
    server, client, burst = slow_wave_late_in_a_window()
    waits = []

    def a_sliding_log(label, seconds, reason):
        # the first Reset frees the oldest request: the next one is a second away
        waits.append(seconds)
        server.start, server.used = time.time() - (9 if len(waits) == 1 else 0), 0
        return 0.0

    monkeypatch.setattr(client, "wait", a_sliding_log)
    wave = Spender(client, "main", 300).next_wave(burst, 300, 1_204)
    assert len(waits) == 2 and waits[1] >= 10  # then a whole window without the key's requests
    assert wave is not None and wave.fresh


def test_a_burst_begun_late_begins_late_again_after_a_429_in_its_last_second():
    """A busy machine landed the late wave's 429 in the window's last second: after the quiet
    window the sliding log needs, the burst goes late again (else the window after its reset
    would be spent a whole window on, and a front refilled continuously would be full again)."""
    server = FixedWindowServer(window=10.0)
    client = ConformanceClient(
        "http://petstore.test/v1", {"main": KEY}, transport=httpx.MockTransport(server)
    )
    steps: list[str] = []
    client.wait = lambda key, seconds, reason: steps.append(f"wait: {reason}")  # type: ignore[method-assign]
    original_get = client.get

    def get(path, **kwargs):
        steps.append("probe")
        return original_get(path, **kwargs)

    client.get = get  # type: ignore[method-assign]

    def go_late(retry_on_429: bool = True) -> bool:
        steps.append(f"late again{'' if retry_on_429 else ', a refusal not retried'}")
        return True

    spender = Spender(client, "main", 60, go_late=go_late)
    spender.start_again(Burst([snapshot(original_get("/categories", key="main"))]))
    assert steps == [
        "wait: a whole window without its requests (a sliding window forgets them one by one)",
        "late again, a refusal not retried",
        "probe",
    ]
