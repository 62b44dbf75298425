"""The category store of the scenario that provokes a 400: the reference's own store, which
refuses a blank name as a server may (docs/design.md: a server may reject empty or blank names),
with the reference's own Error body and rate-limit headers around the answer."""

from __future__ import annotations

from conformance.reference.errors import ApiError
from conformance.reference.storage import Category, CategoryStore, category_store


class BlankNamesRefused:
    """`CategoryStore` whose `create` answers 400 `invalid_value` for a blank name."""

    def __init__(self, inner: CategoryStore | None = None) -> None:
        self.inner = inner or category_store(None)

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def list(self) -> list[Category]:
        return await self.inner.list()

    async def create(self, name: str, description: str | None) -> Category:
        if not name.strip():
            raise ApiError(400, "invalid_value", "name: a blank name is not accepted.")
        return await self.inner.create(name, description)
