"""`verify` against packages and folders made to fool it: one real signed package of a failed run
(the test double with a seeded fault, `--sign-key --package`), then each attack on a copy. Every
case ends with one exit status and a last line that says it, never a traceback, never a raw
control character; nothing but the package as signed verifies."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope

from conformance import signing_keys as keys
from conformance.reports import attestation
from conformance.reports import verify as verify_command
from tests.checker.test_attestation import FAULT, SMOKE, KeyPair
from tests.shared.checker_runs import run_checker

PACKAGE = "failed.zip"


@dataclass
class Evidence:
    reports: Path
    package: Path
    vendor: KeyPair


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> Evidence:
    folder = tmp_path_factory.mktemp("hostile")
    vendor = KeyPair.write(folder / "keys", "vendor", ed25519.Ed25519PrivateKey.generate())
    package = folder / PACKAGE
    options = [*SMOKE, "--sign-key", str(vendor.private), "--package", str(package)]
    run = run_checker(folder / "reports", faults=[FAULT], options=options)
    assert run.status == 1, run.describe()
    return Evidence(run.report_dir, package, vendor)


def members_of(package: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(package) as archive:
        return [(info, archive.read(info)) for info in archive.infolist()]


def repacked(
    evidence: Evidence, target: Path, members: list[tuple[str | zipfile.ZipInfo, bytes]]
) -> Path:
    """A zip of `members`, its manifest rewritten to list every one of them (a forger's)."""
    listed = {}
    for info, data in members:
        name = info.filename if isinstance(info, zipfile.ZipInfo) else info
        if name != "manifest.json":
            listed[name] = hashlib.sha256(data).hexdigest()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            if (info.filename if isinstance(info, zipfile.ZipInfo) else info) == "manifest.json":
                data = with_files_listed(data, listed)
            with_warnings_silenced(archive, info, data)
    return target


def with_files_listed(manifest: bytes, listed: dict) -> bytes:
    try:
        document = json.loads(manifest)
    except ValueError:
        return manifest  # a fuzzed manifest: kept as it is
    if not isinstance(document, dict):
        return manifest
    return json.dumps({**document, "files": listed}).encode()


def with_warnings_silenced(archive: zipfile.ZipFile, info, data: bytes) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": the point of some cases
        archive.writestr(info, data)


def original(evidence: Evidence) -> list[tuple[str | zipfile.ZipInfo, bytes]]:
    return [(info.filename, data) for info, data in members_of(evidence.package)]


def run_verify(capsys, target: Path, key: Path | None) -> tuple[int, str]:
    status = verify_command.main([str(target), *(["--key", str(key)] if key else [])])
    out, err = capsys.readouterr()
    return status, out + err


def assert_plain(output: str) -> None:
    assert "Traceback" not in output
    assert not any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in output), output


