"""Judging a window spent from its start: the full profile's second window (after the reset
its exhaustion waits for) and each window of the day profile.

Its opening response announced what the window has left (`X-RateLimit-Remaining`); the spender
sent that, and one beyond, the last few one at a time (`conformance.burst.window`). Judged as
the exhaustion judges its burst (LIM-429-WHEN-EXCEEDED, LIM-QUOTA-HONOURED, fair to sliding
windows and a window's last second), and against the opening's promise: a refusal before the
window served what its opening announced, whoever made it (the service, or a limiter in front
of it refilling continuously), breaks the quota the headers promised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.judging.checks import expect
from conformance.judging.ratelimit import (
    ServerClock,
    Snapshot,
    counting,
    excess,
    refused_after_quota,
    refused_within_quota,
    settled_in_its_window,
)


@dataclass
class SpentWindow:
    """One window spent from its start: its opening response, and what was spent after it
    (the requests its opening announced were left, and one beyond)."""

    name: str  # "window 3 of the day", for the messages
    opening: Snapshot
    spent: list[Snapshot] = field(default_factory=list)
    days: str = ""  # why its refusal is the day's (conformance.judging.day_refusal), if it is
    before: Snapshot | None = None  # the key's last response before it opened (the day's)

    @property
    def history(self) -> list[Snapshot]:
        return [self.opening, *self.spent]

    @property
    def refused(self) -> Snapshot | None:
        return first_refusal(self.history)

    @property
    def served(self) -> int:
        return sum(1 for s in self.history if s.served)


def judge_window(window: SpentWindow, per_minute: int, per_day: int, clock: ServerClock) -> bool:
    """LIM-429-WHEN-EXCEEDED and LIM-QUOTA-HONOURED in one window of the day; True where it
    served beyond its quota (the fault is evident: spending more proves nothing). Responses
    whose headers report the day's window are the day's to judge (LIM-DAY-ENFORCED)."""
    history = [s for s in window.history if s.limit != per_day or per_day == per_minute]
    tally = counting(history, clock)
    holds = not tally.judged or tally.problem is None
    found = excess(history, holds, clock)
    if found is not None:
        expect(
            "LIM-429-WHEN-EXCEEDED",
            False,
            f"{window.name}: a request beyond the limit must be answered 429, but it was served: "
            f"{found.evidence}",
            found.seen.exchange,
        )
        return True
    refused = settled_429(history, clock)
    if refused is not None:
        expect(
            "LIM-429-WHEN-EXCEEDED",
            True,
            f"{window.name}: a request beyond it got 429",
            refused.exchange,
        )
    if window.days:
        judge_nearest_window(window, per_minute, per_day)
    elif not judge_promise(window, per_minute):
        judge_window_quota(window.name, history, per_minute, clock, holds)
    return False


def judge_nearest_window(window: SpentWindow, per_minute: int, per_day: int) -> None:
    """The day refused in this window: a refusal of the day, not a broken minute promise. Its
    own headers must not announce the minute's quota left (LIM-QUOTA-HONOURED); its opening's,
    where they reported the minute, should have announced no more than the day had left, or
    clients that trust X-RateLimit-Remaining are refused within it (LIM-REMAINING-NEAREST)."""
    opening, refusal = window.opening, window.refused
    if refusal is None:
        return
    if refusal.limit == per_minute and refusal.remaining:
        expect(
            "LIM-QUOTA-HONOURED",
            False,
            f"{window.name}: a request within the announced quota must be served: the day's "
            f"429 ({window.days}) said X-RateLimit-Remaining: {refusal.remaining} of the "
            f"minute's {per_minute} (a refusal for the day must not hide behind the minute's "
            "headers)",
            refusal.exchange,
        )
        return
    if not opening.served:
        judge_refused_opening(window, per_minute)
        return
    if opening.limit == per_day != per_minute:
        expect(
            "LIM-REMAINING-NEAREST",
            True,
            f"{window.name}: its headers reported the day, the window closest to its end",
            opening.exchange,
        )
        return
    if opening.limit != per_minute or opening.remaining is None:
        return
    served = sum(1 for s in window.spent if s.served)
    expect(
        "LIM-REMAINING-NEAREST",
        served >= opening.remaining,
        f"{window.name}: its opening response said X-RateLimit-Remaining: {opening.remaining} "
        f"of the minute's {per_minute}, yet the day refused after {served} more were served "
        f"({window.days}): the headers should report the window closest to its end"
        if served < opening.remaining
        else f"{window.name}: the day refused once what its headers announced was served",
        refusal.exchange,
    )


def judge_refused_opening(window: SpentWindow, per_minute: int) -> None:
    """The day refused a window's first request: the response before it announced what was
    left; a minute's Remaining of 1 or more there was more than the day had."""
    before, refusal = window.before, window.opening
    if before is None or before.limit != per_minute or before.remaining is None:
        return
    announced = before.remaining if before.served else 0
    expect(
        "LIM-REMAINING-NEAREST",
        announced == 0,
        f"{window.name}: the response before it said X-RateLimit-Remaining: {announced} of the "
        f"minute's {per_minute}, yet the day refused the next request ({window.days}): the "
        "headers should report the window closest to its end"
        if announced
        else f"{window.name}: the day refused where the headers had announced nothing left",
        refusal.exchange,
    )


