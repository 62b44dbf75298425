"""What a target may cost the checker: the most of a body it reads (as sent and once decoded),
the most of the rest of a response (its framing), how many interim responses it takes before
the final one, and the longest a whole response may take, whatever the server sends.

A server the user does not control may answer with a body of gigabytes, a gzip bomb, or a
response trickled a byte at a time (each read then restarts the read timeout, which never
fires). So a body is read as a stream and decoded here, with a running count, and every read
of one exchange, from connecting to the body's last byte, shares one deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The most of one body the checker reads, as sent and once decoded: no answer of this
interface comes near it, and a bigger one is judged as what it is."""
MAX_FRAMING_BYTES = 1024 * 1024
"""The most of one response's framing the checker reads: its status lines and header sections
(an interim response's included), chunk-size lines with their extensions, and trailers. A
response needs a few kilobytes of it; a chunked listing in small chunks, some hundreds. Each
head, chunk-size line and trailer section is bounded on its own too, at 100 KiB, by h11 in
httpcore (httpx's path)."""
MAX_INTERIM_RESPONSES = 16
"""Interim (1xx) responses taken before the final one (RFC 9110 section 15.2): a server sends
one or two (100 Continue, 103 Early Hints)."""
BODY = "a body"
FRAMING = "a body's chunked framing (chunk-size lines, their extensions, trailers)"
"""What went past its bound, as `Exchange.too_large_text` names it."""
RESPONSE_SECONDS = 10.0
"""The longest one whole response may take, from sending the request to its body's end."""
ACCEPT_ENCODING = "gzip, deflate"
"""Only codings decoded here, a bounded piece at a time."""

_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "response_deadline", default=None
)


class ResponseTooSlow(httpcore.TimeoutException):
    """The whole response did not arrive within its bound."""


class FramingTooLarge(httpcore.RemoteProtocolError):
    """More than MAX_FRAMING_BYTES of a response that are not its body (heads, interim ones
    included, chunk-size lines, trailers): read no further. A protocol error to httpcore, which
    closes the connection, and to httpx, which raises it as its RemoteProtocolError."""


H11_EVENT_BYTES = 100 * 1024
"""h11's bound, as httpcore sets it, on one head, chunk-size line or trailer section."""
_H11_OVER = "Receive buffer too long"  # how h11 says so


def framing_went_past(error: BaseException) -> int:
    """The framing bound a read went past (httpx's path), or 0 where `error` says otherwise."""
    if isinstance(error.__cause__, FramingTooLarge):
        return MAX_FRAMING_BYTES
    return H11_EVENT_BYTES if _H11_OVER in str(error) else 0


class _Tally:
    """Bytes of one response: all read off the network, and those of its body (raw)."""

    def __init__(self) -> None:
        self.read = 0
        self.body = 0

    def check(self) -> None:
        if self.read - self.body > MAX_FRAMING_BYTES:
            raise FramingTooLarge(
                f"more than {MAX_FRAMING_BYTES} bytes of heads, chunk-size lines and trailers"
            )


_tally: contextvars.ContextVar[_Tally | None] = contextvars.ContextVar("tally", default=None)


@contextlib.contextmanager
def response_tally() -> Iterator[None]:
    """Every read of the network inside counts for one response's bounds: what is not its
    body (as BodyReader counts it) stays within MAX_FRAMING_BYTES, one read's worth over at
    most. httpcore's own loop over interim responses is bounded so too."""
    token = _tally.set(_Tally())
    try:
        yield
    finally:
        _tally.reset(token)


def _count_read(data: bytes) -> bytes:
    tally = _tally.get()
    if tally is not None:
        tally.read += len(data)
    return data


def _check_framing() -> None:
    tally = _tally.get()
    if tally is not None:
        tally.check()


class BodyTooLarge(Exception):
    """A body bigger than MAX_BODY_BYTES: `body` holds its first bytes (decoded)."""

    def __init__(self, body: bytes, limit: int):
        super().__init__(f"a body of more than {limit} bytes")
        self.body = body


def too_slow_message(seconds: float) -> str:
    return f"no whole response within {seconds:g} s (the bound on one response)"


@contextlib.contextmanager
def response_deadline(seconds: float) -> Iterator[None]:
    """Every read and write of the network inside shares one deadline `seconds` from now, and
    counts for the response's framing bound (`response_tally`)."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        with response_tally():
            yield
    finally:
        _deadline.reset(token)


def _capped(timeout: float | None) -> float | None:
    """The timeout of one read, cut to what is left of the exchange's deadline."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline[0] - time.monotonic()
    if left <= 0:
        raise ResponseTooSlow(too_slow_message(deadline[1]))
    return left if timeout is None else min(timeout, left)


