"""`petstore-conformance register`: two vendors' real signed runs (the double, one with a fault),
variants of them signed again, and hostile uploads; what is registered, what is turned away and
why, the exit statuses, one-line errors, and the site in a real Chromium (nothing a package
states runs or becomes a link)."""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conformance import cli
from tests.checker.test_command import checker, new_key, run_command
from tests.checker.test_report_browser import screenshots
from tests.shared import packages
from tests.shared.browser import Browser
from tests.shared.double import running_double

FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"
HOSTILE_VENDOR = 'Evil <script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
HOSTILE_TARGET = "javascript:window.pwned=3//"


def openssl_key(folder: Path, name: str) -> tuple[Path, Path]:
    private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", private], check=True)
    subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True)
    return private, public


@dataclass
class Vendors:
    folder: Path
    acme_reports: Path  # a conformant run's report folder, signed by acme
    acme: tuple[Path, Path]
    bolt: tuple[Path, Path]
    evil: tuple[Path, Path]
    acme_zip: Path
    bolt_zip: Path


def signed_run(folder: Path, name: str, vendor: str, key: Path, faults=()) -> Path:
    keys = (new_key("main"), new_key("spare"))
    with running_double([f"{k}:free" for k in keys], faults=faults) as base_url:
        args = ["--base-url", base_url, "--api-key", keys[0], "--spare-api-key", keys[1]]
        args += ["--vendor", vendor, "--implementation", f"{name} 1.0", "--sign-key", str(key)]
        args += ["--package", f"{name}.zip", "--report-dir", f"{name}-reports"]
        finished = run_command(checker(*args), folder)
    assert finished.status == (1 if faults else 0), finished.describe()
    return folder / f"{name}.zip"


@pytest.fixture(scope="session")  # shared with test_register_history and _site_safety
def vendors(tmp_path_factory) -> Vendors:
    folder = tmp_path_factory.mktemp("vendors")
    acme, bolt, evil = (openssl_key(folder, n) for n in ("acme", "bolt", "evil"))
    acme_zip = signed_run(folder, "acme", "Acme Pets", acme[0])
    bolt_zip = signed_run(folder, "bolt", "Bolt Pets", bolt[0], faults=[FAULT])
    return Vendors(folder, folder / "acme-reports", acme, bolt, evil, acme_zip, bolt_zip)


def keyring(folder: Path, vendors: Vendors, extra: str = "") -> Path:
    path = folder / "keyring.yaml"
    inline = vendors.bolt[1].read_text().replace("\n", "\n        ")
    path.write_text(
        "vendors:\n"
        f"  Acme Pets:\n    keys: [{vendors.acme[1]}]\n"
        f"  Bolt Pets:\n    keys:\n      - |\n        {inline}\n"
        f"  {json.dumps(HOSTILE_VENDOR)}:\n    keys: [{vendors.evil[1]}]\n" + extra,
        encoding="utf-8",
    )
    return path


