"""Unit tests of `conformance.judging.reset_promise`: a window that never resets is told from the
key's own refusals, each sent past the Reset the one before announced, whatever the delay
between them (issue 51: a loaded machine's run had them and ended with no verdict)."""

from __future__ import annotations

import math

import httpx
import pytest

from conformance.burst.spender import Spender
from conformance.burst.waves import Burst
from conformance.httpclient.client import ConformanceClient, RunOver, TargetThrottled
from conformance.judging import checks
from conformance.judging.ratelimit import ServerClock, Snapshot, snapshot
from conformance.judging.reset_promise import broken_reset, judge_broken_reset
from conformance.judging.verdict import NOT_CONFORMANT, decide
from conformance.settings import Settings
from conformance.suite import exhaustion
from tests.checker.test_ratelimit import NOW, exchange

SAME = ServerClock(0.0)  # the server keeps our time
WINDOW = 10.0  # the double's minute in the issue's runs
KEY_RUN = NOW  # when the key's run began; the issue's times count from it


def refusal(at: float, reset: float | None = None, *, headers: bool = True) -> Snapshot:
    """A 429 sent `at` seconds into the key's run, its Reset a window ahead unless given."""
    when = KEY_RUN + at
    reset = math.ceil(when + WINDOW) if reset is None else reset
    rate = [
        ("X-RateLimit-Limit", "60"),
        ("X-RateLimit-Remaining", "0"),
        ("X-RateLimit-Reset", str(int(reset))),
    ]
    retry = [("Retry-After", str(max(1, math.ceil(reset - when))))]
    return snapshot(exchange(429, (rate if headers else []) + retry, at=when))


def served(at: float, remaining: int = 59, reset: float | None = None) -> Snapshot:
    when = KEY_RUN + at
    reset = math.ceil(when + WINDOW) if reset is None else reset
    rate = [
        ("X-RateLimit-Limit", "60"),
        ("X-RateLimit-Remaining", str(remaining)),
        ("X-RateLimit-Reset", str(int(reset))),
    ]
    return snapshot(exchange(200, rate, at=when))


def the_issues_run() -> list[Snapshot]:
    """The burst's 429 0.8 s before the Reset it announced; the next request a whole window
    later; then refusals past each announced reset, 25.6 s to 107.2 s into the key's run."""
    window_end = KEY_RUN + 5
    burst = [served(0.5 + i * 0.05, 59 - i, window_end) for i in range(60)]
    burst_429 = refusal(4.2, window_end)
    # Each Reset a window ahead of its refusal, in whole seconds (truncated).
    times = (15.2, 25.6, 36.4, 46.8, 57.1, 73.9, 107.2)
    later = [refusal(at, math.floor(KEY_RUN + at + WINDOW)) for at in times]
    return [*burst, burst_429, *later]


def test_the_issues_loaded_run_proves_the_window_never_reset():
    history = the_issues_run()
    found = broken_reset(history, SAME)
    assert found is not None
    # The first two resets passed and refused are enough: 25.6 s into the key's run.
    sent = [s.exchange.started_at - KEY_RUN for s in found.refusals]
    assert sent == pytest.approx([4.2, 15.2, 25.6])


def test_the_same_shape_recorded_on_this_machine_under_load_too():
    """reset-moves-ahead beside three other checks and six spinning processes on two cores,
    before the fix: no verdict at the bound for one key, 140 s into the run. Each refusal's
    time into the run, and the Reset it announced."""
    recorded = [(14.5, 15.2), (25.6, 36.2), (37.5, 48.2), (49.0, 59.2), (60.4, 71.2)]
    history = [refusal(at, KEY_RUN + reset) for at, reset in recorded]
    found = broken_reset(history, SAME)
    assert found is not None
    assert found.last.exchange.started_at - KEY_RUN == pytest.approx(37.5)


def test_it_fails_reset_honest_and_decides_not_conformant():
    ledger = checks.start_run()
    checks.set_current_test("test_rate_limits.py::test_exhaustion_429_retry_after_and_reset")
    assert judge_broken_reset(the_issues_run(), SAME)
    (result,) = [r for r in ledger.results if r.requirement_id == "LIM-RESET-HONEST"]
    assert not result.passed
    assert "never reset" in result.message and "Reset (" in result.message
    assert result.exchange is not None
    assert result.exchange.started_at - KEY_RUN == pytest.approx(25.6)
    verdict = decide(ledger.results, no_verdict_reason="key 'spare' was refused on end")
    assert verdict.verdict == NOT_CONFORMANT


def test_whatever_the_delay_between_the_refusals():
    slow = [refusal(0.0), refusal(60.0), refusal(185.0)]  # a minute, then two, between them
    assert broken_reset(slow, SAME) is not None
    quick = [refusal(0.0), refusal(10.1), refusal(21.05)]  # each just past its reset
    assert broken_reset(quick, SAME) is not None


