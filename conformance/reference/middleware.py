"""The ASGI layer every request passes: who calls, whether the limits let it through, and the
rate-limit headers on whatever the application answers (any path, any status)."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.auth import Caller, KeyRing, identify
from conformance.reference.errors import error_response
from conformance.reference.limiting import Decision, RequestLimits, limits_unavailable
from conformance.reference.outages import OutageLog

logger = logging.getLogger("petstore.reference")

CALLER_SCOPE_KEY = "petstore.caller"

REFUSALS = {
    "rate_limited": (
        429,
        "The request rate limit is exceeded; retry after the Retry-After delay.",
    ),
    "key_banned": (
        429,
        "This API key is temporarily banned for sending requests while rate limited.",
    ),
    "limits_unavailable": (
        503,
        "The rate-limit storage is unavailable, so no request is served; retry later.",
    ),
}


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyRing, limits: RequestLimits) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits
        self.outage = OutageLog("rate-limit storage")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        caller = identify(scope, self.keys)
        scope[CALLER_SCOPE_KEY] = caller
        decision = await self._decide(caller)
        headers = decision.headers()
        if not decision.allowed:
            code = decision.code or "rate_limited"
            status, message = REFUSALS[code]
            await error_response(status, code, message, headers)(scope, receive, send)
            return

        raw_headers = [(name.lower().encode(), value.encode()) for name, value in headers.items()]

        async def send_with_headers(message: Message) -> None:
            # Appended, not merged: no route sets these headers itself (an admitted request
            # has no Retry-After), so there is nothing to replace.
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *raw_headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _decide(self, caller: Caller) -> Decision:
        try:
            decision = await self.limits.admit(caller)
        except Exception as exc:
            if isinstance(exc, self.limits.storage_errors):
                self.outage.failed(f"{type(exc).__name__}: {exc}")
            else:  # a fault of ours: the traceback helps; the caller is still refused
                logger.exception("counting a request failed")
            return limits_unavailable(caller.plan, time.time())
        self.outage.answered()
        return decision
