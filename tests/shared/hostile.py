"""A hostile target: a raw asyncio HTTP/1.1 server in front of the test double that passes its
answers on, except where its mode makes it attack the checker.

`python -m tests.shared.hostile --upstream URL --mode MODE [--after N] [--key KEY]` prints
`listening on http://127.0.0.1:PORT/v1` once it accepts connections. Modes:

- big-body: `GET .../categories` answered with `Content-Length: 2147483648`, a body made as it
  is sent (the server never holds it);
- gzip-bomb: the same request answered with 4 MiB of gzip that inflate to 4 GiB of JSON;
- big-listing: the same request with the first `--key` (the run's main key, whose requests read
  the listings) answered with the double's own listing and some 131,000 more categories: 4.1 MB
  of valid JSON, under the checker's body bound (the spare key's burst gets the double's own:
  4 MB answers at a 3-second minute's pace are more than this server sends on a busy machine);
- early-hints: every answer of the double preceded by a `103 Early Hints` (RFC 8297), as a
  server that hints at what to preload sends it;
- endless-chunk-extension: every 429 of the double sent with its status and headers, then a
  chunked body whose first chunk-size line carries an extension that never ends;
- endless-trailers: the same, with one chunk of body and then trailer fields that never end;
- trickle-body: every request answered with its headers at once and then a byte a second;
- trickle-headers: every request answered a byte a second from the status line on;
- keyless-429: every request without a valid key (`--key`) refused with 429, `Retry-After: 1`;
- refuse-all: every request refused so (an outage, a ban);
- unread-gzip-bomb, unread-not-json, unread-bad-schema: the 200s of the main key's (the first
  `--key`) GETs of /categories that no test reads, answered with the bomb, with a JSON text cut
  short, with a listing whose category has a string id: the request right after the spare
  key's (the second `--key`) first 429 (the exhaustion's probe of the main key), and one that
  ends a detour (/categories, then /store/orders, then /categories again).

The first N requests the mode would attack (`--after`) are passed on: a run's preflight gets
through, so that what the attack does to the run's reports shows.

Not the double's ASGI app: a trickle or a body of gigabytes needs the bytes on the wire in
the server's own hands.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import time
import zlib
from collections.abc import Callable, Iterator

import httpx

BIG_BODY = 2 * 1024**3
BOMB_MIB = 4096  # MiB of JSON the bomb inflates to
TRICKLE_SECONDS = 1.0
TRICKLE_BODY = b'[{"id":1,"name":"trickled","description":null}]'
MIB = 1024 * 1024
HEAD_LIMIT = 64 * 1024
# Framing and coding are this server's own: the body passed on is the one httpx decoded.
PASSED_NOT = ("content-length", "transfer-encoding", "connection", "content-encoding")
NO_KEY_BODY = b'{"code":"rate_limited","message":"Too many requests.","status":429}'


def gzip_bomb() -> tuple[bytes, bytes, int, bytes]:
    """(first part, block repeated, repeats, end) of one gzip member: `[` and BOMB_MIB MiB of
    spaces. Each MiB is flushed fully, so every block after the first is the same bytes."""
    spaces = b" " * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    first = compressor.compress(b"[" + spaces[1:]) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(spaces) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(b"[" + spaces[1:])
    for _ in range(BOMB_MIB - 1):
        crc = zlib.crc32(spaces, crc)
    # An empty final block with fixed codes (BFINAL 1, BTYPE 01, end-of-block), then the trailer.
    end = b"\x03\x00" + struct.pack("<II", crc, (BOMB_MIB * MIB) & 0xFFFFFFFF)
    return first, block, BOMB_MIB - 1, end


class Hostile:
    def __init__(self, upstream: str, mode: str, after: int, keys: list[str]):
        self._upstream = httpx.AsyncClient(base_url=upstream.removesuffix("/").removesuffix("/v1"))
        self._mode = mode
        self._left_alone = after
        self._valid = {f"bearer {key}" for key in keys}
        self._main = f"bearer {keys[0]}".lower() if keys else None
        self._bomb = gzip_bomb() if mode in ("gzip-bomb", "unread-gzip-bomb") else None
        self._unread = Unread(*keys[:2]) if mode in UNREAD else None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await read_request(reader)) is not None:
                await self._answer(writer, *request)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, writer, method: str, target: str, headers: dict, body: bytes) -> None:
        attack = self._attack(method, target, headers)
        if attack is not None and self._mode in STANDALONE:
            if not self._spared():
                await attack(writer)
                return
            attack = None
        response = await self._upstream.request(method, target, headers=headers, content=body)
        passed = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in PASSED_NOT
        ]
        caller = headers.get("authorization", "").lower()
        if self._unread and self._unread.aimed(caller, method, target, response.status_code):
            if self._mode == "unread-gzip-bomb":
                await self._send_bomb(writer, passed)
            else:
                await send(writer, 200, passed, UNREAD[self._mode])
            return
        if attack is not None and response.status_code == 200 and not self._spared():
            # The service's own status and headers, a hostile body.
            await attack(writer, passed)
            return
        listing = method == "GET" and target.split("?")[0].endswith("/categories")
        main = headers.get("authorization", "").lower() == self._main
        if self._mode == "big-listing" and listing and main and response.status_code == 200:
            await send(writer, 200, passed, big_listing(response.content))
            return
        if self._mode in ENDLESS_FRAMING and response.status_code == 429:
            await endless_framing(writer, passed, ENDLESS_FRAMING[self._mode])
            return
        if self._mode == "early-hints":
            writer.write(EARLY_HINTS)
        await send(writer, response.status_code, passed, response.content)

    def _attack(self, method: str, target: str, headers: dict) -> Callable | None:
        if self._mode == "refuse-all":
            return refuse
        if self._mode == "keyless-429":
            if headers.get("authorization", "").lower() in self._valid:
                return None
            return refuse
        if self._mode not in ATTACKS:
            return None
        aimed = self._mode.startswith("trickle") or (
            method == "GET" and target.split("?")[0].endswith("/categories")
        )
        if not aimed:
            return None
        return {
            "big-body": big_body,
            "gzip-bomb": self._send_bomb,
            "trickle-body": trickle_body,
            "trickle-headers": trickle_headers,
        }[self._mode]

    def _spared(self) -> bool:
        """Whether this one is among the first N the mode would attack, passed on."""
        if self._left_alone > 0:
            self._left_alone -= 1
            return True
        return False

    async def _send_bomb(self, writer: asyncio.StreamWriter, headers: list) -> None:
        first, block, repeats, end = self._bomb
        size = len(first) + len(block) * repeats + len(end)
        head = head_bytes(200, [*headers, ("Content-Encoding", "gzip")])
        await stream(writer, head, size, iter([first, *[block] * repeats, end]))


async def read_request(reader: asyncio.StreamReader) -> tuple | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    if len(head) > HEAD_LIMIT:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in filter(None, lines[1:]):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    for name in ("host", "connection", "content-length", "accept-encoding"):
        headers.pop(name, None)
    return method, target, headers, body


def head_bytes(status: int, headers: list[tuple[str, str]], length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Too Many Requests'}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send(writer, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
    writer.write(head_bytes(status, headers, len(body)) + body)
    await writer.drain()


async def stream(writer, head: bytes, length: int, parts: Iterator[bytes]) -> None:
    """`head` with Content-Length `length`, then `parts` as the client takes them."""
    writer.write(head[:-2] + f"Content-Length: {length}\r\n\r\n".encode())
    for part in parts:
        writer.write(part)
        await writer.drain()


async def big_body(writer: asyncio.StreamWriter, headers: list) -> None:
    item = b'{"id":1,"name":"x","description":null},'
    piece = b"[" + item * (MIB // len(item))
    filler = piece[1:] + b" "
    pieces = (piece if i == 0 else filler for i in range(BIG_BODY // len(piece) + 1))
    await stream(writer, head_bytes(200, headers), BIG_BODY, pieces)


LISTING_BYTES = 4_100_000  # under MAX_BODY_BYTES (4 MiB: 4,194,304), with room for the double's
FILLERS = b"".join(b',{"id":%d,"name":"f%d"}' % (10**6 + n, n) for n in range(160_000))[
    : LISTING_BYTES - 10_000
]
FILLERS = FILLERS[: FILLERS.rindex(b",{")]  # whole categories only


def big_listing(listing: bytes) -> bytes:
    """The double's JSON array with the fillers after its own categories."""
    inside = listing.strip()[1:-1].strip()
    return b"[" + inside + (FILLERS if inside else FILLERS[1:]) + b"]"


EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </v1/categories>; rel=preload\r\n\r\n"
ENDLESS_SECONDS = 60.0  # this server's own bound on one endless answer
ENDLESS_FRAMING = {
    # (what starts the chunked body, what is repeated after it)
    "endless-chunk-extension": (b"1;ext=", b"a" * 65_536),
    "endless-trailers": (b"1\r\n{\r\n0\r\n", b"X-Trailer: aaaaaaaaaaaaaaaa\r\n" * 2048),
}


async def endless_framing(writer: asyncio.StreamWriter, headers: list, framing: tuple) -> None:
    """A 429's head with the double's headers, then chunked framing as long as the client reads
    it (a minute at most)."""
    start, repeated = framing
    head = head_bytes(429, [*headers, ("Transfer-Encoding", "chunked")])
    writer.write(head + start)
    ends = time.monotonic() + ENDLESS_SECONDS
    while time.monotonic() < ends:
        writer.write(repeated)
        await writer.drain()
    writer.close()


async def refuse(writer: asyncio.StreamWriter) -> None:
    """A 429 as a limiter of the service sends it: with its rate-limit headers."""
    headers = [
        ("Content-Type", "application/json"),
        ("Retry-After", "1"),
        ("X-RateLimit-Limit", "60"),
        ("X-RateLimit-Remaining", "0"),
        ("X-RateLimit-Reset", str(int(time.time()) + 1)),
    ]
    await send(writer, 429, headers, NO_KEY_BODY)


