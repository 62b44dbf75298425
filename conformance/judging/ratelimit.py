"""Reading a key's responses as a rate limiter's story, and judging it fairly.

Fairness rules (docs/design.md, "Strictness"): a limiter may use fixed or sliding windows; the
headers may report the per-minute or the per-day limit; and the responses of a concurrent burst
arrive in any order. So responses are grouped by window (same Limit, same Reset) and judged as sets
of values, not one after the other; and only a window's *settled* responses are compared: those
handled more than a second before its Reset. A sliding window gives a request back only as its
oldest request expires, which moves Reset; with Reset in whole seconds, the move may not show until
that last second, so the last second of a window proves nothing about counting."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from conformance.httpclient.client import Exchange
from conformance.httpclient.limit_headers import invalid_value
from conformance.judging.response_checks import (
    credential_refused,
    rate_limit_values,
    reset_in_the_past,
)

SETTLE_MARGIN = 1.0
"""Seconds before Reset after which a sliding window may have given requests back unseen."""
JITTER = 1.0
"""A Reset computed from a time-to-live in whole seconds wanders by a second within a window."""
DETOUR_SECONDS = 1.0
UNIX_TIMES = (1_000_000_000.0, 10_000_000_000.0)
"""Resets read as Unix times: from 2001 to 2286. Below is a delay (@fastify/rate-limit's default
`X-RateLimit-Reset: 5`), above is milliseconds: judged (LIM-RESET-UNIX-TIME), never used to time
anything, since a moment in 1970 would make every window's last second look long gone. So is a
Reset before its response's Date (`reset_in_the_past`): every 429 would seem to come in its
window's last second, and a run would wait a whole minute, thrice, to meet one that did not."""
DOCUMENTED = ("/v1/categories", "/v1/pets/", "/v1/store/orders")
"""The endpoints a detour may run through: every request to them counts, by the document."""
DATE_UNCERTAINTY = 2.0
"""How much later than its freshest Date a server's clock may be: a second of truncation, and
a second of caching."""
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
MIN_STEPS = 3
"""Counting is judged on at least this many steps (requests after the first, in settled windows)."""


@dataclass(frozen=True)
class Snapshot:
    """What one response says about its key's quota; None where a header is missing or bad."""

    exchange: Exchange
    limit: int | None
    remaining: int | None
    reset: float | None

    @property
    def status(self) -> int:
        return self.exchange.status

    @property
    def served(self) -> bool:
        return 200 <= self.status < 300

    @property
    def counted(self) -> bool:
        """Let through by the limiter, so counted against the quota: every status but a 429,
        whatever the handler then made of the request (a 400, a 404). A 5xx proves nothing."""
        return self.status != 429 and self.status < 500

    @property
    def complete(self) -> bool:
        return None not in (self.limit, self.remaining, self.reset)

    @property
    def headerless(self) -> bool:
        """Neither Limit nor Remaining read: no rate-limit headers (a front's refusal, say)."""
        return self.limit is None and self.remaining is None

    @property
    def path(self) -> str:
        return urlsplit(self.exchange.url).path

    @property
    def endpoint(self) -> str:
        return f"{self.exchange.method} {self.path}"

    @property
    def received(self) -> float:
        return self.exchange.started_at + self.exchange.elapsed


