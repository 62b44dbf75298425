"""Signed evidence: `--sign-key` writes `conformance.intoto.jsonl`, a DSSE envelope of an in-toto
Statement (test-result v0.1) over the report files, and `verify --key` checks it.

One demo run (no base URL: the bundled reference) signed with an Ed25519 key serves most tests;
its envelope is checked here with a second DSSE implementation written from the specification
(the pre-authentication encoding by hand, cryptography's verify), not with the library that made
it. A failing run and a run with no verdict, each against the test double, must be signed FAILED
with their reasons; ECDSA P-256 signs a copy of the demo's folder; bad key files are refused in
one line before any request."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from securesystemslib.signer import SSlibKey

from conformance import __version__, signing_keys, spec
from conformance.reports import attestation, package
from conformance.reports import verify as verify_command
from conformance.settings import SettingsError, resolve
from tests.checker.test_command import Finished, checker, installed_script, run_command
from tests.shared.checker_runs import assert_no_key_in_outputs, new_keys, run_checker
from tests.shared.double import running_double

REPORTS = ("conformance.json", "report.html", "junit.xml", "exchanges.har", "badge.svg")
PACKAGE = "signed.zip"
QUICK = 60
FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"
SMOKE = ("--profile", "smoke")


# -- keys, as a vendor makes them ---------------------------------------------------------------


def pem_private(key, encryption=None) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        encryption or serialization.NoEncryption(),
    )


def pem_public(key) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@dataclass
class KeyPair:
    private: Path
    public: Path
    key: object  # cryptography's private key

    @classmethod
    def write(cls, folder: Path, name: str, key) -> KeyPair:
        folder.mkdir(parents=True, exist_ok=True)
        private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
        private.write_bytes(pem_private(key))
        public.write_bytes(pem_public(key))
        return cls(private, public, key)

    def secrets(self) -> list[str]:
        """What must never be shown: the PEM's body lines, and the raw key in hex and base64."""
        body = [line for line in self.private.read_text().splitlines() if "-----" not in line]
        raw = []
        if isinstance(self.key, ed25519.Ed25519PrivateKey):
            seed = self.key.private_bytes(
                serialization.Encoding.Raw,
                serialization.PrivateFormat.Raw,
                serialization.NoEncryption(),
            )
            raw = [seed.hex(), base64.b64encode(seed).decode().rstrip("=")]
        return body + raw


@pytest.fixture(scope="module")
def key_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("keys")


@pytest.fixture(scope="module")
def vendor(key_folder) -> KeyPair:
    return KeyPair.write(key_folder, "vendor", ed25519.Ed25519PrivateKey.generate())


@pytest.fixture(scope="module")
def stranger(key_folder) -> KeyPair:
    return KeyPair.write(key_folder, "stranger", ed25519.Ed25519PrivateKey.generate())


@pytest.fixture(scope="module")
def p256(key_folder) -> KeyPair:
    return KeyPair.write(key_folder, "p256", ec.generate_private_key(ec.SECP256R1()))


# -- a second DSSE implementation, from the specification ---------------------------------------


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body,
    each LEN the byte length in ASCII decimal."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def b64decode(text: str) -> bytes:
    """DSSE allows standard or URL-safe base64, padded or not."""
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def canonical(value) -> bytes:
    """OLPC canonical JSON, for the objects a keyid is made of: keys sorted, no whitespace,
    strings with only `\\` and `"` escaped (a PEM's newlines stay raw)."""
    if isinstance(value, dict):
        items = [canonical(k) + b":" + canonical(value[k]) for k in sorted(value)]
        return b"{" + b",".join(items) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(canonical(item) for item in value) + b"]"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return b'"' + escaped.encode("utf-8") + b'"'


def go_style_keyid(public_key) -> str:
    """The keyid go-securesystemslib's NewKey gives a public key (signerverifier/utils.go)."""
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keytype, scheme, public = "ed25519", "ed25519", raw.hex()
    else:
        pem = public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        keytype, scheme, public = "ecdsa", "ecdsa-sha2-nistp256", pem.decode().strip()
    key = {
        "keytype": keytype,
        "scheme": scheme,
        "keyid_hash_algorithms": ["sha256", "sha512"],
        "keyval": {"public": public},
    }
    return hashlib.sha256(canonical(key)).hexdigest()


