"""One line per request on stderr: client, method, path, status, caller, duration.

Never the key (the caller is a short prefix of its SHA-256), never the Authorization header,
never the query string (a key may be pasted there).

Lines are gathered and written together, at most FLUSH_SECONDS after the first of them (or as
soon as MAX_LINES wait), and whatever waits when the application stops: a write to stderr per
request was a system call per request, an eighth of the reference's time under load. Before
that, the line went through `logging`: a LogRecord, a handler and a formatter per request were a
quarter of it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import sys
import time

from starlette.types import Scope

from conformance.reference.auth import Caller

PREFIX = "petstore-reference INFO: "
FLUSH_SECONDS = 0.1
"""The longest a line waits before it is written."""
MAX_LINES = 1000
"""Lines written at once without waiting for the timer."""


def _printable(text: str, limit: int = 200) -> str:
    if text.isprintable() and " " not in text and len(text) <= limit:
        return text
    cleaned = "".join(ch if ch.isprintable() and ch != " " else f"%{ord(ch):02X}" for ch in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


def access_line(scope: Scope, caller: Caller | None, status: int, started: float) -> str:
    """The line of one request; `started` is its `time.perf_counter()` on arrival."""
    client = scope.get("client")
    raw_path = scope.get("raw_path")
    path = raw_path.decode("latin-1") if raw_path else scope.get("path", "")
    return (
        f"{PREFIX}{client[0] if client else '-'} "
        f"{_printable(scope.get('method', '-'), 20)} {_printable(path)} "
        f"{status or '-'} caller={caller.log_label if caller else '-'} "
        f"{(time.perf_counter() - started) * 1000:.1f}ms\n"
    )


class AccessLog:
    """The lines not yet written to stderr, and the timer that writes them."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        atexit.register(self.flush)  # lines of requests cut off when the process stops

    def add(self, line: str) -> None:
        lines = self._lines
        lines.append(line)
        if len(lines) >= MAX_LINES:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._lines:
            return
        text = "".join(self._lines)
        self._lines.clear()
        # A server whose stderr is gone (a closed pipe) goes on serving, as with logging.
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(text)
            sys.stderr.flush()
