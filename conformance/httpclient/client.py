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

import asyncio
import codecs
import contextlib
import http.cookiejar
import json as jsonlib
import random
import re
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from conformance import __version__
from conformance.httpclient.backoff import (
    Clock,
    Pacer,
    RunOver,
    SystemClock,
    TargetThrottled,
    WaitListener,
    reset_wait,
    retry_after_seconds,
)
from conformance.httpclient.bounds import (
    ACCEPT_ENCODING,
    MAX_BODY_BYTES,
    RESPONSE_SECONDS,
    BodyReader,
    BodyTooLarge,
    ResponseTooSlow,
    bound_transport,
    read_body,
    response_deadline,
    too_slow_message,
)
from conformance.httpclient.connection import (
    TlsFacts,
    explain_failure,
    peer_facts,
    proxy_credentials,
    without_credentials,
)
from conformance.httpclient.recording import RESPONSE_BODY_LIMIT, Exchange, Recorder, Sent
from conformance.httpclient.redaction import Secrets
from conformance.httpclient.service_kind import FRONT_REFUSALS, ServiceKind, front_refusal

__all__ = [
    "BudgetExhausted",
    "Clock",
    "ConformanceClient",
    "Exchange",
    "RESPONSE_BODY_LIMIT",
    "RunOver",
    "TargetThrottled",
    "TargetUnreachable",
]

MAX_ATTEMPTS = 4
"""Attempts per request when retrying 429s: enough to ride out a window, few enough to be polite."""
REFUSALS = (429, 503)
"""Statuses that refuse a request for now: backed off from and retried alike. A proxy's limiter
(nginx's `limit_req`) answers 503 where the service answers 429; one that answers another status
(HAProxy's `deny`: 403) is known by its answer being unlike the service's (`refused`)."""
NO_KEY = "none"
POOL_LIMITS = httpx.Limits(keepalive_expiry=1.0)
"""A connection idle for a second is not used again: servers close idle keep-alive connections
after 2 s (gunicorn) or 5 s (uvicorn, Node), and one closed as a request goes out on it fails it
(a GET is resent once; with two such stale connections in the pool the run had no verdict)."""


class BudgetExhausted(Exception):
    """The request budget (--max-requests) is spent: sending more would break the user's limit."""


class TargetUnreachable(Exception):
    """The target could not be reached (refused, DNS, timeout); the message is one line."""


