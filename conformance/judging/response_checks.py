"""Checks that hold for every response the suite sees, whatever test sent the request.

The run calls `check_every_response` on each exchange as the client records it, so a rule such
as "every response carries the rate-limit headers" is checked on 200s, 400s, 401s and 429s
alike, and a failure lands on the test that provoked the response.
"""

from __future__ import annotations

import email.utils
import re
from typing import Any, Protocol

from conformance.httpclient.client import Exchange
from conformance.httpclient.limit_headers import (
    INTEGER,
    RATE_LIMIT_HEADERS,
    header_problems,
    rate_limit_values,
)
from conformance.judging.checks import expect

MINUTE, DAY = 60, 86_400
# Date has one-second resolution and Reset is rounded to whole seconds: one second either way.
CLOCK_TOLERANCE = 1.0
# Servers cache their Date (uvicorn refreshes it about once a second, later under load): a stale
# Date only makes Reset look further ahead, so the window's far end gets a few seconds more.
STALE_DATE_TOLERANCE = 5.0
# How far the server's clock and ours may differ where its Date cannot be read, and how much
# later than its Date a response may have been made (a Date cached on a busy server: 11 s seen
# beside a second test run on two cores).
CLOCKS_DIFFER = 30.0
_BEARER_CHALLENGE = re.compile(r"(^|,)\s*bearer(\s|,|$)", re.IGNORECASE)
# The statuses that say a credential was refused: 401, and the 403 some servers send instead.
REFUSED_CREDENTIAL = (401, 403)
_QUOTED_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class RunFacts(Protocol):
    """What the checks read of the run (conformance.settings.Settings has it, and is not
    imported here: the wings do not import the run's shell): the plan and its figures, the base
    address, and the key labels of the run."""

    plan: str
    base_url: str

    @property
    def plan_limits(self) -> tuple[int | None, int | None]: ...

    @property
    def keys(self) -> dict[str, str]: ...


def check_every_response(exchange: Exchange, settings: RunFacts) -> None:
    if exchange.status == 101:
        # An upgrade offer taken (the h2c create): the answer came in the other protocol, which
        # the checker does not read (RFC 9110 section 15.2.2). Other 1xx never get here.
        return
    expect(
        "GEN-NO-SERVER-ERROR",
        exchange.status < 500,
        f"{exchange.method} {exchange.url} must not be answered with a 5xx, got {exchange.status}",
        exchange,
    )
    check_rate_limit_headers(exchange, settings)
    if exchange.status in (400, 401):
        check_error_body(exchange)
    if exchange.status == 401:
        check_www_authenticate(exchange)
    if exchange.status == 429:
        check_retry_after(exchange)
        expect(
            "ERR-429-BODY",
            error_object_problem(exchange) is None,
            f"a 429 should carry an Error object: {error_object_problem(exchange)}",
            exchange,
        )


def check_rate_limit_headers(exchange: Exchange, settings: RunFacts) -> None:
    missing = [name for name in RATE_LIMIT_HEADERS if exchange.header(name) is None]
    if not expect(
        "LIM-HEADERS-PRESENT",
        not missing,
        f"every response must carry the rate-limit headers; a {exchange.status} lacks "
        + ", ".join(missing),
        exchange,
    ):
        return
    problems = header_problems(exchange)
    if not expect("LIM-HEADERS-VALID", not problems, "; ".join(problems), exchange):
        return
    values = rate_limit_values(exchange)
    assert values is not None  # no problems: every header parsed
    reset_text = exchange.header("X-RateLimit-Reset") or ""
    expect(
        "LIM-RESET-WHOLE-SECONDS",
        INTEGER.match(reset_text),
        f"X-RateLimit-Reset should be a Unix time in whole seconds, got {reset_text!r}",
        exchange,
    )
    check_limit_matches_plan(exchange, int(values["X-RateLimit-Limit"]), settings)
    check_reset_time(exchange, values, settings)


def check_limit_matches_plan(exchange: Exchange, limit: int, settings: RunFacts) -> None:
    if not authenticated_as_key(exchange, settings):
        return
    if None in settings.plan_limits:
        return  # an enterprise plan whose figures were not given
    figures = list(settings.plan_limits)
    expect(
        "LIM-LIMIT-PLAN",
        limit in figures,
        f"X-RateLimit-Limit must be the {settings.plan} plan's per-minute or per-day figure "
        f"({' or '.join(map(str, figures))}); got {limit}",
        exchange,
    )


def credential_refused(exchange: Exchange) -> bool:
    """The server did not take the request for the key's (401, or a 403 where 401 is due): it
    counted it against someone else, under limits of its own."""
    return exchange.status in REFUSED_CREDENTIAL


def authenticated_as_key(exchange: Exchange, settings: RunFacts) -> bool:
    """Was this response made for one of the run's keys, as the server knows it? A credential
    the server refused (a 401, or a 403 where 401 is due) or one the suite sent deliberately
    wrong (`Basic <key>`, the bare key, the key in the URL) leaves the caller anonymous to the
    server, limited by rules of its own rather than by the key's plan."""
    if exchange.key_label not in settings.keys or credential_refused(exchange):
        return False
    scheme, _, _ = (exchange.request_header("Authorization") or "").partition(" ")
    return scheme.lower() == "bearer"


