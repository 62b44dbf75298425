"""POST /categories refuses what is not a NewCategory sent as JSON (Endpoints; Errors).

Every request here carries the valid key, so the only thing wrong with it is its body. The
plugin already checks the Error object of every 400 (ERR-SCHEMA, ERR-STATUS-MATCH,
ERR-MEDIA-TYPE) and that nothing is answered 5xx; these tests check the status. A request
that a correct server refuses still names its category with `run.unique_name`, and one a
faulty server accepts is remembered, so the report lists whatever the run created.

Requests: 2 missing name + 10 wrong types + 6 malformed bodies + 2 media types + 1 plain text
+ 2 sizes = 23.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.judging.checks import expect
from conformance.suite.payloads import (
    MALFORMED_JSON,
    NON_OBJECT_KINDS,
    WRONG_TYPE_VALUES,
    non_object_body,
)
from conformance.suite.throttling import skip_if_throttled

JSON_HEADERS = {"Content-Type": "application/json"}


def post_raw(client: Any, body: bytes, headers: dict[str, str] | None = None) -> Any:
    return client.post("/categories", content=body, headers=headers or JSON_HEADERS)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="empty-object"),
        pytest.param({"description": "x"}, id="only-description"),
    ],
)
def test_new_category_without_name_is_400(client, run, body):
    exchange = client.post("/categories", json=body)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-MISSING-FIELD-400",
        exchange.status == 400,
        f"POST /categories with body {json.dumps(body)} (no `name`) must be answered 400, "
        f"got {exchange.status}",
        exchange,
    )


@pytest.mark.parametrize("field", ["name", "description"])
@pytest.mark.parametrize("kind", list(WRONG_TYPE_VALUES))
def test_field_of_wrong_type_is_400(client, run, field, kind):
    body: dict[str, Any] = {"name": run.unique_name()}
    body[field] = WRONG_TYPE_VALUES[kind]
    exchange = client.post("/categories", json=body)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-INVALID-VALUE-400",
        exchange.status == 400,
        f"POST /categories whose `{field}` is a {kind} ({json.dumps(body[field])}), not a "
        f"string, must be answered 400, got {exchange.status}",
        exchange,
    )


def test_missing_body_is_400(client, run):
    exchange = post_raw(client, b"")
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-MALFORMED-BODY-400",
        exchange.status == 400,
        "POST /categories with Content-Type application/json and no body must be answered "
        f"400 (the payload is required), got {exchange.status}",
        exchange,
    )


def test_malformed_json_is_400(client, run):
    exchange = post_raw(client, MALFORMED_JSON)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-MALFORMED-BODY-400",
        exchange.status == 400,
        f"POST /categories with the malformed JSON body {MALFORMED_JSON.decode()!r} must be "
        f"answered 400, got {exchange.status}",
        exchange,
    )


@pytest.mark.parametrize("kind", NON_OBJECT_KINDS)
def test_json_that_is_not_an_object_is_400(client, run, kind):
    body = non_object_body(kind, run.unique_name())
    exchange = post_raw(client, body)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-MALFORMED-BODY-400",
        exchange.status == 400,
        f"POST /categories whose JSON body is {'an' if kind == 'array' else 'a'} {kind}, not "
        f"a NewCategory object, must be answered 400, got {exchange.status}",
        exchange,
    )


@pytest.mark.parametrize(
    "content_type", ["text/plain; charset=utf-8", "application/x-www-form-urlencoded"]
)
def test_body_not_sent_as_json_is_refused(client, run, content_type):
    # The document tells the client what to send; it does not tell the server to refuse
    # other media types: parsing a JSON text whatever its label is lenient (a SHOULD).
    body = json.dumps({"name": run.unique_name()}).encode("utf-8")
    exchange = post_raw(client, body, {"Content-Type": content_type})
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-CONTENT-TYPE",
        exchange.status in (400, 415),
        f"POST /categories with a valid NewCategory sent as {content_type} should be refused "
        f"with 400 (or 415), got {exchange.status}",
        exchange,
    )


def test_text_that_is_not_json_is_refused(client, run):
    # However lenient about the label, a body that is not JSON at all is not a NewCategory.
    body = run.unique_name().encode("utf-8")
    exchange = post_raw(client, body, {"Content-Type": "text/plain; charset=utf-8"})
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "VAL-MALFORMED-BODY-400",
        exchange.status in (400, 415),
        f"POST /categories with a plain-text body that is not JSON, sent as text/plain, must "
        f"be refused with 400 (or 415), got {exchange.status}",
        exchange,
    )


def test_oversized_body_is_not_a_server_error(client, run):
    # The document publishes no payload limit: refusing (any 4xx) and accepting are both fine.
    body = {"name": run.unique_name(), "description": "x" * (1024 * 1024)}
    exchange = client.post("/categories", json=body)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "GEN-NO-SERVER-ERROR",
        exchange.status < 500,
        f"POST /categories with a 1 MiB body must be accepted or refused with a 4xx, "
        f"never a 5xx, got {exchange.status}",
        exchange,
    )


def test_long_description_is_accepted_or_refused(client, run):
    # 2,000 characters: a server may publish a smaller limit of its own (400), or store it.
    description = ("Long description, " * 112)[:2000]
    body = {"name": run.unique_name(), "description": description}
    exchange = client.post("/categories", json=body)
    skip_if_throttled(exchange)
    run.remember_created(exchange)
    expect(
        "GEN-NO-SERVER-ERROR",
        exchange.status < 500,
        f"POST /categories with a 2,000-character description must not be answered 5xx, "
        f"got {exchange.status}",
        exchange,
    )
    expect(
        "GEN-DOCUMENTED-STATUS",
        exchange.status in (201, 400, 413),
        "POST /categories with a 2,000-character description must be answered 201 (stored) "
        f"or 400 / 413 (over the server's own limit), got {exchange.status}",
        exchange,
    )
    if exchange.status == 201:
        try:
            created = exchange.json()
        except ValueError:
            created = None
        echoed = created.get("description") if isinstance(created, dict) else None
        expect(
            "CAT-ECHO",
            echoed == description,
            "a stored 2,000-character description must be echoed exactly, got "
            + (f"{len(echoed)} characters" if isinstance(echoed, str) else repr(echoed)),
            exchange,
        )
