"""Request limits per caller, with the `limits` library's fixed windows.

Every request counts against two windows of its caller: a minute and a day (1440 minutes),
both `minute_seconds` long per minute (60 in production, shorter in tests). It is counted
against its minute first and, only if the minute had room, against its day; it is served when
both had room. So a request refused by its minute costs its day nothing, and one refused by
its day takes a place in a minute that cannot serve anybody while the day is spent (should
the day end within that minute, the minute refuses a little more than it must, never less).
Counting first and judging by the count is atomic in every storage, so exactly the limit is
served however many requests arrive at once, across workers and instances sharing Redis.
Callers with a valid key are counted per key, with their plan's figures; everybody else is
counted per client address with the free plan's figures.

The response headers report the window with the fewest requests remaining (on a tie, the one
that resets later): `X-RateLimit-Limit` its size, `X-RateLimit-Remaining` what is left of it,
`X-RateLimit-Reset` the Unix time, in whole seconds rounded up, at which it resets.

The ban (rule 5 of the interface's Limits section) is off unless asked for
(`--ban-after N --ban-seconds S`, a `BanRule`):

- A request of a valid key refused with 429 `rate_limited` makes the key limited until the
  `Retry-After` it was given has passed.
- Every request the key sends while it is limited (before that moment) is a strike; the Nth
  strike bans the key for S seconds.
- The request that earned the ban and every request during it are answered 429 `key_banned`,
  with `Retry-After` the seconds until the ban ends, `X-RateLimit-Reset` its end and
  `X-RateLimit-Limit` the per-minute figure; requests during a ban count against nothing, and
  the key's windows keep running.
- Callers without a valid key are never banned; they only see 429 `rate_limited`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string

from conformance.reference.auth import Caller
from conformance.reference.counters import KeyCounts, MemoryCounters, RedisCounters
from conformance.reference.plans import Plan

MINUTES_PER_DAY = 1440
# What a caller is told to wait when the counts cannot be kept: short, as an outage may end any
# moment, and clients back off further on their own.
UNAVAILABLE_RETRY_AFTER_SECONDS = 1
# A Redis that does not answer within this long is taken for gone; Redis answers in
# milliseconds, so only an outage makes a request wait this long.
REDIS_TIMEOUT_SECONDS = 2


class StorageUnavailable(Exception):
    """The rate-limit storage does not answer."""


def storage_uri(option: str) -> str:
    """`memory://` or `redis://HOST:PORT` (as given on the command line) -> an async storage URI."""
    if option.startswith("async+"):
        return option
    if option.startswith(("memory://", "redis://", "rediss://", "redis+unix://")):
        return "async+" + option
    raise ValueError(
        f"unsupported rate-limit storage {option!r}: use memory:// or redis://HOST:PORT"
    )


@dataclass(slots=True)  # not frozen: a frozen one costs four times as much to make, per request
class Decision:
    """What the limiter decided for one request, and the header values to send."""

    allowed: bool
    limit: int
    remaining: int
    reset: int  # Unix time, whole seconds, rounded up
    retry_after: int | None = None  # seconds; set on refusals
    code: str | None = None  # "rate_limited", "key_banned" or "limits_unavailable" on refusals

    def headers(self) -> dict[str, str]:
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """`headers()` as an ASGI response carries them."""
        if type(self).headers is not Decision.headers:  # a subclass says its own headers
            return [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in self.headers().items()
            ]
        raw = [
            (b"x-ratelimit-limit", b"%d" % self.limit),
            (b"x-ratelimit-remaining", b"%d" % self.remaining),
            (b"x-ratelimit-reset", b"%d" % self.reset),
        ]
        if self.retry_after is not None:
            raw.append((b"retry-after", b"%d" % self.retry_after))
        return raw


def limits_unavailable(plan: Plan, now: float) -> Decision:
    """The answer while the rate-limit storage does not answer: fail closed, as a request that
    cannot be counted could be one over the limit. The headers the document owes on every
    response still come: the per-minute figure, nothing remaining, and, as the reset, the
    moment worth asking again."""
    retry_after = UNAVAILABLE_RETRY_AFTER_SECONDS
    return Decision(
        False,
        plan.per_minute,
        0,
        _whole_seconds_up(now + retry_after),
        retry_after=retry_after,
        code="limits_unavailable",
    )


@dataclass(frozen=True)
class BanRule:
    """Rule 5, when the operator asks for it: `after` requests sent while limited ban a key
    for `seconds`."""

    after: int
    seconds: int

    async def strike(self, storage: KeyCounts, keys: BanKeys, retry_after: int) -> bool:
        """Called for each refusal of a valid key, with the `Retry-After` it is given: True
        when this request earns the ban. A key that is not yet limited becomes limited for that
        long; one that is, takes a strike (strikes last as long as the limitation)."""
        if await storage.get(keys.limited) < 1:
            await storage.incr(keys.limited, retry_after)
            return False
        if await storage.incr(keys.strikes, retry_after) < self.after:
            return False
        await storage.incr(keys.ban, self.seconds)
        return True

    async def banned_until(self, storage: KeyCounts, keys: BanKeys) -> float | None:
        """The end of the key's ban, or None when it is not banned."""
        if await storage.get(keys.ban) < 1:
            return None
        return await storage.get_expiry(keys.ban)


@dataclass(frozen=True)
class BanKeys:
    """Where one caller's limitation, strikes and ban are kept in a `limits` storage."""

    limited: str
    strikes: str
    ban: str

    @classmethod
    def of(cls, identity: str) -> BanKeys:
        return cls(
            f"petstore-limited/{identity}",
            f"petstore-strikes/{identity}",
            f"petstore-ban/{identity}",
        )


