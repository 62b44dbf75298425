"""What every response goes through, whoever sent it (the client, a burst's connection, a
wave's processes): it is recorded, the pacing of its key learns from it (a refusal's
`Retry-After`, a limit's reset), and the run's checks see it."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from conformance.httpclient import responses
from conformance.httpclient.backoff import Pacer, reset_wait, retry_after_seconds
from conformance.httpclient.limit_headers import invalid_value
from conformance.httpclient.recording import Exchange, Recorder
from conformance.httpclient.service_kind import FRONT_REFUSALS, ServiceKind, front_refusal

REFUSALS = (429, 503)
"""Statuses that refuse a request for now: backed off from and retried alike. A proxy's limiter
(nginx's `limit_req`) answers 503 where the service answers 429; one that answers another status
(HAProxy's `deny`: 403) is known by its answer being unlike the service's (`refused`)."""


class Receiver:
    """Records each response through `recorder`, paces its key through `pacer`, and hands it
    to `on_exchange` (the checks run on every response)."""

    def __init__(
        self,
        pacer: Pacer,
        recorder: Recorder,
        on_exchange: Callable[[Exchange], None] | None,
    ):
        self.recorder = recorder
        self._pacer = pacer
        self._on_exchange = on_exchange

    def refused(self, exchange: Exchange) -> bool:
        """Refused for now, so that its `Retry-After` is an order: a 429 (RFC 6585), a 503 (RFC
        9110 section 10.2.3), or a refusal a front made whatever its status. Anywhere else a
        `Retry-After` is information: Flask-Limiter and slowapi send one on every 200, the
        seconds left in the window, and waiting for it would stall a correct server's run."""
        if exchange.status in REFUSALS:
            return True
        return self.by_a_front(exchange)

    def by_a_front(self, exchange: Exchange) -> bool:
        """A refusal made in front of the service (conformance.httpclient.service_kind). A
        burst's 429 or 503 is not read so (the burst's thousands of answers, read again for
        each): where a front refuses every caller, the run's own requests show it."""
        if exchange.status not in FRONT_REFUSALS or (
            exchange.burst and exchange.status in REFUSALS
        ):
            return False
        return front_refusal(exchange, ServiceKind(self.recorder.exchanges))

    def after_response(
        self,
        label: str,
        request: httpx.Request,
        response: httpx.Response,
        body: responses.Body,
        started_at: float,
        elapsed: float,
        pace: bool,
    ) -> Exchange:
        exchange = responses.record(
            self.recorder, label, request, response, body, started_at, elapsed
        )
        return self.receive(label, exchange, pace)

    def receive(self, label: str, exchange: Exchange, pace: bool) -> Exchange:
        """What every response goes through, whoever sent it: pacing learns, checks run."""
        self._learn(label, exchange, pace)
        if self._on_exchange is not None:
            self._on_exchange(exchange)
        return exchange

    def _learn(self, label: str, exchange: Exchange, pace: bool = True) -> None:
        """Update the label's pacing from what the server said about its limits."""
        date = exchange.header("Date")
        front = self.by_a_front(exchange)
        if front or exchange.status in REFUSALS:
            delay = retry_after_seconds(exchange.header("Retry-After"), date, time.time())
            wait = self._pacer.on_429(label, delay, exchange.status, exchange.started_at)
            if front:
                self._pacer.on_front_refusal(label, exchange.status, wait)
            return
        remaining = exchange.header("X-RateLimit-Remaining")
        reset = exchange.header("X-RateLimit-Reset")
        if invalid_value(exchange):
            # A value that fails LIM-HEADERS-VALID (a Remaining of -1, of 1e400, above its
            # Limit) tells nothing of the window: the key is not held for its reset. Refusals
            # (their Retry-After, the back-off) pace it still, as on a server without headers.
            remaining = reset = None
        wait = reset_wait(remaining, reset, date, time.time())
        self._pacer.on_response(label, wait if pace else None)
        kept = self._pacer.kept(label)
        if kept and pace and wait is None:
            held = reset_wait(remaining, reset, date, time.time(), kept)
            if held is not None:
                self._pacer.hold(label, held)
