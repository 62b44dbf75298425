"""The named faults and variants the test double can be started with.

A fault is a realistic implementer's mistake that breaks exactly one catalogue requirement (the
one named here; a few unavoidably break a neighbour too). The checker run against a double with
that fault must list the requirement among its failed requirements. A variant is a legitimate
difference the interface document leaves open (docs/design.md, "Strictness"): the checker must
accept it.

This module is plain data, importable without side effects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    requirement: str
    description: str
    options: tuple[str, ...] = ()  # what the checker needs to see it (an opt-in)
    hint: str | None = None  # words the failure's hint must carry
    minute_seconds: float | None = None  # the double's minute, where the default is too short


FAULTS: dict[str, Fault] = {
    # --- Authentication ------------------------------------------------------------------------
    "accept-any-bearer-token": Fault(
        "AUTH-INVALID-KEY-401",
        "Any non-empty bearer token is served (unknown tokens get the free plan).",
    ),
    "orders-without-auth": Fault(
        "AUTH-MISSING-KEY-401",
        "GET /store/orders without an Authorization header is served as an anonymous guest.",
    ),
    "pets-without-auth": Fault(
        "AUTH-MISSING-KEY-401",
        "GET /pets/{petId} without an Authorization header is served as an anonymous guest.",
    ),
    "key-in-query-accepted": Fault(
        "AUTH-INVALID-KEY-401",
        "A valid key in the query string (?api_key=KEY) without any header is served.",
        options=("--allow-key-in-url",),
    ),
    "basic-scheme-accepted": Fault(
        "AUTH-INVALID-KEY-401",
        "The scheme is not checked: `Basic KEY` (any scheme followed by a valid key) is served.",
    ),
    "key-without-scheme-accepted": Fault(
        "AUTH-INVALID-KEY-401",
        "`Authorization: KEY` (the bare key, no scheme) is served.",
    ),
    "scheme-case-sensitive": Fault(
        "AUTH-SCHEME-CASE-INSENSITIVE",
        "Only the exact spelling `Bearer` is accepted; `bearer KEY` gets 401.",
    ),
    "forbidden-403-for-bad-key": Fault(
        "AUTH-INVALID-KEY-401",
        "A missing or invalid key is answered 403 (with an Error body) instead of 401, so no "
        "401 is ever sent; such callers are limited per address at a guest rate (100 per "
        "minute), not by the plan of the key they sent.",
    ),
    "no-www-authenticate": Fault(
        "AUTH-WWW-AUTHENTICATE",
        "401 responses carry no WWW-Authenticate header.",
    ),
    "www-authenticate-basic-challenge": Fault(
        "AUTH-WWW-AUTHENTICATE",
        '401 responses challenge with `WWW-Authenticate: Basic realm="petstore"`.',
    ),
    "unauthorized-plain-text": Fault(
        "ERR-MEDIA-TYPE",
        "401 responses are the text/plain body `Unauthorized` (a framework default).",
    ),
    "empty-bearer-crashes": Fault(
        "AUTH-INVALID-KEY-401",
        "`Authorization: Bearer` with an empty token crashes the handler: 500 where the 401 "
        "is due (the request's own requirement, not GEN-NO-SERVER-ERROR too).",
        hint="failed on this input",
    ),
    "oversized-key-500": Fault(
        "GEN-NO-SERVER-ERROR",
        "An Authorization header over 1 KiB overflows the key lookup's buffer: 500, where an "
        "invalid key of any length is a 401.",
    ),
    # --- Validation ----------------------------------------------------------------------------
    "missing-name-accepted": Fault(
        "VAL-MISSING-FIELD-400",
        'A NewCategory without `name` (including `{}`) is created with the name "".',
    ),
    "number-name-coerced": Fault(
        "VAL-INVALID-VALUE-400",
        'A number given as `name` is coerced to a string (123 is stored as "123"): 201.',
    ),
    "null-description-accepted": Fault(
        "VAL-INVALID-VALUE-400",
        '`"description": null` is accepted (the category is created without a description).',
    ),
    "validation-422": Fault(
        "VAL-MISSING-FIELD-400",
        'Body schema violations answer 422 with a FastAPI-style {"detail": [...]} body.',
    ),
    "malformed-json-500": Fault(
        "VAL-MALFORMED-BODY-400",
        "A body that is not valid JSON crashes the handler: 500.",
    ),
    "array-body-accepted": Fault(
        "VAL-MALFORMED-BODY-400",
        "A JSON array whose first item is an object creates that object's category.",
    ),
    "plain-text-body-as-name": Fault(
        "VAL-MALFORMED-BODY-400",
        "A text/plain body that is not JSON is taken as the new category's name: 201 (and a "
        "JSON text sent as text/plain is parsed, a SHOULD warning of its own).",
    ),
    "oversized-body-500": Fault(
        "GEN-NO-SERVER-ERROR",
        "A body over 64 KiB crashes the handler: 500 instead of 413.",
    ),
    "object-name-crashes": Fault(
        "VAL-INVALID-VALUE-400",
        "A JSON object given as `name` crashes the handler: 500 where the 400 is due.",
    ),
    # --- The Error object ----------------------------------------------------------------------
    "error-without-code": Fault("ERR-SCHEMA", "Error bodies have no `code` field."),
    "error-without-message": Fault("ERR-SCHEMA", "Error bodies have no `message` field."),
    "error-status-as-string": Fault(
        "ERR-SCHEMA", 'Error bodies give `status` as a string ("400").'
    ),
    "error-status-mismatch": Fault(
        "ERR-STATUS-MATCH", "400 responses say `status: 422` in their Error body."
    ),
    "error-text-plain": Fault(
        "ERR-MEDIA-TYPE", "400 responses carry their Error JSON as text/plain."
    ),
    "error-code-integer": Fault(
        "ERR-SCHEMA", "Error bodies give `code` as an integer (the HTTP status)."
    ),
    # --- Categories ----------------------------------------------------------------------------
    "create-returns-200": Fault("CAT-CREATE-201", "POST /categories answers 200 instead of 201."),
    "id-as-string": Fault("CAT-SCHEMA", 'Category ids are JSON strings ("7").'),
    "id-exceeds-int64": Fault(
        "CAT-SCHEMA", "Category ids are 128-bit UUID integers, beyond the int64 range."
    ),
    "ids-repeat": Fault(
        "CAT-ID-UNIQUE", "Ids come from a small recycled pool (count % 5 + 1): they collide."
    ),
    "name-lowercased": Fault("CAT-ECHO", "Names are stored lower-cased."),
    "description-dropped": Fault(
        "CAT-ECHO", "The description is not stored; categories come back without it."
    ),
    "non-ascii-mangled": Fault(
        "CAT-ECHO",
        "Non-ASCII characters of names and descriptions are replaced by '?' (a legacy "
        "8-bit database column).",
    ),
    "unicode-names-rejected": Fault("CAT-NAME-RANGE", "Any non-ASCII name is refused with 400."),
    "short-name-limit": Fault(
        "CAT-NAME-RANGE", "Names over 20 characters are refused with 400 (a VARCHAR(20) column)."
    ),
    "list-forgets-new": Fault(
        "CAT-LIST-COMPLETE",
        "GET /categories serves a list cached at start: created categories never appear.",
    ),
    "list-wrapped-in-object": Fault(
        "CAT-LIST-200", 'GET /categories answers {"items": [...]} instead of an array.'
    ),
    # --- Rate-limit headers --------------------------------------------------------------------
    "no-ratelimit-headers-on-401": Fault(
        "LIM-HEADERS-PRESENT", "401 responses carry no X-RateLimit-* headers."
    ),
    "no-ratelimit-headers-on-400": Fault(
        "LIM-HEADERS-PRESENT",
        "400 responses carry no X-RateLimit-* headers (the limiter runs after validation).",
        hint="runs after the body parser",
    ),
    "no-ratelimit-headers-on-429": Fault(
        "LIM-HEADERS-PRESENT", "429 responses carry no X-RateLimit-* headers."
    ),
    "no-ratelimit-headers-on-404": Fault(
        "LIM-HEADERS-PRESENT",
        "404 responses to unknown paths carry no X-RateLimit-* headers (the limiter only "
        "wraps routed endpoints).",
    ),
    "reset-in-milliseconds": Fault(
        "LIM-RESET-UNIX-TIME", "X-RateLimit-Reset is a Unix time in milliseconds."
    ),
    "reset-as-delay": Fault(
        "LIM-RESET-UNIX-TIME", "X-RateLimit-Reset gives the seconds until the reset."
    ),
    "reset-window-start": Fault(
        "LIM-RESET-UNIX-TIME",
        "X-RateLimit-Reset gives the start of the current day window ('resets at midnight' "
        "computed for today instead of tomorrow): a time in the past.",
    ),
    "reset-local-time": Fault(
        "LIM-RESET-UNIX-TIME",
        "X-RateLimit-Reset is computed from a naive local time one hour behind UTC: an hour "
        "in the past.",
    ),
    "remaining-not-counting": Fault(
        "LIM-REMAINING-COUNTS", "X-RateLimit-Remaining is always Limit - 1."
    ),
    "remaining-counts-double": Fault(
        "LIM-REMAINING-COUNTS", "X-RateLimit-Remaining falls by two per request."
    ),
    "remaining-negative": Fault(
        "LIM-HEADERS-VALID", "429 responses show X-RateLimit-Remaining: -1."
    ),
    "limit-not-plan": Fault(
        "LIM-LIMIT-PLAN", "X-RateLimit-Limit is a hard-coded 100 whatever the plan."
    ),
    "headers-as-floats": Fault(
        "LIM-HEADERS-VALID", 'The X-RateLimit-* headers are written as floats ("59.0").'
    ),
    "remaining-bad-numbers": Fault(
        "LIM-HEADERS-VALID",
        "Every third answer carries X-RateLimit-Remaining: -1 or 1e400 (a counter read from a "
        "cache that overflowed, or not yet written), whatever the window has left; the others "
        "count right. Run on a 10 s minute: a run that took such a value for a spent window "
        "would hold its key for the reset each time (19 times a run, 211 s on a 10 s minute).",
        minute_seconds=10.0,
    ),
    # --- Enforcement ---------------------------------------------------------------------------
    "limit-plus-one": Fault(
        "LIM-429-WHEN-EXCEEDED",
        "Off by one late: one request beyond the limit is served in every window.",
    ),
    "limit-minus-one": Fault(
        "LIM-QUOTA-HONOURED",
        "Off by one early: 429 while the last response showed Remaining 1.",
    ),
    "remaining-one-too-high": Fault(
        "LIM-QUOTA-HONOURED",
        "X-RateLimit-Remaining is counted after answering: one too high, so the request sent "
        "after a `Remaining: 1` is refused (a promise broken at the window's last request).",
    ),
    "front-token-bucket": Fault(
        "LIM-QUOTA-HONOURED",
        "A limiter in front refilled continuously at the plan's figure (a token bucket per key): "
        "a quota spent at a window's end is back only as time passes, so the next window's "
        "announced quota is refused, with the front's own 429 and no rate-limit headers. On a "
        "10 s minute: on 3 s, a whole-second Retry-After alone is a third of the window the "
        "front refills in.",
        minute_seconds=10.0,
    ),
    "no-retry-after": Fault("LIM-RETRY-AFTER", "429 responses carry no Retry-After."),
    "retry-after-fractional": Fault(
        "LIM-RETRY-AFTER",
        'Retry-After is written as fractional seconds ("1.734"), neither delay-seconds '
        "nor an HTTP-date.",
    ),
    "never-resets": Fault(
        "LIM-RESET-HONEST",
        "Once a key was refused it stays refused, whatever Reset and Retry-After said.",
    ),
    "reset-moves-ahead": Fault(
        "LIM-RESET-HONEST",
        "Once a key is exhausted it stays refused, and each refusal moves X-RateLimit-Reset and "
        "Retry-After a whole window ahead: a window that never resets, whose every 429 "
        "promises the next one. Its first 429 states the true end of the window it spent.",
        minute_seconds=10.0,
    ),
    "limit-503": Fault("LIM-429-WHEN-EXCEEDED", "Over the limit answers 503 instead of 429."),
    # The day: seen only where a run spends a key's day (the day profile).
    "day-never-enforced": Fault(
        "LIM-DAY-ENFORCED",
        "Only the minute is enforced: a key is served window after window past its day's figure.",
        options=("--profile", "day"),
    ),
    "day-refuses-early": Fault(
        "LIM-DAY-HONOURED",
        "The day refuses once 90 % of its figure was served (900 of a free plan's 1,000).",
        options=("--profile", "day"),
    ),
    "day-refused-behind-minute-headers": Fault(
        "LIM-QUOTA-HONOURED",
        "The headers always report the minute: once the day is spent, a 429 says the minute "
        "has requests left, with a Retry-After of the minute's end.",
        options=("--profile", "day"),
    ),
    "headerless-no-day": Fault(
        "LIM-HEADERS-PRESENT",
        "A quick-start's limiter (Flask-Limiter's, Rack::Attack's): a minute limit only, no day, "
        "no rate-limit headers and no Retry-After; its day profile must not pass the day "
        "(tests/checker/test_day_stacks.py: without a Reset or Retry-After each window waits "
        "the plan's whole minute, so the registry runs it on the full profile).",
    ),
    "shared-counter": Fault(
        "LIM-PER-KEY", "One counter for all callers: exhausting one key limits every key."
    ),
    "limits-not-enforced": Fault(
        "LIM-429-WHEN-EXCEEDED", "Never 429: the headers count down to 0 and requests go on."
    ),
    "budget-per-endpoint": Fault(
        "LIM-PER-CALLER",
        "Each endpoint has a quota of its own (slowapi's default: limits keyed by route): a "
        "key spends 60 on /categories and still has 60 on /store/orders.",
    ),
    # --- Other endpoints and deprecation -------------------------------------------------------
    "pets-missing": Fault(
        "EP-PETS-EXISTS",
        "GET /pets/{petId} is not routed: 404 like an unknown path, no deprecation headers.",
    ),
    "orders-missing": Fault(
        "EP-ORDERS-EXISTS", "GET /store/orders is not routed: 404 like an unknown path."
    ),
    # --- Robustness ----------------------------------------------------------------------------
    "emoji-name-500": Fault(
        "CAT-CREATE-201",
        "Names with characters outside the Basic Multilingual Plane (emoji) crash the "
        "database layer (a 3-byte utf8 column): 500 where the 201 is due.",
    ),
    "long-description-500": Fault(
        "GEN-NO-SERVER-ERROR",
        "Descriptions over 1000 characters overflow the database column: 500.",
    ),
    "orders-want-api-key-header": Fault(
        "AUTH-BEARER-ACCEPTED",
        "GET /store/orders, run by another team, reads the key from `X-API-Key` and answers "
        "401 to the documented bearer token.",
    ),
    "create-returns-202": Fault(
        "GEN-DOCUMENTED-STATUS",
        "POST /categories answers 202 Accepted (creation queued), an undocumented status.",
    ),
    "served-under-api": Fault(
        "VER-V1-PREFIX",
        "The interface is served under /api instead of the versioned /v1.",
    ),
    "framework-html-404": Fault(
        "LIM-HEADERS-PRESENT",
        "An unknown path is answered with the framework's default HTML 404 page (Django's, "
        "DEBUG off), from the same server as the JSON answers and without rate-limit headers "
        "(the throttles run in the API's views only).",
        hint="default error page",
    ),
    # --- Something in front of the service ------------------------------------------------------
    "nginx-in-front": Fault(
        "LIM-HEADERS-PRESENT",
        "A stock nginx in front refuses a body over 1 MiB itself: its HTML 413 with "
        "`Server: nginx` and no rate-limit headers (client_max_body_size 1m).",
        hint="intermediary",
    ),
}

# Deviations from SHOULD requirements: a warning, exit 0, and a failure only under --strict.
WARNINGS: dict[str, Fault] = {
    "minute-headers-until-day": Fault(
        "LIM-REMAINING-NEAREST",
        "The headers report the minute while the day serves, the day only on the day's 429 "
        "(Flask-Limiter, slowapi, express-rate-limit with a minute and a day limit): allowed, "
        "but the window the day refuses in announced more than the day had left.",
        options=("--profile", "day"),
    ),
    "list-text-plain": Fault(
        "CAT-JSON-MEDIA-TYPE", "GET /categories serves its JSON array as text/plain."
    ),
    "retry-after-too-short": Fault(
        "LIM-RETRY-AFTER-HONEST",
        "Retry-After is always 1, while the refusal lasts to the window's end (at least 1.5 s "
        "more; a block of a minute where less is left); X-RateLimit-Reset tells the true end.",
    ),
    "content-type-ignored": Fault(
        "VAL-CONTENT-TYPE",
        "The Content-Type is not checked: a JSON text sent as text/plain creates the category.",
    ),
    "sunset-in-past": Fault(
        "DEP-SUNSET-FUTURE",
        "The Sunset date announced by GET /pets/{petId} has already passed.",
    ),
    "429-without-error-body": Fault(
        "ERR-429-BODY",
        "A 429 has an empty body (the document does not show the 429 body).",
    ),
    "reset-with-fraction": Fault(
        "LIM-RESET-WHOLE-SECONDS",
        "X-RateLimit-Reset carries a fraction of a second (`1795377056.8905156`, as slowapi "
        "writes it); windows really do end at that fraction.",
    ),
    "no-deprecation-header": Fault(
        "DEP-DEPRECATION-HEADER", "GET /pets/{petId} carries no Deprecation header."
    ),
    "deprecation-true": Fault(
        "DEP-DEPRECATION-HEADER", "`Deprecation: true`, the form of the old draft."
    ),
    "no-sunset-header": Fault("DEP-SUNSET-HEADER", "GET /pets/{petId} carries no Sunset header."),
    "sunset-iso-date": Fault(
        "DEP-SUNSET-HEADER", "The Sunset header is an ISO 8601 date (2028-01-01T00:00:00Z)."
    ),
}


VARIANTS: dict[str, str] = {
    "retry-after-http-date": "Retry-After is an HTTP-date instead of delay-seconds.",
    "charset-parameter": "Every JSON response is `application/json; charset=utf-8`.",
    "extra-fields": "Categories, list items and Error bodies carry extra fields.",
    "sliding-window": (
        "A sliding-window limiter: after the reset one request succeeds, not a full quota."
    ),
    "ban-while-limited": (
        "A key that sends three requests before its Retry-After time is banned: 429 with a "
        "long Retry-After (ten minutes)."
    ),
    "other-error-codes": "Different Error `code` values and messages.",
    "name-length-limit": "Blank names and names over 32 characters are refused with 400.",
    "large-int64-ids": "Ids start near 2**62.",
    "connection-close": "Every response says `Connection: close`.",
    "gzip": "Responses are gzip-encoded when the client accepts it.",
    "day-limit-headers": (
        "The X-RateLimit-* headers always report the per-day window (on a 429 caused by the "
        "minute limit too), while both limits are enforced."
    ),
    "content-type-415": "A body not sent as application/json is refused with 415 and an Error.",
    "json-whatever-content-type": (
        "Django REST framework done carefully: any body is parsed as JSON whatever its "
        "Content-Type (a JSON text sent as text/plain is created, a SHOULD warning), and a "
        "body that is not JSON is refused with 400 and DRF's `parse_error`."
    ),
    "oversized-413-vs-400": "A body over 64 KiB is refused with 400 and an Error instead of 413.",
    "retry-after-conservative": "Retry-After is three seconds longer than needed.",
    "random-ids": "Ids are random positive int64 integers, not sequential.",
    "newest-first": "GET /categories lists the newest category first.",
    "www-authenticate-params": (
        "The 401 challenge carries realm, error and error_description, and a second "
        "(Basic) challenge follows it."
    ),
    "unknown-pets": "There are no pets: every petId is 404, with the deprecation headers.",
    "seeded-categories": "A few categories exist at start.",
    "slow-responses": "Every response takes 40 ms (a busy or distant server).",
    "two-workers": (
        "Requests are handled two at a time, 45 ms each (a threaded server with two threads): "
        "one connection gets 22 a second, any number of them 44 at most."
    ),
    "late-window": (
        "Fixed windows aligned to the clock (a Redis key per minute), the run's first request "
        "2.5 s before one ends: the run's first responses show a short window."
    ),
    "sliding-minute-with-day": (
        "The minute is a sliding log (Reset: the oldest request's time plus the window, as "
        "DRF's throttles count), the day a fixed window."
    ),
}

# The variants of how the limit behaves, or of how fast and on what connections answers come:
# time can change what a run of them sees. The others differ only in what a response says, and
# the time their runs spend on a key's quota is the correct double's, already in these.
TIMED_VARIANTS = frozenset(
    {
        "ban-while-limited",
        "connection-close",
        "day-limit-headers",
        "late-window",
        "retry-after-conservative",
        "retry-after-http-date",
        "sliding-minute-with-day",
        "sliding-window",
        "slow-responses",
        "two-workers",
    }
)

# Requirements judged on each response's own headers, whenever it comes (a 429 comes in every
# run): time cannot change what their checks see. Those judged from how a key's quota was spent
# and refused, when, can.
PER_RESPONSE = frozenset(
    {
        "LIM-HEADERS-PRESENT",
        "LIM-HEADERS-VALID",
        "LIM-LIMIT-PLAN",
        "LIM-RESET-UNIX-TIME",
        "LIM-RESET-WHOLE-SECONDS",
        "LIM-RETRY-AFTER",
    }
)

# What the checker needs to see a variant (as Fault.options): the day's shapes, its day profile.
VARIANT_OPTIONS: dict[str, tuple[str, ...]] = {
    "sliding-minute-with-day": ("--profile", "day"),
}

# Hostile targets (tests/shared/double/hostile.py): servers that attack the checker's outputs rather
# than break a requirement; tests/checker/test_hostile_outputs.py holds the invariant each one
# tests.
HOSTILE: dict[str, str] = {
    "echo-credentials-encoded": (
        "Debug middleware echoes each request's credentials: the key and the Authorization "
        "value in base64 and base64url, hex, %XX of every byte, HTML character references "
        "(decimal and hex) and JSON \\u00XX escapes of every character, in headers, inside "
        "an encoded dump of the request, and in a 201's "
        "body."
    ),
    "huge-number-ids": "Category ids are written as 1e999999, a JSON number no float holds.",
    "deep-nesting": "401 Error bodies carry an extra field of arrays nested 100,000 deep.",
    "session-cookie": (
        "Every served request sets a session cookie; a request carrying it back without "
        "Authorization is served as the key it was issued to."
    ),
    "refusal-for-68-years": (
        "A 429 asks the key to wait 68 years: Retry-After and X-RateLimit-Reset say so."
    ),
    "fingerprint-user-agent": (
        "The rate-limit headers are sent only to a User-Agent containing petstore-conformance."
    ),
}


class UnknownBehaviour(ValueError):
    """A fault or variant name that is not in the registries."""


def check_names(faults: Iterable[str], variants: Iterable[str]) -> None:
    """Raise UnknownBehaviour naming the first fault or variant that does not exist."""
    for name in faults:
        if name not in FAULTS and name not in WARNINGS and name not in HOSTILE:
            raise UnknownBehaviour(f"unknown fault {name!r}")
    for name in variants:
        if name not in VARIANTS:
            raise UnknownBehaviour(f"unknown variant {name!r}")


def split_names(text: str | None) -> list[str]:
    """Names from a comma-separated environment variable."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]
