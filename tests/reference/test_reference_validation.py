"""Validation of POST /categories bodies: every invalid body is a 400 Error, never a 422 or 5xx."""

from __future__ import annotations

import json

import pytest

from tests.shared.servers import assert_error, rate_limit_headers, reference_client

KEY = "validation-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}
LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def client():
    with reference_client([f"{KEY}:business"]) as http:
        yield http


INVALID_BODIES = {
    "empty object": b"{}",
    "name a number": b'{"name": 1}',
    "name null": b'{"name": null}',
    "name a boolean": b'{"name": true}',
    "name an array": b'{"name": ["a"]}',
    "name an object": b'{"name": {"a": 1}}',
    "description a number": b'{"name": "ok", "description": 2}',
    "description null": b'{"name": "ok", "description": null}',
    "only description": b'{"description": "no name"}',
    "array": b'[{"name": "a"}]',
    "string": b'"a"',
    "number": b"1",
    "null": b"null",
    "truncated JSON": b'{"name": "a"',
    "not JSON": b"name=a",
    "NaN": b'{"name": "a", "description": NaN}',
    "invalid UTF-8": b'{"name": "\xff\xfe"}',
    "UTF-8 BOM": b'\xef\xbb\xbf{"name": "a"}',
    "deep nesting": b'{"name": "a", "x": ' + b"[" * 20000 + b"]" * 20000 + b"}",
    "empty body": b"",
    "blank body": b"  \n ",
}


@pytest.mark.parametrize("body", INVALID_BODIES.values(), ids=list(INVALID_BODIES))
def test_invalid_body_is_400(client, body):
    response = client.post("/categories", content=body, headers=JSON)
    assert_error(response, 400)
    rate_limit_headers(response)


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "json"],
)
def test_body_not_sent_as_json_is_400(client, content_type):
    headers = dict(AUTH)
    request = client.build_request("POST", "/categories", content=b'{"name": "a"}', headers=headers)
    if content_type is None:
        request.headers.pop("Content-Type", None)
    else:
        request.headers["Content-Type"] = content_type
    assert_error(client.send(request), 400)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;x=1"]
)
def test_json_media_type_parameters_are_allowed(client, content_type):
    response = client.post(
        "/categories", content=b'{"name": "ok"}', headers={**AUTH, "Content-Type": content_type}
    )
    assert response.status_code == 201, response.text


def test_oversized_body_is_413(client):
    body = b'{"name": "' + b"a" * LIMIT + b'"}'
    response = client.post("/categories", content=body, headers=JSON)
    assert_error(response, 413)
    rate_limit_headers(response)


def test_oversized_chunked_body_is_413(client):
    def chunks():
        yield b'{"name": "'
        for _ in range(80):
            yield b"a" * 1024
        yield b'"}'

    response = client.post("/categories", content=chunks(), headers=JSON)
    assert "content-length" not in {name.lower() for name in response.request.headers}
    assert_error(response, 413)


def test_body_just_under_the_limit_is_accepted(client):
    name = "b" * (LIMIT - len(b'{"name": ""}'))
    response = client.post("/categories", json={"name": name}, headers=AUTH)
    assert response.status_code == 201, response.text[:200]
    assert response.json()["name"] == name


ACCEPTED_NAMES = {
    "empty": "",
    "blank": "   ",
    "long": "x" * 5000,
    "emoji": "🐶🐱🐰 ZWJ 👩‍👩‍👧",
    "NUL and controls": "a\x00b\x01\x1f",
    "scripts": "Кошки 猫 قطط בַּיִת",
    "lone surrogate": "\ud800",
}


@pytest.mark.parametrize("name", ACCEPTED_NAMES.values(), ids=list(ACCEPTED_NAMES))
def test_every_schema_valid_name_is_accepted_and_echoed(client, name):
    # ensure_ascii: the lone surrogate can only travel as a JSON escape
    body = json.dumps({"name": name, "description": name, "extra": [1]}, ensure_ascii=True)
    response = client.post("/categories", content=body.encode(), headers=JSON)
    assert response.status_code == 201, response.text[:200]
    created = response.json()
    assert created["name"] == name
    assert created["description"] == name
    assert "extra" not in created
    listed = client.get("/categories", headers=AUTH).json()
    assert created in listed


def test_invalid_bodies_create_nothing(client):
    before = client.get("/categories", headers=AUTH).json()
    for body in INVALID_BODIES.values():
        client.post("/categories", content=body, headers=JSON)
    assert client.get("/categories", headers=AUTH).json() == before