async def trickle(writer: asyncio.StreamWriter, data: bytes) -> None:
    for index in range(len(data)):
        writer.write(data[index : index + 1])
        await writer.drain()
        await asyncio.sleep(TRICKLE_SECONDS)


async def trickle_body(writer: asyncio.StreamWriter) -> None:
    headers = [("Content-Type", "application/json")]
    writer.write(head_bytes(200, headers, len(TRICKLE_BODY)))
    await trickle(writer, TRICKLE_BODY)


async def trickle_headers(writer: asyncio.StreamWriter) -> None:
    headers = [("Content-Type", "application/json")]
    await trickle(writer, head_bytes(200, headers, len(TRICKLE_BODY)) + TRICKLE_BODY)


class Unread:
    """Which 200s no test of a run reads: the main key's GET of /categories right after the
    spare key's first 429, and the last of a detour (/categories, /store/orders, /categories)."""

    def __init__(self, main: str, spare: str):
        self._main, self._spare = f"bearer {main}", f"bearer {spare}"
        self._spare_refused = self._probe_due = False
        self._recent: list[tuple[str, str]] = []  # the main key's last two requests

    def aimed(self, caller: str, method: str, target: str, status: int) -> bool:
        if caller == self._spare and status == 429 and not self._spare_refused:
            self._spare_refused = self._probe_due = True
        if caller != self._main:
            return False
        request = (method, target.split("?")[0].removeprefix("/v1"))
        probe, self._probe_due = self._probe_due, False
        detour_end = self._recent == [LISTING, ("GET", "/store/orders")]
        self._recent = [*self._recent[-1:], request]
        return request == LISTING and status == 200 and (probe or detour_end)


LISTING = ("GET", "/categories")
# What the unread-* modes answer instead of the listing: a JSON text cut short, an id as a string.
UNREAD = {
    "unread-gzip-bomb": b"",
    "unread-not-json": b'[{"id": 1, "name": "Dogs"',
    "unread-bad-schema": b'[{"id": "7", "name": "Dogs"}]',
}
ATTACKS = ("big-body", "gzip-bomb", "trickle-body", "trickle-headers")
STANDALONE = (
    "trickle-body",
    "trickle-headers",
    "keyless-429",
    "refuse-all",
)  # answer without the double
MODES = (
    *STANDALONE,
    "big-body",
    "gzip-bomb",
    "big-listing",
    "early-hints",
    *ENDLESS_FRAMING,
    *UNREAD,
)


async def main(args: argparse.Namespace) -> None:
    hostile = Hostile(args.upstream, args.mode, args.after, args.key)
    server = await asyncio.start_server(hostile.serve, "127.0.0.1", 0, limit=HEAD_LIMIT * 2)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.shared.hostile", description=__doc__)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--after", type=int, default=0)
    parser.add_argument("--key", action="append", default=[])
    asyncio.run(main(parser.parse_args()))
