"""Request limits per caller, with the `limits` library's fixed windows.

Every request counts once against two windows of its caller: a minute and a day (1440
minutes), both `minute_seconds` long per minute (60 in production, shorter in tests). A
request is served only when both windows have room; a refused request consumes nothing
(with memory storage; with Redis a request refused in a race may still be counted).
Callers with a valid key are counted per key, with their plan's figures; everybody else is
counted per client address with the free plan's figures.

The response headers report the window with the fewest requests remaining (on a tie, the one
that resets later): `X-RateLimit-Limit` its size, `X-RateLimit-Remaining` what is left of it,
`X-RateLimit-Reset` the Unix time, in whole seconds rounded up, at which it resets.

The ban (rule 5 of the interface's Limits section), exactly:

- Every request of a valid key refused with 429 `rate_limited` is a strike.
- Strikes are counted in a fixed window of one minute (`minute_seconds`) that opens with the
  first strike. The strike that makes more than 10 in that window (the 11th) bans the key.
- A ban lasts 10 minutes (600 s in production, `10 * minute_seconds` in general). The request
  that earned it and every request during it are answered 429 `key_banned`, with
  `Retry-After` the seconds until the ban ends and `X-RateLimit-Reset` its end; requests
  during a ban count against nothing, and the key's windows keep running.
- Callers without a valid key are never banned; they only see 429 `rate_limited`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string

from conformance.reference.auth import Caller
from conformance.reference.plans import Plan

STRIKES_BEFORE_BAN = 10
BAN_MINUTES = 10
MINUTES_PER_DAY = 1440


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


@dataclass(frozen=True)
class Decision:
    """What the limiter decided for one request, and the header values to send."""

    allowed: bool
    limit: int
    remaining: int
    reset: int  # Unix time, whole seconds, rounded up
    retry_after: int | None = None  # seconds; set on refusals
    code: str | None = None  # "rate_limited" or "key_banned" on refusals

    def headers(self) -> dict[str, str]:
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers


@dataclass(frozen=True)
class _WindowState:
    limit: int
    remaining: int
    reset_at: float


class RequestLimits:
    def __init__(self, storage: str, minute_seconds: int) -> None:
        if minute_seconds < 1 or int(minute_seconds) != minute_seconds:
            raise ValueError("minute_seconds must be a whole number of seconds, at least 1")
        self.storage_uri = storage_uri(storage)
        self.minute_seconds = int(minute_seconds)
        self._limiter: FixedWindowRateLimiter | None = None
        self._strikes = RateLimitItemPerSecond(
            STRIKES_BEFORE_BAN, self.minute_seconds, namespace="petstore-strikes"
        )
        self._ban = RateLimitItemPerSecond(
            1, BAN_MINUTES * self.minute_seconds, namespace="petstore-ban"
        )

    @property
    def exact_under_concurrency(self) -> bool:
        return self.storage_uri.startswith("async+memory")

    async def open(self) -> None:
        """Connect the storage; called at application start-up, inside its event loop."""
        options = {"implementation": "redispy"} if "redis" in self.storage_uri else {}
        storage = storage_from_string(self.storage_uri, **options)
        try:
            healthy = await storage.check()
        except Exception as exc:  # any driver error means the same to the operator
            raise StorageUnavailable(f"{self.storage_uri}: {exc}") from exc
        if not healthy:
            raise StorageUnavailable(f"{self.storage_uri} does not answer")
        self._limiter = FixedWindowRateLimiter(storage)

    @property
    def limiter(self) -> FixedWindowRateLimiter:
        if self._limiter is None:
            raise RuntimeError("RequestLimits.open() was not called")
        return self._limiter

    def _windows(self, plan: Plan) -> tuple[RateLimitItem, RateLimitItem]:
        minute = RateLimitItemPerSecond(
            plan.per_minute, self.minute_seconds, namespace="petstore-minute"
        )
        day = RateLimitItemPerSecond(
            plan.per_day, MINUTES_PER_DAY * self.minute_seconds, namespace="petstore-day"
        )
        return minute, day

    async def admit(self, caller: Caller) -> Decision:
        """Count the request if both windows have room; say what to answer.

        With memory storage no call below suspends, so the test-then-hit of one request is
        never interleaved with another's: exactly the limit is admitted, however many arrive
        at once. With Redis each hit is atomic and its result decides, which admits exactly
        the limit too; only a request refused in a race is counted.
        """
        limiter = self.limiter
        ident = caller.identity
        now = time.time()
        minute, day = self._windows(caller.plan)

        if caller.authenticated and not await limiter.test(self._ban, ident):
            ban = await limiter.get_window_stats(self._ban, ident)
            return await self._refusal(caller, ban.reset_time, "key_banned", now)

        allowed = await limiter.test(minute, ident) and await limiter.test(day, ident)
        if allowed:
            hit_minute = await limiter.hit(minute, ident)
            hit_day = await limiter.hit(day, ident)
            allowed = hit_minute and hit_day
        states = [await self._state(item, ident) for item in (minute, day)]
        shown = _most_constraining(states)
        if allowed:
            return Decision(True, shown.limit, shown.remaining, _whole_seconds_up(shown.reset_at))

        if caller.authenticated and not await limiter.hit(self._strikes, ident):
            await limiter.hit(self._ban, ident)
            ban = await limiter.get_window_stats(self._ban, ident)
            return await self._refusal(caller, ban.reset_time, "key_banned", now)
        exhausted = [state for state in states if state.remaining == 0] or [shown]
        reset_at = max(state.reset_at for state in exhausted)
        return Decision(
            False,
            shown.limit,
            0,
            _whole_seconds_up(reset_at),
            retry_after=_retry_after(reset_at, now),
            code="rate_limited",
        )

    async def _refusal(self, caller: Caller, until: float, code: str, now: float) -> Decision:
        minute, day = self._windows(caller.plan)
        states = [await self._state(item, caller.identity) for item in (minute, day)]
        shown = _most_constraining(states)
        return Decision(
            False,
            shown.limit,
            0,
            _whole_seconds_up(until),
            retry_after=_retry_after(until, now),
            code=code,
        )

    async def _state(self, item: RateLimitItem, ident: str) -> _WindowState:
        stats = await self.limiter.get_window_stats(item, ident)
        return _WindowState(item.amount, stats.remaining, stats.reset_time)


def _most_constraining(states: list[_WindowState]) -> _WindowState:
    return min(states, key=lambda state: (state.remaining, -state.reset_at))


def _whole_seconds_up(moment: float) -> int:
    return math.ceil(moment)


def _retry_after(until: float, now: float) -> int:
    return max(1, math.ceil(until - now))
