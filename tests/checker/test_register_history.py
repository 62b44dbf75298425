"""The register's history over three nights, from an empty folder, with a policy requiring the
day profile: night 1 certifies a vendor's day run (a full-profile run is "not certified:
policy"); night 2 adds a newer run, which supersedes the first (the implementation's badge URL
unchanged); night 3 revokes the current certificate. Then `register --audit` of night 1 against
night 3 (0), and against a night 3 with a line of its log removed or changed (1); a visitor
checks a certified package from the published site with openssl, unzip, jq and sha256sum as
the page says, and the body's signed verification summary with go-securesystemslib's DSSE
verifier. Day runs are made cheaply: a real run's reports signed again stating profile "day"."""

# ruff: noqa: F811 - the vendors fixture, imported, is the argument of the tests
from __future__ import annotations

import datetime
import json
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest

from conformance import cli
from conformance.register import log, publish
from tests.checker.test_register import openssl_key, vendors  # noqa: F401 - the fixture
from tests.checker.test_report_browser import screenshots
from tests.conftest import _missing
from tests.shared import packages
from tests.shared.browser import Browser
from tests.shared.go import built

ROOT = Path(__file__).resolve().parents[2]
GO_VERIFIER = ROOT / "tests" / "shared" / "dsse_verifier"
BODY_ID = "https://certification.example.org/petstore"


def ago(days: int) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


