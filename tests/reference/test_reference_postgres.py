"""Categories of the reference in PostgreSQL: exact echo, committed before the 201, kept across
a restart. Each test has a database of its own on the machine's PostgreSQL, dropped after."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from tests.shared.services import postgres_url, temporary_postgres_database

pytestmark = pytest.mark.postgres

KEY = "postgres-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def database() -> Iterator[str]:
    with temporary_postgres_database() as name:
        yield postgres_url(name)


def stored_names(url: str) -> list[str]:
    """What the table holds, read on a connection of its own (not the reference's)."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT name FROM categories ORDER BY id").fetchall()
    return [bytes(name).decode("utf-8", "surrogatepass") for (name,) in rows]


def test_each_category_is_committed_before_its_201(reference_server, database):
    server = reference_server([f"{KEY}:pro"], database=database)
    sent = ["Hunde 🐕", "猫", "rabbit\u0000\u200d", "lone \ud800"]
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        assert client.get("/categories", headers=AUTH).json() == []
        for count, name in enumerate(sent, start=1):
            # Encoded here, escaped: httpx will not encode a lone surrogate, which JSON can carry.
            response = client.post(
                "/categories",
                content=json.dumps({"name": name}).encode(),
                headers={**AUTH, "Content-Type": "application/json"},
            )
            assert response.status_code == 201, response.text
            assert response.json()["name"] == name
            # Another connection sees it the moment the 201 has arrived.
            assert stored_names(database) == sent[:count]
        listed = client.get("/categories", headers=AUTH).json()
    assert [category["name"] for category in listed] == sent
    assert len({category["id"] for category in listed}) == len(sent)


def test_restart_keeps_categories_and_ids_go_on(reference_server, database):
    first = reference_server([f"{KEY}:pro"], database=database)
    with httpx.Client(base_url=first.base_url, timeout=10) as client:
        created = client.post(
            "/categories", json={"name": "kept 🐢", "description": "slow"}, headers=AUTH
        ).json()
    first.stop()
    second = reference_server([f"{KEY}:pro"], database=database)
    with httpx.Client(base_url=second.base_url, timeout=10) as client:
        assert client.get("/categories", headers=AUTH).json() == [created]
        again = client.post("/categories", json={"name": "next"}, headers=AUTH).json()
    assert again["id"] > created["id"]
