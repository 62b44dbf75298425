"""The catalogue's coverage is true: every test it names exists in the suite and, in a run
against the reference, really checked that requirement; every requirement is either checked
or carries a reason it cannot be."""

from __future__ import annotations

import importlib
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from conformance.spec import catalogue
from tests.shared.servers import reference_args, start_reference

ENTRIES = list(catalogue().values())
SEED = 6


def suite_function_exists(test: str) -> bool:
    module_file, function = test.split("::")
    module = importlib.import_module(f"conformance.suite.{module_file.removesuffix('.py')}")
    return callable(getattr(module, function, None))


def checked_by(server, keys: tuple[str, str], report_dir: Path) -> dict[str, set[str]]:
    """Requirement id -> the tests (without parameters) that checked it against the reference."""
    environment = {
        **os.environ,
        "PETSTORE_BASE_URL": server.base_url,
        "PETSTORE_API_KEY": keys[0],
        "PETSTORE_SPARE_API_KEY": keys[1],
        "PETSTORE_PLAN": "free",
    }
    process = subprocess.run(
        # The day profile: everything the full one checks, and the day's requirements. Seed 6:
        # its negative draws hold no `name` of the wrong type, which only the named negative
        # bodies check (test_generated.NAMED_NEGATIVES); every run of this test is the same.
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "--report-dir",
            str(report_dir),
            "--profile",
            "day",
            "--seed",
            str(SEED),
        ],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-2000:]
    statement = json.loads((report_dir / "conformance.json").read_text())
    return {
        entry["id"]: {re.sub(r"\[.*$", "", test) for test in entry["tests"]}
        for entry in statement["requirements"]
    }


def problems_of(entry, checked: dict[str, set[str]]) -> list[str]:
    problems = []
    for test in entry.tests:
        if not suite_function_exists(test):
            problems.append(f"{entry.id} names {test}, which is not in the suite")
        elif test not in checked[entry.id]:
            problems.append(f"{test} did not check {entry.id} in a day run")
    if entry.not_testable and checked[entry.id]:
        problems.append(f"{entry.id} says it cannot be tested, yet was checked")
    if not entry.not_testable and not checked[entry.id]:
        problems.append(f"{entry.id} was not checked by any test of a full run")
    return problems


# One test for the whole catalogue, so that its run (a day profile, over a minute) is made once
# however the tests are dealt out to workers: as a test for each entry sharing a module's
# fixture, work stealing split them across workers and the run was made six times.
def test_every_catalogue_entry_is_verified_as_it_claims(tmp_path):
    keys = (f"cov-main-{secrets.token_hex(8)}", f"cov-spare-{secrets.token_hex(8)}")
    server = start_reference(reference_args([f"{key}:free" for key in keys], minute_seconds=3))
    try:
        checked = checked_by(server, keys, tmp_path)
    finally:
        server.stop()
    assert [problem for entry in ENTRIES for problem in problems_of(entry, checked)] == []


# --- Clients: every client requirement names checks of the judging, and a run of a careful
# client through every scenario really made them (and was conformant). One test, so that the
# run is made once however the tests are dealt out to workers.


def test_client_requirements_are_verified_as_they_claim(tmp_path):
    from conformance.client_mode import rules
    from tests.client_mode import inline_clients

    command = inline_clients.command(tmp_path, inline_clients.CAREFUL, "careful")
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "client",
            "--command",
            command,
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-2000:]
    statement = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    assert statement["role"] == "client"
    checked_by = {  # scenario::check_x -> rules.py::check_x
        entry["id"]: {"rules.py::" + test.split("::", 1)[1] for test in entry["tests"]}
        for entry in statement["requirements"]
    }
    checks = {check.__name__ for check in rules.CHECKS}
    problems = []
    for entry in catalogue("client").values():
        if not entry.tests or entry.not_testable:
            problems.append(f"{entry.id} names no check")
        for test in entry.tests:
            if test.split("::", 1)[1] not in checks:
                problems.append(f"{entry.id} names {test}, which is no check")
            elif test not in checked_by[entry.id]:
                problems.append(f"{test} did not judge {entry.id} in a run")
    assert problems == []
