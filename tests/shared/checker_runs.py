"""Running `petstore-conformance` as users run it, against a double, the reference or anything
else on a base URL, and reading back what it said and wrote: shared by the verdict tests. Each
run is a process of its own, forked from one that has imported the checker (tests/shared/
zygote.py: the import was a third of a run's CPU); the command's own tests start it whole."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import unquote_plus
from xml.etree import ElementTree

from conformance.burst.reach import usable_cpus
from conformance.judging.verdict import STOPPED_EARLY
from tests.shared import zygote
from tests.shared.double import running_double
from tests.shared.servers import start_server

# Free, as a nightly run on a free-plan key: a spare key cheap to exhaust even on a busy machine.
PLAN = "free"
# The demo's short minute (run.DEMO_MINUTE_SECONDS): a burst of a free plan's quota must land in
# its settled part (all but its last second) on a machine running eight checkers on two cores.
MINUTE_SECONDS = 3.0
CHECKER_TIMEOUT = 240


@dataclass
class CheckerRun:
    status: int
    statement: dict
    output: str
    report_dir: Path
    keys: tuple[str, str]
    urls: list[str]  # every request target the double received (empty for other servers)
    options: tuple[str, ...] = ()
    seconds: float = 0.0

    def describe(self) -> str:
        return (
            f"exit {self.status}, failed {self.statement.get('failed_requirements')}, "
            f"reason {self.statement.get('reason')!r}\n{self.output[-3000:]}"
        )

    def outcomes(self) -> dict[str, str]:
        return {entry["id"]: entry["outcome"] for entry in self.statement.get("requirements", [])}


def machine_loaded() -> bool:
    """Other work beside this test (a second test run on the machine): more runnable processes
    than two for each CPU over the last minute. Read before the test's own work."""
    return os.getloadavg()[0] > 2 * usable_cpus()


def beyond_this_machine(run: CheckerRun, loaded: bool) -> bool:
    """Whether the run honestly said the quota is beyond this machine (no verdict, with the
    rates it reached), an answer a test accepts only where other work shared the machine:
    `loaded` as the test began, or over the last minute of its run."""
    if not ((loaded or machine_loaded()) and run.status == 2):
        return False
    assert "beyond what this machine can send" in run.output, run.describe()
    assert run.outcomes()["LIM-429-WHEN-EXCEEDED"] == "not-tested", run.describe()
    return True


MACHINE_BOUND = (
    "beyond what this machine can send",
    "did not reach the limit in one window",
    "ran into the next before a refusal",
)
"""What a run says where this machine, not the target, kept it from telling (conformance.burst,
conformance.suite.exhaustion)."""


def no_verdict_for_this_machine(statement: dict, loaded: bool) -> bool:
    """Whether a run's "no verdict" is this machine's, an answer a test accepts only where
    other work shared the machine (`loaded` as the test began, or over the last minute):
    nothing failed, and every requirement it left unchecked says the machine could not tell."""
    if statement.get("verdict") != "no verdict" or not (loaded or machine_loaded()):
        return False
    assert statement["failed_requirements"] == [], statement.get("reason")
    named = (statement.get("reason") or "").removeprefix("not checked: ").split(", ")
    reasons = {r["id"]: r.get("reason") or "" for r in statement["requirements"]}
    for requirement in named:
        said = reasons.get(requirement, "")
        assert any(phrase in said for phrase in MACHINE_BOUND), f"{requirement}: {said!r}"
    return True


def new_keys() -> tuple[str, str]:
    return f"psc-main-{secrets.token_hex(12)}", f"psc-spare-{secrets.token_hex(12)}"


def forked_run(
    argv: list[str], environment: dict[str, str], cwd: Path, timeout: float
) -> tuple[int | None, str]:
    """The command run in a child of tests/shared/zygote.py: its status (None where the zygote
    is busy) and its output, stdout then stderr, as `subprocess.run` gives them."""
    with tempfile.TemporaryDirectory() as folder:
        stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
        stdout.touch()
        stderr.touch()
        status = zygote.run(argv, environment, cwd, stdout, stderr, timeout)
        return status, stdout.read_text() + stderr.read_text()


