"""The ASGI layer every request passes: who calls, whether the limits let it through, and the
rate-limit headers on whatever the application answers (any path, any status)."""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.auth import KeyRing, identify
from conformance.reference.errors import error_response
from conformance.reference.limiting import RequestLimits

logger = logging.getLogger("petstore.reference")

CALLER_SCOPE_KEY = "petstore.caller"


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyRing, limits: RequestLimits) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        caller = identify(scope, self.keys)
        scope[CALLER_SCOPE_KEY] = caller
        try:
            decision = await self.limits.admit(caller)
        except Exception:
            logger.exception("rate-limit storage failed")
            response = error_response(
                503, "limits_unavailable", "The rate-limit storage is unavailable; retry later."
            )
            await response(scope, receive, send)
            return
        headers = decision.headers()
        if not decision.allowed:
            message = (
                "This API key is temporarily banned for sending requests while rate limited."
                if decision.code == "key_banned"
                else "The request rate limit is exceeded; retry after the Retry-After delay."
            )
            response = error_response(429, decision.code or "rate_limited", message, headers)
            await response(scope, receive, send)
            return

        raw_headers = [(name.lower().encode(), value.encode()) for name, value in headers.items()]

        async def send_with_headers(message: Message) -> None:
            # Appended, not merged: no route sets these headers itself (an admitted request
            # has no Retry-After), so there is nothing to replace.
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *raw_headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)
