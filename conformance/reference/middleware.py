"""The ASGI layer every request passes: who calls, whether the limits let it through, the
rate-limit headers on whatever the application answers (any path, any status), the Error answer
to whatever a request raises, and the access log's line."""

from __future__ import annotations

import logging
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.reference.accesslog import AccessLog, access_line
from conformance.reference.auth import Caller, KeyRing, identify
from conformance.reference.errors import ApiError, answer_to, error_response
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
    """Identify, count, answer (or refuse) with the rate-limit headers, and log the request: one
    layer, so that each response message passes one wrapper, not one per concern. `app` is
    Starlette's router (app.py)."""

    def __init__(
        self, app: ASGIApp, keys: KeyRing, limits: RequestLimits, log: AccessLog | None = None
    ) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits
        self.log = log
        self.outage = OutageLog("rate-limit storage")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        caller = identify(scope, self.keys)
        scope[CALLER_SCOPE_KEY] = caller
        scope["app"] = self  # Starlette's router raises its 404 and 405 for an app to answer
        status = 0
        try:
            decision = await self._decide(caller)
            raw_headers = decision.raw_headers()

            async def send_with_headers(message: Message) -> None:
                nonlocal status
                # Appended, not merged: no route sets these headers itself (an admitted
                # request has no Retry-After), so there is nothing to replace.
                if message["type"] == "http.response.start":
                    status = message["status"]
                    message["headers"] = [*message.get("headers", ()), *raw_headers]
                await send(message)

            if decision.allowed:
                try:
                    await self.app(scope, receive, send_with_headers)
                except Exception as exc:
                    if status:  # answered in part: uvicorn closes the connection
                        raise
                    if not isinstance(exc, ApiError | HTTPException):
                        logger.exception("answering a request failed: 500")
                    answer = answer_to(exc, scope["method"])
                    await answer(scope, receive, send_with_headers)
            else:
                code = decision.code or "rate_limited"
                refused, message = REFUSALS[code]
                await error_response(refused, code, message)(scope, receive, send_with_headers)
        finally:
            if self.log is not None:
                self.log.add(access_line(scope, caller, status, started))

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
