"""One run of the checker: its settings, its client, the reference it started, what it created.

Both entry points build a Run: `petstore-conformance` before it hands over to pytest (so a bad
target is refused before any test runs), plain `pytest --pyargs conformance.suite` lazily from
the plugin's options. Opening a run is where input is checked: the URL, that the target answers
like a Pet Store API, and that the keys work.
"""

from __future__ import annotations

import ipaddress
import secrets
import shutil
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.console.progress import Progress
from conformance.httpclient import connection
from conformance.httpclient.bounds import MAX_BODY_BYTES
from conformance.httpclient.client import (
    ConformanceClient,
    Exchange,
    TargetThrottled,
    TargetUnreachable,
)
from conformance.judging import checks, response_checks, served
from conformance.settings import PLAN_NAMES, Settings, SettingsError

# The bundled reference's minute when the checker starts it for the demo: long enough for
# whole-second Reset and Retry-After values to mean something, short enough to wait out.
DEMO_MINUTE_SECONDS = 3.0


class NoVerdict(Exception):
    """The run cannot decide: bad usage, unreachable target, keys refused. One line for the user."""


@dataclass(eq=False)  # identity matters: pytest keeps plugins in sets
class Run:
    settings: Settings
    client: ConformanceClient
    reference: Any = None  # the bundled reference this run started, if any
    warnings: list[str] = field(default_factory=list)
    created_categories: list[dict] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    no_verdict_reason: str | None = None
    progress: Progress = field(default_factory=lambda: Progress(None))
    proxy: str | None = None  # the proxy every request went through, as the environment named it
    har_note: str = ""  # what exchanges.har lists of a big burst only in part
    keyless_refused: bool = False  # a request without a valid key got 429 after every retry
    _names: int = 0

    def connection_fields(self) -> dict:
        """How the run reached the target, for the statement and the report."""
        https = self.settings.base_url.lower().startswith("https:")
        return connection.statement_fields(
            https, self.settings.tls, self.proxy, self.client.tls_facts
        )

    def bounds(self) -> dict:
        """What the target may cost the run, for the statement: bytes of one body, seconds of
        one whole response, of waiting for one key, of the whole run."""
        return {
            "body_bytes": MAX_BODY_BYTES,
            "response_seconds": self.client.response_seconds,
            "key_wait_seconds": self.client.max_wait,
            "run_deadline_seconds": self.settings.run_deadline,
        }

    def describe_bounds(self) -> str:
        bounds = self.bounds()
        return (
            f"bodies read up to {bounds['body_bytes']} bytes, {bounds['response_seconds']:g} s "
            f"for one whole response, {bounds['key_wait_seconds']:g} s waiting for one key, "
            f"{bounds['run_deadline_seconds']} s for the run (--deadline)"
        )

    def attach_progress(self, progress: Progress) -> None:
        """Say what the run waits for on `progress` (the console, outside pytest's capture)."""
        self.progress = progress
        self.client.set_wait_listener(progress.waiting)

    def announce(self, message: str) -> None:
        self.progress.note(message)

    def unique_name(self) -> str:
        """A category name carrying the run's prefix, so operators can find what we created:
        `psc-<tag>-<n>`, 11 to 13 characters, leaving room within the 32 every server must
        accept for a text after it."""
        self._names += 1
        return f"{self.settings.name_prefix}{self._names}"

    def remember_category(self, category: dict) -> None:
        self.created_categories.append(
            {key: category.get(key) for key in ("id", "name") if key in category}
        )

    def remember_created(self, exchange: Exchange) -> None:
        """A served POST may have created a category (even one a faulty server should have
        refused): list it in the report all the same."""
        if not 200 <= exchange.status < 300:
            return
        try:
            body = exchange.json()
        except ValueError:
            return
        if isinstance(body, dict):
            self.remember_category(body)

    def close(self) -> None:
        self.client.close()
        shutil.rmtree(hypothesis_storage(self.settings.report_dir), ignore_errors=True)
        if self.reference is not None:
            self.reference.stop()
            self.reference = None


def start_bundled_reference(minute_seconds: float = DEMO_MINUTE_SECONDS) -> tuple[Any, dict]:
    """Start the reference on a free loopback port with two fresh free-plan keys."""
    from conformance.reference.serve import start_in_thread

    keys = {"main": secrets.token_urlsafe(24), "spare": secrets.token_urlsafe(24)}
    reference = start_in_thread(
        keys=[f"{keys['main']}:free", f"{keys['spare']}:free"], minute_seconds=minute_seconds
    )
    return reference, keys


def open_run(options: dict[str, Any]) -> Run:
    """Build the settings from `options` (None where not given), start the reference if no base
    URL was given, and check the target. Raises NoVerdict or SettingsError."""
    reference = None
    options = dict(options)
    if options.get("plan") not in (None, *PLAN_NAMES):
        raise SettingsError(f"unknown plan {options['plan']!r}: use one of {', '.join(PLAN_NAMES)}")
    if not options.get("base_url"):
        reference, keys = start_bundled_reference()
        options.update(
            base_url=reference.base_url,
            api_key=keys["main"],
            spare_api_key=keys["spare"],
            plan="free",
            requests_per_minute=None,
            requests_per_day=None,
        )
    options["api_key"] = options.get("api_key") or ""  # missing: Settings says so in one line
    try:
        settings = Settings(**{name: value for name, value in options.items() if value is not None})
        # The bundled reference listens on loopback: no proxy of the environment is for it.
        proxy = connection.proxy_for(settings.base_url) if reference is None else None
        run = Run(settings, make_client(settings, proxy), reference=reference, proxy=proxy)
        keep_hypothesis_storage_in(settings.report_dir)
        run.warnings.extend(check_url(settings.base_url))
        preflight(run)
        run.warnings.extend(connection_warnings(run))
    except BaseException:
        if reference is not None:
            reference.stop()
        raise
    return run


