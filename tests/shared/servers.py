"""Start `petstore-reference` as a real subprocess, read the URL it announces, stop it."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ANNOUNCEMENT = re.compile(r"^petstore-reference listening on (http://\S+/v1)$")
ANY_ANNOUNCEMENT = re.compile(r"^[\w-]+ listening on (http://\S+/v1)$")
STARTUP_TIMEOUT = 20.0


class ReferenceDidNotStart(RuntimeError):
    pass


def reference_command(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "conformance.reference.cli", *args]


def reference_args(
    keys: Sequence[str],
    *,
    minute_seconds: int = 60,
    database: str | os.PathLike[str] | None = None,
    rate_limit_storage: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    args = ["--host", "127.0.0.1", "--port", "0", "--minute-seconds", str(minute_seconds)]
    for key in keys:
        args += ["--key", key]
    if database is not None:
        args += ["--database", os.fspath(database)]
    if rate_limit_storage is not None:
        args += ["--rate-limit-storage", rate_limit_storage]
    return args + list(extra)


@dataclass
class ReferenceProcess:
    base_url: str
    process: subprocess.Popen[str]
    stderr_path: Path
    stopped: bool = field(default=False)

    def stop(self, timeout: float = 10) -> int:
        if not self.stopped:
            self.stopped = True
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout)
            if self.process.stdout:
                self.process.stdout.close()
        return self.process.returncode

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def start_reference(args: Sequence[str], env: dict[str, str] | None = None) -> ReferenceProcess:
    """Run `petstore-reference ARGS` (with `--port 0`) and wait for its announcement line."""
    return start_server(reference_command(args), ANNOUNCEMENT, env)


def start_server(
    command: Sequence[str],
    announcement: re.Pattern[str] = ANY_ANNOUNCEMENT,
    env: dict[str, str] | None = None,
) -> ReferenceProcess:
    """Run a server that announces `NAME listening on URL` first on stdout; wait for it."""
    stderr_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the process
        prefix="petstore-reference-", suffix=".log", delete=False
    )
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    stderr_file.close()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    assert process.stdout is not None
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([process.stdout], [], [], max(left, 0))
        if not ready:
            process.kill()
            process.wait()
            raise ReferenceDidNotStart(f"no announcement within {STARTUP_TIMEOUT} s")
        line = process.stdout.readline()
        if not line:
            process.wait()
            log = Path(stderr_file.name).read_text(errors="replace")
            raise ReferenceDidNotStart(f"exited with {process.returncode}: {log[-2000:]}")
        match = announcement.match(line.rstrip("\n"))
        if match:
            return ReferenceProcess(match.group(1), process, Path(stderr_file.name))
        raise ReferenceDidNotStart(f"unexpected first line on stdout: {line!r}")


def run_reference_cli(
    args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    """Run the command for options that must make it exit (usage errors)."""
    return subprocess.run(
        reference_command(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


# --- Assertions the reference's tests share ---------------------------------------------------

RATE_LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


def assert_error(response, status: int) -> dict:  # noqa: ANN001 - an httpx.Response
    """The response has `status` and an Error body as application/json."""
    assert response.status_code == status, (response.status_code, response.text[:300])
    media_type = response.headers.get("content-type", "").split(";")[0].strip()
    assert media_type == "application/json", response.headers.get("content-type")
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert body.get("status") == status, body
    return body


def rate_limit_headers(response) -> tuple[int, int, int]:  # noqa: ANN001 - an httpx.Response
    """(limit, remaining, reset) as integers; fails when one is missing or not an integer."""
    values = []
    for name in RATE_LIMIT_HEADERS:
        raw = response.headers.get(name)
        assert raw is not None, f"{name} missing on a {response.status_code}"
        assert raw.isdigit(), f"{name}: {raw!r} is not a non-negative integer"
        values.append(int(raw))
    limit, remaining, reset = values
    assert remaining <= limit, values
    return limit, remaining, reset


@contextmanager
def reference_client(keys: Sequence[str]) -> Iterator[httpx.Client]:
    """An httpx client on a freshly started reference (60-second minute), stopped afterwards."""
    server = start_reference(reference_args(keys))
    try:
        with httpx.Client(base_url=server.base_url, timeout=10) as http:
            yield http
    finally:
        server.stop()
