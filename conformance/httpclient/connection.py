"""How the checker reaches the target: the CAs it trusts, the client certificate it shows, the
proxy it goes through; what a failed handshake means in the user's words; and the facts of the
TLS connection (protocol, certificate subject, issuer, expiry) for the report.

Staging servers sit behind HTTPS with a company's own CA, often behind a gateway that asks for
a client certificate, reached from CI through an HTTP proxy. One SSL context and one proxy,
decided here, serve every request of the run, the exhaustion burst's included.
"""

from __future__ import annotations

import datetime
import re
import shlex
import ssl
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

EXPIRY_WARNING_DAYS = 14
"""A certificate that expires this soon gets a warning: the next nightly run may not connect."""
RENEWAL_SHARE = 3
"""A short-lived certificate (Caddy's internal CA issues them for 12 hours) is renewed by its
server once a third of its lifetime is left, as ACME clients do: only past that point is its
expiry news, so it is warned of then, or 14 days ahead, whichever comes later."""
CA_HINT = "pass the CA's certificate with --ca-bundle FILE (PETSTORE_CA_BUNDLE)"
INSECURE_HINT = "or, knowingly, --insecure to skip verification"
CLIENT_CERT_HINT = "pass one with --client-cert FILE and --client-key FILE"
# OpenSSL's verify errors, as the ssl module words them, and what each means for the user.
VERIFY_FAILURES = (
    (
        re.compile(r"self[- ]signed certificate in certificate chain|unable to get local issuer"),
        "the target's certificate is signed by a CA this machine does not trust",
        f"{CA_HINT}, {INSECURE_HINT}",
    ),
    (
        re.compile(r"self[- ]signed certificate"),
        "the target's certificate is self-signed",
        f"pass that certificate with --ca-bundle FILE (PETSTORE_CA_BUNDLE), {INSECURE_HINT}",
    ),
    (
        re.compile(r"certificate has expired"),
        "the target's certificate has expired",
        f"--ca-bundle cannot help; renew it, {INSECURE_HINT}",
    ),
    (
        re.compile(r"certificate is not yet valid"),
        "the target's certificate is not valid yet (or this machine's clock is wrong)",
        INSECURE_HINT.removeprefix("or, "),
    ),
    (
        re.compile(r"(?:Hostname|IP address) mismatch, certificate is not valid for '([^']*)'"),
        "the target's certificate is not issued for {0}",
        "use the host name the certificate names in --base-url (--ca-bundle cannot help), "
        f"{INSECURE_HINT}",
    ),
)
# TLS alerts a server sends when it wants a client certificate it did not get, or refuses the
# one it got; TLS 1.3 sends them after the handshake, on the first read.
CLIENT_CERT_ALERTS = re.compile(
    r"alert (certificate required|handshake failure|bad certificate|unknown ca|"
    r"certificate unknown|certificate revoked|certificate expired|access denied)",
    re.IGNORECASE,
)
# What a gateway that checks client certificates at the HTTP level (nginx's
# `ssl_verify_client`) answers: a 400 page with one of these sentences.
CLIENT_CERT_PAGES = re.compile(
    r"No required SSL certificate was sent|The SSL certificate error", re.IGNORECASE
)


class ConnectionSetupError(ValueError):
    """A certificate, key or CA file cannot be used; the message is one line."""


@dataclass(frozen=True)
class TlsOptions:
    """What the user gave for TLS: paths only; no file content is ever kept or shown."""

    ca_bundle: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    insecure: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        """One context for the whole run. Raises ConnectionSetupError, one line."""
        if self.client_key and not self.client_cert:
            raise ConnectionSetupError("--client-key needs --client-cert (the certificate)")
        context = self._trust()
        if self.client_cert:
            load_client_certificate(context, self.client_cert, self.client_key)
        return context

    def _trust(self) -> ssl.SSLContext:
        if self.insecure:
            return httpx.create_ssl_context(verify=False)
        if self.ca_bundle is None:
            # The default trust (certifi, or SSL_CERT_FILE / SSL_CERT_DIR when set).
            return httpx.create_ssl_context()
        readable("--ca-bundle", self.ca_bundle)
        try:
            return ssl.create_default_context(cafile=str(self.ca_bundle))
        except ssl.SSLError as error:
            raise ConnectionSetupError(unusable("--ca-bundle", self.ca_bundle, error)) from None

    def curl_options(self) -> list[str]:
        """What a curl line needs to reach the target as the run did."""
        options: list[str] = []
        if self.insecure:
            options.append("-k")
        elif self.ca_bundle:
            options += ["--cacert", shlex.quote(str(self.ca_bundle))]
        if self.client_cert:
            options += ["--cert", shlex.quote(str(self.client_cert))]
        if self.client_key:
            options += ["--key", shlex.quote(str(self.client_key))]
        return options


