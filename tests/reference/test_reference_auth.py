"""Bearer authentication of the reference, end to end over HTTP against the real process."""

from __future__ import annotations

import base64

import pytest

from conformance.reference.auth import bearer_token
from tests.shared.servers import assert_error, rate_limit_headers, reference_client

KEY = "auth-test-key-1"

OPERATIONS = [
    ("GET", "/categories", None),
    ("POST", "/categories", {"name": "auth"}),
    ("GET", "/pets/1", None),
    ("GET", "/store/orders", None),
]


@pytest.fixture(scope="module")
def client():
    with reference_client([f"{KEY}:business"]) as http:
        yield http


BAD_CREDENTIALS = {
    "unknown key": ({"Authorization": "Bearer not-a-known-key"}, None, True),
    "empty token": ({"Authorization": "Bearer"}, None, True),
    "two spaces": ({"Authorization": f"Bearer  {KEY}"}, None, True),
    "two tokens": ({"Authorization": f"Bearer {KEY} {KEY}"}, None, True),
    "a tab inside": ({"Authorization": f"Bearer {KEY}\t{KEY}"}, None, True),
    "basic scheme": (
        {"Authorization": "Basic " + base64.b64encode(f"{KEY}:".encode()).decode()},
        None,
        False,
    ),
    "key without scheme": ({"Authorization": KEY}, None, False),
    "key in query only": ({}, {"api_key": KEY, "access_token": KEY}, False),
    "no header": ({}, None, False),
}


@pytest.mark.parametrize("method,path,body", OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
@pytest.mark.parametrize("case", BAD_CREDENTIALS, ids=list(BAD_CREDENTIALS))
def test_bad_credentials_get_401_with_challenge(client, case, method, path, body):
    headers, params, token_given = BAD_CREDENTIALS[case]
    response = client.request(method, path, headers=headers, params=params, json=body)
    assert_error(response, 401)
    challenge = response.headers.get("WWW-Authenticate", "")
    assert challenge.startswith('Bearer realm="petstore"'), challenge
    assert ('error="invalid_token"' in challenge) == token_given, challenge
    rate_limit_headers(response)


@pytest.mark.parametrize(
    "value", [b"Bearer a\xa0b", b"Bearer a\x0bb", b"Bearer a\x1fb", b"Bearer "]
)
def test_a_token_with_any_blank_is_malformed(value):
    # Any character str.isspace() counts, beyond what a proxy would turn into a plain space.
    assert bearer_token({"headers": [(b"authorization", value)]}) == (True, None)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_scheme_name_is_case_insensitive(client, scheme):
    response = client.get("/categories", headers={"Authorization": f"{scheme} {KEY}"})
    assert response.status_code == 200, response.text
    limit, _, _ = rate_limit_headers(response)
    assert limit == 1000  # the business plan's minute


@pytest.mark.parametrize("method,path,body", OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_valid_key_is_served_on_every_operation(client, method, path, body):
    response = client.request(method, path, headers={"Authorization": f"Bearer {KEY}"}, json=body)
    assert response.status_code in (200, 201), response.text
