"""The machine's PostgreSQL and Redis, as the tests and the benchmark use them.

Both are shared with whoever else works on the machine: tests never flush Redis (their keys
are unique to the run) and keep their categories in a database of their own, made for them
and dropped afterwards.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager

REDIS_ADDRESS = ("127.0.0.1", 6379)
REDIS_URL = "redis://{}:{}".format(*REDIS_ADDRESS)
POSTGRES_ADDRESS = ("127.0.0.1", 5432)
POSTGRES_USER = "postgres"
# The database the tests connect to in order to make (and drop) databases of their own.
POSTGRES_ADMIN_DATABASE = "test"


def reachable(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=0.5):
            return True
    except OSError:
        return False


def postgres_url(database: str, address: tuple[str, int] = POSTGRES_ADDRESS) -> str:
    host, port = address
    return f"postgresql://{POSTGRES_USER}@{host}:{port}/{database}"


@contextmanager
def temporary_postgres_database(label: str = "psc") -> Iterator[str]:
    """A new, empty database on the machine's PostgreSQL; its name; dropped on exit."""
    import psycopg
    from psycopg import sql

    name = f"{label}_{secrets.token_hex(6)}"
    admin_url = postgres_url(POSTGRES_ADMIN_DATABASE)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            # FORCE: a server that was killed may leave a connection behind for a moment.
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def forget_redis_keys(fragment: str) -> int:
    """Delete the Redis keys whose names contain `fragment` (a key digest unique to a run)."""
    import redis

    client = redis.Redis(*REDIS_ADDRESS, socket_timeout=5)
    try:
        names = list(client.scan_iter(match=f"*{fragment}*", count=1000))
        return client.delete(*names) if names else 0
    finally:
        client.close()
