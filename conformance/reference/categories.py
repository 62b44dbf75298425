"""GET and POST /categories."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from conformance.reference.auth import require_key
from conformance.reference.errors import JsonResponse
from conformance.reference.storage import CategoryStore
from conformance.reference.validation import new_category_from


def _store(request: Request) -> CategoryStore:
    return request.app.state.categories


async def list_categories(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    return JsonResponse(await run_in_threadpool(_store(request).list))


async def create_category(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    name, description = await new_category_from(request)
    category = await run_in_threadpool(_store(request).create, name, description)
    return JsonResponse(category, status_code=201)


async def categories_endpoint(request: Request) -> JsonResponse:
    """One route for both methods, so that a 405 lists them both in `Allow`."""
    if request.method == "POST":
        return await create_category(request)
    return await list_categories(request)
