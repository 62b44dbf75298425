"""The day profile's scenario: a key spends its day, window after window, until the day refuses.

After everything the full profile does, the exhaustion key (the spare, else the main key) opens
each minute window with one request and spends what that response announced, plus one, at the
window's start: the bulk as a wave, the last few one at a time (`conformance.burst.window`), so
that a promise broken at the last request is seen as one. Each window is judged as it ends
(`conformance.judging.spent_window`). A refusal that comes at a window's opening, after the minute's
Reset and the 429's Retry-After had passed, or one that asks to wait longer than a minute, is
the day's. Recovery after the day resets, hours away, is not waited for.

On a real minute a free plan's day takes 17 windows (about 17 minutes), pro 34, business 100;
a target with a shortened minute takes seconds.
"""

from __future__ import annotations

from conformance.burst.spender import PATH, Announce
from conformance.burst.window import spend_window
from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.checks import cannot_check, expect
from conformance.judging.day import Day, judge_day
from conformance.judging.ratelimit import ServerClock, Snapshot, snapshot
from conformance.judging.response_checks import retry_after_seconds
from conformance.judging.spent_window import SpentWindow, judge_window
from conformance.settings import Settings, day_windows, describe_day_plan


def spend_the_day(client: ConformanceClient, settings: Settings, announce: Announce) -> Day:
    """Spend the exhaustion key's day and judge it; returns what was seen."""
    per_minute, per_day = settings.plan_limits
    if per_minute is None or per_day is None:
        reason = "the enterprise figures were not given (--requests-per-minute, --requests-per-day)"
        for id_ in ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED"):
            cannot_check(id_, reason)
        return Day(settings.exhaustion_key, 0, 0, stopped=reason)
    day = Day(settings.exhaustion_key, per_minute, per_day)
    most = day_windows(per_minute, per_day)
    announce(describe_day_plan(settings))
    while len(day.windows) < most and not day.refusal and not day.stopped:
        opening = open_window(client, day)
        window = SpentWindow(f"window {len(day.windows) + 1} of the day", opening)
        day.windows.append(window)
        if opening.served:
            window.spent = spend_window(client, day.label, wanted(opening, day), opening)
        clock = ServerClock.of(client.exchanges)
        if judge_window(window, per_minute, per_day, clock):
            day.stopped = f"{window.name} served beyond its quota (LIM-429-WHEN-EXCEEDED)"
        served = served_of(day, client.exchanges)
        announce(progress(day, served, most))
        if not opening.served:
            day.refusal = opening  # refused at a window's opening: the day's refusal
        elif long_refusal(window):
            day.refusal = window.refused
        elif served > per_day + per_minute:
            break  # a whole minute's quota beyond the day: never enforced, evidently
    judge_day(day, client.exchanges, ServerClock.of(client.exchanges))
    if day.refusal is not None:
        announce(not_waited_for(day))
    return day


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
    """Wait for the next minute window, then send its first request. A refusal of it, once
    the previous window's Reset and Retry-After have passed, is the day's."""
    if day.windows:
        previous = day.windows[-1]
        until = next_window_in(previous, day.per_minute, ServerClock.of(client.exchanges))
        client.wait(day.label, until, "the next minute window of its day")
    exchange = client.get(PATH, key=day.label, retry_on_429=False, pace=False)
    opening = snapshot(exchange)
    if not opening.served and day.windows:
        judge_retry_after(day.windows[-1], opening)
    return opening


def next_window_in(window: SpentWindow, per_minute: int, clock: ServerClock) -> float:
    """Seconds until the window after `window`: its minute's Reset where the headers show it,
    and no sooner than its refusal's Retry-After (which the client holds the key for anyway)."""
    resets = [
        clock.seconds_until(s.reset)
        for s in window.history
        if s.limit == per_minute and s.reset is not None
    ]
    plausible = [wait for wait in resets if wait <= LONGEST_WAIT]
    return max(plausible, default=0.0)


def wanted(opening: Snapshot, day: Day) -> int:
    """What the window's opening announced is left, and one beyond: the minute's Remaining, or
    the day's where it is smaller than a minute's quota; a minute's quota where the headers
    report the day and more is left of it."""
    left = opening.remaining if opening.remaining is not None else day.per_minute - 1
    if opening.limit != day.per_minute:
        left = min(left, day.per_minute - 1)
    return left + 1


def long_refusal(window: SpentWindow) -> bool:
    """A 429 that asks to wait longer than a minute's window: the day's, not the minute's."""
    refused = window.refused
    if refused is None or refused.status != 429:
        return False
    wait = retry_after_seconds(refused.exchange)
    return wait is not None and wait > LONGEST_WAIT


def judge_retry_after(previous: SpentWindow, opening: Snapshot) -> None:
    """A window's opening refused after the previous 429's Retry-After had passed: the day
    refused behind a Retry-After a minute away, which makes clients retry in vain."""
    refused = previous.refused
    wait = retry_after_seconds(refused.exchange) if refused is not None else None
    if refused is None or wait is None:
        return
    expect(
        "LIM-RETRY-AFTER-HONEST",
        False,
        f"a request sent once Retry-After ({wait:.0f} s) had passed should be served, got "
        f"{opening.status}: the day refused behind a Retry-After of the minute",
        opening.exchange,
    )


def served_of(day: Day, exchanges: list[Exchange]) -> int:
    return sum(1 for e in day.exchanges(exchanges) if 200 <= e.status < 300)


def progress(day: Day, served: int, most: int) -> str:
    """One line per window: what it spent, what the run has served (`served`, the key's
    requests served so far), what is left of the day."""
    window = day.windows[-1]
    ending = f", then {window.refused.status}" if window.refused is not None else ""
    return (
        f"{day.label} key, window {len(day.windows)} of at most {most}: {window.served} served"
        f"{ending}; {served:,} served in the run, {max(0, day.per_day - served):,} of the "
        f"day's {day.per_day:,} left"
    )
