"""Where categories are kept: the one interface every back-end offers, and the choice of one.

`--database` picks the back-end: a `postgresql://` (or `postgres://`) URL keeps categories in
PostgreSQL (`postgres_storage.py`), so that several instances serve one data set; anything else
is a SQLite file (`sqlite_storage.py`; `sqlite:///PATH` or a plain path), in memory without it.

Every back-end stores names and descriptions as UTF-8 bytes with `surrogatepass`, so that every
string a JSON body can carry (NUL, emoji, even a lone surrogate escape) comes back exactly as
sent, and commits a category before `create` returns it: a 201 is only sent for a stored one.
"""

from __future__ import annotations

from typing import Any, Protocol

Category = dict[str, Any]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_PREFIX = "sqlite:///"


class DatabaseUnavailable(Exception):
    """The database does not answer (now); the message is one line, without a password."""


class CategoryStore(Protocol):
    async def open(self) -> None:
        """Connect and create the schema if it is missing; DatabaseUnavailable if impossible."""

    async def list(self) -> list[Category]:
        """Every category, by id; DatabaseUnavailable when the database does not answer."""

    async def create(self, name: str, description: str | None) -> Category:
        """Store a category (committed when this returns) and return it with its new id."""

    async def close(self) -> None: ...


def is_postgres_url(database: str | None) -> bool:
    return database is not None and database.lower().startswith(POSTGRES_SCHEMES)


def category_store(database: str | None) -> CategoryStore:
    """The back-end `--database` names (not yet opened)."""
    if is_postgres_url(database):
        # Imported only here: the checker, which starts the reference in memory, never needs it.
        from conformance.reference.postgres_storage import PostgresCategoryStore

        return PostgresCategoryStore(database or "")
    from conformance.reference.sqlite_storage import SqliteCategoryStore

    return SqliteCategoryStore(sqlite_path(database))


def sqlite_path(database: str | None) -> str | None:
    if database is None:
        return None
    return database.removeprefix(SQLITE_PREFIX)


def encode_text(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogatepass")


def decode_text(data: bytes | memoryview | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8", "surrogatepass")


def new_category(category_id: int, name: str, description: str | None) -> Category:
    category: Category = {"id": category_id, "name": name}
    if description is not None:
        category["description"] = description
    return category


def category_from_row(
    category_id: int, name: bytes | memoryview, description: bytes | memoryview | None
) -> Category:
    return new_category(
        category_id, bytes(name).decode("utf-8", "surrogatepass"), decode_text(description)
    )
