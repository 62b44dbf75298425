"""What a target may cost the checker: the most of a body it reads (as sent and once decoded)
and the longest a whole response may take, whatever the server sends.

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
RESPONSE_SECONDS = 10.0
"""The longest one whole response may take, from sending the request to its body's end."""
ACCEPT_ENCODING = "gzip, deflate"
"""Only codings decoded here, a bounded piece at a time."""

_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "response_deadline", default=None
)


class ResponseTooSlow(httpcore.TimeoutException):
    """The whole response did not arrive within its bound."""


class BodyTooLarge(Exception):
    """A body bigger than MAX_BODY_BYTES: `body` holds its first bytes (decoded)."""

    def __init__(self, body: bytes, limit: int):
        super().__init__(f"a body of more than {limit} bytes")
        self.body = body


def too_slow_message(seconds: float) -> str:
    return f"no whole response within {seconds:g} s (the bound on one response)"


@contextlib.contextmanager
def response_deadline(seconds: float) -> Iterator[None]:
    """Every read and write of the network inside shares one deadline `seconds` from now."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
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
        try:
            return self._stream.read(max_bytes, _capped(timeout))
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


def bound_transport(transport: Any) -> Any:
    """`transport` (an httpx.HTTPTransport) with its pool's network under the deadline.
    httpx has no total timeout, nor a way to hand its pool a network backend: the pool's
    backend is wrapped where httpcore keeps it."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        raise RuntimeError("httpx's transport has no network backend to bound")
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
