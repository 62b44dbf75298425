"""Bearer authentication on every operation (Authentication 1-3; RFC 9110 section 11.1).

Each operation is sent once per way of getting the credential wrong, and must be answered 401
(a 403 or a 2xx is a failure); the scheme name in lower case and the plain `Bearer <key>` must
be served. The plugin checks the Error body and `WWW-Authenticate` of every 401 itself. Keys
appear here only as the `{main}` placeholder, which the client fills in at send time.

Requests: 4 operations x (6 wrong credentials + lower-case scheme + valid key) = 32, and one
with a key of 4 KiB.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.judging.checks import expect, leave_open, skip_case
from conformance.suite.throttling import skip_if_throttled


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    has_body: bool = False


OPERATIONS = [
    Operation("listCategories", "GET", "/categories"),
    Operation("createCategory", "POST", "/categories", has_body=True),
    Operation("getPet", "GET", "/pets/1"),
    Operation("listOrders", "GET", "/store/orders"),
]


@dataclass(frozen=True)
class Credential:
    """How a request presents (or fails to present) the key: client keyword arguments."""

    id: str
    shown: str
    requirement: str
    authorization: str | None = None
    params: dict[str, str] = field(default_factory=dict)


UNKNOWN_KEY = f"psc-not-a-key-{secrets.token_hex(8)}"

WRONG_CREDENTIALS = [
    Credential("no-authorization", "no Authorization header", "AUTH-MISSING-KEY-401"),
    Credential(
        "empty-bearer-token",
        "`Authorization: Bearer` (the scheme with an empty token)",
        "AUTH-INVALID-KEY-401",
        # RFC 9110 section 5.5: a field value has no trailing whitespace, so `Bearer ` is sent
        # as `Bearer` (HTTP libraries refuse to send the trailing space anyway).
        authorization="Bearer",
    ),
    Credential(
        "unknown-key",
        "an unknown key (`Bearer psc-not-a-key-...`)",
        "AUTH-INVALID-KEY-401",
        authorization=f"Bearer {UNKNOWN_KEY}",
    ),
    Credential(
        "basic-scheme",
        "the key under another scheme (`Basic <API_KEY>`)",
        "AUTH-INVALID-KEY-401",
        authorization="Basic {main}",
    ),
    Credential(
        "key-without-scheme",
        "the key without a scheme (`Authorization: <API_KEY>`)",
        "AUTH-INVALID-KEY-401",
        authorization="{main}",
    ),
    Credential(
        "key-in-query-string",
        "the key only in the query string (`?api_key=...&access_token=...`)",
        "AUTH-INVALID-KEY-401",
        params={"api_key": "{main}", "access_token": "{main}"},
    ),
]

OVERSIZED_KEY = f"psc-not-a-key-{secrets.token_hex(8)}-".ljust(4_096, "k")
"""An invalid key of 4 KiB: a few kilobytes, as a pasted token or a JWT grows, and within the
8 KiB of a header line that common servers and proxies accept (nginx's default buffers, Apache's
LimitRequestFieldSize): refused with 401, or 400 or 431 where a server's own limit is smaller."""

KEY_IN_URL = (
    "it would send the real key in the URL, where the target's access log and every proxy's "
    "keep it; --allow-key-in-url (PETSTORE_ALLOW_KEY_IN_URL) checks it"
)

KEYLESS_REFUSED = "every request without a key was refused with 429"
REFUSED_WITHOUT_KEY = ["AUTH-MISSING-KEY-401", "AUTH-INVALID-KEY-401", "AUTH-WWW-AUTHENTICATE"]
"""What only a request without a valid key can show."""

# The read-only smoke profile checks one refusal and one acceptance, on the cheapest operation.
SMOKE = {("listCategories", "no-authorization"), ("listCategories", "valid-key")}


def with_smoke(operation: Operation, case_id: str, *values: Any) -> Any:
    marks = [pytest.mark.smoke] if (operation.id, case_id) in SMOKE else []
    return pytest.param(*values, id=f"{operation.id}-{case_id}", marks=marks)


