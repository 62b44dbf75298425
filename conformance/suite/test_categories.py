"""Creating and listing categories (Endpoints: GET and POST /categories; Resources: Category).

Names of 1 to 32 printable characters in any script must be accepted and come back exactly as
sent, with an int64 id no other category has, and then appear in GET /categories. Every name
starts with the run's prefix (`run.unique_name`) so that operators can find what the run made.
Extra fields in responses are allowed; `description` may be missing from a response only when
it was not sent.

A create that also offers a cleartext HTTP/2 upgrade, as Java's HttpClient and `curl --http2`
send it, must be served like any other (RFC 9110 section 7.8 lets a server ignore the offer).

Requests: 10 creates + 1 list = 11 (the list test, and the offer's, create one more only when
run on its own).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.generation import utf16_length
from conformance.judging.categories import (
    check_json_media_type,
    created_category,
    listed_categories,
)
from conformance.judging.checks import cannot_check, expect, require
from conformance.suite.payloads import LEGITIMATE_NAMES, NAME_LIMIT
from conformance.suite.throttling import skip_if_throttled

EXACT_LIMIT_CASE = f"exactly-{NAME_LIMIT}-characters"
CASES = [*LEGITIMATE_NAMES, EXACT_LIMIT_CASE]
# What Java's HttpClient (its default version, HTTP/2, on an http:// address), Spring's
# RestClient and `curl --http2` add to an ordinary request: an offer to go on in HTTP/2.
# The settings are curl's (100 streams, a 1 GiB window, no push).
H2C_OFFER = {
    "Connection": "Upgrade, HTTP2-Settings",
    "Upgrade": "h2c",
    "HTTP2-Settings": "AAMAAABkAAQCAAAAAAIAAAAA",
}


def new_category(run: Any, case: str) -> dict[str, str]:
    """The NewCategory of `case`: the run's unique name and the case's text, at most 32 long."""
    if case == EXACT_LIMIT_CASE:
        base = run.unique_name() + "-"
        name = base + "x" * (NAME_LIMIT - len(base))
        body = {"name": name}
    else:
        text, description = LEGITIMATE_NAMES[case]
        name = f"{run.unique_name()} {text}"
        body = {"name": name}
        if description is not None:
            body["description"] = description
    if max(len(name), utf16_length(name)) > NAME_LIMIT:  # the suite's own mistake
        raise RuntimeError(f"test name {name!r} is longer than {NAME_LIMIT} characters")
    return body


@pytest.fixture(scope="module")
def created() -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(what was sent, what came back) for every category this module created."""
    return []


def create(client: Any, run: Any, body: dict[str, str]) -> tuple[Any, dict[str, Any] | None]:
    """POST one NewCategory and check the answer; returns the exchange and the created Category."""
    exchange = client.post("/categories", json=body)
    skip_if_throttled(exchange)
    shown = f"POST /categories with name {body['name']!r} ({len(body['name'])} characters)"
    # A 400 fails CAT-NAME-RANGE and a 401 AUTH-BEARER-ACCEPTED, each instead of CAT-CREATE-201
    # (the catalogue's yields_to): one cause, one requirement.
    expect(
        "AUTH-BEARER-ACCEPTED",
        exchange.status != 401,
        f"{shown} with the run's API key as a bearer token must be served, got 401",
        exchange,
    )
    expect(
        "CAT-NAME-RANGE",
        exchange.status != 400,
        f"{shown} must be accepted (a name of 1 to {NAME_LIMIT} printable characters), "
        f"got {exchange.status}",
        exchange,
    )
    if not expect(
        "CAT-CREATE-201",
        exchange.status == 201,
        f"{shown} must be answered 201 with the created Category, got {exchange.status}",
        exchange,
    ):
        return exchange, None
    check_json_media_type(exchange, "POST /categories")
    category, problem = created_category(exchange)
    require("CAT-SCHEMA", problem is None, problem or "the created Category", exchange)
    run.remember_category(category)
    return exchange, category


