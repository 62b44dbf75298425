"""A TCP proxy for tests: puts distance between two loopback peers, or cuts them apart.

    python -m tests.shared.tcp_proxy --upstream 127.0.0.1:8000 [--delay 0.05] [--port 0]

prints `proxying 127.0.0.1:PORT -> HOST:PORT` once it accepts connections. In a test,
`TcpProxy(upstream, delay=0.05)` runs the same proxy on a thread of its own.

`delay` is one way: every chunk reaches the other side `delay` seconds after it was read, in
order and without limiting throughput, so a 0.05 s delay makes a server 100 ms away (round trip);
opening a connection costs one more round trip, as a TCP handshake does. `cut()` drops every open
connection and refuses new ones until `restore()`: a database or cache that goes away.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable

CHUNK = 65_536


class TcpProxy:
    """`with TcpProxy(("127.0.0.1", 8000), delay=0.05) as proxy: ... proxy.port ...`"""

    def __init__(self, upstream: tuple[str, int], delay: float = 0.0, port: int = 0) -> None:
        self.upstream = upstream
        self.delay = delay
        self.host = "127.0.0.1"
        self.port = port
        self.connections = 0
        self._cut = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    # -- control, from any thread -------------------------------------------------------------

    def start(self) -> TcpProxy:
        self._thread = threading.Thread(target=self._serve_forever, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the TCP proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def cut(self) -> None:
        """Drop every open connection and refuse new ones, until `restore()`."""
        self._cut = True
        self._call(self._drop_all)

    def restore(self) -> None:
        self._cut = False

    def url(self, scheme: str = "http", path: str = "") -> str:
        return f"{scheme}://{self.host}:{self.port}{path}"

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the proxy, on its own event loop ------------------------------------------------------

    def _call(self, function: Callable[[], None]) -> None:
        if self._loop is None:
            return
        done = threading.Event()

        def call() -> None:
            function()
            done.set()

        self._loop.call_soon_threadsafe(call)
        done.wait(5)

    def _serve_forever(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._open())
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            # Abort every connection and let each task see it, so that none is left pending.
            if self._server is not None:
                self._server.close()
            self._drop_all()
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.close()

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def _drop_all(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Python 3.11's stream server asks a cancelled handler for its exception and prints the
        # CancelledError as a traceback: a connection still open when the proxy stops ends
        # quietly here instead.
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            writer.transport.abort()
            return
        self.connections += 1
        nodelay(writer)
        try:
            if self.delay:
                await asyncio.sleep(2 * self.delay)  # the handshake's round trip
            upstream_reader, upstream_writer = await self._open_upstream(reader, writer)
        except OSError:
            writer.transport.abort()
            return
        nodelay(upstream_writer)
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(
            self._pipe(reader, upstream_writer),
            self._pipe(upstream_reader, writer),
            return_exceptions=True,
        )
        self._writers -= {writer, upstream_writer}
        for side in (writer, upstream_writer):
            side.close()

    async def _open_upstream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The connection to the upstream for a client that has just connected."""
        return await asyncio.open_connection(*self.upstream)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy one direction, each chunk delivered `delay` seconds after it was read."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            with contextlib.suppress(OSError):
                if writer.can_write_eof():
                    writer.write_eof()

        delivery = asyncio.ensure_future(deliver())
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((time.monotonic() + self.delay, data))
        except OSError:
            pass
        finally:
            queue.put_nowait((time.monotonic() + self.delay, b""))
            with contextlib.suppress(Exception):
                await delivery


def nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.shared.tcp_proxy", description=__doc__)
    parser.add_argument("--upstream", required=True, metavar="HOST:PORT")
    parser.add_argument("--delay", type=float, default=0.0, help="one-way delay in seconds")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    proxy = TcpProxy((host, int(port)), delay=args.delay, port=args.port).start()
    print(f"proxying {proxy.host}:{proxy.port} -> {args.upstream}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


if __name__ == "__main__":
    main()
