"""`petstore-conformance` end to end, run as a user runs it: a subprocess with stdin closed, a
fresh working folder, options from the command line or from PETSTORE_* variables. Each test
checks the exit status, what was printed, and what was written; and that no key shows anywhere.
The same suite under plain `pytest --pyargs conformance.suite` is checked here too."""

from __future__ import annotations

import datetime
import difflib
import http.server
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.cli import SUBCOMMANDS
from conformance.httpclient.connection import TlsFacts
from conformance.run import misdirected
from conformance.spec import catalogue
from tests.shared.checker_runs import CheckerRun, assert_outputs_agree
from tests.shared.double import running_double
from tests.shared.servers import reference_args, start_reference

# A full run takes about 20 s on an idle machine; a busy one may take several times that.
FULL_RUN_TIMEOUT = 240
QUICK_TIMEOUT = 60
MINUTE_SECONDS = 3
OUTCOMES = {"passed", "failed", "warned", "not-tested"}
REPORTS = ("report.html", "junit.xml", "conformance.json", "exchanges.har", "badge.svg")


@dataclass
class Finished:
    status: int
    stdout: str
    stderr: str
    cwd: Path

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def describe(self) -> str:
        return f"exit {self.status}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr}"

    def statement(self, report_dir: str | Path = "reports") -> dict:
        path = self.cwd / report_dir / "conformance.json"
        assert path.is_file(), f"no {path}: {self.describe()}"
        return json.loads(path.read_text(encoding="utf-8"))


def clean_environment(**variables: str) -> dict[str, str]:
    """This process's environment without PETSTORE_* or PYTEST_* (the test runner's own), plus
    `variables`: the command sees only what the test gives it."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PETSTORE_", "PYTEST_"))
    }
    return {**environment, **variables}


def run_command(
    command: list[str],
    cwd: Path,
    environment: dict[str, str] | None = None,
    timeout: float = FULL_RUN_TIMEOUT,
) -> Finished:
    process = subprocess.run(
        command,
        cwd=cwd,
        env=clean_environment(**(environment or {})),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    finished = Finished(process.returncode, process.stdout, process.stderr, cwd)
    report_dir = checker_report_dir(command, cwd, environment or {})
    if report_dir is not None:
        statement_path = report_dir / "conformance.json"
        statement = json.loads(statement_path.read_text()) if statement_path.is_file() else {}
        run = CheckerRun(finished.status, statement, finished.output, report_dir, ("", ""), [])
        assert_outputs_agree(run)
    return finished


def checker_report_dir(command: list[str], cwd: Path, environment: dict[str, str]) -> Path | None:
    """Where a run of the checker writes its reports; None for any other command (plain
    pytest, compare, verify, the client mode)."""
    if "conformance.cli" in command:
        args = command[command.index("conformance.cli") + 1 :]
    elif Path(command[0]).name == "petstore-conformance":
        args = command[1:]
    else:
        return None
    if args and args[0] in SUBCOMMANDS:
        return None
    folder = environment.get("PETSTORE_REPORT_DIR", "reports")
    for position, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--report-dir" and position + 1 < len(args):
            folder = args[position + 1]
        elif arg.startswith("--report-dir="):
            folder = arg.split("=", 1)[1]
    return cwd / folder


def checker(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli", *args]


def installed_script() -> list[str]:
    """The `petstore-conformance` script next to this interpreter, as installed; else -m."""
    script = Path(sys.executable).parent / "petstore-conformance"
    return [str(script)] if script.is_file() else checker()


def environment_of(reference: tuple[str, str, str]) -> dict[str, str]:
    """A started reference's URL and keys, given the way staging gives them: in the environment."""
    base_url, main, spare = reference
    return {
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": main,
        "PETSTORE_SPARE_API_KEY": spare,
        "PETSTORE_PLAN": "free",
    }


def new_key(label: str) -> str:
    return f"psc-{label}-{secrets.token_hex(12)}"


def assert_no_key_anywhere(finished: Finished, keys: tuple[str, ...]) -> None:
    """No key in the console nor in any file the run wrote under its working folder."""
    texts = {"stdout": finished.stdout, "stderr": finished.stderr}
    for path in finished.cwd.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(finished.cwd))] = path.read_text(
                encoding="utf-8", errors="replace"
            )
    for where, text in texts.items():
        for key in keys:
            assert key not in text, f"an API key appears in {where}"