@pytest.mark.parametrize("case", CASES)
def test_legitimate_name_is_created_and_echoed(client, run, created, case):
    body = new_category(run, case)
    exchange, category = create(client, run, body)
    if category is None:
        return
    created.append((body, category))
    expect(
        "CAT-ECHO",
        category["name"] == body["name"],
        f"the created Category must echo the name exactly: sent {body['name']!r}, "
        f"got {category['name']!r}",
        exchange,
    )
    if "description" in body:
        expect(
            "CAT-ECHO",
            category.get("description") == body["description"],
            "the created Category must echo the description exactly: sent "
            f"{body['description']!r}, got {category.get('description', '(absent)')!r}",
            exchange,
        )


OFFERED_CASE = "plain-ascii"


def test_create_offering_an_h2c_upgrade_is_served(client, run, created):
    """The offer is judged against the same create without it: only a create this server
    serves (201) plainly is owed a 201 with the offer; another answer there is the plain
    create's own failure (CAT-CREATE-201, CAT-NAME-RANGE), not the offer's."""
    text = LEGITIMATE_NAMES[OFFERED_CASE][0]
    if not any(sent["name"].endswith(f" {text}") for sent, _ in created):
        # Run on its own (or the plain create was not served): the plain create first.
        body = new_category(run, OFFERED_CASE)
        _, category = create(client, run, body)
        if category is None:
            return  # the plain create failed its own requirement: nothing the offer changed
    body = new_category(run, OFFERED_CASE)
    exchange = client.post("/categories", json=body, headers=H2C_OFFER)
    skip_if_throttled(exchange)
    if exchange.status == 101:
        cannot_check(
            "CAT-CREATE-H2C-OFFER",
            "the target took the h2c upgrade (101 Switching Protocols) and answered the create "
            "in HTTP/2, which this checker does not speak",
        )
        return
    shown = (
        "POST /categories with a valid NewCategory, offering a cleartext HTTP/2 upgrade "
        "(Connection: Upgrade, HTTP2-Settings; Upgrade: h2c) as Java's HttpClient and curl "
        "--http2 do,"
    )
    expect(
        "CAT-CREATE-H2C-OFFER",
        exchange.status == 201,
        f"{shown} must be served as the HTTP/1.1 request it is (a server may ignore the offer, "
        f"RFC 9110 section 7.8), as the same create without the offer was: 201 with the "
        f"created Category; got {exchange.status} {exchange.response_body[:200]!r}",
        exchange,
    )
    run.remember_created(exchange)


def test_created_ids_are_unique(client, run, created):
    if len(created) < 2:
        for case in ("plain-ascii", "cjk")[len(created) :]:
            body = new_category(run, case)
            _, category = create(client, run, body)
            if category is not None:
                created.append((body, category))
    if len(created) < 2:
        pytest.skip("fewer than two categories were created")
    ids = [category["id"] for _, category in created]
    duplicates = sorted({identifier for identifier in ids if ids.count(identifier) > 1})
    expect(
        "CAT-ID-UNIQUE",
        not duplicates,
        f"every created category must get an id of its own; ids given more than once: "
        f"{duplicates} (of {len(ids)} created)",
    )


def test_list_contains_every_created_category(client, run, created):
    if not created:
        body = new_category(run, "plain-ascii")
        _, category = create(client, run, body)
        if category is not None:
            created.append((body, category))
    exchange = client.get("/categories")
    skip_if_throttled(exchange)
    require(
        "CAT-LIST-200",
        exchange.status == 200,
        f"GET /categories with a valid key must be answered 200, got {exchange.status}",
        exchange,
    )
    check_json_media_type(exchange, "GET /categories")
    listed = listed_categories(exchange)
    if listed is None:
        return  # CAT-LIST-200 is recorded as failed; the plugin fails this test for it
    by_id: dict[int, list[dict[str, Any]]] = {}
    for item in listed:
        if isinstance(item, dict) and isinstance(item.get("id"), int):
            by_id.setdefault(item["id"], []).append(item)
    for sent, category in created:
        matches = by_id.get(category["id"], [])
        found = [
            item
            for item in matches
            if item.get("name") == sent["name"]
            and ("description" not in sent or item.get("description") == sent["description"])
        ]
        seen = f"listed as {matches[0]!r}" if matches else "not listed"
        expect(
            "CAT-LIST-COMPLETE",
            found,
            f"GET /categories must list the created category id {category['id']} with name "
            f"{sent['name']!r} and description {sent.get('description', '(not sent)')!r}; "
            f"it is {seen}",
            exchange,
        )
