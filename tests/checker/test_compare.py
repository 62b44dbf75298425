"""What changed between two runs: the comparison itself, `petstore-conformance compare BEFORE
AFTER` on the statements of two real smoke runs (a correct double, then one that lost its
WWW-Authenticate header), and `--previous`, which puts the comparison into a run's report."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.evidence.compare import UnreadableStatement, compare, load_statement
from tests.checker.test_command import QUICK_TIMEOUT, Finished, checker, new_key, run_command
from tests.shared.double import running_double

FAULT, FAULT_ID = "no-www-authenticate", "AUTH-WWW-AUTHENTICATE"


def statement(**outcomes: str) -> dict:
    return {
        "run_id": "r1",
        "target": "http://a/v1",
        "requirements": [{"id": i.replace("_", "-"), "outcome": o} for i, o in outcomes.items()],
    }


def test_each_kind_of_change_is_named():
    before = statement(A="passed", B="failed", C="passed", D="not-tested", E="passed", F="warned")
    after = statement(A="failed", B="passed", C="not-tested", D="passed", E="warned", F="warned")
    comparison = compare(before, after)
    assert [c.id for c in comparison.regressions] == ["A"]
    assert [c.id for c in comparison.fixes] == ["B"]
    assert [c.id for c in comparison.newly_not_tested] == ["C"]
    assert [(c.id, c.after) for c in comparison.newly_tested] == [("D", "passed")]
    assert [(c.id, c.before, c.after) for c in comparison.other_changes] == [
        ("E", "passed", "warned")
    ]
    assert comparison.previous["run_id"] == "r1"


def test_a_requirement_only_one_run_knows_is_a_change_from_or_to_absent():
    comparison = compare(statement(OLD="passed"), statement(NEW="passed"))
    assert {(c.id, c.before, c.after) for c in comparison.changes} == {
        ("NEW", "absent", "passed"),
        ("OLD", "passed", "absent"),
    }


def test_different_targets_are_noted():
    after = {**statement(A="passed"), "target": "http://b/v1"}
    notes = compare(statement(A="passed"), after).notes
    assert notes == ["the two runs differ in target: http://a/v1 then http://b/v1"]


def test_a_statement_is_read_from_a_file_a_folder_or_a_package(tmp_path):
    document = statement(A="passed")
    (tmp_path / "conformance.json").write_text(json.dumps(document))
    with zipfile.ZipFile(tmp_path / "package.zip", "w") as archive:
        archive.writestr("conformance.json", json.dumps(document))
    for form in ("conformance.json", ".", "package.zip"):
        assert load_statement(tmp_path / form) == document


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("absent.json", None, "cannot read"),
        ("text.json", "not json", "is not JSON"),
        ("list.json", "[1, 2]", "not a conformance statement"),
        ("empty.zip", b"PK\x05\x06" + b"\0" * 18, "holds no conformance.json"),
    ],
)
def test_an_unreadable_statement_says_why(tmp_path, name, content, says):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(UnreadableStatement, match=says):
        load_statement(path)


# -- the command, on real runs -----------------------------------------------------------------


@dataclass
class Runs:
    before: Path  # the report folder of a run against a correct double
    after: Path  # the same against a double that lost WWW-Authenticate
    after_run: Finished  # that run, made with --previous BEFORE


def smoke_run(base_url: str, key: str, cwd: Path, report_dir: str, *options: str) -> Finished:
    args = ("--base-url", base_url, "--api-key", key, "--profile", "smoke")
    args += ("--report-dir", report_dir, *options)
    return run_command(checker(*args), cwd, timeout=QUICK_TIMEOUT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Iterator[Runs]:
    cwd = tmp_path_factory.mktemp("compare")
    key = new_key("main")
    with running_double([f"{key}:free"]) as base_url:
        first = smoke_run(base_url, key, cwd, "before")
    with running_double([f"{key}:free"], faults=[FAULT]) as base_url:
        second = smoke_run(base_url, key, cwd, "after", "--previous", "before")
    assert first.status == 0, first.describe()
    yield Runs(cwd / "before", cwd / "after", second)


def compare_command(*args: str, cwd: Path) -> Finished:
    return run_command(checker("compare", *args), cwd, timeout=QUICK_TIMEOUT)


def test_compare_a_regression_exits_1(runs):
    finished = compare_command(
        str(runs.before / "conformance.json"), str(runs.after), cwd=runs.before.parent
    )
    assert finished.status == 1, finished.describe()
    assert f"regression: {FAULT_ID} passed -> failed" in finished.stdout
    assert "note: the two runs differ in target" in finished.stdout
    assert finished.stdout.splitlines()[-1].startswith("petstore-conformance compare: 1 regression")


def test_compare_the_other_way_is_a_fix_and_exits_0(runs):
    finished = compare_command(str(runs.after), str(runs.before), cwd=runs.before.parent)
    assert finished.status == 0, finished.describe()
    assert f"fix: {FAULT_ID} failed -> passed" in finished.stdout
    assert "regression" not in finished.stdout.replace("0 regression", "")


@pytest.mark.parametrize("args", [["only-one"], ["a", "b", "c"], ["missing-1", "missing-2"]])
def test_compare_bad_input_exits_2_with_one_line(runs, args):
    finished = compare_command(*args, cwd=runs.before.parent)
    assert finished.status == 2, finished.describe()
    assert "Traceback" not in finished.output
    [line] = finished.stderr.strip().splitlines()
    assert line.startswith("petstore-conformance: ")


def test_previous_puts_the_comparison_into_the_statement_and_the_console(runs):
    finished = runs.after_run
    assert finished.status == 1, finished.describe()  # from the failure, not the comparison
    comparison = finished.statement("after")["comparison"]
    assert comparison["regressions"] == [{"id": FAULT_ID, "before": "passed", "after": "failed"}]
    assert comparison["previous"]["verdict"] == "conformant"
    assert comparison["previous"]["run_id"] == load_statement(runs.before)["run_id"]
    assert f"regression: {FAULT_ID} passed -> failed" in finished.stdout
    report = (runs.after / "report.html").read_text(encoding="utf-8")
    assert "Since the previous run" in report and "psc-comparison" in report


def test_an_unreadable_previous_is_exit_2_before_any_request(runs, tmp_path):
    finished = run_command(
        checker(
            "--base-url", "http://127.0.0.1:9/v1", "--api-key", "key-main-k", "--previous", "nope"
        ),
        tmp_path,
        timeout=QUICK_TIMEOUT,
    )
    assert finished.status == 2, finished.describe()
    [line] = finished.stderr.strip().splitlines()
    assert "cannot read nope" in line
    assert list(tmp_path.iterdir()) == []
