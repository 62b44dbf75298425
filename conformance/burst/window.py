"""Spending one window from its start: what its opening response announced, and one beyond.

The bulk goes as a wave (`conformance.burst.spender`), the last few one at a time: a wave's
concurrent requests cannot tell a Remaining one too high (counted after answering) from requests
in flight, while a request sent after the answer that said `Remaining: 1` must be served.

A window's quota is what a client spends in a minute, so its wave goes as a client would send
it: on a few kept-alive connections, not one connection a request (a correct server whose listen
backlog is Python's `http.server` default of 5 cannot take 60 connections at once).
"""

from __future__ import annotations

import dataclasses
import math

from conformance.burst.spender import PATH, fallback_wave, plan_wave, round_trip, send_wave
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.ratelimit import ServerClock, Snapshot, snapshot

LAST_ONE_AT_A_TIME = 3
"""A window's last announced requests, and the one beyond, sent one at a time."""
LONGEST_WINDOW = 60.0
REQUESTS_PER_CONNECTION = 15
"""Fewest requests each connection of a window's wave carries: a minute's 60 go on 4."""


def spend_window(
    client: ConformanceClient, label: str, requests: int, opening: Snapshot
) -> list[Snapshot]:
    """`requests` GETs on `label`: all but the last few as a wave, the rest one at a time,
    each part stopping at its first refusal."""
    together = max(0, requests - LAST_ONE_AT_A_TIME)
    sent: list[Exchange] = []
    if together:
        clock = ServerClock.of(client.exchanges)
        left = LONGEST_WINDOW
        if opening.reset is not None:
            left = min(LONGEST_WINDOW, clock.seconds_left(opening.reset))
        trip = round_trip(client.exchanges, label)
        wave = plan_wave(together, trip, left) or fallback_wave(together, trip, left)
        few = min(wave.connections, math.ceil(together / REQUESTS_PER_CONNECTION))
        wave = dataclasses.replace(wave, connections=few, processes=min(wave.processes, few))
        sent = sorted(send_wave(client, label, wave), key=lambda e: e.started_at)
    while len(sent) < requests and all(200 <= e.status < 300 for e in sent):
        sent.append(client.get(PATH, key=label, retry_on_429=False, pace=False))
    return [snapshot(e) for e in sent]
