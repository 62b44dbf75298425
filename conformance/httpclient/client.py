"""The one HTTP client of the suite: paced per key, inside a budget, recording redacted exchanges.

Hand-written scenarios and generated tests alike send through `ConformanceClient`, so that three
promises hold for the whole run, whatever a test does:

- we are a good citizen on a shared server (a refusal's `Retry-After`, exponential back-off with
  jitter, no request on a limited key before its wait is over, a request budget; see
  `conformance.httpclient.backoff`);
- every request and response is recorded as an `Exchange`, the evidence the report shows;
- no API key ever reaches a recorded exchange, a message or a curl line: tests name a key by its
  label ("main", "spare") or by a placeholder (`"bearer {main}"`), and the secret is put in only
  at send time.
"""

from __future__ import annotations

import contextlib
import random
import ssl
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from conformance import __version__
from conformance.httpclient import sessions
from conformance.httpclient.backoff import (
    Clock,
    Pacer,
    RunOver,
    SystemClock,
    TargetThrottled,
    WaitListener,
)
from conformance.httpclient.bounds import RESPONSE_SECONDS
from conformance.httpclient.budget import Budget
from conformance.httpclient.burst_hooks import BurstHooks
from conformance.httpclient.connection import TlsFacts, proxy_credentials
from conformance.httpclient.failures import Failures, TargetUnreachable
from conformance.httpclient.receiving import Receiver
from conformance.httpclient.recording import RESPONSE_BODY_LIMIT, Exchange, Recorder
from conformance.httpclient.redaction import Secrets
from conformance.httpclient.sending import Sender
from conformance.httpclient.templates import UNSET, Templates

__all__ = [
    "Clock",
    "ConformanceClient",
    "Exchange",
    "RESPONSE_BODY_LIMIT",
    "RunOver",
    "TargetThrottled",
    "TargetUnreachable",
]

DEFAULT_USER_AGENT = f"petstore-conformance/{__version__}"
"""A target may answer this name better than others (it cannot be hidden from a black box):
the statement, the report and the manifest say which name a run used; --user-agent sets another."""
MAX_ATTEMPTS = 4
"""Attempts per request when retrying 429s: enough to ride out a window, few enough to be polite."""


