"""Running `petstore-conformance` as users run it, against a double, the reference or anything
else on a base URL, and reading back what it said and wrote: shared by the verdict tests."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_plus

from tests.double import running_double
from tests.servers import start_server

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


def new_keys() -> tuple[str, str]:
    return f"psc-main-{secrets.token_hex(12)}", f"psc-spare-{secrets.token_hex(12)}"


def run_command(
    base_url: str,
    keys: tuple[str, str],
    report_dir: Path,
    *,
    plan: str = PLAN,
    options: Sequence[str] = (),
    timeout: float = CHECKER_TIMEOUT,
) -> CheckerRun:
    """`petstore-conformance` against `base_url`, the keys handed over in the environment."""
    environment = {
        **os.environ,
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": keys[0],
        "PETSTORE_SPARE_API_KEY": keys[1],
        "PETSTORE_PLAN": plan,
    }
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "--report-dir", str(report_dir), *options],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    seconds = time.perf_counter() - started
    output = process.stdout + process.stderr
    statement_path = report_dir / "conformance.json"
    statement = json.loads(statement_path.read_text()) if statement_path.exists() else {}
    return CheckerRun(
        process.returncode, statement, output, report_dir, keys, [], tuple(options), seconds
    )


def run_checker(
    report_dir: Path,
    faults: Sequence[str] = (),
    variants: Sequence[str] = (),
    options: Sequence[str] = (),
    *,
    plan: str = PLAN,
    key_plan: str | None = None,
    minute_seconds: float = MINUTE_SECONDS,
) -> CheckerRun:
    """Start a fresh double, run the command against it, return what it said and wrote.
    `key_plan` is the double's form of the plan (`enterprise:RPM:RPD`), where it differs."""
    keys = new_keys()
    specs = [f"{key}:{key_plan or plan}" for key in keys]
    url_log = report_dir.with_name(report_dir.name + "-urls.log")
    with running_double(specs, faults, variants, minute_seconds, url_log) as base_url:
        run = run_command(base_url, keys, report_dir, plan=plan, options=options)
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
    command: Sequence[str], key_option: str, report_dir: Path, plan: str
) -> CheckerRun:
    """Start an app that announces `NAME listening on URL` (tests.servers), with two fresh keys
    of `plan` given as `KEY_OPTION KEY:PLAN` each; run the command against it; no key leaks."""
    keys = new_keys()
    server = start_server([*command, *(a for k in keys for a in (key_option, f"{k}:{plan}"))])
    try:
        run = run_command(server.base_url, keys, report_dir, plan=plan)
    finally:
        server.stop()
    assert_no_key_in_outputs(run)
    return run
