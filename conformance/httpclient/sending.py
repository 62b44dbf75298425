"""One attempt of one of the client's requests on its pooled session: counted against the
budget, paced on its key, sent while no burst holds the target, resent once where a kept-alive
connection closed as it went out, read within one deadline, then recorded and learnt from."""

from __future__ import annotations

import threading
import time

import httpx

from conformance.httpclient import responses
from conformance.httpclient.backoff import Pacer
from conformance.httpclient.bounds import ResponseTooSlow, response_deadline
from conformance.httpclient.budget import Budget
from conformance.httpclient.connection import TlsFacts, peer_facts
from conformance.httpclient.failures import Failures, may_resend
from conformance.httpclient.receiving import Receiver
from conformance.httpclient.recording import Exchange
from conformance.httpclient.templates import Prepared, build


class Sender:
    """Sends a client's prepared requests, one at a time from each thread, on `http`."""

    def __init__(
        self,
        http: httpx.Client,
        pacer: Pacer,
        budget: Budget,
        failures: Failures,
        receiver: Receiver,
        response_seconds: float,
    ):
        self._http = http
        self._pacer = pacer
        self._budget = budget
        self._failures = failures
        self._receiver = receiver
        self._response_seconds = response_seconds
        # Held per send; held across a burst by `ConformanceClient.exclusive()`.
        self.gate = threading.RLock()
        self.tls_facts: TlsFacts | None = None  # of the first HTTPS response

    def send_once(self, prepared: Prepared, pace: bool = True, kept: bool = False) -> Exchange:
        """One attempt: budget, pacing, send, record, learn from the response, report. `kept`:
        it may use the requests its key keeps (`Pacer.keep`)."""
        self._budget.count(prepared.label)
        while True:
            self._pacer.wait_until_ready(prepared.label, kept)
            self.gate.acquire()
            # A burst on another thread may have limited this key while we waited for the gate.
            if self._pacer.remaining(prepared.label, kept) <= 0:
                break
            self.gate.release()
        try:
            for attempt in (1, 2):
                request = build(self._http, prepared)
                started_at, started = time.time(), time.perf_counter()
                try:
                    response, body = self._exchange(request)
                    break
                except ResponseTooSlow:
                    raise self._failures.too_slow(request) from None
                except httpx.LocalProtocolError as error:
                    # Our own request was not valid HTTP: a defect of the suite, not the target's.
                    raise ValueError(f"cannot send this request: {error}") from None
                except httpx.TransportError as error:
                    if attempt == 1 and may_resend(error, request):
                        self._budget.count(prepared.label)
                        continue
                    raise self._failures.of(error, request) from None
            elapsed = time.perf_counter() - started
        finally:
            self.gate.release()
        return self._receiver.after_response(
            prepared.label, request, response, body, started_at, elapsed, pace
        )

    def _exchange(self, request: httpx.Request) -> tuple[httpx.Response, responses.Body]:
        """Send and read the response, its body as a stream, all within one deadline."""
        with response_deadline(self._response_seconds):
            response = self._http.send(request, stream=True)
            try:
                if self.tls_facts is None and request.url.scheme == "https":
                    self.tls_facts = peer_facts(response)  # while the connection is open
                return response, responses.read(response)
            finally:
                response.close()