def independently_verified(envelope_file: Path, public_key) -> dict:
    """The Statement of the envelope in a .jsonl bundle that verifies with `public_key`, checked
    with cryptography as go-securesystemslib's DSSE verifier checks: a signature whose keyid is
    set and is not the verifier's own is skipped, not tried. Lines that are no envelope are
    ignored. Raises InvalidSignature where no signature verifies."""
    for line in envelope_file.read_bytes().splitlines():
        try:
            envelope = json.loads(line)
            payload = b64decode(envelope["payload"])
        except (ValueError, KeyError, TypeError):
            continue  # not an envelope: a consumer ignores it
        assert envelope["payloadType"] == "application/vnd.in-toto+json"
        signed = pae(envelope["payloadType"], payload)
        for signature in envelope["signatures"]:
            if signature.get("keyid") and signature["keyid"] != go_style_keyid(public_key):
                continue
            try:
                if isinstance(public_key, ed25519.Ed25519PublicKey):
                    public_key.verify(b64decode(signature["sig"]), signed)
                else:
                    curve = ec.ECDSA(hashes.SHA256())
                    public_key.verify(b64decode(signature["sig"]), signed, curve)
            except InvalidSignature:
                continue
            return json.loads(payload)
    raise InvalidSignature("no signature verifies")


def test_the_keyid_written_is_go_securesystemslibs():
    """go-securesystemslib's own test vectors (signerverifier_test.go, TestLoadKey): its
    ed25519 and ecdsa test keys, and the keyids it asserts for them."""
    ed_public = "3f586ce67329419fb0081bd995914e866a7205da463d593b3b490eab2b27fd3f"
    ecdsa_pem = (
        "-----BEGIN PUBLIC KEY-----\n"
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEu+HEqqpXLa48lXH9rkRygsfsCKq1\n"
        "XM36oXymJ9wxpM68nCqkrZCVnZ9lkEeCwD8qWYTNxD5yfWXwJjFh+K7qLQ==\n"
        "-----END PUBLIC KEY-----\n"
    )
    ed_key = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(ed_public))
    ecdsa_key = serialization.load_pem_public_key(ecdsa_pem.encode())
    expected = [
        (ed_key, "52e3b8e73279d6ebdd62a5016e2725ff284f569665eb92ccb145d83817a02997"),
        (ecdsa_key, "98adf38602c48c5479e9a991ee3f8cbf541ee4f985e00f7a5fc4148d9a45b704"),
    ]
    for key, keyid in expected:
        assert go_style_keyid(key) == keyid
        assert signing_keys.with_go_keyid(SSlibKey.from_crypto(key)).keyid == keyid


def test_a_signature_under_another_keyid_is_skipped_as_go_does(signed, vendor, tmp_path):
    line = json.loads((signed.reports / attestation.ENVELOPE).read_bytes())
    assert line["signatures"][0]["keyid"] == go_style_keyid(vendor.key.public_key())
    line["signatures"][0]["keyid"] = "0" * 64
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(line))
    with pytest.raises(InvalidSignature):
        independently_verified(other, vendor.key.public_key())


def test_the_independent_check_refuses_a_changed_payload(vendor):
    """The test's own verifier can fail: one byte of the signed payload changed."""
    message = pae("application/vnd.in-toto+json", b'{"_type":"x"}')
    signature = vendor.key.sign(message)
    vendor.key.public_key().verify(signature, message)
    with pytest.raises(InvalidSignature):
        vendor.key.public_key().verify(signature, message.replace(b"x", b"y"))


# -- the demo run, signed -------------------------------------------------------------------------


@dataclass
class Signed:
    finished: Finished
    reports: Path
    package: Path


@pytest.fixture(scope="module")
def signed(tmp_path_factory, vendor) -> Iterator[Signed]:
    """`petstore-conformance --sign-key vendor.pem --package signed.zip`: the demo, signed."""
    cwd = tmp_path_factory.mktemp("signed")
    command = [*installed_script(), "--sign-key", str(vendor.private), "--package", PACKAGE]
    finished = run_command(command, cwd)
    yield Signed(finished, cwd / "reports", cwd / PACKAGE)


def statement_of(signed: Signed, vendor: KeyPair) -> dict:
    return independently_verified(signed.reports / attestation.ENVELOPE, vendor.key.public_key())


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(target: Path, cwd: Path, *key: Path) -> Finished:
    """`petstore-conformance verify TARGET [--key KEY]` as a user runs it."""
    options = ("--key", str(key[0])) if key else ()
    return run_command(checker("verify", str(target), *options), cwd, timeout=QUICK)


@pytest.fixture
def verified(capsys, tmp_path):
    """The same command's main() in this process: the checks of what does not verify, without
    the command's start-up (seconds each on a busy machine)."""

    def run(target: Path, *key: Path) -> Finished:
        options = ("--key", str(key[0])) if key else ()
        status = verify_command.main([str(target), *options])
        out, err = capsys.readouterr()
        return Finished(status, out, err, tmp_path)

    return run


