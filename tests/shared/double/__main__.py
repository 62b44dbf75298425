"""`python -m tests.shared.double --port 0 --key KEY:PLAN [--fault NAME ...] [--variant NAME ...]
[--url-log FILE]`.

Binds 127.0.0.1 itself (port 0 picks a free port) and prints one line on stdout,
`listening on http://127.0.0.1:PORT/v1`, once the socket accepts connections. With --url-log
it appends every request target it receives (path and query string) to FILE.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from tests.shared.double.app import base_path
from tests.shared.double.behaviours import UnknownBehaviour, check_names, split_names
from tests.shared.double.limiter import Plan, parse_key


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.shared.double", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", action="append", default=[], metavar="KEY:PLAN")
    parser.add_argument("--minute-seconds", type=float, default=60.0)
    parser.add_argument("--fault", action="append", default=[], metavar="NAME")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME")
    parser.add_argument("--url-log", type=Path, metavar="FILE")
    return parser.parse_args(argv)


def fail(message: str) -> None:
    print(f"petstore double: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    faults = [*split_names(os.environ.get("PETSTORE_DOUBLE_FAULTS")), *args.fault]
    variants = [*split_names(os.environ.get("PETSTORE_DOUBLE_VARIANTS")), *args.variant]
    try:
        check_names(faults, variants)
    except UnknownBehaviour as error:
        fail(str(error))
    keys: dict[str, Plan] = {}
    for spec in args.key:
        try:
            key, plan = parse_key(spec)
        except ValueError as error:
            fail(str(error))
        keys[key] = plan
    if args.minute_seconds <= 0:
        fail("--minute-seconds must be positive")

    # Imported late: a usage error must not pay for Starlette and uvicorn.
    import uvicorn

    from conformance.reference.upgrade_offers import HttpToolsServingUpgradeOffers
    from tests.shared.double.app import DoubleConfig, build_app

    config = DoubleConfig(
        keys, args.minute_seconds, frozenset(faults), frozenset(variants), args.url_log
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Without it, accepted connections keep Nagle on and every response waits ~40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as error:
        fail(f"cannot bind 127.0.0.1:{args.port}: {error}")
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(config),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            server_header=False,  # the app names itself, so a proxy's answer can differ
            # As the reference: a create offering an h2c upgrade is served whole.
            http=HttpToolsServingUpgradeOffers,
        )
    )
    print(f"listening on http://127.0.0.1:{port}{base_path(faults)}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
