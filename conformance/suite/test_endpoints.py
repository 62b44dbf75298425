"""The other endpoints, the deprecation of GET /pets/{petId}, and the version prefix.

The document shows only that GET /pets/{petId} and GET /store/orders exist, that the former is
deprecated with a sunset date, and that the base address ends in /v1; the shapes of pets and
orders are not shown, so nothing here looks at their bodies. A pet with id 1 need not exist:
a 404 is fine as long as it comes from the endpoint (conformance/pets.py). The document names
no header for the deprecation: `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) are good
practice, SHOULD requirements.

Requests: 1 (pet 1) + 1 (unknown pet) + 1 (orders) = 3; the version check sends none.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import pytest

from conformance.judging.checks import expect
from conformance.judging.pets import expect_pet_endpoint_exists
from conformance.suite.throttling import skip_if_throttled

UNKNOWN_PET_ID = "9223372036854775807"  # the largest int64: a valid id no demo store uses
STRUCTURED_DATE = re.compile(r"^@-?\d+$")  # RFC 9745 / RFC 9651 sf-date
IMF_FIXDATE = re.compile(  # RFC 9110 section 5.6.7, the form senders must generate
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$"
)


def deprecation_time(value: str | None) -> int | None:
    if value is None or not STRUCTURED_DATE.match(value.strip()):
        return None
    return int(value.strip()[1:])


def http_date(value: str | None) -> datetime | None:
    """An IMF-fixdate as a UTC datetime, or None when `value` is not one."""
    if value is None or not IMF_FIXDATE.match(value.strip()):
        return None
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def check_deprecation_headers(exchange: Any) -> None:
    """DEP-*: the response announces the deprecation (RFC 9745) and the sunset (RFC 8594)."""
    where = f"the {exchange.status} of GET {urlsplit(exchange.url).path}"
    deprecation = exchange.header("Deprecation")
    deprecated_at = deprecation_time(deprecation)
    expect(
        "DEP-DEPRECATION-HEADER",
        deprecated_at is not None,
        f"{where} should carry `Deprecation: @<unix time>` (RFC 9745), got "
        + ("no Deprecation header" if deprecation is None else repr(deprecation)),
        exchange,
    )
    sunset = exchange.header("Sunset")
    sunset_at = http_date(sunset)
    expect(
        "DEP-SUNSET-HEADER",
        sunset_at is not None,
        f"{where} should carry `Sunset: <HTTP-date>` (RFC 8594), e.g. "
        "'Sat, 01 Jan 2028 00:00:00 GMT', got "
        + ("no Sunset header" if sunset is None else repr(sunset)),
        exchange,
    )
    if sunset_at is None:
        return
    server_now = http_date(exchange.header("Date"))
    now = server_now.timestamp() if server_now is not None else time.time()
    expect(
        "DEP-SUNSET-FUTURE",
        sunset_at.timestamp() > now,
        f"the sunset date {sunset!r} of a still-served endpoint should lie in the future "
        f"(the response's Date is {exchange.header('Date')!r})",
        exchange,
    )
    if deprecated_at is not None:
        expect(
            "DEP-SUNSET-FUTURE",
            sunset_at.timestamp() >= deprecated_at,
            f"the sunset date {sunset!r} should not come before the deprecation date "
            f"{deprecation!r} ({datetime.fromtimestamp(deprecated_at, UTC):%Y-%m-%d %H:%M:%S} UTC)",
            exchange,
        )


def check_key_accepted(exchange: Any) -> None:
    # A 401 to the run's key is AUTH-BEARER-ACCEPTED's, not the endpoint's (one cause).
    expect(
        "AUTH-BEARER-ACCEPTED",
        exchange.status != 401,
        f"GET {urlsplit(exchange.url).path} with `Authorization: Bearer <API_KEY>` must be "
        "served, got 401",
        exchange,
    )


def check_pet(client: Any, exchange: Any) -> None:
    skip_if_throttled(exchange)
    check_key_accepted(exchange)
    own = expect_pet_endpoint_exists(exchange, client)
    if own and (exchange.status < 300 or exchange.status == 404):
        check_deprecation_headers(exchange)


@pytest.mark.smoke
def test_pet_endpoint_exists_and_announces_its_sunset(client):
    check_pet(client, client.get("/pets/1"))


def test_unknown_pet_still_announces_the_sunset(client):
    check_pet(client, client.get(f"/pets/{UNKNOWN_PET_ID}"))


@pytest.mark.smoke
def test_store_orders_endpoint_exists(client):
    exchange = client.get("/store/orders")
    skip_if_throttled(exchange)
    check_key_accepted(exchange)
    expect(
        "EP-ORDERS-EXISTS",
        200 <= exchange.status < 300,
        f"GET /store/orders with a valid key must be answered with a 2xx status, "
        f"got {exchange.status}",
        exchange,
    )


@pytest.mark.smoke
def test_base_address_ends_in_v1(settings):
    path = urlsplit(settings.base_url).path.rstrip("/")
    expect(
        "VER-V1-PREFIX",
        path.rsplit("/", 1)[-1] == "v1",
        f"the base address must end in the path segment /v1, got path {path or '/'!r}",
    )
