"""A request that got no response: whether it may be sent once more, and why it failed, in one
line in the user's words with every secret redacted (`TargetUnreachable`)."""

from __future__ import annotations

import re

import httpx

from conformance.httpclient.bounds import ResponseTooSlow, framing_went_past, too_slow_message
from conformance.httpclient.connection import explain_failure, without_credentials
from conformance.httpclient.redaction import Secrets

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class TargetUnreachable(Exception):
    """The target could not be reached (refused, DNS, timeout); the message is one line."""


def may_resend(error: httpx.TransportError, request: httpx.Request) -> bool:
    """The server closed the connection as the request went out, with no response: what a
    keep-alive connection closed for idleness (or by a proxy) does at the wrong moment. The
    request never reached the service; a client resends an idempotent one once, on a fresh
    connection (RFC 9110 section 9.2.2). A server that does it every time stays unreachable."""
    return (
        isinstance(error, httpx.RemoteProtocolError)
        and "without sending a response" in str(error)
        and request.method in IDEMPOTENT_METHODS
    )


def _unreachable_reason(error: httpx.TransportError, timeout: float) -> str:
    if isinstance(error, httpx.TimeoutException):
        return f"no response within {timeout:g} s ({type(error).__name__})"
    if bound := framing_went_past(error):
        return (
            f"a response head (status line and header fields, interim responses' included) "
            f"of more than {bound} bytes (read no further)"
        )
    return failure_reason(error)


def failure_reason(error: Exception) -> str:
    """A connection's failure in one line, in the user's words where we know them."""
    text = " ".join(str(error).split()) or type(error).__name__
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    return explain_failure(text) or text[:1].lower() + text[1:]


class Failures:
    """Makes the `TargetUnreachable` of a run's requests: the URL redacted, the proxy named."""

    def __init__(self, secrets: Secrets, proxy: str | None, response_seconds: float):
        self._secrets = secrets
        self._proxy = proxy
        self._response_seconds = response_seconds

    def unreachable(self, url: str, reason: str) -> TargetUnreachable:
        return TargetUnreachable(f"cannot reach {self._secrets.redact(url)}: {reason}")

    def too_slow(self, request: httpx.Request) -> TargetUnreachable:
        where = self._secrets.redact(str(request.url))
        return TargetUnreachable(
            f"{request.method} {where}: {too_slow_message(self._response_seconds)}"
        )

    def of(self, error: httpx.TransportError, request: httpx.Request) -> Exception:
        if isinstance(error.__cause__, ResponseTooSlow):
            return self.too_slow(request)
        reason = _unreachable_reason(error, self._response_seconds)
        where = self._secrets.redact(str(request.url))
        if self._proxy:
            where += f" through the proxy {without_credentials(self._proxy)}"
        return TargetUnreachable(f"cannot reach {where}: {reason}")
