"""Unit tests of conformance.httpclient.blanket: a front refusing every caller is recognised once,
over the last minute, it refused each caller that sent and the run spent most of that minute
waiting; a front refusing one caller, or now and then, is not. And the Pacer stops waiting."""

from __future__ import annotations

import random

import pytest

from conformance.httpclient.backoff import Pacer, TargetThrottled
from conformance.httpclient.blanket import BLANKET_SECONDS, Blanket


def blanket_after(
    refusals: list[tuple[float, str, float]], served: list[tuple[float, str]] = ()
) -> Blanket:
    """A Blanket that saw `refusals` (when, label, wait imposed) and answers `served` (when,
    label), in the order of time."""
    blanket = Blanket()
    events = [(when, 0, label, wait) for when, label, wait in refusals]
    events += [(when, 1, label, 0.0) for when, label in served]
    for when, kind, label, wait in sorted(events):
        if kind:
            blanket.answered(label, when)
        else:
            blanket.refused(label, 403, when, wait)
    return blanket


def back_off(label: str, start: float, waits: tuple[float, ...] = (1, 2, 4, 8, 16)) -> list:
    """One label's refusals in a streak of exponential back-off from `start`."""
    refusals, now = [], start
    for wait in waits:
        refusals.append((now, label, wait))
        now += wait
    return refusals


def test_every_caller_refused_for_most_of_a_minute_is_a_blanket_refusal():
    """HAProxy flagging the address after the spare key's burst: requests without a key back
    off for 31 s, a few go through, then the main key's back off as long."""
    refusals = back_off("spare", 0.0, (1,)) + back_off("none", 1.0) + back_off("main", 33.0)
    blanket = blanket_after(refusals, served=[(32.5, "none"), (32.6, "main")])
    assert blanket.reason(BLANKET_SECONDS - 1) is None  # not yet a minute
    reason = blanket.reason(BLANKET_SECONDS)
    assert reason is not None
    assert "keys 'main' and 'spare' and requests without a key were refused (403)" in reason
    # A minute on, the spare key's one refusal is out of it: the callers named are the minute's.
    assert "key 'main' and requests without a key were" in (blanket.reason(61.0) or "")


def test_a_blanket_refusal_late_in_a_long_run_is_recognised_in_its_own_minute():
    """A front that refused the spare key's burst at the start, let the run through for ten
    minutes, then flagged the address: the minute that counts is the last one."""
    early = back_off("spare", 0.0, (1,))
    late = back_off("none", 600.0) + back_off("main", 631.0)
    blanket = blanket_after(early + late, served=[(t, "main") for t in range(2, 600, 5)])
    assert blanket.reason(661.0) is not None


def test_a_caller_the_front_let_through_is_no_blanket_refusal():
    """A front keyed by something else than the address: the main key is never refused."""
    refusals = back_off("spare", 0.0, (30, 60)) + back_off("none", 1.0, (30, 60))
    blanket = blanket_after(refusals, served=[(t, "main") for t in range(5, 100, 10)])
    assert blanket.reason(100.0) is None


def test_refusals_now_and_then_are_no_blanket_refusal():
    """A front limiting a rate (HAProxy's per-second deny): every caller refused once in a
    while, a second's wait each time, over minutes."""
    refusals = [(when, label, 1.0) for when in range(0, 120, 10) for label in ("main", "none")]
    served = [(when + 2.0, label) for when, label, _ in refusals]
    blanket = blanket_after(refusals, served=served)
    assert blanket.reason(121.0) is None


def test_the_pacer_stops_waiting_for_a_front_that_refuses_every_caller():
    """Requests without a key and on the main key, each refused by the front and backed off
    from: the Pacer says why it waits no more once the blanket shows, not at the key bound."""

    class Clock:
        time = 0.0

        def now(self) -> float:
            return self.time

        def sleep(self, seconds: float) -> None:
            self.time += seconds

    clock = Clock()
    pacer = Pacer(clock, random.Random(1), max_wait=120)
    with pytest.raises(TargetThrottled, match="a front refuses every caller of this run") as ended:
        for _ in range(20):
            for label in ("none", "main"):
                wait = pacer.on_429(label, None, status=403)
                pacer.on_front_refusal(label, 403, wait)
                pacer.wait_until_ready(label)
    assert "key 'main' and requests without a key were refused (403)" in str(ended.value)
    assert BLANKET_SECONDS <= clock.time < 2 * BLANKET_SECONDS
