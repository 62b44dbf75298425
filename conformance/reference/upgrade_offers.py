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
"""

from __future__ import annotations

import httptools
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _UpgradeOffersIgnored(H11Protocol):
    """h11 serves a request that offers an upgrade as the HTTP/1.1 request it is."""

    def _unsupported_upgrade_warning(self) -> None:
        pass  # the offer is declined by serving the request: nothing to warn an operator of


class HttpToolsServingUpgradeOffers(HttpToolsProtocol):
    """httptools for every request, h11 for a connection from its first upgrade offer on."""

    _offer = False  # the request being parsed offers an upgrade h11 will serve
    _pending: bytes | None = None  # that request's bytes, once its head has been parsed

    def on_headers_complete(self) -> None:
        if self.parser.should_upgrade() and not self._should_upgrade():
            self._offer = True  # no request cycle here: h11 will run this request
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._offer:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._offer:
            super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        if self._pending is not None:  # read while the hand-over waits for earlier answers
            self._pending += data
            return
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
        except httptools.HttpParserError:
            message = "Invalid HTTP request received."
            self.logger.warning(message)
            self.send_400_response(message)

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
