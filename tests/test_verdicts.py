"""The checker's sensitivity and fairness, measured: `petstore-conformance`, run as users run it,
must fail every faulty double naming the requirement the fault breaks, and pass every legitimate
variant; the same verdict three runs in a row; no key in anything any run writes, nor in any
URL the double receives (unless the run opted in); and a console without tracebacks or raw
control bytes."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_plus

import pytest

from tests.double import FAULTS, VARIANTS, WARNINGS, running_double

# Three consecutive runs must agree: a verdict that depends on luck is a defect of the check.
ROUNDS = int(os.environ.get("PSC_VERDICT_ROUNDS", "3"))
# Free, as a nightly run on a free-plan key: a spare key cheap to exhaust even on a busy machine.
PLAN = "free"
CHECKER_TIMEOUT = 240


@dataclass
class CheckerRun:
    status: int
    statement: dict
    output: str
    report_dir: Path
    keys: tuple[str, str]
    urls: list[str]  # every request target the double received
    options: tuple[str, ...] = ()

    def describe(self) -> str:
        return (
            f"exit {self.status}, failed {self.statement.get('failed_requirements')}, "
            f"reason {self.statement.get('reason')!r}\n{self.output[-3000:]}"
        )


def run_checker(report_dir: Path, faults=(), variants=(), options=()) -> CheckerRun:
    """Start a fresh double, run the command against it, return what it said and wrote."""
    keys = (f"psc-main-{secrets.token_hex(12)}", f"psc-spare-{secrets.token_hex(12)}")
    specs = [f"{key}:{PLAN}" for key in keys]
    url_log = report_dir.with_name(report_dir.name + "-urls.log")
    with running_double(specs, faults, variants, url_log=url_log) as base_url:
        environment = {
            **os.environ,
            "PETSTORE_BASE_URL": base_url,
            "PETSTORE_API_KEY": keys[0],
            "PETSTORE_SPARE_API_KEY": keys[1],
            "PETSTORE_PLAN": PLAN,
        }
        process = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "--report-dir", str(report_dir), *options],
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHECKER_TIMEOUT,
        )
    output = process.stdout + process.stderr
    statement_path = report_dir / "conformance.json"
    statement = json.loads(statement_path.read_text()) if statement_path.exists() else {}
    urls = url_log.read_text(encoding="latin-1").splitlines() if url_log.exists() else []
    return CheckerRun(process.returncode, statement, output, report_dir, keys, urls, options)


def assert_no_key_leaked(run: CheckerRun) -> None:
    texts = {"console": run.output}
    for path in run.report_dir.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8", errors="replace")
    for where, text in texts.items():
        for key in run.keys:
            assert key not in text, f"an API key appears in {where}"
    assert {"report.html", "junit.xml", "conformance.json"} <= set(texts)
    assert_urls_carry_no_key(run)
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


def assert_hint_shown(run: CheckerRun, requirement: str, words: str) -> None:
    """The failure's hint says `words`, on the console, in conformance.json and the HTML."""
    entry = next(e for e in run.statement["requirements"] if e["id"] == requirement)
    assert any(words in hint for hint in entry.get("hints", [])), entry.get("hints")
    assert words in run.output, run.describe()
    assert words in (run.report_dir / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_is_detected(fault: str, tmp_path: Path) -> None:
    expected = FAULTS[fault].requirement
    for round_ in range(1, ROUNDS + 1):
        run = run_checker(tmp_path / f"round-{round_}", [fault], options=FAULTS[fault].options)
        assert run.status == 1, f"round {round_}: {fault} must be not conformant: {run.describe()}"
        assert expected in run.statement["failed_requirements"], (
            f"round {round_}: {fault} must fail {expected}: {run.describe()}"
        )
        assert_no_key_leaked(run)
        if FAULTS[fault].hint:
            assert_hint_shown(run, expected, FAULTS[fault].hint)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_passes(variant: str, tmp_path: Path) -> None:
    for round_ in range(1, ROUNDS + 1):
        run = run_checker(tmp_path / f"round-{round_}", variants=[variant])
        assert run.status == 0, f"round {round_}: {variant} is legitimate: {run.describe()}"
        assert run.statement["verdict"] == "conformant"
        assert_no_key_leaked(run)


@pytest.mark.slow
@pytest.mark.parametrize("deviation", sorted(WARNINGS))
def test_should_deviation_warns_and_fails_only_when_strict(deviation: str, tmp_path: Path) -> None:
    expected = WARNINGS[deviation].requirement
    for round_ in range(1, ROUNDS + 1):
        run = run_checker(tmp_path / f"round-{round_}", faults=[deviation])
        assert run.status == 0, f"round {round_}: a SHOULD is a warning: {run.describe()}"
        assert expected in run.statement["warned_requirements"], run.describe()
        strict = run_checker(tmp_path / f"strict-{round_}", [deviation], options=["--strict"])
        assert strict.status == 1, f"round {round_}: --strict fails it: {strict.describe()}"
        assert expected in strict.statement["failed_requirements"], strict.describe()
        assert_no_key_leaked(run)


def test_correct_double_is_conformant(tmp_path: Path) -> None:
    """The double without faults is the baseline every fault deviates from."""
    run = run_checker(tmp_path)
    assert run.status == 0, run.describe()
    assert run.statement["failed_requirements"] == []
    assert_no_key_leaked(run)
