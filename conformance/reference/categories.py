"""GET and POST /categories."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

from conformance.reference.auth import require_key
from conformance.reference.errors import ApiError, JsonResponse
from conformance.reference.outages import OutageLog
from conformance.reference.storage import CategoryStore, DatabaseUnavailable
from conformance.reference.validation import new_category_from

# What a caller is told to wait when the database does not answer: short, as an outage may
# end any moment, and clients back off further on their own.
STORAGE_RETRY_AFTER_SECONDS = 1


T = TypeVar("T")


def _store(request: Request) -> CategoryStore:
    return request.app.state.categories


async def _stored(request: Request, operation: Awaitable[T]) -> T:
    """The store's answer, or the 503 that says it has none now."""
    outage: OutageLog = request.app.state.category_outage
    try:
        result = await operation
    except DatabaseUnavailable as exc:
        outage.failed(str(exc))
        raise ApiError(
            503,
            "storage_unavailable",
            "The category storage is unavailable; retry later.",
            {"Retry-After": str(STORAGE_RETRY_AFTER_SECONDS)},
        ) from None
    outage.answered()
    return result


async def list_categories(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    return JsonResponse(await _stored(request, _store(request).list()))


async def create_category(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    name, description = await new_category_from(request)
    category = await _stored(request, _store(request).create(name, description))
    return JsonResponse(category, status_code=201)


async def categories_endpoint(request: Request) -> JsonResponse:
    """One route for both methods, so that a 405 lists them both in `Allow`."""
    if request.method == "POST":
        return await create_category(request)
    return await list_categories(request)
