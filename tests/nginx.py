"""A real nginx (Debian's) in front of a test's server: started as a non-daemon process with a
config of the test's own, its pid, temp and log files in a tmp folder, on a free loopback port.

    with running_nginx(tmp_path, "location / { proxy_pass http://127.0.0.1:8000; }") as port:
        ...

`server_block` is what goes inside `server { }` (the launcher adds the `listen`); `http_block`
goes beside it in `http { }`, for what only lives there (`limit_req_zone`, `upstream`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.private_redis import free_port

STARTUP_DEADLINE_SECONDS = 10.0
CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")

CONFIG = """\
{user}
daemon off;
master_process on;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{http_block}
    server {{
        listen 127.0.0.1:{port};
{server_block}
    }}
}}
"""


class NginxDidNotStart(RuntimeError):
    pass


def nginx_path() -> str | None:
    found = shutil.which("nginx")
    return found or next((path for path in CANDIDATES if os.access(path, os.X_OK)), None)


@contextmanager
def running_nginx(folder: Path, server_block: str, http_block: str = "") -> Iterator[int]:
    """nginx with this config, listening on the port yielded; stopped (and reaped) on exit."""
    binary = nginx_path()
    if binary is None:
        raise FileNotFoundError("nginx is not installed")
    folder = folder / "nginx"
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # As root, nginx's workers would run as nobody, who may not enter a private tmp folder.
    user = "user root;" if os.geteuid() == 0 else ""
    config = folder / "nginx.conf"
    config.write_text(
        CONFIG.format(
            user=user,
            folder=folder,
            port=port,
            http_block=http_block,
            server_block=server_block,
        )
    )
    command = [binary, "-p", str(folder), "-c", str(config), "-e", str(folder / "error.log")]
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_for_port(process, port, folder)
        yield port
    finally:
        process.terminate()  # SIGTERM: nginx's fast shutdown
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


def wait_for_port(process: subprocess.Popen[bytes], port: int, folder: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            errors = (process.stderr.read() if process.stderr else b"").decode(errors="replace")
            log = (folder / "error.log").read_text(errors="replace")
            raise NginxDidNotStart(f"nginx exited with {process.returncode}: {errors}{log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # polling a port: there is no event to await
    raise NginxDidNotStart(f"nginx did not listen on {port} within {STARTUP_DEADLINE_SECONDS} s")