class ConformanceClient:
    """Sends the suite's requests, paced per key and inside the request budget (`budget`).

    Requests go one at a time from each thread; the exhaustion burst sends many at once on the
    key it exhausts, through `burst` (`conformance.httpclient.burst_hooks`). Bookkeeping is
    thread-safe, and `exclusive()` keeps other threads from sending while a burst needs the
    target to itself.
    """

    def __init__(
        self,
        base_url: str,
        keys: dict[str, str],
        *,
        max_requests: int | None = None,
        max_wait: float = 120.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
        on_wait: WaitListener | None = None,
        body_dir: Path | None = None,
        allow_key_in_url: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        curl_options: Sequence[str] = (),
        user_agent: str = DEFAULT_USER_AGENT,
        response_seconds: float = RESPONSE_SECONDS,
        deadline: float | None = None,
    ):
        self.base_url = base_url
        # One bound on a response, whole (bounds.py) and each read of it: one can be no longer
        # than the other, so they are one setting.
        self.response_seconds = response_seconds
        secrets = Secrets(keys, proxy_credentials(proxy))
        self._pacer = Pacer(clock or SystemClock(), rng or random.Random(), max_wait, on_wait)
        if deadline is not None:
            self._pacer.set_deadline(deadline)
        self.budget = Budget(max_requests, self._pacer.check)
        self._templates = Templates(base_url, secrets, user_agent, allow_key_in_url)
        self._failures = Failures(secrets, proxy, response_seconds)
        self._receiver = Receiver(
            self._pacer, Recorder(secrets, body_dir, curl_options), on_exchange
        )
        # Made once: a burst opens a session per connection, and loading the CA certificates
        # anew for each costs tens of milliseconds that stall every request in flight.
        ssl_context = ssl_context or httpx.create_ssl_context()
        # The proxy is decided by the caller (conformance.httpclient.connection), not read again by
        # httpx from the environment: the report names the one every request went through.
        headers = self._templates.default_headers()
        self._http = sessions.session(transport, ssl_context, proxy, response_seconds, headers)
        self._sender = Sender(
            self._http, self._pacer, self.budget, self._failures, self._receiver, response_seconds
        )
        self.burst = BurstHooks(
            templates=self._templates,
            budget=self.budget,
            failures=self._failures,
            receiver=self._receiver,
            http=self._http,
            ssl_context=ssl_context,
            proxy=proxy,
            async_transport=async_transport,
            response_seconds=response_seconds,
        )

    # -- public API -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        key: str | None = "main",
        authorization: str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        json: Any = UNSET,
        content: bytes | str | None = None,
        retry_on_429: bool = True,
        pace: bool = True,
        kept: bool = False,
    ) -> Exchange:
        """Send one request (retrying 429s and 503s up to 4 attempts in all) and return the last
        exchange.

        `pace=False` keeps this response's `X-RateLimit-Remaining: 0` from holding the next
        request until the reset: the one way to send the request that proves a 429. `kept=True`
        may use the requests its key keeps for a scenario (`keep`). The
        `Retry-After` of a refusal (`refused`) is always honoured; on any other response it
        is information, never waited for.

        `key` names the credential sent as `Authorization: Bearer <key>`; `authorization` instead
        gives the header as a template (`"bearer {main}"`, `"Bearer not-a-key"`); `params` and
        `headers` values may hold the same placeholders.
        """
        prepared = self._templates.prepare(
            method, path, key, authorization, headers, params, json, content
        )
        exchange = self._sender.send_once(prepared, pace, kept)
        attempts = 1
        while self.refused(exchange) and retry_on_429 and attempts < MAX_ATTEMPTS:
            exchange = self._sender.send_once(prepared, pace, kept)
            attempts += 1
        return exchange

    def refused(self, exchange: Exchange) -> bool:
        """Refused for now, so that its `Retry-After` is an order (`Receiver.refused`)."""
        return self._receiver.refused(exchange)

    def get(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("POST", path, **kwargs)

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange of the run, in the order responses arrived (a copy)."""
        return self._receiver.recorder.exchanges

    def requests_per_key(self) -> dict[str, int]:
        """Requests sent per key label, for the report: what the run cost each credential."""
        return self.budget.per_label()

    def set_wait_listener(self, listener: WaitListener | None) -> None:
        """Who is told, before a key sleeps out a limit, how long and why."""
        self._pacer.on_wait = listener

    def seconds_waited_per_key(self) -> dict[str, float]:
        """Seconds each key label spent waiting out limits and back-off."""
        return dict(self._pacer.waited)

    @property
    def requests_sent(self) -> int:
        """Requests sent in all, including attempts that got no response."""
        return self.budget.sent

    @property
    def max_requests(self) -> int | None:
        """The request budget (--max-requests); None: no limit."""
        return self.budget.max_requests

    @property
    def tls_facts(self) -> TlsFacts | None:
        """The facts of the run's TLS connection, from its first HTTPS response."""
        return self._sender.tls_facts

    @property
    def max_wait(self) -> float:
        """The longest this run waits for one key."""
        return self._pacer.max_wait

    def halt(self, reason: str) -> None:
        """Send nothing more, from any thread: each later request raises RunOver(reason)."""
        self._pacer.halt(reason)

    def wait_until_ready(self, key: str) -> float:
        """Block until the key label may send again; returns the seconds waited.

        Raises TargetThrottled when the wait would exceed max_wait.
        """
        return self._pacer.wait_until_ready(key)

    def wait(self, key: str, seconds: float, reason: str) -> float:
        """Hold the key label for `seconds` (a scenario waiting for a reset) and wait it out,
        so that the wait is paced, counted and announced like any other. The run chose it:
        the bound on a key refused on end does not cut it off (`Pacer.wait_until_ready`)."""
        if seconds > 0:
            self._pacer.block(key, seconds, reason)
        return self._pacer.wait_until_ready(key, scheduled=True)

    def keep(self, key: str, count: int) -> None:
        """Keep the last `count` requests of the key label's window for requests sent with
        `kept=True`; the others wait for its reset instead (`Pacer.keep`). 0 ends it."""
        self._pacer.keep(key, count)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """While held, requests from other threads wait: a burst judged request by request
        must not have another key's traffic, or the same key's, interleaved with it."""
        with self._sender.gate:
            yield

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConformanceClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
