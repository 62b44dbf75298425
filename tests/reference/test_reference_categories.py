"""Categories of the reference: create, list, exact echo, persistence across a restart, and the
listing kept between changes."""

from __future__ import annotations

import asyncio
import json

import httpx

from conformance.reference.categories import Categories
from conformance.reference.sqlite_storage import SqliteCategoryStore

KEY = "categories-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def test_create_then_list_echoes_exactly(reference_server):
    server = reference_server([f"{KEY}:pro"])
    sent = [
        {"name": "Hunde 🐕", "description": "Treue Begleiter — «loyal»"},
        {"name": "猫"},
        {"name": "rabbit\u0000\u200d", "description": ""},
    ]
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        assert client.get("/categories", headers=AUTH).json() == []
        created = []
        for body in sent:
            response = client.post("/categories", json=body, headers=AUTH)
            assert response.status_code == 201, response.text
            assert response.headers["content-type"].startswith("application/json")
            category = response.json()
            assert isinstance(category["id"], int)
            assert {k: v for k, v in category.items() if k != "id"} == body
            created.append(category)
        assert len({category["id"] for category in created}) == len(created)
        listed = client.get("/categories", headers=AUTH)
        assert listed.status_code == 200
        assert listed.json() == sorted(created, key=lambda category: category["id"])


def test_restart_with_the_same_database_keeps_categories(reference_server, tmp_path):
    database = tmp_path / "petstore.sqlite3"
    first = reference_server([f"{KEY}:pro"], database=database)
    with httpx.Client(base_url=first.base_url, timeout=10) as client:
        created = client.post("/categories", json={"name": "kept 🐢"}, headers=AUTH).json()
    first.stop()
    second = reference_server([f"{KEY}:pro"], database=database)
    with httpx.Client(base_url=second.base_url, timeout=10) as client:
        assert client.get("/categories", headers=AUTH).json() == [created]
        again = client.post("/categories", json={"name": "next"}, headers=AUTH).json()
    assert again["id"] != created["id"]


def test_workers_sharing_a_sqlite_file_list_every_category(reference_server, tmp_path):
    # Each request on a new connection, so that both workers take some: each reads the file on
    # a connection of its own and must see what the other one wrote.
    server = reference_server(
        [f"{KEY}:pro"], database=tmp_path / "shared.sqlite3", extra=["--workers", "2"]
    )
    created = []
    for n in range(8):
        response = httpx.post(
            f"{server.base_url}/categories", json={"name": f"shared {n}"}, headers=AUTH
        )
        assert response.status_code == 201, response.text
        created.append(response.json())
        listings = [httpx.get(f"{server.base_url}/categories", headers=AUTH) for _ in range(3)]
        assert all(listing.json() == created for listing in listings)


def test_listing_kept_until_another_worker_writes(tmp_path):
    """Workers sharing a SQLite file each keep the listing's JSON; a category one of them
    creates is listed by the others at once (`PRAGMA data_version`)."""
    path = str(tmp_path / "shared.sqlite3")

    async def scenario() -> None:
        mine, other = SqliteCategoryStore(path), SqliteCategoryStore(path)
        await mine.open()
        await other.open()
        listing = Categories(mine)
        try:
            first = (await listing.listing())[0]
            assert first == b"[]"
            assert (await listing.listing())[0] is first  # kept, not encoded again
            await other.create("by another worker", None)
            assert json.loads((await listing.listing())[0]) == [
                {"id": 1, "name": "by another worker"}
            ]
            await mine.create("by this one", "here")
            assert json.loads((await listing.listing())[0])[-1] == {
                "id": 2,
                "name": "by this one",
                "description": "here",
            }
        finally:
            await mine.close()
            await other.close()

    asyncio.run(scenario())


def test_listing_in_memory_follows_every_create():
    store = SqliteCategoryStore(None)
    listing = Categories(store)

    async def scenario() -> list[bytes]:
        await store.open()
        seen = [(await listing.listing())[0]]
        for name in ("a", "b"):
            await store.create(name, None)
            seen.append((await listing.listing())[0])
        await store.close()
        return seen

    assert [json.loads(body) for body in asyncio.run(scenario())] == [
        [],
        [{"id": 1, "name": "a"}],
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    ]
