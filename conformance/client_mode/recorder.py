"""Every request a client sends to a scenario server, as it arrived: an ASGI layer outside the
reference's app that notes the moments (monotonic, for waits; wall clock, for HTTP-dates and
Resets), what judging needs of the raw request (was the key a bearer token, was it in the
URL, a fingerprint to tell an unchanged repeat), and the exchange itself with every secret
replaced, in the checker's own `Exchange` form, so the reports show it as they show a server's.

A request is read as a server reads it, within bounds: a body over the reference's own 64 KiB is
refused 413, one still coming after BODY_SECONDS 408, each with `Connection: close` and the rest
unread. Such a request is shown in the reports but judged by no rule (`Arrival.complete`). Past
MAX_REQUESTS in one scenario, nothing more is recorded (`full`: the runner stops the client)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance import strict_json
from conformance.httpclient.recording import Exchange
from conformance.httpclient.redaction import Secrets, redact_authorization
from conformance.reference.errors import error_response
from conformance.reference.validation import MAX_BODY_BYTES

BODY_LIMIT = MAX_BODY_BYTES  # bytes of a request body read; clients of this API send a few dozen
# Seconds from a request's head to the end of its body. A client writes its body at once: this
# only stops one that trickles it (nginx's client_body_timeout is 60 s between two reads).
BODY_SECONDS = 10.0
# Requests recorded of one scenario. A careful client sends a few, one that never gives up on
# the endless 429 some 35; past this many it is hammering, and judged on what it sent so far:
# its record, and the judging of every pair of its requests, stay bounded.
MAX_REQUESTS = 300
# Exchange ids are unique across the scenarios of a run (they run at once): the HAR and the
# reports name exchanges by id.
_EXCHANGE_IDS = itertools.count(1)
NOT_JSON = object()


@dataclass
class Arrival:
    """One request of the client and the answer it got."""

    exchange: Exchange  # redacted
    arrived: float  # monotonic
    arrived_wall: float
    answered: float = 0.0  # monotonic, when the response started
    answered_wall: float = 0.0
    bearer_key: bool = False  # `Authorization: Bearer <the key it was given>`
    key_in_url: bool = False
    fingerprint: str = ""  # method, target, Authorization, Content-Type and body
    media_type: str | None = None  # of the request body, without parameters
    body: Any = field(default=NOT_JSON, repr=False)  # the request body as JSON, when it is
    complete: bool = True  # False: refused before the app (413, 408): shown, never judged

    @property
    def status(self) -> int:
        return self.exchange.status

    def header(self, name: str) -> str | None:
        return self.exchange.header(name)


class Recorder:
    """The ASGI layer; `arrivals` in the order the requests arrived."""

    def __init__(self, app: ASGIApp, key: str, reproduce: str) -> None:
        self.app = app
        self.key = key
        self.secrets = Secrets({"main": key})
        self.reproduce = reproduce  # the line that runs the scenario again, for the reports
        self.arrivals: list[Arrival] = []
        self.full = threading.Event()  # MAX_REQUESTS recorded: the client is to be stopped

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(self.arrivals) >= MAX_REQUESTS:  # neither read nor recorded
            self.full.set()
            message = f"The scenario server records {MAX_REQUESTS} requests at most."
            await error_response(503, "request_limit", message, {"Connection": "close"})(
                scope, receive, send
            )
            return
        arrived, arrived_wall = time.monotonic(), time.time()
        body, refusal, receive = await _read_body(scope, receive)
        arrival = self._arrival(scope, body, arrived, arrived_wall)
        arrival.complete = refusal is None
        self.arrivals.append(arrival)
        if len(self.arrivals) >= MAX_REQUESTS:
            self.full.set()
        response_body = bytearray()

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                arrival.answered, arrival.answered_wall = time.monotonic(), time.time()
                arrival.exchange.status = message["status"]
                arrival.exchange.response_headers = [
                    (name.decode("latin-1"), value.decode("latin-1"))
                    for name, value in message.get("headers", [])
                ]
            elif message["type"] == "http.response.body":
                response_body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    text = self.secrets.redact(response_body.decode("utf-8", "replace"))
                    arrival.exchange.response_body = text
                    arrival.exchange._full_body = text
                    arrival.exchange.elapsed = time.monotonic() - arrival.arrived
            await send(message)

        if refusal is None:
            await self.app(scope, receive, recording_send)
        else:
            await refusal(scope, receive, recording_send)

    def _arrival(self, scope: Scope, body: bytes, arrived: float, arrived_wall: float) -> Arrival:
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in scope["headers"]]
        named = {name.lower(): value for name, value in headers}
        target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        target += f"?{query}" if query else ""
        host = named.get("host", "127.0.0.1")
        authorization = named.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        text = body.decode("utf-8", "replace")
        shown = {
            name: redact_authorization(value) if name.lower() == "authorization" else value
            for name, value in headers
        }
        exchange = Exchange(
            id=next(_EXCHANGE_IDS),
            key_label="main",
            method=scope["method"],
            url=self.secrets.redact(f"http://{host}{target}"),
            request_headers={k: self.secrets.redact(v) for k, v in shown.items()},
            request_body=self.secrets.redact(text) if body else None,
            status=0,
            response_headers=[],
            response_body="",
            started_at=arrived_wall,
            elapsed=0.0,
            _curl=self.reproduce,
        )
        media_type = named.get("content-type", "").split(";", 1)[0].strip().lower() or None
        print_ = hashlib.sha256(
            "\0".join(
                [scope["method"], target, authorization, named.get("content-type", ""), text]
            ).encode("utf-8", "surrogateescape")
        ).hexdigest()
        return Arrival(
            exchange,
            arrived,
            arrived_wall,
            bearer_key=scheme.lower() == "bearer" and token.strip() == self.key,
            key_in_url=bool(self.secrets.labels_in(target)),
            fingerprint=print_,
            media_type=media_type,
            body=_json_or_not(body),
        )


async def _read_body(scope: Scope, receive: Receive) -> tuple[bytes, Response | None, Receive]:
    """The request body, read before the app runs (a refused request is never read by the app,
    yet its body is evidence), and a `receive` that hands it over again; or, for a body over
    BODY_LIMIT or not there within BODY_SECONDS, what was read and the refusal to answer."""
    declared = dict(scope["headers"]).get(b"content-length", b"")
    if declared.strip().isdigit() and int(declared) > BODY_LIMIT:
        return b"", _refusal(413, "payload_too_large", f"exceeds {BODY_LIMIT} bytes"), receive
    chunks = bytearray()
    try:
        async with asyncio.timeout(BODY_SECONDS):
            while len(chunks) <= BODY_LIMIT:
                message = await receive()
                if message["type"] != "http.request":
                    break
                chunks.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        message = f"did not arrive within {BODY_SECONDS:g} s"
        return bytes(chunks), _refusal(408, "request_timeout", message), receive
    if len(chunks) > BODY_LIMIT:
        refusal = _refusal(413, "payload_too_large", f"exceeds {BODY_LIMIT} bytes")
        return bytes(chunks[:BODY_LIMIT]), refusal, receive
    body = bytes(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, None, replay


def _refusal(status: int, code: str, what: str) -> Response:
    """The answer a server gives a request it will not read to the end: an Error body, and the
    connection closed after it (the rest of the body is never read)."""
    message = f"The request body {what}."
    return error_response(status, code, message, {"Connection": "close"})


def _json_or_not(body: bytes) -> Any:
    try:
        return strict_json.loads(body)
    except ValueError:
        return NOT_JSON
