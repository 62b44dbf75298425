"""The test double: a small Pet Store server, correct by default, that misbehaves on request.

Deliberately independent of `conformance.reference`: a fault in one must never leak into the
other. One ASGI callable with a hand-written router, so that every deviation is one `if` away.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from pathlib import Path
from typing import Any

from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.shared.double import front
from tests.shared.double.behaviours import HOSTILE, check_names
from tests.shared.double.hostile import HostileTarget
from tests.shared.double.limiter import PLANS, Decision, Limiter, Plan, Window

MAX_BODY = 64 * 1024
DRAIN_LIMIT = 16 * 1024 * 1024
NGINX_BODY_LIMIT = 1024 * 1024  # nginx's client_max_body_size when not set
NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
DJANGO_404 = (
    '<!doctype html>\n<html lang="en">\n<head>\n  <title>Not Found</title>\n</head>\n<body>\n'
    "  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>\n"
    "</body>\n</html>\n"
)
DEPRECATION = "@1767225600"  # 2026-01-01T00:00:00Z
SUNSET = "Sat, 01 Jan 2028 00:00:00 GMT"
SUNSET_ISO = "2028-01-01T00:00:00Z"
SUNSET_PAST = "Mon, 01 Jun 2026 00:00:00 GMT"
SUNSET_LINK = '<https://petstore.example.com/docs/deprecations#pets>; rel="sunset"'
FREE = PLANS["free"]
RETRY_AFTER_TOO_SHORT = 1  # seconds, whatever the wait
# The rate of callers a server does not know: no plan's figures.
GUEST = Plan(100, 2_000)
DAY_EARLY_SHARE = 0.9
"""The day-refuses-early fault's day: 90 % of the plan's figure."""
FRACTION_PHASE = 0.8905156  # windows that end at a fraction of a second, as slowapi reports them
SLOW_RESPONSE = 0.04  # seconds each response takes in the slow-responses variant
TWO_WORKERS = 2  # requests handled at once in the two-workers variant, each taking WORKER_TIME
WORKER_TIME = 0.045  # one connection then gives 22 requests a second, two workers 44
BAD_REMAINING = ("-1", "1e400")  # the remaining-bad-numbers fault's values
OVERSIZED_HEADER = 1024  # the Authorization header the oversized-key-500 fault crashes past
LATE_WINDOW_LEFT = 2.5  # seconds of the first fixed window left at the first request (late-window)

PETS: dict[str, dict[str, Any]] = {
    "1": {"id": 1, "name": "Rex", "category": {"id": 1, "name": "Dogs"}, "status": "available"},
    "2": {"id": 2, "name": "Tom", "category": {"id": 2, "name": "Cats"}, "status": "pending"},
    "3": {"id": 3, "name": "Bugs", "category": {"id": 3, "name": "Rabbits"}, "status": "sold"},
}
ORDERS: list[dict[str, Any]] = [
    {"id": 1, "petId": 3, "quantity": 1, "status": "delivered", "complete": True},
    {"id": 2, "petId": 2, "quantity": 1, "status": "placed", "complete": False},
]
SEED_CATEGORIES = [
    ("Dogs", "Domestic dogs of every breed"),
    ("Cats", "Domestic cats"),
    ("Rabbits", None),
]

# Error codes of the default double, and the ones of the other-error-codes variant.
ALTERNATIVE_ERRORS = {
    "missing_api_key": ("AUTH_001", "Authentication credentials were not provided."),
    "invalid_api_key": ("AUTH_002", "The access token is not valid."),
    "invalid_body": ("REQ_100", "Request payload could not be processed."),
    "missing_field": ("REQ_101", "A mandatory property is absent."),
    "invalid_value": ("REQ_102", "A property has the wrong type."),
    "unsupported_media_type": ("REQ_103", "Send application/json."),
    "payload_too_large": ("REQ_104", "Request entity too large."),
    "not_found": ("RES_404", "Nothing here."),
    "method_not_allowed": ("RES_405", "Method not supported on this resource."),
    "rate_limited": ("RATE_001", "Slow down."),
}


class Crash(Exception):
    """The double's stand-in for an unhandled exception in a faulty server."""


