"""Reading a run of responses on one key as a rate limiter's story, and judging it fairly.

Fairness rules (DESIGN.md): a limiter may use fixed or sliding windows, and the headers may
report the per-minute or the per-day limit. So two consecutive responses are compared only when
they speak of the same window (same Limit and same Reset): a new window, or a sliding window
giving requests back, moves the Reset and ends the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.client import Exchange
from conformance.response_checks import rate_limit_values, server_time


@dataclass(frozen=True)
class Snapshot:
    """What one response says about its key's quota; None where a header is missing or bad."""

    exchange: Exchange
    limit: int | None
    remaining: int | None
    reset: int | None

    @property
    def status(self) -> int:
        return self.exchange.status

    @property
    def served(self) -> bool:
        return 200 <= self.status < 300

    @property
    def server_now(self) -> float:
        return server_time(self.exchange)[0]


def snapshot(exchange: Exchange) -> Snapshot:
    values = rate_limit_values(exchange) or {}
    return Snapshot(
        exchange,
        values.get("X-RateLimit-Limit"),
        values.get("X-RateLimit-Remaining"),
        values.get("X-RateLimit-Reset"),
    )


def same_window(first: Snapshot, then: Snapshot) -> bool:
    return (
        first.reset is not None
        and first.reset == then.reset
        and first.limit == then.limit
        and first.remaining is not None
        and then.remaining is not None
    )


def drops(history: list[Snapshot]) -> list[int]:
    """How much Remaining fell between consecutive served responses of one window."""
    return [
        first.remaining - then.remaining
        for first, then in zip(history, history[1:], strict=False)
        if first.served and then.served and same_window(first, then)
    ]


def counting_problem(history: list[Snapshot]) -> str | None:
    """Remaining must fall by one per request: never by more, and not stand still throughout."""
    steps = drops(history)
    if any(step > 1 for step in steps):
        return f"Remaining fell by {max(steps)} for one request (steps seen: {steps[:12]})"
    if len(steps) >= 2 and 1 not in steps:
        return f"Remaining did not count the requests (steps seen: {steps[:12]})"
    return None


def served_beyond_limit(history: list[Snapshot]) -> Snapshot | None:
    """A request served although the previous response of the same window showed Remaining 0."""
    for first, then in zip(history, history[1:], strict=False):
        if first.remaining == 0 and then.served and same_window(first, then):
            return then
    return None


def refused_within_quota(history: list[Snapshot], per_minute: int | None) -> Snapshot | None:
    """A 429 although the previous response, in the same window of the per-minute limit the
    headers report, still showed requests remaining. (When the headers report the daily limit,
    a 429 from the per-minute limit is legitimate whatever Remaining says.)"""
    for first, then in zip(history, history[1:], strict=False):
        if (
            then.status == 429
            and first.served
            and first.remaining
            and first.limit is not None
            and first.limit == per_minute
            and first.reset is not None
            and first.reset == then.reset
        ):
            return then
    return None
