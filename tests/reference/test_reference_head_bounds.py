"""The reference bounds a request head (conformance/reference/head_bounds.py): a 64 MiB header
is answered 431 (or the connection closed) with the server's memory flat, on httptools and on h11
(a connection handed over by an h2c offer), a head trickled past HEAD_SECONDS gets 408 and is
closed, and requests within the bounds, pipelined or not, are served. A real reference process
on loopback, raw bytes on a socket; its memory is its own high-water mark (VmHWM)."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import httptools
import pytest

from conformance.reference.head_bounds import HEAD_SECONDS, MAX_HEAD_BYTES
from tests.reference.test_reference_upgrade_offers import OFFER
from tests.shared.servers import ReferenceProcess, reference_args, start_reference

KEY = "head-bounds-key"
HUGE = 64 * 1024 * 1024
MEMORY_GROWTH_MB = 50


@pytest.fixture(scope="module")
def reference() -> Iterator[ReferenceProcess]:
    server = start_reference(reference_args([f"{KEY}:enterprise:100000:1000000"]))
    yield server
    server.stop()


def connect(reference: ReferenceProcess) -> socket.socket:
    host, port = reference.base_url.removeprefix("http://").removesuffix("/v1").split(":")
    return socket.create_connection((host, int(port)), timeout=HEAD_SECONDS + 10)


def request(extra: bytes = b"", *, offer: bool = False) -> bytes:
    head = b"GET /v1/categories HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (OFFER if offer else b"")
    return head + b"Authorization: Bearer " + KEY.encode() + b"\r\n" + extra + b"\r\n"


def peak_mb(reference: ReferenceProcess) -> float:
    with open(f"/proc/{reference.process.pid}/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def read_all(sock: socket.socket) -> bytes:
    """What the server sent until it closed (a reset after its answer ends it too)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def statuses(received: bytes) -> list[int]:
    return [int(line.split()[1]) for line in received.split(b"\r\n") if line.startswith(b"HTTP/")]


class _Answers:
    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.statuses: list[int] = []

    def on_message_complete(self) -> None:
        self.statuses.append(self.parser.get_status_code())


def served(sock: socket.socket, data: bytes, count: int = 1) -> list[int]:
    """Send `data`; the statuses of the `count` whole responses that follow."""
    sock.sendall(data)
    answers = _Answers()
    while len(answers.statuses) < count:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {answers.statuses}"
        answers.parser.feed_data(chunk)
    return answers.statuses


def send_huge_header(sock: socket.socket, head: bytes) -> bytes:
    """`head` then a 64 MiB header value, 64 KiB a write, until sent or the server stops
    reading; what the server answered."""
    piece = b"a" * 65536
    try:
        sock.sendall(head + b"X-Huge: ")
        for _ in range(HUGE // len(piece)):
            sock.sendall(piece)
        sock.sendall(b"\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed: what it answered is still to be read
    return read_all(sock)


@pytest.mark.parametrize("path", ["httptools", "offer", "h11"])
def test_a_64_mib_header_is_refused_431_in_flat_memory(reference, path: str) -> None:
    """httptools: a plain GET; offer: the head of a request offering h2c (httptools reads it);
    h11: a connection handed to h11 by an earlier offer, then the huge head on it."""
    before = peak_mb(reference)
    with connect(reference) as sock:
        head = request(offer=True) if path == "h11" else b""
        if path == "h11":
            assert served(sock, head) == [200]
        head_start = request(offer=path == "offer").removesuffix(b"\r\n")
        answered = send_huge_header(sock, head_start)
    assert statuses(answered) in ([431], []), answered[:300]  # a 431, or the connection closed
    after = peak_mb(reference)
    print(f"\n{path}: VmHWM {before:.0f} -> {after:.0f} MB")
    assert after - before < MEMORY_GROWTH_MB, (before, after)
    with connect(reference) as sock:
        assert served(sock, request()) == [200]


@pytest.mark.parametrize("offer", [False, True], ids=["httptools", "h11"])
def test_a_head_over_the_bound_sent_at_once_is_refused(reference, offer: bool) -> None:
    """Whole in one write, so it may come in one read: measured as parsed too."""
    with connect(reference) as sock:
        if offer:
            assert served(sock, request(offer=True)) == [200]
        sock.sendall(request(b"X-Big: " + b"b" * MAX_HEAD_BYTES + b"\r\n"))
        assert statuses(read_all(sock)) == [431]


@pytest.mark.parametrize("offer", [False, True], ids=["httptools", "h11"])
def test_heads_within_the_bound_are_served_pipelined_or_not(reference, offer: bool) -> None:
    big = request(b"X-Big: " + b"b" * (MAX_HEAD_BYTES - 1024) + b"\r\n", offer=offer)
    pipelined = request(b"X-Some: " + b"s" * 1024 + b"\r\n") * 100  # ~110 KiB in one write
    with connect(reference) as sock:
        assert served(sock, big) == [200]
        assert served(sock, pipelined, 100) == [200] * 100


@pytest.mark.parametrize("offer", [False, True], ids=["httptools", "h11"])
def test_a_trickled_head_is_closed_with_408_after_its_time(reference, offer: bool) -> None:
    """A byte every 0.2 s (a 200-byte head would take 40 s): answered 408, then closed."""
    with connect(reference) as sock:
        if offer:
            assert served(sock, request(offer=True)) == [200]
        answered = b""
        for byte in request():
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                break
        else:
            pytest.fail("the whole head was sent: it was never closed")
        answered = read_all(sock)
    assert statuses(answered) == [408], answered[:300]