def register(capsys, *args: str) -> tuple[int, str, str]:
    status = cli.main(["register", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_register_keeps_what_verifies_and_turns_away_the_rest(vendors, tmp_path, capsys):
    uploads = tmp_path / "uploads"
    (uploads / "nested").mkdir(parents=True)
    variant = packages.signed_variant
    variant(
        vendors.acme_reports,
        uploads / "older.zip",
        vendors.acme[0],
        tmp_path,
        time="2026-11-25T00:00:00Z",  # after the interface existed (entries.INTERFACE_SINCE)
        run_id="older-run",
    )
    (uploads / "acme.zip").write_bytes(vendors.acme_zip.read_bytes())
    (uploads / "nested" / "bolt.zip").write_bytes(vendors.bolt_zip.read_bytes())
    packages.rewritten(
        vendors.acme_zip,
        uploads / "tampered.zip",
        "conformance.json",
        lambda d: d.replace(b'"acme 1.0"', b'"acme 9.9"'),
    )
    variant(
        vendors.acme_reports,
        uploads / "foreign.zip",
        vendors.bolt[0],
        tmp_path,
        implementation="acme 2.0",
    )
    variant(
        vendors.acme_reports,
        uploads / "unknown.zip",
        vendors.acme[0],
        tmp_path,
        vendor="Nobody Ltd",
    )
    variant(
        vendors.acme_reports,
        uploads / "smoke.zip",
        vendors.acme[0],
        tmp_path,
        implementation="acme smoke",
        profile="smoke",
    )
    variant(
        vendors.acme_reports,
        uploads / "revoked.zip",
        vendors.acme[0],
        tmp_path,
        implementation="acme 0.9",
        run_id="withdrawn-run",
    )
    packages.flipped_signature(vendors.acme_zip, uploads / "badsig.zip")
    packages.rewritten(
        vendors.acme_zip,
        uploads / "deep.zip",
        "conformance.json",
        lambda d: b"[" * 100_000 + b"]" * 100_000,
    )
    packages.garbage(uploads / "garbage.zip")
    packages.zip_bomb(uploads / "bomb.zip", gigabytes=1)
    ring = keyring(
        tmp_path,
        vendors,
        "revoked:\n  - run: withdrawn-run\n    date: 2026-12-01\n    reason: wrong target\n",
    )
    rejections = tmp_path / "rejections.jsonl"
    status, out, err = register(capsys, uploads, "--keyring", ring, "--out", tmp_path / "site",
                                "--publish-failures", "--rejections", rejections)  # fmt: skip
    assert status == 1, out + err
    document = json.loads((tmp_path / "site" / "register.json").read_text())
    statuses = {c["run_id"]: c["status"] for c in document["certificates"]}
    run_id = json.loads((vendors.acme_reports / "conformance.json").read_text())["run_id"]
    assert statuses == {run_id: "certified", "older-run": "superseded", "withdrawn-run": "revoked"}
    [certified] = [c for c in document["certificates"] if c["status"] == "certified"]
    assert (certified["vendor"], certified["implementation"]) == ("Acme Pets", "acme 1.0")
    assert certified["verdict"] == "conformant" and certified["expires"]
    [revoked] = [c for c in document["certificates"] if c["status"] == "revoked"]
    assert revoked["revoked"]["reason"] == "wrong target"
    assert {
        (e["vendor"], e["implementation"], e["verdict"]) for e in document["not_certified"]
    } == {
        ("Bolt Pets", "bolt 1.0", "not conformant"),
        ("Acme Pets", "acme smoke", "conformant"),
    }
    assert "rejected" not in document
    reasons = {
        Path(r["package"]).name: r["reason"]
        for r in map(json.loads, rejections.read_text().splitlines())
    }
    assert set(reasons) == {
        "tampered.zip",
        "foreign.zip",
        "unknown.zip",
        "badsig.zip",
        "garbage.zip",
        "bomb.zip",
        "deep.zip",
    }
    assert "conformance.json was altered" in reasons["tampered.zip"]
    assert "signed with a key of the vendor 'Bolt Pets'" in reasons["foreign.zip"]
    assert "no key in the keyring" in reasons["unknown.zip"]
    assert "signature does not verify" in reasons["badsig.zip"]
    assert reasons["garbage.zip"] == "not a zip file"
    assert "zip bomb" in reasons["bomb.zip"]
    # The vendor is read from the small manifest; the envelope verifies; verify finds the rest.
    assert "conformance.json was altered" in reasons["deep.zip"]
    assert "1 certified, 1 superseded, 0 expired, 1 revoked; 2 verified but not certified" in out
    assert "12 of 12 packages" in err and "rejected " in err and "rejected " not in out
    site_text = "".join(p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*.*")
                        if p.suffix in (".html", ".json", ".jsonl"))  # fmt: skip
    assert "acme 1.0" in site_text and "bolt 1.0" in site_text
    assert not any(name in site_text for name in reasons), "a rejected package on the site"
    assert str(tmp_path) not in site_text, "a path of the body's machine on the site"


def test_every_package_registered_is_exit_0(vendors, tmp_path, capsys):
    ring = keyring(tmp_path, vendors)
    status, out, err = register(
        capsys, vendors.acme_zip, vendors.bolt_zip, "--keyring", ring, "--out", tmp_path / "site"
    )
    assert status == 0, out + err
    assert "1 certified, 0 superseded, 0 expired, 0 revoked; 0 verified but not certified " in out
    assert "published, 1 not published" in out and "not certified, not published" in err


@pytest.mark.parametrize(
    ("keyring_text", "message"),
    [
        (None, "cannot read it"),
        ("vendors: [", "not YAML"),
        ("people: {}", "'vendors' is a required property"),
        ("vendors: {A: {keys: []}}", "at vendors/A/keys: [] should be non-empty"),
        ("vendors: {A: {keys: [missing.pem]}}", "key 1 (missing.pem): cannot read it"),
        ("vendors: {A: {keys: [keyring.yaml]}}", "not a PEM key file"),
        ("vendors: {A: {keys: [acme.pub.pem]}, B: {keys: [acme.pub.pem]}}", "share the key"),
        ("vendors: {A: {keys: [acme.pem]}}", "not a PEM public key"),
        ("vendors: {A: {keys: [acme.pub.pem]}}\nrevoked: [{run: x}]", "'date' is a required"),
    ],
)
def test_an_unusable_keyring_is_one_line_and_exit_2(
    vendors, tmp_path, capsys, keyring_text, message
):
    ring = vendors.folder / "keyring.yaml"
    if keyring_text is None:
        ring = tmp_path / "absent.yaml"
    else:
        ring.write_text(keyring_text, encoding="utf-8")
    status, out, err = register(
        capsys, vendors.acme_zip, "--keyring", ring, "--out", tmp_path / "site"
    )
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert "BEGIN" not in err


def test_no_package_or_a_foreign_folder_is_exit_2(vendors, tmp_path, capsys):
    ring = keyring(tmp_path, vendors)
    (tmp_path / "empty").mkdir()
    status, _, err = register(
        capsys, tmp_path / "empty", "--keyring", ring, "--out", tmp_path / "s"
    )
    assert status == 2 and "no package" in err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    status, _, err = register(
        capsys, vendors.acme_zip, "--keyring", ring, "--out", tmp_path / "busy"
    )
    assert status == 2 and "no log.jsonl of this register" in err
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_a_vendor_name_with_a_control_character_is_refused(tmp_path):
    finished = run_command(checker("--vendor", "Acme\x1b[31m", "--api-key", new_key("x")), tmp_path)
    assert finished.status == 2
    assert "--vendor must be 1 to 100 printable characters" in finished.stderr


@pytest.mark.browser
def test_the_site_in_chromium_shows_what_verified_and_runs_nothing(vendors, tmp_path, capsys):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "acme.zip").write_bytes(vendors.acme_zip.read_bytes())
    (uploads / "bolt.zip").write_bytes(vendors.bolt_zip.read_bytes())
    packages.signed_variant(
        vendors.acme_reports,
        uploads / "evil.zip",
        vendors.evil[0],
        tmp_path,
        vendor=HOSTILE_VENDOR,
        implementation="<b>x</b>",
        target=HOSTILE_TARGET,
    )
    packages.flipped_signature(vendors.acme_zip, uploads / "rejected-one.zip")
    site = tmp_path / "site"
    status, out, err = register(
        capsys, uploads, "--keyring", keyring(tmp_path, vendors), "--out", site,
        "--publish-failures",
    )  # fmt: skip
    assert status == 1, out + err
    with Browser.start(tmp_path) as browser:
        index = browser.open(site / "index.html")
        rows = index.evaluate(
            "[...document.querySelectorAll('#certified + table tbody tr')]"
            ".map(r => [r.cells[0].textContent, r.cells[2].textContent])"
        )
        assert sorted(rows) == [["Acme Pets", "acme 1.0"], [HOSTILE_VENDOR, "<b>x</b>"]]
        others = index.evaluate(
            "[...document.querySelectorAll('#not-certified + table tbody tr')]"
            ".map(r => r.cells[0].textContent)"
        )
        assert others == ["Bolt Pets"]
        assert "rejected-one" not in index.evaluate("document.body.innerText")
        assert index.evaluate("document.querySelectorAll('script, b').length") == 0
        links = index.evaluate("[...document.links].map(a => a.getAttribute('href'))")
        assert all(not link.startswith(("javascript:", "http", "/")) for link in links), links
        badges = index.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
        assert badges and all(badges)
        document = json.loads((site / "register.json").read_text())
        evil = next(c for c in document["certificates"] if c["vendor"] == HOSTILE_VENDOR)
        assert f"certificates/{Path(evil['page']).name}" in links
        index.screenshot(screenshots(tmp_path) / "register-index.png")
        evil_page = site / evil["page"]
        page = browser.open(evil_page)
        text = page.evaluate("document.body.innerText")
        assert HOSTILE_TARGET in text and "What it does not prove" in text
        assert page.evaluate("[...document.links].every(a => !a.href.startsWith('javascript'))")
        assert index.evaluate("window.pwned") is None and page.evaluate("window.pwned") is None
        assert not index.errors() and not page.errors()
        page.screenshot(screenshots(tmp_path) / "register-certificate.png")


def test_vendor_and_implementation_are_stated_in_every_report(vendors):
    reports = vendors.acme_reports
    statement = json.loads((reports / "conformance.json").read_text())
    assert (statement["vendor"], statement["implementation"]) == ("Acme Pets", "acme 1.0")
    html = (reports / "report.html").read_text()
    assert "<th>Vendor</th><td>Acme Pets</td>" in html
    assert "<th>Implementation</th><td>acme 1.0</td>" in html
    junit = (reports / "junit.xml").read_text()
    assert '<property name="vendor" value="Acme Pets"' in junit
    assert '<property name="implementation" value="acme 1.0"' in junit
    with zipfile.ZipFile(vendors.acme_zip) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        envelope = json.loads(archive.read("conformance.intoto.jsonl"))
    assert (manifest["vendor"], manifest["implementation"]) == ("Acme Pets", "acme 1.0")
    signed = json.loads(base64.b64decode(envelope["payload"]))
    [run] = [c for c in signed["predicate"]["configuration"] if c["name"] == "run"]
    assert run["annotations"]["vendor"] == "Acme Pets"
    assert run["annotations"]["implementation"] == "acme 1.0"


def test_a_certificate_expires_after_its_days_or_at_the_next_suite_version(
    vendors, tmp_path, capsys
):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    key = vendors.acme[0]
    # A run before the interface existed is rejected, not expired: ten days old, five valid.
    ten_days_ago = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    ten_days_ago -= datetime.timedelta(days=10)
    packages.signed_variant(
        vendors.acme_reports,
        uploads / "old.zip",
        key,
        tmp_path,
        implementation="old",
        time=ten_days_ago.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    packages.signed_variant(
        vendors.acme_reports,
        uploads / "suite.zip",
        key,
        tmp_path,
        implementation="earlier suite",
        suite_version="0.0.1",
    )
    packages.signed_variant(vendors.acme_reports, uploads / "fresh.zip", key, tmp_path,
                            implementation="fresh")  # fmt: skip
    ring = keyring(tmp_path, vendors)
    status, out, err = register(capsys, uploads, "--keyring", ring, "--out", tmp_path / "site",
                                "--valid-days", "5", "--publish-failures")  # fmt: skip
    assert status == 0, out + err
    document = json.loads((tmp_path / "site" / "register.json").read_text())
    assert [c["implementation"] for c in document["certificates"]] == ["fresh"]
    reasons = {e["implementation"]: e["reason"] for e in document["not_certified"]}
    expired = ten_days_ago + datetime.timedelta(days=5)
    assert reasons["old"] == f"expired on {expired.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    assert reasons["earlier suite"].startswith("expired: made with petstore-conformance 0.0.1")


def test_a_bad_keyring_leaves_the_published_register_as_it_was(vendors, tmp_path, capsys):
    site = tmp_path / "site"
    ring = keyring(tmp_path, vendors)
    assert register(capsys, vendors.acme_zip, "--keyring", ring, "--out", site)[0] == 0
    before = sorted(p.relative_to(site) for p in site.rglob("*"))
    (tmp_path / "broken.yaml").write_text("vendors: [", encoding="utf-8")
    status, _, err = register(capsys, vendors.acme_zip, "--keyring", tmp_path / "broken.yaml",
                              "--out", site)  # fmt: skip
    assert status == 2 and "not YAML" in err
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == before


def git(*args, cwd: Path) -> str:
    environment = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, check=True, timeout=60)  # fmt: skip
    return done.stdout


def test_the_matrix_workflows_last_job_extends_and_publishes_the_register(vendors, tmp_path):
    """ci-templates/certify-matrix.yml's register job, its scripts run as written by bash on two
    nights: packages laid out as actions/download-artifact lays out `package-*` artifacts, the
    gh-pages branch (a local bare repository here) checked out in `pages` as actions/checkout
    leaves it; the register restored from it, extended, signed and pushed back."""
    root = Path(__file__).resolve().parents[2]
    workflow = yaml.safe_load((root / "ci-templates" / "certify-matrix.yml").read_text())
    certify, last = workflow["jobs"]["certify"], workflow["jobs"]["register"]
    [action] = [s for s in certify["steps"] if "with" in s and "package" in s["with"]]
    [download] = [s for s in last["steps"] if "download-artifact" in str(s.get("uses"))]
    scripts = [s["run"] for s in last["steps"] if s.get("name", "").startswith(
        ("The body's", "Extend", "Publish"))]  # fmt: skip
    assert len(scripts) == 3
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", "-b", "gh-pages", str(origin), cwd=tmp_path)
    seed = tmp_path / "seed"
    git("init", "-q", "-b", "gh-pages", str(seed), cwd=tmp_path)
    git("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "0",
        cwd=seed)  # fmt: skip
    git("push", "-q", str(origin), "gh-pages", cwd=seed)
    body_key = openssl_key(tmp_path, "body")[0]
    (tmp_path / "policy.yaml").write_text("profiles: [full, day]\n", encoding="utf-8")
    (tmp_path / "keyring.yaml").write_text(
        f"vendors:\n  Acme Pets:\n    keys: [{vendors.acme[1]}]\n", encoding="utf-8"
    )
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    environment = {**os.environ, "PATH": path, "RUNNER_TEMP": str(tmp_path),
                   "BODY_KEY": body_key.read_text(), **last["env"],
                   "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    for night in (1, 2):
        work = tmp_path / f"night{night}"
        work.mkdir()
        for name in ("policy.yaml", "keyring.yaml"):
            (work / name).write_bytes((tmp_path / name).read_bytes())
        git("clone", "-q", "-b", "gh-pages", str(origin), "pages", cwd=work)
        for entry in certify["strategy"]["matrix"]["include"]:
            target = entry["target"]
            artifact = action["with"]["artifact-name"].replace("${{ matrix.target }}", target)
            package = action["with"]["package"].replace("${{ matrix.target }}", target)
            placed = work / download["with"]["path"] / artifact / Path(package).name
            placed.parent.mkdir(parents=True)
            packages.signed_variant(vendors.acme_reports, placed, vendors.acme[0], tmp_path,
                                    implementation=entry["implementation"],
                                    run_id=f"{target}-{night}")  # fmt: skip
        for script in scripts:
            finished = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=work,
                                      env=environment, capture_output=True, text=True,
                                      timeout=120)  # fmt: skip
            assert finished.returncode == 0, finished.stdout + finished.stderr
    published = tmp_path / "published"
    git("clone", "-q", "-b", "gh-pages", str(origin), str(published), cwd=tmp_path)
    document = json.loads((published / "register.json").read_text())
    statuses = sorted((c["implementation"], c["run_id"][-1], c["status"])
                      for c in document["certificates"])  # fmt: skip
    implementations = sorted(e["implementation"] for e in certify["strategy"]["matrix"]["include"])
    assert statuses == sorted(
        [(i, "1", "superseded") for i in implementations]
        + [(i, "2", "certified") for i in implementations]
    )
    assert document["body"]["name"] == last["env"]["BODY_NAME"]
    assert (published / ".nojekyll").is_file() and (published / "checkpoint.intoto.jsonl").is_file()
    assert len(git("log", "--oneline", cwd=published).splitlines()) == 3
