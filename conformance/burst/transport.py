"""The exhaustion burst's own transport: one GET, repeated fast on keep-alive HTTP/1.1.

A burst sends thousands of identical requests and reads from each only its status and a few
headers, and the checker's CPU per request, not the server, bounds how fast it goes (httpx's
pool, request and response objects cost about 1.6 ms a request). So a burst connection here is
an asyncio protocol and `httptools` (llhttp, the C parser of Node.js, which uvicorn uses too):
the request's bytes are built once; each response is parsed in full (Content-Length, chunked,
or up to the close; a refusal's or an error's body is kept whole, for the checks read all of
it (a 429's Error object of 8 KB), a success's up to what an exchange records, the rest read and
discarded), and one that cannot be parsed, or is cut short, is an error, never a success.
Measured on the reference: h11 took 90 us a response, httptools 2 us.

Every part of a response is bounded (`conformance.httpclient.bounds`): interim (1xx) responses
are skipped, MAX_INTERIM_RESPONSES of them at most (RFC 9110 section 15.2); its framing (heads,
chunk-size lines and their extensions, trailers) is counted as it comes, up to
MAX_FRAMING_BYTES; its body, up to MAX_BODY_BYTES. A response past a bound once its status is
known is answered as it is, marked as cut there (judged as what it is, not "cannot reach"), and
its connection closed; a head past it, or endless interim responses, are no response.

What the client promises holds the same way, because the client does it: each request counts
against its budget before it goes, and each response is recorded redacted, learnt from and
checked through the client (`client.burst.record_answer`). Through a proxy, or with a transport
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

from conformance.httpclient.bounds import (
    BODY,
    FRAMING,
    MAX_BODY_BYTES,
    MAX_FRAMING_BYTES,
    MAX_INTERIM_RESPONSES,
    BodyReader,
    BodyTooLarge,
    decoded,
)
from conformance.httpclient.client import ConformanceClient
from conformance.httpclient.failures import failure_reason
from conformance.httpclient.recording import RESPONSE_BODY_LIMIT, Exchange, Sent

Send = Callable[[], Awaitable[Exchange]]
READ_SIZE = 65_536


class NoResponse(Exception):
    """The connection closed before any byte of a response arrived."""


class Unreadable(Exception):
    """The response is not HTTP/1.1 as RFC 9112 defines it, or was cut short."""


class HeadTooLarge(Exception):
    """No final status within the bounds: a head past MAX_FRAMING_BYTES, or more interim
    responses than MAX_INTERIM_RESPONSES. Read no further, the connection closed."""


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


Cut = tuple[int, str] | None
"""Where a response was cut: the bound it went past and what went past it (`bounds.BODY` or
`bounds.FRAMING`); None for a response read whole."""
Answer = tuple[int, list[tuple[str, str]], bytes, float, float, Cut, bool]
"""A response as a burst needs it: status, headers, body (up to what an exchange records), when
its request was sent (epoch seconds), how long it took, where it was cut, and whether the body
was kept only in part (`ResponseReader.partial`). A plain tuple: a wave sent from other processes
(`conformance.burst.processes`) brings its answers back pickled."""


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
                    status, headers, body, cut, partial = await reader.exchange(self._request.data)
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
            except HeadTooLarge as error:
                self.close()
                reason = str(error)
            except OSError as error:
                self.close()
                reason = failure_reason(error)
            raise SendFailed(reason)
        elapsed = time.perf_counter() - started
        if self._reader is not None and not self._reader.keep_alive:
            self.close()  # Connection: close, or HTTP/1.0: the next request needs a new one
        return status, headers, body, started_at, elapsed, cut, partial

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
        self._connection = Connection(self._request, ssl_context, client.response_seconds, count)

    async def send(self) -> Exchange:
        try:
            answer = await self._connection.send()
        except SendFailed as failed:
            raise self._client.burst.unreachable(str(self._request.url), str(failed)) from None
        return record_answer(self._client, self._label, self._request, answer)

    def close(self) -> None:
        self._connection.close()


def record_answer(
    client: ConformanceClient, label: str, request: BurstRequest, answer: Answer
) -> Exchange:
    status, headers, body, started_at, elapsed, cut, partial = answer
    text = body.decode("utf-8", errors="replace")
    times = (started_at, elapsed)
    return client.burst.record_answer(
        label, request.recorded, status, headers, text, times, cut, body_cut=partial
    )


Parsed = tuple[int, list[tuple[str, str]], bytes, Cut, bool]


class ResponseReader(asyncio.Protocol):
    """One connection's bytes in, one response at a time out, parsed by llhttp, every part of
    it counted against its bound."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Parsed] | None = None
        self._lost = False
        self.keep_alive = True
        self._responses = 0  # responses begun on this connection
        self._reset()

    def _reset(self) -> None:
        self._started = False  # a byte of the response arrived
        self._responses += 1
        self._interim = 0  # 1xx responses skipped before it
        self._framing = 0  # its bytes that are not body: heads, chunk-size lines, trailers
        self._new_head()

    def _new_head(self) -> None:
        self._final = False  # the final response's head is complete
        self._status = 0
        self._headers: list[tuple[str, str]] = []
        self._body = bytearray()
        self._kept = MAX_BODY_BYTES
        self._decoder: BodyReader | None = None  # a gzip or deflate body's, while it is kept
        # Only the start of the body is kept (a success's), or it is kept in a coding not
        # decoded here: what is kept is not the body the checks would read.
        self.partial = False
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
        response, body_before = self._responses, self._body_bytes
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.keep_alive = False  # after a 101 the connection speaks another protocol
            self.close()
            return
        except httptools.HttpParserError as error:
            self._fail(Unreadable(str(error) or type(error).__name__))
            return
        if self._responses == response and self._transport is not None:
            # Still the same response: what of these bytes was not body was framing (the
            # overshoot is one read at most).
            self._framing += len(data) - (self._body_bytes - body_before)
            if self._framing > MAX_FRAMING_BYTES:
                self._cut(MAX_FRAMING_BYTES, FRAMING)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if not self._started:
            self._fail(NoResponse())
        elif not self._framed and self._final:
            self._done()  # a body delimited by the close (RFC 9112 section 6.3) is complete
        else:
            self._fail(Unreadable("the connection closed before the response ended"))

    # llhttp's side

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._final:  # a trailer field is read (and bounded), not kept
            self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # an interim response: its end is its message's (on_message_complete)
        self._final, self._status = True, status
        # A burst's successes (thousands alike) are judged by status and headers only, and
        # copying and redacting whole listings would cost CPU a wave has not; a refusal or an
        # error is judged by its body, all of it.
        self._kept = RESPONSE_BODY_LIMIT if 200 <= status < 300 else MAX_BODY_BYTES
        named = {name.lower(): value for name, value in self._headers}
        self._framed = "content-length" in named or "transfer-encoding" in named
        # The request asks for gzip and deflate, as the client's do: what is kept is decoded,
        # as httpx's path decodes it, within the same bound.
        coding = named.get("content-encoding")
        if coding is not None and decoded(coding):
            self._decoder = BodyReader(coding, self._kept)
        elif coding is not None and coding.strip().lower() not in ("", "identity"):
            self.partial = True

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._decoder is not None:
            self._decode(body)
        else:
            self._body += body[: max(0, self._kept - len(self._body))]
            self.partial = self.partial or self._body_bytes > len(self._body)
        if self._body_bytes > MAX_BODY_BYTES:
            self._cut(MAX_BODY_BYTES, BODY)

    def _decode(self, body: bytes) -> None:
        try:
            self._decoder.feed(body)  # type: ignore[union-attr]
        except BodyTooLarge as error:
            self._decoder = None
            self._body = bytearray(error.body)
            if self._kept == MAX_BODY_BYTES:  # a refusal's body, inflating past the bound
                self._cut(MAX_BODY_BYTES, BODY)
            # a success's: what an exchange shows is kept, the rest read and discarded
            self.partial = True
        except httpx.DecodingError as error:
            self._decoder = None
            self._fail(Unreadable(str(error)))

    def on_message_complete(self) -> None:
        if not self._final:  # an interim response, skipped (RFC 9110 section 15.2)
            self._interim += 1
            if self._interim > MAX_INTERIM_RESPONSES:
                self._fail(HeadTooLarge(f"more than {MAX_INTERIM_RESPONSES} interim responses"))
            self._new_head()
            return
        self.keep_alive = self._parser.should_keep_alive() and self._status != 101
        self._done()

    # ours

    def _done(self, cut: Cut = None) -> None:
        body = self._decoder.body if self._decoder is not None else bytes(self._body)
        result = (self._status, self._headers, body, cut, self.partial)
        waiter = self._waiter
        self._reset()
        if waiter is not None and not waiter.done():
            waiter.set_result(result)
        self._waiter = None

    def _cut(self, bound: int, what: str) -> None:
        """Past a bound: the response as it is, where its status is known; no response where
        it is not. Either way the connection is read no further."""
        self.keep_alive = False
        if self._final:
            self._done((bound, what))
        else:
            self._fail(HeadTooLarge(f"a response head of more than {bound} bytes"))
        self.close()

    def _fail(self, error: Exception) -> None:
        self.keep_alive = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)
        self._waiter = None
        self.close()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = None
