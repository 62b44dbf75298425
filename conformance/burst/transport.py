"""The exhaustion burst's own transport: one GET, repeated fast on keep-alive HTTP/1.1.

A burst sends thousands of identical requests and reads from each only its status and a few
headers, and the checker's CPU per request, not the server, bounds how fast it goes (httpx's
pool, request and response objects cost about 1.6 ms a request). So a burst connection here is
an asyncio protocol and `httptools` (llhttp, the C parser of Node.js, which uvicorn uses too):
the request's bytes are built once; each response is parsed in full (Content-Length, chunked,
or up to the close; a refusal's or an error's body is kept whole, for the checks read all of
it (a 429's Error object of 8 KB), a success's up to what an exchange records, the rest read and
discarded; one past `conformance.httpclient.bounds.MAX_BODY_BYTES` is not read further), and one
that cannot be parsed, or is cut short, is an error, never a success.
Measured on the reference: h11 took 90 us a response, httptools 2 us.

What the client promises holds the same way, because the client does it: each request counts
against its budget before it goes, and each response is recorded redacted, learnt from and
checked through the client (`client.burst.received`). Through a proxy, or with a transport
given for tests, the burst sends through httpx instead (`send_request`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httptools
import httpx

from conformance.httpclient.bounds import MAX_BODY_BYTES
from conformance.httpclient.client import ConformanceClient
from conformance.httpclient.failures import failure_reason
from conformance.httpclient.recording import RESPONSE_BODY_LIMIT, Exchange, Sent

Send = Callable[[], Awaitable[Exchange]]
READ_SIZE = 65_536


class NoResponse(Exception):
    """The connection closed before any byte of a response arrived."""


class Unreadable(Exception):
    """The response is not HTTP/1.1 as RFC 9112 defines it, or was cut short."""


class TooLarge(Exception):
    """A body past MAX_BODY_BYTES: read no further, the connection closed."""


@contextlib.asynccontextmanager
async def sender(client: ConformanceClient, path: str, key: str) -> AsyncIterator[Send]:
    """One connection of a burst: a function that sends `GET path` on `key` once and returns
    its exchange. Its own transport where it can go; httpx where it cannot."""
    request = client.burst.burst_request(path, key)
    if request is None:
        async with client.burst.async_session(1) as session:
            yield lambda: client.burst.send_async(session, "GET", path, key=key)
        return
    connection = BurstConnection(client, *request)
    try:
        yield connection.send
    finally:
        connection.close()


class SendFailed(Exception):
    """No response to a request: why, in one line."""


Parsed = tuple[int, list[tuple[str, str]], bytes, bool]
"""A response as read: status, headers, body (up to what an exchange records), and whether that
body is cut (`ResponseReader.cut`)."""
Answer = tuple[int, list[tuple[str, str]], bytes, float, float, bool]
"""A response as a burst needs it: status, headers, body (up to what an exchange records), when
its request was sent (epoch seconds), how long it took, and whether its body is cut. A plain
tuple: a wave sent from other processes (`conformance.burst.processes`) brings its answers back
pickled."""


class BurstRequest:
    """The bytes of the GET a burst repeats (the key expanded: never recorded as such), and
    that request as recorded (the key redacted later, by the client's recorder)."""

    def __init__(self, sent: Sent):
        url = httpx.URL(sent.url)
        self.url = url
        headers = [("Host", url.netloc.decode("ascii")), *sent.headers, ("Accept", "*/*")]
        self.recorded = Sent(sent.method, sent.url, headers, b"")
        lines = [f"{sent.method} {url.raw_path.decode('ascii')} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers]
        self.data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Connection:
    """One keep-alive connection sending the same request, one at a time; opened on first use
    and again whenever the server closes it. `count` is called before each attempt goes."""

    def __init__(
        self,
        request: BurstRequest,
        ssl_context: ssl.SSLContext,
        timeout: float,
        count: Callable[[], None],
    ):
        self._request = request
        self._https = request.url.scheme == "https"
        self._port = request.url.port or (443 if self._https else 80)
        self._ssl_context = ssl_context
        self._timeout = timeout
        self._count = count
        self._reader: ResponseReader | None = None

    async def send(self) -> Answer:
        """The request once (twice where a kept-alive connection closed as it went out, with
        no response: an idempotent request is resent once on a fresh one, as RFC 9110
        section 9.2.2 allows, and counted again). SendFailed where no response came."""
        for attempt in (1, 2):
            self._count()
            reused = self._reader is not None
            started_at, started = time.time(), time.perf_counter()
            try:
                async with asyncio.timeout(self._timeout):
                    reader = self._reader or await self._open()
                    status, headers, body, cut = await reader.exchange(self._request.data)
                break
            except NoResponse:
                self.close()
                if attempt == 1 and reused:
                    continue
                reason = "the server closed the connection without a response"
            except TimeoutError:
                self.close()
                reason = f"no response within {self._timeout:g} s"
            except Unreadable as error:
                self.close()
                reason = f"the response is not valid HTTP/1.1 ({error})"
            except TooLarge:
                self.close()
                reason = f"a body of more than {MAX_BODY_BYTES} bytes (read no further)"
            except OSError as error:
                self.close()
                reason = failure_reason(error)
            raise SendFailed(reason)
        elapsed = time.perf_counter() - started
        if self._reader is not None and not self._reader.keep_alive:
            self.close()  # Connection: close, or HTTP/1.0: the next request needs a new one
        return status, headers, body, started_at, elapsed, cut

    async def _open(self) -> ResponseReader:
        host = self._request.url.host
        tls = {"ssl": self._ssl_context, "server_hostname": host} if self._https else {}
        loop = asyncio.get_running_loop()
        _, self._reader = await loop.create_connection(ResponseReader, host, self._port, **tls)
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._reader = None


class BurstConnection:
    """A `Connection` whose requests are counted against the client's budget and whose
    responses are recorded, learnt from and checked through the client."""

    def __init__(self, client: ConformanceClient, label: str, sent: Sent):
        self._client = client
        self._label = label
        self._request = BurstRequest(sent)
        count = functools.partial(client.budget.count, label)
        ssl_context = client.burst.ssl_context
        self._connection = Connection(self._request, ssl_context, client.timeout, count)

    async def send(self) -> Exchange:
        try:
            answer = await self._connection.send()
        except SendFailed as failed:
            raise self._client.burst.unreachable(str(self._request.url), str(failed)) from None
        return received(self._client, self._label, self._request, answer)

    def close(self) -> None:
        self._connection.close()


def received(
    client: ConformanceClient, label: str, request: BurstRequest, answer: Answer
) -> Exchange:
    status, headers, body, started_at, elapsed, cut = answer
    text = body.decode("utf-8", errors="replace")
    times = (started_at, elapsed)
    return client.burst.received(label, request.recorded, status, headers, text, times, cut)


class ResponseReader(asyncio.Protocol):
    """One connection's bytes in, one response at a time out, parsed by llhttp."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Parsed] | None = None
        self._lost = False
        self.keep_alive = True
        self._reset()

    def _reset(self) -> None:
        self._started = False  # a byte of the response arrived
        self._headers: list[tuple[str, str]] = []
        self._body = bytearray()
        self._kept = MAX_BODY_BYTES
        self._body_bytes = 0  # all of the body so far, kept or not
        self._framed = True  # Content-Length or chunked (else the body ends at the close)

    async def exchange(self, request: bytes) -> Parsed:
        if self._lost or self._transport is None:
            raise NoResponse
        self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        return await self._waiter

    # asyncio's side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._started = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(Unreadable(str(error) or type(error).__name__))

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if not self._started:
            self._fail(NoResponse())
        elif not self._framed and self._status_known():
            self._done()  # a body delimited by the close (RFC 9112 section 6.3) is complete
        else:
            self._fail(Unreadable("the connection closed before the response ended"))

    # llhttp's side

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        # A burst's successes (thousands alike) are judged by status and headers only, and
        # copying and redacting whole listings would cost CPU a wave has not; a refusal or an
        # error is judged by its body, all of it.
        success = 200 <= self._parser.get_status_code() < 300
        self._kept = RESPONSE_BODY_LIMIT if success else MAX_BODY_BYTES
        framing = {name.lower() for name, _ in self._headers}
        self._framed = bool(framing & {"content-length", "transfer-encoding"})

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > MAX_BODY_BYTES:
            self._fail(TooLarge())
            self.close()
            return
        self._body += body[: max(0, self._kept - len(self._body))]

    def on_message_complete(self) -> None:
        self.keep_alive = self._parser.should_keep_alive()
        self._done()

    # ours

    def _status_known(self) -> bool:
        try:
            return self._parser.get_status_code() > 0
        except httptools.HttpParserError:
            return False

    def cut(self) -> bool:
        """Whether the body kept is less than the body as the checks would read it: only its
        start was kept (a success's), or it came encoded (gzip), which this transport does not
        decode."""
        encoded = any(
            name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity")
            for name, value in self._headers
        )
        return encoded or self._body_bytes > len(self._body)

    def _done(self) -> None:
        result = (self._parser.get_status_code(), self._headers, bytes(self._body), self.cut())
        waiter = self._waiter
        self._reset()
        if waiter is not None and not waiter.done():
            waiter.set_result(result)
        self._waiter = None

    def _fail(self, error: Exception) -> None:
        self.keep_alive = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)
        self._waiter = None

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
