"""A limit enforced in front of the service: the refusals a proxy's limiter makes.

nginx's `limit_req` answers a burst over its rate with 503 and its own HTML page, without the
service's rate-limit headers or a Retry-After. Such a refusal is one cause: it fails
LIM-429-WHEN-EXCEEDED (a refusal over a limit that is not a 429), and every other failure on that
same response (a 503 where a 200 was due, the missing headers) gives way to it, so that the
requirements it kept from a judgement are "blocked by" it. A request the service answered
itself is judged as usual. Read from the run's exchanges once its tests are over.
"""

from __future__ import annotations

from conformance.checks import CheckResult
from conformance.client import Exchange
from conformance.hints import ServiceKind, front_refusal, refusal_circumstances

CAUSE = "LIM-429-WHEN-EXCEEDED"


def judge(exchanges: list[Exchange], results: list[CheckResult]) -> list[CheckResult]:
    """A failed LIM-429-WHEN-EXCEEDED on each refusal made in front of the service that is not
    a 429, recorded under the test whose request it refused."""
    service = ServiceKind(exchanges)
    refused = [e for e in exchanges if e.status != 429 and front_refusal(e, service)]
    tests = {r.exchange.id: r.test_id for r in results if r.exchange is not None}
    return [
        CheckResult(
            CAUSE,
            False,
            f"a refusal over a limit must be a 429, got {exchange.status} from something in "
            f"front of the service ({'; '.join(service.differences(exchange).values())}), "
            f"{refusal_circumstances(exchange, exchanges)}",
            tests.get(exchange.id, ""),
            exchange,
            observed=True,
            whole_response=True,
        )
        for exchange in refused
    ]