def judge_promise(window: SpentWindow, per_minute: int) -> bool:
    """LIM-QUOTA-HONOURED against the opening's promise: True where the window refused before
    serving what its opening announced (the failure is recorded)."""
    broken = broken_promise(window, per_minute)
    if broken is None:
        return False
    refusal, served = broken
    opening = window.opening
    expect(
        "LIM-QUOTA-HONOURED",
        False,
        f"{window.name}: a request within the announced quota must be served: its opening "
        f"response said X-RateLimit-Remaining: {opening.remaining}, yet after {served} more "
        f"were served a request got {refusal.status}{how_refused(window, refusal)}",
        # The promise is the evidence: a refusal made in front of the service is its own
        # cause on its own response (LIM-HEADERS-PRESENT), which would hide this one there.
        opening.exchange,
    )
    return True


def broken_promise(window: SpentWindow, per_minute: int) -> tuple[Snapshot, int] | None:
    """The first refusal of the window, and how many were served after its opening, where that
    is fewer than the opening announced. Whenever it came: only the key's own requests
    followed the opening, and time only gives requests back (a window that rolls over starts
    whole; a sliding one frees its oldest), so a promise is never broken by the clock. A
    refusal of the day is not the minute's (`judge_nearest_window`)."""
    opening = window.opening
    if not opening.served or opening.limit != per_minute or opening.reset is None:
        return None
    refusal = window.refused  # the opening was served: the first refusal is among the spent
    if refusal is None or not opening.remaining:
        return None
    served = sum(1 for s in window.spent if s.served)
    return (refusal, served) if served < opening.remaining else None


def how_refused(window: SpentWindow, refusal: Snapshot) -> str:
    """What tells the refusal: no rate-limit headers (a limiter in front of the service), or a
    Remaining of 1 or more on the response answered just before it was sent."""
    said = ""
    before = [s for s in window.history if s.received <= refusal.exchange.started_at]
    if before and before[-1].served and before[-1].remaining:
        said = (
            f", sent after the response before it said X-RateLimit-Remaining: "
            f"{before[-1].remaining} (a promise broken at its last request)"
        )
    if refusal.headerless:
        said += (
            ", without rate-limit headers: refused in front of the service, which had "
            "promised the quota (a limiter refilled continuously at the plan's figure)"
        )
    return said


def judge_window_quota(
    name: str, history: list[Snapshot], per_minute: int, clock: ServerClock, holds: bool
) -> None:
    """As the exhaustion's LIM-QUOTA-HONOURED: refused after a whole quota passes; a settled
    429 that no Remaining 0 preceded, where Remaining counts, fails (a day refused behind
    headers that still announce the minute's quota among them)."""
    honoured = refused_after_quota(history, per_minute, clock)
    if honoured is not None:
        expect(
            "LIM-QUOTA-HONOURED",
            True,
            f"{name}: refused once its quota was served",
            honoured.exchange,
        )
        return
    if not holds:
        return
    early = refused_within_quota(history, per_minute, clock)
    if early is not None:
        expect(
            "LIM-QUOTA-HONOURED",
            False,
            f"{name}: a request within the announced quota must be served: this 429 came while "
            f"its headers announced X-RateLimit-Remaining: {early.remaining} of the minute's "
            f"{per_minute} (a refusal for the day must not hide behind the minute's headers)",
            early.exchange,
        )
        return
    refused = settled_429(history, clock)
    if refused is not None and refused.remaining == 0 and refused.limit == per_minute:
        expect("LIM-QUOTA-HONOURED", True, f"{name}: refused after Remaining 0", refused.exchange)


def first_refusal(history: list[Snapshot]) -> Snapshot | None:
    return next((s for s in history if not s.served), None)


def settled_429(history: list[Snapshot], clock: ServerClock) -> Snapshot | None:
    """The window's first refusal, where it is a 429 handled early enough in its window to
    prove something (not its last second)."""
    refused = first_refusal(history)
    if refused is None or refused.status != 429:
        return None
    return refused if settled_in_its_window(history, clock, refused) else None