def load_client_certificate(context: ssl.SSLContext, cert: Path, key: Path | None) -> None:
    def no_passphrase() -> str:
        # An encrypted key would make OpenSSL prompt on the terminal: a CI job would hang.
        raise ConnectionSetupError(f"--client-key {key or cert}: encrypted; give it unencrypted")

    readable("--client-cert", cert)
    if key is not None:
        readable("--client-key", key)
    try:
        context.load_cert_chain(str(cert), str(key) if key else None, password=no_passphrase)
    except ssl.SSLError as error:
        which = f"{cert}" + (f" and {key}" if key else "")
        raise ConnectionSetupError(
            f"--client-cert/--client-key: {which} are not a PEM certificate and its private "
            f"key ({ssl_reason(error)})"
        ) from None


def readable(option: str, path: Path) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise ConnectionSetupError(unusable(option, path, error)) from None


def unusable(option: str, path: Path, error: OSError) -> str:
    if isinstance(error, ssl.SSLError):
        return f"{option} {path}: not a PEM certificate file ({ssl_reason(error)})"
    return f"{option} {path}: cannot read it ({error.strerror or error})"


def ssl_reason(error: ssl.SSLError) -> str:
    return (error.reason or str(error)).replace("_", " ").lower()


# -- the proxy -------------------------------------------------------------------------------


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, and
    NO_PROXY for the hosts that bypass it), as curl and the standard library read them."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if not parts.hostname or urllib.request.proxy_bypass_environment(parts.hostname, proxies):
        return None
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and "://" not in proxy:
        proxy = "http://" + proxy  # `proxy.example:3128`, as curl reads it
    return proxy or None


def without_credentials(url: str) -> str:
    """The URL with any `user:password@` taken out: what may be shown."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def proxy_credentials(url: str | None) -> list[str]:
    """A proxy URL's password, and `user:password` as Basic authentication sends it (base64 of
    it): secrets a target behind the proxy may echo. Texts shorter than 8 characters are left
    out: hiding them would hide ordinary text too."""
    parts = urllib.parse.urlsplit(url or "")
    if parts.password is None:
        return []
    password = urllib.parse.unquote(parts.password)
    pair = f"{urllib.parse.unquote(parts.username or '')}:{password}"
    return [text for text in (password, pair) if len(text) >= 8]


# -- what a failure means --------------------------------------------------------------------


def explain_failure(reason: str) -> str | None:
    """The user's words for a TLS failure in an httpx error text; None when it is not one."""
    for pattern, what, hint in VERIFY_FAILURES:
        match = pattern.search(reason)
        if match:
            return f"{what.format(*match.groups())}: {hint}"
    if CLIENT_CERT_ALERTS.search(reason):
        return (
            "the target refused the TLS connection without an acceptable client certificate: "
            + CLIENT_CERT_HINT
        )
    return None


def refused_client_certificate(status: int, body: str) -> bool:
    """A gateway's own 400 page for a missing or refused client certificate."""
    return status == 400 and bool(CLIENT_CERT_PAGES.search(body))


# -- the facts of the connection ---------------------------------------------------------------


