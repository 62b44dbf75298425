"""The Error object (code, message, status) and the JSON responses that carry it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
