"""A wave of the burst sent from several processes, where one core cannot send it in time.

Each process sends its share of the wave on its own connections (`burst_transport.Connection`)
and brings back its answers as plain tuples; this process then counts, records, learns from and
checks them through the client, in the order they were sent, exactly as if it had sent them.
What the client promises holds across the processes:

- The budget: the whole wave, and a resend for each connection, is reserved before any process
  starts (a wave the budget cannot cover goes from one process); what was not sent is given
  back, so the counts are exact.
- No key past its 429: the processes share one stop flag, set at the first response that is not
  served; none starts a request after it has seen it, so only requests already in flight follow.
- No key in any output: the processes record nothing; the recorder redacts as ever.

The processes are forked: they start in milliseconds, holding the request's bytes and the TLS
context this process made, and touch nothing else of it. They hand their answers back in
pickled batches as they go, and this process records them once all are done: beside the
senders it would slow them, and unpickled all at once, 60,000 answers would double its memory.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import pickle
import sys
from dataclasses import dataclass
from multiprocessing.synchronize import Event

from conformance import interruption
from conformance.burst.transport import Answer, BurstRequest, Connection, SendFailed, record_answer
from conformance.httpclient.client import ConformanceClient
from conformance.httpclient.recording import Exchange


@dataclass(frozen=True)
class Share:
    """What one process sends: `requests` over `connections`."""

    requests: int
    connections: int


BATCH = 500
"""Answers a process sends back at a time: it holds no more than that, and this process keeps
them pickled (a few hundred bytes each) until the wave is over."""
ANSWERS, DONE = b"A", b"D"  # what a message holds: a batch of answers, or the share's end


@dataclass
class Ended:
    """How one process's share ended."""

    attempts: int = 0  # requests that went out, resends included
    failure: str = ""  # why a request got no response, where one did not


def forkable() -> bool:
    """Linux only: Windows cannot fork, and on macOS a forked child of a process with threads
    (this one has the run's) may crash in system libraries (Python's own docs say so)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def shares(requests: int, connections: int, processes: int) -> list[Share]:
    """The wave dealt out as evenly as it goes; every process gets a connection at least."""
    processes = max(1, min(processes, requests, connections))
    return [
        Share(
            requests // processes + (index < requests % processes),
            connections // processes + (index < connections % processes),
        )
        for index in range(processes)
    ]


def send_from_processes(
    client: ConformanceClient, label: str, request: BurstRequest, wave_shares: list[Share]
) -> list[Exchange] | None:
    """The wave's exchanges, recorded through the client; None, having sent nothing, where the
    budget cannot cover the wave and its resends (one process sends it then, up to the budget)
    or where processes cannot be forked (off Linux)."""
    if not forkable():
        return None
    reserved = sum(share.requests + share.connections for share in wave_shares)
    if not client.budget.reserve(label, reserved):
        return None
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    pipes: dict[multiprocessing.connection.Connection, multiprocessing.process.BaseProcess] = {}
    for share in wave_shares:
        ours, theirs = context.Pipe(duplex=False)
        arguments = (request, client, share, stop, theirs)
        process = context.Process(target=_send_share, args=arguments, daemon=True)
        process.start()
        theirs.close()
        pipes[ours] = process
    batches, ended = _collect(pipes)
    client.budget.give_back(label, reserved - sum(end.attempts for end in ended))
    exchanges: list[Exchange] = []
    while batches:  # recorded once every process is done, not beside them; freed as it goes
        for answer in pickle.loads(batches.pop(0)):
            exchanges.append(record_answer(client, label, request, answer))
    failures = [end.failure for end in ended if end.failure]
    if failures:
        raise client.burst.unreachable(str(request.url), failures[0])
    return exchanges


def _collect(
    pipes: dict[multiprocessing.connection.Connection, multiprocessing.process.BaseProcess],
) -> tuple[list[bytes], list[Ended]]:
    """Every process's batches (still pickled) and ends, read as they come: a process whose
    pipe is full would stop sending."""
    batches: list[bytes] = []
    ended: list[Ended] = []
    while pipes:
        for pipe in multiprocessing.connection.wait(list(pipes)):
            try:
                message = pipe.recv_bytes()  # type: ignore[union-attr]
            except EOFError:
                process = pipes.pop(pipe)  # type: ignore[arg-type]
                process.join()
                if process.exitcode != 0:
                    why = f"a process sending the burst ended with exit status {process.exitcode}"
                    ended.append(Ended(failure=why))
                continue
            if message[:1] == ANSWERS:
                batches.append(message[1:])
            else:
                ended.append(pickle.loads(message[1:]))
    return batches, ended


def _send_share(
    request: BurstRequest,
    client: ConformanceClient,
    share: Share,
    stop: Event,
    pipe: multiprocessing.connection.Connection,
) -> None:
    """In a forked process: send the share, handing back its answers as they come."""
    interruption.as_in_a_child()
    end = Ended()
    try:
        asyncio.run(_send(request, client, share, stop, end, pipe))
    except SendFailed as failed:
        end.failure = str(failed)
        stop.set()  # the other processes' requests would meet the same
    except Exception as error:  # noqa: BLE001 - said in one line here, not as a traceback there
        end.failure = f"a process sending the burst failed ({type(error).__name__}: {error})"
        stop.set()
    pipe.send_bytes(DONE + pickle.dumps(end))
    pipe.close()


async def _send(
    request: BurstRequest,
    client: ConformanceClient,
    share: Share,
    stop: Event,
    end: Ended,
    pipe: multiprocessing.connection.Connection,
) -> None:
    left = share.requests
    batch: list[Answer] = []

    def count() -> None:
        end.attempts += 1

    def hand_back() -> None:
        pipe.send_bytes(ANSWERS + pickle.dumps(batch))
        batch.clear()

    async def connection() -> None:
        nonlocal left
        sending = Connection(request, client.burst.ssl_context, client.response_seconds, count)
        try:
            while left > 0 and not stop.is_set():
                left -= 1
                answer = await sending.send()
                batch.append(answer)
                if len(batch) >= BATCH:
                    hand_back()
                if not 200 <= answer[0] < 300:
                    stop.set()
        finally:
            sending.close()

    try:
        outcomes = await asyncio.gather(
            *(connection() for _ in range(share.connections)), return_exceptions=True
        )
    finally:
        if batch:
            hand_back()
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
