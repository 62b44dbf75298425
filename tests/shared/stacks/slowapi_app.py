"""The Pet Store on FastAPI with slowapi, as a vendor writes it: run as
`python -m tests.shared.stacks.slowapi_app --key KEY:PLAN ... --minute-seconds N
--configuration CONFIGURATION`; it prints `slowapi listening on URL` once it serves.

"careful": limits per key and plan (callers without a valid key per address, at the free plan's)
on every route, the library's own headers on: X-RateLimit-Limit, -Remaining, -Reset
(a Unix time with a fraction of a second) and a Retry-After on every response, 200 and 201
included; a 429 with an Error body. "quick-start": the documentation's first example, keyed by
`get_remote_address`, default limits through `SlowAPIMiddleware`, its default handler's 429
and no rate-limit headers. The day profile's configurations (petstore.py) are careful ones with
a real day or none: slowapi checks the limits in their order, stops at the first that refuses
and heads the shortest one unless one refused, so the headers report the minute until the
day's 429, which reports the day.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.middleware import SlowAPIMiddleware
from slowapi.util import get_remote_address

from tests.shared.stacks import petstore
from tests.shared.stacks.petstore import Options

ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def build_app(options: Options) -> FastAPI:
    app = FastAPI()
    categories = petstore.Categories()

    def caller_key(request: Request) -> str | None:
        key, _ = petstore.bearer_key(request.headers.get("Authorization"), options.keys)
        return key

    def identity(request: Request) -> str:
        key = caller_key(request)
        return f"key:{key}" if key else f"address:{get_remote_address(request)}"

    def plan_limits(key: str) -> str:
        return options.limits(key.removeprefix("key:") if key.startswith("key:") else None)

    if options.careful:
        limiter = Limiter(
            key_func=identity,
            headers_enabled=True,
            storage_uri="memory://",
            strategy=options.strategy,
        )
        # A limit shared by every route, and decorated rather than a default: slowapi gives
        # each route a default limit of its own, and calls a plan's limit (a function of the
        # key) only for a decorated route.
        limited = limiter.shared_limit(plan_limits, scope="plan")
        app.add_exception_handler(RateLimitExceeded, too_many_requests)
    else:
        limiter = Limiter(key_func=get_remote_address, default_limits=options.quick_start_limits())
        app.add_middleware(SlowAPIMiddleware)
        app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

        def limited(route: Any) -> Any:
            return route

    app.state.limiter = limiter

    def authenticated(request: Request, serve: Any) -> JSONResponse:
        _, refusal = petstore.bearer_key(request.headers.get("Authorization"), options.keys)
        if refusal is not None:
            return JSONResponse(refusal, 401, {"WWW-Authenticate": petstore.CHALLENGE})
        return serve()

    @app.api_route("/v1/categories", methods=["GET", "HEAD"])
    @limited
    def list_categories(request: Request) -> JSONResponse:
        return authenticated(request, lambda: JSONResponse(categories.listing()))

    @app.post("/v1/categories")
    @limited
    async def create_category(request: Request) -> JSONResponse:
        body = await request.body()

        def create() -> JSONResponse:
            status, answer = categories.create(body, request.headers.get("Content-Type"))
            return JSONResponse(answer, status)

        return authenticated(request, create)

    @app.api_route("/v1/pets/{pet_id}", methods=["GET", "HEAD"])
    @limited
    def get_pet(request: Request, pet_id: str) -> JSONResponse:
        def pet() -> JSONResponse:
            found = petstore.PETS.get(pet_id)
            if found is None:
                missing = petstore.error(404, "not_found", "No pet with that id.")
                return JSONResponse(missing, 404, petstore.DEPRECATION_HEADERS)
            return JSONResponse(found, 200, petstore.DEPRECATION_HEADERS)

        return authenticated(request, pet)

    @app.api_route("/v1/store/orders", methods=["GET", "HEAD"])
    @limited
    def list_orders(request: Request) -> JSONResponse:
        return authenticated(request, lambda: JSONResponse(petstore.ORDERS))

    @app.api_route("/v1/{unknown:path}", methods=ANY_METHOD)
    @limited
    def not_found(request: Request, unknown: str) -> JSONResponse:
        # Routed, not left to the router's 404: the limiter counts (and heads) only what a
        # route answers.
        missing = petstore.error(404, "not_found", "No such resource.")
        return authenticated(request, lambda: JSONResponse(missing, 404))

    return app


def too_many_requests(request: Request, exc: Exception) -> JSONResponse:
    """slowapi's handler with the document's Error body instead of its `{"error": ...}`."""
    body = petstore.error(429, "rate_limited", f"Rate limit exceeded: {exc}")
    response = JSONResponse(body, 429)
    return request.app.state.limiter._inject_headers(response, request.state.view_rate_limit)


def main() -> None:
    options = petstore.parse_options()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", options.port))
    listener.listen(128)
    app = build_app(options)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", http=options.http))
    petstore.announce("slowapi", listener.getsockname()[1])
    server.run(sockets=[listener])


if __name__ == "__main__":
    main()
