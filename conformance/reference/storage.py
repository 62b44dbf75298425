"""Where categories are kept: the choice of one back-end.

`--database` picks the back-end: a `postgresql://` (or `postgres://`) URL keeps categories in
PostgreSQL (`postgres_storage.py`), so that several instances serve one data set; anything else
is a SQLite file (`sqlite_storage.py`; `sqlite:///PATH` or a plain path), in memory without it.
What the back-ends share is in `store_base.py`.
"""

from __future__ import annotations

from conformance.reference.store_base import Category, CategoryStore, DatabaseUnavailable

__all__ = ["Category", "CategoryStore", "DatabaseUnavailable", "category_store", "is_postgres_url"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_PREFIX = "sqlite:///"


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
