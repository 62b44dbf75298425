"""GET /pets/{petId}: telling the endpoint's own 404 (no such pet) from a missing route's.

The document says only that the endpoint exists and is deprecated with a sunset date. A 404 is
the endpoint's when it carries the endpoint's Deprecation or Sunset header, or when the
endpoint served a pet earlier in the run; announcing the deprecation is a SHOULD, so a server
that does not must not be failed for it where a served pet already shows the route.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging.checks import expect


def served_a_pet(client: ConformanceClient) -> bool:
    return any(
        exchange.method == "GET"
        and "/pets/" in urlsplit(exchange.url).path
        and 200 <= exchange.status < 300
        for exchange in client.exchanges
    )


def announces_itself(exchange: Exchange) -> bool:
    return exchange.header("Deprecation") is not None or exchange.header("Sunset") is not None


def expect_pet_endpoint_exists(exchange: Exchange, client: ConformanceClient) -> bool:
    """EP-PETS-EXISTS for one answer of GET /pets/{petId}; True when it is the endpoint's own."""
    if not expect(
        "EP-PETS-EXISTS",
        exchange.status not in (405, 501) and exchange.status < 500,
        f"GET /pets/{{petId}} with a valid key must not be answered 405, 501 or 5xx (the "
        f"endpoint exists), got {exchange.status}",
        exchange,
    ):
        return False
    if exchange.status != 404 or announces_itself(exchange):
        return True
    return expect(
        "EP-PETS-EXISTS",
        served_a_pet(client),
        f"a 404 of GET {urlsplit(exchange.url).path} cannot be told from a missing route: it "
        "carries neither Deprecation nor Sunset, and the endpoint served no pet in this run. "
        "The endpoint's own headers on its 404 would show that only the pet is missing",
        exchange,
    )
