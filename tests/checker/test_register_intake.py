"""What comes into the register (issue 51 items 1, 2, 4, 5, 6; issue 50 items 4, 5): the keyring,
the policy, a package before and after its signature, the claims it makes, and the judgement
`register` and `verify --keyring --policy` share. One real signed smoke run of the test double
(conformant), then variants of it signed again in-process; judged in-process where the exit
status is not the point, through the command where it is."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import time
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path
from zipfile import ZIP_DEFLATED as DEFLATED

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from conformance import cli
from conformance import signing_keys as keys
from conformance.console.closing import UNNAMED, console_lines
from conformance.evidence import baseline
from conformance.evidence.conclusion import Conclusion
from conformance.register import entries, judgement, keyring, names, policy, verifying
from conformance.register.documents import DocumentError
from conformance.reports import attestation, badge, package
from tests.checker.test_attestation import SMOKE, KeyPair
from tests.shared import packages
from tests.shared.checker_runs import run_checker

TIME = "%Y-%m-%dT%H:%M:%SZ"
NOW = datetime.datetime.now(datetime.UTC)


@dataclass
class Run:
    folder: Path
    reports: Path
    package: Path
    acme: KeyPair
    bolt: KeyPair

    def variant(self, name: str, key: KeyPair | None = None, reports=None, **stated) -> Path:
        """The run restated (a full profile by default, so that it can certify), signed again."""
        stated = {"profile": "full", **stated}
        target = self.folder / "variants" / f"{name}.zip"
        target.parent.mkdir(exist_ok=True)
        scratch = self.folder / "scratch"
        scratch.mkdir(exist_ok=True)
        key = key or self.acme
        return packages.signed_variant(reports or self.reports, target, key.private, scratch,
                                       **stated)  # fmt: skip

    def ring(self, extra: str = "", acme_key: str | None = None) -> Path:
        path = self.folder / "keyring.yaml"
        path.write_text(
            "vendors:\n"
            f"  Acme Pets:\n    keys:\n      - {acme_key or self.acme.public}\n"
            f"  Bolt Pets:\n    keys: [{self.bolt.public}]\n" + extra,
            encoding="utf-8",
        )
        return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    return signed_run(tmp_path_factory)


def signed_run(tmp_path_factory) -> Run:
    """A conformant smoke run of the test double, signed by Acme Pets and packaged."""
    folder = tmp_path_factory.mktemp("intake")
    acme = KeyPair.write(folder / "keys", "acme", ed25519.Ed25519PrivateKey.generate())
    bolt = KeyPair.write(folder / "keys", "bolt", ed25519.Ed25519PrivateKey.generate())
    package = folder / "acme.zip"
    options = [*SMOKE, "--vendor", "Acme Pets", "--implementation", "acme 1.0"]
    options += ["--sign-key", str(acme.private), "--package", str(package)]
    checked = run_checker(folder / "reports", options=options)
    assert checked.status == 0, checked.describe()
    return Run(folder, checked.report_dir, package, acme, bolt)


def judge(run: Run, path: Path, ring: Path | None = None, rules=policy.DEFAULT, **options):
    loaded = keyring.load(ring or run.ring())
    try:
        # The body's clock as the test runs, not as it was collected: a run signed minutes
        # after collection (CI's long parallel phase) must not read as one from the future.
        now = options.pop("now", None) or datetime.datetime.now(datetime.UTC)
        return judgement.judge(path, loaded, rules, now, **options)
    finally:
        loaded.close()


def register(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["register", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def verify(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["verify", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- the judgement of a package that holds ------------------------------------------------------


def test_a_conformant_full_run_is_certified_with_its_digests(run):
    path = run.variant("full")
    found = judge(run, path)
    assert isinstance(found, entries.Entry), found
    assert found.reason is None and found.vendor == "Acme Pets"
    assert found.package_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    public = serialization.load_pem_public_key(run.acme.public.read_bytes())
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert found.key_fingerprint == hashlib.sha256(der).hexdigest()
    assert found.key_path == run.acme.public
    assert found.policy_sha256 == policy.DEFAULT.sha256
    assert "key_path" not in found.to_json() and found.to_json()["package_sha256"]
    assert found.result == found.verdict == "conformant"


def test_the_vendor_is_matched_through_its_normalised_name(run):
    found = judge(run, run.variant("case", vendor="ACME  pets"))
    assert isinstance(found, entries.Entry) and found.reason is None, found
    assert found.vendor == "Acme Pets"  # the keyring's name, not the package's


# -- claims ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stated", "reason"),
    [
        ({"time": "2099-01-01T00:00:00Z"}, "after the register's clock"),
        ({"time": "9999-12-31T23:59:59Z"}, "after the register's clock"),
        ({"time": "0900-01-01T00:00:00Z"}, "before the interface it checks existed (2026-11-21)"),
        ({"time": "yesterday"}, "states no time"),
        ({"implementation": "x" * 201}, "an implementation longer than 200 characters"),
        ({"vendor": "Acme Pets " + "x" * 100}, "names a vendor that is longer than 100"),
        ({"result": "certified by Acme"}, "does not follow from its verdict and exit status"),
    ],
)
def test_a_claim_the_register_cannot_hold_rejects_the_package(run, stated, reason):
    found = judge(run, run.variant("claim", **stated))
    assert isinstance(found, str) and reason in found, found


def surrogate_variant(run: Run, name: str, field: str, value: str) -> Path:
    """A package whose signed conformance.json states `value` holding a lone surrogate (JSON's
    "\\ud800" escape): the checker's signer cannot write one, a forger's can."""
    folder = run.folder / f"surrogate-{name}"
    shutil.copytree(run.reports, folder, dirs_exist_ok=True)
    statement = json.loads((folder / "conformance.json").read_text())
    statement.update(profile="full", **{field: value.replace("\ud800", "SURROGATE")})
    (folder / "conformance.json").write_text(json.dumps(statement), encoding="utf-8")
    signed = attestation.make_statement(folder)
    placeholder = hashlib.sha256((folder / "conformance.json").read_bytes()).hexdigest()
    data = (folder / "conformance.json").read_bytes().replace(b"SURROGATE", b"\\ud800")
    [subject] = [s for s in signed["subject"] if s["name"] == "conformance.json"]
    subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    envelope = folder / attestation.ENVELOPE
    envelope.write_text(attestation.envelope_line(signed, keys.load_signer(run.acme.private)))
    built = package.build(run.folder / f"{name}-placeholder.zip", folder, envelope=envelope)

    def forged(member: bytes) -> bytes:
        if member.startswith(b"{") and placeholder.encode() in member:  # the manifest
            member = member.replace(placeholder.encode(), subject["digest"]["sha256"].encode())
            return member.replace(b"SURROGATE", b"\\ud800")
        return data if b"SURROGATE" in member else member

    target = run.folder / f"{name}.zip"
    with zipfile.ZipFile(built) as original, zipfile.ZipFile(target, "w") as copy:
        for member in original.namelist():
            copy.writestr(member, forged(original.read(member)))
    return target


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        ("implementation", "states an implementation holding a lone surrogate"),
        ("vendor", "names a vendor that holds a lone surrogate"),
        ("target", "states a target holding a lone surrogate"),
    ],
)
def test_a_lone_surrogate_in_a_signed_text_rejects_the_package(run, tmp_path, capsys, field,
                                                                reason):  # fmt: skip
    path = surrogate_variant(run, field, field, "Acme Pets \ud800")
    found = judge(run, path)
    assert isinstance(found, str) and reason in found, found
    status, out, err = register(capsys, path, "--keyring", run.ring(), "--out", tmp_path / "s")
    assert status == 1 and reason in err and "Traceback" not in err


def test_a_run_a_few_minutes_ahead_of_the_clock_is_not_from_the_future(run):
    ahead = (NOW + datetime.timedelta(minutes=5)).strftime(TIME)
    found = judge(run, run.variant("ahead", time=ahead))
    assert isinstance(found, entries.Entry) and found.reason is None, found


@pytest.mark.parametrize(
    ("stated", "reason"),
    [
        ({"spec_version": "2.0.0"}, "policy: checks interface version 2.0.0, not 1.0.0"),
        ({"suite_version": "99.0.0"}, "policy: made with petstore-conformance 99.0.0, not"),
        ({"spec_sha256": "0" * 64}, "checked against another interface description"),
        ({"interface_sha256": "1" * 64}, "checked against another interface description"),
        ({"profile": "smoke"}, "policy: the smoke profile does not certify (full or day do)"),
    ],
)
def test_what_is_not_the_registers_own_verifies_but_does_not_certify(run, stated, reason):
    found = judge(run, run.variant("foreign", **stated))
    assert isinstance(found, entries.Entry), found
    assert found.reason is not None and found.reason.startswith(reason), found.reason


def test_a_junit_recording_failures_beside_a_conformant_statement_is_refused(run):
    reports = run.folder / "junit-reports"
    shutil.copytree(run.reports, reports, dirs_exist_ok=True)
    junit = ET.parse(reports / "junit.xml")
    suite = junit.getroot() if junit.getroot().tag == "testsuite" else junit.find("testsuite")
    for number in range(21):
        case = ET.SubElement(suite, "testcase", name=f"REQ-{number}")
        ET.SubElement(case, "failure", message="failed")
    junit.write(reports / "junit.xml")
    found = judge(run, run.variant("junit", reports=reports))
    assert isinstance(found, str) and "junit.xml records 21 failure(s)" in found, found


def test_a_key_withdrawn_later_keeps_what_it_signed_before(run):
    path = run.variant("dated")
    withdrawn = (NOW.date() - datetime.timedelta(days=1)).isoformat()
    ring = run.ring(acme_key=f"{{file: {run.acme.public}, not_after: {withdrawn}}}")
    found = judge(run, path, ring)
    assert isinstance(found, str) and f"until {withdrawn}, not on {NOW.date()}" in found
    before = NOW - datetime.timedelta(days=2)
    run_time = (NOW - datetime.timedelta(days=3)).strftime(TIME)
    found = judge(run, run.variant("dated-early", time=run_time), ring, first_seen=before)
    assert isinstance(found, entries.Entry) and found.reason is None, found


def test_a_certificate_is_revoked_by_its_package_sha256(run):
    path = run.variant("revoked")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    extra = f"revoked:\n  - package_sha256: {digest}\n    date: 2026-12-01\n    reason: wrong\n"
    loaded = keyring.load(run.ring(extra))
    assert loaded.revocations == [keyring.Revocation(None, digest, datetime.date(2026, 12, 1),
                                                     "wrong")]  # fmt: skip
    loaded.close()
    assert judge(run, path, run.ring(extra)) == "certificate revoked on 2026-12-01: wrong"


# -- the policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy_text", "reason"),
    [
        ("profiles: [day]", "policy: the full profile does not certify (day do)"),
        ("strict: true", "policy: only strict runs certify"),
        ("plans: [business]", "policy: the free plan is not one of business"),
        ("max_age_days: 1", "policy: the run was 3 days old when first seen, past 1"),
        ("targets: ['*.acme.example']", "policy: the target's host 127.0.0.1 matches none"),
        ("suite_versions: ['9.9.9']", "policy: made with petstore-conformance"),
    ],
)
def test_a_package_outside_the_policy_is_verified_not_certified(run, policy_text, reason):
    file = run.folder / "policy.yaml"
    file.write_text(policy_text, encoding="utf-8")
    rules = policy.load(file)
    assert rules.sha256 != policy.DEFAULT.sha256 and rules.uri == "policy.yaml"
    three_days = (NOW - datetime.timedelta(days=3)).strftime(TIME)
    found = judge(run, run.variant("policy", time=three_days), rules=rules)
    assert isinstance(found, entries.Entry) and found.policy_sha256 == rules.sha256
    assert found.reason is not None and found.reason.startswith(reason), found.reason


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_verify_with_the_keyring_gives_the_registers_judgement(run, tmp_path, capsys):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    for name, stated in {
        "certified": {},
        "smoke": {"profile": "smoke"},
        "future": {"time": "2099-01-01T00:00:00Z"},
        "day": {"profile": "day", "implementation": "acme day"},
    }.items():
        shutil.copy(run.variant(name, **stated), uploads / f"{name}.zip")
    rules = tmp_path / "policy.yaml"
    rules.write_text("profiles: [full]\n", encoding="utf-8")
    ring = run.ring()
    status, out, err = register(capsys, uploads, "--keyring", ring, "--policy", rules,
                                "--out", tmp_path / "site")  # fmt: skip
    assert status == 1, out + err
    document = json.loads((tmp_path / "site" / "register.json").read_text())
    certified = {c["package_sha256"] for c in document["certificates"]}
    assert certified == {digest(uploads / "certified.zip")}
    assert all(c["policy_sha256"] == policy.load(rules).sha256 for c in document["certificates"])
    for upload in sorted(uploads.iterdir()):
        status, out, err = verify(capsys, upload, "--keyring", ring, "--policy", rules)
        assert (status == 0) == (digest(upload) in certified), (upload.name, out, err)
        assert status in (0, 1) and not err, err
    status, out, _ = verify(capsys, uploads / "day.zip", "--keyring", ring, "--policy", rules)
    assert "verified, not certified: policy: the day profile does not certify (full do)" in out
    status, out, _ = verify(capsys, uploads / "future.zip", "--keyring", ring)
    assert status == 1 and "rejected: dated 2099-01-01T00:00:00Z, after" in out


@pytest.mark.parametrize(
    ("policy_text", "message"),
    [
        ("profiles: [smoke]", "at profiles/0: 'smoke' is not one of"),
        ("certify: everything", "Additional properties are not allowed ('certify'"),
        ("max_age_days: 99999999999", "at max_age_days"),
        ("strict: [", "not YAML"),
    ],
)
def test_an_unusable_policy_is_one_line_and_exit_2(run, tmp_path, capsys, policy_text, message):
    rules = tmp_path / "policy.yaml"
    rules.write_text(policy_text, encoding="utf-8")
    for command in (register, verify):
        args = ["--keyring", run.ring(), "--policy", rules]
        args += ["--out", tmp_path / "site"] if command is register else []
        status, out, err = command(capsys, run.package, *args)
        assert status == 2 and message in err and len(err.splitlines()) == 1, err


# -- the keyring ---------------------------------------------------------------------------------


def keyring_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "ring.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DocumentError) as error:
        keyring.load(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"keyring {path}: ")
    return message


@pytest.mark.parametrize(
    ("names_given", "message"),
    [
        (["Acme Pets", "Acme Pets"], "'Acme Pets' appears twice in one mapping"),
        (["Acme Pets", "Acme  Pets"], "are the same name"),
        (["Acme Pets", "ACME PETS"], "are the same name"),
        (["Acme Pets", "Αcme Pets"], "look alike (UTS #39 confusables)"),  # Greek Alpha
        (["Acme Pets", "Асme Pets"], "look alike (UTS #39 confusables)"),  # Cyrillic a, e
        (["Acme Pets", "x" * 101], "is too long"),
    ],
)
def test_one_name_one_vendor(run, tmp_path, names_given, message):
    vendors = "".join(
        f"  {json.dumps(n)}:\n    keys: [{k}]\n"
        for n, k in zip(names_given, (run.acme.public, run.bolt.public), strict=True)
    )
    assert message in keyring_error(tmp_path, "vendors:\n" + vendors)


def test_names_share_a_skeleton_only_where_they_look_alike():
    assert names.skeleton("Acme Pets") == names.skeleton("Асme Pets")
    assert names.skeleton("Acme Pets") != names.skeleton("Bolt Pets")
    assert names.normalised("  Ａｃｍｅ\tPETS ") == "acme pets"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vendors: {A: {keys: [k.pem], revoked: true}}", "('revoked' was unexpected)"),
        ("vendors: {A: {keys: [k.pem], expires: 2027-01-01}}", "('expires' was unexpected)"),
        ("vendors: {A: {keys: [k.pem]}}\nsigned: x", "('signed' was unexpected)"),
        ("vendors: {A: {keys: [" + "9" * 5000 + "]}}", "key 1 (99999"),
        ("vendors: {A: {keys: [k.pem]}}\nx: " + "[" * 5000 + "]" * 5000, "nested deeper"),
        ("a: &x [1]\nvendors: {A: {keys: *x}}", "an alias (*name) is not read here"),
        ('vendors: {"A\\ud800": {keys: [k.pem]}}', "holds a lone surrogate"),
        ("vendors: {A: {keys: [{file: k.pem, not_after: 2026-02-30}]}}", "is no day"),
        ("vendors: {A: {keys: [k.pem]}}\nrevoked: [{run: r, date: 2026-1-1, reason: x}]", "date"),
        ("vendors: {A: {keys: [k.pem]}}\nrevoked: [{date: 2026-01-01, reason: x}]", "revoked/0"),
        ("\xff", "not UTF-8"),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_a_keyring_is_held_to_its_schema(tmp_path, text, message):
    if text == "\xff":
        (tmp_path / "ring.yaml").write_bytes(b"\xff\xfe")
        with pytest.raises(DocumentError, match=message):
            keyring.load(tmp_path / "ring.yaml")
        return
    assert message in keyring_error(tmp_path, text)


def test_a_fifo_is_refused_as_keyring_key_policy_or_upload(run, tmp_path, capsys):
    fifo = tmp_path / "fifo.zip"
    os.mkfifo(fifo)
    status, _, err = register(capsys, run.package, "--keyring", fifo, "--out", tmp_path / "s")
    assert status == 2 and "not a regular file" in err
    status, _, err = register(capsys, run.package, "--keyring", run.ring(), "--policy", fifo,
                              "--out", tmp_path / "s")  # fmt: skip
    assert status == 2 and "not a regular file" in err
    ring = run.ring(acme_key=str(fifo))
    status, _, err = register(capsys, run.package, "--keyring", ring, "--out", tmp_path / "s")
    assert status == 2 and "not a regular file" in err
    status, out, _ = register(capsys, fifo, "--keyring", run.ring(), "--out", tmp_path / "s")
    assert status == 1 and "not a regular file" in err


def test_the_keyrings_digest_follows_its_meaning_not_its_layout(run, tmp_path):
    first = keyring.load(run.ring())
    path = tmp_path / "same.yaml"
    path.write_text(
        f"# the same keys\nvendors:\n  Bolt Pets: {{keys: [{run.bolt.public}]}}\n"
        f"  Acme Pets: {{keys: [{run.acme.public}]}}\n",
        encoding="utf-8",
    )
    second = keyring.load(path)
    assert first.sha256 == second.sha256
    third = keyring.load(run.ring("revoked: [{run: r, date: 2026-12-01, reason: x}]\n"))
    assert third.sha256 != first.sha256
    for ring in (first, second, third):
        ring.close()


def test_the_published_schemas_are_the_ones_the_code_uses():
    docs = Path(__file__).parents[2] / "docs"
    for name in ("keyring", "policy"):
        shipped = Path(keyring.__file__).with_name(f"{name}.schema.json")
        assert json.loads((docs / f"{name}-schema.json").read_text()) == json.loads(
            shipped.read_text()
        )


# -- the register's inputs -------------------------------------------------------------------------


def test_nothing_is_skipped_or_doubled_without_a_line(run, tmp_path, capsys):
    uploads = tmp_path / "uploads"
    (uploads / "real").mkdir(parents=True)
    shutil.copy(run.package, uploads / "acme.zip")
    shutil.copy(run.package, uploads / "again.zip")
    (uploads / "notes.txt").write_text("mine")
    (uploads / "linked").symlink_to(uploads / "real")
    odd = os.fsdecode(b"caf\xe9.zip")
    shutil.copy(run.package, os.path.join(os.fsencode(uploads), os.fsencode(odd)))
    status, out, err = register(capsys, uploads, "--keyring", run.ring(), "--out", tmp_path / "s",
                                "--publish-failures")  # fmt: skip
    assert "skipped " + str(uploads / "notes.txt") + ": not a *.zip" in err
    assert "skipped " + str(uploads / "linked") + ": a symbolic link, not followed" in err
    assert "again.zip: a copy of" in err or "acme.zip: a copy of" in err
    assert "caf\\xe9.zip: a copy of" in err
    assert status == 0, out + err
    document = json.loads((tmp_path / "s" / "register.json").read_text())
    assert len(document["not_certified"]) == 1 and not document["certificates"]


@pytest.mark.parametrize("days", ["0", "4000000", "-1"])
def test_valid_days_is_bounded(run, tmp_path, capsys, days):
    status, _, err = register(capsys, run.package, "--keyring", run.ring(), "--out",
                              tmp_path / "s", "--valid-days", days)  # fmt: skip
    assert status == 2 and "--valid-days must be a whole number from 1 to 3650" in err


def test_a_package_of_many_members_is_refused_from_its_end_record(run, tmp_path):
    bomb = tmp_path / "many.zip"
    with zipfile.ZipFile(bomb, "w") as archive:
        for number in range(5000):
            archive.writestr(f"m{number}", b"")
    assert judge(run, bomb) == "many.zip holds 5000 members, past 32"


def test_a_statement_bomb_is_not_parsed_to_find_the_vendor(run, tmp_path):
    """Issue 51: a 33 kB upload whose conformance.json inflates to 32 MiB."""
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(run.package) as original, zipfile.ZipFile(bomb, "w", DEFLATED) as copy:
        for name in original.namelist():
            data = original.read(name)
            copy.writestr(name, b"[" * (32 * 1024 * 1024) if name == "conformance.json" else data)
    assert bomb.stat().st_size < 100_000
    found = judge(run, bomb)
    assert isinstance(found, str) and "(a zip bomb?)" in found, found


# -- what the register and the checker say ------------------------------------------------------


def test_a_signed_run_without_vendor_is_told_no_register_accepts_it(run, tmp_path, capsys):
    conclusion = Conclusion(baseline.Judgement(None), None, 0, attestation=tmp_path / "x.jsonl",
                            signed_by="ed25519 key 1", signed_unnamed=True)  # fmt: skip
    assert f"attestation: warning: {UNNAMED}" in console_lines(conclusion)
    conclusion.signed_unnamed = False
    assert not any("warning" in line for line in console_lines(conclusion))
    unnamed = run.variant("unnamed", vendor=None)
    status, out, _ = verify(capsys, unnamed, "--key", run.acme.public)
    assert status == 0 and "names no vendor (made without --vendor)" in out
    status, out, _ = verify(capsys, unnamed, "--keyring", run.ring())
    assert status == 1 and "names no vendor" in out


@pytest.mark.parametrize(
    "text", ["\x00\x1b<script>&", "\ud800", "\uffff\ufffe", "]]><!--", "é€😀", "x" * 1000]
)
def test_every_badge_is_well_formed_svg(text):
    svg = badge.svg(text, text)
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_a_statement_under_the_limit_is_not_parsed_before_its_digest_holds(run, tmp_path):
    """A 15 MiB conformance.json (under verify's 16 MiB) beside a genuine envelope: its bytes are
    hashed against the signed digest, never parsed."""
    bomb = tmp_path / "bomb15.zip"
    with zipfile.ZipFile(run.package) as original, zipfile.ZipFile(bomb, "w", DEFLATED) as copy:
        for name in original.namelist():
            data = b"[" + b"[]," * (5 * 1024 * 1024) + b"[]]"
            copy.writestr(name, data if name == "conformance.json" else original.read(name))
    started = time.monotonic()
    found = judge(run, bomb)
    assert found == (
        "does not verify with the keys of 'Acme Pets': conformance.json was altered since signed"
    )
    assert time.monotonic() - started < 2


def test_a_package_that_takes_too_long_is_rejected_at_its_deadline(run, monkeypatch):
    """The time bound per package (verifying.SECONDS_PER_PACKAGE, 30 s), here 0.2 s, on a
    judgement that would never end."""

    def forever(*args):
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(judgement, "judged", forever)
    monkeypatch.setattr(judgement, "deadline", lambda: verifying.deadline(0.2))
    started = time.monotonic()
    assert judge(run, run.package) == "took longer than 0.2 s, the time one package may take"
    assert time.monotonic() - started < 2
