"""The register's judgement and its keyring and policy readers fed mutated input, as `verify`
is in test_verify_hostile.py: packages changed member by member or byte by byte, signed
statements of hostile values (signed again with the vendor's key, so that the claims are
reached), and keyrings and policies of random YAML. Never a traceback, always within its time,
and a package judged either an Entry that can be written (UTF-8, a well-formed badge) or a
one-line reason; a keyring or policy either loads or is one line."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import shutil
import time
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import cli, strict_json
from conformance import signing_keys as keys
from conformance.register import entries, keyring, policy
from conformance.register.documents import DocumentError
from conformance.register.verifying import SECONDS_PER_PACKAGE
from conformance.reports import attestation, badge, package
from tests.checker.test_register_intake import Run, judge, signed_run
from tests.checker.test_verify_hostile import CHANGE, changed

# One judgement ends within the register's own bound (a loaded CI machine takes its time, but
# never past the bound), with a margin for the bound's own check.
SECONDS = SECONDS_PER_PACKAGE + 10
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    return signed_run(tmp_path_factory)


def judged_in_time(run: Run, path: Path, ring: Path | None = None) -> entries.Entry | str:
    started = time.monotonic()
    found = judge(run, path, ring)
    assert time.monotonic() - started < SECONDS
    if isinstance(found, str):
        assert found and "\n" not in found and "Traceback" not in found
        found.encode("utf-8")
    else:
        strict_json.dumps(found.to_json(), ensure_ascii=False).encode("utf-8")
        ET.fromstring(badge.svg(found.interface_version or "?", found.result or "?").encode())
    return found


def members_of(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(name, archive.read(name)) for name in archive.namelist()]


@FUZZ
@given(changes=st.lists(CHANGE, min_size=1, max_size=3))
def test_no_change_to_a_package_breaks_the_judgement(run, tmp_path, changes):
    start = members_of(run.package)
    members = start
    for change in changes:
        members = changed(members, change)
    target = tmp_path / "changed.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a name twice is one of the changes
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name), data)
    found = judged_in_time(run, target)
    if members != start:
        assert isinstance(found, str), changes


@FUZZ
@given(
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=8)), min_size=1, max_size=4)
)
def test_no_byte_changed_in_a_package_breaks_the_judgement(run, tmp_path, cuts):
    data = bytearray(run.package.read_bytes())
    for at, new in cuts:
        at %= len(data)
        data[at : at + len(new)] = new
    target = tmp_path / "bytes.zip"
    target.write_bytes(bytes(data))
    found = judged_in_time(run, target)
    if isinstance(found, entries.Entry):  # a change the signature does not cover (a zip date)
        assert found.package_sha256 == hashlib.sha256(data).hexdigest()


HOSTILE_TEXT = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=10),
    st.sampled_from(["\ud800", "Acme Pets\udfff", "\x00\x1b[31m", "x" * 5000, "", " "]),
)
TIMES = st.one_of(
    st.datetimes(timezones=st.just(datetime.UTC)).map(lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.sampled_from(["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "0900-01-01T00:00:00Z"]),
    HOSTILE_TEXT,
)
VALUES = st.one_of(
    HOSTILE_TEXT,
    st.integers(-(10**30), 10**30),
    st.none(),
    st.booleans(),
    st.lists(HOSTILE_TEXT, max_size=3),
    st.dictionaries(st.text(max_size=4), HOSTILE_TEXT, max_size=2),
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "vendor": st.one_of(st.just("ACME pets"), HOSTILE_TEXT, VALUES),
        "implementation": VALUES,
        "time": st.one_of(TIMES, VALUES),
        "result": VALUES,
        "profile": st.one_of(st.sampled_from(["full", "day", "smoke"]), VALUES),
        "plan": VALUES,
        "suite_version": VALUES,
        "spec_version": VALUES,
        "target": VALUES,
        "run_id": VALUES,
        "strict": VALUES,
        "bundled_reference": VALUES,
    },
)


def resigned(run: Run, target: Path, stated: dict) -> Path:
    """The run's package with `stated` in its conformance.json, signed again with the vendor's
    key whatever the values (written as JSON text: a lone surrogate as its \\u escape), its
    manifest rewritten to match, as a forger holding the key would."""
    folder = target.with_suffix("")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(run.reports, folder)
    document = json.loads((folder / "conformance.json").read_text())
    document.update({"profile": "full", **stated})
    data = json.dumps(document).encode("ascii")  # ensure_ascii: surrogates as escapes
    # The Statement of the run as made (its predicate's result and failed tests unchanged:
    # no field fuzzed here changes them), the new conformance.json's digest in it.
    signed = attestation.make_statement(folder)
    [subject] = [s for s in signed["subject"] if s["name"] == "conformance.json"]
    subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    line = attestation.envelope_line(signed, keys.load_signer(run.acme.private))
    members = dict(members_of(run.package))
    manifest = json.loads(members["manifest.json"])
    manifest.update({name: document.get(name) for name in package.FACTS})
    manifest["files"]["conformance.json"] = subject["digest"]["sha256"]
    manifest["files"][attestation.ENVELOPE] = hashlib.sha256(line.encode()).hexdigest()
    members.update(
        {
            "conformance.json": data,
            attestation.ENVELOPE: line.encode(),
            "manifest.json": json.dumps(manifest).encode("ascii"),
        }
    )
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    shutil.rmtree(folder)
    return target


@FUZZ
@given(stated=FIELDS)
def test_no_signed_claim_breaks_the_judgement(run, tmp_path, stated):
    found = judged_in_time(run, resigned(run, tmp_path / "claims.zip", stated))
    if isinstance(found, entries.Entry) and found.reason is None:
        started = entries.parse_time(found.time)
        assert started is not None
        now = datetime.datetime.now(datetime.UTC)
        assert entries.INTERFACE_SINCE <= started <= now + entries.CLOCK_SKEW
        assert found.verdict == "conformant" and found.vendor == "Acme Pets"


def test_the_resigned_package_is_certified_when_nothing_is_changed(run, tmp_path):
    """The fuzz above reaches the claims: unchanged, its package is a certificate."""
    found = judge(run, resigned(run, tmp_path / "same.zip", {}))
    assert isinstance(found, entries.Entry) and found.reason is None, found


YAML_VALUES = st.recursive(
    st.one_of(HOSTILE_TEXT, st.integers(-(10**40), 10**40), st.none(), st.booleans()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HOSTILE_TEXT, inner, max_size=3),
    max_leaves=10,
)
YAML_TEXT = st.one_of(
    YAML_VALUES.map(lambda value: yaml.safe_dump({"vendors": value}, allow_unicode=True)),
    YAML_VALUES.map(lambda value: yaml.safe_dump(value)),
    st.text(alphabet="vendors:keys[]{}-&*!|>'\"\\ \n\tAa1#%@`", max_size=80),
    st.integers(1, 3000).map(lambda depth: "vendors: " + "[" * depth + "]" * depth),
)


@FUZZ
@given(text=YAML_TEXT)
def test_no_keyring_or_policy_breaks_its_reader(tmp_path, text):
    path = tmp_path / "input.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    for what, load in (("keyring", keyring.load), ("policy", policy.load)):
        started = time.monotonic()
        try:
            loaded = load(path)
        except DocumentError as error:
            message = str(error)
            assert "\n" not in message and message.startswith(f"{what} {path}: ")
            message.encode("utf-8")
        else:
            if isinstance(loaded, keyring.Keyring):
                loaded.close()
        assert time.monotonic() - started < SECONDS


@pytest.mark.parametrize("name", ["keyring", "policy"])
def test_a_hostile_reader_input_is_one_line_through_the_command(run, tmp_path, capsys, name):
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text("vendors: {A: {keys: [" + "9" * 5000 + "]}}\n" + "x: " + "[" * 3000)
    args = ["register", str(run.package), "--out", str(tmp_path / "site")]
    args += ["--keyring", str(hostile)] if name == "keyring" else ["--keyring", str(run.ring())]
    args += ["--policy", str(hostile)] if name == "policy" else []
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_register_writes_its_site_whatever_the_uploads(run, tmp_path, capsys):
    """The command over a folder of mutated uploads (bytes changed, claims re-signed, a lone
    surrogate, a name that is not UTF-8): exit 0 or 1, never a traceback, a site that reads."""
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    chance = random.Random(51)
    for number in range(6):
        data = bytearray(run.package.read_bytes())
        at = chance.randrange(len(data))
        data[at : at + 4] = chance.randbytes(4)
        (uploads / f"bytes-{number}.zip").write_bytes(bytes(data))
    for number, stated in enumerate(
        [{"implementation": "\ud800"}, {"time": "9999-12-31T23:59:59Z"}, {"vendor": "acme PETS"}]
    ):
        resigned(run, uploads / f"claims-{number}.zip", stated)
    shutil.copy(run.package, os.path.join(os.fsencode(uploads), b"\xff.zip"))
    rejections = tmp_path / "rejections.jsonl"
    status = cli.main(["register", str(uploads), "--keyring", str(run.ring()), "--out",
                       str(tmp_path / "site"), "--publish-failures", "--rejections",
                       str(rejections)])  # fmt: skip
    captured = capsys.readouterr()
    assert status in (0, 1) and "Traceback" not in captured.err, captured.err
    document = json.loads((tmp_path / "site" / "register.json").read_text(encoding="utf-8"))
    judged = [*document["certificates"], *document["not_certified"]]
    lines = rejections.read_text(encoding="utf-8").splitlines() if rejections.exists() else []
    rejected = [json.loads(line) for line in lines]
    # Every upload accounted for, the one whose name is no UTF-8 among them.
    assert len(judged) + len(rejected) == 10
    assert all("\udcff" not in r["package"] for r in rejected)