def test_one_reset_passed_and_refused_is_not_enough():
    assert broken_reset([refusal(0.0), refusal(11.0)], SAME) is None


def test_refusals_sent_before_their_reset_prove_nothing():
    """A client that came back early is refused rightly, however often."""
    early = [refusal(0.0, KEY_RUN + 30), refusal(5.0, KEY_RUN + 30), refusal(20.0, KEY_RUN + 30)]
    assert broken_reset(early, SAME) is None


def test_a_request_served_between_them_shows_the_window_came_back():
    history = [refusal(0.0), refusal(11.0), served(15.0), refusal(22.0)]
    assert broken_reset(history, SAME) is None


def test_a_request_served_in_flight_beside_the_last_refusal_may_have_taken_its_place():
    """A sliding window gives one request back at its Reset: a request sent after the last
    refusal but answered first may have taken it."""
    last = refusal(22.0)
    taken = served(22.001)
    assert taken.exchange.started_at < last.received
    assert broken_reset([refusal(0.0), refusal(11.0), last, taken], SAME) is None


def test_a_refusal_that_promises_no_window_back_starts_the_chain_again():
    """The day's 429 (its Reset hours away) is a limit the key may really have reached."""
    days = refusal(11.0, KEY_RUN + 11 + 86_400)
    assert broken_reset([refusal(0.0), days, refusal(22.0), refusal(33.0)], SAME) is None
    assert broken_reset([refusal(0.0), days, refusal(22.0), refusal(33.0), refusal(44.0)], SAME)


def test_refusals_made_in_front_of_the_service_are_not_its_promises():
    history = [refusal(0.0), refusal(11.0, headers=False), refusal(22.0, headers=False)]
    assert broken_reset(history, SAME) is None


def test_a_remote_server_whose_clock_may_lag_ours_is_read_at_its_soonest():
    """Handled `offset` seconds from our clock at the soonest: a request sent a second after a
    reset by our clock, to a server two seconds behind, was not past it."""
    behind = ServerClock(-2.0, 2.0)
    assert broken_reset([refusal(0.0), refusal(11.0), refusal(22.0)], behind) is None
    assert broken_reset([refusal(0.0), refusal(13.0), refusal(26.0)], behind) is not None


def test_the_burst_ends_on_the_proof_though_its_429_came_in_its_windows_last_second():
    """The burst's 429 came 0.8 s before its Reset, where nothing can be told: the spender
    would go on to the next window, but the key's later refusals (its probes and retries)
    already prove that window never comes."""
    history = the_issues_run()
    client = ConformanceClient(
        "http://petstore.test/v1",
        {"spare": "k" * 16},
        transport=httpx.MockTransport(lambda request: httpx.Response(200)),
    )
    burst = Burst(history[:60])
    burst.add([history[60]])  # the burst's 429
    spender = Spender(client, "spare", 60)
    record = client._receiver.recorder._exchanges  # what the run's requests recorded
    record.extend(s.exchange for s in history[:61])
    assert not spender.decided(burst)  # in its window's last second: not told
    record.extend(s.exchange for s in history[61:63])
    assert spender.decided(burst)


@pytest.mark.parametrize(
    ("refusals", "stop", "judged"),
    [
        (3, TargetThrottled("key 'spare' has been refused (429) on end for 99 s"), True),
        (2, TargetThrottled("key 'spare' has been refused (429) on end for 99 s"), False),
        (3, RunOver("the run's deadline of 300 s (--deadline) passed"), False),
    ],
)
def test_a_key_refused_past_the_bound_is_judged_on_its_proof(
    monkeypatch: pytest.MonkeyPatch, refusals: int, stop: TargetThrottled, judged: bool
):
    """Past the bound for one key, the run had no verdict: where the key's refusals prove its
    window never reset, the scenario fails LIM-RESET-HONEST and the run goes on; where they do
    not, or the run may send nothing more, it stops as before."""
    history = the_issues_run()[: 60 + refusals]
    client = ConformanceClient(
        "http://petstore.test/v1",
        {"spare": "k" * 16},
        transport=httpx.MockTransport(lambda request: httpx.Response(200)),
    )
    client._receiver.recorder._exchanges.extend(s.exchange for s in history)

    def refused_on_end(*args: object) -> None:
        raise stop

    monkeypatch.setattr(exhaustion, "spend_and_recover", refused_on_end)
    ledger = checks.start_run()
    settings = Settings("http://petstore.test/v1", "m" * 16, spare_api_key="k" * 16)
    if judged:
        exhaustion.exhaust_and_recover(client, settings, lambda message: None)
    else:
        with pytest.raises(type(stop)):
            exhaustion.exhaust_and_recover(client, settings, lambda message: None)
    failed = [r for r in ledger.results if r.requirement_id == "LIM-RESET-HONEST"]
    assert [r.passed for r in failed] == ([False] if refusals == 3 else [])
