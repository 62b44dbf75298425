"""Requests that offer a cleartext HTTP/2 upgrade, as Java's HttpClient and `curl --http2` send
them, are served by the reference as the HTTP/1.1 requests they are (RFC 9110 section 7.8), body
and all: with a Content-Length or chunked, alone, after and before others on one connection,
pipelined. Raw bytes on a socket, as those clients write them."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httptools
import pytest

from conformance.reference.serve import RunningReference, start_in_thread

KEY = "upgrade-offer-key"
# Java 17's HttpClient on an http:// address (HTTP/2 is its default version), as it sent it.
OFFER = (
    b"Connection: Upgrade, HTTP2-Settings\r\n"
    b"HTTP2-Settings: AAEAAEAAAAIAAAAAAAMAAAAAAAQBAAAAAAUAAEAAAAYABgAA\r\n"
    b"Upgrade: h2c\r\n"
)


@pytest.fixture(scope="module")
def reference() -> Iterator[RunningReference]:
    with start_in_thread([f"{KEY}:enterprise:100000:1000000"], minute_seconds=60) as running:
        yield running


def create(name: str, *, offer: bool, chunked: bool = False) -> bytes:
    body = json.dumps({"name": name}).encode()
    framing = (
        b"Transfer-Encoding: chunked\r\n"
        if chunked
        else b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    )
    if chunked:
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = b"POST /v1/categories HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (OFFER if offer else b"")
    head += b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Type: application/json\r\n"
    return head + framing + b"\r\n" + body


def listing(*, offer: bool) -> bytes:
    head = b"GET /v1/categories HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (OFFER if offer else b"")
    return head + b"Authorization: Bearer " + KEY.encode() + b"\r\n\r\n"


class Connection:
    """One client connection; the responses read on it, parsed by httptools."""

    def __init__(self, reference: RunningReference) -> None:
        host, port = reference.base_url.removeprefix("http://").removesuffix("/v1").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.parser = httptools.HttpResponseParser(self)
        self.answers: list[tuple[int, Any]] = []
        self._body = b""

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        self.answers.append((self.parser.get_status_code(), json.loads(self._body)))
        self._body = b""

    def send(self, *parts: bytes, answers: int = 1) -> list[tuple[int, Any]]:
        """Send `parts`, one `sendall` each; the next `answers` responses."""
        wanted = len(self.answers) + answers
        for part in parts:
            self.sock.sendall(part)
        while len(self.answers) < wanted:
            data = self.sock.recv(65536)
            assert data, f"the connection closed after {self.answers}"
            self.parser.feed_data(data)
        return self.answers[wanted - answers : wanted]


@pytest.fixture
def connection(reference: RunningReference) -> Iterator[Connection]:
    client = Connection(reference)
    yield client
    client.sock.close()


def test_a_create_with_an_h2c_offer_is_served_and_the_connection_kept(connection) -> None:
    [(status, created)] = connection.send(create("java-1", offer=True))
    assert (status, created["name"]) == (201, "java-1")
    # The same connection serves the client's next request.
    [(status, listed)] = connection.send(listing(offer=False))
    assert status == 200 and "java-1" in {category["name"] for category in listed}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_sent_apart_from_its_head_is_read(connection, chunked: bool) -> None:
    head, body = create("split", offer=True, chunked=chunked).split(b"\r\n\r\n", 1)
    [(status, created)] = connection.send(head + b"\r\n\r\n", body[:5], body[5:])
    assert (status, created["name"]) == (201, "split")


REQUESTS = {
    "before": create("before", offer=False),
    "offered": create("offered", offer=True, chunked=True),
    "after": create("after", offer=False),
    "listing": listing(offer=True),
}


def test_requests_around_an_offer_on_one_connection_are_served_in_turn(connection) -> None:
    answers = [connection.send(request)[0] for request in REQUESTS.values()]
    assert_served_in_order(answers)


def test_requests_pipelined_around_an_offer_are_answered_in_order(connection) -> None:
    assert_served_in_order(connection.send(b"".join(REQUESTS.values()), answers=4))


def assert_served_in_order(answers: list[tuple[int, Any]]) -> None:
    assert [status for status, _ in answers] == [201, 201, 201, 200], answers
    assert [answer["name"] for _, answer in answers[:3]] == ["before", "offered", "after"]
    assert {"before", "offered", "after"} <= {category["name"] for category in answers[3][1]}
