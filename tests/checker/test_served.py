"""Unit tests of conformance.judging.served: a success of GET or POST /categories is judged
against the document whoever sent it (a probe that reads only the headers too), and only where
the request was the run's key presented as the document says. Exchanges are built by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import count

import pytest

from conformance.httpclient.bounds import MAX_BODY_BYTES
from conformance.httpclient.client import Exchange
from conformance.judging import checks, served
from conformance.settings import Settings

pytestmark = pytest.mark.usefixtures("fresh_ledger")

SETTINGS = Settings(base_url="http://petstore.test/v1", api_key="sk-test-key", plan="free")
LISTING = [{"id": 1, "name": "Dogs"}, {"id": 2, "name": "Cats", "description": "Indoor"}]
NUMBERS = count(1)


def exchange(
    status: int = 200,
    body: object = LISTING,
    *,
    method: str = "GET",
    path: str = "/categories",
    content_type: str = "application/json",
    authorization: str = "Bearer ***",
    key_label: str = "main",
    sent: object = None,
    sent_as: str = "application/json",
) -> Exchange:
    text = body if isinstance(body, str) else json.dumps(body)
    request_headers = {"Authorization": authorization}
    if sent is not None:
        request_headers["Content-Type"] = sent_as
    return Exchange(
        id=next(NUMBERS),
        key_label=key_label,
        method=method,
        url=f"http://petstore.test/v1{path}",
        request_headers=request_headers,
        request_body=None if sent is None else json.dumps(sent),
        status=status,
        response_headers=[("Content-Type", content_type)],
        response_body=text,
        started_at=0.0,
        elapsed=0.01,
        _full_body=text,
    )


def judged(*exchanges: Exchange) -> dict[str, list[bool]]:
    """Each requirement's results once every exchange went through the judgement, in order;
    every one marked as made on every response."""
    with checks.on_every_response():
        for one in exchanges:
            served.check_success(one, SETTINGS)
    results = checks.ledger().results
    assert all(result.every_response for result in results)
    outcome: dict[str, list[bool]] = {}
    for result in results:
        outcome.setdefault(result.requirement_id, []).append(result.passed)
    return outcome


def message(requirement_id: str) -> str:
    return next(r.message for r in checks.ledger().results if r.requirement_id == requirement_id)


def test_a_listing_as_the_document_shows_it_passes():
    assert judged(exchange()) == {
        "GEN-DOCUMENTED-STATUS": [True],
        "CAT-JSON-MEDIA-TYPE": [True],
        "CAT-LIST-200": [True],
        "CAT-SCHEMA": [True],
    }


def test_a_listing_that_is_not_json_fails_the_list_requirement():
    assert judged(exchange(body='[{"id": 1, "name": "Dogs"'))["CAT-LIST-200"] == [False]
    assert "a body that is not JSON" in message("CAT-LIST-200")


def test_a_listing_past_the_body_bound_fails_as_what_it_is():
    bomb = replace(exchange(body=" " * 100), too_large=MAX_BODY_BYTES)
    assert judged(bomb)["CAT-LIST-200"] == [False]
    assert f"a body of more than {MAX_BODY_BYTES} bytes" in message("CAT-LIST-200")


def test_a_listing_of_something_else_than_categories_fails_the_schema():
    outcome = judged(exchange(body=[{"id": "7", "name": "Dogs"}]))
    assert outcome["CAT-LIST-200"] == [True]
    assert outcome["CAT-SCHEMA"] == [False]
    assert "id: '7' is not of type 'integer'" in message("CAT-SCHEMA")


def test_a_success_with_another_status_than_the_documented_one_fails():
    outcome = judged(exchange(status=203))
    assert outcome == {"GEN-DOCUMENTED-STATUS": [False]}
    assert "listCategories answers 200" in message("GEN-DOCUMENTED-STATUS")


def test_a_listing_labelled_otherwise_is_warned_on_its_media_type():
    assert judged(exchange(content_type="text/plain"))["CAT-JSON-MEDIA-TYPE"] == [False]


@pytest.mark.parametrize(
    "not_judged",
    [
        exchange(status=429, body={"code": "x", "message": "x", "status": 429}),
        exchange(status=401, body={"code": "x", "message": "x", "status": 401}),
        exchange(authorization="Basic ***", body="<html>"),
        exchange(key_label="none", body="<html>"),
        exchange(path="/store/orders", body="<html>"),
        exchange(path="/pets/1", body="<html>"),
        exchange(path="/categoriesX", body="<html>"),
    ],
    ids=["refusal", "401", "basic-scheme", "no-key", "orders", "pets", "another-path"],
)
def test_what_is_not_a_served_request_of_a_documented_body_is_left_alone(not_judged):
    """A refusal is not a 200, a 401 has checks of its own, a key sent wrong on purpose is its
    test's, and the shapes of pets and orders are not shown."""
    assert judged(not_judged) == {}


def test_a_created_category_is_judged_where_a_new_category_was_sent():
    good = exchange(201, {"id": 7, "name": "Dogs"}, method="POST", sent={"name": "Dogs"})
    bad = exchange(201, {"id": "7", "name": "Dogs"}, method="POST", sent={"name": "Dogs"})
    assert judged(good, bad)["CAT-SCHEMA"] == [True, False]


@pytest.mark.parametrize(
    ("sent", "sent_as"),
    [
        ({"name": 5}, "application/json"),
        ({"name": "Dogs"}, "text/plain"),
        ("[", "application/json"),
    ],
    ids=["not-a-new-category", "not-sent-as-json", "not-json"],
)
def test_a_creation_from_a_body_sent_wrong_on_purpose_is_its_tests(sent, sent_as):
    created = exchange(201, "not a category", method="POST", sent=sent, sent_as=sent_as)
    if sent == "[":
        created = replace(created, request_body="[")
    assert judged(created) == {}


def test_a_bursts_success_kept_in_part_is_judged_by_its_status_and_media_type_only():
    cut = replace(exchange(body='[{"id": 1, "na'), burst=True, body_cut=True)
    assert judged(cut) == {"GEN-DOCUMENTED-STATUS": [True], "CAT-JSON-MEDIA-TYPE": [True]}


def test_a_bursts_answers_alike_are_judged_once():
    """The recorder shares one text among a burst's answers alike: thousands of successes
    cost one judgement; another body is judged again."""
    first = replace(exchange(body="not json"), burst=True)
    alike = replace(exchange(), burst=True, _full_body=first._full_body)
    other = replace(exchange(body="still not json"), burst=True)
    assert judged(first, alike, other)["CAT-LIST-200"] == [False, False]


def test_the_same_failure_seen_on_every_response_and_by_its_test_is_one():
    """A probe's listing is judged on every response; the test that reads it judges it again:
    one failure, the test's own (it fails the test as its own assertion would)."""
    listing = exchange(body="not json")
    with checks.on_every_response():
        served.check_success(listing, SETTINGS)
    served.listed_categories(listing)  # the test's own reading, outside `on_every_response`
    failures = [r for r in checks.ledger().results if not r.passed]
    assert [(r.requirement_id, r.every_response) for r in failures] == [("CAT-LIST-200", False)]
