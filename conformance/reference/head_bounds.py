"""What a request head may cost the reference (and the client mode's scenario servers, served
the same way): its size and the time it takes to arrive.

uvicorn bounds neither on its httptools protocol (llhttp has no limit, and httptools gathers a
header's value however long it grows), and its h11 protocol only the part of a head still
incomplete after a read. A client that sent a 64 MiB header was served 200, one that trickled
its head was never closed. Like nginx (`large_client_header_buffers`, `client_header_timeout`),
a head over MAX_HEAD_BYTES is answered 431 and one not complete within HEAD_SECONDS 408, each
with `Connection: close` and nothing more read.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from itertools import chain

MAX_HEAD_BYTES = 64 * 1024
"""The most of one request head read: its request line, header lines and the blank line. A
client of this API sends well under 2 KiB; nginx's default is four 8 KiB lines."""
HEAD_SECONDS = 10.0
"""The longest a request head may take to arrive, from the end of its first read."""


class HeadTooLarge(Exception):
    """Raised in a parser callback: the head being parsed is over MAX_HEAD_BYTES."""


def parsed_size(method: bytes, target: bytes, headers: Collection[tuple[bytes, bytes]]) -> int:
    """A head's size as written plainly (`Name: value` lines, CRLF ends): what a parser kept."""
    request_line = len(method) + 1 + len(target) + len(b" HTTP/1.1\r\n")
    # Summed by map and chain, without a Python frame per header: it runs for every request.
    return request_line + sum(map(len, chain.from_iterable(headers))) + 4 * len(headers) + 2


def refusal(status: int) -> bytes:
    """A 431 or 408 with the reference's Error body, for a connection closed after it."""
    code, reason, message = {
        431: (
            "request_header_fields_too_large",
            "Request Header Fields Too Large",
            f"The request head exceeds {MAX_HEAD_BYTES} bytes.",
        ),
        408: (
            "request_timeout",
            "Request Timeout",
            f"The request head did not arrive within {HEAD_SECONDS:g} s.",
        ),
    }[status]
    body = json.dumps({"code": code, "message": message, "status": status}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