def date_of(exchange: Exchange) -> float | None:
    text = exchange.header("Date")
    if not text:
        return None
    try:
        return email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class ServerClock:
    """The server's clock, read through our own: server time is our time plus `offset`, give
    or take `uncertainty` (later, never earlier).

    A server on this machine (a loopback address) keeps our time, exactly. Otherwise each
    `Date` header gives a lower bound of the offset: Date is truncated to the second, and
    servers cache it (uvicorn refreshes it about once a second, later on a busy machine), so it
    is never ahead of when the response was made. The largest bound over the run's responses
    is the offset; the truth may lie up to DATE_UNCERTAINTY later. A server without Date is
    taken to keep our time.
    """

    offset: float = 0.0
    uncertainty: float = 0.0

    @classmethod
    def of(cls, exchanges: Iterable[Exchange]) -> ServerClock:
        exchanges = list(exchanges)
        bounds = [
            date - (e.started_at + e.elapsed) for e in exchanges if (date := date_of(e)) is not None
        ]
        if not bounds:
            return cls()
        lowest = max(bounds)
        local = exchanges and urlsplit(exchanges[0].url).hostname in LOOPBACK
        if local and -DATE_UNCERTAINTY - 1 <= lowest <= 0.1:
            return cls()  # our own clock: its Dates only lag, truncated and cached
        return cls(lowest, DATE_UNCERTAINTY)

    def handled_by(self, seen: Snapshot) -> float:
        """Server time by which the request had surely been handled (we had its response)."""
        return seen.received + self.offset + self.uncertainty

    def handled_from(self, seen: Snapshot) -> float:
        """Server time before which the request cannot have been handled (we had not sent it)."""
        return seen.exchange.started_at + self.offset

    def seconds_until(self, target: float) -> float:
        """Seconds from now until the server's clock has surely passed `target`."""
        return target - (time.time() + self.offset) + 0.05

    def seconds_left(self, target: float) -> float:
        """Seconds from now until the server's clock may reach `target`, at the soonest."""
        return target - (time.time() + self.offset + self.uncertainty)


def snapshot(exchange: Exchange) -> Snapshot:
    values = rate_limit_values(exchange) or {}

    def whole(name: str) -> int | None:
        value = values.get(name)
        return int(value) if value is not None else None

    reset = values.get("X-RateLimit-Reset")
    if reset is not None and (
        not UNIX_TIMES[0] <= reset <= UNIX_TIMES[1] or reset_in_the_past(exchange, reset)
    ):
        reset = None
    return Snapshot(exchange, whole("X-RateLimit-Limit"), whole("X-RateLimit-Remaining"), reset)


def of_the_key(exchanges: Iterable[Exchange], label: str) -> list[Snapshot]:
    """The responses that speak of `label`'s own quota, in the order they were sent. A 401 (or a
    403 where 401 is due) is not: the server did not recognise the key, so it counted the
    request against someone else."""
    mine = [e for e in exchanges if e.key_label == label and not credential_refused(e)]
    return [snapshot(e) for e in sorted(mine, key=lambda e: e.started_at)]


def earlier_in_its_window(history: Iterable[Snapshot], seen: Snapshot) -> list[Snapshot]:
    """The responses of `history` sent before `seen` that name its window (its Limit and
    Reset): a window counts every request of its key, not only those of one scenario."""
    return [
        s
        for s in history
        if s.exchange.started_at < seen.exchange.started_at
        and s.complete
        and (s.limit, s.reset) == (seen.limit, seen.reset)
    ]


@dataclass
class Window:
    """The responses of one key that speak of one window of one limit.

    A Reset may jitter by a second from one response to the next, within one window: computed
    as now plus a time-to-live in whole seconds (Redis's TTL, as the `limits` library reads
    it). So responses whose Resets differ by no more than JITTER and that came interleaved in
    time are one window, and its earliest Reset is the one that counts: a response is settled
    only if handled more than SETTLE_MARGIN before it. A sliding window's Reset only moves
    forward, so its successive Resets interleave only where a request was in flight across a
    move, and those responses fall in the unsettled last second all the same."""

    limit: int
    reset: float  # the earliest Reset its responses named
    members: list[Snapshot]
    clock: ServerClock

    def settled(self, seen: Snapshot) -> bool:
        return self.clock.handled_by(seen) <= self.reset - SETTLE_MARGIN

    @property
    def last_received(self) -> float:
        return max(s.received for s in self.members)

    @property
    def first_sent(self) -> float:
        return min(s.exchange.started_at for s in self.members)


def windows(history: Iterable[Snapshot], clock: ServerClock) -> list[Window]:
    """The responses with readable headers, grouped by window (same Limit, and the same Reset
    within a jitter of a second)."""
    groups: dict[tuple[int, float], list[Snapshot]] = {}
    for seen in history:
        if seen.complete:
            groups.setdefault((seen.limit, seen.reset), []).append(seen)  # type: ignore[arg-type]
    merged: list[Window] = []
    for (limit, reset), members in sorted(groups.items()):
        group = Window(limit, reset, members, clock)
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.limit == limit
            and reset - max(s.reset for s in last.members) <= JITTER  # type: ignore[type-var]
            and last.last_received > group.first_sent
        ):
            last.members += members
        else:
            merged.append(group)
    return merged


