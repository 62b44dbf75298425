"""Categories in SQLite (stdlib `sqlite3`): in memory, or in a file that survives a restart.

Names and descriptions are stored as UTF-8 bytes with `surrogatepass`, so that every string
a JSON body can carry (NUL, emoji, even a lone surrogate escape) comes back exactly as sent.
One connection serves all threads, guarded by a lock; every statement is short.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS categories (
    id INTEGER PRIMARY KEY,
    name BLOB NOT NULL,
    description BLOB
)
"""


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogatepass")


def _decode(data: bytes | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8", "surrogatepass")


class CategoryStore:
    def __init__(self, database: str | None = None) -> None:
        self.database = database or ":memory:"
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            self.database, check_same_thread=False, isolation_level=None, timeout=10
        )
        with self._lock:
            self._connection.execute(_SCHEMA)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._connection.execute(
                "SELECT id, name, description FROM categories ORDER BY id"
            ).fetchall()
        return [_category(*row) for row in rows]

    def create(self, name: str, description: str | None) -> dict[str, Any]:
        with self._lock:
            cursor = self._connection.execute(
                "INSERT INTO categories (name, description) VALUES (?, ?)",
                (_encode(name), _encode(description)),
            )
            new_id = cursor.lastrowid
        return _category(new_id, _encode(name), _encode(description))

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _category(category_id: int, name: bytes, description: bytes | None) -> dict[str, Any]:
    category: dict[str, Any] = {"id": category_id, "name": _decode(name)}
    if description is not None:
        category["description"] = _decode(description)
    return category