def assert_reports_written(report_dir: Path) -> None:
    for name in REPORTS:
        path = report_dir / name
        assert path.is_file() and path.stat().st_size > 0, f"{path} missing or empty"


def assert_conformant_statement(statement: dict, finished: Finished) -> None:
    assert statement["verdict"] == "conformant", finished.describe()
    assert statement["exit_status"] == 0
    assert statement["failed_requirements"] == []
    ids = [entry["id"] for entry in statement["requirements"]]
    assert ids and len(ids) == len(set(ids))
    for entry in statement["requirements"]:
        assert entry["outcome"] in OUTCOMES, entry
        assert entry["level"] in ("MUST", "SHOULD"), entry
        if entry["outcome"] == "not-tested":
            assert entry.get("reason"), f"{entry['id']} is not tested without a reason"


def verdict_line_near_the_end(stdout: str, verdict: str) -> None:
    """The verdict line closes the run: after it come only its details (reason, target,
    statement) and pytest's own closing lines (the report path, the short summary of failed
    tests, the counts)."""
    lines = stdout.rstrip().splitlines()
    marks = [i for i, line in enumerate(lines) if "petstore-conformance: " in line]
    assert marks, f"no verdict line in:\n{stdout[-2000:]}"
    last = marks[-1]
    said = lines[last].strip("= ")
    expected = f"petstore-conformance: {verdict}"
    assert said == expected or said.startswith(expected + " "), lines[last]
    after = [line for line in lines[last + 1 :] if not line.startswith(("FAILED ", "ERROR "))]
    assert len(after) <= 7, "the verdict is buried:\n" + "\n".join(after)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "checking.md"
# What differs from run to run, as the docs' consoles show it: ports, the run's name prefix,
# timings, what the waits cost in requests, the categories the generated tests happened to
# create; the lines of the waits come and go with the load.
VARYING = [
    (re.compile(r"created \d+ categories"), "created N categories"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"'psc-[a-z0-9]+-'"), "'psc-RUN-'"),
    (re.compile(r"\d+\.\d+ s\)"), "N s)"),
    (re.compile(r"requests \d+ \([^)]*\)"), "requests N (...)"),
]
PROGRESS = re.compile(r"^petstore-conformance: (still )?(waiting|main key|spare key)")
AREAS = ("auth", "categories", "endpoints", "generated", "validation", "limits")


def documented_console(verdict: str) -> str:
    """The console docs/checking.md shows for a run of this verdict."""
    page = DOCS.read_text(encoding="utf-8")
    after = page.split(f"<!-- console: {verdict} -->\n```text\n", 1)[1]
    return after.split("\n```", 1)[0]


def as_shown(console: str) -> list[str]:
    lines = [line for line in console.splitlines() if not PROGRESS.match(line)]
    for pattern, shown in VARYING:
        lines = [pattern.sub(shown, line) for line in lines]
    return lines


def assert_console_as_documented(stdout: str, verdict: str) -> None:
    """The docs show the console as it is: a real run's, but for what differs each run."""
    documented, real = as_shown(documented_console(verdict)), as_shown(stdout)
    diff = "\n".join(
        difflib.unified_diff(documented, real, "docs/checking.md", "this run", lineterm="")
    )
    assert documented == real, f"docs/checking.md shows another console:\n{diff}"


def assert_the_checkers_console(stdout: str) -> None:
    """What the checker did and found, as a vendor reads it: no pytest rows, no venv path, no
    short test summary, no control sequence in a pipe, and the verdict last."""
    lines = stdout.splitlines()
    assert len(lines) < 40, stdout
    for area in AREAS:
        assert any(line.startswith(f"petstore-conformance: {area}: ") for line in lines), area
    for leftover in ("FAILED ", "PASSED", "site-packages", "conformance/suite", "====", "\x1b"):
        assert leftover not in stdout, f"{leftover!r} in:\n{stdout}"


