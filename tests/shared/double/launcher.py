"""Start the double as a real subprocess, for tests: `start_double(keys, faults, variants)`."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT = 60.0  # seconds to listen (a server took over 20 beside a second test run)


class DoubleFailedToStart(RuntimeError):
    pass


def key_specs(keys: Mapping[str, str] | Iterable[str]) -> list[str]:
    """{"KEY": "free"} or ["KEY:free", "KEY:enterprise:100:1000"] to --key arguments."""
    if isinstance(keys, Mapping):
        return [f"{key}:{plan}" for key, plan in keys.items()]
    return list(keys)


def start_double(
    keys: Mapping[str, str] | Iterable[str],
    faults: Iterable[str] = (),
    variants: Iterable[str] = (),
    minute_seconds: float = 2.0,
    url_log: Path | None = None,
) -> tuple[str, Callable[[], None]]:
    """Start `python -m tests.shared.double` on a free port; return (base URL ending in /v1,
    stop)."""
    command = [sys.executable, "-m", "tests.shared.double", "--port", "0"]
    command += [f"--minute-seconds={minute_seconds}"]
    if url_log is not None:
        command += ["--url-log", str(url_log)]
    for spec in key_specs(keys):
        command += ["--key", spec]
    for name in faults:
        command += ["--fault", name]
    for name in variants:
        command += ["--variant", name]
    return start_listening(command)


def start_listening(command: list[str]) -> tuple[str, Callable[[], None]]:
    """Start a server that prints `listening on URL` once it accepts connections; return
    (URL, stop)."""
    process = subprocess.Popen(
        command,
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first_line: list[str] = []
    reader = threading.Thread(
        target=lambda: first_line.append(process.stdout.readline()), daemon=True
    )
    reader.start()
    reader.join(STARTUP_TIMEOUT)
    line = first_line[0].strip() if first_line else ""
    prefix = "listening on "
    if not line.startswith(prefix):
        process.kill()
        _, errors = process.communicate(timeout=5)
        raise DoubleFailedToStart(
            f"{command[2]} did not start (exit {process.returncode}): {line or errors.strip()}"
        )
    # Keep draining stderr so that a chatty server never blocks on a full pipe.
    threading.Thread(target=process.stderr.read, daemon=True).start()

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        process.stdout.close()

    return line[len(prefix) :], stop


@contextmanager
def running_double(
    keys: Mapping[str, str] | Iterable[str],
    faults: Iterable[str] = (),
    variants: Iterable[str] = (),
    minute_seconds: float = 2.0,
    url_log: Path | None = None,
) -> Iterator[str]:
    """`with running_double({"k": "free"}) as base_url: ...`"""
    base_url, stop = start_double(keys, faults, variants, minute_seconds, url_log)
    try:
        yield base_url
    finally:
        stop()
