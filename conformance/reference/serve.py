"""Running the reference on uvicorn: from the command line, or in a background thread.

The socket is always bound here and handed to uvicorn, so that `--port 0` (a free port chosen
by the system) works and the real address is known before the first request.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from conformance.reference.app import SETTINGS_ENVIRONMENT_VARIABLE, Settings, create_app
from conformance.reference.auth import KeyRing
from conformance.reference.plans import parse_key_spec
from conformance.reference.upgrade_offers import HttpToolsServingUpgradeOffers

ANNOUNCEMENT = "petstore-reference listening on {base_url}"

LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "petstore-reference %(levelname)s: %(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": "plain",
        },
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "petstore.reference": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        # The connection pool says when it cannot connect, and when it gives up.
        "psycopg.pool": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
    },
}


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this; uvicorn leaves Nagle on for sockets it is handed,
        # and small responses then wait ~40 ms for the client's delayed ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def base_url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


# httptools, but a request offering an upgrade (Java's HttpClient: h2c) is served whole, and a
# head is bounded (upgrade_offers.py). The benchmark's yardstick is served on uvicorn's own.
PROTOCOL: type | str = HttpToolsServingUpgradeOffers


def _config(
    app: object, *, quiet: bool, workers: int = 1, keep_alive: int = 5, http: type | str = PROTOCOL
) -> uvicorn.Config:
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        timeout_keep_alive=keep_alive,
        http=http,
        factory=isinstance(app, str),
        workers=workers,
        lifespan="on",
        access_log=False,  # uvicorn's access log would print query strings
        log_config=None if quiet else LOG_CONFIG,
        log_level=None if quiet else "warning",
        server_header=False,
        timeout_graceful_shutdown=5,
    )


def serve(
    settings: Settings,
    sock: socket.socket,
    announce: Callable[[str], None],
) -> bool:
    """Serve on a bound socket until a signal stops the server; False if it never started."""
    return serve_app(create_app(settings), sock, announce)


def serve_app(
    app: object,
    sock: socket.socket,
    announce: Callable[[str], None],
    announcement: str = ANNOUNCEMENT,
    http: type | str = PROTOCOL,
) -> bool:
    """Serve any ASGI app as the reference is served (the benchmark's yardstick uses this, with
    uvicorn's own protocol as `http`)."""
    server = uvicorn.Server(_config(app, quiet=False, http=http))

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            announce(announcement.format(base_url=base_url_of(sock)))
        await task

    try:
        asyncio.run(run())
    except SystemExit:  # uvicorn exits this way when the application fails to start
        return False
    return server.started


def serve_workers(
    settings: Settings,
    sock: socket.socket,
    workers: int,
    announce: Callable[[str], None],
) -> None:
    """Serve with uvicorn worker processes sharing the bound socket.

    Workers rebuild the application from the settings in the environment, which holds key
    digests, never keys. Each worker has its own memory rate-limit storage; exact limits
    across workers need Redis.
    """
    os.environ[SETTINGS_ENVIRONMENT_VARIABLE] = settings.to_environment()
    serve_factory_workers(
        "conformance.reference.app:create_app_from_environment", sock, workers, announce
    )


def serve_factory_workers(
    factory: str,
    sock: socket.socket,
    workers: int,
    announce: Callable[[str], None],
    announcement: str = ANNOUNCEMENT,
    http: type | str = PROTOCOL,
) -> None:
    """Serve the app `factory` ("module:function") builds, in `workers` worker processes."""
    from uvicorn.supervisors import Multiprocess

    config = _config(factory, quiet=False, workers=workers, http=http)
    announce(announcement.format(base_url=base_url_of(sock)))
    Multiprocess(config, sockets=[sock]).run()


@dataclass
class RunningReference:
    """A reference served by uvicorn in a background thread of this process."""

    base_url: str
    _server: uvicorn.Server
    _thread: threading.Thread
    _socket: socket.socket

    def stop(self, timeout: float = 10) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> RunningReference:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_in_thread(
    keys: list[str],
    minute_seconds: float,
    database: str | None = None,
    *,
    rate_limit_storage: str = "memory://",
    host: str = "127.0.0.1",
    startup_timeout: float = 15,
) -> RunningReference:
    """Start the reference on a free loopback port; return once it accepts requests.

    `keys` are `KEY:PLAN` specs, as on the command line. `minute_seconds` must be a whole
    number of seconds (at least 1). Raises ValueError for bad arguments and RuntimeError
    when the server does not start.
    """
    if minute_seconds < 1 or int(minute_seconds) != minute_seconds:
        raise ValueError("minute_seconds must be a whole number of seconds, at least 1")
    if not keys:
        raise ValueError("at least one KEY:PLAN spec is needed")
    settings = Settings(
        keys=KeyRing.from_keys(parse_key_spec(spec) for spec in keys),
        minute_seconds=int(minute_seconds),
        database=database,
        rate_limit_storage=rate_limit_storage,
    )
    app = create_app(settings, access_log=False)  # a quiet server in the caller's process
    return start_app_in_thread(app, host, startup_timeout)


def start_app_in_thread(
    app: object, host: str = "127.0.0.1", startup_timeout: float = 15, keep_alive: int = 5
) -> RunningReference:
    """Serve an ASGI app quietly on a free port of `host`, in a background thread; return once
    it accepts requests (RuntimeError when it does not start). `keep_alive`: seconds an idle
    connection is kept open (uvicorn's default, 5)."""
    sock = bind_socket(host, 0)
    server = uvicorn.Server(_config(app, quiet=True, keep_alive=keep_alive))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported to the starting thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="petstore-reference", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            sock.close()
            reason = f": {failure[0]!r}" if failure else ""
            raise RuntimeError(f"the reference did not start{reason}")
        time.sleep(0.01)
    return RunningReference(base_url_of(sock), server, thread, sock)


def write_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
