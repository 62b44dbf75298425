"""Bearer authentication: who is calling, and the 401 answer when nobody valid is.

Keys are kept only as SHA-256 digests and compared with `hmac.compare_digest` against every
known digest, so neither the keys nor the timing of a comparison give one away.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from starlette.types import Scope

from conformance.reference.errors import ApiError
from conformance.reference.plans import ANONYMOUS_PLAN, Plan

REALM = "petstore"


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who sent a request: a known key, or an anonymous client address."""

    identity: str  # the rate-limit identity: "key:<sha256 hex>" or "addr:<client host>"
    plan: Plan
    authenticated: bool
    token_given: bool  # an Authorization header with a bearer token was sent

    @cached_property  # a known key's Caller is made once and logged at every request
    def log_label(self) -> str:
        """How the access log names the caller: a short digest prefix, never the key."""
        if self.authenticated:
            return "key:" + self.identity.removeprefix("key:")[:8]
        return "anonymous"


class KeyRing:
    """The known keys, by SHA-256 digest (hex), with their plans, and the Caller each is (made
    once: a request of a known key only finds it)."""

    def __init__(self, digests: Iterable[tuple[str, Plan]]) -> None:
        self._entries = [
            (bytes.fromhex(digest), Caller(f"key:{digest}", plan, True, True))
            for digest, plan in digests
        ]

    @classmethod
    def from_keys(cls, keys: Iterable[tuple[str, Plan]]) -> KeyRing:
        return cls((key_digest(key), plan) for key, plan in keys)

    def digests(self) -> list[tuple[str, Plan]]:
        return [(digest.hex(), caller.plan) for digest, caller in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    def caller(self, token: str) -> Caller | None:
        """The caller a presented token makes, or None when it is no known key."""
        candidate = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found = None
        for digest, caller in self._entries:
            if hmac.compare_digest(candidate, digest) and found is None:
                found = caller
        return found


def bearer_token(scope: Scope) -> tuple[bool, str | None]:
    """(a bearer token was offered, the token if the header is well formed).

    Well formed is exactly one Authorization header holding `<scheme> <token>`, the scheme
    `bearer` in any letter case (RFC 9110 section 11.1), one space, a token without blanks.
    """
    raw = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            if raw is not None:  # more than one: none is taken
                return True, None
            raw = value
    if raw is None:
        return False, None
    text = raw.decode("latin-1")
    scheme, sep, token = text.partition(" ")
    if scheme.lower() != "bearer":
        return False, None
    if not sep or token.split() != [token]:  # empty, or a blank (str.isspace) inside
        return True, None
    return True, token


def identify(scope: Scope, keys: KeyRing) -> Caller:
    offered, token = bearer_token(scope)
    if token is not None:
        caller = keys.caller(token)
        if caller is not None:
            return caller
    client = scope.get("client")
    host = client[0] if client else "unknown"
    return Caller(f"addr:{host}", ANONYMOUS_PLAN, authenticated=False, token_given=offered)


def challenge(caller: Caller) -> str:
    if caller.token_given:
        return f'Bearer realm="{REALM}", error="invalid_token"'
    return f'Bearer realm="{REALM}"'


def require_key(caller: Caller) -> None:
    """Raise the 401 answer unless the caller presented a known key."""
    if caller.authenticated:
        return
    message = (
        "The API key is invalid."
        if caller.token_given
        else "An API key is required: send it as 'Authorization: Bearer <API_KEY>'."
    )
    raise ApiError(401, "unauthorized", message, {"WWW-Authenticate": challenge(caller)})