@dataclass
class DoubleConfig:
    keys: dict[str, Plan]
    minute_seconds: float = 60.0
    faults: frozenset[str] = frozenset()
    variants: frozenset[str] = frozenset()
    url_log: Path | None = None  # every request target received, one a line (tests read it)

    def __post_init__(self) -> None:
        check_names(self.faults, self.variants)


@dataclass
class Caller:
    identity: str
    plan: Plan
    served: bool  # authenticated (or let through by a fault)
    failure: str | None = None  # "missing" or "invalid"
    crash: bool = False


@dataclass
class Route:
    name: str  # "categories", "pets", "orders"
    methods: tuple[str, ...]
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class Block:
    until: float  # math.inf: for ever (never-resets, reset-moves-ahead)
    moving: bool = False  # each refusal announces the next window's end (reset-moves-ahead)


class CategoryStore:
    def __init__(self, faults: frozenset[str], variants: frozenset[str]) -> None:
        self.faults = faults
        self.variants = variants
        self.items: list[dict[str, Any]] = []
        self.used_ids: set[int] = set()
        self.created = 0
        if "seeded-categories" in variants:
            for name, description in SEED_CATEGORIES:
                self.add(name, description)
        self.snapshot = list(self.items)

    def new_id(self) -> int:
        self.created += 1
        if "ids-repeat" in self.faults:
            return (self.created - 1) % 5 + 1
        if "id-exceeds-int64" in self.faults:
            return uuid.uuid4().int
        if "random-ids" in self.variants:
            while True:
                candidate = random.randrange(1, 2**63)
                if candidate not in self.used_ids:
                    break
        elif "large-int64-ids" in self.variants:
            candidate = 2**62 + self.created
        else:
            candidate = self.created
        self.used_ids.add(candidate)
        return candidate

    def add(self, name: str, description: str | None) -> dict[str, Any]:
        category: dict[str, Any] = {"id": self.new_id(), "name": name}
        if description is not None:
            category["description"] = description
        self.items.append(category)
        return category

    def listing(self) -> list[dict[str, Any]]:
        items = self.snapshot if "list-forgets-new" in self.faults else self.items
        return list(reversed(items)) if "newest-first" in self.variants else list(items)


