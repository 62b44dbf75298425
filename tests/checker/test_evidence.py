"""Evidence a vendor can hand over, from one real full run against a separately started
reference with `--package`: the HAR holds every exchange and no key, the badge names the
verdict, the package verifies, and a package with one byte changed, a file added or removed, or
a verdict edited (with the manifest rewritten to match) does not."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance import spec
from conformance.reports import package
from tests.checker.test_command import (
    MINUTE_SECONDS,
    Finished,
    assert_no_key_anywhere,
    checker,
    new_key,
    run_command,
)
from tests.shared.servers import reference_args, start_reference

QUICK = 60
PACKAGE = "certification.zip"


@dataclass
class Certified:
    finished: Finished
    reports: Path
    package: Path
    keys: tuple[str, str]


@pytest.fixture(scope="module")
def certified(tmp_path_factory) -> Iterator[Certified]:
    cwd = tmp_path_factory.mktemp("certified")
    keys = (new_key("main"), new_key("spare"))
    args = reference_args([f"{key}:free" for key in keys], minute_seconds=MINUTE_SECONDS)
    reference = start_reference(args)
    try:
        environment = {"PETSTORE_API_KEY": keys[0], "PETSTORE_SPARE_API_KEY": keys[1]}
        # With the key-in-URL check opted in, so that a key in a URL is there to be redacted.
        command = checker("--base-url", reference.base_url, "--package", PACKAGE)
        finished = run_command([*command, "--allow-key-in-url"], cwd, environment)
    finally:
        reference.stop()
    assert finished.status == 0, finished.describe()
    yield Certified(finished, cwd / "reports", cwd / PACKAGE, keys)


def har_entries(certified: Certified) -> list[dict]:
    document = json.loads((certified.reports / "exchanges.har").read_text(encoding="utf-8"))
    log = document["log"]
    assert log["version"] == "1.2"
    assert log["creator"]["name"] == "petstore-conformance" and log["creator"]["version"]
    return log["entries"]


def verify(path: Path, cwd: Path) -> Finished:
    return run_command(checker("verify", str(path)), cwd, timeout=QUICK)


def rewritten(source: Path, target: Path, change) -> Path:
    """A copy of the package with each member passed through `change(name, data)` (None drops
    it), written as a valid zip: what someone editing the package by hand would produce."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            data = change(name, old.read(name))
            if data is not None:
                new.writestr(name, data)
    return target


# -- exchanges.har -----------------------------------------------------------------------------


def test_the_har_holds_every_exchange_of_the_run_in_order(certified):
    entries = har_entries(certified)
    statement = json.loads((certified.reports / "conformance.json").read_text(encoding="utf-8"))
    total = statement["requests"]["total"]
    assert len(entries) == total
    numbers = sorted(int(e["comment"].split()[1].strip("#,")) for e in entries)
    assert numbers == list(range(1, total + 1))
    started = [datetime.datetime.fromisoformat(e["startedDateTime"]) for e in entries]
    assert started == sorted(started) and all(s.tzinfo is not None for s in started)
    by_key = {label: sum(e["_keyLabel"] == label for e in entries) for label in ("main", "spare")}
    assert by_key == {k: statement["requests"]["per_key"][k] for k in by_key}
    assert any(e["response"]["status"] == 429 for e in entries), "the exhaustion is missing"


def test_every_har_entry_has_the_fields_har_1_2_requires(certified):
    for entry in har_entries(certified):
        request, response = entry["request"], entry["response"]
        assert isinstance(entry["time"], int | float) and entry["time"] >= 0
        timings = entry["timings"]
        assert sum(timings[k] for k in ("send", "wait", "receive")) == pytest.approx(entry["time"])
        assert entry["cache"] == {}
        for part in (request, response):
            assert part["httpVersion"] == "HTTP/1.1"
            assert part["cookies"] == []
            assert all(set(h) == {"name", "value"} for h in part["headers"])
            assert part["headersSize"] == -1 and isinstance(part["bodySize"], int)
        assert request["method"] and request["url"].startswith("http://127.0.0.1:")
        assert all(set(q) == {"name", "value"} for q in request["queryString"])
        if "postData" in request:
            assert set(request["postData"]) >= {"mimeType", "text"}
        assert isinstance(response["status"], int) and isinstance(response["statusText"], str)
        content = response["content"]
        assert isinstance(content["size"], int) and isinstance(content["mimeType"], str)
        assert isinstance(content["text"], str) and isinstance(response["redirectURL"], str)


def test_the_har_redacts_authorization_and_holds_no_key(certified):
    entries = har_entries(certified)
    text = (certified.reports / "exchanges.har").read_text(encoding="utf-8")
    for key in certified.keys:
        assert key not in text
    sent = {
        h["value"]
        for e in entries
        for h in e["request"]["headers"]
        if h["name"].lower() == "authorization"
    }
    assert "Bearer ***" in sent
    assert all(value.endswith("***") or not value.split(" ", 1)[-1].strip() for value in sent)
    in_query = [q["value"] for e in entries for q in e["request"]["queryString"]]
    assert "***" in in_query  # the key-in-query-string test: its key redacted in the URL too
    posted = [e["request"]["postData"] for e in entries if "postData" in e["request"]]
    assert any(p["mimeType"] == "application/json" for p in posted)


# -- badge.svg ---------------------------------------------------------------------------------


def test_the_badge_names_the_interface_version_and_the_verdict(certified):
    root = ElementTree.parse(certified.reports / "badge.svg").getroot()
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == [f"Pet Store v{spec.spec_version()}", "conformant"]
    fills = [r.get("fill") for r in root.iter("{http://www.w3.org/2000/svg}rect")]
    assert "#2e7d32" in fills


