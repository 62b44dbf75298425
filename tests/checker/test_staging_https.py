"""Staging behind HTTPS: the reference behind Debian's nginx with certificates made here (a CA,
a server certificate for 127.0.0.1, a client certificate), reached directly or through a
CONNECT proxy; the checker trusts the CA it is given, shows the client certificate a gateway
asks for, skips verification only when asked, and says how it reached the target."""

from __future__ import annotations

import datetime
import functools
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from html import escape
from pathlib import Path

import pytest
import trustme

from conformance import cli
from conformance.burst.spender import send_wave
from conformance.burst.waves import Wave
from conformance.httpclient.client import ConformanceClient
from conformance.httpclient.connection import TlsOptions
from tests.shared.checker_runs import CheckerRun, new_keys, run_command
from tests.shared.connect_proxy import ConnectProxy
from tests.shared.nginx import Nginx, running_nginx
from tests.shared.servers import reference_args, start_reference

pytestmark = pytest.mark.nginx
MINUTE_SECONDS = 3  # the demo's minute: a full run's burst waits out a few of them

COMMON = """
    upstream reference {{ server {upstream}; keepalive 16; }}
    log_format ports '$remote_port $status $request';
    client_max_body_size 16m;
"""
SERVER = """
    server {{
        listen 127.0.0.1:{port} ssl;
        access_log {folder}/access.log ports;
        ssl_certificate {folder}/{certificate};
        ssl_certificate_key {folder}/{certificate};
        {extra}
        location / {{ proxy_pass http://reference; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }}
    }}
"""
# The addresses of the one nginx: the certificate each shows, and what else it asks.
ADDRESSES = {
    "staging": ("server.pem", ""),
    "mutual": ("server.pem", "ssl_client_certificate {folder}/ca.pem; ssl_verify_client on;"),
    "self-signed": ("self-signed.pem", ""),
    "expired": ("expired.pem", ""),
    "wrong-name": ("wrong-name.pem", ""),
}


def nginx_config(folder: Path, upstream: str, ports: list[int]) -> str:
    servers = [
        SERVER.format(port=port, folder=folder, certificate=certificate, extra=extra)
        for port, (certificate, extra) in zip(ports, ADDRESSES.values(), strict=True)
    ]
    return COMMON.format(upstream=upstream) + "".join(servers).replace("{folder}", str(folder))


def make_pki(folder: Path) -> None:
    """A CA, the certificates the addresses show, a client certificate, and one a stranger's."""
    now = datetime.datetime.now(datetime.UTC)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(folder / "ca.pem")
    # Ten days left: the report must warn (within 14 days), and the run still connects.
    expiry = now + datetime.timedelta(days=10, hours=12)
    server = ca.issue_cert("127.0.0.1", common_name="staging.example", not_after=expiry)
    server.private_key_and_cert_chain_pem.write_to_path(folder / "server.pem")
    (folder / "self-signed.pem").write_bytes(ca.private_key_pem.bytes() + ca.cert_pem.bytes())
    past = (now - datetime.timedelta(days=30), now - datetime.timedelta(days=1))
    expired = ca.issue_cert("127.0.0.1", not_before=past[0], not_after=past[1])
    expired.private_key_and_cert_chain_pem.write_to_path(folder / "expired.pem")
    wrong = ca.issue_cert("other.example")
    wrong.private_key_and_cert_chain_pem.write_to_path(folder / "wrong-name.pem")
    client = ca.issue_cert("checker@ci.example")
    client.cert_chain_pems[0].write_to_path(folder / "client-cert.pem")
    client.private_key_pem.write_to_path(folder / "client-key.pem")
    stranger = trustme.CA().issue_cert("checker@elsewhere.example")  # a CA nginx does not know
    stranger.private_key_and_cert_chain_pem.write_to_path(folder / "stranger.pem")


class Staging:
    """The running set-up: files of the PKI, nginx's addresses, the reference's keys."""

    def __init__(self, folder: Path, nginx: Nginx, keys: tuple[str, str]):
        self.folder = folder
        self.nginx = nginx
        self.keys = keys
        self.urls = {
            name: f"https://127.0.0.1:{port}/v1"
            for name, port in zip(ADDRESSES, nginx.ports, strict=True)
        }
        self.url = self.urls["staging"]
        self.mtls_url = self.urls["mutual"]

    def file(self, name: str) -> str:
        return str(self.folder / name)

    def check(self, report_dir: Path, *options: str, url: str | None = None) -> CheckerRun:
        """`petstore-conformance` as a user runs it, the keys in the environment."""
        return run_command(url or self.url, self.keys, report_dir, options=options)


@pytest.fixture(scope="module")
def staging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staging]:
    folder = tmp_path_factory.mktemp("staging")
    make_pki(folder)
    keys = new_keys()
    reference = start_reference(
        reference_args([f"{key}:free" for key in keys], minute_seconds=MINUTE_SECONDS)
    )
    upstream = reference.base_url.split("/")[2]
    try:
        config = functools.partial(nginx_config, folder, upstream)
        with running_nginx(folder, config, ports=len(ADDRESSES)) as nginx:
            yield Staging(folder, nginx, keys)
    finally:
        reference.stop()