def categories(base_url: str, key: str) -> list:
    request = urllib.request.Request(
        f"{base_url}/categories", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


@pytest.fixture
def reference_with_keys(reference_server) -> tuple[str, str, str]:
    """A separately started `petstore-reference` with two fresh free keys: (URL, main, spare)."""
    main, spare = new_key("main"), new_key("spare")
    server = reference_server(keys=[f"{main}:free", f"{spare}:free"], minute_seconds=MINUTE_SECONDS)
    return server.base_url, main, spare


# --- 1. The one-command demo ------------------------------------------------------------------


def test_no_arguments_certifies_the_bundled_reference(tmp_path: Path) -> None:
    finished = run_command(installed_script(), tmp_path)

    assert finished.status == 0, finished.describe()
    assert "Traceback" not in finished.output
    assert_reports_written(tmp_path / "reports")
    statement = finished.statement()
    assert_conformant_statement(statement, finished)
    assert statement["bundled_reference"] is True
    assert statement["profile"] == "full"
    per_key = statement["requests"]["per_key"]
    assert per_key.get("main", 0) > 0 and per_key.get("spare", 0) > 0, per_key
    assert statement["requests"]["total"] <= statement["requests"]["budget"]
    verdict_line_near_the_end(finished.stdout, "conformant")
    assert_the_checkers_console(finished.stdout)
    assert_console_as_documented(finished.stdout, "conformant")


# --- 2. A separately started reference, keys only in the environment -------------------------


def test_keys_from_the_environment_never_show(
    tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    base_url, main, spare = reference_with_keys
    environment = environment_of(reference_with_keys)
    finished = run_command(checker(), tmp_path, environment)

    assert finished.status == 0, finished.describe()
    assert_reports_written(tmp_path / "reports")
    statement = finished.statement()
    assert_conformant_statement(statement, finished)
    assert statement["bundled_reference"] is False
    assert statement["target"] == base_url
    assert statement["plan"] == "free"
    assert statement["requests"]["per_key"].get("spare", 0) > 0  # the spare key was exhausted
    verdict_line_near_the_end(finished.stdout, "conformant")
    assert_no_key_anywhere(finished, (main, spare))


def test_smoke_profile_is_read_only_and_cheap(
    tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    base_url, main, spare = reference_with_keys
    before = categories(base_url, main)
    environment = environment_of(reference_with_keys)
    finished = run_command(checker("--profile", "smoke"), tmp_path, environment, QUICK_TIMEOUT)

    assert finished.status == 0, finished.describe()
    assert_reports_written(tmp_path / "reports")
    statement = finished.statement()
    assert_conformant_statement(statement, finished)
    assert statement["profile"] == "smoke"
    assert 0 < statement["requests"]["total"] <= 30, statement["requests"]
    assert statement["created_categories"] == []
    assert categories(base_url, main) == before, "the smoke profile created something"
    verdict_line_near_the_end(finished.stdout, "conformant")
    assert_no_key_anywhere(finished, (main, spare))


# --- 3. The same suite under plain pytest ----------------------------------------------------


@pytest.mark.parametrize("profile", ["full", "smoke"])
def test_plain_pytest_entry(
    profile: str, tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    base_url, main, spare = reference_with_keys
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance.suite",
        "--base-url",
        base_url,
        "--api-key",
        main,
        "--spare-api-key",
        spare,
        "--plan",
        "free",
        "--report-dir",
        "out",
        "-p",
        "no:cacheprovider",
    ]
    if profile == "smoke":
        command += ["--profile", "smoke"]
    timeout = QUICK_TIMEOUT if profile == "smoke" else FULL_RUN_TIMEOUT
    finished = run_command(command, tmp_path, timeout=timeout)

    assert finished.status == 0, finished.describe()
    # Plain pytest keeps pytest's console: its header, rows and counts, then the checker's.
    assert "test session starts" in finished.stdout and "passed" in finished.stdout
    assert "petstore-conformance: conformant ====" in finished.stdout
    assert_reports_written(tmp_path / "out")
    statement = finished.statement("out")
    assert_conformant_statement(statement, finished)
    assert statement["profile"] == profile
    assert statement["target"] == base_url
    if profile == "smoke":
        assert statement["requests"]["total"] <= 30
        assert statement["created_categories"] == []
    verdict_line_near_the_end(finished.stdout, "conformant")
    assert_no_key_anywhere(finished, (main, spare))


# --- 4. Bad input: one line, exit 2, no traceback ---------------------------------------------


class GarbageHandler(http.server.BaseHTTPRequestHandler):
    """Answers 200 text/html to everything: a web server, not a Pet Store API."""

    def answer(self) -> None:
        body = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = answer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


class MisdirectedHandler(http.server.BaseHTTPRequestHandler):
    """Answers 421 with no body, as Caddy with client certificates answers a URL with an IP
    address (no SNI): it will not answer for that host on this connection."""

    def answer(self) -> None:
        self.send_response(421)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = answer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


@dataclass(frozen=True)
class Targets:
    reference: str  # a working petstore-reference, base URL ending in /v1
    main: str
    spare: str
    garbage: str  # answers 200 text/html to everything
    misdirected: str  # answers 421 with no body to everything
    closed: str  # a loopback port nobody listens on


def closed_loopback_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def targets() -> Iterator[Targets]:
    main, spare = new_key("main"), new_key("spare")
    reference = start_reference(reference_args([f"{main}:free", f"{spare}:free"]))
    garbage = http.server.ThreadingHTTPServer(("127.0.0.1", 0), GarbageHandler)
    threading.Thread(target=garbage.serve_forever, daemon=True).start()
    misdirected = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MisdirectedHandler)
    threading.Thread(target=misdirected.serve_forever, daemon=True).start()
    try:
        yield Targets(
            reference=reference.base_url,
            main=main,
            spare=spare,
            garbage=f"http://127.0.0.1:{garbage.server_port}/v1",
            misdirected=f"http://127.0.0.1:{misdirected.server_port}/v1",
            closed=closed_loopback_url(),
        )
    finally:
        for server in (garbage, misdirected):
            server.shutdown()
            server.server_close()
        reference.stop()


REFUSED = new_key("refused")  # a key no target knows

# name: (command-line arguments, environment) for the targets, and what the one line mentions
BadInput = Callable[[Targets], tuple[list[str], dict[str, str]]]
BAD_INPUTS: dict[str, tuple[BadInput, str]] = {
    "unreachable": (lambda t: (["--base-url", t.closed, "--api-key", t.main], {}), "reach"),
    "ftp-url": (lambda t: (["--base-url", "ftp://x/v1", "--api-key", t.main], {}), "http"),
    "not-a-url": (lambda t: (["--base-url", "not a url", "--api-key", t.main], {}), "http"),
    "wrong-path-404": (
        lambda t: (
            ["--base-url", t.reference.removesuffix("/v1") + "/nope", "--api-key", t.main],
            {},
        ),
        "404",
    ),
    "missing-key": (lambda t: (["--base-url", t.reference], {}), "API key"),
    "missing-key-env": (lambda t: ([], {"PETSTORE_BASE_URL": t.reference}), "API key"),
    "refused-key": (lambda t: (["--base-url", t.reference, "--api-key", REFUSED], {}), "401"),
    "refused-key-env": (
        lambda t: ([], {"PETSTORE_BASE_URL": t.reference, "PETSTORE_API_KEY": REFUSED}),
        "401",
    ),
    "refused-spare-key": (
        lambda t: (
            ["--base-url", t.reference, "--api-key", t.main, "--spare-api-key", REFUSED],
            {},
        ),
        "spare",
    ),
    # A one-letter key would be hidden in every path and name it occurs in (a traceback once).
    "short-key": (lambda t: (["--base-url", t.reference, "--api-key", "a"], {}), "characters"),
    "same-keys": (
        lambda t: (["--base-url", t.reference, "--api-key", t.main, "--spare-api-key", t.main], {}),
        "same key",
    ),
    "max-requests-abc": (lambda t: (["--max-requests", "abc"], {}), "--max-requests"),
    "max-requests-abc-env": (lambda t: ([], {"PETSTORE_MAX_REQUESTS": "abc"}), "max-requests"),
    "max-requests-zero": (
        lambda t: (["--base-url", t.closed, "--api-key", t.main, "--max-requests", "0"], {}),
        "max-requests",
    ),
    "plan-gold": (lambda t: (["--plan", "gold"], {}), "gold"),
    "plan-gold-env": (
        lambda t: (["--base-url", t.closed, "--api-key", t.main], {"PETSTORE_PLAN": "gold"}),
        "gold",
    ),
    "profile-quick": (lambda t: (["--profile", "quick"], {}), "quick"),
    "profile-quick-env": (
        lambda t: (["--base-url", t.closed, "--api-key", t.main], {"PETSTORE_PROFILE": "quick"}),
        "quick",
    ),
    "unknown-option": (lambda t: (["--frobnicate"], {}), "--frobnicate"),
    # A word where a command goes: pytest took it for a test path and printed its own help.
    "misspelt-command": (
        lambda t: (["regster", "--base-url", t.reference], {}),
        "unknown command 'regster' (commands: client, verify, compare, intoto",
    ),
    "misspelt-command-help": (lambda t: (["verfy", "--help"], {}), "unknown command 'verfy'"),
    "control-characters-as-command": (
        lambda t: (["a\x1b[2Jb\nc"], {}),
        "unknown command 'a\\x1b[2Jb\\nc'",
    ),
    "garbage-answers": (
        lambda t: (["--base-url", t.garbage, "--api-key", t.main], {}),
        "Pet Store API",
    ),
    "misdirected-421": (
        lambda t: (["--base-url", t.misdirected, "--api-key", t.main], {}),
        "421 Misdirected Request to GET /categories: the server will not answer for the host "
        "127.0.0.1 on this connection; use the host name its TLS certificate is issued for",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(case: str, targets: Targets, tmp_path: Path) -> None:
    make, mentions = BAD_INPUTS[case]
    args, environment = make(targets)
    finished = run_command(checker(*args), tmp_path, environment, QUICK_TIMEOUT)

    assert finished.status == 2, finished.describe()
    assert "Traceback" not in finished.output, finished.describe()
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.describe()
    assert lines[0].startswith("petstore-conformance:"), lines[0]
    assert mentions in lines[0], lines[0]
    assert "None" not in lines[0], lines[0]  # a Python value is no word for the user
    assert finished.stdout.strip() == "", finished.describe()
    assert list(tmp_path.iterdir()) == [], "a refused run wrote files"
    for key in (targets.main, targets.spare, REFUSED):
        assert key not in finished.output, "an API key appears in the output"


def run_to_a_reader_that_left(
    command: list[str], cwd: Path, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`command | head -0`: stdout is a pipe whose reader closed it before a byte was written.
    Buffered, as in a user's shell (the output then meets the closed pipe only when flushed)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    variables = clean_environment(**(environment or {}))
    variables.pop("PYTHONUNBUFFERED", None)
    try:
        return subprocess.run(
            command,
            cwd=cwd,
            env=variables,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=QUICK_TIMEOUT,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("command", [["--help"], ["verify", "--help"], ["register", "--help"]])
def test_help_read_by_a_reader_that_left_is_no_traceback(command: list[str], tmp_path) -> None:
    """`petstore-conformance verify --help | head -1`: the reader may close the pipe before the
    help is written; that is no error of the user's to show a traceback for, nor to fail on."""
    process = run_to_a_reader_that_left([*installed_script(), *command], tmp_path)
    assert process.stderr == "", process.stderr
    assert process.returncode == 0, process.returncode


def test_run_read_by_a_reader_that_left_goes_on_to_its_verdict(
    tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    """`petstore-conformance | head`: the console's reader leaves, the run does not. Its
    reports are what it is for; its exit status is the verdict they hold."""
    environment = environment_of(reference_with_keys)
    command = [*installed_script(), "--profile", "smoke"]
    process = run_to_a_reader_that_left(command, tmp_path, environment)
    assert "Traceback" not in process.stderr and "BrokenPipe" not in process.stderr, process.stderr
    assert_reports_written(tmp_path / "reports")
    statement = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    assert statement["verdict"] == "conformant", statement["reason"]
    assert process.returncode == statement["exit_status"] == 0, process.stderr


# --- 5. A budget too small to decide ----------------------------------------------------------


def test_budget_too_small_is_no_verdict(
    tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    base_url, main, spare = reference_with_keys
    environment = {"PETSTORE_API_KEY": main, "PETSTORE_SPARE_API_KEY": spare}
    args = ("--base-url", base_url, "--plan", "free", "--max-requests", "40")
    finished = run_command(checker(*args), tmp_path, environment, QUICK_TIMEOUT)

    assert finished.status == 2, finished.describe()
    assert "Traceback" not in finished.output
    assert_reports_written(tmp_path / "reports")
    statement = finished.statement()
    assert statement["verdict"] == "no verdict", finished.describe()
    assert statement["exit_status"] == 2
    assert "budget" in (statement["reason"] or ""), statement["reason"]
    assert statement["requests"]["total"] <= 40
    assert statement["requests"]["budget"] == 40
    verdict_line_near_the_end(finished.stdout, "no verdict")
    assert_no_key_anywhere(finished, (main, spare))


# pytest exits 4 on an option it does not know, and 0 when asked only to collect: either way
# no test ran, and the run says no verdict with exit 2.
@pytest.mark.parametrize("pytest_option", ["--no-such-pytest-option", "--collect-only"])
def test_a_run_that_ran_no_test_is_no_verdict_whatever_an_old_statement_says(
    pytest_option: str, tmp_path: Path, reference_with_keys: tuple[str, str, str]
) -> None:
    base_url, main, spare = reference_with_keys
    stale = tmp_path / "reports" / "conformance.json"
    stale.parent.mkdir()
    stale.write_text('{"verdict": "conformant", "run_id": "an-earlier-run"}')
    environment = {"PETSTORE_API_KEY": main, "PETSTORE_SPARE_API_KEY": spare}
    finished = run_command(
        checker("--base-url", base_url, "--", pytest_option),
        tmp_path,
        environment,
        QUICK_TIMEOUT,
    )
    assert finished.status == 2, finished.describe()
    closing = finished.stdout.strip().splitlines()[-1]
    assert closing.startswith("petstore-conformance: no verdict (exit 2)"), finished.describe()
    assert "Traceback" not in finished.output


# --- 6. Not conformant ------------------------------------------------------------------------
# `--strict` turning a SHOULD-only problem into exit 1 is tested with the double's WARNINGS in
# tests/checker/test_faults_and_variants.py.


def test_a_must_failure_is_exit_1_naming_the_requirement(tmp_path: Path) -> None:
    main, spare = new_key("k1"), new_key("k2")
    with running_double(
        [f"{main}:free", f"{spare}:free"], faults=["no-www-authenticate"]
    ) as base_url:
        args = ("--base-url", base_url, "--api-key", main, "--spare-api-key", spare)
        finished = run_command(checker(*args, "--plan", "free"), tmp_path)

    assert finished.status == 1, finished.describe()
    assert "Traceback" not in finished.stderr
    assert_reports_written(tmp_path / "reports")
    statement = finished.statement()
    assert statement["verdict"] == "not conformant"
    assert statement["exit_status"] == 1
    assert "AUTH-WWW-AUTHENTICATE" in statement["failed_requirements"], finished.describe()
    assert "AUTH-WWW-AUTHENTICATE" in finished.stdout
    verdict_line_near_the_end(finished.stdout, "not conformant")
    assert_the_checkers_console(finished.stdout)
    assert (
        "petstore-conformance: auth: 9 passed, 20 failed, 4 skipped; failed AUTH-WWW-AUTHENTICATE"
        in (finished.stdout)
    )
    assert_console_as_documented(finished.stdout, "not conformant")
    assert_no_key_anywhere(finished, (main, spare))


# --- 7. A console a vendor can act on ---------------------------------------------------------

BLOCK_HEAD = re.compile(r"^([A-Z]+(?:-[A-Z0-9]+)+) \((MUST|SHOULD)\): \d+ of \d+ checks failed")


def block_of(lines: list[str], requirement: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{requirement} ("))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines)
    )
    return lines[start:end]


def test_one_header_fault_gives_one_short_block_and_a_closing_list(tmp_path: Path) -> None:
    """Unreadable rate-limit headers (all three written as floats) fail LIM-HEADERS-VALID on
    every response: the console shows one block for it, near the top; the closing list names
    the warned SHOULD (`Deprecation: true`), the requirement this run could not test (no spare
    key) and the ones the unreadable headers blocked. No traceback, no unrelated test failed."""
    main = new_key("main")
    faults = ["headers-as-floats", "deprecation-true"]
    (tmp_path / "v").mkdir()
    (tmp_path / "p").mkdir()
    with running_double([f"{main}:free"], faults=faults) as base_url:
        args = ("--base-url", base_url, "--api-key", main, "--plan", "free")
        finished = run_command(checker(*args), tmp_path)
        verbose = run_command(checker(*args, "--profile", "smoke", "--", "-v"), tmp_path / "v")
        rows = run_command(checker(*args, "--profile", "smoke", "--pytest-output"), tmp_path / "p")

    assert finished.status == 1, finished.describe()
    lines = finished.stdout.splitlines()
    heads = [match.group(1) for line in lines if (match := BLOCK_HEAD.match(line))]
    assert heads == ["LIM-HEADERS-VALID"], finished.describe()
    block = block_of(lines, "LIM-HEADERS-VALID")
    assert len(block) <= 12, "\n".join(block)
    assert lines.index(block[0]) < 30, "the block does not lead the console"
    assert any(line.startswith("  basis: ") for line in block)
    assert any(line.startswith("  evidence: ") for line in block)
    assert any(line.startswith("    X-RateLimit-Limit: 60.0") for line in block)
    assert any(line.startswith("  reproduce: curl ") for line in block)
    closing = "\n".join(lines[lines.index(block[-1]) + 1 :])
    assert "warned (SHOULD; a failure under --strict):\n  DEP-DEPRECATION-HEADER: " in closing
    assert "LIM-PER-KEY (MUST): needs a second key of the plan (--spare-api-key)" in closing
    blocked = [line for line in closing.splitlines() if "blocked by LIM-HEADERS-VALID" in line]
    assert blocked and "LIM-RESET-HONEST" in blocked[0], closing
    assert "AUTH-INVALID-KEY-401 (MUST), passed but for one case" in closing
    assert "--allow-key-in-url" in closing
    verified_by = catalogue()["LIM-HEADERS-VALID"].tests
    for line in lines:
        if line.startswith("FAILED "):
            test = line.split()[1].split("[", 1)[0]
            assert test in verified_by, f"an unrelated test failed: {line}"
    assert "Traceback" not in finished.output and "plugin.py" not in finished.output
    # Bounded: the FAILED list is bounded by the tests that verify the requirement (checked
    # above), and lines saying what the run waits for come and go with the machine's load.
    said = [line for line in lines if line.startswith("FAILED ") or PROGRESS.match(line)]
    assert len(lines) - len(said) <= 60, finished.describe()
    verdict_line_near_the_end(finished.stdout, "not conformant")
    assert_no_key_anywhere(finished, (main,))

    # pytest's per-test detail is there with -v: the failed requirements, not a traceback.
    assert verbose.status == 1, verbose.describe()
    assert "[LIM-HEADERS-VALID, MUST] X-RateLimit-Limit must be a whole number" in verbose.stdout
    assert "PASSED" in verbose.stdout
    assert "Traceback" not in verbose.output and "plugin.py" not in verbose.output
    # --pytest-output: pytest's rows of dots and its summary, as before the checker's console.
    assert rows.status == 1, rows.describe()
    assert re.search(r"^test_auth\.py [.Fs]+", rows.stdout, re.MULTILINE), rows.stdout
    assert "short test summary info" in rows.stdout


# --- 421 Misdirected Request: the host name to use ---------------------------------------------


@pytest.mark.parametrize(
    ("names", "advice"),
    [
        (("10.0.0.5", "staging.internal"), "e.g. --base-url https://staging.internal:8443/v1"),
        (("*.internal",), "use a host name its certificate names (*.internal), not an IP"),
    ],
)
def test_a_421_names_the_host_name_the_certificate_is_issued_for(names, advice) -> None:
    expires = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    facts = TlsFacts("TLSv1.3", "", "CN=Caddy Local Authority", expires, names=names)
    line = misdirected("https://10.0.0.5:8443/v1", facts)
    assert line.startswith(
        "https://10.0.0.5:8443/v1 answered 421 Misdirected Request to GET /categories: the "
        "server will not answer for the host 10.0.0.5 on this connection; "
    ), line
    assert advice in line, line
