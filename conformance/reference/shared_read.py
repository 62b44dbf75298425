"""One read shared by the requests that wait for it at the same time, never one that started
before a request arrived.

A listing from PostgreSQL cannot be kept between requests: other instances write, and knowing
whether they did costs the round trip the listing itself does. But a request that arrives while
`at_once` reads are under way may wait for the next read, together with every request that
arrives before that read starts: it starts after each of them arrived, so it sees every
category committed before any of them was sent (a 201 from any instance included), exactly as
a read of their own would. Under load a worker then reads a few times per round trip, not once
per request; a lone request starts its read at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedRead(Generic[T]):
    def __init__(self, read: Callable[[], Awaitable[T]], at_once: int = 1) -> None:
        self._read = read
        self._at_once = at_once
        self._pending: asyncio.Future[T] | None = None  # the read not yet started
        self._running = 0
        self._tasks: set[asyncio.Task[None]] = set()  # kept, or the loop may lose them

    async def __call__(self) -> T:
        if self._pending is None:
            self._pending = asyncio.get_running_loop().create_future()
        waited = self._pending
        if self._running < self._at_once:
            self._start()
        # Shielded: a waiter that is cancelled (its client left) leaves the others their read.
        return await asyncio.shield(waited)

    def _start(self) -> None:
        future, self._pending = self._pending, None  # later arrivals wait for another read
        assert future is not None
        self._running += 1
        task = asyncio.create_task(self._run(future))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, future: asyncio.Future[T]) -> None:
        try:
            result = await self._read()
        except Exception as exc:  # every waiter of this read gets its failure
            future.set_exception(exc)
            future.exception()  # retrieved, should every waiter have left
        else:
            future.set_result(result)
        finally:
            if not future.done():  # this task was cancelled (the server stops)
                future.cancel()
            self._running -= 1
            if self._pending is not None and self._running < self._at_once:
                self._start()
