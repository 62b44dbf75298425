"""The known-failure baseline, `--expected-failures FILE`: reading the file, judging a run with
it, and the command's exit status end to end (smoke runs against the double, about a second
each): 0 when every failure is listed, 1 on an unlisted failure, a stale or an expired entry, 2
on a file that cannot be used."""

from __future__ import annotations

import datetime
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.evidence import baseline
from conformance.evidence.baseline import BaselineError, ExpectedFailure
from conformance.judging import checks
from conformance.judging.verdict import decide
from conformance.spec import catalogue
from tests.checker.test_command import (
    QUICK_TIMEOUT,
    assert_no_key_anywhere,
    checker,
    new_key,
    run_command,
)
from tests.shared.checker_runs import new_keys
from tests.shared.checker_runs import run_command as run_checker_on
from tests.shared.double import running_double

pytestmark = pytest.mark.usefixtures("fresh_ledger")

FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"
NOT_IN_SMOKE_ID = "CAT-CREATE-201"  # the smoke profile creates nothing
TODAY = datetime.date(2026, 6, 1)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def entry(requirement_id: str, reason: str = "known", until: str | None = None) -> str:
    line = f"  - id: {requirement_id}\n    reason: {reason}\n"
    return line + (f"    until: {until}\n" if until else "")


def baseline_file(path: Path, *entries: str) -> Path:
    return write(path, "expected_failures:\n" + "".join(entries))


# -- reading the file ---------------------------------------------------------------------------


def test_a_well_formed_file_is_read(tmp_path):
    path = baseline_file(
        tmp_path / "known.yaml",
        entry(FAULT_ID, "the gateway drops the header (OPS-123)", "2027-03-01"),
        entry(NOT_IN_SMOKE_ID),
    )
    loaded = baseline.load(path)
    assert loaded.entries == (
        ExpectedFailure(
            FAULT_ID, "the gateway drops the header (OPS-123)", datetime.date(2027, 3, 1)
        ),
        ExpectedFailure(NOT_IN_SMOKE_ID, "known"),
    )


def test_an_empty_list_is_a_baseline_with_no_entries(tmp_path):
    assert baseline.load(write(tmp_path / "b.yaml", "expected_failures: []\n")).entries == ()


