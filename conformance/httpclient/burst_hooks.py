"""What the exhaustion burst (`conformance.burst`) sends through: its async sessions and
requests, the GET its own transport repeats, and its responses recorded, learnt from and
checked like the client's. Its requests count against the client's budget (`client.budget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator

import httpx

from conformance.httpclient import responses, sessions
from conformance.httpclient.bounds import BODY, response_tally
from conformance.httpclient.budget import Budget
from conformance.httpclient.failures import Failures, TargetUnreachable, may_resend
from conformance.httpclient.receiving import Receiver
from conformance.httpclient.recording import Exchange, Sent
from conformance.httpclient.templates import Templates, build


class BurstHooks:
    """A client's side for its burst: the same templates, budget, session defaults and
    recording, and the same SSL context and proxy, as the requests the client sends itself."""

    def __init__(
        self,
        *,
        templates: Templates,
        budget: Budget,
        failures: Failures,
        receiver: Receiver,
        http: httpx.Client,
        ssl_context: ssl.SSLContext,
        proxy: str | None,
        async_transport: httpx.AsyncBaseTransport | None,
        response_seconds: float,
    ):
        self._templates = templates
        self._budget = budget
        self._failures = failures
        self._receiver = receiver
        self._http = http  # builds the requests, as it does the client's
        self.ssl_context = ssl_context
        self._proxy = proxy
        self._async_transport = async_transport
        self.response_seconds = response_seconds

    @contextlib.asynccontextmanager
    async def async_session(self, connections: int) -> AsyncIterator[httpx.AsyncClient]:
        """An HTTP session for `send_async`, with as many connections as the burst sends at once."""
        async with sessions.async_session(
            self._async_transport,
            self.ssl_context,
            self._proxy,
            self.response_seconds,
            self._templates.default_headers(),
            connections,
        ) as session:
            yield session

    async def send_async(
        self, session: httpx.AsyncClient, method: str, path: str, *, key: str
    ) -> Exchange:
        """One request on `key`, sent without pacing (a burst judges its own), inside the budget,
        recorded and checked like any other; 429s are not retried."""
        prepared = self._templates.prepare(method, path, key)
        for attempt in (1, 2):
            self._budget.count(prepared.label)
            request = build(self._http, prepared)
            started_at, started = time.time(), time.perf_counter()
            try:
                async with asyncio.timeout(self.response_seconds):
                    with response_tally():
                        response = await session.send(request, stream=True)
                        body = await responses.read_async(response)
                break
            except httpx.TransportError as error:
                if attempt == 1 and may_resend(error, request):
                    continue
                raise self._failures.of(error, request) from None
            except TimeoutError:
                raise self._failures.too_slow(request) from None
        elapsed = time.perf_counter() - started
        return self._receiver.after_response(
            prepared.label, request, response, body, started_at, elapsed, False
        )

    # -- what the burst's own transport (conformance.burst.transport) shares -----------------

    def burst_request(self, path: str, key: str) -> tuple[str, Sent] | None:
        """The GET a burst repeats on `key`, as its transport must send it (the key expanded:
        never to be recorded as such), with the key's label. None where that transport does
        not go: through a proxy, or where a transport was given (tests); httpx sends then."""
        if self._proxy is not None or self._async_transport is not None:
            return None
        prepared = self._templates.prepare("GET", path, key)
        headers = [*self._templates.default_headers().items(), *prepared.headers.items()]
        return prepared.label, Sent("GET", str(prepared.url), headers, b"")

    def record_answer(
        self,
        label: str,
        sent: Sent,
        status: int,
        headers: list[tuple[str, str]],
        text: str,
        times: tuple[float, float],
        cut: tuple[int, str] | None = None,
        body_cut: bool = False,
    ) -> Exchange:
        """A burst's response: recorded, learnt from and checked like any other (no pacing:
        a burst judges its own). `times` is when it was sent (epoch) and how long it took;
        `cut`, the bound it went past and what went past it, where it did; `body_cut`, that
        `text` is not the whole body as the checks would read it (a success kept in part)."""
        recorder = self._receiver.recorder
        too_large, what = cut or (0, BODY)
        exchange = recorder.record(
            label,
            sent,
            status,
            headers,
            text,
            *times,
            burst=True,
            too_large=too_large,
            too_large_what=what,
            body_cut=body_cut,
        )
        return self._receiver.receive(label, exchange, False)

    def unreachable(self, url: str, reason: str) -> TargetUnreachable:
        return self._failures.unreachable(url, reason)