def settled_in_its_window(history: Iterable[Snapshot], clock: ServerClock, seen: Snapshot) -> bool:
    """Whether `seen` (one of `history`) was handled early enough in its window to tell."""
    window = next((w for w in windows(history, clock) if seen in w.members), None)
    return window is not None and window.settled(seen)


@dataclass(frozen=True)
class Counting:
    """How Remaining fell across the settled, served responses of each window."""

    steps: int  # requests judged after the first of each window
    fall: int  # how far Remaining fell over them

    @property
    def judged(self) -> bool:
        return self.steps >= MIN_STEPS

    @property
    def problem(self) -> str | None:
        if not self.judged:
            return None
        rate = self.fall / self.steps
        if rate < 0.5:
            return (
                f"over {self.steps} requests that followed others in the same windows, it fell "
                f"by {self.fall} in all: it does not count the requests"
            )
        if rate > 1.5:
            return (
                f"over {self.steps} requests that followed others in the same windows, it fell "
                f"by {self.fall} in all: {rate:.1f} per request, not one"
            )
        return None


def counting(history: Iterable[Snapshot], clock: ServerClock) -> Counting:
    """Order-free: in each window, the settled counted responses' Remaining values span as many
    as there were requests. A value of 0 counts once (a server past its limit stays at 0: that
    is LIM-429-WHEN-EXCEEDED's business, not counting's). A request counted among them whose
    answer carried a value LIM-HEADERS-VALID rejects (a Remaining of -1) is a step all the
    same: Remaining fell across it unseen."""
    history = list(history)
    steps = fall = 0
    for window in windows(history, clock):
        settled = [s for s in window.members if s.counted and window.settled(s)]
        values = [s.remaining for s in settled]
        values = [v for v in values if v] + ([0] if 0 in values else [])  # type: ignore[misc]
        if len(values) >= 2:
            steps += len(values) - 1 + unread_among(history, settled)
            fall += max(values) - min(values)
    return Counting(steps, fall)


def unread_among(history: list[Snapshot], members: list[Snapshot]) -> int:
    """Counted requests sent between the first and the last of `members` whose answers carried
    a rate-limit value that fails LIM-HEADERS-VALID."""
    start = min(s.exchange.started_at for s in members)
    end = max(s.exchange.started_at for s in members)
    return sum(
        1
        for s in history
        if s.counted and start < s.exchange.started_at < end and invalid_value(s.exchange)
    )


@dataclass(frozen=True)
class Excess:
    """A response served beyond its window's quota, and the evidence that shows it."""

    seen: Snapshot
    evidence: str


def excess(history: list[Snapshot], counting_holds: bool, clock: ServerClock) -> Excess | None:
    """A request served although its window's quota was spent: a second settled response
    showing Remaining 0 (when Remaining is known to count), or more settled responses served in
    one window than its Limit. The evidence names the count where it is over the Limit."""
    for window in windows(history, clock):
        served = sorted(
            (s for s in window.members if s.served and window.settled(s)),
            key=lambda s: s.received,
        )
        zeros = [s for s in served if s.remaining == 0]
        after = after_a_zero(zeros)
        if counting_holds and after is not None:
            seen = after
        elif len(served) > window.limit:
            seen = served[-1]
        else:
            continue
        named = f"the window of X-RateLimit-Reset {seen.exchange.header('X-RateLimit-Reset')}"
        if len(served) > window.limit:
            return Excess(
                seen,
                f"{len(served)} requests of this key were served in {named}, "
                f"with a limit of {window.limit}",
            )
        return Excess(
            seen,
            f"{len(zeros)} requests were served in {named} with X-RateLimit-Remaining: 0 "
            f"(limit {window.limit}): every one after the first was beyond its quota",
        )
    return None


def after_a_zero(zeros: list[Snapshot]) -> Snapshot | None:
    """A response served with Remaining 0 whose request was sent after another such response
    had come: the quota was spent before it was sent. Two sent together prove nothing: a
    library that reads Remaining as it answers (Flask-Limiter, slowapi) shows 0 on both when a
    third request counted between them."""
    return next(
        (
            later
            for later in zeros
            if any(zero.received <= later.exchange.started_at for zero in zeros)
        ),
        None,
    )


