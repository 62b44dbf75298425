"""Debian's HAProxy in front of a test server: a foreground process with its configuration in
the test's folder, on a free loopback port; waited for, then stopped.

    with running_haproxy(folder, lambda port: FRONTEND.format(port)) as haproxy:
        ... haproxy.port ...

`config(port)` gives the `frontend` and `backend` sections (a frontend that `bind`s
127.0.0.1:PORT); the launcher provides `global` and `defaults`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.shared.nginx import free_port, wait_for_ports

HAPROXY = "/usr/sbin/haproxy"
ATTEMPTS = 3  # a free port may be taken between asking for it and HAProxy binding it

MAIN_CONFIG = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
{config}
"""


class HaproxyDidNotStart(RuntimeError):
    pass


def haproxy_path() -> str | None:
    """Debian's HAProxy (it lives in /usr/sbin, off a user's PATH), or any on the PATH."""
    return HAPROXY if os.access(HAPROXY, os.X_OK) else shutil.which("haproxy")


@dataclass
class Haproxy:
    process: subprocess.Popen[bytes]
    folder: Path
    port: int

    @property
    def ports(self) -> list[int]:  # what tests.shared.nginx.wait_for_ports waits on
        return [self.port]

    def log(self) -> str:
        path = self.folder / "haproxy.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_haproxy(folder: Path, config: Callable[[int], str]) -> Haproxy:
    """Start HAProxy (`-db`: in the foreground) with `config(port)` on a free loopback port;
    wait until the port accepts connections."""
    executable = haproxy_path()
    if executable is None:
        raise HaproxyDidNotStart("haproxy is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, ATTEMPTS + 1):
        port = free_port()
        path = folder / "haproxy.cfg"
        path.write_text(MAIN_CONFIG.format(config=config(port)))
        with open(folder / "haproxy.log", "wb") as log:
            process = subprocess.Popen(
                [executable, "-db", "-f", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = Haproxy(process, folder, port)
        # A port taken meanwhile by another test's server accepts connections too: HAProxy then
        # says it cannot bind, and this attempt is not ours.
        ours = wait_for_ports(server)  # type: ignore[arg-type]
        if ours and "Address already in use" not in server.log():
            return server
        server.stop()
        if "Address already in use" not in server.log() or attempt == ATTEMPTS:
            raise HaproxyDidNotStart(f"haproxy did not start: {server.log()[-2000:]}")
    raise AssertionError("unreachable")


@contextlib.contextmanager
def running_haproxy(folder: Path, config: Callable[[int], str]) -> Iterator[Haproxy]:
    server = start_haproxy(folder, config)
    try:
        yield server
    finally:
        server.stop()