def banned(plan: Plan, until: float, now: float) -> Decision:
    """The answer during a ban: Remaining 0, Reset and Retry-After at the ban's end."""
    return Decision(
        False,
        plan.per_minute,
        0,
        _whole_seconds_up(until),
        retry_after=_retry_after(until, now),
        code="key_banned",
    )


@dataclass(frozen=True)
class _Counters:
    """One caller's windows under one plan, with their storage keys (made once, not per request)."""

    minute_limit: int
    day_limit: int
    minute_key: str
    day_key: str
    ban_keys: BanKeys


# Bounds the memory the key cache may take: anonymous callers are one entry per address.
_MAX_CACHED_CALLERS = 4096


class RequestLimits:
    """The limits, counted in fixed windows (`counters.py`: in memory, or in Redis in one round
    trip a request)."""

    def __init__(self, storage: str, minute_seconds: int, ban: BanRule | None = None) -> None:
        if minute_seconds < 1 or int(minute_seconds) != minute_seconds:
            raise ValueError("minute_seconds must be a whole number of seconds, at least 1")
        self.storage_uri = storage_uri(storage)
        self.minute_seconds = int(minute_seconds)
        self.day_seconds = MINUTES_PER_DAY * self.minute_seconds
        self._storage: MemoryCounters | RedisCounters | None = None
        self.ban = ban
        self._counters: dict[str, tuple[Plan, _Counters]] = {}  # by caller identity

    async def open(self) -> None:
        """Connect the storage; called at application start-up, inside its event loop."""
        if self.storage_uri.startswith("async+memory://"):
            self._storage = MemoryCounters()
            return
        storage = RedisCounters(storage_from_string(self.storage_uri, **self._storage_options()))
        try:
            healthy = await storage.check()
        except Exception as exc:  # any driver error means the same to the operator
            raise StorageUnavailable(f"{self.storage_uri}: {exc}") from exc
        if not healthy:
            raise StorageUnavailable(f"{self.storage_uri} does not answer")
        self._storage = storage

    def _storage_options(self) -> dict[str, Any]:
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        return {
            "implementation": "redispy",
            "socket_timeout": REDIS_TIMEOUT_SECONDS,
            "socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
            # No retries: a retried INCR whose answer was lost would count a request twice,
            # and retries with back-off would hold every request of an outage for seconds.
            # The pool itself replaces a connection that broke while Redis was away.
            "retry": Retry(NoBackoff(), 0),
        }

    @property
    def storage_errors(self) -> type[Exception] | tuple[type[Exception], ...]:
        """What the storage's driver raises when the storage does not answer."""
        return self.storage.base_exceptions

    @property
    def storage(self) -> MemoryCounters | RedisCounters:
        if self._storage is None:
            raise RuntimeError("RequestLimits.open() was not called")
        return self._storage

    def _counters_of(self, caller: Caller) -> _Counters:
        cached = self._counters.get(caller.identity)
        if cached is not None and cached[0] is caller.plan:
            return cached[1]
        if len(self._counters) >= _MAX_CACHED_CALLERS:
            self._counters.clear()
        ident, plan = caller.identity, caller.plan
        minute = RateLimitItemPerSecond(
            plan.per_minute, self.minute_seconds, namespace="petstore-minute"
        )
        day = RateLimitItemPerSecond(plan.per_day, self.day_seconds, namespace="petstore-day")
        counters = _Counters(
            plan.per_minute,
            plan.per_day,
            minute.key_for(ident),
            day.key_for(ident),
            BanKeys.of(ident),
        )
        self._counters[ident] = (plan, counters)
        return counters

    async def admit(self, caller: Caller) -> Decision:
        """Count the request against its windows; say what to answer (see the module's doc)."""
        storage = self.storage
        counters = self._counters_of(caller)
        now = time.time()

        ban = self.ban if caller.authenticated else None
        if ban is not None:
            until = await ban.banned_until(storage, counters.ban_keys)
            if until is not None:
                return banned(caller.plan, until, now)

        counts = await storage.count(
            counters.minute_key,
            self.minute_seconds,
            counters.minute_limit,
            counters.day_key,
            self.day_seconds,
        )
        minute_left = max(0, counters.minute_limit - counts.minute)
        day_left = max(0, counters.day_limit - counts.day)
        allowed = counts.minute <= counters.minute_limit and counts.day <= counters.day_limit
        # The window with the fewest requests left; on a tie, the one that resets later.
        if minute_left < day_left or (
            minute_left == day_left and counts.minute_ends >= counts.day_ends
        ):
            limit, remaining, reset_at = counters.minute_limit, minute_left, counts.minute_ends
        else:
            limit, remaining, reset_at = counters.day_limit, day_left, counts.day_ends
        if allowed:
            return Decision(True, limit, remaining, _whole_seconds_up(reset_at))

        retry_after = _retry_after(reset_at, now)
        if ban is not None and await ban.strike(storage, counters.ban_keys, retry_after):
            return banned(caller.plan, now + ban.seconds, now)
        return Decision(
            False,
            limit,
            0,
            _whole_seconds_up(reset_at),
            retry_after=retry_after,
            code="rate_limited",
        )


def _whole_seconds_up(moment: float) -> int:
    return math.ceil(moment)


def _retry_after(until: float, now: float) -> int:
    return max(1, math.ceil(until - now))
