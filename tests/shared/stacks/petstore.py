"""The Pet Store logic the apps on real rate-limit libraries share, free of any web framework.

Each app (`flask_limiter_app`, `slowapi_app`) wires this into its framework and leaves the
limiting to its library, configured as a vendor would: "careful" (limits per key and plan, the
library's own rate-limit headers on) or "quick-start" (as the library's documentation starts).
The day profile's configurations change only the day: "careful-day" adds it as the library's
documentation writes it ("60 per minute;1000 per day", the minute shortened, the day a real
day), "careful-no-day" leaves it out; "sliding-day" and "sliding-no-day" are the same on the
library's moving window (a sliding log: Reset is the oldest request's time plus the window).
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PLANS = {"free": (60, 1_000), "pro": (300, 10_000), "business": (1_000, 100_000)}
MINUTES_A_DAY = 1_440
DEPRECATION_HEADERS = {
    "Deprecation": "@1767225600",  # 2026-01-01T00:00:00Z
    "Sunset": "Sat, 01 Jan 2028 00:00:00 GMT",
    "Link": '<https://petstore.example.com/docs/deprecations#pets>; rel="sunset"',
}
CHALLENGE = 'Bearer realm="petstore"'
PETS = {
    "1": {"id": 1, "name": "Rex", "status": "available"},
    "2": {"id": 2, "name": "Tom", "status": "pending"},
}
ORDERS = [{"id": 1, "petId": 1, "quantity": 1, "status": "placed", "complete": False}]
MAX_BODY = 64 * 1024
CONFIGURATIONS = (
    "careful",
    "careful-day",
    "careful-no-day",
    "sliding-day",
    "sliding-no-day",
    "quick-start",
)


@dataclass(frozen=True)
class Options:
    keys: dict[str, tuple[int, int]]  # key -> (per minute, per day)
    minute_seconds: int
    configuration: str
    port: int
    hour_seconds: int = 3_600
    http: str = "auto"  # uvicorn's HTTP protocol, for the apps it serves

    def limits(self, key: str | None) -> str:
        """The key's plan as a limits string on this minute; a caller without a valid key is
        held to the free plan, per address. "careful" scales its day to the minute (1,440 of
        them); the day profile's configurations keep a real day, or have none."""
        per_minute, per_day = self.keys.get(key or "", PLANS["free"])
        minute = f"{per_minute} per {self.minute_seconds} seconds"
        if self.configuration.endswith("-no-day"):
            return minute
        if self.configuration.endswith("-day"):
            return f"{minute};{per_day} per day"
        return f"{minute};{per_day} per {self.minute_seconds * MINUTES_A_DAY} seconds"

    @property
    def careful(self) -> bool:
        """Limits per key and plan with the library's headers: every configuration but the
        quick-start."""
        return self.configuration != "quick-start"

    @property
    def strategy(self) -> str:
        """The library's strategy (Flask-Limiter's and slowapi's names, from `limits`)."""
        return "moving-window" if self.configuration.startswith("sliding") else "fixed-window"

    def quick_start_limits(self) -> list[str]:
        """Flask-Limiter's quick-start figures ("200 per day", "50 per hour") on this hour: a
        test shortens it to seconds, or the per-address refusal lasts its hour."""
        hour = self.hour_seconds
        return [f"200 per {24 * hour} seconds", f"50 per {hour} seconds"]


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--key", action="append", default=[], help="KEY:PLAN or KEY:enterprise:RPM:RPD"
    )
    parser.add_argument("--minute-seconds", type=int, default=60)
    parser.add_argument("--configuration", choices=CONFIGURATIONS, default="careful")
    parser.add_argument("--hour-seconds", type=int, default=3_600, help="the quick-start's hour")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--http",
        choices=("auto", "h11", "httptools"),
        default="auto",
        help="uvicorn's HTTP protocol (the slowapi app): auto takes httptools where installed",
    )
    args = parser.parse_args(argv)
    keys = {}
    for spec in args.key:
        key, plan, *custom = spec.split(":")
        keys[key] = (int(custom[0]), int(custom[1])) if plan == "enterprise" else PLANS[plan]
    return Options(
        keys, args.minute_seconds, args.configuration, args.port, args.hour_seconds, args.http
    )


def announce(name: str, port: int) -> None:
    """The line `tests.shared.servers.start_server` waits for."""
    print(f"{name} listening on http://127.0.0.1:{port}/v1", flush=True)


def error(status: int, code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "status": status}


def bearer_key(header: str | None, keys: dict[str, Any]) -> tuple[str | None, dict | None]:
    """(the key, None) for a valid `Bearer KEY`, else (None, the 401's Error body)."""
    if header is None:
        return None, error(401, "missing_api_key", "Send Authorization: Bearer <key>.")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip() in keys:
        return token.strip(), None
    return None, error(401, "invalid_api_key", "The API key is not valid.")


class Categories:
    """Categories in memory, for every thread of the server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[dict[str, Any]] = [{"id": 1, "name": "Dogs"}, {"id": 2, "name": "Cats"}]

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items)

    def create(self, body: bytes, content_type: str | None) -> tuple[int, dict[str, Any]]:
        """(201, the Category) or (400 or 413, an Error) for a POST /categories body."""
        problem = new_category_problem(body, content_type)
        if isinstance(problem, tuple):
            return problem
        with self._lock:
            category = {"id": len(self._items) + 1, **problem}
            self._items.append(category)
        return 201, category


def new_category_problem(
    body: bytes, content_type: str | None
) -> tuple[int, dict[str, Any]] | dict[str, Any]:
    """The NewCategory in `body`, or the status and Error that refuse it."""
    if len(body) > MAX_BODY:
        return 413, error(413, "payload_too_large", "The body is over 64 KiB.")
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        return 400, error(400, "unsupported_media_type", "Send application/json.")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return 400, error(400, "invalid_body", "The body is not valid JSON.")
    if not isinstance(data, dict):
        return 400, error(400, "invalid_body", "The body must be a JSON object.")
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not name.strip() or not _encodable(name):
        return 400, error(400, "invalid_value", "The field name must be a non-blank string.")
    if "description" in data and not (isinstance(description, str) and _encodable(description)):
        return 400, error(400, "invalid_value", "The field description must be a string.")
    category = {"name": name}
    if description is not None:
        category["description"] = description
    return category


def _encodable(text: str) -> bool:
    """False for lone surrogates: valid JSON escapes, but not Unicode text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