class PetStoreDouble:
    def __init__(self, config: DoubleConfig) -> None:
        self.config = config
        self.keys = config.keys
        self.faults = config.faults
        self.variants = config.variants
        if "limit-plus-one" in self.faults:
            slack = 1
        elif "limit-minus-one" in self.faults:
            slack = -1
        else:
            slack = 0
        self.limiter = Limiter(
            config.minute_seconds,
            sliding="sliding-window" in self.variants,
            slack=slack,
            enforce="limits-not-enforced" not in self.faults,
            phase=FRACTION_PHASE if "reset-with-fraction" in self.faults else 0.0,
            day_share=DAY_EARLY_SHARE if "day-refuses-early" in self.faults else 1.0,
            enforce_day=not ({"day-never-enforced", "headerless-no-day"} & self.faults),
            sliding_minute="sliding-minute-with-day" in self.variants,
        )
        self.store = CategoryStore(self.faults, self.variants)
        self.front = front.TokenBuckets(config.minute_seconds)
        self.blocks: dict[str, Block] = {}
        self.refused_windows: dict[str, float] = {}  # the window end each caller was refused in
        self.answers = 0  # answers carrying rate-limit headers (remaining-bad-numbers)
        self.announced_retry: dict[str, float] = {}
        self.early_requests: dict[str, int] = {}
        self.workers = asyncio.Semaphore(TWO_WORKERS)

    def fault(self, name: str) -> bool:
        return name in self.faults

    def variant(self, name: str) -> bool:
        return name in self.variants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        self.log_url(scope)
        if self.variant("slow-responses"):
            await asyncio.sleep(SLOW_RESPONSE)
        if self.variant("two-workers"):
            async with self.workers:
                await asyncio.sleep(WORKER_TIME)
        if self.fault("nginx-in-front") and body_size(request) > NGINX_BODY_LIMIT:
            response = await self.nginx_413(request)
        else:
            response = await self.respond(request)
            # uvicorn's own Server header is off: a response made in front must not carry it.
            response.headers["Server"] = "uvicorn"
        await response(scope, receive, send)

    def log_url(self, scope: Scope) -> None:
        """Record the request target as received, query string included: tests look for keys."""
        if self.config.url_log is None:
            return
        target = scope.get("raw_path", b"") + b"?" + scope.get("query_string", b"")
        with self.config.url_log.open("a", encoding="latin-1") as log:
            log.write(target.decode("latin-1") + "\n")

    async def nginx_413(self, request: Request) -> Response:
        """A stock nginx's refusal of a body over its limit: never reaches the service."""
        await read_body(request)  # drained, so that the client reads the answer
        headers = {"Server": "nginx", "Connection": "close"}
        return Response(NGINX_413, 413, headers=headers, media_type="text/html")

    # --- the request pipeline ---------------------------------------------------------------

    async def respond(self, request: Request) -> Response:
        now = time.time()
        if self.variant("late-window") and self.limiter.phase == 0.0:
            # Windows aligned to the clock, the run's first request late in one: so it is,
            # every time, for a test, what a clock-aligned limiter does to a run now and then.
            self.limiter.phase = (now + LATE_WINDOW_LEFT) % self.config.minute_seconds or 1e-9
        route = self.resolve(request.url.path)
        caller = self.authenticate(request, route)
        identity = "*" if self.fault("shared-counter") else caller.identity
        fronted = self.fault("front-token-bucket") and caller.served
        if fronted and not self.front.admit(identity, caller.plan.per_minute, now):
            return front.refusal()
        if self.fault("budget-per-endpoint"):
            identity += f":{route.name if route else 'other'}"
        decision = self.admit(identity, caller.plan, now)
        if not decision.allowed:
            response = self.too_many_requests(decision, now)
        elif caller.crash:
            response = self.server_error()
        elif caller.failure is not None:
            response = self.unauthorized(caller.failure)
        elif route is None and self.fault("framework-html-404"):
            response = Response(DJANGO_404, 404, media_type="text/html")  # Django's, DEBUG off
        elif route is None:
            response = self.error(404, "not_found", f"No resource at {request.url.path}.")
        elif request.method not in route.methods:
            response = self.error(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed here.",
                {"Allow": ", ".join(route.methods)},
            )
        else:
            try:
                response = await self.dispatch(request, route)
            except Crash:
                response = self.server_error()
        self.add_rate_limit_headers(response, decision, now, unknown_path=route is None)
        if route is not None and route.name == "pets" and caller.served:
            self.add_deprecation_headers(response)
        if self.variant("connection-close"):
            response.headers["Connection"] = "close"
        return response

    def resolve(self, path: str) -> Route | None:
        prefix = base_path(self.faults)
        if not path.startswith(prefix + "/"):
            return None
        path = "/v1" + path[len(prefix) :]
        if path == "/v1/categories":
            return Route("categories", ("GET", "HEAD", "POST"))
        pet = re.fullmatch(r"/v1/pets/([^/]+)", path)
        if pet and not self.fault("pets-missing"):
            return Route("pets", ("GET", "HEAD"), {"petId": pet.group(1)})
        if path == "/v1/store/orders" and not self.fault("orders-missing"):
            return Route("orders", ("GET", "HEAD"))
        return None

    def authenticate(self, request: Request, route: Route | None) -> Caller:
        host = request.client.host if request.client else "unknown"
        # A caller the server does not know is limited per address, at a guest rate of its own
        # under the fault modelled on a framework's default (not the plan of the key it sent).
        guest = GUEST if self.fault("forbidden-403-for-bad-key") else FREE
        anonymous = Caller(f"address:{host}", guest, served=False)
        header = request.headers.get("authorization")
        if header is None:
            query_key = request.query_params.get("api_key")
            if self.fault("key-in-query-accepted") and query_key in self.keys:
                return self.caller_for(query_key)
            route_name = route.name if route else None
            if (route_name == "orders" and self.fault("orders-without-auth")) or (
                route_name == "pets" and self.fault("pets-without-auth")
            ):
                return replace(anonymous, served=True)
            return replace(anonymous, failure="missing")
        if self.fault("oversized-key-500") and len(header) > OVERSIZED_HEADER:
            return replace(anonymous, crash=True)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if not token:
            if self.fault("key-without-scheme-accepted") and scheme in self.keys:
                return self.caller_for(scheme)
            if self.fault("empty-bearer-crashes") and scheme.lower() == "bearer":
                return replace(anonymous, crash=True)
            return replace(anonymous, failure="invalid")
        if (
            route is not None
            and route.name == "orders"
            and self.fault("orders-want-api-key-header")
        ):
            api_key = request.headers.get("x-api-key")
            return (
                self.caller_for(api_key)
                if api_key in self.keys
                else replace(anonymous, failure="invalid")
            )
        if self.fault("scheme-case-sensitive"):
            scheme_ok = scheme == "Bearer"
        else:
            scheme_ok = scheme.lower() == "bearer" or self.fault("basic-scheme-accepted")
        if scheme_ok and token in self.keys:
            return self.caller_for(token)
        if self.fault("accept-any-bearer-token") and scheme.lower() == "bearer":
            return Caller(f"key:{token}", self.keys.get(token, FREE), served=True)
        return replace(anonymous, failure="invalid")

    def caller_for(self, key: str) -> Caller:
        return Caller(f"key:{key}", self.keys[key], served=True)

    def admit(self, identity: str, plan: Plan, now: float) -> Decision:
        """Blocks (penalties, bans, never-resets) first, then the limiter."""
        if self.variant("ban-while-limited"):
            self.watch_for_ban(identity, now)
        block = self.blocks.get(identity)
        if block is not None and now < block.until:
            decision = self.limiter.hit(identity, plan, now, refuse=True)
            if block.moving:  # the reset every refusal announces is a window ahead of it
                decision.retry_at = math.ceil(now + self.config.minute_seconds)
                minute = decision.minute
                decision.report = replace(minute, end=decision.retry_at, used=minute.limit)
            elif math.isfinite(block.until):
                decision.retry_at = block.until
                decision.report = replace(
                    decision.report, end=block.until, used=decision.report.limit
                )
        else:
            decision = self.limiter.hit(identity, plan, now)
            if not decision.allowed and self.fault("never-resets"):
                self.blocks[identity] = Block(math.inf)
            if not decision.allowed and self.fault("reset-moves-ahead"):
                self.blocks[identity] = Block(math.inf, moving=True)
            if not decision.allowed and self.fault("retry-after-too-short"):
                # Retry-After says 1 s while the refusal lasts to the window's end, which Reset
                # states honestly; where less than that is left, a block of a minute makes
                # sure the retry after 1 s is refused (its Reset says so).
                # Only the window's first refusal may lengthen it: a later one (the retry that
                # came too early) must keep the Reset the first stated.
                until = decision.report.end
                first = self.refused_windows.get(identity) != until
                self.refused_windows[identity] = until
                if first and until - now < RETRY_AFTER_TOO_SHORT + 0.5:
                    until = now + self.config.minute_seconds
                    self.blocks[identity] = Block(until)
                    decision.report = replace(decision.report, end=until)
                decision.retry_at = until
        if self.fault("day-refused-behind-minute-headers"):
            hide_the_day(decision)
        if self.fault("minute-headers-until-day") and decision.allowed:
            decision.report = decision.minute  # Flask-Limiter's, slowapi's, express-rate-limit's
        if decision.allowed:
            self.announced_retry.pop(identity, None)
            self.early_requests.pop(identity, None)
        elif identity not in self.announced_retry and decision.retry_at is not None:
            self.announced_retry[identity] = decision.retry_at + self.retry_after_padding()
        return decision

    def watch_for_ban(self, identity: str, now: float) -> None:
        """A caller that sends three requests before its announced retry time is banned."""
        retry_at = self.announced_retry.get(identity)
        if retry_at is None or now >= retry_at - 0.05:
            if retry_at is not None:
                self.announced_retry.pop(identity)
            return
        self.early_requests[identity] = self.early_requests.get(identity, 0) + 1
        if self.early_requests[identity] >= 3:
            until = now + 10 * self.config.minute_seconds
            self.blocks[identity] = Block(until)
            self.announced_retry[identity] = until

    def retry_after_padding(self) -> int:
        return 3 if self.variant("retry-after-conservative") else 0

    async def dispatch(self, request: Request, route: Route) -> Response:
        if route.name == "categories":
            if request.method == "POST":
                return await self.create_category(request)
            return self.list_categories()
        if route.name == "pets":
            pet = None if self.variant("unknown-pets") else PETS.get(route.params["petId"])
            if pet is None:
                return self.error(404, "not_found", "No pet with that id.")
            return self.json(pet)
        return self.json(ORDERS)

    # --- categories ---------------------------------------------------------------------------

    def list_categories(self) -> Response:
        items = [self.render_category(category) for category in self.store.listing()]
        if self.fault("list-wrapped-in-object"):
            return self.json({"items": items, "total": len(items)})
        media = "text/plain" if self.fault("list-text-plain") else None
        return self.json(items, media_type=media)

    async def create_category(self, request: Request) -> Response:
        body = await read_body(request)
        if body is None:
            if self.fault("oversized-body-500"):
                raise Crash("request body too large for the buffer")
            if self.variant("oversized-413-vs-400"):
                return self.error(400, "payload_too_large", "The body is over 64 KiB.")
            return self.error(413, "payload_too_large", "The body is over 64 KiB.")
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        plain_text_name = media == "text/plain" and self.fault("plain-text-body-as-name")
        if media != "application/json" and not self.parses_any_media_type() and not plain_text_name:
            status = 415 if self.variant("content-type-415") else 400
            return self.error(status, "unsupported_media_type", "Send application/json.")
        if not body.strip():
            return self.invalid("invalid_body", "A NewCategory body is required.", "missing")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as error:
            if self.fault("malformed-json-500"):
                raise Crash("json decode") from error
            if plain_text_name:
                data = {"name": body.decode("utf-8", errors="replace").strip()}
            elif self.variant("json-whatever-content-type"):
                return self.invalid("parse_error", f"JSON parse error - {error}", "json_invalid")
            else:
                return self.invalid("invalid_body", "The body is not valid JSON.", "json_invalid")
        if (
            self.fault("array-body-accepted")
            and isinstance(data, list)
            and data
            and isinstance(data[0], dict)
        ):
            data = data[0]
        if not isinstance(data, dict):
            return self.invalid("invalid_body", "The body must be a JSON object.", "model_type")
        if "name" in data:
            name = data["name"]
        elif self.fault("missing-name-accepted"):
            name = ""
        else:
            return self.invalid("missing_field", "The field name is required.", "missing")
        if isinstance(name, dict) and self.fault("object-name-crashes"):
            raise Crash("'dict' object has no attribute 'strip'")
        if (
            self.fault("number-name-coerced")
            and isinstance(name, int | float)
            and not isinstance(name, bool)
        ):
            name = str(name)
        if not isinstance(name, str):
            return self.invalid("invalid_value", "The field name must be a string.", "string_type")
        description = data.get("description")
        if description is None and "description" in data:
            if not self.fault("null-description-accepted"):
                return self.invalid(
                    "invalid_value", "The field description must be a string.", "string_type"
                )
        elif description is not None and not isinstance(description, str):
            return self.invalid(
                "invalid_value", "The field description must be a string.", "string_type"
            )
        if not encodable(name) or (description is not None and not encodable(description)):
            return self.invalid("invalid_value", "Text must be valid Unicode.", "string_type")
        refusal = self.refuse_name(name)
        if refusal is not None:
            return self.error(400, "invalid_value", refusal)
        if self.fault("emoji-name-500") and any(ord(char) > 0xFFFF for char in name):
            raise Crash("Incorrect string value for column 'name'")
        if self.fault("long-description-500") and description and len(description) > 1000:
            raise Crash("value too long for type character varying(1000)")
        category = self.store.add(*self.as_stored(name, description))
        status = 201
        if self.fault("create-returns-200"):
            status = 200
        elif self.fault("create-returns-202"):
            status = 202
        return self.json(self.render_category(category), status=status)

    def refuse_name(self, name: str) -> str | None:
        if self.variant("name-length-limit") and (not name.strip() or len(name) > 32):
            return "The name must be 1 to 32 characters and not blank."
        if self.fault("short-name-limit") and len(name) > 20:
            return "The name must be at most 20 characters."
        if self.fault("unicode-names-rejected") and not name.isascii():
            return "The name may only contain ASCII characters."
        return None

    def as_stored(self, name: str, description: str | None) -> tuple[str, str | None]:
        if self.fault("name-lowercased"):
            name = name.lower()
        if self.fault("description-dropped"):
            description = None
        if self.fault("non-ascii-mangled"):
            name = name.encode("ascii", "replace").decode("ascii")
            if description is not None:
                description = description.encode("ascii", "replace").decode("ascii")
        return name, description

    def render_category(self, category: dict[str, Any]) -> dict[str, Any]:
        rendered = dict(category)
        if self.fault("id-as-string"):
            rendered["id"] = str(rendered["id"])
        if self.variant("extra-fields"):
            rendered["createdAt"] = "2026-01-01T00:00:00Z"
            rendered["petCount"] = 0
        return rendered

    # --- responses ----------------------------------------------------------------------------

    def json(self, data: Any, status: int = 200, media_type: str | None = None) -> Response:
        content = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        return Response(content, status, media_type=media_type or self.json_media_type())

    def json_media_type(self) -> str:
        if self.variant("charset-parameter"):
            return "application/json; charset=utf-8"
        return "application/json"

    def parses_any_media_type(self) -> bool:
        """Does the server read every body as JSON, whatever its Content-Type says?"""
        return self.fault("content-type-ignored") or self.variant("json-whatever-content-type")

    def invalid(self, code: str, message: str, pydantic_type: str) -> Response:
        """A body that breaks the NewCategory schema: 400, or 422 under validation-422."""
        if self.fault("validation-422"):
            detail = [{"type": pydantic_type, "loc": ["body"], "msg": message}]
            return self.json({"detail": detail}, status=422)
        return self.error(400, code, message)

    def error(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> Response:
        if self.variant("other-error-codes"):
            code, message = ALTERNATIVE_ERRORS.get(code, (code, message))
        body: dict[str, Any] = {"code": code, "message": message, "status": status}
        if self.fault("error-code-integer"):
            body["code"] = status
        if self.fault("error-status-as-string"):
            body["status"] = str(status)
        if self.fault("error-status-mismatch") and status == 400:
            body["status"] = 422
        if self.fault("error-without-code"):
            del body["code"]
        if self.fault("error-without-message"):
            del body["message"]
        if self.variant("extra-fields"):
            body["requestId"] = uuid.uuid4().hex
            body["documentation"] = "https://petstore.example.com/docs/errors"
        media = "text/plain" if status == 400 and self.fault("error-text-plain") else None
        response = self.json(body, status=status, media_type=media)
        response.headers.update(headers or {})
        return response

    def unauthorized(self, failure: str) -> Response:
        if self.fault("forbidden-403-for-bad-key"):
            return self.error(403, "forbidden", "This key may not use the service.")
        if self.fault("unauthorized-plain-text"):
            response = Response("Unauthorized", 401, media_type="text/plain")
        elif failure == "missing":
            response = self.error(401, "missing_api_key", "Send Authorization: Bearer <key>.")
        else:
            response = self.error(401, "invalid_api_key", "The API key is not valid.")
        challenge = self.challenge(failure)
        if challenge is not None:
            response.headers["WWW-Authenticate"] = challenge
        return response

    def challenge(self, failure: str) -> str | None:
        if self.fault("no-www-authenticate"):
            return None
        if self.fault("www-authenticate-basic-challenge"):
            return 'Basic realm="petstore"'
        if not self.variant("www-authenticate-params"):
            return 'Bearer realm="petstore"'
        bearer = 'Bearer realm="petstore"'
        if failure == "invalid":
            bearer += ', error="invalid_token", error_description="The API key is not valid"'
        return bearer + ', Basic realm="petstore-admin", charset="UTF-8"'

    def server_error(self) -> Response:
        return Response("Internal Server Error", 500, media_type="text/plain")

    def too_many_requests(self, decision: Decision, now: float) -> Response:
        status = 503 if self.fault("limit-503") else 429
        response = self.error(status, "rate_limited", "Too many requests: back off and retry.")
        if self.fault("429-without-error-body"):
            response = Response(status_code=status)
        if self.fault("no-retry-after") or self.fault("headerless-no-day"):
            return response
        retry_at = decision.retry_at if decision.retry_at is not None else now + 1
        delay = max(1, math.ceil(retry_at - now)) + self.retry_after_padding()
        if self.fault("retry-after-too-short"):
            value = str(RETRY_AFTER_TOO_SHORT)
        elif self.fault("retry-after-fractional"):
            value = f"{max(retry_at - now, 0.001):.3f}"
        elif self.variant("retry-after-http-date"):
            value = formatdate(math.ceil(now) + delay, usegmt=True)
        else:
            value = str(delay)
        response.headers["Retry-After"] = value
        return response

    def add_rate_limit_headers(
        self, response: Response, decision: Decision, now: float, *, unknown_path: bool
    ) -> None:
        status = response.status_code
        if (
            (status == 401 and self.fault("no-ratelimit-headers-on-401"))
            or (status == 400 and self.fault("no-ratelimit-headers-on-400"))
            or (status in (429, 503) and self.fault("no-ratelimit-headers-on-429"))
            or (status == 404 and unknown_path and self.fault("no-ratelimit-headers-on-404"))
            or (status == 404 and unknown_path and self.fault("framework-html-404"))
            or self.fault("headerless-no-day")
        ):
            return
        window: Window = decision.day if self.variant("day-limit-headers") else decision.report
        limit, remaining = window.limit, window.remaining
        reset: int | float = math.ceil(window.end)
        if self.fault("reset-with-fraction"):
            reset = round(window.end, 7)
        elif self.fault("reset-in-milliseconds"):
            reset = math.ceil(window.end * 1000)
        elif self.fault("reset-as-delay"):
            reset = math.ceil(window.end - now)
        elif self.fault("reset-window-start"):
            reset = math.floor(decision.day.start)
        elif self.fault("reset-local-time"):
            reset -= 3600
        if self.fault("remaining-not-counting"):
            remaining = limit - 1
        elif self.fault("remaining-counts-double"):
            remaining = max(0, limit - 2 * window.used)
        if self.fault("remaining-one-too-high") and decision.allowed:
            remaining = min(limit, remaining + 1)  # counted after answering, not before
        if self.fault("remaining-negative") and not decision.allowed:
            remaining = -1
        if self.fault("limit-not-plan"):
            limit, remaining = 100, min(remaining, 100)
        values: Iterable[int | float] = (limit, remaining, reset)
        if self.fault("headers-as-floats"):
            values = (float(value) for value in values)
        names = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
        for name, value in zip(names, values, strict=True):
            response.headers[name] = str(value)
        self.answers += 1
        if self.fault("remaining-bad-numbers") and self.answers % 3 == 0:
            # Every third answer: a counter gone below zero, or one no number holds.
            bad = BAD_REMAINING[self.answers // 3 % len(BAD_REMAINING)]
            response.headers["X-RateLimit-Remaining"] = bad

    def add_deprecation_headers(self, response: Response) -> None:
        if not self.fault("no-deprecation-header"):
            deprecation = "true" if self.fault("deprecation-true") else DEPRECATION
            response.headers["Deprecation"] = deprecation
        if not self.fault("no-sunset-header"):
            sunset = SUNSET_PAST if self.fault("sunset-in-past") else SUNSET
            response.headers["Sunset"] = SUNSET_ISO if self.fault("sunset-iso-date") else sunset
            response.headers.append("Link", SUNSET_LINK)


async def read_body(request: Request) -> bytes | None:
    """The body, or None when it is over MAX_BODY (the rest is drained, not kept)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= MAX_BODY:
            chunks.append(chunk)
        elif size > DRAIN_LIMIT:
            break
    return None if size > MAX_BODY else b"".join(chunks)


def hide_the_day(decision: Decision) -> None:
    """The day-refused-behind-minute-headers fault: the headers always report the minute, and a
    refusal for the day says to retry when the minute resets, while the minute has room."""
    decision.report = decision.minute
    if not decision.allowed and decision.day.remaining == 0:
        decision.retry_at = decision.minute.end


def body_size(request: Request) -> int:
    try:
        return int(request.headers.get("content-length", "0"))
    except ValueError:
        return 0


def encodable(text: str) -> bool:
    """False for strings holding lone surrogates (valid JSON escapes, but not Unicode text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def base_path(faults: Iterable[str]) -> str:
    """Where the interface is served: /v1, or /api for the fault that drops the version."""
    return "/api" if "served-under-api" in faults else "/v1"


def build_app(config: DoubleConfig) -> ASGIApp:
    app: ASGIApp = PetStoreDouble(config)
    if "gzip" in config.variants:
        app = GZipMiddleware(app, minimum_size=0)
    hostile = config.faults & set(HOSTILE)
    return HostileTarget(app, hostile) if hostile else app
