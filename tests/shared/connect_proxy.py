"""An HTTP CONNECT proxy for tests, as CI networks put between a job and a staging server:
`TcpProxy` with the upstream named by each client's `CONNECT host:port` request.

`ConnectProxy().start()` listens on a free loopback port; `tunnels` lists, per tunnel, the
target asked for and the local port of the proxy's connection to it, so that a test can tell
from the server's access log which requests came through the proxy.
"""

from __future__ import annotations

import asyncio

from tests.shared.tcp_proxy import TcpProxy

HEAD_LIMIT = 16_384


class ConnectProxy(TcpProxy):
    def __init__(self) -> None:
        super().__init__(("", 0))
        self.tunnels: list[tuple[str, int]] = []
        self.authorizations: list[str] = []  # Proxy-Authorization values, as received

    async def _open_upstream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            head = (await reader.readuntil(b"\r\n\r\n"))[:HEAD_LIMIT].decode("latin-1")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            raise OSError("no request head") from error
        method, target, *_ = head.split("\r\n", 1)[0].split(" ")
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "proxy-authorization":
                self.authorizations.append(value.strip())
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            raise OSError(f"{method} is not CONNECT")
        host, _, port = target.rpartition(":")
        upstream = await asyncio.open_connection(host, int(port))
        self.tunnels.append((target, upstream[1].get_extra_info("sockname")[1]))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        return upstream