def send(
    client: Any,
    run: Any,
    operation: Operation,
    *,
    key: str | None,
    authorization: str | None = None,
    params: dict[str, str] | None = None,
    refusal_due: bool = False,
) -> Any:
    """Send `operation` (with a valid NewCategory when it takes one) and remember what it made.
    A request `refusal_due` (a 401) refused with 429 after every retry says that the target
    refuses such requests whatever they are: another would only wait as long again."""
    kwargs: dict[str, Any] = {"key": key, "authorization": authorization, "params": params}
    if operation.has_body:
        kwargs["json"] = {"name": run.unique_name()}
    exchange = client.request(operation.method, operation.path, **kwargs)
    if refusal_due and exchange.status == 429:
        run.keyless_refused = True
        leave_open(REFUSED_WITHOUT_KEY, KEYLESS_REFUSED)
    skip_if_throttled(exchange)
    if operation.has_body:
        run.remember_created(exchange)
    return exchange


@pytest.mark.parametrize(
    ("operation", "credential"),
    [
        with_smoke(operation, credential.id, operation, credential)
        for operation in OPERATIONS
        for credential in WRONG_CREDENTIALS
    ],
)
def test_wrong_credential_is_401(client, run, operation, credential):
    if credential.params and not run.settings.allow_key_in_url:
        skip_case(credential.requirement, credential.shown, KEY_IN_URL)
        pytest.skip(f"not tested: {KEY_IN_URL}")
    if run.keyless_refused:
        pytest.skip(f"not run: {KEYLESS_REFUSED}")
    exchange = send(
        client,
        run,
        operation,
        key=None,
        authorization=credential.authorization,
        params=credential.params or None,
        refusal_due=True,
    )
    expect(
        credential.requirement,
        exchange.status == 401,
        f"{operation.method} {operation.path} with {credential.shown} must be answered 401, "
        f"got {exchange.status}",
        exchange,
    )


@pytest.mark.parametrize(
    "operation", [with_smoke(operation, "lower-case-scheme", operation) for operation in OPERATIONS]
)
def test_scheme_name_is_case_insensitive(client, run, operation):
    exchange = send(client, run, operation, key=None, authorization="bearer {main}")
    expect(
        "AUTH-SCHEME-CASE-INSENSITIVE",
        exchange.status != 401,
        f"{operation.method} {operation.path} with `Authorization: bearer <API_KEY>` (scheme "
        f"in lower case) should be served like `Bearer`, got {exchange.status}",
        exchange,
    )


@pytest.mark.parametrize(
    "operation", [with_smoke(operation, "valid-key", operation) for operation in OPERATIONS]
)
def test_valid_bearer_key_is_served(client, run, operation):
    exchange = send(client, run, operation, key="main")
    expect(
        "AUTH-BEARER-ACCEPTED",
        exchange.status != 401,
        f"{operation.method} {operation.path} with `Authorization: Bearer <API_KEY>` must be "
        f"served, got {exchange.status}",
        exchange,
    )


def test_oversized_key_is_refused_not_a_server_error(client, run):
    """An invalid key of 4 KiB is refused like any other: a 401, or a 400 or 431 (RFC 6585)
    where the header is more than the server takes; never served, never a 5xx."""
    if run.keyless_refused:
        pytest.skip(f"not run: {KEYLESS_REFUSED}")
    listing = OPERATIONS[0]
    authorization = f"Bearer {OVERSIZED_KEY}"
    exchange = send(client, run, listing, key=None, authorization=authorization, refusal_due=True)
    shown = f"GET /categories with an invalid key of {len(OVERSIZED_KEY)} characters"
    expect(
        "AUTH-INVALID-KEY-401",
        not 200 <= exchange.status < 300,
        f"{shown} must be refused, not served ({exchange.status})",
        exchange,
    )
    expect(
        "GEN-NO-SERVER-ERROR",
        exchange.status < 500,
        f"{shown} must be refused with 401 (or 400 or 431 for a header too large), "
        f"not answered {exchange.status}",
        exchange,
    )
