"""Debian's nginx in front of a test server: a foreground process with its own configuration,
pid, temporary and log files in one folder, on free loopback ports; waited for, then stopped.

    with running_nginx(folder, lambda ports: SERVER_BLOCKS.format(*ports), 2) as nginx:
        ... nginx.ports ...

`http_config(ports)` gives what goes inside nginx's `http {}` block (server blocks that
`listen 127.0.0.1:PORT`); the launcher provides the rest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

NGINX = "/usr/sbin/nginx"
STARTUP_TIMEOUT = 10.0
ATTEMPTS = 3  # a free port may be taken between asking for it and nginx binding it

MAIN_CONFIG = """\
daemon off;
worker_processes 1;
{user}
pid {folder}/nginx.pid;
error_log {folder}/error.log info;
events {{ worker_connections 512; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{http_config}
}}
"""


class NginxDidNotStart(RuntimeError):
    pass


def nginx_path() -> str | None:
    """Debian's nginx (it lives in /usr/sbin, off a user's PATH), or any on the PATH."""
    return NGINX if os.access(NGINX, os.X_OK) else shutil.which("nginx")


def free_port() -> int:
    (port,) = free_ports(1)
    return port


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports: their sockets held open together while chosen,
    since a port just closed may be handed out again (two server blocks of one nginx on one
    port: the staging test's "wrong name" was once answered by its mutual-TLS address)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Nginx:
    process: subprocess.Popen[bytes]
    folder: Path
    ports: list[int]

    def error_log(self) -> str:
        path = self.folder / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def access_log(self) -> list[str]:
        path = self.folder / "access.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # nginx's fast shutdown
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_nginx(folder: Path, http_config: Callable[[list[int]], str], ports: int = 1) -> Nginx:
    """Start nginx with `http_config(ports)` on `ports` free loopback ports; wait until every
    port accepts connections."""
    executable = nginx_path()
    if executable is None:
        raise NginxDidNotStart("nginx is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, ATTEMPTS + 1):
        chosen = free_ports(ports)
        config = folder / "nginx.conf"
        config.write_text(
            MAIN_CONFIG.format(
                folder=folder,
                # As root, workers would otherwise drop to `nobody`, who cannot write here.
                user="user root;" if os.geteuid() == 0 else "",
                http_config=http_config(chosen),
            )
        )
        process = subprocess.Popen(
            [executable, "-p", str(folder), "-c", str(config), "-e", str(folder / "error.log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = Nginx(process, folder, chosen)
        # A port taken meanwhile by another test's server accepts connections too: nginx then
        # logs its failed bind (and retries it for seconds), and this attempt is not ours.
        if wait_for_ports(server) and "Address already in use" not in server.error_log():
            return server
        server.stop()
        if "Address already in use" not in server.error_log() or attempt == ATTEMPTS:
            raise NginxDidNotStart(f"nginx did not start: {server.error_log()[-2000:]}")
    raise AssertionError("unreachable")


def wait_for_ports(server: Nginx) -> bool:
    """Whether every port accepts a connection before nginx exits or the time is up."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    waiting = list(server.ports)
    while waiting and time.monotonic() < deadline and server.process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", waiting[0]), timeout=1).close()
            waiting.pop(0)
        except OSError:
            time.sleep(0.02)  # nginx has not bound it yet
    return not waiting


@contextlib.contextmanager
def running_nginx(
    folder: Path, http_config: Callable[[list[int]], str], ports: int = 1
) -> Iterator[Nginx]:
    server = start_nginx(folder, http_config, ports)
    try:
        yield server
    finally:
        server.stop()