def hypothesis_storage(report_dir: Path) -> Path:
    return report_dir / ".hypothesis"


def keep_hypothesis_storage_in(report_dir: Path) -> None:
    """Hypothesis caches the constants of local modules under `.hypothesis` in the working
    directory, whatever `database=None` says: a run writes nothing outside its report folder,
    so its cache goes there, and is removed when the run ends."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(hypothesis_storage(report_dir))


def make_client(settings: Settings, proxy: str | None = None) -> ConformanceClient:
    import random

    try:
        ssl_context = settings.tls.ssl_context()
    except connection.ConnectionSetupError as error:
        raise SettingsError(str(error)) from None

    def check(exchange: Exchange) -> None:
        with checks.on_every_response():
            response_checks.check_every_response(exchange, settings)
            served.check_success(exchange, settings)

    return ConformanceClient(
        settings.base_url,
        settings.keys,
        max_requests=settings.budget,
        rng=random.Random(settings.seed),
        on_exchange=check,
        body_dir=settings.report_dir / "request-bodies",
        allow_key_in_url=settings.allow_key_in_url,
        ssl_context=ssl_context,
        proxy=proxy,
        curl_options=settings.tls.curl_options(),
        user_agent=settings.user_agent,
        deadline=settings.run_deadline,
    )


def connection_warnings(run: Run) -> list[str]:
    """What the reports must say about how the target was reached: an unverified certificate,
    one about to expire (the preflight's responses brought it)."""
    insecure = run.settings.insecure and run.connection_fields()["https"]
    warnings = [connection.INSECURE_WARNING] if insecure else []
    facts = run.client.tls_facts
    expiry = facts.expiry_warning() if facts else None
    return warnings + ([expiry] if expiry else [])


def check_url(base_url: str) -> list[str]:
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"--base-url must be an http:// or https:// URL, not {base_url!r}")
    if not parts.path.rstrip("/").endswith("/v1"):
        return [
            f"the base URL {base_url} does not end in /v1, as the interface's base addresses do"
        ]
    return []


def preflight(run: Run) -> None:
    """Refuse to start when the target cannot be certified at all, with one clear line."""
    for label in run.settings.keys:
        exchange = first_contact(run.client, label)
        explain_refusal(exchange, label, run.settings.base_url, run.client.tls_facts)


def first_contact(client: ConformanceClient, label: str) -> Exchange:
    try:
        return client.get("/categories", key=label)
    except TargetUnreachable as error:
        raise NoVerdict(str(error)) from None
    except TargetThrottled as error:
        raise NoVerdict(f"the {label} API key is rate-limited for too long: {error}") from None


def explain_refusal(
    exchange: Exchange, label: str, base_url: str, tls: connection.TlsFacts | None = None
) -> None:
    variable = "PETSTORE_API_KEY" if label == "main" else "PETSTORE_SPARE_API_KEY"
    if exchange.status == 421:
        raise NoVerdict(misdirected(base_url, tls))
    if exchange.status == 401:
        raise NoVerdict(f"the {label} API key was refused (401) by {base_url}: check {variable}")
    if exchange.status == 403:
        raise NoVerdict(f"the {label} API key is not allowed (403) by {base_url}: check {variable}")
    if exchange.status in (404, 405):
        raise NoVerdict(
            f"{base_url} answered {exchange.status} to GET /categories: is the base URL right "
            "(the address the interface's paths start from, ending in /v1)?"
        )
    if exchange.status == 429:
        raise NoVerdict(f"the {label} API key stays rate-limited (429): try again later")
    if connection.refused_client_certificate(exchange.status, exchange.response_body):
        raise NoVerdict(
            f"{base_url} answered 400: no acceptable client certificate was sent; "
            f"{connection.CLIENT_CERT_HINT}"
        )
    if exchange.status < 500:
        try:
            exchange.json()
        except ValueError:
            what = exchange.too_large_text() if exchange.too_large else "not JSON"
            raise NoVerdict(
                f"{base_url} does not answer like a Pet Store API: GET /categories gave a "
                f"{exchange.status} that is {what} "
                f"({exchange.header('Content-Type') or 'no Content-Type'})"
            ) from None


def misdirected(base_url: str, tls: connection.TlsFacts | None) -> str:
    """421 Misdirected Request (RFC 9110 section 15.5.20): the server will not answer for the
    host name of the URL on this connection, as a TLS front that checks client certificates
    (Caddy) answers a URL with an IP address, for which no name is sent (SNI)."""
    url = urllib.parse.urlsplit(base_url)
    names = list(tls.names) if tls else []
    hosts = [name for name in names if "*" not in name and not is_address(name)]
    if hosts:
        port = f":{url.port}" if url.port else ""
        named = url._replace(netloc=f"{hosts[0]}{port}").geturl()
        fix = f"use the host name its certificate names, e.g. --base-url {named}"
    elif names:
        fix = f"use a host name its certificate names ({', '.join(names)}), not an IP address"
    else:
        fix = "use the host name its TLS certificate is issued for, not an IP address"
    return (
        f"{base_url} answered 421 Misdirected Request to GET /categories: the server will not "
        f"answer for the host {url.hostname} on this connection; {fix}"
    )


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
