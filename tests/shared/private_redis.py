"""A Redis server of the test's own, on a free loopback port, that the test may kill and start
again: the shared one is never stopped. It keeps an append-only file, synced on every write,
so that what it acknowledged survives a kill, as a production Redis with persistence would."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis

STARTUP_DEADLINE_SECONDS = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not installed")
        self.command = [
            binary,
            "--bind", "127.0.0.1",
            "--port", str(free_port()),
            "--dir", str(folder),
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", "always",
        ]  # fmt: skip
        self.port = int(self.command[self.command.index("--port") + 1])
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateRedis:
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
        client = redis.Redis(port=self.port, socket_timeout=1)
        try:
            while True:
                try:
                    if client.ping():
                        return self
                except redis.ConnectionError:
                    pass
                assert self.process.poll() is None, "redis-server exited at start"
                assert time.monotonic() < deadline, "redis-server did not answer"
                time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        """Gone at once, as a crash: no shutdown, no goodbye to its clients."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def __enter__(self) -> PrivateRedis:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.kill()
