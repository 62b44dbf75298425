"""The benchmark's yardstick: a bare Starlette app that answers GET /v1/categories with `[]` and
fixed rate-limit headers (as many as the reference sends, and as long), served on uvicorn's own
httptools protocol with the reference's socket options, uvicorn settings and workers. The
reference's protocol (upgrade_offers.py: bounded heads, h2c offers served) is its own, and its
cost is the reference's: `--http reference` serves the bare app on it, to see that cost alone.

    python -m tests.shared.bare_app [--host 127.0.0.1] [--port 0] [--workers N]
        [--http httptools|reference]

prints `bare-app listening on http://HOST:PORT/v1` once it accepts connections.
"""

from __future__ import annotations

import argparse
import contextlib

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conformance.reference.serve import (
    PROTOCOL,
    bind_socket,
    serve_app,
    serve_factory_workers,
    write_line,
)

ANNOUNCEMENT = "bare-app listening on {base_url}"


# What the reference sends a key with a quota too large to spend (the benchmark's).
RATE_LIMIT_HEADERS = {
    "X-RateLimit-Limit": "1000000000",
    "X-RateLimit-Remaining": "999999999",
    "X-RateLimit-Reset": "1796400000",
}


async def empty_list(request: Request) -> JSONResponse:
    return JSONResponse([], headers=RATE_LIMIT_HEADERS)


def create_bare_app() -> Starlette:
    return Starlette(routes=[Route("/v1/categories", empty_list, methods=["GET"])])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.shared.bare_app", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--http", choices=("httptools", "reference"), default="httptools")
    options = parser.parse_args(argv)
    http = PROTOCOL if options.http == "reference" else "httptools"
    sock = bind_socket(options.host, options.port)
    with contextlib.suppress(KeyboardInterrupt):
        if options.workers > 1:
            factory = "tests.shared.bare_app:create_bare_app"
            serve_factory_workers(factory, sock, options.workers, write_line, ANNOUNCEMENT, http)
        else:
            serve_app(create_bare_app(), sock, write_line, ANNOUNCEMENT, http)
    sock.close()


if __name__ == "__main__":
    main()
