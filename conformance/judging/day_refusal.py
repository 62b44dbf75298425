"""Whose a refusal is: the minute's or the day's.

A key's day ends inside some minute window, so the day's 429 comes where a minute's could. It is
judged as the day's only on evidence (docs/day-profile.md): the run had counted the day's figure
served to the key by then, or the 429's own headers say so (the day's figure as its Limit with
Remaining 0, or a Reset or Retry-After further away than any minute). A 429 whose own headers
still announce quota left is not the day's by its headers: that is a refusal within the
announced quota, whoever made it. The day's figure served only keeps a window's refusal from
being judged as the minute's: the day profile confirms it a whole fresh minute later
(`conformance.suite.day_quota.take_refusal`), as a minute's refusal can meet the figure by chance.
"""

from __future__ import annotations

from conformance.httpclient.backoff import LONGEST_WAIT
from conformance.httpclient.client import Exchange
from conformance.judging.ratelimit import ServerClock, Snapshot
from conformance.judging.response_checks import retry_after_seconds


def said_by_its_headers(
    refusal: Snapshot, per_minute: int, per_day: int, clock: ServerClock
) -> str:
    """Why the 429's own headers make it the day's, or ""."""
    if refusal.status != 429 or refusal.remaining:
        return ""
    if per_day != per_minute and refusal.limit == per_day and refusal.remaining == 0:
        return f"its X-RateLimit-Limit is the day's {per_day:,}, with Remaining 0"
    wait = retry_after_seconds(refusal.exchange)
    if wait is not None and wait > LONGEST_WAIT:
        return f"its Retry-After asks for {wait / 3600:.1f} h, longer than any minute"
    if refusal.reset is not None:
        ahead = refusal.reset - clock.handled_by(refusal)
        if ahead > LONGEST_WAIT:
            return f"its X-RateLimit-Reset lies {ahead / 3600:.1f} h ahead, past any minute"
    return ""


def served_before(exchanges: list[Exchange], refusal: Snapshot) -> int:
    """The key's requests served before the refusal was sent, over the whole run."""
    label, sent = refusal.exchange.key_label, refusal.exchange.started_at
    return sum(
        1
        for e in exchanges
        if e.key_label == label and 200 <= e.status < 300 and e.started_at + e.elapsed <= sent
    )


def days_evidence(
    refusal: Snapshot | None,
    per_minute: int,
    per_day: int | None,
    clock: ServerClock,
    exchanges: list[Exchange],
) -> str:
    """Why `refusal` is the day's, or "" where nothing shows it is."""
    if refusal is None or refusal.status != 429 or not per_day:
        return ""
    served = served_before(exchanges, refusal)
    if served >= per_day:
        return f"the run had counted {served:,} requests of this key served, the day's figure"
    return said_by_its_headers(refusal, per_minute, per_day, clock)
