"""uvicorn's httptools protocol, made to serve a request that offers a protocol upgrade, and to
queue no more pipelined requests than one read brings.

Java's HttpClient, Spring's RestClient and `curl --http2` offer a cleartext HTTP/2 upgrade on
ordinary requests (`Connection: Upgrade, HTTP2-Settings`, `Upgrade: h2c`). httptools (llhttp)
takes such a request's head as the end of HTTP/1.1 on the connection: it never parses the body,
and uvicorn runs the app with an empty one (a POST is then a 400; uvicorn issue 2722, httptools
issue 124, open). RFC 9110 section 7.8 lets a server ignore the offer; it must then serve the
request. uvicorn's h11 protocol does, but serving every request with it costs the reference 60%
more CPU a request (496 us against 311 us a GET, measured under wrk: about a third of its
throughput), where this hand-over costs nothing measurable. So each connection stays on httptools
until a request on it offers an upgrade other than WebSocket; that connection is then handed,
from that request on, to the h11 protocol, as uvicorn hands a WebSocket's connection to its
WebSocket protocol: the request's head as received, and every byte after it.

Both protocols bound a request head (head_bounds.py): over MAX_HEAD_BYTES it is answered 431,
not complete within HEAD_SECONDS 408, and the connection is closed. On httptools the bytes read
into an unfinished head are counted after each read (a read holds at most 256 KiB), on h11 h11
counts them itself; a head that came whole in one read is measured as parsed.
"""

from __future__ import annotations

import asyncio

import h11
import httptools
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from conformance.reference.head_bounds import (
    HEAD_SECONDS,
    MAX_HEAD_BYTES,
    HeadTooLarge,
    parsed_size,
    refusal,
)


class _HeadsBounded(h11.Connection):
    """h11's connection, raising for a head over MAX_HEAD_BYTES with the 431 h11 itself hints at
    for one still incomplete past its buffer's bound; `too_large` says which error it was."""

    too_large = False

    def next_event(self):  # noqa: ANN201 - h11's own
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as error:
            self.too_large = error.error_status_hint == 431
            raise
        if isinstance(event, h11.Request) and _too_large(event):
            self.too_large = True
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        return event


def _too_large(request: h11.Request) -> bool:
    return parsed_size(request.method, request.target, request.headers.raw_items()) > MAX_HEAD_BYTES


def _refuse(protocol: asyncio.Protocol, status: int) -> None:
    """Answer `status` (431, 408) and close, unless an earlier response is still being sent on
    the connection (a pipelined request's): then only close, as a reply now would cut into it."""
    cycle = protocol.cycle
    if cycle is None or cycle.response_complete:
        protocol.transport.write(refusal(status))
    protocol.transport.close()


class _UpgradeOffersIgnored(H11Protocol):
    """h11 serves a request that offers an upgrade as the HTTP/1.1 request it is."""

    def _unsupported_upgrade_warning(self) -> None:
        pass  # the offer is declined by serving the request: nothing to warn an operator of

    _head_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - uvicorn's
        super().__init__(*args, **kwargs)
        self.conn = _HeadsBounded(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is None and self._in_head():
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _in_head(self) -> bool:
        """Part of a request head read, not yet the whole of it."""
        return self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing() and self._in_head():
            _refuse(self, 408)

    def send_400_response(self, msg: str) -> None:
        if self.conn.too_large:
            _refuse(self, 431)
        else:
            super().send_400_response(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)


class HttpToolsServingUpgradeOffers(HttpToolsProtocol):
    """httptools for every request, h11 for a connection from its first upgrade offer on."""

    _offer = False  # the request being parsed offers an upgrade h11 will serve
    _pending: bytes | None = None  # that request's bytes, once its head has been parsed
    _in_head = False  # a request's head is being parsed
    _head_read = 0  # bytes read of that head
    _parsed = 0  # bytes of the read being parsed that came before that head: bodies, heads
    _head_timer: asyncio.TimerHandle | None = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_read = -self._parsed  # the read's bytes before this head are not its own

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._stop_head_timer()
        size = parsed_size(self.parser.get_method(), self.url, self.headers)
        self._parsed += size
        if size > MAX_HEAD_BYTES:
            raise HeadTooLarge  # httptools stops parsing and raises a callback error
        if self.parser.should_upgrade() and not self._should_upgrade():
            self._offer = True  # no request cycle here: h11 will run this request
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._parsed += len(body)
        if not self._offer:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._offer:
            super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        if self._pending is not None:  # read while the hand-over waits for earlier answers
            self._pending += data
            return
        self._parsed = 0
        try:
            self._unset_keepalive_if_required()
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            if not self._offer:  # a WebSocket upgrade: uvicorn's own way
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                return
            self._pending = self._head() + data[upgrade.args[0] :]
            self.flow.pause_reading()
            self._hand_over_when_idle()
        except httptools.HttpParserError as error:
            if isinstance(error.__context__, HeadTooLarge):
                _refuse(self, 431)
                return
            message = "Invalid HTTP request received."
            self.logger.warning(message)
            self.send_400_response(message)
            return
        if self._in_head:
            self._bound_head(len(data))

    def _bound_head(self, read: int) -> None:
        """Count a read that left a head unfinished: refused past its size, timed from now."""
        self._head_read += read
        if self._head_read > MAX_HEAD_BYTES:
            self._stop_head_timer()
            _refuse(self, 431)
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._in_head:
            return
        if self.flow.read_paused:  # not read while earlier answers are sent: not the client's
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)
            return
        _refuse(self, 408)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.pipeline and not self.transport.is_closing():
            # uvicorn reads on at every answer, and httptools queues every request in what it
            # read: a client that pipelines without end would fill memory with them. Read no
            # more until the queue is answered (reading resumes at the answer that empties it).
            self.flow.pause_reading()
        self._hand_over_when_idle()

    def _head(self) -> bytes:
        version = self.parser.get_http_version().encode("ascii")
        lines = [self.parser.get_method() + b" " + self.url + b" HTTP/" + version]
        lines += [name + b": " + value for name, value in self.headers]
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def _hand_over_when_idle(self) -> None:
        """Once every earlier request on the connection is answered (a client may pipeline),
        h11 takes the connection over with the bytes read since the offer."""
        if self._pending is None or self.transport.is_closing():
            return
        if self.pipeline or (self.cycle is not None and not self.cycle.response_complete):
            return
        pending, self._pending = self._pending, b""
        self._unset_keepalive_if_required()
        self.connections.discard(self)
        self.flow.resume_reading()
        protocol = _UpgradeOffersIgnored(
            config=self.config, server_state=self.server_state, app_state=self.app_state
        )
        protocol.connection_made(self.transport)
        self.transport.set_protocol(protocol)
        protocol.data_received(pending)
