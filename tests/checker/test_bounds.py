"""Reading a body within its bound: as sent and once decoded, whatever the coding."""

from __future__ import annotations

import zlib

import pytest

from conformance.httpclient.bounds import BodyTooLarge, read_body

LIMIT = 64 * 1024


def pieces(data: bytes, size: int = 4096) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def deflated(data: bytes, wbits: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("coding", "wbits"),
    [("gzip", zlib.MAX_WBITS | 16), ("deflate", zlib.MAX_WBITS), ("deflate", -zlib.MAX_WBITS)],
)
def test_a_coded_body_within_the_bound_is_decoded_whole(coding, wbits):
    body = b'[{"id":1,"name":"Dogs"}]' * 100
    assert read_body(pieces(deflated(body, wbits)), coding, LIMIT) == body


def test_a_body_inflating_past_the_bound_stops_there():
    """A bomb: a few KiB that would inflate to 64 MiB; decoding stops just past the bound."""
    bomb = deflated(b" " * (64 * 1024 * 1024), zlib.MAX_WBITS | 16)
    assert len(bomb) < LIMIT
    with pytest.raises(BodyTooLarge, match=f"a body of more than {LIMIT} bytes") as raised:
        read_body(pieces(bomb), "gzip", LIMIT)
    assert len(raised.value.body) == LIMIT


def test_a_body_sent_past_the_bound_is_read_no_further():
    read: list[int] = []

    def endless():
        while True:
            read.append(1)
            yield b"x" * 4096

    with pytest.raises(BodyTooLarge):
        read_body(endless(), None, LIMIT)
    assert len(read) == LIMIT // 4096 + 1


def test_an_unknown_coding_is_kept_as_sent():
    assert read_body([b"\x01\x02"], "br", LIMIT) == b"\x01\x02"