def register(capsys, *args) -> tuple[int, str, str]:
    status = cli.main(["register", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@dataclass
class Nights:
    folder: Path
    body_public: Path
    sites: list[Path]  # a copy of the site as each night left it
    outputs: list[tuple[int, str, str]]
    run_ids: list[str]


def keyring_text(vendors, revoked: str = "") -> str:
    return f"vendors:\n  Acme Pets:\n    keys: [{vendors.acme[1]}]\n" + revoked


@pytest.fixture(scope="module")
def nights(vendors, tmp_path_factory) -> Nights:
    folder = tmp_path_factory.mktemp("nights")
    body_key, body_public = openssl_key(folder, "body")
    (folder / "policy.yaml").write_text("profiles: [day]\n", encoding="utf-8")
    ring = folder / "keyring.yaml"
    site = folder / "site"
    common = ["--keyring", ring, "--out", site, "--policy", folder / "policy.yaml",
              "--sign-key", body_key, "--body-id", BODY_ID, "--body", "Pet Registry Board",
              "--publish-failures"]  # fmt: skip
    sites, outputs, run_ids = [], [], ["night-1-day-run", "night-2-day-run"]
    for night in (1, 2, 3):
        uploads = folder / f"uploads-{night}"
        uploads.mkdir()
        if night < 3:
            packages.signed_variant(
                vendors.acme_reports, uploads / "day.zip", vendors.acme[0], folder,
                profile="day", run_id=run_ids[night - 1], time=ago(3 - night),
            )  # fmt: skip
        if night == 1:
            shutil.copyfile(vendors.acme_zip, uploads / "full.zip")
        revoked = (
            f"revoked:\n  - run: {run_ids[1]}\n    date: 2026-12-01\n"
            "    reason: the target was a test instance\n"
            if night == 3
            else ""
        )
        ring.write_text(keyring_text(vendors, revoked), encoding="utf-8")
        finished = subprocess.run(
            ["petstore-conformance", "register", uploads, *map(str, common)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        outputs.append((finished.returncode, finished.stdout, finished.stderr))
        assert finished.returncode == 0, finished.stdout + finished.stderr
        copy = folder / f"night{night}"
        shutil.copytree(site, copy)
        sites.append(copy)
    return Nights(folder, body_public, sites, outputs, run_ids)


def document(site: Path) -> dict:
    return json.loads((site / "register.json").read_text(encoding="utf-8"))


def by_run(site: Path) -> dict[str, dict]:
    found = document(site)
    return {r["run_id"]: r for r in found["certificates"] + found["not_certified"]}


def text_of(html_file: Path) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html_file.read_text(encoding="utf-8")))


def test_verify_with_the_bodys_keyring_and_policy_agrees_with_the_register(nights, capsys):
    """Every package of the three nights, as the site publishes it, judged by `verify
    --keyring --policy` with the body's last keyring (its revocation in it): exit 0 exactly
    where the register issued a certificate that no revocation took back. A superseded one was
    certified and still verifies so: superseding is the history's, not the package's."""
    ring, rules = nights.folder / "keyring.yaml", nights.folder / "policy.yaml"
    site = nights.sites[2]
    found = document(site)
    records = found["certificates"] + found["not_certified"]
    assert {r["status"] for r in records} == {"superseded", "revoked", "not certified"}
    for record in records:
        status = cli.main(["verify", str(site / record["package"]), "--keyring", str(ring),
                           "--policy", str(rules)])  # fmt: skip
        said = capsys.readouterr()
        assert (status == 0) == (record["status"] in ("certified", "superseded")), (
            record["status"], said.out, said.err)  # fmt: skip
        assert status in (0, 1) and not said.err, said.err


def test_night_1_certifies_the_day_run_and_not_the_full_one(nights):
    site = nights.sites[0]
    records = by_run(site)
    day = records[nights.run_ids[0]]
    assert day["status"] == "certified" and day["profile"] == "day"
    [full] = document(site)["not_certified"]
    assert full["status"] == "not certified" and full["reason"].startswith("policy: ")
    assert "not certified: policy: the full profile does not certify" in text_of(
        site / full["page"]
    )
    page = text_of(site / day["page"])
    assert "certified, valid until" in page and "Pet Registry Board" in page
    assert day["package_sha256"] in page and day["key_fingerprint"] in page
    assert (site / day["package"]).is_file() and (site / day["key"]).is_file()
    assert "#2e7d32" in (site / day["badge"]).read_text()
    events = [json.loads(line)["event"] for line in (site / "log.jsonl").read_text().splitlines()]
    assert events == ["policy changed", "registered", "registered"]
    assert "/" not in json.dumps(document(site)["state"])  # no path of the body's machine
    assert str(nights.folder) not in (site / "register.json").read_text()


def test_night_2_supersedes_night_1_and_keeps_the_badge_url(nights):
    first, second = nights.run_ids
    night1, night2 = by_run(nights.sites[0]), by_run(nights.sites[1])
    old, new = night2[first], night2[second]
    assert (old["status"], new["status"]) == ("superseded", "certified")
    assert old["superseded_by"] == new["page"]
    assert old["badge"] == new["badge"] == night1[first]["badge"]
    old_page = (nights.sites[1] / old["page"]).read_text()
    assert f'href="../{new["page"]}"' in old_page and "superseded on" in old_page
    assert 'class="status superseded"' in old_page and "status certified" not in old_page
    assert "status certified" in (nights.sites[0] / old["page"]).read_text()


def test_night_3_revokes_the_current_certificate_on_its_page_the_index_and_the_badge(nights):
    site = nights.sites[2]
    revoked = by_run(site)[nights.run_ids[1]]
    assert revoked["status"] == "revoked"
    assert revoked["revoked"] == {"date": "2026-12-01", "reason": "the target was a test instance"}
    page = text_of(site / revoked["page"])
    assert "revoked on 2026-12-01: the target was a test instance" in page
    index = (site / "index.html").read_text()
    revoked_section = index.split('id="revoked"')[1].split("<h2")[0]
    assert revoked["page"] in revoked_section
    assert 'id="certified">Certified (0)' in index
    badge = (site / revoked["badge"]).read_text()
    assert ">revoked<" in badge and "#c62828" in badge and "#2e7d32" not in badge
    last = json.loads((site / "log.jsonl").read_text().splitlines()[-1])
    assert last["event"] == "revoked" and last["package_sha256"] == revoked["package_sha256"]


def test_audit_holds_for_the_extended_log_and_fails_for_a_line_removed_or_changed(
    nights, capsys, tmp_path
):
    night1, night3 = nights.sites[0], nights.sites[2]
    key = nights.body_public
    status, out, err = register(capsys, "--audit", night1, night3, "--key", key)
    assert status == 0, err
    assert "both checkpoints verified" in out
    lines = (night3 / "log.jsonl").read_text().splitlines(keepends=True)
    for name, edited in (
        ("removed", lines[:1] + lines[2:]),
        ("changed", [lines[0], lines[1].replace("Acme Pets", "Acme Pest"), *lines[2:]]),
    ):
        forged = tmp_path / name
        shutil.copytree(night3, forged)
        (forged / "log.jsonl").write_text("".join(edited))
        status, _, err = register(capsys, "--audit", night1, forged)
        assert status == 1, err
        assert "line 2 differs" in err and len(err.strip().splitlines()) == 1, err
    # Every line kept, but the checkpoint signs another log: only the key tells.
    appended = tmp_path / "appended"
    shutil.copytree(night3, appended)
    stranger = log.Log(log.lines_of(night3 / "log.jsonl"))
    stranger.append("2026-12-31T00:00:00Z", "registered", certificate="forged")
    (appended / "log.jsonl").write_bytes(stranger.data())
    assert register(capsys, "--audit", night1, appended)[0] == 0
    status, _, err = register(capsys, "--audit", night1, appended, "--key", key)
    assert status == 1 and "signs a log of" in err


def page_commands(page: Path, heading: str) -> list[str]:
    """The commands of a certificate page's "check it yourself" block, as shown."""
    blocks = re.findall(r"<pre>(.*?)</pre>", page.read_text(encoding="utf-8"), re.S)
    return [unescape(b) for b in blocks if heading in unescape(b)]


def test_a_visitor_verifies_a_certified_package_with_openssl_and_sha256sum(nights, tmp_path):
    if not all(shutil.which(tool) for tool in ("openssl", "jq", "unzip", "sha256sum")):
        _missing("needs openssl, jq, unzip and sha256sum (apt-get install jq unzip)")
    visitor = tmp_path / "visitor"
    shutil.copytree(nights.sites[0], visitor)  # the published site, and nothing else
    certified = by_run(visitor)[nights.run_ids[0]]
    [commands] = page_commands(visitor / certified["page"], "openssl pkeyutl")
    finished = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=visitor,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "Signature Verified Successfully" in finished.stdout
    assert f"packages/{certified['package_sha256']}.zip: OK" in finished.stdout
    assert f"{certified['key_fingerprint']}  -" in finished.stdout
    assert "conformance.json: OK" in finished.stdout and "FAILED" not in finished.stdout
    [with_tool] = page_commands(visitor / certified["page"], "petstore-conformance verify")
    for line in with_tool.strip().splitlines():
        done = subprocess.run(line.split(), cwd=visitor, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    # The same commands on a package one byte of whose statement changed: they fail.
    shutil.rmtree(visitor / "check")
    packages.rewritten(nights.sites[0] / certified["package"], visitor / certified["package"],
                       "conformance.json", lambda d: d.replace(b'"day"', b'"daY"'))  # fmt: skip
    again = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=visitor,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode != 0


@pytest.mark.go
def test_the_bodys_summary_and_checkpoint_verify_with_go_securesystemslib(nights, tmp_path):
    needs = {"golang.org/x/crypto/ssh": "golang-golang-x-crypto-dev"}
    binary = built(GO_VERIFIER, tmp_path / "dsse-verify", needs, GO_VERIFIER / "gopath")
    site = nights.sites[0]
    certified = by_run(site)[nights.run_ids[0]]
    for envelope in (site / certified["summary"], site / "checkpoint.intoto.jsonl"):
        finished = subprocess.run([binary, str(nights.body_public), str(envelope)],
                                  capture_output=True, text=True, timeout=60)  # fmt: skip
        assert finished.returncode == 0, finished.stdout + finished.stderr
        statement = json.loads(finished.stdout)
        if envelope.name == "checkpoint.intoto.jsonl":
            assert statement["predicate"]["lines"] == "3"
        else:
            predicate = statement["predicate"]
            assert statement["predicateType"] == "https://slsa.dev/verification_summary/v1"
            assert statement["subject"][0]["digest"]["sha256"] == certified["package_sha256"]
            assert predicate["verifier"]["id"] == BODY_ID
            assert predicate["verificationResult"] == "PASSED"
            assert predicate["verifiedLevels"] == [
                "PETSTORE_CONFORMANT_V1", "PETSTORE_CONFORMANT_V1_DAY"
            ]  # fmt: skip
    stranger = openssl_key(tmp_path, "stranger")[1]
    refused = subprocess.run([binary, str(stranger), str(site / certified["summary"])],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode != 0
    # The vendor's own envelope, from the package and with the key the site publishes: the
    # same verifier accepts it as it accepts the body's.
    vendor_envelope = tmp_path / "vendor.intoto.jsonl"
    with zipfile.ZipFile(site / certified["package"]) as package:
        vendor_envelope.write_bytes(package.read("conformance.intoto.jsonl"))
    accepted = subprocess.run([binary, str(site / certified["key"]), str(vendor_envelope)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert json.loads(accepted.stdout)["predicateType"].startswith("https://in-toto.io/attestation")


@pytest.mark.browser
def test_the_three_nights_in_chromium(nights, tmp_path):
    shots = screenshots(tmp_path)
    with Browser.start(tmp_path) as browser:
        for night, site in enumerate(nights.sites, 1):
            index = browser.open(site / "index.html")
            index.screenshot(shots / f"register-night{night}-index.png")
            record = by_run(site)[nights.run_ids[min(night, 2) - 1]]
            page = browser.open(site / record["page"])
            status = page.evaluate("document.querySelector('.status').textContent")
            assert status == record["status"]
            assert page.evaluate("document.querySelectorAll('script').length") == 0
            assert not index.errors() and not page.errors()
            page.screenshot(shots / f"register-night{night}-certificate.png")


def test_a_certificate_expires_on_a_later_run_with_no_upload(vendors, tmp_path, capsys):
    """Expiry needs no new package: the next run, on a clock past the date, says expired."""
    ring = tmp_path / "keyring.yaml"
    ring.write_text(keyring_text(vendors), encoding="utf-8")
    package = packages.signed_variant(vendors.acme_reports, tmp_path / "p.zip", vendors.acme[0],
                                      tmp_path, profile="day", time=ago(10))  # fmt: skip
    site = tmp_path / "site"
    args = ["--keyring", ring, "--out", site, "--valid-days", "20"]
    assert register(capsys, package, *args)[0] == 0
    [record] = document(site)["certificates"]
    assert record["status"] == "certified"
    later = publish.clock() + datetime.timedelta(days=15)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(publish, "clock", lambda: later)
        status, out, err = register(capsys, *args)
    assert status == 0, out + err
    [record] = document(site)["certificates"]
    assert record["status"] == "expired"
    assert ">expired<" in (site / record["badge"]).read_text()
    assert "status expired" in (site / record["page"]).read_text()
    last = json.loads((site / "log.jsonl").read_text().splitlines()[-1])
    assert (last["event"], last["time"][:10]) == ("expired", str(later.date()))


def test_a_key_removed_from_the_keyring_revokes_what_only_it_verified(vendors, tmp_path, capsys):
    """The keyring changed: earlier packages are judged again, from the site's own copies."""
    ring = tmp_path / "keyring.yaml"
    ring.write_text(keyring_text(vendors), encoding="utf-8")
    site = tmp_path / "site"
    assert register(capsys, vendors.acme_zip, "--keyring", ring, "--out", site)[0] == 0
    ring.write_text(f"vendors:\n  Acme Pets:\n    keys: [{vendors.evil[1]}]\n", encoding="utf-8")
    status, out, err = register(capsys, "--keyring", ring, "--out", site)
    assert status == 0, out + err
    [record] = document(site)["certificates"]
    assert record["status"] == "revoked"
    assert record["revoked"]["reason"].startswith("no longer verifies: ")
    events = [json.loads(line) for line in (site / "log.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events[-2:]] == ["key withdrawn", "revoked"]
    assert events[-2]["key_fingerprint"] == record["key_fingerprint"]
    # Nothing changed since: nothing judged again, nothing logged.
    assert register(capsys, "--keyring", ring, "--out", site)[0] == 0
    assert len((site / "log.jsonl").read_text().splitlines()) == len(events)
