"""The one HTTP client of the suite: paced per key, inside a budget, recording redacted exchanges.

Hand-written scenarios and generated tests alike send through `ConformanceClient`, so that three
promises hold for the whole run, whatever a test does:

- we are a good citizen on a shared server (`Retry-After`, exponential back-off with jitter, no
  request on a limited key before its wait is over, a request budget; see `conformance.backoff`);
- every request and response is recorded as an `Exchange`, the evidence the report shows;
- no API key ever reaches a recorded exchange, a message or a curl line: tests name a key by its
  label ("main", "spare") or by a placeholder (`"bearer {main}"`), and the secret is put in only
  at send time.
"""

from __future__ import annotations

import contextlib
import functools
import json as jsonlib
import random
import re
import shlex
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx

from conformance import __version__
from conformance.backoff import (
    Clock,
    Pacer,
    SystemClock,
    TargetThrottled,
    WaitListener,
    reset_wait,
    retry_after_seconds,
)

__all__ = [
    "BudgetExhausted",
    "Clock",
    "ConformanceClient",
    "Exchange",
    "TargetThrottled",
    "TargetUnreachable",
]

MAX_ATTEMPTS = 4
"""Attempts per request when retrying 429s: enough to ride out a window, few enough to be polite."""
REFUSALS = (429, 503)
"""Statuses that refuse a request for now: backed off from and retried alike. A proxy's limiter
(nginx's `limit_req`) answers 503 where the service answers 429."""
REQUEST_BODY_LIMIT = 2000
RESPONSE_BODY_LIMIT = 4000
REDACTED = "***"
NO_KEY = "none"
ENV_VARS = {"main": "PETSTORE_API_KEY", "spare": "PETSTORE_SPARE_API_KEY"}
"""The variables a user already has set (the checker reads them), so curl lines run as printed."""
CURL_SKIPPED_HEADERS = {"host", "content-length", "connection", "accept-encoding"}
"""Headers curl sets itself; Accept-Encoding is left out so that curl prints a readable body."""


CURL_BODY_LIMIT = 8_192
# Bytes a shell line cannot carry as they are: C0 controls (tab and newline too: pasted into an
# interactive shell they complete or end the line) and DEL.
CONTROL_BYTES = re.compile(r"[\x00-\x1f\x7f]")


class BudgetExhausted(Exception):
    """The request budget (--max-requests) is spent: sending more would break the user's limit."""


class TargetUnreachable(Exception):
    """The target could not be reached (refused, DNS, timeout); the message is one line."""


