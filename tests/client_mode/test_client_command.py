"""`petstore-conformance client` end to end: real scenario servers on loopback, real client
processes (tests/client_mode/inline_clients.py). A hammering client is not conformant on one
requirement, with one block that says what it was told and how soon it came back; a client that
never gives up is stopped at --timeout, children and all; bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from xml.etree import ElementTree

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from conformance.reports import attestation, verify
from tests.checker.test_attestation import KeyPair, independently_verified
from tests.client_mode import inline_clients

TIMEOUT = 120
KEY_PATTERN = re.compile(r"(client|other)-[A-Za-z0-9_-]{24}")


def run_client(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", "client", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def test_a_hammering_client_fails_one_requirement_with_one_block(tmp_path):
    command = inline_clients.command(tmp_path, inline_clients.HAMMERING, "hammering")
    reports = tmp_path / "reports"
    process = run_client(
        "--command",
        command,
        "--report-dir",
        str(reports),
        "--scenario",
        "hammering-ban",
        "--scenario",
        "retry-after-seconds",
        "--scenario",
        "no-retry-after",
        "--scenario",
        "success",
    )
    assert process.returncode == 1, process.stdout + process.stderr
    blocks = re.findall(r"^(\S+) \((MUST|SHOULD)\): \d+ of \d+ checks failed", process.stdout, re.M)
    assert blocks == [("CLI-NO-HAMMERING", "MUST")], process.stdout
    failed = next(line for line in process.stdout.splitlines() if line.startswith("  failed:"))
    assert re.search(r"came back 0\.\d{3} s after a 429 with Retry-After: [12],", failed), failed
    statement = json.loads((reports / "conformance.json").read_text())
    assert statement["role"] == "client"
    assert statement["failed_requirements"] == ["CLI-NO-HAMMERING"]
    # The ban of rule 5 shows: the scenario server banned the key.
    har = json.loads((reports / "exchanges.har").read_text())
    assert any(
        "key_banned" in e["response"]["content"].get("text", "") for e in har["log"]["entries"]
    )
    assert "psc-early" in (reports / "report.html").read_text()
    for path in reports.iterdir():
        assert not KEY_PATTERN.search(path.read_text(errors="replace")), path
    assert not KEY_PATTERN.search(process.stdout + process.stderr)


def test_a_client_that_never_retries_gets_a_verdict_and_the_reasons(tmp_path):
    command = inline_clients.command(tmp_path, inline_clients.NO_RETRY, "no_retry")
    reports = tmp_path / "reports"
    process = run_client("--command", command, "--report-dir", str(reports))
    assert process.returncode == 0, process.stdout + process.stderr
    statement = json.loads((reports / "conformance.json").read_text())
    assert statement["verdict"] == "conformant"
    assert statement["warned_requirements"] == ["CLI-RETRIES", "CLI-WAITS-FOR-RESET"]
    entries = {entry["id"]: entry for entry in statement["requirements"]}
    for unshown in ("CLI-RETRY-AFTER", "CLI-NO-HAMMERING", "CLI-BACKOFF-GROWS"):
        assert entries[unshown]["outcome"] == "not-tested"
        assert "no MUST requires a retry" in entries[unshown]["reason"], entries[unshown]


def run_create_scenario(tmp_path, client: str) -> tuple[subprocess.CompletedProcess, dict]:
    command = inline_clients.command(tmp_path, getattr(inline_clients, client), client.lower())
    reports = tmp_path / "reports"
    process = run_client("--command", command, "--report-dir", str(reports), "--scenario", "create")
    return process, json.loads((reports / "conformance.json").read_text())


def test_a_create_followed_by_a_listing_is_judged_on_the_create(tmp_path):
    process, statement = run_create_scenario(tmp_path, "THEN_LISTS")
    assert process.returncode == 0, process.stdout + process.stderr
    [entry] = [e for e in statement["requirements"] if e["id"] == "CLI-CREATE-JSON"]
    assert entry["outcome"] == "passed", entry
    [scenario] = statement["scenarios"]
    assert [(r["method"], r["status"]) for r in scenario["requests"]] == [
        ("POST", 201),
        ("GET", 200),
    ]


def test_a_client_that_never_creates_fails_saying_what_it_sent(tmp_path):
    process, statement = run_create_scenario(tmp_path, "LISTS_ONLY")
    assert process.returncode == 1, process.stdout + process.stderr
    [entry] = [e for e in statement["requirements"] if e["id"] == "CLI-CREATE-JSON"]
    assert entry["outcome"] == "failed", entry
    assert [item["message"] for item in entry["evidence"]] == [
        "createCategory (POST .../v1/categories) was never sent; the client sent: "
        "GET /v1/categories"
    ]
    assert "was never sent; the client sent: GET /v1/categories" in process.stdout


def test_a_client_still_running_at_the_timeout_is_stopped_whole(tmp_path):
    command = inline_clients.command(tmp_path, inline_clients.FOREVER, "forever")
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    process = run_client(
        "--command",
        command,
        "--report-dir",
        str(tmp_path / "reports"),
        "--scenario",
        "endless-429",
        "--timeout",
        "4",
        "--strict",
        env={"CHILD_PID_FILE": str(pid_file)},
    )
    assert time.monotonic() - started < 30
    assert process.returncode == 1, process.stdout + process.stderr
    assert "CLI-GIVES-UP (SHOULD)" in process.stdout
    assert "was still running at 4 s and was stopped" in process.stdout
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # SIGKILL is delivered at once; the reaping may lag
    while is_running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(child), "the client's child outlived it"


def is_running(pid: int) -> bool:
    """Alive and not a zombie waiting for a parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--command is required"),
        (("--command", "true", "--scenario", "nope"), "unknown scenario 'nope'"),
        (("--command", "/nonexistent/client", "--scenario", "success"), "could not start"),
        (("--command", "true", "--timeout", "0"), "--timeout"),
        (("--command", "true", "--sign-key", "/nonexistent.pem"), "--sign-key /nonexistent.pem"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    process = run_client(*args)
    assert process.returncode == 2
    assert process.stdout == ""
    assert len(process.stderr.strip().splitlines()) == 1 and message in process.stderr
    assert "Traceback" not in process.stderr


def test_a_stopped_run_stops_its_clients(tmp_path):
    pid_file = tmp_path / "client.pid"
    script = tmp_path / "waits.py"
    script.write_text(
        "import os, sys, time\n"
        "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
        "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
        "time.sleep(300)\n"
    )
    checker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "client",
            "--scenario",
            "success",
            "--command",
            f"{sys.executable} {script} {pid_file}",
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    checker.terminate()
    stdout, stderr = checker.communicate(timeout=60)
    assert checker.returncode == 2, stdout + stderr
    assert stderr.strip() == "petstore-conformance client: interrupted; every client was stopped"
    client = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while is_running(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(client)


def test_a_client_that_sends_nothing_has_no_verdict_and_junit_says_so(tmp_path):
    """CI colours a build from JUnit: no test case failed, yet the run decided nothing."""
    reports = tmp_path / "reports"
    process = run_client("--command", "true", "--report-dir", str(reports))
    assert process.returncode == 2, process.stdout + process.stderr
    suite = ElementTree.parse(reports / "junit.xml").getroot()
    errors = [error.get("message") for error in suite.iter("error")]
    assert suite.get("errors") == "1"
    assert errors[0] == "no verdict: the client sent no request in any scenario", errors


def test_a_signed_client_run_verifies_and_says_failed(tmp_path):
    """`--sign-key` signs a client's reports as the checker's are: the envelope verifies (with
    `verify --key`, and with the Go-style DSSE verifier of the attestation tests), names the
    client's command as its target, and says FAILED for a client that failed."""
    vendor = KeyPair.write(tmp_path / "keys", "vendor", ed25519.Ed25519PrivateKey.generate())
    command = inline_clients.command(tmp_path, inline_clients.HAMMERING, "hammering")
    reports, package = tmp_path / "reports", tmp_path / "client.zip"
    process = run_client(
        *("--command", command, "--report-dir", str(reports), "--scenario", "hammering-ban"),
        *("--sign-key", str(vendor.private), "--package", str(package)),
    )
    assert process.returncode == 1, process.stdout + process.stderr
    assert "attestation: " in process.stdout and "signed with the ed25519 key" in process.stdout
    statement = independently_verified(reports / attestation.ENVELOPE, vendor.key.public_key())
    assert statement["predicate"]["result"] == "FAILED"
    assert statement["predicate"]["failedTests"] == ["CLI-NO-HAMMERING"]
    for descriptor in statement["predicate"]["configuration"]:
        assert {"uri", "digest", "content"} & set(descriptor), descriptor
    for evidence in (reports, package):
        verification = verify.verify_evidence(evidence, vendor.public)
        assert verification.status == 0, verification.lines
        assert f"the target ({command}) was" in "\n".join(verification.lines)
        assert "the signed result is FAILED" in verification.lines[-1]
