"""The limiter's counts (`conformance/reference/counters.py`): fixed windows counted in one call,
in memory and in Redis alike."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from conformance.reference import counters
from conformance.reference.counters import MemoryCounters, RedisCounters
from conformance.reference.limiting import RequestLimits
from tests.shared.services import REDIS_URL, forget_redis_keys

MINUTE, DAY = 60, 86_400


def test_memory_windows_count_restart_and_are_swept(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr(counters.time, "time", lambda: now[0])
    store = MemoryCounters()

    async def count() -> counters.Counts:
        return await store.count("m", MINUTE, 2, "d", DAY)

    async def scenario() -> None:
        first = await count()
        assert first == (1, 1, now[0] + MINUTE, now[0] + DAY)
        assert (await count())[:2] == (2, 2)
        # Over the minute: the day is read, not counted.
        assert (await count())[:2] == (3, 2)
        assert await store.get("d") == 2
        now[0] += MINUTE  # the minute's window has ended: a new one, the day goes on
        again = await count()
        assert again == (1, 3, now[0] + MINUTE, first.day_ends)
        now[0] += DAY
        assert await store.get("m") == 0 and await store.get_expiry("d") == now[0]
        await store.incr("other", 5)  # the next count sweeps what has ended
        now[0] += counters.SWEEP_SECONDS
        await count()
        assert sorted(store._counts) == ["d", "m"]

    asyncio.run(scenario())


@pytest.mark.redis
def test_redis_counts_as_memory_does():
    run = secrets.token_hex(8)
    minute_key, day_key = f"petstore-test/m/{run}", f"petstore-test/d/{run}"

    async def sequence(store: MemoryCounters | RedisCounters) -> list[counters.Counts]:
        return [await store.count(minute_key, MINUTE, 3, day_key, DAY) for _ in range(5)]

    async def scenario() -> tuple[list[counters.Counts], list[counters.Counts]]:
        limits = RequestLimits(REDIS_URL, MINUTE)  # the reference's own connection options
        await limits.open()
        assert isinstance(limits.storage, RedisCounters)
        return await sequence(MemoryCounters()), await sequence(limits.storage)

    started = time.time()
    try:
        in_memory, in_redis = asyncio.run(scenario())
    finally:
        forget_redis_keys(run)
    assert [c[:2] for c in in_redis] == [c[:2] for c in in_memory]
    assert [c[:2] for c in in_redis] == [(1, 1), (2, 2), (3, 3), (4, 3), (5, 3)]
    for _, _, minute_ends, day_ends in in_redis:
        assert started + MINUTE - 1 < minute_ends <= time.time() + MINUTE
        assert started + DAY - 1 < day_ends <= time.time() + DAY


@pytest.mark.redis
def test_redis_counts_requests_waiting_together_as_one_by_one():
    """The requests of a moment go in one batch, each caller's counted by one script (INCRBY
    their number): each still gets the counts it would have had alone, the day counting only
    those the minute had room for, in the order they came, batch after batch."""
    run = secrets.token_hex(8)
    keys = {who: (f"petstore-test/m/{who}/{run}", f"petstore-test/d/{who}/{run}") for who in "ab"}
    order = "aababaaa"  # a: 6 (over its minute's 3 within one batch), b: 2

    def count(store: MemoryCounters | RedisCounters, who: str):  # noqa: ANN202
        minute_key, day_key = keys[who]
        return store.count(minute_key, MINUTE, 3, day_key, DAY)

    async def together(store: RedisCounters) -> list[counters.Counts]:
        return list(await asyncio.gather(*(count(store, who) for who in order)))

    async def scenario() -> tuple[list[counters.Counts], list[counters.Counts]]:
        limits = RequestLimits(REDIS_URL, MINUTE)
        await limits.open()
        assert isinstance(limits.storage, RedisCounters)
        memory = MemoryCounters()
        alone = [await count(memory, who) for who in order + order]
        return alone, await together(limits.storage) + await together(limits.storage)

    try:
        alone, in_redis = asyncio.run(scenario())
    finally:
        forget_redis_keys(run)
    assert [c[:2] for c in in_redis] == [c[:2] for c in alone]
    assert [c[:2] for c, who in zip(in_redis, order + order, strict=True) if who == "a"] == [
        (1, 1), (2, 2), (3, 3), (4, 3), (5, 3), (6, 3),
        (7, 3), (8, 3), (9, 3), (10, 3), (11, 3), (12, 3),
    ]  # fmt: skip