def special(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix: the mode is in the high bits of external_attr
    info.external_attr = mode << 16
    return info


def signed_envelope(payload: bytes, vendor: KeyPair) -> bytes:
    envelope = Envelope(payload, attestation.PAYLOAD_TYPE, {})
    envelope.sign(keys.load_signer(vendor.private))
    return json.dumps(envelope.to_dict()).encode() + b"\n"


def with_member(evidence: Evidence, name, data: bytes, first: bool = False):
    members = original(evidence)
    return [(name, data), *members] if first else [*members, (name, data)]


def replaced(evidence: Evidence, name: str, data: bytes):
    return [(n, data if n == name else d) for n, d in original(evidence)]


def forged_first(evidence: Evidence):
    """A forged conformance.json and report.html first, the signed ones last."""
    members = original(evidence)
    forged = [("conformance.json", b'{"verdict": "conformant"}'), ("report.html", b"PASSED")]
    return forged + members


def duplicate_predicate(evidence: Evidence) -> list:
    """A payload signed by the vendor's own key whose `predicate` is there twice: PASSED first
    (a first-wins reader's), the real one last (Python's)."""
    envelope = json.loads((evidence.reports / attestation.ENVELOPE).read_bytes())
    real = json.loads(Envelope.from_dict(envelope).payload)
    predicate = json.dumps(real.pop("predicate"))
    passed = json.dumps({"result": "PASSED", "failedTests": []})
    text = json.dumps(real)[:-1] + f', "predicate": {passed}, "predicate": {predicate}}}'
    return replaced(evidence, attestation.ENVELOPE, signed_envelope(text.encode(), evidence.vendor))


def bundle_of_three(evidence: Evidence) -> list:
    envelope = (evidence.reports / attestation.ENVELOPE).read_bytes().strip()
    lines = b'{"note": "not an envelope"}\n' + envelope + b"\nnot json at all\n"
    return replaced(evidence, attestation.ENVELOPE, lines)


NESTED = b"[" * 100_000 + b"]" * 100_000
ESCAPE = "\x1b[2J\x1b]0;owned\x07"
# name: (members, exit with the key, what the output says)
CASES = {
    "as-signed": (original, 0, "verified: signed by that key and unaltered"),
    "certificate-added": (
        lambda e: with_member(e, "certificate.html", b"<h1>conformant, PASSED</h1>"),
        1,
        "certificate.html is not signed",
    ),
    "signed-ones-last": (forged_first, 1, "conformance.json appears 2 times"),
    "traversal": (lambda e: with_member(e, "../evil.html", b"x"), 1, "../evil.html leaves"),
    "absolute": (lambda e: with_member(e, "/tmp/evil.html", b"x"), 1, "is an absolute path"),
    "drive": (lambda e: with_member(e, "C:evil.html", b"x"), 1, "is an absolute path"),
    "backslash": (lambda e: with_member(e, "a\\b.html", b"x"), 1, "has a backslash"),
    "symlink": (
        lambda e: with_member(e, special("link.html", stat.S_IFLNK | 0o777), b"/etc/passwd"),
        1,
        "link.html is a symbolic link",
    ),
    "fifo": (
        lambda e: with_member(e, special("pipe", stat.S_IFIFO | 0o644), b""),
        1,
        "pipe is a special file",
    ),
    "renamed": (
        lambda e: [("report.htm" if n == "report.html" else n, d) for n, d in original(e)],
        1,
        "report.html is signed but missing",
    ),
    "statement-is-a-list": (
        lambda e: replaced(e, "conformance.json", b"[]"),
        1,
        "conformance.json is not a JSON object",
    ),
    "statement-nested": (
        lambda e: replaced(e, "conformance.json", NESTED),
        1,
        "nested deeper than this checker reads",
    ),
    "envelope-nested": (
        lambda e: replaced(e, attestation.ENVELOPE, NESTED),
        1,
        "the signature does not verify",
    ),
    "duplicate-predicate": (duplicate_predicate, 1, "'predicate' appears twice"),
    "three-line-bundle": (bundle_of_three, 0, "verified: signed by that key and unaltered"),
    "statement-bomb": (
        lambda e: replaced(e, "conformance.json", b" " * (64 * 1024 * 1024)),
        2,
        "would inflate to 67108864 bytes",
    ),
    "envelope-too-large": (
        lambda e: replaced(e, attestation.ENVELOPE, b"x" * (8 * 1024 * 1024)),
        2,
        "conformance.intoto.jsonl would inflate",
    ),
    "many-members": (
        lambda e: original(e) + [(f"x{i}", b"") for i in range(40)],
        2,
        "members, past 32",
    ),
    "escape-in-a-name": (lambda e: with_member(e, f"{ESCAPE}.html", b"x"), 1, "\\x1b[2J"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_attack_gets_its_exit_status_and_one_named_line(evidence, tmp_path, capsys, case):
    make, expected, said = CASES[case]
    target = repacked(evidence, tmp_path / "attacked.zip", make(evidence))
    status, output = run_verify(capsys, target, evidence.vendor.public)
    assert status == expected, output
    assert said in output
    assert_plain(output)
    last = output.strip().splitlines()[-1]
    if expected == 0:
        assert "verified" in last and "NOT" not in last and "FAILED" in last  # a failed run
    elif expected == 1:
        assert "NOT verified" in last
    else:
        assert len(output.strip().splitlines()) == 1


@pytest.mark.parametrize("case", ["certificate-added", "signed-ones-last", "traversal", "symlink"])
def test_without_the_key_an_added_or_doubled_member_does_not_verify_either(
    evidence, tmp_path, capsys, case
):
    make, _, _ = CASES[case]
    target = repacked(evidence, tmp_path / "attacked.zip", make(evidence))
    status, output = run_verify(capsys, target, None)
    assert status == 1, output
    assert "altered or inconsistent" in output.strip().splitlines()[-1]


def test_a_folder_with_files_beside_the_evidence_does_not_verify(evidence, tmp_path, capsys):
    folder = shutil.copytree(evidence.reports, tmp_path / "reports", symlinks=True)
    status, output = run_verify(capsys, folder, evidence.vendor.public)
    assert status == 0, output
    (folder / "certificate.html").write_text("conformant, PASSED")
    (folder / "link.html").symlink_to(folder / "report.html")
    status, output = run_verify(capsys, folder, evidence.vendor.public)
    assert status == 1, output
    assert "certificate.html is not signed" in output
    assert "link.html is a symbolic link" in output
    assert "NOT verified" in output.strip().splitlines()[-1]


def test_a_package_whose_contents_fail_never_ends_unaltered(evidence, tmp_path, capsys):
    """The signature holds; the manifest's verdict was edited: the package fails, and says so
    last."""
    members = original(evidence)
    manifest = json.loads(dict(members)["manifest.json"])
    manifest["result"] = f"conformant, PASSED {ESCAPE}"
    members = [
        (n, json.dumps(manifest).encode() if n == "manifest.json" else d) for n, d in members
    ]
    status, output = run_verify(
        capsys, repacked(evidence, tmp_path / "m.zip", members), evidence.vendor.public
    )
    assert status == 1, output
    assert "the manifest's result is not the statement's" in output
    assert_plain(output)
    assert "unaltered" not in output.strip().splitlines()[-1].replace("signed, unaltered", "")


def test_verify_evidence_returns_the_signed_statement(evidence):
    verification = verify_command.verify_evidence(evidence.package, evidence.vendor.public)
    assert verification.status == 0, verification.lines
    assert verification.statement["predicate"]["result"] == "FAILED"
    assert verification.statement["predicate"]["failedTests"] == ["AUTH-WWW-AUTHENTICATE"]
    refused = verify_command.verify_evidence(evidence.package / "nothing", evidence.vendor.public)
    assert refused.status == 2 and refused.statement is None


# -- fuzzing: whatever a package holds, one exit status, and 0 only for the package as signed --

NAMES = st.sampled_from(
    [
        "conformance.json",
        "report.html",
        "manifest.json",
        attestation.ENVELOPE,
        "expected-failures.yaml",
        "certificate.html",
        "../x",
        "/x",
        "a\\b",
        "d/",
        "x\x1b[0m",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
CONTENT = st.one_of(
    st.binary(max_size=64),
    JSON.map(lambda value: json.dumps(value).encode()),
    st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth),
)
CHANGE = st.tuples(st.sampled_from(["add", "replace", "rename", "double", "drop"]), NAMES, CONTENT)


def changed(members: list, change: tuple) -> list:
    kind, name, content = change
    names = [n for n, _ in members]
    if kind == "add":
        return [*members, (name, content)]
    if kind == "replace":
        return [(n, content if n == name else d) for n, d in members] + (
            [] if name in names else [(name, content)]
        )
    if kind == "rename":
        return [(name + ".renamed" if n == name else n, d) for n, d in members] + (
            [] if name in names else [(name, content)]
        )
    if kind == "double":
        return [(name, content), *members]
    return [(n, d) for n, d in members if n != name] or [(name, content)]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=st.lists(CHANGE, min_size=1, max_size=3), rewrite_manifest=st.booleans())
def test_no_change_to_a_signed_package_verifies(
    evidence, tmp_path, capsys, changes, rewrite_manifest
):
    start = original(evidence)
    members = start
    for change in changes:
        members = changed(members, change)
    target = tmp_path / "fuzzed.zip"
    if rewrite_manifest:
        repacked(evidence, target, members)
    else:
        with zipfile.ZipFile(target, "w") as archive:
            for name, data in members:
                with_warnings_silenced(archive, name, data)
    for key in (evidence.vendor.public, None):
        status, output = run_verify(capsys, target, key)
        assert status in (0, 1, 2), output
        assert_plain(output)
        if key is not None and members != start:
            assert status != 0, (changes, output)


STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
SIGNED_SHAPES = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"_type": st.just(STATEMENT_TYPE), "predicateType": st.just(PREDICATE_TYPE)},
        optional={"subject": JSON, "predicate": JSON},
    ),
    st.fixed_dictionaries(
        {
            "_type": st.just(STATEMENT_TYPE),
            "predicateType": st.just(PREDICATE_TYPE),
            "subject": st.lists(
                st.fixed_dictionaries({"name": NAMES}, optional={"digest": JSON}), max_size=3
            ),
            "predicate": st.fixed_dictionaries(
                {"result": st.sampled_from(["PASSED", "FAILED"])},
                optional={"configuration": JSON, "failedTests": JSON, "passedTests": JSON},
            ),
        }
    ),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=SIGNED_SHAPES)
def test_no_signed_payload_of_another_shape_verifies(evidence, tmp_path, capsys, shape):
    """Signed by the vendor's own key, yet not the Statement of these files: one line, exit 1."""
    envelope = signed_envelope(json.dumps(shape).encode(), evidence.vendor)
    members = replaced(evidence, attestation.ENVELOPE, envelope)
    target = repacked(evidence, tmp_path / "shaped.zip", members)
    status, output = run_verify(capsys, target, evidence.vendor.public)
    assert status == 1, output
    assert_plain(output)
    assert "NOT verified" in output.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "payload",
    [b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe not utf-8", b'{"a": NaN}', b"[]"],
    ids=["nested", "not-utf-8", "nan", "list"],
)
def test_a_signed_payload_that_is_no_json_statement_is_one_line(
    evidence, tmp_path, capsys, payload
):
    members = replaced(evidence, attestation.ENVELOPE, signed_envelope(payload, evidence.vendor))
    target = repacked(evidence, tmp_path / "payload.zip", members)
    status, output = run_verify(capsys, target, evidence.vendor.public)
    assert status == 1, output
    assert_plain(output)
    problems = [line for line in output.splitlines() if line.startswith("problem:")]
    assert len(problems) == 1 and "signed payload" in problems[0], output
