"""How the checker reaches a target (conformance.httpclient.connection): the proxy the environment
names, what a TLS failure means, the client certificate's one-line errors, the TLS facts and what
the reports say; and the curl lines that carry the run's TLS options. The same behaviour against a
real nginx: tests/checker/test_staging_https.py."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path

import httpx
import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from conformance.httpclient.client import ConformanceClient, TargetUnreachable
from conformance.httpclient.connection import (
    ConnectionSetupError,
    TlsFacts,
    TlsOptions,
    alternative_names,
    describe,
    explain_failure,
    proxy_for,
    statement_fields,
    without_credentials,
)

KEY = "psc-connection-key-0123456789"
NOW = datetime.datetime(2026, 11, 23, 12, tzinfo=datetime.UTC)
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def clean_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


# -- the proxy ---------------------------------------------------------------------------------


def test_https_proxy_serves_https_targets_and_http_proxy_http_ones(clean_proxies) -> None:
    clean_proxies.setenv("HTTPS_PROXY", "http://tls-proxy.example:3128")
    clean_proxies.setenv("HTTP_PROXY", "http://plain-proxy.example:3128")
    assert proxy_for("https://staging.example/v1") == "http://tls-proxy.example:3128"
    assert proxy_for("http://staging.example/v1") == "http://plain-proxy.example:3128"


def test_no_proxy_and_no_variable_mean_direct(clean_proxies) -> None:
    assert proxy_for("https://staging.example/v1") is None
    clean_proxies.setenv("HTTPS_PROXY", "proxy.example:3128")  # no scheme, as curl reads it
    clean_proxies.setenv("NO_PROXY", "localhost,.internal.example")
    assert proxy_for("https://staging.example/v1") == "http://proxy.example:3128"
    assert proxy_for("https://api.internal.example/v1") is None
    clean_proxies.setenv("ALL_PROXY", "http://all.example:8080")
    clean_proxies.delenv("HTTPS_PROXY")
    assert proxy_for("https://staging.example/v1") == "http://all.example:8080"


def test_the_proxy_is_shown_without_credentials() -> None:
    assert without_credentials("http://ci:s3cret@proxy.example:3128") == "http://proxy.example:3128"
    assert without_credentials("http://proxy.example:3128") == "http://proxy.example:3128"
    fields = statement_fields(True, TlsOptions(), "http://ci:s3cret@proxy.example:3128", None)
    assert fields["proxy"] == "http://proxy.example:3128"
    assert "s3cret" not in describe(fields)


# -- what a failure means ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("openssl", "what"),
    [
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed "
            "certificate in certificate chain (_ssl.c:1000)",
            "signed by a CA this machine does not trust: pass the CA's certificate with "
            "--ca-bundle FILE (PETSTORE_CA_BUNDLE)",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local "
            "issuer certificate (_ssl.c:1000)",
            "signed by a CA this machine does not trust",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired",
            "has expired",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, "
            "certificate is not valid for 'staging.example'. (_ssl.c:1000)",
            "is not issued for staging.example",
        ),
    ],
)
def test_a_verify_failure_says_what_failed_and_names_the_options(openssl, what) -> None:
    said = explain_failure(openssl)
    assert said is not None and what in said
    assert "--ca-bundle" in said and "--insecure" in said


def test_other_failures_are_left_as_they_are() -> None:
    assert explain_failure("connection refused") is None


def test_a_tls13_certificate_required_alert_names_the_client_certificate_options(tmp_path) -> None:
    """A real server that wants a client certificate and gets none: TLS 1.3 sends its alert
    after the handshake, on the first read."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    ca.configure_trust(server_context)
    server_context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=refuse_once, args=(listener, server_context), daemon=True).start()
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    context = TlsOptions(ca_bundle=tmp_path / "ca.pem").ssl_context()
    base_url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
    with (
        ConformanceClient(base_url, {"main": KEY}, ssl_context=context) as client,
        pytest.raises(TargetUnreachable) as refused,
    ):
        client.get("/categories")
    listener.close()
    assert "without an acceptable client certificate" in str(refused.value)
    assert "--client-cert FILE and --client-key FILE" in str(refused.value)


def refuse_once(listener: socket.socket, context: ssl.SSLContext) -> None:
    connection, _ = listener.accept()
    try:
        with context.wrap_socket(connection, server_side=True):
            pass
    except (ssl.SSLError, OSError):
        pass  # the handshake fails here: no client certificate


# -- the client certificate's one-line errors --------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    client = trustme.CA().issue_cert("checker@ci.example")
    client.cert_chain_pems[0].write_to_path(folder / "cert.pem")
    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase"),
    )
    (folder / "encrypted-key.pem").write_bytes(encrypted)
    client.private_key_pem.write_to_path(folder / "key.pem")
    return folder


def test_the_client_certificate_loads(pki: Path) -> None:
    TlsOptions(client_cert=pki / "cert.pem", client_key=pki / "key.pem").ssl_context()


