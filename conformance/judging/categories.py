"""What a Category is (spec/openapi.yaml's own schema), and what GET /categories must list."""

from __future__ import annotations

from functools import cache
from typing import Any

from conformance import spec
from conformance.httpclient.client import Exchange
from conformance.judging.checks import expect

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@cache
def _category_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(spec.component_schema("Category"))


def category_problems(value: Any) -> list[str]:
    """What keeps `value` from being a Category of spec/openapi.yaml (CAT-SCHEMA); [] if it is.

    JSON Schema leaves `format: int64` unchecked and lets 1.0 pass as an integer: both are
    checked here, as the service's ids are int64 integers.
    """
    if _plainly_a_category(value):
        return []
    problems = [
        f"{'/'.join(map(str, error.absolute_path)) or 'the body'}: {error.message}"
        for error in _category_validator().iter_errors(value)
    ]
    if isinstance(value, dict) and "id" in value and not problems:
        identifier = value["id"]
        if isinstance(identifier, bool) or not isinstance(identifier, int):
            problems.append(f"id: {identifier!r} is not an integer")
        elif not INT64_MIN <= identifier <= INT64_MAX:
            problems.append(f"id: {identifier} is outside int64")
    return problems


def _plainly_a_category(value: Any) -> bool:
    """The schema's own test for the usual item, without the validator's cost per item (a
    listing of 146,000 categories took 5 s of it): an object with an int64 `id`, a string
    `name` and, where present, a string `description`. Anything else goes to the validator,
    which says what is wrong."""
    if type(value) is not dict:
        return False
    identifier, description = value.get("id"), value.get("description", "")
    return (
        type(identifier) is int
        and INT64_MIN <= identifier <= INT64_MAX
        and type(value.get("name")) is str
        and type(description) is str
    )


def created_category(exchange: Exchange) -> tuple[Any, str | None]:
    """The body of a 201 of POST /categories (None where it is not JSON), and what keeps it
    from being the created Category (CAT-SCHEMA), None where it is one."""
    try:
        category = exchange.json()
    except ValueError:
        category = None
    problems = category_problems(category)
    if not problems:
        return category, None
    return category, "the 201 of POST /categories must carry a Category: " + "; ".join(problems)


def _not_json(exchange: Exchange) -> str:
    return exchange.too_large_text() if exchange.too_large else "a body that is not JSON"


def check_json_media_type(exchange: Exchange, what: str) -> None:
    """CAT-JSON-MEDIA-TYPE for a 200 or 201 of `what` (`GET /categories`)."""
    expect(
        "CAT-JSON-MEDIA-TYPE",
        exchange.media_type() == "application/json",
        f"the {exchange.status} of {what} should be application/json, "
        f"got {exchange.header('Content-Type')!r}",
        exchange,
    )


_last_listing: tuple[Exchange | None, Any, list[str]] = (None, None, [])
"""The listing read last, and what was wrong with its items: the check made on every response
reads a listing, and the test that fetched it reads it again at once (a listing of 4 MB takes a
second to parse and check). One only, so that no more is held; one tuple, read and written
whole, as the spare key's exhaustion reads listings on a thread of its own."""


def listed_categories(exchange: Exchange) -> list[Any] | None:
    """The items of a 200 of GET /categories: a JSON array (CAT-LIST-200) of Categories
    (CAT-SCHEMA). None when the body is not an array."""
    global _last_listing
    last, listed, invalid = _last_listing
    if last is not exchange:
        _last_listing = (None, None, [])  # let the last one go before reading this one
        listed, invalid = _read_listing(exchange)
        _last_listing = (exchange, listed, invalid)
    if not expect(
        "CAT-LIST-200",
        isinstance(listed, list),
        "GET /categories must answer a JSON array of Category objects, got "
        + (_not_json(exchange) if listed is None else type(listed).__name__),
        exchange,
    ):
        return None
    expect(
        "CAT-SCHEMA",
        not invalid,
        f"every item of GET /categories must be a Category; {len(invalid)} are not: "
        + " | ".join(invalid[:5]),
        exchange,
    )
    return listed


def _read_listing(exchange: Exchange) -> tuple[Any, list[str]]:
    """The body as JSON (None where it is not), and what keeps its items from being
    Categories, each with its index."""
    try:
        listed = exchange.json()
    except ValueError:
        return None, []
    if not isinstance(listed, list):
        return listed, []
    invalid = [
        f"item {index}: {'; '.join(problems)}"
        for index, item in enumerate(listed)
        if (problems := category_problems(item))
    ]
    return listed, invalid