@pytest.fixture(autouse=True)
def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reach nginx directly, whatever proxy the machine running the tests is told to use; the
    proxy test names its own."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def refusal(capsys: pytest.CaptureFixture[str], staging: Staging, *args: str) -> str:
    """Run the command in this process where it must stop before any test: its one line."""
    status = cli.main(["--api-key", staging.keys[0], "--profile", "smoke", *args])
    out, err = capsys.readouterr()
    assert status == 2, (status, out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert staging.keys[0] not in err
    return lines[0]


def assert_clean(run: CheckerRun, *secrets: str) -> None:
    """No key, no private key material, no proxy password in any output of the run."""
    texts = {"console": run.output}
    texts |= {
        p.name: p.read_text(errors="replace") for p in run.report_dir.rglob("*") if p.is_file()
    }
    for where, text in texts.items():
        for secret in (*run.keys, "PRIVATE KEY", "BEGIN CERTIFICATE", *secrets):
            assert secret not in text, f"{secret[:12]}... appears in {where}"
    assert "Traceback" not in run.output, run.describe()


# -- trust -------------------------------------------------------------------------------------


def test_untrusted_certificate_is_refused_naming_the_option(capsys, staging: Staging) -> None:
    line = refusal(capsys, staging, "--base-url", staging.url)
    assert "signed by a CA this machine does not trust" in line
    assert "--ca-bundle FILE" in line and "PETSTORE_CA_BUNDLE" in line


@pytest.mark.parametrize(
    ("address", "trusting", "said"),
    [
        (
            "self-signed",
            False,
            "the target's certificate is self-signed: pass that certificate with --ca-bundle",
        ),
        ("expired", True, "the target's certificate has expired: --ca-bundle cannot help"),
        ("wrong-name", True, "the target's certificate is not issued for 127.0.0.1: use the"),
    ],
)
def test_certificate_failure_says_what_failed(capsys, staging, address, trusting, said) -> None:
    trust = ("--ca-bundle", staging.file("ca.pem")) if trusting else ()
    line = refusal(capsys, staging, "--base-url", staging.urls[address], *trust)
    assert said in line, line
    assert "--ca-bundle" in line and "--insecure" in line


def test_trusted_ca_gives_the_usual_verdict_and_the_tls_facts(tmp_path, staging: Staging) -> None:
    run = staging.check(tmp_path, "--profile", "smoke", "--ca-bundle", staging.file("ca.pem"))
    assert run.status == 0, run.describe()
    fields = run.statement["connection"]
    assert fields["insecure"] is False and fields["proxy"] is None
    assert fields["ca_bundle"] == staging.file("ca.pem")
    tls = fields["tls"]
    assert tls["protocol"] in ("TLSv1.2", "TLSv1.3")
    assert "trustme" in tls["issuer"]  # the CA made above
    assert "CN=staging.example" in tls["subject"]
    assert tls["days_left"] == 10
    warning = f"the target's TLS certificate expires in 10 day(s), on {tls['expires']}"
    assert any(w.startswith(warning) for w in run.statement["warnings"])
    assert warning in run.output
    html = (tmp_path / "report.html").read_text()
    assert f"TLS certificate verified against {staging.file('ca.pem')}" in html
    assert f"{tls['protocol']}; certificate {tls['subject']}" in html
    assert escape(warning) in html
    assert_clean(run)


def test_bad_ca_bundle_is_one_line(capsys, staging: Staging, tmp_path: Path) -> None:
    missing = tmp_path / "no-such.pem"
    line = refusal(capsys, staging, "--base-url", staging.url, "--ca-bundle", str(missing))
    assert line.endswith(f"--ca-bundle {missing}: cannot read it (No such file or directory)")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    line = refusal(capsys, staging, "--base-url", staging.url, "--ca-bundle", str(garbage))
    assert f"--ca-bundle {garbage}: not a PEM certificate file" in line


# -- mutual TLS ----------------------------------------------------------------------------------


def test_mutual_tls_works_with_the_client_certificate(tmp_path, staging, monkeypatch) -> None:
    monkeypatch.setenv("PETSTORE_CLIENT_CERT", staging.file("client-cert.pem"))
    monkeypatch.setenv("PETSTORE_CLIENT_KEY", staging.file("client-key.pem"))
    ca_bundle = ("--ca-bundle", staging.file("ca.pem"))
    run = staging.check(tmp_path, "--profile", "smoke", *ca_bundle, url=staging.mtls_url)
    assert run.status == 0, run.describe()
    assert run.statement["connection"]["client_certificate"] == staging.file("client-cert.pem")
    assert_clean(run)


def test_the_burst_sends_over_mutual_tls_with_the_runs_context(staging: Staging) -> None:
    """The exhaustion burst's own transport, not httpx: the run's SSL context (CA and client
    certificate) on kept-alive TLS connections through nginx."""
    tls = TlsOptions(
        ca_bundle=Path(staging.file("ca.pem")),
        client_cert=Path(staging.file("client-cert.pem")),
        client_key=Path(staging.file("client-key.pem")),
    )
    keys = {"main": staging.keys[1]}
    with ConformanceClient(staging.mtls_url, keys, ssl_context=tls.ssl_context()) as client:
        assert client.burst.burst_request("/categories", "main") is not None  # no proxy: its own
        sent = send_wave(client, "main", Wave(6, 2))
    assert [e.status for e in sent] == [200] * 6
    assert all(e.header("X-RateLimit-Limit") for e in sent)


def test_mutual_tls_without_or_with_a_refused_certificate_is_exit_2(capsys, staging) -> None:
    trusted = ("--base-url", staging.mtls_url, "--ca-bundle", staging.file("ca.pem"))
    line = refusal(capsys, staging, *trusted)
    assert "no acceptable client certificate was sent" in line
    assert "--client-cert FILE and --client-key FILE" in line
    line = refusal(capsys, staging, *trusted, "--client-cert", staging.file("stranger.pem"))
    assert "no acceptable client certificate was sent" in line


def test_unusable_client_certificate_is_one_line(capsys, staging, tmp_path: Path) -> None:
    trusted = ("--base-url", staging.mtls_url, "--ca-bundle", staging.file("ca.pem"))
    missing = tmp_path / "missing.pem"
    line = refusal(capsys, staging, *trusted, "--client-cert", str(missing))
    assert line.endswith(f"--client-cert {missing}: cannot read it (No such file or directory)")
    line = refusal(
        capsys,
        staging,
        *trusted,
        *("--client-cert", staging.file("client-cert.pem")),
        *("--client-key", staging.file("stranger.pem")),  # another certificate's key
    )
    assert "--client-cert/--client-key" in line and "key values mismatch" in line
    line = refusal(capsys, staging, *trusted, "--client-key", staging.file("client-key.pem"))
    assert line.endswith("--client-key needs --client-cert (the certificate)")


# -- --insecure ----------------------------------------------------------------------------------


def test_insecure_works_and_every_report_says_so(tmp_path, staging, capsys) -> None:
    package = tmp_path / "evidence.zip"
    report_dir = tmp_path / "reports"
    run = staging.check(report_dir, "--profile", "smoke", "--insecure", "--package", str(package))
    assert run.status == 0, run.describe()
    said = "the target's TLS certificate was not verified"
    assert said in run.output
    assert run.statement["connection"]["insecure"] is True
    assert any(said in warning for warning in run.statement["warnings"])
    assert run.statement["connection"]["tls"]["protocol"].startswith("TLS")  # read unverified
    assert "TLS certificate NOT verified (--insecure)" in (report_dir / "report.html").read_text()
    with zipfile.ZipFile(package) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["connection"]["insecure"] is True
    assert cli.main(["verify", str(package)]) == 0
    assert f"warning: --insecure: {said}" in capsys.readouterr().out
    assert_clean(run)


# -- a proxy in between --------------------------------------------------------------------------


def test_full_run_through_a_connect_proxy_names_it(tmp_path, staging, monkeypatch) -> None:
    """The one full run here: the exhaustion burst too must go through the proxy, with the
    run's TLS settings."""
    logged_before = len(staging.nginx.access_log())
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"http://ci-user:proxy-secret@127.0.0.1:{proxy.port}")
        run = staging.check(tmp_path, "--ca-bundle", staging.file("ca.pem"))
    assert run.status == 0, run.describe()
    assert run.statement["connection"]["proxy"] == f"http://127.0.0.1:{proxy.port}"
    assert f"through the proxy http://127.0.0.1:{proxy.port}" in run.output
    # Every request nginx served during the run came through one of the proxy's tunnels.
    tunnel_ports = {port for _, port in proxy.tunnels}
    served = staging.nginx.access_log()[logged_before:]
    assert all(int(line.split()[0]) in tunnel_ports for line in served), served[:5]
    assert len(served) == run.statement["requests"]["total"], (len(served), len(proxy.tunnels))
    assert any(line.split()[1] == "429" for line in served)  # the exhaustion burst's too
    assert proxy.authorizations and all(a.startswith("Basic ") for a in proxy.authorizations)
    assert_clean(run, "proxy-secret")


# -- the plain-pytest route -----------------------------------------------------------------------


def test_plain_pytest_takes_the_same_options(tmp_path, staging: Staging) -> None:
    command = [
        *(sys.executable, "-m", "pytest", "--pyargs", "conformance.suite"),
        *("-p", "no:cacheprovider", "--profile", "smoke", "--report-dir", "out"),
        *("--base-url", staging.mtls_url, "--ca-bundle", staging.file("ca.pem")),
        *("--client-cert", staging.file("client-cert.pem")),
        *("--client-key", staging.file("client-key.pem")),
    ]
    environment = {**os.environ, "PETSTORE_API_KEY": staging.keys[0]}
    finished = subprocess.run(
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output[-3000:]
    fields = json.loads((tmp_path / "out" / "conformance.json").read_text())["connection"]
    assert fields["client_certificate"] == staging.file("client-cert.pem")
    assert fields["tls"]["protocol"].startswith("TLS")
    assert f"connection: TLS certificate verified against {staging.file('ca.pem')}" in output
    assert staging.keys[0] not in output