def test_an_encrypted_key_is_one_line_not_a_passphrase_prompt(pki: Path) -> None:
    options = TlsOptions(client_cert=pki / "cert.pem", client_key=pki / "encrypted-key.pem")
    with pytest.raises(ConnectionSetupError) as refused:
        options.ssl_context()
    assert (
        str(refused.value)
        == f"--client-key {pki / 'encrypted-key.pem'}: encrypted; give it unencrypted"
    )


def test_an_unreadable_key_is_one_line(pki: Path) -> None:
    options = TlsOptions(client_cert=pki / "cert.pem", client_key=pki / "absent.pem")
    with pytest.raises(ConnectionSetupError, match=r"^--client-key .*absent.pem: cannot read it"):
        options.ssl_context()


# -- the TLS facts -------------------------------------------------------------------------------


def facts(days: float) -> TlsFacts:
    return TlsFacts(
        "TLSv1.3", "CN=staging.example", "CN=Company CA", NOW + datetime.timedelta(days=days)
    )


def test_expiry_warns_within_14_days_only() -> None:
    assert facts(14).expiry_warning(NOW) is None
    assert facts(13.9).expiry_warning(NOW) == (
        "the target's TLS certificate expires in 13 day(s), on 2026-12-07T09:36:00Z "
        "(CN=staging.example)"
    )
    assert "certificate expired, on" in facts(-1).expiry_warning(NOW)


def caddy_facts(hours_left: float) -> TlsFacts:
    """Caddy's internal CA: a 12-hour certificate, no subject, named by its SAN alone."""
    not_after = NOW + datetime.timedelta(hours=hours_left)
    lifetime = datetime.timedelta(hours=12)
    return TlsFacts(
        "TLSv1.3",
        "",
        "CN=Caddy Local Authority",
        not_after,
        not_after - lifetime,
        ("staging.internal", "10.0.0.5"),
    )


def test_a_short_lived_certificate_is_warned_of_only_past_its_renewal_point() -> None:
    assert caddy_facts(11).expiry_warning(NOW) is None
    assert caddy_facts(4.1).expiry_warning(NOW) is None  # its server renews it at 4 h left
    assert caddy_facts(3.5).expiry_warning(NOW) == (
        "the target's TLS certificate expires in 3 hour(s), on 2026-11-23T15:30:00Z "
        "(staging.internal, 10.0.0.5)"
    )


def test_a_certificates_alternative_names_are_read(tmp_path: Path) -> None:
    from cryptography import x509

    issued = trustme.CA().issue_cert("staging.internal", "127.0.0.1")
    certificate = x509.load_pem_x509_certificate(issued.cert_chain_pems[0].bytes())
    assert alternative_names(certificate) == ("staging.internal", "127.0.0.1")


def test_the_connection_is_described_plainly() -> None:
    insecure = statement_fields(True, TlsOptions(insecure=True), None, facts(90))
    assert describe(insecure) == "TLS certificate NOT verified (--insecure), no proxy"
    options = TlsOptions(ca_bundle=Path("ca.pem"), client_cert=Path("me.pem"))
    verified = statement_fields(True, options, "http://p:1", facts(90))
    assert describe(verified) == (
        "TLS certificate verified against ca.pem, client certificate me.pem, "
        "through the proxy http://p:1"
    )
    assert describe(statement_fields(False, TlsOptions(), None, None)) == "plain HTTP, no proxy"
    default_trust = statement_fields(True, TlsOptions(), None, None)  # facts unread: still TLS
    assert describe(default_trust) == "TLS certificate verified against the default CAs, no proxy"


# -- curl lines ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "curl"),
    [
        (TlsOptions(), "curl -i -X GET"),
        (TlsOptions(ca_bundle=Path("pki/ca.pem")), "curl -i --cacert pki/ca.pem -X GET"),
        (TlsOptions(insecure=True, ca_bundle=Path("ca.pem")), "curl -i -k -X GET"),
        (
            TlsOptions(client_cert=Path("my cert.pem"), client_key=Path("k.pem")),
            "curl -i --cert 'my cert.pem' --key k.pem -X GET",
        ),
    ],
)
def test_curl_lines_carry_the_runs_tls_options(options: TlsOptions, curl: str) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=[]))
    with ConformanceClient(
        "https://staging.example/v1",
        {"main": KEY},
        transport=transport,
        curl_options=options.curl_options(),
    ) as client:
        line = client.get("/categories").curl()
    assert line.startswith(curl + " https://staging.example/v1/categories"), line
    assert KEY not in line


def test_an_unreachable_proxy_is_named_without_its_password() -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    proxy = f"http://ci:s3cret@127.0.0.1:{port}"
    with (
        ConformanceClient("https://staging.example/v1", {"main": KEY}, proxy=proxy) as client,
        pytest.raises(TargetUnreachable) as unreachable,
    ):
        client.get("/categories")
    message = str(unreachable.value)
    assert message.startswith(
        f"cannot reach https://staging.example/v1/categories through the proxy "
        f"http://127.0.0.1:{port}: "
    ), message
    assert "s3cret" not in message and KEY not in message