# -- the package -------------------------------------------------------------------------------


def test_the_package_holds_the_reports_and_a_manifest_of_their_hashes(certified):
    with zipfile.ZipFile(certified.package) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        names = set(archive.namelist())
        for name, digest in manifest["files"].items():
            assert hashlib.sha256(archive.read(name)).hexdigest() == digest
            assert archive.read(name) == (certified.reports / name).read_bytes()
    assert names == {"manifest.json", *package.REPORTS}
    statement = json.loads((certified.reports / "conformance.json").read_text(encoding="utf-8"))
    for fact in ("suite_version", "target", "plan", "verdict", "time", "run_id"):
        assert manifest[fact] == statement[fact]
    assert manifest["spec_sha256"] == spec.openapi_sha256()
    assert manifest["interface_sha256"] == spec.interface_sha256()
    assert f"package: {PACKAGE}" in certified.finished.stdout
    for key in certified.keys:
        assert all(key.encode() not in archive_data for archive_data in members(certified))


def members(certified: Certified) -> list[bytes]:
    with zipfile.ZipFile(certified.package) as archive:
        return [archive.read(name) for name in archive.namelist()]


def test_an_intact_package_verifies(certified, tmp_path):
    finished = verify(certified.package, tmp_path)
    assert finished.status == 0, finished.describe()
    assert "intact" in finished.stdout and "integrity, not" in finished.stdout


def change_one_byte(name: str, data: bytes) -> bytes:
    if name != "conformance.json":
        return data
    at = data.index(b'"statement"') + 20  # inside a requirement's wording: still valid JSON
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def test_one_byte_changed_in_a_file_does_not_verify(certified, tmp_path):
    edited = rewritten(certified.package, tmp_path / "edited.zip", change_one_byte)
    finished = verify(edited, tmp_path)
    assert finished.status == 1, finished.describe()
    assert "conformance.json was altered" in finished.stdout


def test_one_byte_flipped_in_the_zip_itself_does_not_verify(certified, tmp_path):
    damaged = tmp_path / "damaged.zip"
    shutil.copy(certified.package, damaged)
    with zipfile.ZipFile(damaged) as archive:
        member = archive.getinfo("report.html")
    data = bytearray(damaged.read_bytes())
    data[member.header_offset + 30 + len(member.filename) + 100] ^= 0xFF  # inside its data
    damaged.write_bytes(bytes(data))
    finished = verify(damaged, tmp_path)
    assert finished.status == 1, finished.describe()
    assert "report.html was altered" in finished.stdout


def test_a_file_added_or_removed_does_not_verify(certified, tmp_path):
    with_extra = shutil.copy(certified.package, tmp_path / "extra.zip")
    with zipfile.ZipFile(with_extra, "a") as archive:
        archive.writestr("note.txt", "trust me")
    without = rewritten(
        certified.package, tmp_path / "less.zip", lambda n, d: None if n == "junit.xml" else d
    )
    added, removed = verify(Path(with_extra), tmp_path), verify(without, tmp_path)
    assert added.status == 1 and "note.txt is not a file a package holds" in added.stdout, (
        added.describe()
    )
    assert removed.status == 1 and "junit.xml is listed but missing" in removed.stdout


def test_an_edited_verdict_with_a_rewritten_manifest_is_inconsistent(certified, tmp_path):
    """Hashes prove integrity, not identity: an editor can recompute them. The verdict must
    still follow from the outcomes."""

    statement = json.loads((certified.reports / "conformance.json").read_text(encoding="utf-8"))
    statement["requirements"][0].update(outcome="failed", failed_checks=1)  # the truth
    # ... but the verdict, the failed list and the exit status still say conformant.
    forged = json.dumps(statement).encode()

    def forge(name: str, data: bytes) -> bytes:
        if name == "conformance.json":
            return forged
        if name == "manifest.json":
            manifest = json.loads(data)
            manifest["files"]["conformance.json"] = hashlib.sha256(forged).hexdigest()
            return json.dumps(manifest).encode()
        return data

    edited = rewritten(certified.package, tmp_path / "forged.zip", forge)
    finished = verify(edited, tmp_path)
    assert finished.status == 1, finished.describe()
    assert "does not follow" in finished.stdout
    assert "altered" not in finished.stdout.replace("altered or inconsistent", "")


@pytest.mark.parametrize("case", ["not-a-zip", "truncated", "no-manifest", "missing"])
def test_an_unreadable_package_is_exit_2_with_one_line(certified, tmp_path, case):
    path = tmp_path / "package.zip"
    if case == "not-a-zip":
        path.write_text("hello")
    elif case == "truncated":
        path.write_bytes(certified.package.read_bytes()[:2000])
    elif case == "no-manifest":
        rewritten(certified.package, path, lambda n, d: None if n == "manifest.json" else d)
    finished = verify(path, tmp_path)
    assert finished.status == 2, finished.describe()
    assert "Traceback" not in finished.output
    [line] = finished.stderr.strip().splitlines()
    assert line.startswith("petstore-conformance: ")


def test_no_key_in_anything_the_run_wrote(certified):
    assert_no_key_anywhere(certified.finished, certified.keys)


def test_a_run_without_a_key_signs_nothing(certified, tmp_path):
    """Signing is only asked for (--sign-key): without it, no envelope in the folder or the
    package, nothing said of one, and `verify` says what it said before signatures existed."""
    assert not (certified.reports / "conformance.intoto.jsonl").exists()
    assert "attestation:" not in certified.finished.stdout
    with zipfile.ZipFile(certified.package) as archive:
        assert "conformance.intoto.jsonl" not in archive.namelist()
    finished = verify(certified.package, tmp_path)
    assert finished.status == 0, finished.describe()
    assert "signature" not in finished.stdout
