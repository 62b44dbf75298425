"""GET /pets/{petId} (deprecated, with a sunset date) and GET /store/orders (beta).

The interface does not show the shapes of pets and orders; these are small demo records.
"""

from __future__ import annotations

from calendar import timegm
from datetime import UTC, datetime
from email.utils import format_datetime

from starlette.requests import Request

from conformance.reference.auth import require_key
from conformance.reference.errors import JsonResponse, error_response

DEPRECATED_ON = datetime(2026, 1, 1, tzinfo=UTC)
SUNSET_ON = datetime(2028, 1, 1, tzinfo=UTC)
DEPRECATION_DOCS = "https://petstore.example.com/docs/deprecations"

DEPRECATION_HEADERS = {
    # RFC 9745: a structured-field date, "@" and the Unix time.
    "Deprecation": f"@{timegm(DEPRECATED_ON.utctimetuple())}",
    # RFC 8594: an HTTP-date.
    "Sunset": format_datetime(SUNSET_ON, usegmt=True),
    "Link": f'<{DEPRECATION_DOCS}>; rel="sunset"',
}

STABILITY_HEADERS = {"X-API-Stability": "beta"}

PETS = {
    "1": {"id": 1, "name": "Rex", "status": "available"},
    "2": {"id": 2, "name": "Tom", "status": "pending"},
    "3": {"id": 3, "name": "Bunny", "status": "sold"},
}

ORDERS = [
    {"id": 1, "petId": 3, "quantity": 1, "status": "delivered"},
    {"id": 2, "petId": 2, "quantity": 1, "status": "placed"},
]


async def get_pet(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    pet = PETS.get(request.path_params["petId"])
    if pet is None:
        return error_response(404, "pet_not_found", "No pet has this id.", DEPRECATION_HEADERS)
    return JsonResponse(pet, headers=DEPRECATION_HEADERS)


async def list_orders(request: Request) -> JsonResponse:
    require_key(request.scope["petstore.caller"])
    return JsonResponse(ORDERS, headers=STABILITY_HEADERS)
