"""The other endpoints: deprecated GET /pets/{petId}, beta GET /store/orders, routing errors."""

from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime

import httpx
import pytest

from tests.shared.servers import assert_error, rate_limit_headers, reference_client

KEY = "endpoints-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def client():
    with reference_client([f"{KEY}:pro"]) as http:
        yield http


@pytest.mark.parametrize("pet_id,status", [("1", 200), ("2", 200), ("3", 200), ("999", 404)])
def test_pets_announce_deprecation_and_sunset(client, pet_id, status):
    response = client.get(f"/pets/{pet_id}", headers=AUTH)
    assert response.status_code == status
    deprecation = response.headers["Deprecation"]
    assert re.fullmatch(r"@\d+", deprecation), deprecation
    deprecated_at = int(deprecation[1:])
    sunset_at = parsedate_to_datetime(response.headers["Sunset"]).timestamp()
    assert deprecated_at < time.time() < sunset_at
    assert response.headers["Sunset"].endswith(" GMT")
    assert 'rel="sunset"' in response.headers["Link"]
    rate_limit_headers(response)
    if status == 200:
        pet = response.json()
        assert pet["id"] == int(pet_id) and isinstance(pet["name"], str)
    else:
        assert_error(response, 404)


def test_orders_exist_and_are_beta(client):
    response = client.get("/store/orders", headers=AUTH)
    assert response.status_code == 200
    assert isinstance(response.json(), list) and response.json()
    assert response.headers["X-API-Stability"] == "beta"
    assert_error(client.get("/store/orders"), 401)


@pytest.mark.parametrize(
    "method,path,allowed",
    [
        ("PUT", "/categories", {"GET", "HEAD", "POST"}),
        ("DELETE", "/categories", {"GET", "HEAD", "POST"}),
        ("POST", "/pets/1", {"GET", "HEAD"}),
        ("PATCH", "/store/orders", {"GET", "HEAD"}),
    ],
)
def test_wrong_method_is_405_with_allow(client, method, path, allowed):
    response = client.request(method, path, headers=AUTH)
    assert_error(response, 405)
    assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed
    rate_limit_headers(response)


@pytest.mark.parametrize("path", ["/nothing", "/categories/1", "/pets", "/../categories"])
def test_unknown_path_is_404(client, path):
    response = client.get(path, headers=AUTH)
    assert_error(response, 404)
    rate_limit_headers(response)


def test_paths_outside_v1_are_404_with_headers(client):
    root = str(client.base_url).removesuffix("/v1/").removesuffix("/v1")
    response = httpx.get(root + "/categories", headers=AUTH)
    assert_error(response, 404)
    rate_limit_headers(response)