BAD_FILES = {
    "malformed-yaml": ("expected_failures: [\n  - id: X\n", "not valid YAML"),
    "not-a-mapping": ("- id: AUTH-WWW-AUTHENTICATE\n", "one key, expected_failures"),
    "unknown-id": (
        "expected_failures:\n" + entry("AUTH-WWW-AUTHENTICATED"),
        "unknown requirement id 'AUTH-WWW-AUTHENTICATED' (did you mean AUTH-WWW-AUTHENTICATE?)",
    ),
    "no-reason": ("expected_failures:\n  - id: AUTH-WWW-AUTHENTICATE\n", "a reason"),
    "blank-reason": ("expected_failures:\n" + entry(FAULT_ID, "''"), "needs a reason"),
    "bad-until": ("expected_failures:\n" + entry(FAULT_ID, until="next spring"), "a date"),
    "twice": ("expected_failures:\n" + entry(FAULT_ID) + entry(FAULT_ID), "more than once"),
    "unknown-key": ("expected_failures:\n" + entry(FAULT_ID) + "    owner: me\n", "an id"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_is_refused_with_one_line(case, tmp_path):
    text, says = BAD_FILES[case]
    with pytest.raises(BaselineError) as refused:
        baseline.load(write(tmp_path / "bad.yaml", text))
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(BaselineError, match="cannot read the expected failures"):
        baseline.load(tmp_path / "absent.yaml")


# -- judging a run -----------------------------------------------------------------------------


def results(failing: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> list:
    return [
        checks.CheckResult(r.id, r.id not in failing, "seen", "test_x")
        for r in catalogue().values()
        if not r.not_testable and r.id not in without
    ]


def judged(verdict, *entries: ExpectedFailure) -> tuple[baseline.Judgement, int]:
    known = baseline.Baseline(Path("known.yaml"), entries) if entries else None
    judgement = baseline.apply(verdict, known, TODAY)
    return judgement, baseline.exit_status(verdict, judgement)


def test_a_listed_failure_in_date_is_expected_and_exit_0():
    verdict = decide(results(failing=(FAULT_ID,)))
    judgement, status = judged(verdict, ExpectedFailure(FAULT_ID, "known", TODAY))
    assert [e.id for e in judgement.expected] == [FAULT_ID]
    assert judgement.unexpected == [] and status == 0
    assert verdict.verdict == "not conformant"  # the verdict itself stays true


def test_an_unlisted_failure_is_new_and_exit_1():
    verdict = decide(results(failing=(FAULT_ID,)))
    judgement, status = judged(verdict, ExpectedFailure(NOT_IN_SMOKE_ID, "known"))
    assert judgement.unexpected == [FAULT_ID] and status == 1


def test_a_listed_requirement_that_passed_is_stale_and_exit_1():
    judgement, status = judged(decide(results()), ExpectedFailure(FAULT_ID, "known"))
    assert [e.id for e in judgement.stale] == [FAULT_ID] and status == 1
    assert any("remove it" in line for line in baseline.console_lines(judgement))


def test_an_expired_entry_excuses_nothing_and_exit_1():
    verdict = decide(results(failing=(FAULT_ID,)))
    yesterday = TODAY - datetime.timedelta(days=1)
    judgement, status = judged(verdict, ExpectedFailure(FAULT_ID, "known", yesterday))
    assert judgement.unexpected == [FAULT_ID] and status == 1
    assert [e.id for e in judgement.expired] == [FAULT_ID]


def test_a_listed_requirement_not_tested_is_neither_stale_nor_failing():
    verdict = decide(results(without=(NOT_IN_SMOKE_ID,)), profile="smoke")
    judgement, status = judged(verdict, ExpectedFailure(NOT_IN_SMOKE_ID, "known"))
    assert (judgement.expected, judgement.unexpected, judgement.stale) == ([], [], [])
    assert status == 0


def test_excused_failures_do_not_hide_an_unchecked_must():
    verdict = decide(results(failing=(FAULT_ID,), without=(NOT_IN_SMOKE_ID,)), profile="full")
    assert verdict.verdict == "not conformant" and NOT_IN_SMOKE_ID in verdict.undecided
    assert judged(verdict, ExpectedFailure(FAULT_ID, "known"))[1] == 2


def test_without_a_baseline_every_failure_is_new():
    judgement, status = judged(decide(results(failing=(FAULT_ID,))))
    assert judgement.unexpected == [FAULT_ID] and status == 1
    assert baseline.console_lines(judgement) == []
    assert judged(decide(results()))[1] == 0


def test_the_written_baseline_reads_back_with_the_failed_requirements(tmp_path):
    verdict = decide(results(failing=(FAULT_ID, NOT_IN_SMOKE_ID)))
    path = tmp_path / "deep" / "known.yaml"
    baseline.write(path, verdict, "http://petstore.test/v1", "run-1")
    assert [e.id for e in baseline.load(path).entries] == [FAULT_ID, NOT_IN_SMOKE_ID]
    assert path.read_text(encoding="utf-8").startswith("# Expected failures")


# -- the command -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faulty() -> Iterator[tuple[str, str]]:
    """A double missing WWW-Authenticate on its 401s: (base URL, key)."""
    key = new_key("main")
    with running_double([f"{key}:free"], faults=[FAULT]) as base_url:
        yield base_url, key


def smoke(target: tuple[str, str], cwd: Path, *options: str, environment=None):
    base_url, key = target
    args = ("--base-url", base_url, "--api-key", key, "--profile", "smoke", *options)
    return run_command(checker(*args), cwd, environment, QUICK_TIMEOUT)


def test_command_listed_failure_exits_0(faulty, tmp_path):
    known = baseline_file(tmp_path / "known.yaml", entry(FAULT_ID, "OPS-123", "2099-01-01"))
    finished = smoke(faulty, tmp_path, "--expected-failures", str(known))

    assert finished.status == 0, finished.describe()
    statement = finished.statement()
    assert statement["verdict"] == "not conformant"
    assert statement["exit_status"] == 0
    assert statement["expected_failures"] == [
        {"id": FAULT_ID, "reason": "OPS-123", "until": "2099-01-01"}
    ]
    assert statement["unexpected_failures"] == []
    assert f"expected failure: {FAULT_ID} (OPS-123)" in finished.stdout
    assert f"failed {FAULT_ID} (expected)" in finished.stdout.splitlines()[-1]
    assert_no_key_anywhere(finished, (faulty[1],))


def test_command_unlisted_failure_exits_1(faulty, tmp_path):
    # Listed, but not tested by the smoke profile: neither stale nor failing.
    known = baseline_file(tmp_path / "known.yaml", entry(NOT_IN_SMOKE_ID))
    finished = smoke(faulty, tmp_path, environment={"PETSTORE_EXPECTED_FAILURES": str(known)})

    assert finished.status == 1, finished.describe()
    statement = finished.statement()
    assert statement["unexpected_failures"] == [FAULT_ID]
    assert statement["stale_expected_failures"] == []
    assert f"new failure: {FAULT_ID} is not listed in {known}" in finished.stdout


def test_command_expired_entry_exits_1(faulty, tmp_path):
    known = baseline_file(tmp_path / "known.yaml", entry(FAULT_ID, until="2020-01-01"))
    finished = smoke(faulty, tmp_path, "--expected-failures", str(known))

    assert finished.status == 1, finished.describe()
    statement = finished.statement()
    assert statement["unexpected_failures"] == [FAULT_ID]
    assert [e["id"] for e in statement["expired_expected_failures"]] == [FAULT_ID]
    assert f"expired entry: {FAULT_ID} was excused until 2020-01-01" in finished.stdout


def test_command_stale_entry_exits_1_saying_to_remove_it(tmp_path):
    key = new_key("main")
    known = baseline_file(tmp_path / "known.yaml", entry(FAULT_ID))
    with running_double([f"{key}:free"]) as base_url:  # a correct double: the entry is stale
        finished = smoke((base_url, key), tmp_path, "--expected-failures", str(known))

    assert finished.status == 1, finished.describe()
    statement = finished.statement()
    assert statement["verdict"] == "conformant"
    assert [e["id"] for e in statement["stale_expected_failures"]] == [FAULT_ID]
    assert f"stale entry: {FAULT_ID} passed; remove it from {known}" in finished.stdout


BAD_COMMAND_FILES = {
    "malformed": ("expected_failures: [oops\n", "not valid YAML"),
    "unknown-id": ("expected_failures:\n" + entry("AUTH-NOPE"), "unknown requirement id"),
    "missing": (None, "cannot read"),
}


@pytest.mark.parametrize("case", sorted(BAD_COMMAND_FILES))
def test_command_bad_file_exits_2_with_one_line_and_sends_nothing(case, faulty, tmp_path):
    text, says = BAD_COMMAND_FILES[case]
    known = tmp_path / "input" / "known.yaml"
    known.parent.mkdir()
    if text is not None:
        write(known, text)
    finished = smoke(faulty, tmp_path, "--expected-failures", str(known))

    assert finished.status == 2, finished.describe()
    assert "Traceback" not in finished.output
    [line] = finished.stderr.strip().splitlines()
    assert line.startswith("petstore-conformance: ") and says in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input"], "a refused run wrote files"


def test_command_writes_a_baseline_that_the_next_run_passes_with(faulty, tmp_path):
    written = tmp_path / "known.yaml"
    first = smoke(faulty, tmp_path, "--write-expected-failures", str(written))
    assert first.status == 1, first.describe()
    assert [e.id for e in baseline.load(written).entries] == [FAULT_ID]

    second = smoke(faulty, tmp_path, "--expected-failures", str(written))
    assert second.status == 0, second.describe()
    assert second.statement()["expected_failures"][0]["id"] == FAULT_ID


# -- a baseline of a run's own failures (full runs against a double answering 403) -------------

REFUSING_FAULT = "forbidden-403-for-bad-key"  # 403 for every refused key: no 401 is ever sent
REFUSED_IDS = ["AUTH-MISSING-KEY-401", "AUTH-INVALID-KEY-401"]
EXCUSED_WORDS = "not conformant, every failure expected"


def test_a_baseline_of_a_runs_own_failures_gives_the_next_run_exit_0(tmp_path):
    """Written by one full run, read by the next: the failures it lists are excused, and what
    they kept from a judgement (AUTH-WWW-AUTHENTICATE: no 401 to read) is blocked by them, not
    a reason for "no verdict". The 403s to `Basic <key>` come from the server's guest limit, not
    the plan's: LIM-LIMIT-PLAN is not judged on them."""
    keys = new_keys()
    written = tmp_path / "base.yaml"
    with running_double([f"{key}:free" for key in keys], [REFUSING_FAULT], (), 3.0) as base_url:
        first = run_checker_on(
            base_url, keys, tmp_path / "first", options=["--write-expected-failures", str(written)]
        )
        package = tmp_path / "evidence.zip"
        excused = ["--expected-failures", str(written), "--package", str(package)]
        second = run_checker_on(base_url, keys, tmp_path / "second", options=excused)

    assert first.status == 1, first.describe()
    assert first.statement["failed_requirements"] == REFUSED_IDS, first.describe()
    assert first.outcomes()["LIM-LIMIT-PLAN"] == "passed", first.describe()
    assert [entry.id for entry in baseline.load(written).entries] == REFUSED_IDS

    assert second.status == 0, second.describe()
    statement = second.statement
    assert (statement["verdict"], statement["exit_status"]) == ("not conformant", 0)
    assert statement["result"] == EXCUSED_WORDS
    blocked = next(e for e in statement["requirements"] if e["id"] == "AUTH-WWW-AUTHENTICATE")
    assert blocked["outcome"] == "not-tested" and blocked["reason"].startswith(
        "blocked by AUTH-MISSING-KEY-401 (failed), AUTH-INVALID-KEY-401 (failed)"
    ), blocked
    # Every place that states the result says the words of exit 0.
    lines = second.output.splitlines()
    assert f"petstore-conformance: {EXCUSED_WORDS}" in [line.strip("= ") for line in lines]
    assert lines[-1].startswith(f"petstore-conformance: {EXCUSED_WORDS} (exit 0): failed")
    assert "no verdict" not in second.output and "(exit 2)" not in second.output
    html = (second.report_dir / "report.html").read_text(encoding="utf-8")
    assert f"Exit status 0: {EXCUSED_WORDS}" in html
    verified = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "verify", str(package)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"verdict {EXCUSED_WORDS} (exit 0)" in verified.stdout
