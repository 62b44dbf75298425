"""Where the limiter's fixed-window counts are kept: in this process, or in Redis. Either way one
call (`count`) counts a request against its minute and, if the minute had room, its day, and
says both counts and both windows' ends.

The windows are the `limits` library's fixed windows, under the same keys: a window starts at
its first request and lasts its length; a count past its end starts again at 1. The library's
own calls took three to four per request (an INCR, an INCR or GET, one or two TTLs): in Redis
that was as many round trips, in memory as many coroutines, each `incr` also starting an
asyncio task to expire old keys. Here Redis runs one Lua script (atomic), the requests of a
moment sent together in one pipeline (one round trip), those of one caller counted by one script,
and memory is plain dictionaries.

`get`, `incr` and `get_expiry` (the `limits` storage's calls) remain for the ban (`BanRule`),
which only callers under a ban rule reach.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, NamedTuple, Protocol

from limits.aio.storage import Storage
from redis.exceptions import NoScriptError

# How often the memory counters drop windows that have ended (a caller that never returns
# would otherwise keep its entry): a pass over all entries, at most this often.
SWEEP_SECONDS = 10.0


class KeyCounts(Protocol):
    """The `limits` storage calls the ban is kept with (a `limits` storage is one too)."""

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int: ...

    async def get(self, key: str) -> int: ...

    async def get_expiry(self, key: str) -> float: ...


class Counts(NamedTuple):
    minute: int  # the minute's count, this request included
    day: int  # the day's count, this request included if the minute had room
    minute_ends: float  # Unix time the minute's window ends (now, when it has none)
    day_ends: float


class MemoryCounters:
    """The counts of this process, as `limits`' memory storage keeps them."""

    base_exceptions: tuple[type[Exception], ...] = ()  # nothing to lose: it is all in memory

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._ends: dict[str, float] = {}
        self._next_sweep = 0.0

    async def check(self) -> bool:
        return True

    def _incr(self, key: str, expiry: float, now: float) -> tuple[int, float]:
        """Count one more in the key's window: (its count, its end)."""
        ends = self._ends.get(key, 0.0)
        if ends <= now:  # no window, or an ended one: a new window
            ends = self._ends[key] = now + expiry
            self._counts[key] = 1
            return 1, ends
        count = self._counts[key] = self._counts[key] + 1
        return count, ends

    def _get(self, key: str, now: float) -> tuple[int, float]:
        """The key's count and its window's end (now, when it has no window)."""
        ends = self._ends.get(key, 0.0)
        return (self._counts[key], ends) if ends > now else (0, now)

    def _sweep(self, now: float) -> None:
        self._next_sweep = now + SWEEP_SECONDS
        for key in [key for key, ends in self._ends.items() if ends <= now]:
            del self._ends[key], self._counts[key]

    async def count(
        self,
        minute_key: str,
        minute_seconds: int,
        minute_limit: int,
        day_key: str,
        day_seconds: int,
    ) -> Counts:
        now = time.time()
        if now >= self._next_sweep:
            self._sweep(now)
        minute, minute_ends = self._incr(minute_key, minute_seconds, now)
        if minute <= minute_limit:
            day, day_ends = self._incr(day_key, day_seconds, now)
        else:
            day, day_ends = self._get(day_key, now)
        return Counts(minute, day, minute_ends, day_ends)

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        count = self._incr(key, expiry, time.time())[0] - 1 + amount
        self._counts[key] = count
        return count

    async def get(self, key: str) -> int:
        return self._get(key, time.time())[0]

    async def get_expiry(self, key: str) -> float:
        return self._get(key, time.time())[1]


# KEYS: the minute's, the day's. ARGV: the minute's length (s), its limit, the day's length (s),
# and how many requests are counted (n: a batch's requests of one caller, counted together).
# The day counts only the requests the minute had room for; PTTL is -2 for a key that does not
# exist. For n = 1 this is INCR, and INCR of the day when the minute had room.
COUNT_SCRIPT = """
local n = tonumber(ARGV[4])
local minute = redis.call("incrby", KEYS[1], n)
if minute == n then redis.call("expire", KEYS[1], ARGV[1]) end
local room = math.max(0, math.min(n, tonumber(ARGV[2]) - (minute - n)))
local day
if room > 0 then
    day = redis.call("incrby", KEYS[2], room)
    if day == room then redis.call("expire", KEYS[2], ARGV[3]) end
else
    day = tonumber(redis.call("get", KEYS[2]) or "0")
end
return {minute, day, room, redis.call("pttl", KEYS[1]), redis.call("pttl", KEYS[2])}
"""


