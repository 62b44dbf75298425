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
from starlette.types import Receive, Scope, Send

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


JSON_CONTENT_TYPE = JSON_MEDIA_TYPE.encode("ascii")

T = TypeVar("T")
Headers = list[tuple[bytes, bytes]]


def _with_headers(body: bytes) -> tuple[bytes, Headers]:
    return body, [(b"content-length", b"%d" % len(body)), (b"content-type", JSON_CONTENT_TYPE)]


class Categories:
    """The two operations over one store: an ASGI app of its own, so that the listing's 200
    leaves with the headers made with its bytes, not through a Request and a Response made for
    every request."""

    def __init__(self, store: CategoryStore) -> None:
        self.store = store
        self.outage = OutageLog("category storage")
        self._listing: tuple[object, bytes, Headers] | None = None  # (version, JSON, headers)
        self._version = getattr(store, "version", None)  # a store may have no cheap answer
        self._shared_listing = SharedRead(self._read_listing, SHARED_READS_AT_ONCE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One route for both methods, so that a 405 lists them both in `Allow`."""
        require_key(scope["petstore.caller"])
        if scope["method"] == "POST":
            response = await self.create(Request(scope, receive))
            await response(scope, receive, send)
            return
        body, headers = await self._stored(self.listing())
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def create(self, request: Request) -> JsonResponse:
        name, description = await new_category_from(request)
        category = await self._stored(self.store.create(name, description))
        return JsonResponse(category, status_code=201)

    async def listing(self) -> tuple[bytes, Headers]:
        """The listing as its 200 carries it, and its headers: kept while the store's version
        stays the same."""
        if self._version is None:
            return _with_headers(await self._shared_listing())
        version = await self._version()
        listing = self._listing
        if version is not None and listing is not None and listing[0] == version:
            return listing[1], listing[2]
        body, headers = _with_headers(await self._read_listing())
        self._listing = None if version is None else (version, body, headers)
        return body, headers

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
