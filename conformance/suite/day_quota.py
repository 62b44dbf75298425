"""The day profile's scenario: a key spends its day, window after window, until the day refuses.

After everything the full profile does, the exhaustion key (the spare, else the main key) opens
each minute window with one request and spends what that response announced, plus one, at the
window's start: the bulk as a wave, the last few one at a time (`conformance.burst.window`), so
that a promise broken at the last request is seen as one. Each window is judged as it ends
(`conformance.judging.spent_window`).

A window opens only once the last has surely ended: its Reset, its refusal's Retry-After, or
the plan's whole minute where the server says neither. A refusal is the day's only on evidence
(`conformance.judging.day_refusal`): the day's figure served, the 429's own headers, or a
refusal at a window's opening that persists across a whole fresh minute. Where windows come back
partly (a sliding one), each opens a whole window after the last served request. The day is spent
until it refuses, is a minute's quota past its figure, or the run's deadline comes. Recovery
after the day resets, hours away, is not waited for.

On a real minute a free plan's day takes 17 windows (about 17 minutes), pro 34, business 100;
a target with a shortened minute takes seconds.
"""

from __future__ import annotations

import math
import time

from conformance.burst.reach import window_length
from conformance.burst.spender import PATH, Announce
from conformance.burst.window import spend_window
from conformance.console.progress import Track
from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.checks import cannot_check, expect
from conformance.judging.day import Day, judge_day
from conformance.judging.day_refusal import days_evidence, said_by_its_headers, served_before
from conformance.judging.ratelimit import JITTER, MINUTE, ServerClock, Snapshot, snapshot
from conformance.judging.response_checks import retry_after_seconds
from conformance.judging.spent_window import SpentWindow, judge_window
from conformance.settings import Settings, day_windows, describe_day_plan

MOST_WINDOWS_FACTOR = 3
"""Windows the day may take, over what a fixed minute needs: sliding windows give back less."""


def spend_the_day(
    client: ConformanceClient, settings: Settings, announce: Announce, track: Track | None = None
) -> Day:
    """Spend the exhaustion key's day and judge it; returns what was seen. Each window's line
    goes to `track` with the day served so far (a bar on a terminal), else to `announce`."""
    per_minute, per_day = settings.plan_limits
    if per_minute is None or per_day is None:
        reason = "the enterprise figures were not given (--requests-per-minute, --requests-per-day)"
        for id_ in ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED"):
            cannot_check(id_, reason)
        return Day(settings.exhaustion_key, 0, 0, stopped=reason)
    day = Day(settings.exhaustion_key, per_minute, per_day)
    most = MOST_WINDOWS_FACTOR * day_windows(per_minute, per_day)
    announce(describe_day_plan(settings))
    track = track or announcing(announce)
    track(served_of(day, client.exchanges), per_day, "")
    while not day.refusal and not day.stopped:
        if len(day.windows) >= most:
            day.stopped = f"{most} windows were spent and the day neither refused nor was exceeded"
            break
        spend_next_window(client, day, track)
        if served_of(day, client.exchanges) > per_day + per_minute:
            break  # a whole minute's quota beyond the day: never enforced, evidently
    judge_day(day, client.exchanges, ServerClock.of(client.exchanges))
    if day.refusal is not None:
        announce(not_waited_for(day))
    return day


def announcing(announce: Announce) -> Track:
    """Each window's line announced, where no bar shows the day's progress."""
    return lambda served, of, line: announce(line) if line else None


def spend_next_window(client: ConformanceClient, day: Day, track: Track) -> None:
    """Open the next window once the last has ended, spend what its opening announced, judge
    it, and take its refusal for the day's where the evidence says so."""
    opening = open_window(client, day)
    before = day.windows[-1].history[-1] if day.windows else None
    window = SpentWindow(f"window {len(day.windows) + 1} of the day", opening, before=before)
    day.windows.append(window)
    if opening.served:
        window.spent = spend_window(client, day.label, wanted(opening, day), opening)
    clock = ServerClock.of(client.exchanges)
    refusal = window.refused
    window.days = days_evidence(refusal, day.per_minute, day.per_day, clock, client.exchanges)
    if judge_window(window, day.per_minute, day.per_day, clock):
        day.stopped = f"{window.name} served beyond its quota (LIM-429-WHEN-EXCEEDED)"
    note_partial_comeback(day, window)
    take_refusal(day, window, clock)
    served = served_of(day, client.exchanges)
    track(served, day.per_day, progress(day, served))


def take_refusal(day: Day, window: SpentWindow, clock: ServerClock) -> None:
    """The window's refusal is the day's on evidence: its own headers say so, or it persists
    across a whole fresh minute. The day's figure served is evidence too, but one a minute's
    refusal can meet by chance (a day of 100,000 is a thousand minutes of 1,000 to the
    request), so it is confirmed the same way: once more after a whole fresh minute."""
    refusal = window.refused
    if refusal is None:
        return
    said = said_by_its_headers(refusal, day.per_minute, day.per_day, clock)
    pending = day.unexplained
    if said:
        day.refusal, day.evidence = refusal, said
    elif pending is not None and not window.opening.served and persisted(pending, refusal, clock):
        day.refusal = pending
        day.evidence = "its key was refused again after a whole fresh minute"
    elif window.days or not window.opening.served:
        day.unexplained = refusal if window.opening.served or pending is None else pending
    else:
        day.unexplained = None  # served again, then refused mid-window: the minute's


