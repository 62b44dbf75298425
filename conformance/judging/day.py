"""Judging a key's day: what spending it window after window showed (`conformance.suite.day_quota`).

Each window is judged as it ends (`conformance.judging.spent_window`). The day is judged on the
key's whole run: LIM-DAY-ENFORCED, no more than the plan's day figure served within one day;
LIM-DAY-HONOURED, no refusal for the day before the key had been served its figure, or had it
refused by its minute windows (a server may count those against the day).

Whether the day is a calendar day or a rolling 24 hours is not shown, so a run that may have
crossed the end of a day (UTC midnight, or a Reset of the day's window that passed) proves no
excess: it says what it saw and leaves the enforcement unjudged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from conformance.httpclient.client import Exchange
from conformance.judging.checks import cannot_check, expect, leave_open
from conformance.judging.ratelimit import ServerClock, Snapshot, snapshot
from conformance.judging.spent_window import SpentWindow


@dataclass
class Day:
    """What spending a key's day showed."""

    label: str
    per_minute: int
    per_day: int
    windows: list[SpentWindow] = field(default_factory=list)
    refusal: Snapshot | None = None  # the day's refusal, once seen
    evidence: str = ""  # what shows the refusal is the day's (conformance.judging.day_refusal)
    stopped: str = ""  # why the day was not spent to its refusal, where it was not
    unexplained: Snapshot | None = None  # a refusal not yet shown to be the day's, asked again
    sliding: bool = False  # its minute comes back partly after a Reset

    def exchanges(self, run_exchanges: list[Exchange]) -> list[Exchange]:
        return [e for e in run_exchanges if e.key_label == self.label]


def day_crossed(exchanges: list[Exchange], per_day: int, clock: ServerClock) -> str:
    """Why the key's requests may have fallen in two days, or "" where they cannot have."""
    if not exchanges:
        return ""
    first, last = exchanges[0], exchanges[-1]
    first_day = time.gmtime(first.started_at).tm_yday
    if time.gmtime(last.started_at).tm_yday != first_day:
        return "the key's requests went on past midnight UTC, where a calendar day may end"
    ended = clock.handled_by(snapshot(last))
    for exchange in exchanges:
        seen = snapshot(exchange)
        if seen.limit == per_day and seen.reset is not None and seen.reset < ended:
            return (
                f"a response of the day's window named X-RateLimit-Reset {seen.reset:.0f}, "
                "which passed during the run: a new day began"
            )
    return ""


def judge_day(day: Day, run_exchanges: list[Exchange], clock: ServerClock) -> None:
    """LIM-DAY-ENFORCED and LIM-DAY-HONOURED, from all the key's requests of the run."""
    mine = day.exchanges(run_exchanges)
    served = sum(1 for e in mine if 200 <= e.status < 300)
    refusal_at = day.refusal.exchange.started_at if day.refusal else float("inf")
    refused = sum(1 for e in mine if e.status == 429 and e.started_at < refusal_at)
    if day.stopped:
        reason = f"the day was not spent: {day.stopped}"
        leave_open(["LIM-DAY-ENFORCED", "LIM-DAY-HONOURED"], reason)
        return
    crossed = day_crossed(mine, day.per_day, clock)
    last = mine[-1] if mine else None
    judge_enforced(day, served, crossed, last)
    judge_honoured(day, served, refused)


def judge_enforced(day: Day, served: int, crossed: str, last: Exchange | None) -> None:
    seen = f"{served:,} requests of this key were served in this run"
    if served <= day.per_day and day.refusal is not None:
        expect(
            "LIM-DAY-ENFORCED",
            True,
            f"{seen}, no more than the plan's {day.per_day:,} a day, and then the day refused "
            f"({day.evidence})",
            day.refusal.exchange,
        )
        return
    if served <= day.per_day:
        leave_open(
            ["LIM-DAY-ENFORCED"],
            f"the day was not reached: {seen}, of the plan's {day.per_day:,} a day, and nothing "
            "showed a refusal to be the day's",
        )
        return
    if crossed:
        cannot_check(
            "LIM-DAY-ENFORCED",
            f"{seen}, more than the plan's {day.per_day:,} a day, but the run may have crossed "
            f"the end of a day ({crossed}): one day's figure is not proven exceeded",
        )
        return
    evidence = day.refusal.exchange if day.refusal is not None else last
    expect(
        "LIM-DAY-ENFORCED",
        False,
        f"no more than the plan's {day.per_day:,} requests a day may be served: {seen}, "
        f"within one day, over {len(day.windows)} windows"
        + ("" if day.refusal is not None else ", and the day never refused"),
        evidence,
    )


def judge_honoured(day: Day, served: int, refused: int) -> None:
    """Passed only where the day was reached: refused at or after its figure, or its figure
    served without a refusal for the day. Short of it, nothing is proven."""
    if day.refusal is None and served < day.per_day:
        leave_open(
            ["LIM-DAY-HONOURED"],
            f"the day was not reached: {served:,} of its {day.per_day:,} served, and no refusal "
            "shown to be the day's",
        )
        return
    if day.refusal is None:
        expect(
            "LIM-DAY-HONOURED",
            True,
            f"{served:,} requests of this key were served without a refusal for the day",
            day.windows[-1].history[-1].exchange if day.windows else None,
        )
        return
    counted = served + refused
    expect(
        "LIM-DAY-HONOURED",
        counted >= day.per_day,
        f"the day refused after {served:,} requests of this key were served and {refused:,} "
        f"refused by its minute windows ({counted:,} in all; {day.evidence}), "
        + (
            f"fewer than the plan's {day.per_day:,} a day"
            if counted < day.per_day
            else f"once the plan's {day.per_day:,} a day were spent"
        ),
        day.refusal.exchange,
    )
