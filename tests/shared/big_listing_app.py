"""A correct server with a big listing: the reference, whose 200s of GET /v1/categories list the
categories the run created and then `{"id":20000000+i,"name":"cN"}` up to LISTING_BYTES in all,
written by `json.dumps(..., separators=(",", ":"))` with its default `\\u` escapes of every
non-ASCII character, with Content-Length and no compression (a user's server as reported).

    python -m tests.shared.big_listing_app --key KEY:PLAN [--key ...] [--minute-seconds S]

prints `big-listing listening on http://127.0.0.1:PORT/v1` once it accepts connections.
"""

from __future__ import annotations

import argparse
import contextlib
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.app import Settings, create_app
from conformance.reference.auth import KeyRing
from conformance.reference.plans import parse_key_spec
from conformance.reference.serve import bind_socket, serve_app, write_line

ANNOUNCEMENT = "big-listing listening on {base_url}"
LISTING_BYTES = 4_099_985  # under the checker's body bound (4 MiB: 4,194,304)
FILLERS = json.dumps(
    [{"id": 20_000_000 + n, "name": "cN"} for n in range(150_000)], separators=(",", ":")
).encode("ascii")[1:-1]


def big_listing(listing: bytes) -> bytes:
    """The reference's categories, then fillers up to LISTING_BYTES, all ASCII JSON."""
    created = json.dumps(json.loads(listing), separators=(",", ":")).encode("ascii")[:-1]
    room = LISTING_BYTES - len(created) - 2  # a comma and the closing bracket
    fillers = FILLERS[: FILLERS.rindex(b",{", 0, room + 1)]
    return created + (b"," if len(created) > 1 else b"") + fillers + b"]"


class BigListing:
    """The reference's app, its listings made big."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        listing = scope["type"] == "http" and (scope["method"], scope["path"]) == (
            "GET",
            "/v1/categories",
        )
        if not listing:
            await self.app(scope, receive, send)
            return
        start: dict = {}
        body = bytearray()

        async def held(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            content = bytes(body)
            if start["status"] == 200:
                content = big_listing(content)
            headers = [(n, v) for n, v in start["headers"] if n.lower() != b"content-length"]
            headers.append((b"content-length", str(len(content)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": content})

        await self.app(scope, receive, held)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.shared.big_listing_app")
    parser.add_argument("--key", action="append", required=True)
    parser.add_argument("--minute-seconds", type=int, default=60)
    options = parser.parse_args(argv)
    settings = Settings(
        keys=KeyRing.from_keys(parse_key_spec(spec) for spec in options.key),
        minute_seconds=options.minute_seconds,
    )
    sock = bind_socket("127.0.0.1", 0)
    with contextlib.suppress(KeyboardInterrupt):
        serve_app(BigListing(create_app(settings)), sock, write_line, ANNOUNCEMENT)
    sock.close()


if __name__ == "__main__":
    main()