def check_deadline() -> None:
    _capped(None)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        _check_framing()
        try:
            return _count_read(self._stream.read(max_bytes, _capped(timeout)))
        except httpcore.ReadTimeout:
            check_deadline()  # the deadline's message, where it is what ran out
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _capped(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout=None):
        stream = self._stream.start_tls(ssl_context, server_hostname, _capped(timeout))
        return _DeadlineStream(stream)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network, each read's timeout cut to the exchange's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self._backend.connect_tcp(
            host, port, _capped(timeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(
            self._backend.connect_unix_socket(path, _capped(timeout), socket_options)
        )

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _CountedAsyncStream(httpcore.AsyncNetworkStream):
    """An async stream whose reads count for the response's framing bound (a burst through a
    proxy; asyncio's timeout bounds its time)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream):
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        _check_framing()
        return _count_read(await self._stream.read(max_bytes, timeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout=None):
        return _CountedAsyncStream(
            await self._stream.start_tls(ssl_context, server_hostname, timeout)
        )

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class CountedAsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, backend: httpcore.AsyncNetworkBackend):
        self._backend = backend

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _CountedAsyncStream(stream)

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        stream = await self._backend.connect_unix_socket(path, timeout, socket_options)
        return _CountedAsyncStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def bound_transport(transport: Any) -> Any:
    """`transport` (an httpx.HTTPTransport or AsyncHTTPTransport) with its pool's network
    bounded: each read's timeout cut to the exchange's deadline (sync), and every read counted
    for the response's framing bound. httpx has no total timeout, nor a way to hand its pool a
    network backend: the pool's backend is wrapped where httpcore keeps it."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        raise RuntimeError("httpx's transport has no network backend to bound")
    if isinstance(transport, httpx.AsyncHTTPTransport):
        pool._network_backend = CountedAsyncBackend(backend)
    else:
        pool._network_backend = DeadlineBackend(backend)
    return transport


# -- bodies ------------------------------------------------------------------------------------


class _Inflater:
    """gzip or deflate, decoded with a cap on the output of each piece (a bomb inflates a
    64 KiB read to 64 MiB)."""

    def __init__(self, coding: str):
        self._gzip = coding in ("gzip", "x-gzip")
        self._raw = False
        self._fed = False  # a piece went in already: a wrapper's error is no longer a header's
        self._new()

    def _new(self) -> None:
        wbits = zlib.MAX_WBITS | 16 if self._gzip else -zlib.MAX_WBITS if self._raw else 15
        self._inflater = zlib.decompressobj(wbits)

    def feed(self, data: bytes, room: int) -> bytes:
        """At most room + 1 bytes of output: one more than fits says the body is too large."""
        try:
            out = self._inflater.decompress(data, room + 1)
        except zlib.error as error:
            if self._gzip or self._raw or self._fed:
                # What httpx raised when it decoded: the body is no HTTP a client can read.
                raise httpx.DecodingError(f"the body does not decode: {error}") from None
            self._raw = True  # a deflate body without its zlib wrapper, as some servers send
            self._new()
            return self.feed(data, room)
        self._fed = True
        return out


def decoded(content_encoding: str | None) -> bool:
    """Whether a body of this coding is decoded here (the codings the checker asks for)."""
    return _inflater(content_encoding) is not None


def _inflater(content_encoding: str | None) -> _Inflater | None:
    coding = (content_encoding or "").strip().lower()
    return _Inflater(coding) if coding in ("gzip", "x-gzip", "deflate") else None


class BodyReader:
    """A body from its raw chunks, decoded; BodyTooLarge once more than `limit` bytes came or
    would come out of decoding. Checks the exchange's deadline at each chunk."""

    def __init__(self, content_encoding: str | None, limit: int = MAX_BODY_BYTES):
        self._inflater = _inflater(content_encoding)
        self._limit = limit
        self._received = 0
        self._body = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._received += len(chunk)
        tally = _tally.get()
        if tally is not None:
            tally.body += len(chunk)
        if self._received <= self._limit:
            room = self._limit - len(self._body)
            self._body += self._inflater.feed(chunk, room) if self._inflater else chunk
        if self._received > self._limit or len(self._body) > self._limit:
            raise BodyTooLarge(bytes(self._body[: self._limit]), self._limit)
        check_deadline()

    @property
    def body(self) -> bytes:
        return bytes(self._body)


def read_body(
    chunks: Iterable[bytes], content_encoding: str | None, limit: int = MAX_BODY_BYTES
) -> bytes:
    reader = BodyReader(content_encoding, limit)
    for chunk in chunks:
        reader.feed(chunk)
    return reader.body