def each_request(counted: list[int], n: int) -> list[list[int]]:
    """The counts of each of n requests counted together, as n scripts one after the other
    would have counted them: the i-th request the i-th of the minute's n, and of the day's only
    if the minute had room for it (the first `room` requests); then both windows' PTTL."""
    minute, day, room, minute_ms, day_ms = counted
    return [
        [minute - n + 1 + i, day - room + 1 + i if i < room else day, minute_ms, day_ms]
        for i in range(n)
    ]


COUNT_SCRIPT_SHA = hashlib.sha1(COUNT_SCRIPT.encode()).hexdigest()


def _by_caller(
    batch: list[tuple[tuple[Any, ...], asyncio.Future[list[int]]]],
) -> dict[tuple[Any, ...], list[asyncio.Future[list[int]]]]:
    """A batch's requests by what they count (a caller's windows), in the order they came; a
    request cancelled before it was sent counts nothing."""
    callers: dict[tuple[Any, ...], list[asyncio.Future[list[int]]]] = {}
    for arguments, future in batch:
        if not future.done():
            callers.setdefault(arguments, []).append(future)
    return callers


def _settle(futures: list[asyncio.Future[list[int]]], result: list[int] | Exception) -> None:
    """Give each request its counts, or the error that says Redis gave none."""
    counts = None if isinstance(result, Exception) else each_request(result, len(futures))
    for i, future in enumerate(futures):
        if future.done():  # its request was cancelled (the client left)
            continue
        if counts is None:
            future.set_exception(result)  # type: ignore[arg-type]
        else:
            future.set_result(counts[i])


class RedisCounters:
    """The counts in Redis, through the connection of a `limits` Redis storage (redis-py), so
    that the keys, the connection options and the errors are the library's.

    The counts asked for while a batch is on its way go together in the next batch: one
    pipeline, one round trip, each script still atomic on its own. A lone request is sent at
    once; under load a worker waits for Redis once per batch, not once per request, and the
    requests of one caller in a batch are counted by one script (INCRBY their number), each
    given the count it would have had alone: Redis and redis-py work once per caller a batch.
    """

    def __init__(self, storage: Any) -> None:  # limits.aio.storage.RedisStorage
        self.storage: Storage = storage
        self._prefixed = storage.bridge.prefixed_key
        self._client = storage.bridge.get_connection()
        self._waiting: list[tuple[tuple[Any, ...], asyncio.Future[list[int]]]] = []
        self._sender: asyncio.Task[None] | None = None

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return self.storage.base_exceptions

    async def check(self) -> bool:
        return await self.storage.check()

    async def count(
        self,
        minute_key: str,
        minute_seconds: int,
        minute_limit: int,
        day_key: str,
        day_seconds: int,
    ) -> Counts:
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        keys = (self._prefixed(minute_key), self._prefixed(day_key))
        self._waiting.append(((*keys, minute_seconds, minute_limit, day_seconds), future))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        minute, day, minute_ms, day_ms = await future
        now = time.time()
        return Counts(
            int(minute), int(day), now + max(0, minute_ms) / 1000, now + max(0, day_ms) / 1000
        )

    async def _send(self) -> None:
        batch: list[tuple[tuple[Any, ...], asyncio.Future[list[int]]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                callers = _by_caller(batch)
                pipeline = self._client.pipeline(transaction=False)
                for arguments, futures in callers.items():
                    pipeline.evalsha(COUNT_SCRIPT_SHA, 2, *arguments, len(futures))
                try:
                    results = await pipeline.execute(raise_on_error=False)
                except Exception as exc:  # Redis away: every request of the batch hears it
                    results = [exc] * len(callers)
                unknown = []  # a Redis that started afresh has no scripts: nothing was counted
                for (arguments, futures), result in zip(callers.items(), results, strict=True):
                    if isinstance(result, NoScriptError):
                        unknown += [(arguments, future) for future in futures]
                    else:
                        _settle(futures, result)
                batch = unknown
                if unknown:
                    await self._load_script(unknown)
                batch = []
        finally:
            self._sender = None
            for _, future in batch:  # this task was cancelled (the server stops)
                future.cancel()

    async def _load_script(
        self, unknown: list[tuple[tuple[Any, ...], asyncio.Future[list[int]]]]
    ) -> None:
        """Load the script, and send again the counts Redis did not know it for."""
        try:
            await self._client.script_load(COUNT_SCRIPT)
        except Exception as exc:  # Redis away again: those requests hear it
            for _, future in unknown:
                if not future.done():
                    future.set_exception(exc)
        else:
            self._waiting[:0] = unknown

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        return await self.storage.incr(key, expiry, amount)

    async def get(self, key: str) -> int:
        return await self.storage.get(key)

    async def get_expiry(self, key: str) -> float:
        return await self.storage.get_expiry(key)