class _Unset:
    """Marks `json` as not given, so that `json=None` can still send the JSON literal null."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


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

    def json(self) -> Any:
        """Parse the whole (redacted) body; raises ValueError when it is not JSON."""
        return jsonlib.loads(self._full_body)

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
    text = " ".join(exchange.response_body.split())
    text = escape_controls(text)  # a server's bytes go into messages and logs
    if not text:
        return "empty body"
    if len(text) > limit:
        text = text[:limit] + "..."
    return f"{exchange.media_type() or 'no Content-Type'} {text}"


def _encoded_forms(secret: str) -> set[str]:
    """The ways a secret may show up: raw, URL-encoded (path or query) or JSON-escaped."""
    forms = {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        str(httpx.QueryParams({"k": secret}))[2:],
        jsonlib.dumps(secret)[1:-1],
    }
    return {form for form in forms if form}


class _Secrets:
    """Knows the keys by label: puts them into templates at send time and takes them out after."""

    def __init__(self, keys: dict[str, str]):
        self._keys = {label: secret for label, secret in keys.items() if secret}
        self._form_labels: dict[str, str] = {}
        for label, secret in self._keys.items():
            for form in _encoded_forms(secret):
                self._form_labels.setdefault(form, label)
        forms = sorted(self._form_labels, key=len, reverse=True)
        self._secret_pattern = re.compile("|".join(map(re.escape, forms))) if forms else None
        names = sorted(set(self._keys) | set(ENV_VARS))
        self._placeholder = re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")

    def secret(self, label: str) -> str:
        try:
            return self._keys[label]
        except KeyError:
            raise ValueError(f"no API key was given for {label!r}") from None

    def expand(self, template: str) -> str:
        """Replace `{main}` / `{spare}` by the secret; only ever done for the bytes we send."""
        return self._placeholder.sub(lambda match: self.secret(match.group(1)), template)

    def placeholders_in(self, text: str) -> list[str]:
        return [match.group(1) for match in self._placeholder.finditer(text)]

    def labels_in(self, text: str) -> list[str]:
        """Labels whose secret appears in `text` (in any encoding)."""
        if self._secret_pattern is None:
            return []
        return [self._form_labels[m.group(0)] for m in self._secret_pattern.finditer(text)]

    def redact(self, text: str) -> str:
        if self._secret_pattern is None:
            return text
        return self._secret_pattern.sub(REDACTED, text)

    def redact_bytes(self, raw: bytes) -> bytes:
        for form in sorted(self._form_labels, key=len, reverse=True):
            raw = raw.replace(form.encode("utf-8"), REDACTED.encode())
        return raw

    def shell_word(self, text: str) -> str:
        """Quote `text` for a POSIX shell, with each secret replaced by its environment variable."""
        if self._secret_pattern is None or not self._secret_pattern.search(text):
            return shlex.quote(text)
        parts: list[str] = []
        position = 0
        for match in self._secret_pattern.finditer(text):
            parts.append(_escape_in_double_quotes(text[position : match.start()]))
            variable = _env_var(self._form_labels[match.group(0)])
            glued = re.match(r"\w", text[match.end() : match.end() + 1])  # "$VARx" names VARx
            parts.append("${" + variable + "}" if glued else "$" + variable)
            position = match.end()
        parts.append(_escape_in_double_quotes(text[position:]))
        return '"' + "".join(parts) + '"'


def ansi_c_quoted(text: str) -> str:
    """`text` as one bash/zsh `$'...'` word: control characters as escapes, never raw. (NUL
    cannot be written this way: such a body goes to a file.)"""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + escape_controls(escaped) + "'"


def escape_controls(text: str) -> str:
    """Control characters as `\\xHH` escapes, two hex digits each."""
    return CONTROL_BYTES.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _env_var(label: str) -> str:
    return ENV_VARS.get(label, f"PETSTORE_{label.upper()}_API_KEY")


def _escape_in_double_quotes(text: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", text)


def _redact_authorization(value: str) -> str:
    """Record only the scheme (`Bearer ***`, `***`); an empty credential is shown as it was sent."""
    scheme, space, credentials = value.partition(" ")
    if not space:
        return REDACTED if scheme else value
    if not credentials.strip():
        return value
    return f"{scheme} {REDACTED}"


IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def may_resend(error: httpx.TransportError, request: httpx.Request) -> bool:
    """The server closed the connection as the request went out, with no response: what a
    keep-alive connection closed for idleness (or by a proxy) does at the wrong moment. The
    request never reached the service; a client resends an idempotent one once, on a fresh
    connection (RFC 9110 section 9.2.2). A server that does it every time stays unreachable."""
    return (
        isinstance(error, httpx.RemoteProtocolError)
        and "without sending a response" in str(error)
        and request.method in IDEMPOTENT_METHODS
    )


def _unreachable_reason(error: httpx.TransportError, timeout: float) -> str:
    if isinstance(error, httpx.TimeoutException):
        return f"no response within {timeout:g} s ({type(error).__name__})"
    text = " ".join(str(error).split()) or type(error).__name__
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    return text[:1].lower() + text[1:]


@dataclass
class _Prepared:
    """A request ready to send, secrets already expanded; never recorded as such."""

    label: str
    method: str
    url: httpx.URL
    headers: dict[str, str]
    json: Any
    content: bytes | str | None


class ConformanceClient:
    """Sends the suite's requests, paced per key and inside the request budget.

    Requests go one at a time from each thread; `send_async` lets the exhaustion burst send
    many at once on the key it exhausts. Bookkeeping is thread-safe, and `exclusive()` keeps
    other threads from sending while a burst needs the target to itself.
    """

    def __init__(
        self,
        base_url: str,
        keys: dict[str, str],
        *,
        max_requests: int | None = None,
        timeout: float = 10.0,
        max_wait: float = 120.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
        on_wait: WaitListener | None = None,
        body_dir: Path | None = None,
        allow_key_in_url: bool = False,
    ):
        self.base_url = base_url
        self.max_requests = max_requests
        self.timeout = timeout
        self._secrets = _Secrets(keys)
        self._pacer = Pacer(clock or SystemClock(), rng or random.Random(), max_wait, on_wait)
        self._on_exchange = on_exchange
        # Where request bodies a shell line cannot carry are written, for curl's @FILE.
        self._body_dir = body_dir
        self._allow_key_in_url = allow_key_in_url
        self._exchanges: list[Exchange] = []
        self._sent_per_label: dict[str, int] = {}
        self._async_transport = async_transport
        # Made once: a burst opens a session per connection, and loading the CA certificates
        # anew for each costs tens of milliseconds that stall every request in flight.
        self._ssl_context = httpx.create_ssl_context()
        self._lock = threading.Lock()  # budget, counts and the exchange list
        self._recorded = 0
        self._gate = threading.RLock()  # held per send; held across a burst by `exclusive()`
        self._http = httpx.Client(
            transport=transport,
            timeout=timeout,
            follow_redirects=False,  # a redirect is something to check, not to follow silently
            headers=self._default_headers(),
        )

    # -- public API -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        key: str | None = "main",
        authorization: str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        json: Any = UNSET,
        content: bytes | str | None = None,
        retry_on_429: bool = True,
        pace: bool = True,
    ) -> Exchange:
        """Send one request (retrying 429s and 503s up to 4 attempts in all) and return the last
        exchange.

        `pace=False` keeps this response's `X-RateLimit-Remaining: 0` from holding the next
        request until the reset: the one way to send the request that proves a 429. A
        `Retry-After` is always honoured, whatever the status (RFC 9110 section 10.2.3).

        `key` names the credential sent as `Authorization: Bearer <key>`; `authorization` instead
        gives the header as a template (`"bearer {main}"`, `"Bearer not-a-key"`); `params` and
        `headers` values may hold the same placeholders.
        """
        prepared = self._prepare(method, path, key, authorization, headers, params, json, content)
        exchange = self._send_once(prepared, pace)
        attempts = 1
        while exchange.status in REFUSALS and retry_on_429 and attempts < MAX_ATTEMPTS:
            exchange = self._send_once(prepared, pace)
            attempts += 1
        return exchange

    def get(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Exchange:
        return self.request("POST", path, **kwargs)

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange of the run, in the order responses arrived (a copy)."""
        with self._lock:
            return list(self._exchanges)

    def requests_per_key(self) -> dict[str, int]:
        """Requests sent per key label, for the report: what the run cost each credential."""
        with self._lock:
            return dict(self._sent_per_label)

    def set_wait_listener(self, listener: WaitListener | None) -> None:
        """Who is told, before a key sleeps out a limit, how long and why."""
        self._pacer.on_wait = listener

    def seconds_waited_per_key(self) -> dict[str, float]:
        """Seconds each key label spent waiting out limits and back-off."""
        return dict(self._pacer.waited)

    @property
    def requests_sent(self) -> int:
        """Requests sent in all, including attempts that got no response."""
        with self._lock:
            return sum(self._sent_per_label.values())

    def wait_until_ready(self, key: str) -> float:
        """Block until the key label may send again; returns the seconds waited.

        Raises TargetThrottled when the wait would exceed max_wait.
        """
        return self._pacer.wait_until_ready(key)

    def wait(self, key: str, seconds: float, reason: str) -> float:
        """Hold the key label for `seconds` (a scenario waiting for a reset) and wait it out,
        so that the wait is paced, counted and announced like any other."""
        if seconds > 0:
            self._pacer.block(key, seconds, reason)
        return self._pacer.wait_until_ready(key)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """While held, requests from other threads wait: a burst judged request by request
        must not have another key's traffic, or the same key's, interleaved with it."""
        with self._gate:
            yield

    @contextlib.asynccontextmanager
    async def async_session(self, connections: int) -> AsyncIterator[httpx.AsyncClient]:
        """An HTTP session for `send_async`, with as many connections as the burst sends at once."""
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(
            transport=self._async_transport,
            verify=self._ssl_context,
            timeout=self.timeout,
            follow_redirects=False,
            headers=self._default_headers(),
            limits=limits,
        ) as session:
            yield session

    async def send_async(
        self, session: httpx.AsyncClient, method: str, path: str, *, key: str
    ) -> Exchange:
        """One request on `key`, sent without pacing (a burst judges its own), inside the budget,
        recorded and checked like any other; 429s are not retried."""
        prepared = self._prepare(method, path, key, None, None, None, UNSET, None)
        for attempt in (1, 2):
            self._count_against_budget(prepared.label)
            request = self._build(prepared)
            started_at, started = time.time(), time.perf_counter()
            try:
                response = await session.send(request)
                break
            except httpx.TransportError as error:
                if attempt == 1 and may_resend(error, request):
                    continue
                raise self._unreachable(error, request) from None
        elapsed = time.perf_counter() - started
        return self._after_response(prepared.label, request, response, started_at, elapsed, False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConformanceClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- preparing --------------------------------------------------------------------------

    def _prepare(
        self,
        method: str,
        path: str,
        key: str | None,
        authorization: str | None,
        headers: dict[str, str] | None,
        params: dict[str, str] | None,
        json: Any,
        content: bytes | str | None,
    ) -> _Prepared:
        templates: list[str] = [path]
        request_headers: dict[str, str] = {}
        if authorization is not None:
            request_headers["Authorization"] = authorization
        elif key is not None:
            self._secrets.secret(key)  # fail early and clearly on an unknown label
            request_headers["Authorization"] = "Bearer {" + key + "}"
        for name, value in (headers or {}).items():
            # Header names are case-insensitive: a caller's "authorization" replaces ours.
            for existing in [k for k in request_headers if k.lower() == name.lower()]:
                del request_headers[existing]
            request_headers[name] = value
        templates += list(request_headers.values()) + list((params or {}).values())
        used = [label for text in templates for label in self._secrets.placeholders_in(text)]

        url = httpx.URL(self._join(self._secrets.expand(path)))
        if params:
            url = url.copy_merge_params({k: self._secrets.expand(v) for k, v in params.items()})
        expanded_headers = {name: self._secrets.expand(v) for name, v in request_headers.items()}
        literal = [
            label
            for text in [str(url), *expanded_headers.values()]
            for label in self._secrets.labels_in(text)
        ]
        label = (used or literal or [key or NO_KEY])[0]
        if self._secrets.labels_in(str(url)) and not self._allow_key_in_url:
            # A key in a URL lands in the target's access log and every proxy's: the user's call.
            raise ValueError("a real API key would travel in the URL (needs --allow-key-in-url)")
        return _Prepared(label, method.upper(), url, expanded_headers, json, content)

    def _join(self, path: str) -> str:
        if not path:
            return self.base_url
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    # -- sending ----------------------------------------------------------------------------

    def _send_once(self, prepared: _Prepared, pace: bool = True) -> Exchange:
        """One attempt: budget, pacing, send, record, learn from the response, report."""
        self._count_against_budget(prepared.label)
        while True:
            self._pacer.wait_until_ready(prepared.label)
            self._gate.acquire()
            # A burst on another thread may have limited this key while we waited for the gate.
            if self._pacer.remaining(prepared.label) <= 0:
                break
            self._gate.release()
        try:
            for attempt in (1, 2):
                request = self._build(prepared)
                started_at, started = time.time(), time.perf_counter()
                try:
                    response = self._http.send(request)
                    break
                except httpx.LocalProtocolError as error:
                    # Our own request was not valid HTTP: a defect of the suite, not the target's.
                    raise ValueError(f"cannot send this request: {error}") from None
                except httpx.TransportError as error:
                    if attempt == 1 and may_resend(error, request):
                        self._count_against_budget(prepared.label)
                        continue
                    raise self._unreachable(error, request) from None
            elapsed = time.perf_counter() - started
        finally:
            self._gate.release()
        return self._after_response(prepared.label, request, response, started_at, elapsed, pace)

    def _count_against_budget(self, label: str) -> None:
        with self._lock:
            sent = sum(self._sent_per_label.values())
            if self.max_requests is not None and sent >= self.max_requests:
                raise BudgetExhausted(
                    f"the request budget of {self.max_requests} requests is spent "
                    f"(per key: {self._sent_per_label})"
                )
            self._sent_per_label[label] = self._sent_per_label.get(label, 0) + 1

    def _unreachable(self, error: httpx.TransportError, request: httpx.Request) -> Exception:
        reason = _unreachable_reason(error, self.timeout)
        where = self._secrets.redact(str(request.url))
        return TargetUnreachable(f"cannot reach {where}: {reason}")

    def _after_response(
        self,
        label: str,
        request: httpx.Request,
        response: httpx.Response,
        started_at: float,
        elapsed: float,
        pace: bool,
    ) -> Exchange:
        exchange = self._record(label, request, response, started_at, elapsed)
        self._learn(label, exchange, pace)
        if self._on_exchange is not None:
            self._on_exchange(exchange)
        return exchange

    def _default_headers(self) -> dict[str, str]:
        return {"User-Agent": f"petstore-conformance/{__version__}"}

    def _build(self, prepared: _Prepared) -> httpx.Request:
        headers = dict(prepared.headers)
        content = prepared.content
        if prepared.json is not UNSET:
            # Encoded here, not by httpx, because httpx reads json=None as "no body" and a test
            # may well want to send the JSON literal null.
            content = jsonlib.dumps(
                prepared.json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            if not any(name.lower() == "content-type" for name in headers):
                headers["Content-Type"] = "application/json"
        return self._http.build_request(
            prepared.method, prepared.url, headers=headers, content=content
        )

    def _learn(self, label: str, exchange: Exchange, pace: bool = True) -> None:
        """Update the label's pacing from what the server said about its limits."""
        date = exchange.header("Date")
        delay = retry_after_seconds(exchange.header("Retry-After"), date, time.time())
        if exchange.status in REFUSALS:
            self._pacer.on_429(label, delay, exchange.status)
            return
        if delay:  # RFC 9110 10.2.3: a Retry-After on any status says how long to stay away
            self._pacer.block(label, delay, f"the Retry-After of its {exchange.status}")
        wait = reset_wait(
            exchange.header("X-RateLimit-Remaining"),
            exchange.header("X-RateLimit-Reset"),
            date,
            time.time(),
        )
        self._pacer.on_response(label, wait if pace else None)

    # -- recording --------------------------------------------------------------------------

    def _record(
        self,
        label: str,
        request: httpx.Request,
        response: httpx.Response,
        started_at: float,
        elapsed: float,
    ) -> Exchange:
        redact = self._secrets.redact
        sent_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        request_headers: dict[str, str] = {}
        for name, value in sent_headers:
            shown = redact(value)
            if name.lower() == "authorization":
                shown = _redact_authorization(shown)
            if name in request_headers:
                shown = f"{request_headers[name]}, {shown}"
            request_headers[name] = shown
        body = request.content.decode("utf-8", errors="replace") or None
        full_body = redact(response.text)
        with self._lock:  # numbered as recorded; a burst records from many connections at once
            self._recorded += 1
            exchange_id = self._recorded
        exchange = Exchange(
            id=exchange_id,
            key_label=label,
            method=request.method,
            url=redact(str(request.url)),
            request_headers=request_headers,
            request_body=redact(body)[:REQUEST_BODY_LIMIT] if body is not None else None,
            status=response.status_code,
            response_headers=[
                (k.decode("latin-1"), redact(v.decode("latin-1"))) for k, v in response.headers.raw
            ],
            response_body=full_body[:RESPONSE_BODY_LIMIT],
            started_at=started_at,
            elapsed=elapsed,
            _full_body=full_body,
            _curl=functools.partial(
                self._curl_line,
                request.method,
                str(request.url),
                sent_headers,
                request.content,
                exchange_id,
            ),
        )
        with self._lock:
            self._exchanges.append(exchange)
        return exchange

    def _curl_line(
        self, method: str, url: str, headers: list[tuple[str, str]], raw: bytes, exchange_id: int
    ) -> str:
        """A line that pastes into a shell: no raw control character, no megabyte of body."""
        word = self._secrets.shell_word
        parts = ["curl", "-i", "-X", shlex.quote(method), word(url)]
        for name, value in headers:
            if name.lower() not in CURL_SKIPPED_HEADERS:
                parts += ["-H", word(f"{name}: {value}")]
        if raw:
            parts += ["--data-binary", self._curl_body(raw, exchange_id)]
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
