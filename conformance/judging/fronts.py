"""A limit enforced in front of the service: the refusals a proxy's limiter makes.

nginx's `limit_req` answers a burst over its rate with 503 and its own HTML page; HAProxy's
`deny` with 403 and its page; either may be set to answer 429, even with a JSON body, but
without the service's rate-limit headers or its `Server`. Such a refusal is one cause, whatever
its status: not a 429, it fails LIM-429-WHEN-EXCEEDED (a refusal over a limit must be a 429); a
429 without the service's headers, LIM-HEADERS-PRESENT. Every other failure on that same
response (a 403 where a 400 was due) gives way to it, so that the requirements it kept from a
judgement are "blocked by" it. A request the service answered itself is judged as usual. Read
from the run's exchanges once its tests are over.
"""

from __future__ import annotations

from conformance.httpclient.client import Exchange
from conformance.httpclient.service_kind import RATE_LIMIT_HEADER, ServiceKind, front_refusal
from conformance.judging.checks import CheckResult
from conformance.judging.hints import refusal_circumstances

CAUSE = "LIM-429-WHEN-EXCEEDED"
BARE_429 = "LIM-HEADERS-PRESENT"


def refusal_failures(exchanges: list[Exchange], results: list[CheckResult]) -> list[CheckResult]:
    """A failure on each refusal made in front of the service, recorded under the test whose
    request it refused: LIM-429-WHEN-EXCEEDED where it is not a 429, LIM-HEADERS-PRESENT where
    it is one without the rate-limit headers."""
    service = ServiceKind(exchanges)
    tests = {r.exchange.id: r.test_id for r in results if r.exchange is not None}
    found = []
    for exchange in exchanges:
        if not front_refusal(exchange, service):
            continue
        cause = broken_by(exchange)
        if cause is None:
            continue
        what = (
            f"a refusal over a limit must be a 429, got {exchange.status}"
            if cause == CAUSE
            else "a 429 must carry the rate-limit headers, this one has none"
        )
        found.append(
            CheckResult(
                cause,
                False,
                f"{what}, from something in front of the service "
                f"({'; '.join(service.differences(exchange).values())}), "
                f"{refusal_circumstances(exchange, exchanges)}",
                tests.get(exchange.id, ""),
                exchange,
                every_response=True,
                whole_response=True,
            )
        )
    return found


def broken_by(refusal: Exchange) -> str | None:
    """The one requirement a front's refusal breaks, if any: its status, else its headers."""
    if refusal.status != 429:
        return CAUSE
    return BARE_429 if refusal.header(RATE_LIMIT_HEADER) is None else None