def test_the_signed_demo_run_is_conformant_and_writes_one_envelope(signed):
    assert signed.finished.status == 0, signed.finished.describe()
    envelope = signed.reports / attestation.ENVELOPE
    assert len(envelope.read_bytes().splitlines()) == 1
    said = f"attestation: reports/{attestation.ENVELOPE}, signed with the ed25519 key"
    assert said in signed.finished.stdout


def test_the_envelope_verifies_independently_and_names_every_report_by_sha256(signed, vendor):
    statement = statement_of(signed, vendor)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert digests == {name: sha256_of(signed.reports / name) for name in REPORTS}
    assert digests["conformance.json"] == sha256_of(signed.reports / "conformance.json")


def test_the_predicate_is_the_runs_result_configuration_and_requirements(signed, vendor):
    predicate = statement_of(signed, vendor)["predicate"]
    document = json.loads((signed.reports / "conformance.json").read_text(encoding="utf-8"))
    outcomes = {e["id"]: e["outcome"] for e in document["requirements"]}
    assert predicate["result"] == ("WARNED" if document["warned_requirements"] else "PASSED")
    assert predicate["passedTests"] == [i for i, o in outcomes.items() if o == "passed"]
    assert predicate["warnedTests"] == document["warned_requirements"]
    assert predicate["failedTests"] == [] and predicate["passedTests"]
    configuration = {entry["name"]: entry for entry in predicate["configuration"]}
    assert configuration["petstore-conformance"]["annotations"]["version"] == __version__
    assert configuration["interface.md"]["digest"]["sha256"] == spec.interface_sha256()
    assert configuration["openapi.yaml"]["digest"]["sha256"] == spec.openapi_sha256()
    assert configuration["target"]["uri"] == document["target"]
    run = configuration["run"]["annotations"]
    assert (run["plan"], run["profile"], run["seed"]) == ("free", "full", "0")
    assert run["userAgent"] == f"petstore-conformance/{__version__}"


def test_verify_with_the_key_holds_for_the_folder_and_the_package(
    signed, vendor, tmp_path, verified
):
    """The folder as a user runs the command; the package through the same main()."""
    folder = verify(signed.reports, tmp_path, vendor.public)
    package = verified(signed.package, vendor.public)
    for finished in (folder, package):
        assert finished.status == 0, finished.describe()
        assert "signature: valid, by the ed25519 key" in finished.stdout
        assert "what it proves: the holder of the private key of vendor.pub.pem" in finished.stdout
        target_url = json.loads((signed.reports / "conformance.json").read_text())["target"]
        assert (
            f"what it does not prove: that the target ({target_url}) was the production service"
            in finished.stdout
        )


def test_the_package_holds_the_envelope_in_its_manifest(signed, verified):
    with zipfile.ZipFile(signed.package) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        envelope = archive.read(attestation.ENVELOPE)
    assert envelope == (signed.reports / attestation.ENVELOPE).read_bytes()
    assert manifest["files"][attestation.ENVELOPE] == hashlib.sha256(envelope).hexdigest()
    unsigned_check = verified(signed.package)  # as before: the hashes alone
    assert unsigned_check.status == 0, unsigned_check.describe()
    assert "add --key PUBLIC.pem to check who signed it" in unsigned_check.stdout


def test_another_key_does_not_verify(signed, stranger, verified):
    for target in (signed.reports, signed.package):
        finished = verified(target, stranger.public)
        assert finished.status == 1, finished.describe()
        assert "the signature does not verify with the ed25519 key" in finished.stdout
        assert "signature: valid" not in finished.stdout


def one_byte_changed(data: bytes) -> bytes:
    """The verdict's first letter, changed: what a forger would edit."""
    at = data.index(b'"verdict": "') + len(b'"verdict": "')
    return data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]


def test_one_byte_of_the_statement_changed_does_not_verify(signed, vendor, tmp_path, verified):
    folder = shutil.copytree(signed.reports, tmp_path / "edited")
    statement = folder / "conformance.json"
    statement.write_bytes(one_byte_changed(statement.read_bytes()))
    finished = verified(folder, vendor.public)
    assert finished.status == 1, finished.describe()
    assert "problem: conformance.json was altered since it was signed" in finished.stdout

    package = tmp_path / "edited.zip"
    with zipfile.ZipFile(signed.package) as old, zipfile.ZipFile(package, "w") as new:
        for name in old.namelist():
            data = old.read(name)
            new.writestr(name, one_byte_changed(data) if name == "conformance.json" else data)
    finished = verified(package, vendor.public)
    assert finished.status == 1, finished.describe()
    assert "conformance.json was altered since it was signed" in finished.stdout


