"""The evidence of a run: each request and its response as an `Exchange`, already redacted,
numbered in the order recorded, with a curl line that repeats it made on demand.

`Recorder` is shared by the client and the burst's own transport: whichever sent a request, its
exchange is recorded, redacted and numbered the same way.
"""

from __future__ import annotations

import functools
import shlex
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from conformance import strict_json
from conformance.httpclient.bounds import BODY
from conformance.httpclient.redaction import (
    CONTROL_BYTES,
    Secrets,
    ansi_c_quoted,
    escape_controls,
    redact_authorization,
)

REQUEST_BODY_LIMIT = 2000
RESPONSE_BODY_LIMIT = 4000
CURL_SKIPPED_HEADERS = {"host", "content-length", "accept-encoding"}
"""Headers curl sets itself; Accept-Encoding is left out so that curl prints a readable body.
`Connection: keep-alive` is curl's own too; a Connection that names more (an upgrade offer's
`Upgrade, HTTP2-Settings`) is part of what the request said, and stays."""


CURL_BODY_LIMIT = 8_192


@dataclass
class Exchange:
    """One request and its response, as sent and received, with every secret already replaced."""

    id: int
    key_label: str
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str | None
    status: int
    response_headers: list[tuple[str, str]]
    response_body: str
    started_at: float
    elapsed: float
    burst: bool = False  # sent by the exhaustion burst's own transport, one of thousands alike
    too_large: int = (
        0  # the bound the body went past (conformance.httpclient.bounds): only that much read
    )
    too_large_what: str = BODY  # or its FRAMING: what went past `too_large`
    # Only the start of the body was kept, or it was kept encoded in a coding the checker does
    # not decode (a burst's success, conformance.burst.transport): not read as the whole body.
    body_cut: bool = False
    _full_body: str = field(default="", repr=False, compare=False)
    # Made on first use: only a failure's evidence needs it, and a body that a shell line
    # cannot carry is then written to a file, which a passing run should not leave behind.
    _curl: str | Callable[[], str] = field(default="", repr=False, compare=False)

    def header(self, name: str) -> str | None:
        """First value of a response header; names compare case-insensitively (RFC 9110 §5.1)."""
        values = self.header_values(name)
        return values[0] if values else None

    def header_values(self, name: str) -> list[str]:
        """Every value of a response header, one per field line, in the order received."""
        wanted = name.lower()
        return [value for key, value in self.response_headers if key.lower() == wanted]

    def request_header(self, name: str) -> str | None:
        """A header as sent (redacted: `Authorization` keeps only its scheme), any case."""
        wanted = name.lower()
        return next((v for k, v in self.request_headers.items() if k.lower() == wanted), None)

    def json(self) -> Any:
        """Parse the whole (redacted) body; raises ValueError when it is not JSON."""
        if self.too_large:
            raise ValueError(self.too_large_text())
        return strict_json.loads(self._full_body)

    def same_body(self, other: Exchange) -> bool:
        """Whether `other` holds this very body text (the recorder shares one text among
        answers alike, as a burst's are): judged once, it is judged for both."""
        return self._full_body is other._full_body

    def too_large_text(self) -> str:
        return f"{self.too_large_what} of more than {self.too_large} bytes (read no further)"

    def media_type(self) -> str | None:
        """Content-Type without parameters, lower-cased: `; charset=utf-8` must not fail a check."""
        content_type = self.header("Content-Type")
        if content_type is None:
            return None
        return content_type.split(";", 1)[0].strip().lower() or None

    def summary(self) -> str:
        """One line for a failure message: what was asked, what came back, how fast."""
        reason = _reason_phrase(self.status)
        return (
            f"{self.method} {self.url} -> {self.status}{reason} "
            f"(key {self.key_label}, {_body_preview(self)}, {self.elapsed:.2f} s)"
        )

    def curl(self) -> str:
        """A shell line that repeats the request; keys appear as $PETSTORE_API_KEY and kin."""
        if callable(self._curl):
            self._curl = self._curl()
        return self._curl

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for reports; already redacted, like every field of the exchange."""
        return {
            "id": self.id,
            "key_label": self.key_label,
            "method": self.method,
            "url": self.url,
            "request_headers": dict(self.request_headers),
            "request_body": self.request_body,
            "status": self.status,
            "response_headers": [list(pair) for pair in self.response_headers],
            "response_body": self.response_body,
            "started_at": self.started_at,
            "elapsed": self.elapsed,
            "curl": self.curl(),
        }


def _reason_phrase(status: int) -> str:
    try:
        return " " + HTTPStatus(status).phrase
    except ValueError:
        return ""


def _body_preview(exchange: Exchange, limit: int = 80) -> str:
    if exchange.too_large:
        return exchange.too_large_text()
    text = " ".join(exchange.response_body.split())
    text = escape_controls(text)  # a server's bytes go into messages and logs
    if not text:
        return "empty body"
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{exchange.media_type() or 'no Content-Type'} {text}"


@dataclass(frozen=True)
class Sent:
    """A request as it went out, secrets and all: only ever read to record it redacted."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    content: bytes


