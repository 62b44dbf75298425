"""The exhaustion burst's own transport: one GET, repeated fast on keep-alive HTTP/1.1.

A burst sends thousands of identical requests and reads from each only its status and a few
headers, and the checker's CPU per request, not the server, bounds how fast it goes (httpx's
pool, request and response objects cost about 1.6 ms a request). So a burst connection here is
an asyncio stream and an `h11` parser: the request is built once; each response is parsed in
full (Content-Length or chunked; a body is kept up to what an exchange records, the rest read
and discarded), and one that cannot be parsed is an error, never a success.

What the client promises holds the same way, because the client does it: each request counts
against its budget before it goes, and each response is recorded redacted, learnt from and
checked through the client (`ConformanceClient.received`). Through a proxy, or with a transport
given for tests, the burst sends through httpx instead (`send_request`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import h11
import httpx

from conformance.client import ConformanceClient, failure_reason
from conformance.recording import RESPONSE_BODY_LIMIT, Exchange, Sent

Send = Callable[[], Awaitable[Exchange]]
READ_SIZE = 65_536


class NoResponse(Exception):
    """The connection closed before any byte of a response arrived."""


@contextlib.asynccontextmanager
async def sender(client: ConformanceClient, path: str, key: str) -> AsyncIterator[Send]:
    """One connection of a burst: a function that sends `GET path` on `key` once and returns
    its exchange. Its own transport where it can go; httpx where it cannot."""
    request = client.burst_request(path, key)
    if request is None:
        async with client.async_session(1) as session:
            yield lambda: client.send_async(session, "GET", path, key=key)
        return
    connection = BurstConnection(client, *request)
    try:
        yield connection.send
    finally:
        connection.close()


class BurstConnection:
    """One keep-alive connection sending the same request, one at a time; opened on first use
    and again whenever the server closes it."""

    def __init__(self, client: ConformanceClient, label: str, sent: Sent):
        self._client = client
        self._label = label
        self._sent = sent
        url = httpx.URL(sent.url)
        self._url = url
        self._https = url.scheme == "https"
        self._port = url.port or (443 if self._https else 80)
        host = url.netloc.decode("ascii")
        headers = [("Host", host), *sent.headers, ("Accept", "*/*")]
        self._recorded = Sent(sent.method, sent.url, headers, b"")
        self._request = h11.Request(method=sent.method, target=url.raw_path, headers=headers)
        self._parser: h11.Connection | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader: asyncio.StreamReader | None = None

    async def send(self) -> Exchange:
        """The request once (twice where a kept-alive connection closed as it went out, with
        no response: an idempotent request is resent once on a fresh one, as RFC 9110
        section 9.2.2 allows, and counted again)."""
        for attempt in (1, 2):
            self._client.count_request(self._label)
            reused = self._writer is not None
            started_at, started = time.time(), time.perf_counter()
            try:
                async with asyncio.timeout(self._client.timeout):
                    status, headers, body = await self._exchange()
                break
            except NoResponse:
                self.close()
                if attempt == 1 and reused:
                    continue
                reason = "the server closed the connection without a response"
                raise self._unreachable(reason) from None
            except TimeoutError:
                self.close()
                reason = f"no response within {self._client.timeout:g} s"
                raise self._unreachable(reason) from None
            except h11.RemoteProtocolError as error:
                self.close()
                raise self._unreachable(f"the response is not valid HTTP/1.1 ({error})") from None
            except OSError as error:
                self.close()
                raise self._unreachable(failure_reason(error)) from None
        elapsed = time.perf_counter() - started
        text = body.decode("utf-8", errors="replace")
        times = (started_at, elapsed)
        return self._client.received(self._label, self._recorded, status, headers, text, times)

    async def _exchange(self) -> tuple[int, list[tuple[str, str]], bytes]:
        if self._writer is None:
            await self._open()
        parser, reader, writer = self._parser, self._reader, self._writer
        assert parser is not None and reader is not None and writer is not None
        writer.write(parser.send(self._request) + parser.send(h11.EndOfMessage()))
        status, headers, body = 0, [], bytearray()
        answered = False
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(READ_SIZE)
                if not data and not answered:
                    raise NoResponse
                answered = True
                parser.receive_data(data)  # b"": the end, which h11 judges (a cut body fails)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = [
                    (n.decode("latin-1"), v.decode("latin-1"))
                    for n, v in event.headers.raw_items()  # names as the server cased them
                ]
            elif isinstance(event, h11.Data):
                body += event.data[: max(0, RESPONSE_BODY_LIMIT - len(body))]
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("the connection closed mid-response")
        if parser.our_state is h11.DONE and parser.their_state is h11.DONE:
            parser.start_next_cycle()
        else:  # Connection: close, or HTTP/1.0: the next request needs a new connection
            self.close()
        return status, headers, bytes(body)

    async def _open(self) -> None:
        host = self._url.host
        context = self._client.ssl_context if self._https else None
        self._reader, self._writer = await asyncio.open_connection(
            host, self._port, ssl=context, server_hostname=host if self._https else None
        )
        self._parser = h11.Connection(h11.CLIENT)

    def _unreachable(self, reason: str) -> Exception:
        return self._client.unreachable(self._sent.url, reason)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._writer = self._reader = self._parser = None
