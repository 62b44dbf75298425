"""What every category back-end shares: the Category shape, the store's interface, the error
for a database that does not answer, and the text encoding that keeps every string exact.

Every back-end stores names and descriptions as UTF-8 bytes with `surrogatepass`, so that every
string a JSON body can carry (NUL, emoji, even a lone surrogate escape) comes back exactly as
sent, and commits a category before `create` returns it: a 201 is only sent for a stored one.
The back-ends import this module; `storage.py` only picks one of them. A back-end may also
have `async version()`: a value that changes whenever its categories may have, cheaper to get
than the listing (`categories.py` then keeps the listing's JSON until it changes).
"""

from __future__ import annotations

from typing import Any, Protocol

Category = dict[str, Any]


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
