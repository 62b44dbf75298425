"""The reference application: routes under /v1, and the middleware around them (which answers
errors too)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from starlette.routing import Route, Router
from starlette.types import ASGIApp

from conformance.reference.accesslog import AccessLog
from conformance.reference.auth import KeyRing
from conformance.reference.categories import Categories
from conformance.reference.limiting import BanRule, RequestLimits
from conformance.reference.middleware import RateLimitMiddleware
from conformance.reference.pets import get_pet, list_orders
from conformance.reference.plans import Plan
from conformance.reference.storage import CategoryStore, category_store

logger = logging.getLogger("petstore.reference")

SETTINGS_ENVIRONMENT_VARIABLE = "PETSTORE_REFERENCE_SETTINGS"


@dataclass(frozen=True)
class Settings:
    keys: KeyRing
    minute_seconds: int = 60
    database: str | None = None
    rate_limit_storage: str = "memory://"
    ban: BanRule | None = None  # rule 5, only when asked for (--ban-after, --ban-seconds)

    def to_environment(self) -> str:
        """The settings as JSON for worker processes: key digests only, never the keys."""
        return json.dumps(
            {
                "keys": [
                    [digest, plan.name, plan.per_minute, plan.per_day]
                    for digest, plan in self.keys.digests()
                ],
                "minute_seconds": self.minute_seconds,
                "database": self.database,
                "rate_limit_storage": self.rate_limit_storage,
                "ban": [self.ban.after, self.ban.seconds] if self.ban else None,
            }
        )

    @classmethod
    def from_environment(cls, text: str) -> Settings:
        raw = json.loads(text)
        keys = KeyRing((digest, Plan(name, rpm, rpd)) for digest, name, rpm, rpd in raw["keys"])
        return cls(
            keys=keys,
            minute_seconds=raw["minute_seconds"],
            database=raw["database"],
            rate_limit_storage=raw["rate_limit_storage"],
            ban=BanRule(*raw["ban"]) if raw.get("ban") else None,
        )


def create_app(
    settings: Settings,
    *,
    access_log: bool = True,
    limits: RequestLimits | None = None,
    categories: CategoryStore | None = None,
) -> ASGIApp:
    """The application; `access_log=False` leaves out the line per request on stderr. `limits`
    and `categories` replace the limiter and the store the settings describe (client scenarios
    script their own)."""
    if categories is None:
        categories = category_store(settings.database)
    if limits is None:
        limits = RequestLimits(settings.rate_limit_storage, settings.minute_seconds, settings.ban)
    log = AccessLog() if access_log else None

    @asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        await limits.open()
        await categories.open()
        try:
            yield
        finally:
            await categories.close()
            if log is not None:
                log.flush()

    # Starlette's router alone: the middleware answers what a request raises (errors.answer_to),
    # where a Starlette application would add two layers more that every response passes.
    # Whole paths rather than a Mount("/v1"): the same answers, one router fewer per request.
    api = Router(
        routes=[
            Route("/v1/categories", Categories(categories), methods=["GET", "POST"]),
            Route("/v1/pets/{petId}", get_pet, methods=["GET"]),
            Route("/v1/store/orders", list_orders, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    return RateLimitMiddleware(api, settings.keys, limits, log)


def create_app_from_environment() -> ASGIApp:
    """The factory uvicorn's worker processes call (`--workers N`)."""
    return create_app(Settings.from_environment(os.environ[SETTINGS_ENVIRONMENT_VARIABLE]))
