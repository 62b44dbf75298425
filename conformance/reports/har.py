"""`exchanges.har`: every request and response of a run as an HTTP Archive (HAR 1.2), the form a
browser's network panel opens. Built from the client's recorded exchanges, which are already
redacted (`Authorization: Bearer ***`, keys replaced wherever they appeared)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from conformance import __version__
from conformance.client import RESPONSE_BODY_LIMIT

if TYPE_CHECKING:
    from conformance.client import Exchange

HTTP_VERSION = "HTTP/1.1"  # httpx speaks HTTP/1.1 unless asked for HTTP/2, which we never do


def started(exchange: Exchange) -> str:
    moment = datetime.datetime.fromtimestamp(exchange.started_at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def name_values(pairs: Iterable[tuple[str, str]]) -> list[dict]:
    return [{"name": name, "value": value} for name, value in pairs]


def byte_length(text: str | None) -> int:
    return len(text.encode("utf-8")) if text else 0


def request_entry(exchange: Exchange) -> dict:
    body = exchange.request_body
    entry = {
        "method": exchange.method,
        "url": exchange.url,
        "httpVersion": HTTP_VERSION,
        "cookies": [],
        "headers": name_values(exchange.request_headers.items()),
        "queryString": name_values(parse_qsl(urlsplit(exchange.url).query, True)),
        "headersSize": -1,
        "bodySize": byte_length(body),
    }
    if body is not None:
        content_type = exchange.request_header("Content-Type") or ""
        entry["postData"] = {"mimeType": content_type, "params": [], "text": body}
    return entry


def response_entry(exchange: Exchange) -> dict:
    text = exchange.response_body
    declared = exchange.header("Content-Length")
    wire_size = int(declared) if declared and declared.isdigit() else -1
    content = {"size": byte_length(text), "mimeType": exchange.header("Content-Type") or ""}
    content["text"] = text
    if len(text) >= RESPONSE_BODY_LIMIT:
        # The client keeps the first characters of a long body: say so rather than pretend.
        content["comment"] = f"body cut to its first {RESPONSE_BODY_LIMIT} characters"
    try:
        status_text = HTTPStatus(exchange.status).phrase
    except ValueError:
        status_text = ""
    return {
        "status": exchange.status,
        "statusText": status_text,
        "httpVersion": HTTP_VERSION,
        "cookies": [],
        "headers": name_values(exchange.response_headers),
        "content": content,
        "redirectURL": exchange.header("Location") or "",
        "headersSize": -1,
        "bodySize": wire_size,
    }


def entry(exchange: Exchange) -> dict:
    milliseconds = round(exchange.elapsed * 1000, 3)
    return {
        "startedDateTime": started(exchange),
        "time": milliseconds,
        "request": request_entry(exchange),
        "response": response_entry(exchange),
        "cache": {},
        # The whole time as waiting: the client measures request to response, nothing finer.
        "timings": {"send": 0, "wait": milliseconds, "receive": 0},
        "_keyLabel": exchange.key_label,  # which key ("main", "spare", "none"), never the key
        "comment": f"exchange #{exchange.id}, key {exchange.key_label}",
    }


def archive(exchanges: Iterable[Exchange]) -> dict:
    """The HAR document; entries in the order they were sent (a burst may record them out of
    order)."""
    ordered = sorted(exchanges, key=lambda e: (e.started_at, e.id))
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "petstore-conformance", "version": __version__},
            "entries": [entry(exchange) for exchange in ordered],
        }
    }


def write(path: Path, exchanges: Iterable[Exchange]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        json.dump(archive(exchanges), out, ensure_ascii=False, separators=(",", ":"))
        out.write("\n")