class _Unset:
    """Marks `json` as not given, so that `json=None` can still send the JSON literal null."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def may_resend(error: httpx.TransportError, request: httpx.Request) -> bool:
    """The server closed the connection as the request went out, with no response: what a
    keep-alive connection closed for idleness (or by a proxy) does at the wrong moment. The
    request never reached the service; a client resends an idempotent one once, on a fresh
    connection (RFC 9110 section 9.2.2). A server that does it every time stays unreachable."""
    return (
        isinstance(error, httpx.RemoteProtocolError)
        and "without sending a response" in str(error)
        and request.method in IDEMPOTENT_METHODS
    )


def no_cookies() -> http.cookiejar.CookieJar:
    """A jar that keeps nothing: the interface is bearer-only, and a cookie sent back would let
    a target tell the checker's requests from others' (and answer them differently)."""
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def _unreachable_reason(error: httpx.TransportError, timeout: float) -> str:
    if isinstance(error, httpx.TimeoutException):
        return f"no response within {timeout:g} s ({type(error).__name__})"
    return failure_reason(error)


def failure_reason(error: Exception) -> str:
    """A connection's failure in one line, in the user's words where we know them."""
    text = " ".join(str(error).split()) or type(error).__name__
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    return explain_failure(text) or text[:1].lower() + text[1:]


@dataclass(frozen=True)
class _Body:
    """A response body as read: all of it, or its first MAX_BODY_BYTES (`too_large`)."""

    content: bytes
    too_large: bool


@dataclass
class _Prepared:
    """A request ready to send, secrets already expanded; never recorded as such."""

    label: str
    method: str
    url: httpx.URL
    headers: dict[str, str]
    json: Any
    content: bytes | str | None


class ConformanceClient:
    """Sends the suite's requests, paced per key and inside the request budget.

    Requests go one at a time from each thread; `send_async` lets the exhaustion burst send
    many at once on the key it exhausts. Bookkeeping is thread-safe, and `exclusive()` keeps
    other threads from sending while a burst needs the target to itself.
    """

    def __init__(
        self,
        base_url: str,
        keys: dict[str, str],
        *,
        max_requests: int | None = None,
        timeout: float = 10.0,
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
        user_agent: str = f"petstore-conformance/{__version__}",
        response_seconds: float = RESPONSE_SECONDS,
        deadline: float | None = None,
    ):
        self.base_url = base_url
        self.user_agent = user_agent
        self.max_requests = max_requests
        self.timeout = timeout
        self.response_seconds = response_seconds
        self._secrets = Secrets(keys, proxy_credentials(proxy))
        self._pacer = Pacer(clock or SystemClock(), rng or random.Random(), max_wait, on_wait)
        if deadline is not None:
            self._pacer.set_deadline(deadline)
        self._on_exchange = on_exchange
        self._recorder = Recorder(self._secrets, body_dir, curl_options)
        self._allow_key_in_url = allow_key_in_url
        self._sent_per_label: dict[str, int] = {}
        self._async_transport = async_transport
        # Made once: a burst opens a session per connection, and loading the CA certificates
        # anew for each costs tens of milliseconds that stall every request in flight.
        self._ssl_context = ssl_context or httpx.create_ssl_context()
        # The proxy is decided by the caller (conformance.httpclient.connection), not read again by
        # httpx from the environment: the report names the one every request went through.
        self._proxy = proxy
        self.tls_facts: TlsFacts | None = None  # of the first HTTPS response
        self._lock = threading.Lock()  # budget and counts
        self._gate = threading.RLock()  # held per send; held across a burst by `exclusive()`
        if transport is None:
            # The proxy goes to this transport alone: one httpx made for it would not be bound.
            transport = bound_transport(
                httpx.HTTPTransport(
                    verify=self._ssl_context, proxy=proxy, trust_env=False, limits=POOL_LIMITS
                )
            )
        self._http = httpx.Client(
            transport=transport,
            trust_env=False,
            timeout=timeout,
            follow_redirects=False,  # a redirect is something to check, not to follow silently
            headers=self._default_headers(),
            cookies=no_cookies(),
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
    ) -> Exchange:
        """Send one request (retrying 429s and 503s up to 4 attempts in all) and return the last
        exchange.

        `pace=False` keeps this response's `X-RateLimit-Remaining: 0` from holding the next
        request until the reset: the one way to send the request that proves a 429. The
        `Retry-After` of a refusal (`refused`) is always honoured; on any other response it
        is information, never waited for.

        `key` names the credential sent as `Authorization: Bearer <key>`; `authorization` instead
        gives the header as a template (`"bearer {main}"`, `"Bearer not-a-key"`); `params` and
        `headers` values may hold the same placeholders.
        """
        prepared = self._prepare(method, path, key, authorization, headers, params, json, content)
        exchange = self._send_once(prepared, pace)
        attempts = 1
        while self.refused(exchange) and retry_on_429 and attempts < MAX_ATTEMPTS:
            exchange = self._send_once(prepared, pace)
            attempts += 1
        return exchange

    def refused(self, exchange: Exchange) -> bool:
        """Refused for now, so that its `Retry-After` is an order: a 429 (RFC 6585), a 503 (RFC
        9110 section 10.2.3), or a refusal a front made whatever its status. Anywhere else a
        `Retry-After` is information: Flask-Limiter and slowapi send one on every 200, the
        seconds left in the window, and waiting for it would stall a correct server's run."""
        if exchange.status in REFUSALS:
            return True
        return exchange.status in FRONT_REFUSALS and front_refusal(
            exchange, ServiceKind(self.exchanges)
        )

    def get(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("POST", path, **kwargs)

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange of the run, in the order responses arrived (a copy)."""
        return self._recorder.exchanges

    def requests_per_key(self) -> dict[str, int]:
        """Requests sent per key label, for the report: what the run cost each credential."""
        with self._lock:
            return dict(self._sent_per_label)

    def set_wait_listener(self, listener: WaitListener | None) -> None:
        """Who is told, before a key sleeps out a limit, how long and why."""
        self._pacer.on_wait = listener

    def seconds_waited_per_key(self) -> dict[str, float]:
        """Seconds each key label spent waiting out limits and back-off."""
        return dict(self._pacer.waited)

    @property
    def requests_sent(self) -> int:
        """Requests sent in all, including attempts that got no response."""
        with self._lock:
            return sum(self._sent_per_label.values())

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
        so that the wait is paced, counted and announced like any other."""
        if seconds > 0:
            self._pacer.block(key, seconds, reason)
        return self._pacer.wait_until_ready(key)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """While held, requests from other threads wait: a burst judged request by request
        must not have another key's traffic, or the same key's, interleaved with it."""
        with self._gate:
            yield

    @contextlib.asynccontextmanager
    async def async_session(self, connections: int) -> AsyncIterator[httpx.AsyncClient]:
        """An HTTP session for `send_async`, with as many connections as the burst sends at once."""
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(
            transport=self._async_transport,
            verify=self._ssl_context,
            proxy=self._proxy,
            trust_env=False,
            timeout=self.timeout,
            follow_redirects=False,
            headers=self._default_headers(),
            cookies=no_cookies(),
            limits=limits,
        ) as session:
            yield session

    async def send_async(
        self, session: httpx.AsyncClient, method: str, path: str, *, key: str
    ) -> Exchange:
        """One request on `key`, sent without pacing (a burst judges its own), inside the budget,
        recorded and checked like any other; 429s are not retried."""
        prepared = self._prepare(method, path, key, None, None, None, UNSET, None)
        for attempt in (1, 2):
            self._count_against_budget(prepared.label)
            request = self._build(prepared)
            started_at, started = time.time(), time.perf_counter()
            try:
                async with asyncio.timeout(self.response_seconds):
                    response = await session.send(request, stream=True)
                    body = await self._read_async(response)
                break
            except httpx.TransportError as error:
                if attempt == 1 and may_resend(error, request):
                    continue
                raise self._unreachable(error, request) from None
            except TimeoutError:
                raise self._too_slow(request) from None
        elapsed = time.perf_counter() - started
        return self._after_response(
            prepared.label, request, response, body, started_at, elapsed, False
        )

    async def _read_async(self, response: httpx.Response) -> _Body:
        consumed = response.is_stream_consumed  # as _raw_body
        reader = BodyReader(None if consumed else response.headers.get("Content-Encoding"))
        try:
            if consumed:
                reader.feed(response.content)
            else:
                async for chunk in response.aiter_raw():
                    reader.feed(chunk)
        except BodyTooLarge as error:
            return _Body(error.body, True)
        finally:
            await response.aclose()
        return _Body(reader.body, False)

    # -- what the burst's own transport (conformance.burst.transport) shares -----------------

    def burst_request(self, path: str, key: str) -> tuple[str, Sent] | None:
        """The GET a burst repeats on `key`, as its transport must send it (the key expanded:
        never to be recorded as such), with the key's label. None where that transport does
        not go: through a proxy, or where a transport was given (tests); httpx sends then."""
        if self._proxy is not None or self._async_transport is not None:
            return None
        prepared = self._prepare("GET", path, key, None, None, None, UNSET, None)
        headers = [*self._default_headers().items(), *prepared.headers.items()]
        return prepared.label, Sent("GET", str(prepared.url), headers, b"")

    @property
    def ssl_context(self) -> ssl.SSLContext:
        return self._ssl_context

    def count_request(self, label: str) -> None:
        """One more request on `label`, inside the budget (BudgetExhausted beyond it)."""
        self._count_against_budget(label)

    def reserve(self, label: str, requests: int) -> bool:
        """Count `requests` on `label` at once, before they go from other processes; False,
        counting nothing, where the budget has not that many left."""
        self._pacer.check(label)
        with self._lock:
            if not self._budget_has_room(requests):
                return False
            self._sent_per_label[label] = self._sent_per_label.get(label, 0) + requests
            return True

    def give_back(self, label: str, requests: int) -> None:
        """Uncount what was reserved and not sent."""
        with self._lock:
            self._sent_per_label[label] -= requests

    def received(
        self,
        label: str,
        sent: Sent,
        status: int,
        headers: list[tuple[str, str]],
        text: str,
        times: tuple[float, float],
    ) -> Exchange:
        """A burst's response: recorded, learnt from and checked like any other (no pacing:
        a burst judges its own). `times` is when it was sent (epoch) and how long it took."""
        exchange = self._recorder.record(label, sent, status, headers, text, *times, burst=True)
        return self._observe(label, exchange, False)

    def unreachable(self, url: str, reason: str) -> TargetUnreachable:
        return TargetUnreachable(f"cannot reach {self._secrets.redact(url)}: {reason}")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConformanceClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- preparing --------------------------------------------------------------------------

    def _prepare(
        self,
        method: str,
        path: str,
        key: str | None,
        authorization: str | None,
        headers: dict[str, str] | None,
        params: dict[str, str] | None,
        json: Any,
        content: bytes | str | None,
    ) -> _Prepared:
        templates: list[str] = [path]
        request_headers: dict[str, str] = {}
        if authorization is not None:
            request_headers["Authorization"] = authorization
        elif key is not None:
            self._secrets.secret(key)  # fail early and clearly on an unknown label
            request_headers["Authorization"] = "Bearer {" + key + "}"
        for name, value in (headers or {}).items():
            # Header names are case-insensitive: a caller's "authorization" replaces ours.
            for existing in [k for k in request_headers if k.lower() == name.lower()]:
                del request_headers[existing]
            request_headers[name] = value
        templates += list(request_headers.values()) + list((params or {}).values())
        used = [label for text in templates for label in self._secrets.placeholders_in(text)]

        url = httpx.URL(self._join(self._secrets.expand(path)))
        if params:
            url = url.copy_merge_params({k: self._secrets.expand(v) for k, v in params.items()})
        expanded_headers = {name: self._secrets.expand(v) for name, v in request_headers.items()}
        literal = [
            label
            for text in [str(url), *expanded_headers.values()]
            for label in self._secrets.labels_in(text)
        ]
        label = (used or literal or [key or NO_KEY])[0]
        if self._secrets.labels_in(str(url)) and not self._allow_key_in_url:
            # A key in a URL lands in the target's access log and every proxy's: the user's call.
            raise ValueError("a real API key would travel in the URL (needs --allow-key-in-url)")
        return _Prepared(label, method.upper(), url, expanded_headers, json, content)

    def _join(self, path: str) -> str:
        if not path:
            return self.base_url
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    # -- sending ----------------------------------------------------------------------------

    def _send_once(self, prepared: _Prepared, pace: bool = True) -> Exchange:
        """One attempt: budget, pacing, send, record, learn from the response, report."""
        self._count_against_budget(prepared.label)
        while True:
            self._pacer.wait_until_ready(prepared.label)
            self._gate.acquire()
            # A burst on another thread may have limited this key while we waited for the gate.
            if self._pacer.remaining(prepared.label) <= 0:
                break
            self._gate.release()
        try:
            for attempt in (1, 2):
                request = self._build(prepared)
                started_at, started = time.time(), time.perf_counter()
                try:
                    response, body = self._exchange(request)
                    break
                except ResponseTooSlow:
                    raise self._too_slow(request) from None
                except httpx.LocalProtocolError as error:
                    # Our own request was not valid HTTP: a defect of the suite, not the target's.
                    raise ValueError(f"cannot send this request: {error}") from None
                except httpx.TransportError as error:
                    if attempt == 1 and may_resend(error, request):
                        self._count_against_budget(prepared.label)
                        continue
                    raise self._unreachable(error, request) from None
            elapsed = time.perf_counter() - started
        finally:
            self._gate.release()
        return self._after_response(
            prepared.label, request, response, body, started_at, elapsed, pace
        )

    def _exchange(self, request: httpx.Request) -> tuple[httpx.Response, _Body]:
        """Send and read the response, its body as a stream, all within one deadline."""
        with response_deadline(self.response_seconds):
            response = self._http.send(request, stream=True)
            try:
                if self.tls_facts is None and request.url.scheme == "https":
                    self.tls_facts = peer_facts(response)  # while the connection is open
                return response, _Body(read_body(*_raw_body(response)), False)
            except BodyTooLarge as error:
                return response, _Body(error.body, True)
            finally:
                response.close()

    def _too_slow(self, request: httpx.Request) -> TargetUnreachable:
        where = self._secrets.redact(str(request.url))
        return TargetUnreachable(
            f"{request.method} {where}: {too_slow_message(self.response_seconds)}"
        )

    def _count_against_budget(self, label: str) -> None:
        self._pacer.check(label)
        with self._lock:
            if not self._budget_has_room(1):
                raise BudgetExhausted(
                    f"the request budget of {self.max_requests} requests is spent "
                    f"(per key: {self._sent_per_label})"
                )
            self._sent_per_label[label] = self._sent_per_label.get(label, 0) + 1

    def _budget_has_room(self, requests: int) -> bool:
        """Whether `requests` more fit the budget (the caller holds the lock)."""
        sent = sum(self._sent_per_label.values())
        return self.max_requests is None or sent + requests <= self.max_requests

    def _unreachable(self, error: httpx.TransportError, request: httpx.Request) -> Exception:
        if isinstance(error.__cause__, ResponseTooSlow):
            return self._too_slow(request)
        reason = _unreachable_reason(error, self.timeout)
        where = self._secrets.redact(str(request.url))
        if self._proxy:
            where += f" through the proxy {without_credentials(self._proxy)}"
        return TargetUnreachable(f"cannot reach {where}: {reason}")

    def _after_response(
        self,
        label: str,
        request: httpx.Request,
        response: httpx.Response,
        body: _Body,
        started_at: float,
        elapsed: float,
        pace: bool,
    ) -> Exchange:
        exchange = self._record(label, request, response, body, started_at, elapsed)
        return self._observe(label, exchange, pace)

    def _observe(self, label: str, exchange: Exchange, pace: bool) -> Exchange:
        """What every response goes through, whoever sent it: pacing learns, checks run."""
        self._learn(label, exchange, pace)
        if self._on_exchange is not None:
            self._on_exchange(exchange)
        return exchange

    def _default_headers(self) -> dict[str, str]:
        return {"User-Agent": self.user_agent, "Accept-Encoding": ACCEPT_ENCODING}

    def _build(self, prepared: _Prepared) -> httpx.Request:
        headers = dict(prepared.headers)
        content = prepared.content
        if prepared.json is not UNSET:
            # Encoded here, not by httpx, because httpx reads json=None as "no body" and a test
            # may well want to send the JSON literal null.
            content = jsonlib.dumps(
                prepared.json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            if not any(name.lower() == "content-type" for name in headers):
                headers["Content-Type"] = "application/json"
        return self._http.build_request(
            prepared.method, prepared.url, headers=headers, content=content
        )

    def _learn(self, label: str, exchange: Exchange, pace: bool = True) -> None:
        """Update the label's pacing from what the server said about its limits."""
        date = exchange.header("Date")
        if self.refused(exchange):
            delay = retry_after_seconds(exchange.header("Retry-After"), date, time.time())
            self._pacer.on_429(label, delay, exchange.status, exchange.started_at)
            return
        wait = reset_wait(
            exchange.header("X-RateLimit-Remaining"),
            exchange.header("X-RateLimit-Reset"),
            date,
            time.time(),
        )
        self._pacer.on_response(label, wait if pace else None)

    # -- recording --------------------------------------------------------------------------

    def _record(
        self,
        label: str,
        request: httpx.Request,
        response: httpx.Response,
        body: _Body,
        started_at: float,
        elapsed: float,
    ) -> Exchange:
        sent = Sent(
            request.method,
            str(request.url),
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
            request.content,
        )
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw]
        text = body.content.decode(_charset(response), errors="replace")
        too_large = MAX_BODY_BYTES if body.too_large else 0
        return self._recorder.record(
            label,
            sent,
            response.status_code,
            headers,
            text,
            started_at,
            elapsed,
            too_large=too_large,
        )


def _raw_body(response: httpx.Response) -> tuple[Iterable[bytes], str | None]:
    """The body's chunks as sent and their coding; a response made whole in memory (a test's
    mock transport) has only its content, already decoded."""
    if response.is_stream_consumed:
        return [response.content], None
    return response.iter_raw(), response.headers.get("Content-Encoding")


def _charset(response: httpx.Response) -> str:
    """The body's charset as httpx reads it (UTF-8 where none, or an unknown one, is named)."""
    name = response.charset_encoding or "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        return "utf-8"
    return name
