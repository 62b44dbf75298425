"""Reading and validating the body of POST /categories.

The schema is spec/openapi.yaml's own `components/schemas/NewCategory`, checked with JSON
Schema Draft 2020-12: one source of truth. Whatever the client sends, the answer is 400 (or
413 for a body over `MAX_BODY_BYTES`) with an Error body, never a 422 or a 5xx.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from starlette.requests import ClientDisconnect, Request

from conformance.reference.errors import ApiError
from conformance.spec import component_schema

MAX_BODY_BYTES = 64 * 1024
_MAX_MESSAGE_CHARS = 300


@cache
def new_category_validator() -> Draft202012Validator:
    schema = component_schema("NewCategory")
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _too_large() -> ApiError:
    return ApiError(413, "payload_too_large", f"The request body exceeds {MAX_BODY_BYTES} bytes.")


def _bad_request(code: str, message: str) -> ApiError:
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[: _MAX_MESSAGE_CHARS - 3] + "..."
    return ApiError(400, code, message)


def check_declared_length(request: Request) -> None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()


def check_json_media_type(request: Request) -> None:
    content_type = request.headers.get("content-type")
    if content_type is None:
        raise _bad_request(
            "unsupported_media_type", "The body must be sent as Content-Type: application/json."
        )
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise _bad_request(
            "unsupported_media_type",
            f"The body must be sent as application/json, not {content_type[:80]!r}.",
        )


async def read_body(request: Request) -> bytes:
    """The whole body, read in chunks and refused as soon as it grows past the limit."""
    check_declared_length(request)
    chunks = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise _bad_request("incomplete_body", "The client disconnected mid-body.") from None
    return b"".join(chunks)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(body: bytes) -> Any:
    if not body.strip():
        raise _bad_request("missing_body", "A JSON NewCategory body is required.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad_request("malformed_json", "The body is not valid UTF-8.") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise _bad_request("malformed_json", f"The body is not valid JSON: {exc}") from None


def validate_new_category(document: Any) -> tuple[str, str | None]:
    """(name, description) of a valid NewCategory, or the 400 that explains what is wrong."""
    if not isinstance(document, dict):
        raise _bad_request(
            "invalid_body", f"The body must be a JSON object, not {_json_type(document)}."
        )
    validator = new_category_validator()
    errors = sorted(validator.iter_errors(document), key=lambda error: list(error.path))
    if errors:
        error = errors[0]
        where = "/".join(str(part) for part in error.absolute_path) or "body"
        raise _bad_request("invalid_body", f"{where}: {error.message}")
    return document["name"], document.get("description")


async def new_category_from(request: Request) -> tuple[str, str | None]:
    check_declared_length(request)
    check_json_media_type(request)
    return validate_new_category(parse_json(await read_body(request)))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "a value of another type"
