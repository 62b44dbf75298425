"""Categories in SQLite (stdlib `sqlite3`): in memory, or in a file that survives a restart.

Statements run in autocommit mode: an INSERT is committed when it returns.

`version()` says cheaply whether the categories may have changed, so that a listing is encoded
again only then (`categories.py`).

Reads run at once on the event loop: a hop to a worker thread and back cost more than the query
(it was most of a GET's time). In memory the data is in this process; a file is put in WAL
mode, where a reader never waits for a writer, and read on a connection of its own. Writes to a
file may wait for another process's write lock (up to 10 s), so they run in a worker thread, on
the writing connection, under a lock. A file that cannot be put in WAL mode (some network file
systems) is read in a worker thread too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

from conformance.reference.store_base import (
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
BUSY_TIMEOUT_SECONDS = 10

T = TypeVar("T")


class SqliteCategoryStore:
    def __init__(self, path: str | None = None) -> None:
        self.path = path  # None: in memory
        self._lock = threading.Lock()  # the writer's, when worker threads use it
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None  # the event loop's; None: read in a thread
        self._writes = 0  # categories this process created (all there are, in memory)

    async def open(self) -> None:
        self._call(self._open)

    async def list(self) -> list[Category]:
        if self._reader is not None:
            return self._call(_select, self._reader)
        return await run_in_threadpool(self._call, self._locked, _select)

    async def create(self, name: str, description: str | None) -> Category:
        try:
            if self.path is None:
                new_id = self._call(_insert, self._opened(), name, description)
            else:
                new_id = await run_in_threadpool(
                    self._call, self._locked, _insert, name, description
                )
        finally:  # even a failed write may have changed something: the listing is read again
            self._writes += 1
        return new_category(new_id, name, description)

    async def version(self) -> tuple[int, int] | None:
        """Changes when the categories may have: this process's writes, and in a file, the
        commits of other connections (`PRAGMA data_version` on the reading connection, which
        sees them all, this process's writer's included). None when reads go to a thread."""
        if self.path is None:
            return (self._writes, 0)
        if self._reader is None:
            return None
        return (self._writes, self._call(_data_version, self._reader))

    async def close(self) -> None:
        self._call(self._close)

    def _call(self, function: Callable[..., T], *args: object) -> T:
        try:
            return function(*args)
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"SQLite database {self.path!r}: {exc}") from None

    def _locked(self, function: Callable[..., T], *args: object) -> T:
        with self._lock:
            return function(self._opened(), *args)

    def _open(self) -> None:
        writer = _connect(self.path or ":memory:")
        try:
            writer.execute(_SCHEMA)
            if self.path is None:
                self._writer = self._reader = writer
                return
            mode = writer.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            self._reader = _connect(self.path) if mode == "wal" else None
        except sqlite3.Error:
            writer.close()
            raise
        self._writer = writer

    def _close(self) -> None:
        with self._lock:
            for connection in (self._reader, self._writer):
                if connection is not None:
                    connection.close()  # in memory both are one: a second close does nothing
            self._reader = self._writer = None

    def _opened(self) -> sqlite3.Connection:
        if self._writer is None:
            raise RuntimeError("SqliteCategoryStore.open() was not called")
        return self._writer


def _connect(database: str) -> sqlite3.Connection:
    return sqlite3.connect(
        database, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS
    )


def _select(connection: sqlite3.Connection) -> list[Category]:
    rows = connection.execute("SELECT id, name, description FROM categories ORDER BY id")
    return [category_from_row(*row) for row in rows.fetchall()]


def _data_version(connection: sqlite3.Connection) -> int:
    return connection.execute("PRAGMA data_version").fetchone()[0]


def _insert(connection: sqlite3.Connection, name: str, description: str | None) -> int:
    cursor = connection.execute(
        "INSERT INTO categories (name, description) VALUES (?, ?)",
        (encode_text(name), encode_text(description)),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid
