"""A request kept in flight on purpose, for the tests of a graceful stop: a POST /categories
whose body is held back half-way, so that the server has begun it and cannot finish it until
the test sends the rest."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import time

import httpx

from tests.shared.servers import rate_limit_headers

DEADLINE_SECONDS = 15.0
# How long a held request stays unfinished after the stop began (the reference grants 5 s).
STILL_IN_FLIGHT_SECONDS = 1.0


class HalfSentPost:
    def __init__(self, base_url: str, key: str, name: str) -> None:
        url = httpx.URL(base_url)
        self.body = json.dumps({"name": name}).encode()
        self.sock = socket.create_connection((url.host, url.port), timeout=DEADLINE_SECONDS)
        head = (
            f"POST {url.path}/categories HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(self.body)}\r\n\r\n"
        )
        self.sock.sendall(head.encode() + self.body[:4])

    def finish(self) -> tuple[int, dict]:
        """Send the rest of the body; (status, JSON body) of the answer."""
        self.sock.sendall(self.body[4:])
        response = http.client.HTTPResponse(self.sock)
        response.begin()
        status, body = response.status, json.loads(response.read())
        self.sock.close()
        return status, body


def wait_until_admitted(base_url: str, key: str) -> None:
    """Poll with GETs on the same key (fresh, with room) until the Remaining they show counts
    one request more than they sent: the held POST has passed the limits, which come first,
    so the server is handling it."""
    sent = 0
    limit = None
    deadline = time.monotonic() + DEADLINE_SECONDS
    with httpx.Client(base_url=base_url, timeout=DEADLINE_SECONDS) as client:
        while True:
            response = client.get("/categories", headers={"Authorization": f"Bearer {key}"})
            sent += 1
            limit, remaining, _ = rate_limit_headers(response)
            if remaining == limit - sent - 1:
                return
            assert remaining == limit - sent, (limit, remaining, sent)
            assert time.monotonic() < deadline, "the held POST was never admitted"
            time.sleep(0.05)


def wait_until_not_answering(base_url: str) -> None:
    """Poll until a fresh connection is refused or left unanswered: the server has stopped
    taking requests (with worker processes the supervisor keeps the socket open, so a
    connection may still be accepted by the system, and then nobody answers it)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        try:
            httpx.get(base_url + "/categories", timeout=0.5)
        except httpx.TransportError:
            return
        assert time.monotonic() < deadline, "the server still answers after SIGTERM"
        time.sleep(0.05)


def stop_with_request_in_flight(
    process: subprocess.Popen[str], base_url: str, held: HalfSentPost
) -> tuple[int, dict]:
    """SIGTERM the server while `held` is in flight, finish it a moment later; its answer."""
    process.send_signal(signal.SIGTERM)
    wait_until_not_answering(base_url)
    # A request that takes a while yet: the stop must wait for it, not cut it off.
    time.sleep(STILL_IN_FLIGHT_SECONDS)
    return held.finish()