def served_beyond_limit(
    history: list[Snapshot], counting_holds: bool, clock: ServerClock
) -> Snapshot | None:
    """The response of `excess`, without its evidence."""
    found = excess(history, counting_holds, clock)
    return found.seen if found else None


def refused_within_quota(
    history: list[Snapshot], per_minute: int | None, clock: ServerClock
) -> Snapshot | None:
    """A settled 429 in a window of the per-minute limit where no served response showed
    Remaining 0: the request was refused while quota was left. (When the headers report the
    daily limit, a 429 from the per-minute limit is legitimate whatever Remaining says.)

    A window of refusals alone, each saying Remaining 0, is a block, not a refusal within
    quota: a server may refuse past the window whose quota was spent (a penalty, its Reset
    moved on to the block's end), and no request of that window was ever served to count.

    A response of the window whose rate-limit value fails LIM-HEADERS-VALID (a Remaining of
    -1, of 1e400) may have been the one to say 0: a refusal after it proves nothing."""
    history = list(history)
    for window in windows(history, clock):
        if window.limit != per_minute:
            continue
        refused = [s for s in window.members if s.status == 429 and window.settled(s)]
        served = [s for s in window.members if s.served]
        if not served:
            refused = [s for s in refused if s.remaining]
        if refused and not any(s.remaining == 0 for s in served):
            first = min(refused, key=lambda s: s.received)
            if not unreadable_before(history, window, first):
                return first
    return None


def unreadable_before(history: list[Snapshot], window: Window, refusal: Snapshot) -> bool:
    """A request of the key counted in `window` before `refusal` was answered, whose answer
    carried a rate-limit value that fails LIM-HEADERS-VALID: what it said is unknown."""
    return any(
        s.counted
        and invalid_value(s.exchange)
        and window.first_sent <= s.exchange.started_at <= refusal.received
        for s in history
    )


def refused_after_quota(
    history: list[Snapshot], per_minute: int | None, clock: ServerClock
) -> Snapshot | None:
    """A 429 in a window of the per-minute limit that had served its whole quota: the plainest
    proof that the quota was honoured, whatever Remaining said and whenever it came."""
    for window in windows(history, clock):
        if window.limit != per_minute:
            continue
        served = sum(1 for s in window.members if s.counted)
        refused = [s for s in window.members if s.status == 429]
        if refused and served >= window.limit:
            return refused[0]
    return None


MINUTE = 60.0
"""No plan's minute is longer: a key's requests within one are all its window can have counted."""


@dataclass(frozen=True)
class OwnCount:
    """What a key's own requests tell of its refusal where no header can be read: how many
    the server may have counted by then (in the minute before, and in all), and how many it
    had surely let through in the minute before. Statuses are evidence where headers are
    absent; judged only for a run's first refusal of the key, so no penalty of an earlier one
    can explain it."""

    refusal: Snapshot
    sent_in_minute: int  # requests sent before the refusal's answer came, within a minute of it
    sent: int  # the same, over the whole run
    counted_in_minute: int  # answered (not refused) before the refusal was sent, within a minute
    first_refusal: bool
    promise: Snapshot | None = None  # the last response served before the refusal was sent
    spent_since_promise: int = 0  # the key's requests the server may have counted after it

    def within(self, per_minute: int | None, per_day: int | None) -> bool:
        """The server cannot have counted a minute's quota, nor a day's, by the refusal."""
        return (
            self.first_refusal
            and per_minute is not None
            and self.sent_in_minute <= per_minute
            and (per_day is None or self.sent <= per_day)
        )

    def after(self, per_minute: int | None) -> bool:
        """The minute before it had let through a whole minute's quota of the key."""
        return per_minute is not None and self.counted_in_minute >= per_minute

    def broken_promise(self, per_minute: int | None) -> Snapshot | None:
        """The response whose headers announced the minute's quota left, more than the key
        sent after it, where the refusal came inside that: whatever the key's count over a
        minute (a minute of requests spans two of a service's fixed windows). Time only gives
        requests back (a window that rolls over starts whole, a sliding one frees its oldest,
        a bucket refills): only the key's own requests could have spent what was announced."""
        promise = self.promise
        if promise is None or per_minute is None or promise.limit != per_minute:
            return None
        broken = promise.remaining is not None and self.spent_since_promise < promise.remaining
        return promise if broken else None