def run_command(
    base_url: str,
    keys: tuple[str, str],
    report_dir: Path,
    *,
    plan: str = PLAN,
    options: Sequence[str] = (),
    timeout: float = CHECKER_TIMEOUT,
    cwd: Path | None = None,
) -> CheckerRun:
    """`petstore-conformance` against `base_url`, the keys handed over in the environment, in
    a child of the zygote, or as a command of its own where another thread's run has it."""
    environment = {
        **os.environ,
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": keys[0],
        "PETSTORE_SPARE_API_KEY": keys[1],
        "PETSTORE_PLAN": plan,
        # The package as installed (in tox, the wheel of the working copy), as users run it,
        # not the source tree in the working directory: Hypothesis reads the source of every
        # module outside site-packages for constants to draw, 0.5 to 0.9 s of CPU in a run
        # of 3 to 4 (three hundred runs in the parallel phase).
        "PYTHONSAFEPATH": "1",
    }
    argv = ["--report-dir", str(report_dir), *options]
    started = time.perf_counter()
    status, output = forked_run(argv, environment, cwd or Path.cwd(), timeout)
    if status is None:  # another thread's run has the zygote: start the command itself
        process = subprocess.run(
            [sys.executable, "-m", "conformance.cli", *argv],
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
        status, output = process.returncode, process.stdout + process.stderr
    seconds = time.perf_counter() - started
    statement_path = report_dir / "conformance.json"
    statement = json.loads(statement_path.read_text()) if statement_path.exists() else {}
    run = CheckerRun(status, statement, output, report_dir, keys, [], tuple(options), seconds)
    assert_outputs_agree(run)
    return run


# The closing line of the console: the run's result in words, and its exit status.
CLOSING_LINE = re.compile(r"^petstore-conformance: (.+?) \(exit (\d)\)(.*)$", re.MULTILINE)
# What a result other than the verdict means (README, "Known failures"), by exit status.
RESULT_FOR_EXIT = {
    0: "not conformant, every failure expected",
    1: "conformant, but the expected failures are out of date",
    2: "no verdict",
}


def assert_outputs_agree(run: CheckerRun) -> None:
    """The console, conformance.json, the HTML banner, the badge and JUnit say what the exit
    status says. With expected failures a run may exit 0 (or 1) while its verdict says
    otherwise: its result then says so in words, everywhere the same."""
    closing = CLOSING_LINE.findall(run.output)
    if not closing:  # bad usage or an unusable target: one line, before any report
        assert run.status == 2, f"no closing line, yet exit {run.status}: {run.describe()}"
        return
    result, said_status, rest = closing[-1]
    assert int(said_status) == run.status, f"the console says exit {said_status}: {run.describe()}"
    if "pytest stopped before one" in rest:  # no statement of this run to agree
        assert run.status == 2, run.describe()
        return
    statement, verdict = run.statement, run.statement.get("verdict")
    assert statement.get("exit_status") == run.status, run.describe()
    assert statement.get("result") == result, run.describe()
    expected_result = verdict if EXIT_FOR_VERDICT[verdict] == run.status else None
    assert result == (expected_result or RESULT_FOR_EXIT[run.status]), run.describe()
    # A run decided although it stopped early says so on its closing line, as it says why.
    if STOPPED_EARLY in (statement.get("reason") or "") and result != "no verdict":
        assert "; stopped early: " in rest, f"the closing line hides the stop: {run.describe()}"
    html = (run.report_dir / "report.html").read_text(encoding="utf-8")
    assert f"Exit status {run.status}: {escape(result)}" in html, "the HTML banner disagrees"
    assert f"Verdict: {escape(verdict)}<" in html, "the HTML banner names another verdict"
    badge = (run.report_dir / "badge.svg").read_text(encoding="utf-8")
    assert f">{escape(verdict)}</text>" in badge, f"the badge disagrees: {badge}"
    assert_junit_agrees(run)


EXIT_FOR_VERDICT = {"conformant": 0, "not conformant": 1, "no verdict": 2}


def assert_junit_agrees(run: CheckerRun) -> None:
    """No failure nor error in JUnit for exit 0; every failed requirement the exit status
    rests on a failure for exit 1; an error for exit 2 (CI systems colour a build from it)."""
    suite = ElementTree.parse(run.report_dir / "junit.xml").getroot().find("testsuite")
    failures = [f.get("message") or "" for f in suite.iter("failure")]
    errors = list(suite.iter("error"))
    assert int(suite.get("failures")) == len(failures), "JUnit's count of failures is wrong"
    assert int(suite.get("errors")) == len(errors), "JUnit's count of errors is wrong"
    if run.status == 0:
        assert not failures and not errors, f"JUnit fails an exit 0: {failures[:1]}"
    elif run.status == 1:
        unexpected = run.statement.get("unexpected_failures", run.statement["failed_requirements"])
        for requirement in unexpected:
            assert any(f"[{requirement}" in text for text in failures), (
                f"{requirement} failed, yet no JUnit test case fails on it"
            )
        assert failures, "exit 1, yet JUnit has no failure"
    else:
        assert errors, f"no verdict, yet JUnit has no error: {run.describe()}"


def run_checker(
    report_dir: Path,
    faults: Sequence[str] = (),
    variants: Sequence[str] = (),
    options: Sequence[str] = (),
    *,
    plan: str = PLAN,
    key_plan: str | None = None,
    minute_seconds: float = MINUTE_SECONDS,
    cwd: Path | None = None,
) -> CheckerRun:
    """Start a fresh double, run the command against it, return what it said and wrote.
    `key_plan` is the double's form of the plan (`enterprise:RPM:RPD`), where it differs."""
    keys = new_keys()
    specs = [f"{key}:{key_plan or plan}" for key in keys]
    url_log = report_dir.with_name(report_dir.name + "-urls.log")
    with running_double(specs, faults, variants, minute_seconds, url_log) as base_url:
        run = run_command(base_url, keys, report_dir, plan=plan, options=options, cwd=cwd)
    run.urls = url_log.read_text(encoding="latin-1").splitlines() if url_log.exists() else []
    return run


def assert_no_key_leaked(run: CheckerRun) -> None:
    assert_no_key_in_outputs(run)
    assert_urls_carry_no_key(run)


def assert_no_key_in_outputs(run: CheckerRun) -> None:
    """No key on the console nor in any file written, and no traceback."""
    texts = {"console": run.output}
    for path in run.report_dir.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8", errors="replace")
    for where, text in texts.items():
        for key in run.keys:
            assert key not in text, f"an API key appears in {where}"
    assert {"report.html", "junit.xml", "conformance.json"} <= set(texts)
    assert "Traceback" not in run.output, run.describe()
    assert "\x00" not in run.output, "a raw NUL on the console"


def assert_urls_carry_no_key(run: CheckerRun) -> None:
    """The main key is in no URL the double received, unless the run opted in; then it is
    (the query-string check ran), which shows that the log sees query strings at all."""
    assert run.urls, "the double logged no request"
    in_urls = [url for url in run.urls if run.keys[0] in unquote_plus(url)]
    if "--allow-key-in-url" in run.options:
        assert in_urls, "the opt-in was given, yet no URL carried the key"
    else:
        assert not in_urls, f"the main key travelled in {len(in_urls)} URLs without the opt-in"


def run_against_app(
    command: Sequence[str],
    key_option: str,
    report_dir: Path,
    plan: str,
    *,
    env: dict[str, str] | None = None,
    timeout: float = CHECKER_TIMEOUT,
    options: Sequence[str] = (),
    key_plan: str | None = None,
) -> CheckerRun:
    """Start an app that announces `NAME listening on URL` (tests.shared.servers), with two fresh
    keys of `plan` given as `KEY_OPTION KEY:PLAN` each (`key_plan` where the app's form differs,
    `enterprise:RPM:RPD`); run the command with `options` against it; no key leaks."""
    keys = new_keys()
    arguments = [*command, *(a for k in keys for a in (key_option, f"{k}:{key_plan or plan}"))]
    server = start_server(arguments, env=env)
    try:
        run = run_command(
            server.base_url, keys, report_dir, plan=plan, options=options, timeout=timeout
        )
    finally:
        server.stop()
    assert_no_key_in_outputs(run)
    return run
