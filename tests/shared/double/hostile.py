"""Hostile modes of the double: a server that attacks the checker's outputs rather than breaking
a requirement (`HOSTILE` in behaviours.py). One ASGI wrapper around the double, so that the
double itself stays a plain Pet Store: it rewrites requests on the way in and whole responses
on the way out (bodies are small and buffered).
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from http.cookies import SimpleCookie

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NESTING = 100_000
HUGE_NUMBER = b"1e999999"  # a JSON number no float holds: Python reads it as infinity
FINGERPRINT = "petstore-conformance"
RATE_LIMIT_HEADERS = (b"x-ratelimit-limit", b"x-ratelimit-remaining", b"x-ratelimit-reset")
_ID = re.compile(rb'"id":-?\d+')


class HostileTarget:
    def __init__(self, app: ASGIApp, modes: frozenset[str]) -> None:
        self.app = app
        self.modes = modes
        self.sessions: dict[str, str] = {}  # session cookie -> the Authorization it stands for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope = self.let_session_in(scope)
        started: dict = {}
        body = bytearray()

        async def buffer(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    await self.answer(scope, started, bytes(body), send)

        await self.app(scope, receive, buffer)

    def let_session_in(self, scope: Scope) -> Scope:
        """session-cookie: a request carrying a session cookie and no Authorization is served as
        the key that cookie was issued to (a web framework's session middleware)."""
        if "session-cookie" not in self.modes:
            return scope
        headers = dict(scope["headers"])
        if b"authorization" in headers or b"cookie" not in headers:
            return scope
        cookie = SimpleCookie(headers[b"cookie"].decode("latin-1"))
        session = cookie.get("session")
        authorization = self.sessions.get(session.value) if session else None
        if authorization is None:
            return scope
        return {**scope, "headers": [*scope["headers"], (b"authorization", authorization)]}

    async def answer(self, scope: Scope, started: dict, body: bytes, send: Send) -> None:
        headers = [(k.lower(), v) for k, v in started.get("headers", [])]
        authorization = dict(scope["headers"]).get(b"authorization")
        status = started["status"]
        # The run's keys, not the 4 KiB junk key it sends to see a long credential refused: that
        # one, in a dozen encodings of up to six bytes a byte, would pass the checker's 100 KiB
        # bound on a response head, and the run would end there.
        if "echo-credentials-encoded" in self.modes and 0 < len(authorization or b"") <= 1024:
            headers += echoed(authorization)
            if status == 201:
                body = with_debug_field(body, authorization)
        if "huge-number-ids" in self.modes:
            body = _ID.sub(b'"id":' + HUGE_NUMBER, body)
        if "deep-nesting" in self.modes and status == 401:
            body = nested_error(body)
        if "session-cookie" in self.modes and authorization and status < 400:
            session = secrets.token_hex(16)
            self.sessions[session] = authorization
            headers.append((b"set-cookie", f"session={session}; Path=/; HttpOnly".encode()))
        if "refusal-for-68-years" in self.modes and status == 429:
            headers = for_68_years(headers)
        if "fingerprint-user-agent" in self.modes and not fingerprinted(scope):
            headers = [(k, v) for k, v in headers if k not in RATE_LIMIT_HEADERS]
        headers = [(k, v) for k, v in headers if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def b64(data: bytes, *, url: bool = False) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=") if url else base64.b64encode(data)


def percent(data: bytes, *, upper: bool = False) -> bytes:
    """%XX of every byte (PHP's rawurlencode leaves letters alone; some debug dumps do not)."""
    text = "".join(f"%{byte:02x}" for byte in data)
    return (text.upper() if upper else text).encode()


def references(data: bytes, *, hexadecimal: bool = False, upper: bool = False) -> bytes:
    """An HTML numeric character reference for every character: `&#99;`, `&#x63;`, `&#x6C;`."""
    form = "&#x{:X};" if upper else "&#x{:x};" if hexadecimal else "&#{:d};"
    return "".join(form.format(byte) for byte in data).encode()  # bytes as latin-1 characters


def unicode_escapes(data: bytes, *, upper: bool = False) -> bytes:
    """JSON's `\\u00XX` for every character: what a JSON reader decodes back to the key."""
    form = "\\u{:04X}" if upper else "\\u{:04x}"
    return "".join(form.format(byte) for byte in data).encode()  # bytes as latin-1 characters


def echoed(authorization: bytes) -> list[tuple[bytes, bytes]]:
    """What debug middleware sends back: the credential, base64 and base64url, alone, with its
    scheme, and inside an encoded JSON dump of the request (at whatever offset it falls); hex,
    %XX of every byte and HTML character references, in either case."""
    key = authorization.partition(b" ")[2] or authorization
    dump = json.dumps({"method": "GET", "authorization": authorization.decode("latin-1")})
    return [
        (b"x-debug-key-b64", b64(key)),
        (b"x-debug-key-b64url", b64(key, url=True)),
        (b"x-debug-auth-b64", b64(authorization)),
        (b"x-debug-request-b64", b64(dump.encode())),
        (b"x-debug-request-b64url", b64(b"{ " + dump.encode(), url=True)),
        (b"x-debug-key-hex", key.hex().encode()),
        (b"x-debug-request-hex", dump.encode().hex().upper().encode()),
        (b"x-debug-key-percent", percent(key)),
        (b"x-debug-auth-percent", percent(authorization, upper=True)),
        (b"x-debug-key-html", references(key)),
        (b"x-debug-auth-html", references(authorization, hexadecimal=True)),
        (b"x-debug-request-html", references(dump.encode(), upper=True)),
        (b"x-debug-key-json-u", unicode_escapes(key)),
        (b"x-debug-auth-json-u", unicode_escapes(authorization, upper=True)),
    ]


def with_debug_field(body: bytes, authorization: bytes) -> bytes:
    try:
        document = json.loads(body)
    except ValueError:
        return body
    key = authorization.partition(b" ")[2] or authorization
    document["debug"] = {
        "key": b64(key).decode(),
        "auth": b64(authorization, url=True).decode(),
        "hex": authorization.hex().upper(),
        "percent": percent(key).decode(),
        "html": references(key, hexadecimal=True).decode(),
        "escaped": "ESCAPED",
    }
    # Written into the JSON text as escapes, not as a string of backslashes: a reader of the
    # body decodes this field to the key itself.
    escaped = b'"' + unicode_escapes(key, upper=True) + b'"'
    return json.dumps(document).encode().replace(b'"ESCAPED"', escaped)


def nested_error(body: bytes) -> bytes:
    """The Error object with an extra field nested NESTING deep (extra fields are allowed)."""
    if not body.endswith(b"}"):
        return body
    return body[:-1] + b',"detail":' + b"[" * NESTING + b"]" * NESTING + b"}"


def for_68_years(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    wait = 68 * 365 * 86_400
    until = str(int(time.time()) + wait).encode()
    kept = [(k, v) for k, v in headers if k not in (b"retry-after", b"x-ratelimit-reset")]
    return [*kept, (b"retry-after", str(wait).encode()), (b"x-ratelimit-reset", until)]


def fingerprinted(scope: Scope) -> bool:
    agent = dict(scope["headers"]).get(b"user-agent", b"").decode("latin-1")
    return FINGERPRINT in agent