def persisted(first: Snapshot, again: Snapshot, clock: ServerClock) -> bool:
    return clock.handled_from(again) - first.received >= MINUTE


def note_partial_comeback(day: Day, window: SpentWindow) -> None:
    """A window opened after its minute's Reset with less than a whole quota back is a sliding
    one: from then on each window opens a whole minute after the last served request."""
    opening = window.opening
    fresh = opening.served and opening.limit == day.per_minute and opening.remaining is not None
    if fresh and not day.sliding and len(day.windows) > 1 and not window.days:
        day.sliding = opening.remaining < day.per_minute - 1  # type: ignore[operator]


def not_waited_for(day: Day) -> str:
    """What the day profile leaves untested, said where it stops: the day's reset is hours away."""
    refusal = day.refusal
    wait = retry_after_seconds(refusal.exchange) if refusal is not None else None
    when = f" ({wait / 3600:.1f} h on, by its Retry-After)" if wait else ""
    return (
        f"{day.label} key: refused for its day; whether it is served again once the day "
        f"resets{when} is not tested: the run does not wait hours for it"
    )


def open_window(client: ConformanceClient, day: Day) -> Snapshot:
    """Wait until the last window has ended, then send the next one's first request."""
    if day.windows:
        until = next_window_in(day, client.exchanges, ServerClock.of(client.exchanges))
        client.wait(day.label, until, "the next minute window of its day")
    exchange = client.get(PATH, key=day.label, retry_on_429=False, pace=False)
    opening = snapshot(exchange)
    if not opening.served and day.windows:
        judge_retry_after(day, opening, client.exchanges)
    return opening


def next_window_in(day: Day, exchanges: list[Exchange], clock: ServerClock) -> float:
    """Seconds until the last window has surely ended: its minute's Reset where the headers show
    it; after a refusal, no sooner than its Retry-After, and where the server says neither, the
    plan's whole minute after it. After a refusal not yet explained, a whole fresh minute; where
    windows come back partly (a sliding one), a whole window after the last served request."""
    window = day.windows[-1]
    waits = [
        clock.seconds_until(s.reset)
        for s in window.history
        if s.limit == day.per_minute and s.reset is not None
    ]
    waits = [wait for wait in waits if wait <= LONGEST_WAIT]
    now = time.time()
    refusal = window.refused
    if refusal is not None:
        retry_after = retry_after_seconds(refusal.exchange)
        if retry_after is not None and retry_after <= LONGEST_WAIT:
            waits.append(refusal.received + retry_after - now)
        if not waits:
            waits.append(refusal.received + MINUTE - now)
    if day.unexplained is not None:
        waits.append(day.unexplained.received + MINUTE + JITTER - now)
    if day.sliding:
        served = [e for e in day.exchanges(exchanges) if 200 <= e.status < 300]
        if served:
            last = served[-1].started_at + served[-1].elapsed
            minute = window_length([snapshot(e) for e in day.exchanges(exchanges)], clock)
            waits.append(last + minute + JITTER - now)
    return max(waits, default=0.0)


def wanted(opening: Snapshot, day: Day) -> int:
    """What the window's opening announced is left, and one beyond: the minute's Remaining, or
    a minute's quota where the headers report the day (a day that is spent refuses the first;
    one that is never enforced shows it at once)."""
    if opening.limit != day.per_minute or opening.remaining is None:
        return day.per_minute
    return opening.remaining + 1


def judge_retry_after(day: Day, opening: Snapshot, exchanges: list[Exchange]) -> None:
    """A window's opening refused after the previous 429's Retry-After had passed, where that
    429 was the minute's with the day not yet spent: its Retry-After sent clients back too soon
    (the day refused behind a Retry-After of the minute, or the minute itself did)."""
    previous = day.windows[-1]
    refused = previous.refused
    wait = retry_after_seconds(refused.exchange) if refused is not None else None
    if refused is None or wait is None or wait > LONGEST_WAIT or previous.days:
        return
    if served_before(exchanges, refused) >= day.per_day:
        return  # the day was spent by then: both limits refused, and the minute's spoke
    expect(
        "LIM-RETRY-AFTER-HONEST",
        False,
        f"a request sent once Retry-After ({wait:.0f} s) had passed should be served, got "
        f"{opening.status}: refused behind a Retry-After of the minute",
        opening.exchange,
    )


def served_of(day: Day, exchanges: list[Exchange]) -> int:
    return sum(1 for e in day.exchanges(exchanges) if 200 <= e.status < 300)


def progress(day: Day, served: int) -> str:
    """One line per window: what it spent, what the run has served (`served`, the key's
    requests served so far), what is left of the day, and where windows come back partly,
    how many more they will take at what they give."""
    window = day.windows[-1]
    ending = f", then {window.refused.status}" if window.refused is not None else ""
    left = max(0, day.per_day - served)
    line = (
        f"{day.label} key, window {len(day.windows)} of its day: {window.served} served"
        f"{ending}; {served:,} served in the run, {left:,} of the day's {day.per_day:,} left"
    )
    if day.refusal is not None:
        return f"{line}; refused for the day ({day.evidence})"
    if day.unexplained is not None:
        return f"{line}; whether that refusal is the day's is asked again a whole minute on"
    if day.sliding and left:
        given = max(1, round(sum(w.served for w in day.windows) / len(day.windows)))
        line += (
            f"; its minute comes back partly (a sliding window): each window now opens a whole "
            f"minute after the last served request, about {math.ceil(left / given)} more at "
            f"the {given} a window gives"
        )
    return line