@dataclass(frozen=True)
class TlsFacts:
    version: str
    subject: str
    issuer: str
    not_after: datetime.datetime
    not_before: datetime.datetime | None = None
    names: tuple[str, ...] = ()  # the subject alternative names

    def days_left(self, now: datetime.datetime | None = None) -> int:
        return self.left(now).days

    def left(self, now: datetime.datetime | None = None) -> datetime.timedelta:
        return self.not_after - (now or datetime.datetime.now(datetime.UTC))

    def expiry_warning(self, now: datetime.datetime | None = None) -> str | None:
        left = self.left(now)
        if left >= self.warning_span():
            return None
        if left < datetime.timedelta(0):
            when = "expired"
        elif left.days:
            when = f"expires in {left.days} day(s)"
        else:
            when = f"expires in {left.seconds // 3600} hour(s)"
        return f"the target's TLS certificate {when}, on {self.expiry()} ({self.name()})"

    def warning_span(self) -> datetime.timedelta:
        """How long before its expiry a certificate is warned of: 14 days, or the last third
        of its lifetime where that is shorter."""
        span = datetime.timedelta(days=EXPIRY_WARNING_DAYS)
        if self.not_before is not None:
            span = min(span, (self.not_after - self.not_before) / RENEWAL_SHARE)
        return span

    def name(self) -> str:
        """The subject, or, where it is empty (Caddy's, ACME's), the names the certificate is
        issued for."""
        return self.subject or ", ".join(self.names) or "no subject, no names"

    def expiry(self) -> str:
        return self.not_after.strftime("%Y-%m-%dT%H:%M:%SZ")

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.version,
            "subject": self.subject,
            "names": list(self.names),
            "issuer": self.issuer,
            "expires": self.expiry(),
            "days_left": self.days_left(),
        }


def peer_facts(response: httpx.Response) -> TlsFacts | None:
    """The TLS facts of the connection `response` came on; None for plain HTTP."""
    stream = response.extensions.get("network_stream")
    ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
    if ssl_object is None:
        return None
    try:
        der = ssl_object.getpeercert(True)  # binary form: read even unverified
        version = ssl_object.version()
    except (OSError, ValueError):  # the connection closed already: the next response tells
        return None
    if not der:
        return None
    from cryptography import x509

    certificate = x509.load_der_x509_certificate(der)
    return TlsFacts(
        version=version or "unknown",
        subject=certificate.subject.rfc4514_string(),
        issuer=certificate.issuer.rfc4514_string(),
        not_after=certificate.not_valid_after_utc,
        not_before=certificate.not_valid_before_utc,
        names=alternative_names(certificate),
    )


def alternative_names(certificate: Any) -> tuple[str, ...]:
    """The DNS names and addresses of the subject alternative name extension, if any."""
    from cryptography import x509

    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return ()
    names = extension.value.get_values_for_type(x509.DNSName)
    addresses = extension.value.get_values_for_type(x509.IPAddress)
    return tuple(names) + tuple(str(address) for address in addresses)


# -- what the reports say ----------------------------------------------------------------------

INSECURE_WARNING = (
    "--insecure: the target's TLS certificate was not verified, so nothing shows who answered "
    "this run"
)


def statement_fields(
    https: bool, tls: TlsOptions, proxy: str | None, facts: TlsFacts | None
) -> dict:
    """`conformance.json`'s `connection`: how the run reached the target (paths, never a file's
    content; the proxy without credentials)."""
    return {
        "https": https,
        "proxy": without_credentials(proxy) if proxy else None,
        "insecure": tls.insecure,
        "ca_bundle": str(tls.ca_bundle) if tls.ca_bundle else None,
        "client_certificate": str(tls.client_cert) if tls.client_cert else None,
        "tls": facts.to_dict() if facts else None,
    }


def describe(fields: dict) -> str:
    """One line from a statement's `connection` (this run's, or a package's)."""
    if not fields.get("https"):
        parts = ["plain HTTP"]
    elif fields.get("insecure"):
        parts = ["TLS certificate NOT verified (--insecure)"]
    else:
        trusted = fields.get("ca_bundle") or "the default CAs"
        parts = [f"TLS certificate verified against {trusted}"]
    if fields.get("client_certificate"):
        parts.append(f"client certificate {fields['client_certificate']}")
    parts.append(f"through the proxy {fields['proxy']}" if fields.get("proxy") else "no proxy")
    return ", ".join(parts)


def describe_tls(tls: dict) -> str:
    return (
        f"{tls['protocol']}; certificate {tls['subject'] or ', '.join(tls.get('names', []))}, "
        f"issued by {tls['issuer']}, "
        f"expires {tls['expires']} (in {tls['days_left']} days)"
    )