def test_an_envelope_edited_or_missing_does_not_verify(signed, vendor, tmp_path, verified):
    folder = shutil.copytree(signed.reports, tmp_path / "forged")
    envelope = folder / attestation.ENVELOPE
    document = json.loads(envelope.read_bytes())
    statement = json.loads(b64decode(document["payload"]))
    statement["predicate"]["result"] = "PASSED"
    statement["predicate"]["failedTests"] = []
    statement["subject"][0]["digest"]["sha256"] = "0" * 64
    document["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    envelope.write_text(json.dumps(document))
    forged = verified(folder, vendor.public)
    envelope.unlink()
    unsigned = verified(folder, vendor.public)
    assert forged.status == 1 and "does not verify" in forged.stdout, forged.describe()
    assert unsigned.status == 1, unsigned.describe()
    assert f"no {attestation.ENVELOPE}: these files are not signed" in unsigned.stdout


@pytest.mark.parametrize("case", ["missing", "not-a-zip", "bad-key", "private-key-as-key"])
def test_unreadable_input_is_exit_2_with_one_line(signed, vendor, tmp_path, verified, case):
    target, key = signed.reports, vendor.public
    if case == "missing":
        target = tmp_path / "nothing-here"
    elif case == "not-a-zip":
        target = tmp_path / "evidence.zip"
        target.write_text("hello")
    elif case == "bad-key":
        key = tmp_path / "key.pem"
        key.write_text("not a key")
    else:
        key = vendor.private
    finished = verified(target, key)
    assert finished.status == 2, finished.describe()
    [line] = finished.stderr.strip().splitlines()
    assert line.startswith("petstore-conformance: ") and "Traceback" not in finished.output
    for secret in vendor.secrets():
        assert secret not in finished.output


def test_the_private_key_appears_in_no_output(signed, vendor):
    texts = {"console": signed.finished.output}
    for path in signed.finished.cwd.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_bytes().decode("utf-8", errors="replace")
    for where, text in texts.items():
        for secret in vendor.secrets():
            assert secret not in text, f"the private key appears in {where}"


# -- ECDSA P-256 ------------------------------------------------------------------------------


def test_an_ecdsa_p256_key_signs_and_verifies(signed, p256, tmp_path, verified):
    folder = shutil.copytree(signed.reports, tmp_path / "p256")
    (folder / attestation.ENVELOPE).unlink()
    attestation.write(folder, signing_keys.load_signer(p256.private))
    statement = independently_verified(folder / attestation.ENVELOPE, p256.key.public_key())
    digests = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert digests["conformance.json"] == sha256_of(folder / "conformance.json")
    finished = verified(folder, p256.public)
    assert finished.status == 0, finished.describe()
    assert "signature: valid, by the ecdsa-sha2-nistp256 key" in finished.stdout


def test_an_ecdsa_key_in_the_form_openssl_ecparam_writes_is_read(p256, tmp_path):
    sec1 = tmp_path / "sec1.pem"
    sec1.write_bytes(
        p256.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    assert b"BEGIN EC PRIVATE KEY" in sec1.read_bytes()
    signer = signing_keys.load_signer(sec1)
    assert signer.public_key.keyid == signing_keys.load_public_key(p256.public).keyid


# -- bad key files ------------------------------------------------------------------------------


def bad_key(case: str, folder: Path, vendor: KeyPair) -> tuple[Path, str]:
    """A key file that cannot sign, and the words its one line must say."""
    path = folder / f"{case}.pem"
    if case == "missing":
        return path, "cannot read it"
    if case == "rsa":
        path.write_bytes(pem_private(rsa.generate_private_key(65537, 2048)))
        return path, "an RSA key; use an Ed25519 or ECDSA P-256 key"
    if case == "p384":
        path.write_bytes(pem_private(ec.generate_private_key(ec.SECP384R1())))
        return path, "an EC key on secp384r1"
    if case == "encrypted":
        encryption = serialization.BestAvailableEncryption(b"passphrase")
        path.write_bytes(pem_private(vendor.key, encryption))
        return path, "the key is encrypted"
    if case == "public":
        return vendor.public, "not a PEM private key"
    path.write_text("hello")
    return path, "not a PEM key file"


BAD_KEYS = ["missing", "rsa", "p384", "encrypted", "public", "not-pem"]


@pytest.mark.parametrize("case", BAD_KEYS)
def test_a_key_file_that_cannot_sign_is_refused_in_settings(case, tmp_path, vendor, monkeypatch):
    path, says = bad_key(case, tmp_path, vendor)
    monkeypatch.setenv("PETSTORE_SIGN_KEY", str(path))
    with pytest.raises(SettingsError) as refused:
        resolve({})
    message = str(refused.value)
    assert says in message and str(path) in message and "\n" not in message


def test_a_bad_key_stops_the_command_before_any_request(tmp_path, vendor):
    """Exit 2, one line, nothing sent to the target and no report written: a key file that cannot
    sign, given on the command line or in PETSTORE_SIGN_KEY (every kind of bad file is read by
    the same function: the test above)."""
    keys_for_double = new_keys()
    url_log = tmp_path / "urls.log"
    with running_double([f"{k}:free" for k in keys_for_double], url_log=url_log) as base_url:
        for index, case in enumerate(["encrypted", "rsa"]):
            path, says = bad_key(case, tmp_path, vendor)
            environment = {"PETSTORE_API_KEY": keys_for_double[0]}
            command = checker("--base-url", base_url, "--report-dir", f"out-{case}")
            if index % 2:
                environment["PETSTORE_SIGN_KEY"] = str(path)
            else:
                command += ["--sign-key", str(path)]
            finished = run_command(command, tmp_path, environment, timeout=QUICK)
            assert finished.status == 2, finished.describe()
            [line] = finished.stderr.strip().splitlines()
            assert says in line, line
            assert not (tmp_path / f"out-{case}").exists()
            for secret in vendor.secrets():
                assert secret not in finished.output
    sent = url_log.read_text().splitlines() if url_log.exists() else []
    assert sent == [], f"a request was sent before the key was read: {sent[:3]}"


# -- runs that did not pass ----------------------------------------------------------------------


def signed_run(
    tmp_path: Path, vendor: KeyPair, verified, faults=(), options=()
) -> tuple[dict, dict]:
    """A run against the double, signed: (conformance.json, the signed Statement)."""
    options = [*SMOKE, *options, "--sign-key", str(vendor.private)]
    run = run_checker(tmp_path / "reports", faults=faults, options=options)
    assert_no_key_in_outputs(run)
    statement = independently_verified(
        run.report_dir / attestation.ENVELOPE, vendor.key.public_key()
    )
    finished = verified(run.report_dir, vendor.public)
    assert finished.status == 0, finished.describe()
    return run.statement, statement


def annotations(statement: dict) -> dict:
    [subject] = [s for s in statement["subject"] if s["name"] == "conformance.json"]
    return subject["annotations"]


def test_a_failing_run_is_signed_failed_with_its_failed_requirements(tmp_path, vendor, verified):
    document, statement = signed_run(tmp_path, vendor, verified, faults=[FAULT])
    assert document["exit_status"] == 1, document.get("reason")
    predicate = statement["predicate"]
    assert predicate["result"] == "FAILED"
    assert predicate["failedTests"] == [FAULT_ID] == document["failed_requirements"]
    assert FAULT_ID not in predicate["passedTests"]
    assert annotations(statement)["verdict"] == "not conformant"
    assert annotations(statement)["exitStatus"] == "1"


def test_a_run_with_no_verdict_is_signed_failed_and_says_why(tmp_path, vendor, verified):
    # Four requests cannot check every MUST requirement: the run ends with no verdict.
    document, statement = signed_run(tmp_path, vendor, verified, options=["--max-requests", "4"])
    assert document["verdict"] == "no verdict" and document["exit_status"] == 2
    assert statement["predicate"]["result"] == "FAILED"
    said = annotations(statement)
    assert said["verdict"] == "no verdict" and said["exitStatus"] == "2"
    assert said["reason"] == document["reason"] and "--max-requests" in said["reason"]


def test_githubs_bundle_kept_beside_the_reports_is_a_signature_not_an_unsigned_file(
    signed, vendor, tmp_path, verified
):
    """The Action keeps actions/attest's bundle in the report folder (conformance.sigstore.json):
    `verify` takes it for a signature of the files, as the envelope; any other file is not."""
    folder = tmp_path / "reports"
    shutil.copytree(signed.reports, folder)
    (folder / package.GITHUB_BUNDLE).write_text('{"mediaType": "application/vnd.dev.sigstore"}')
    assert verified(folder, vendor.public).status == 0
    (folder / "certificate.html").write_text("<p>conformant, PASSED</p>")
    refused = verified(folder, vendor.public)
    assert refused.status == 1
    assert "certificate.html is not signed" in refused.stdout