def server_time(exchange: Exchange) -> tuple[float, float]:
    """The server's clock for this response (its Date header) and how far to trust it."""
    date = exchange.header("Date")
    if date:
        try:
            return email.utils.parsedate_to_datetime(date).timestamp(), CLOCK_TOLERANCE
        except (TypeError, ValueError):
            pass
    # No usable Date: judge against our clock, allowing for the clocks to differ.
    return received_at(exchange), CLOCKS_DIFFER


def received_at(exchange: Exchange) -> float:
    return exchange.started_at + exchange.elapsed


def latest_server_time(exchange: Exchange) -> float:
    """The latest the server's clock can have read when it made the response, for a window's
    far end: its Date, or our clock when the response reached us where that is later. A Date
    only lags (cached), and the response was made before it reached us; our clock stands in
    for the server's by at most CLOCKS_DIFFER, as where a response has no Date."""
    now, _ = server_time(exchange)
    return max(now, min(received_at(exchange), now + CLOCKS_DIFFER))


def reset_in_the_past(exchange: Exchange, reset: float) -> bool:
    """Whether a Reset lies before the response that gave it was made, beyond the clocks'
    tolerance: a window's start, a local time taken for UTC. It fails LIM-RESET-UNIX-TIME and
    times nothing (the window it belonged to is long gone, by its own word)."""
    now, tolerance = server_time(exchange)
    return reset < now - tolerance


def window_seconds(limit: int, settings: RunFacts) -> int:
    """The longest window the reported limit can belong to: a minute only for the minute figure."""
    per_minute, _ = settings.plan_limits
    return MINUTE if limit == per_minute else DAY


def check_reset_time(exchange: Exchange, values: dict[str, float], settings: RunFacts) -> None:
    reset = values["X-RateLimit-Reset"]
    shown = f"X-RateLimit-Reset {exchange.header('X-RateLimit-Reset')!r}"
    now, tolerance = server_time(exchange)
    latest = latest_server_time(exchange)
    window = window_seconds(int(values["X-RateLimit-Limit"]), settings)
    if reset > now * 100:
        problem = f"{shown} looks like milliseconds, not a Unix time in seconds"
    elif reset_in_the_past(exchange, reset):
        problem = (
            f"{shown} is {now - reset:.0f} s before the response's Date: in the past or a delay"
        )
    elif reset > latest + window + max(tolerance, STALE_DATE_TOLERANCE):
        problem = f"{shown} is {reset - latest:.0f} s ahead, beyond a {window} s window"
    else:
        problem = None
    expect(
        "LIM-RESET-UNIX-TIME",
        problem is None,
        f"X-RateLimit-Reset must be the Unix time (s) the window resets: {problem}",
        exchange,
    )


def error_object_problem(exchange: Exchange) -> str | None:
    """What keeps the body from being an Error object, or None when it is one."""
    try:
        body: Any = exchange.json()
    except ValueError:
        if exchange.too_large:
            return exchange.too_large_text()
        return f"the body is not JSON: {exchange.response_body[:80]!r}"
    if not isinstance(body, dict):
        return f"the body is a JSON {type(body).__name__}, not an object"
    for name, kind in (("code", str), ("message", str), ("status", int)):
        value = body.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"`{name}` must be a {kind.__name__}, got {value!r}"
    return None


def check_error_body(exchange: Exchange) -> None:
    if not expect(
        "ERR-MEDIA-TYPE",
        exchange.media_type() == "application/json",
        f"a {exchange.status} Error response must be application/json, "
        f"got {exchange.header('Content-Type')!r}",
        exchange,
    ) and not is_json(exchange):
        return  # one cause: a body that is not JSON at all is the media type's failure only
    problem = error_object_problem(exchange)
    if not expect(
        "ERR-SCHEMA",
        problem is None,
        f"a {exchange.status} must carry an Error object: {problem}",
        exchange,
    ):
        return
    status = exchange.json()["status"]
    expect(
        "ERR-STATUS-MATCH",
        status == exchange.status,
        f"Error.status must equal the HTTP status {exchange.status}, got {status}",
        exchange,
    )


def is_json(exchange: Exchange) -> bool:
    try:
        exchange.json()
    except ValueError:
        return False
    return True


def check_www_authenticate(exchange: Exchange) -> None:
    # Challenges may come one per field line (RFC 9110 section 11.6.1); a quoted parameter
    # value that happens to say "bearer" is not a challenge.
    challenge = ", ".join(exchange.header_values("WWW-Authenticate"))
    unquoted = _QUOTED_STRING.sub('""', challenge)
    expect(
        "AUTH-WWW-AUTHENTICATE",
        _BEARER_CHALLENGE.search(unquoted) is not None,
        f"a 401 must carry WWW-Authenticate with a Bearer challenge, got {challenge!r}",
        exchange,
    )


def retry_after_seconds(exchange: Exchange) -> float | None:
    """Retry-After as seconds from the response (delay-seconds or HTTP-date), None if unusable."""
    text = (exchange.header("Retry-After") or "").strip()
    if INTEGER.match(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    now, _ = server_time(exchange)
    return max(0.0, when - now)


def check_retry_after(exchange: Exchange) -> None:
    expect(
        "LIM-RETRY-AFTER",
        retry_after_seconds(exchange) is not None,
        "a 429 must carry Retry-After as delay-seconds or an HTTP-date, got "
        f"{exchange.header('Retry-After')!r}",
        exchange,
    )