class Recorder:
    """Numbers, redacts and keeps every exchange of the run; safe to call from many threads
    and from many connections of a burst at once."""

    def __init__(
        self, secrets: Secrets, body_dir: Path | None = None, curl_options: Sequence[str] = ()
    ):
        self._secrets = secrets
        # Where request bodies a shell line cannot carry are written, for curl's @FILE.
        self._body_dir = body_dir
        self._curl_options = list(curl_options)  # --cacert, --cert/--key or -k, as the run
        self._lock = threading.Lock()
        self._recorded = 0
        self._exchanges: list[Exchange] = []
        # A burst records the same request, and mostly the same body, thousands of times: the
        # latest of each is kept to be shared rather than stored again (memory of big runs).
        self._latest: tuple[Sent, dict[str, str], str, str | None] | None = None
        self._latest_body = ""

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange recorded, in the order recorded (a copy)."""
        with self._lock:
            return list(self._exchanges)

    def record(
        self,
        label: str,
        sent: Sent,
        status: int,
        response_headers: list[tuple[str, str]],
        response_text: str,
        started_at: float,
        elapsed: float,
        burst: bool = False,
        too_large: int = 0,
        too_large_what: str = BODY,
        body_cut: bool = False,
    ) -> Exchange:
        redact = self._secrets.redact
        _, request_headers, url, request_body = self._shown(sent)
        full_body = redact(response_text)
        if full_body == self._latest_body:
            full_body = self._latest_body
        self._latest_body = full_body
        with self._lock:  # numbered as recorded; a burst records from many connections at once
            self._recorded += 1
            exchange_id = self._recorded
        exchange = Exchange(
            id=exchange_id,
            key_label=label,
            method=sent.method,
            url=url,
            request_headers=request_headers,
            request_body=request_body,
            status=status,
            # Names and values shared, not stored again: a burst's responses repeat all but
            # Remaining (some 30 MB in 100,000 responses).
            response_headers=[
                (sys.intern(name), sys.intern(redact(value))) for name, value in response_headers
            ],
            response_body=full_body[:RESPONSE_BODY_LIMIT],
            started_at=started_at,
            elapsed=elapsed,
            burst=burst,
            too_large=too_large,
            too_large_what=too_large_what,
            body_cut=body_cut,
            _full_body=full_body,
            _curl=functools.partial(self._curl_line, sent, exchange_id),
        )
        with self._lock:
            self._exchanges.append(exchange)
        return exchange

    def _shown(self, sent: Sent) -> tuple[Sent, dict[str, str], str, str | None]:
        """The request as recorded: headers, URL and body redacted (shared with the latest
        exchange where the same request was sent again, as a burst does)."""
        latest = self._latest
        if latest is not None and latest[0] is sent:
            return latest
        redact = self._secrets.redact
        request_headers: dict[str, str] = {}
        for name, value in sent.headers:
            shown = redact(value)
            if name.lower() == "authorization":
                shown = redact_authorization(shown)
            if name in request_headers:
                shown = f"{request_headers[name]}, {shown}"
            request_headers[name] = shown
        body = sent.content.decode("utf-8", errors="replace") or None
        request_body = redact(body)[:REQUEST_BODY_LIMIT] if body is not None else None
        self._latest = (sent, request_headers, redact(sent.url), request_body)
        return self._latest

    def _curl_line(self, sent: Sent, exchange_id: int) -> str:
        """A line that pastes into a shell: no raw control character, no megabyte of body."""
        word = self._secrets.shell_word
        parts = ["curl", "-i", *self._curl_options, "-X", shlex.quote(sent.method), word(sent.url)]
        for name, value in sent.headers:
            if name.lower() not in CURL_SKIPPED_HEADERS and not _keep_alive(name, value):
                parts += ["-H", word(f"{name}: {value}")]
        if sent.content:
            parts += ["--data-binary", self._curl_body(sent.content, exchange_id)]
        return " ".join(parts)

    def _curl_body(self, raw: bytes, exchange_id: int) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\x00" not in text and len(text) <= CURL_BODY_LIMIT:
            if CONTROL_BYTES.search(text):
                return ansi_c_quoted(text)
            return self._secrets.shell_word(text)
        # NUL, bytes that are not UTF-8, or a body too long for a command line: a file.
        if self._body_dir is None:
            return f"@request-{exchange_id}.bin  # the {len(raw)}-byte body was not kept"
        self._body_dir.mkdir(parents=True, exist_ok=True)
        path = self._body_dir / f"request-{exchange_id}.bin"
        path.write_bytes(self._secrets.redact_bytes(raw))
        return "@" + shlex.quote(str(path))


def _keep_alive(name: str, value: str) -> bool:
    return name.lower() == "connection" and value.strip().lower() == "keep-alive"
