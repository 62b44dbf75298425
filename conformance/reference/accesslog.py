"""One line per request on stderr: client, method, path, status, caller, duration.

Never the key (the caller is a short prefix of its SHA-256), never the Authorization header,
never the query string (a key may be pasted there).
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.middleware import CALLER_SCOPE_KEY

access_logger = logging.getLogger("petstore.reference.access")


def _printable(text: str, limit: int = 200) -> str:
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
            access_logger.info(
                "%s %s %s %s caller=%s %.1fms",
                client[0] if client else "-",
                _printable(scope.get("method", "-"), 20),
                _printable(path),
                status or "-",
                caller.log_label if caller else "-",
                (time.perf_counter() - started) * 1000,
            )
