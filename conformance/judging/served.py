"""What the document says of an answer that served the request, judged on every response of a
documented operation, whichever test or probe sent it.

A probe that reads only a listing's headers (the main key's request after the spare key's 429,
the three requests of a detour) still got a listing: a 200 of GET /categories must be a JSON
array of Categories within the body bound (CAT-LIST-200, CAT-SCHEMA), labelled JSON
(CAT-JSON-MEDIA-TYPE, a SHOULD); the 201 of POST /categories, the created Category (CAT-SCHEMA).
A success with another status than the documented one fails GEN-DOCUMENTED-STATUS. The run's
client calls `check_success` on every exchange, beside conformance.judging.response_checks.

Judged here are only the answers that served the run's own key, presented as the document says
(`Bearer`): a refusal (429, 503, a front's 403) is not a 200, a 4xx or 5xx has checks of its
own, and a request sent wrong on purpose (another scheme, a body that is no NewCategory) is its
test's to judge. The shapes of pets and orders are not shown: their bodies are not judged.
A burst's success whose body was kept only in part, or still encoded, is judged by its status
and media type only; a burst's answers alike (the same status, media type and body) are judged
once.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

from conformance import spec, strict_json
from conformance.httpclient.client import Exchange
from conformance.httpclient.recording import REQUEST_BODY_LIMIT
from conformance.judging.categories import (
    check_json_media_type,
    created_category,
    listed_categories,
)
from conformance.judging.checks import expect
from conformance.judging.response_checks import RunFacts, authenticated_as_key

LIST, CREATE = ("GET", "/categories"), ("POST", "/categories")
DOCUMENTED_SUCCESS = {LIST: 200, CREATE: 201}
OPERATION_NAMES = {LIST: "listCategories", CREATE: "createCategory"}


class _LastBurstSuccess:
    """The burst's success judged last: its thousands of answers alike are judged once."""

    exchange: Exchange | None = None


def check_success(exchange: Exchange, settings: RunFacts) -> None:
    """Judge a success of GET or POST /categories on the run's key against the document."""
    if not 200 <= exchange.status < 300 or not authenticated_as_key(exchange, settings):
        return
    if exchange.burst and judged_alike(exchange):
        return
    operation = (exchange.method, relative_path(exchange.url, settings.base_url))
    if operation not in DOCUMENTED_SUCCESS:
        return
    if operation == CREATE and not a_new_category(exchange):
        return  # a body sent wrong on purpose: its test judges what it got
    documented = DOCUMENTED_SUCCESS[operation]
    if not expect(
        "GEN-DOCUMENTED-STATUS",
        exchange.status == documented,
        f"{OPERATION_NAMES[operation]} answers {documented} where it serves the request, "
        f"got {exchange.status}",
        exchange,
    ):
        return
    check_json_media_type(exchange, f"{exchange.method} /categories")
    if exchange.body_cut:
        return  # only the start of it was kept, or it came encoded: not the body to judge
    if operation == LIST:
        listed_categories(exchange)
        return
    _, problem = created_category(exchange)
    expect("CAT-SCHEMA", problem is None, problem or "the created Category", exchange)


def judged_alike(exchange: Exchange) -> bool:
    """Whether the burst's success judged last was this one's like: the same status, media type
    and body text (the recorder shares one text among answers alike). Else it is the last."""
    last = _LastBurstSuccess.exchange
    if (
        last is not None
        and last.status == exchange.status
        and last.header("Content-Type") == exchange.header("Content-Type")
        and exchange.same_body(last)
    ):
        return True
    _LastBurstSuccess.exchange = exchange
    return False


def relative_path(url: str, base_url: str) -> str | None:
    """The path of `url` below the base address (`/categories`), None when outside it."""
    path, base = urlsplit(url).path, urlsplit(base_url).path.rstrip("/")
    return path[len(base) :] if path.startswith(base + "/") else None


def a_new_category(exchange: Exchange) -> bool:
    """Whether the request sent a NewCategory as the document asks: a JSON object of the
    schema, as application/json (a body cut short in the record cannot be told)."""
    content_type = (exchange.request_header("Content-Type") or "").split(";", 1)[0]
    body = exchange.request_body
    if content_type.strip().lower() != "application/json" or body is None:
        return False
    if len(body) >= REQUEST_BODY_LIMIT:
        return False
    try:
        value = strict_json.loads(body)
    except ValueError:
        return False
    return not any(_new_category_validator().iter_errors(value))


@cache
def _new_category_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(spec.component_schema("NewCategory"))
