"""Listings shared by the requests waiting at the same time
(`conformance/reference/shared_read.py`): never a read that started before a request arrived."""

from __future__ import annotations

import asyncio

import pytest

from conformance.reference.shared_read import SharedRead


class GatedReads:
    """Reads numbered as they start, each ending when the test releases it."""

    def __init__(self) -> None:
        self.started = 0
        self.gates: list[asyncio.Event] = []
        self.failures: set[int] = set()

    async def read(self) -> int:
        self.started += 1
        number = self.started
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()
        if number in self.failures:
            raise RuntimeError(f"read {number} failed")
        return number


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_request_never_gets_a_read_that_started_before_it():
    async def scenario() -> list[int]:
        reads = GatedReads()
        shared = SharedRead(reads.read)
        first = asyncio.create_task(shared())
        await settle()
        assert reads.started == 1
        later = [asyncio.create_task(shared()) for _ in range(3)]  # while read 1 runs
        await settle()
        assert reads.started == 1  # they wait; no read of their own each
        reads.gates[0].set()
        await settle()
        assert reads.started == 2  # the next read starts once the first ends
        reads.gates[1].set()
        return [await task for task in (first, *later)]

    assert asyncio.run(scenario()) == [1, 2, 2, 2]


def test_reads_at_once_and_failures_reach_every_waiter():
    async def scenario() -> None:
        reads = GatedReads()
        reads.failures = {2}
        shared = SharedRead(reads.read, at_once=2)
        one, two = asyncio.create_task(shared()), asyncio.create_task(shared())
        await settle()
        assert reads.started == 2  # two at once: the second arrival starts its own
        three, four = asyncio.create_task(shared()), asyncio.create_task(shared())
        await settle()
        reads.gates[1].set()  # read 2 fails: only its waiter hears it
        await settle()
        with pytest.raises(RuntimeError, match="read 2"):
            await two
        assert reads.started == 3  # three and four share read 3, started after they came
        three.cancel()  # a waiter that leaves takes nobody's read with it
        reads.gates[0].set()
        reads.gates[2].set()
        assert await one == 1 and await four == 3
        with pytest.raises(asyncio.CancelledError):
            await three

    asyncio.run(scenario())
