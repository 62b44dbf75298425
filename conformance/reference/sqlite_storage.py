"""Categories in SQLite (stdlib `sqlite3`): in memory, or in a file that survives a restart.

One connection, in autocommit mode (an INSERT is committed when it returns), guarded by a lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

from conformance.reference.storage import (
    Category,
    DatabaseUnavailable,
    category_from_row,
    encode_text,
    new_category,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS categories (
    id INTEGER PRIMARY KEY,
    name BLOB NOT NULL,
    description BLOB
)
"""

T = TypeVar("T")


class SqliteCategoryStore:
    def __init__(self, path: str | None = None) -> None:
        self.path = path  # None: in memory
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    async def open(self) -> None:
        await self._run(self._open)

    async def list(self) -> list[Category]:
        return await self._run(self._list)

    async def create(self, name: str, description: str | None) -> Category:
        return await self._run(self._create, name, description)

    async def close(self) -> None:
        await self._run(self._close)

    async def _run(self, function: Callable[..., T], *args: object) -> T:
        """In memory, at once on the event loop: the data is in this process's memory, and a
        hop to a worker thread and back cost more than the query (it was most of a GET's time).
        A file may wait for the disk or for another process's lock: in a worker thread."""
        try:
            if self.path is None:
                return function(*args)
            return await run_in_threadpool(function, *args)
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"SQLite database {self.path!r}: {exc}") from None

    def _open(self) -> None:
        connection = sqlite3.connect(
            self.path or ":memory:", check_same_thread=False, isolation_level=None, timeout=10
        )
        try:
            connection.execute(_SCHEMA)
        except sqlite3.Error:
            connection.close()
            raise
        self._connection = connection

    def _list(self) -> list[Category]:
        with self._lock:
            rows = (
                self._opened()
                .execute("SELECT id, name, description FROM categories ORDER BY id")
                .fetchall()
            )
        return [category_from_row(*row) for row in rows]

    def _create(self, name: str, description: str | None) -> Category:
        with self._lock:
            cursor = self._opened().execute(
                "INSERT INTO categories (name, description) VALUES (?, ?)",
                (encode_text(name), encode_text(description)),
            )
            new_id = cursor.lastrowid
        assert new_id is not None
        return new_category(new_id, name, description)

    def _close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _opened(self) -> sqlite3.Connection:
        if self._connection is None:
            raise RuntimeError("SqliteCategoryStore.open() was not called")
        return self._connection