def own_count(history: list[Snapshot], refusal: Snapshot) -> OwnCount:
    """`history`: the key's responses (`of_the_key`), the refusal among them."""
    answered_by = refusal.received
    sent_before = refusal.exchange.started_at
    by_then = [s for s in history if s.exchange.started_at <= answered_by]
    in_minute = [s for s in by_then if s.exchange.started_at >= answered_by - MINUTE]
    counted = [
        s
        for s in history
        if s.counted and s.received <= sent_before and s.exchange.started_at >= sent_before - MINUTE
    ]
    earlier_refusals = [s for s in history if s.status == 429 and s.received < sent_before]
    promise = max(
        (s for s in history if s.served and s.received <= sent_before),
        key=lambda s: s.received,
        default=None,
    )
    # After the promise, before the refusal: every other request of the key sent before the
    # refusal's answer came and answered after the promise was sent (the server may have
    # counted it between the two, a request sent with the refusal among them).
    spent = [
        s
        for s in history
        if promise is not None
        and s is not promise
        and s is not refusal
        and s.exchange.started_at < answered_by
        and s.received > promise.exchange.started_at
    ]
    return OwnCount(
        refusal,
        len(in_minute),
        len(by_then),
        len(counted),
        not earlier_refusals,
        promise,
        len(spent),
    )


@dataclass(frozen=True)
class Detour:
    """A request on one endpoint, one on another, and one back on the first, in a row, in one
    window, settled, within a second: with one count per caller Remaining falls by two from
    the first to the last; with a count per endpoint, by one (the detour did not count)."""

    first: Snapshot
    other: Snapshot
    back: Snapshot

    @property
    def across_paths(self) -> bool:
        """Through another path, not only another method: what a limiter keyed by path shows."""
        return self.first.path != self.other.path

    @property
    def problem(self) -> str | None:
        if self.back.remaining != self.first.remaining - 1:  # type: ignore[operator]
            return None
        return (
            f"X-RateLimit-Remaining went {self.first.remaining} on {self.first.endpoint}, "
            f"{self.other.remaining} on {self.other.endpoint}, {self.back.remaining} back on "
            f"{self.first.endpoint}, in one window: the request on {self.other.endpoint} did "
            f"not count against the quota of {self.first.endpoint}"
        )


def detours(history: list[Snapshot], clock: ServerClock) -> list[Detour]:
    """Every A, B, A of one key's history (in send order) that can be judged: one window, all
    settled and counted, on documented endpoints, within DETOUR_SECONDS (a sliding-window
    counter that decays with time gives back little in that)."""
    found = []
    by_member = {id(s): w for w in windows(history, clock) for s in w.members}
    for first, other, back in zip(history, history[1:], history[2:], strict=False):
        window = by_member.get(id(first))
        if (
            window is not None
            and by_member.get(id(other)) is window
            and by_member.get(id(back)) is window
            and first.endpoint == back.endpoint != other.endpoint
            and all(s.counted and window.settled(s) for s in (first, other, back))
            and all(s.path.startswith(DOCUMENTED) for s in (first, other))
            and back.received - first.exchange.started_at <= DETOUR_SECONDS
        ):
            found.append(Detour(first, other, back))
    return found


def reset_went_back(history: list[Snapshot]) -> str | None:
    """Consecutive responses (in send order) of one key on different endpoints, of one limit,
    whose Reset went back by more than the jitter: each endpoint has a window of its own (a
    caller's window only moves forward)."""
    for before, after in zip(history, history[1:], strict=False):
        if (
            before.complete
            and after.complete
            and before.limit == after.limit
            and before.endpoint != after.endpoint
            and after.reset < before.reset - JITTER  # type: ignore[operator]
        ):
            return (
                f"X-RateLimit-Reset went back from {before.reset:.0f} on {before.endpoint} to "
                f"{after.reset:.0f} on {after.endpoint}: each endpoint has a window of its own"
            )
    return None
