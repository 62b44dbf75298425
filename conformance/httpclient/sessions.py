"""The HTTP sessions requests go out on: the client's pooled one and a burst's async ones, made
alike (no cookie kept, no redirect followed, nothing read from the environment)."""

from __future__ import annotations

import http.cookiejar
import ssl

import httpx

from conformance.httpclient.bounds import bound_transport

POOL_LIMITS = httpx.Limits(keepalive_expiry=1.0)
"""A connection idle for a second is not used again: servers close idle keep-alive connections
after 2 s (gunicorn) or 5 s (uvicorn, Node), and one closed as a request goes out on it fails it
(a GET is resent once; with two such stale connections in the pool the run had no verdict)."""


def no_cookies() -> http.cookiejar.CookieJar:
    """A jar that keeps nothing: the interface is bearer-only, and a cookie sent back would let
    a target tell the checker's requests from others' (and answer them differently)."""
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def session(
    transport: httpx.BaseTransport | None,
    ssl_context: ssl.SSLContext,
    proxy: str | None,
    timeout: float,
    headers: dict[str, str],
) -> httpx.Client:
    """The client's session; its own bounded transport where none is given (tests give one)."""
    if transport is None:
        # The proxy goes to this transport alone: one httpx made for it would not be bound.
        transport = bound_transport(
            httpx.HTTPTransport(
                verify=ssl_context, proxy=proxy, trust_env=False, limits=POOL_LIMITS
            )
        )
    return httpx.Client(transport=transport, **alike(timeout, headers))


def async_session(
    transport: httpx.AsyncBaseTransport | None,
    ssl_context: ssl.SSLContext,
    proxy: str | None,
    timeout: float,
    headers: dict[str, str],
    connections: int,
) -> httpx.AsyncClient:
    """A burst's session, with as many connections as the burst sends at once; its own
    bounded transport where none is given (tests give one)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    if transport is None:
        transport = bound_transport(
            httpx.AsyncHTTPTransport(
                verify=ssl_context, proxy=proxy, trust_env=False, limits=limits
            )
        )
    return httpx.AsyncClient(transport=transport, **alike(timeout, headers))


def alike(timeout: float, headers: dict[str, str]) -> dict:
    """What every session shares: nothing read from the environment, no redirect followed (a
    redirect is something to check, not to follow silently), no cookie kept."""
    return {
        "trust_env": False,
        "timeout": timeout,
        "follow_redirects": False,
        "headers": headers,
        "cookies": no_cookies(),
    }
