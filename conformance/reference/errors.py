"""The Error object (code, message, status) and the JSON responses that carry it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import Response

JSON_MEDIA_TYPE = "application/json"


def dump_json(content: Any) -> bytes:
    """Serialise to UTF-8 JSON; strings the client sent are echoed exactly, whatever they hold.

    A JSON string may carry a lone surrogate (`"\\ud800"`), which UTF-8 cannot encode; such a
    document is sent with every non-ASCII character escaped instead, which is the same JSON value.
    """
    try:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class JsonResponse(Response):
    media_type = JSON_MEDIA_TYPE

    def render(self, content: Any) -> bytes:
        return dump_json(content)


class ApiError(Exception):
    """Raised anywhere in a request; answered with an Error body of the same status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "status": status}


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JsonResponse:
    return JsonResponse(error_body(status, code, message), status_code=status, headers=headers)


# Codes for the errors Starlette's router raises itself.
ROUTING_CODES = {404: "not_found", 405: "method_not_allowed"}


def answer_to(exc: Exception, method: str) -> JsonResponse:
    """The Error answer to an exception a request raised: an ApiError's own, the router's 404 or
    405 (its `Allow` sorted: Starlette builds it from a set), and a 500 for anything else."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.code, exc.message, exc.headers)
    if isinstance(exc, HTTPException):
        code = ROUTING_CODES.get(exc.status_code, "http_error")
        message = {
            404: "No such resource.",
            405: f"Method {method} is not allowed here.",
        }.get(exc.status_code, str(exc.detail))
        headers = dict(exc.headers or {})
        if "Allow" in headers:
            headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
        return error_response(exc.status_code, code, message, headers)
    return error_response(500, "internal_error", "The server failed to answer this request.")
