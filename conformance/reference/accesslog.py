"""One line per request on stderr: client, method, path, status, caller, duration.

Never the key (the caller is a short prefix of its SHA-256), never the Authorization header,
never the query string (a key may be pasted there).

The line is written straight to stderr (line-buffered: one write per request), not through
`logging`: making a LogRecord and passing it through handler and formatter was a quarter of
the reference's own time per request.
"""

from __future__ import annotations

import contextlib
import sys
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.middleware import CALLER_SCOPE_KEY

PREFIX = "petstore-reference INFO: "


def _printable(text: str, limit: int = 200) -> str:
    if text.isprintable() and " " not in text and len(text) <= limit:
        return text
    cleaned = "".join(ch if ch.isprintable() and ch != " " else f"%{ord(ch):02X}" for ch in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            caller = scope.get(CALLER_SCOPE_KEY)
            client = scope.get("client")
            raw_path = scope.get("raw_path")
            path = raw_path.decode("latin-1") if raw_path else scope.get("path", "")
            line = (
                f"{PREFIX}{client[0] if client else '-'} "
                f"{_printable(scope.get('method', '-'), 20)} {_printable(path)} "
                f"{status or '-'} caller={caller.log_label if caller else '-'} "
                f"{(time.perf_counter() - started) * 1000:.1f}ms\n"
            )
            # A server whose stderr is gone (a closed pipe) goes on serving, as with logging.
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(line)
