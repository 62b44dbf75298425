"""GET and POST /categories, and the listing's JSON kept between changes.

A listing is read and encoded again only when the store says it may have changed (its
`version()`): SQLite counts its changes (in memory, where this process is the only writer) or
asks `PRAGMA data_version` (a file, which other workers write too). A store without a cheap
answer (PostgreSQL, shared by other instances: asking costs the round trip the query does) is
read for every request, the requests waiting at the same time sharing one read that started
after each of them arrived (`shared_read.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response

from conformance.reference.auth import require_key
from conformance.reference.errors import JSON_MEDIA_TYPE, ApiError, JsonResponse, dump_json
from conformance.reference.outages import OutageLog
from conformance.reference.shared_read import SharedRead
from conformance.reference.storage import CategoryStore, DatabaseUnavailable
from conformance.reference.validation import new_category_from

# What a caller is told to wait when the database does not answer: short, as an outage may
# end any moment, and clients back off further on their own.
STORAGE_RETRY_AFTER_SECONDS = 1
# Listings read at once by a process, where they are shared: the PostgreSQL pool's connections.
SHARED_READS_AT_ONCE = 4


T = TypeVar("T")


class Categories:
    """The two operations over one store."""

    def __init__(self, store: CategoryStore) -> None:
        self.store = store
        self.outage = OutageLog("category storage")
        self._listing: tuple[object, bytes] | None = None  # (the store's version, the JSON)
        self._version = getattr(store, "version", None)  # a store may have no cheap answer
        self._shared_listing = SharedRead(self._read_listing, SHARED_READS_AT_ONCE)

    async def endpoint(self, request: Request) -> Response:
        """One route for both methods, so that a 405 lists them both in `Allow`."""
        require_key(request.scope["petstore.caller"])
        if request.method == "POST":
            return await self.create(request)
        return Response(await self._stored(self.listing_json()), media_type=JSON_MEDIA_TYPE)

    async def create(self, request: Request) -> JsonResponse:
        name, description = await new_category_from(request)
        category = await self._stored(self.store.create(name, description))
        return JsonResponse(category, status_code=201)

    async def listing_json(self) -> bytes:
        """The listing as its 200 carries it: kept while the store's version stays the same."""
        if self._version is None:
            return await self._shared_listing()
        version = await self._version()
        if version is not None and self._listing is not None and self._listing[0] == version:
            return self._listing[1]
        listing = await self._read_listing()
        self._listing = None if version is None else (version, listing)
        return listing

    async def _read_listing(self) -> bytes:
        return dump_json(await self.store.list())

    async def _stored(self, operation: Awaitable[T]) -> T:
        """The store's answer, or the 503 that says it has none now."""
        try:
            result = await operation
        except DatabaseUnavailable as exc:
            self.outage.failed(str(exc))
            raise ApiError(
                503,
                "storage_unavailable",
                "The category storage is unavailable; retry later.",
                {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)},
            ) from None
        self.outage.answered()
        return result
