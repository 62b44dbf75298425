"""A plan of 60,000 requests a minute on a real minute (issue 17): the checker lands the quota
and one more inside one window, judges the reference conformant, and a double that never
enforces, or that serves one request too many, not conformant on LIM-429-WHEN-EXCEEDED; its
memory stays under 300 MB. Wall time and peak memory are printed (`-s`), not asserted.

Each run needs a core of its own for two minutes, and the test run is near its 25 minutes: they
are marked `big` and run with `tox -e big` (one at a time), not in the test run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.shared.checker_runs import new_keys, running_double
from tests.shared.servers import reference_args, start_reference

PER_MINUTE = 60_000
PER_DAY = 10_000_000
MEMORY_CEILING_MB = 300
TIMEOUT = 600


def certify(base_url: str, keys: tuple[str, str], folder: Path) -> tuple[int, dict, str, float]:
    """The command as a user runs it; its exit status, statement, output and peak memory (MB),
    read from the process's own resource usage."""
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PETSTORE_", "PYTEST_"))},
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": keys[0],
        "PETSTORE_SPARE_API_KEY": keys[1],
        "PETSTORE_PLAN": "enterprise",
        "PETSTORE_REQUESTS_PER_MINUTE": str(PER_MINUTE),
        "PETSTORE_REQUESTS_PER_DAY": str(PER_DAY),
    }
    folder.mkdir(parents=True)
    output = folder / "console.txt"
    started = time.perf_counter()
    with output.open("w") as console:
        process = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "--report-dir", str(folder / "reports")],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + TIMEOUT
        while (waited := os.wait4(process.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"no verdict within {TIMEOUT} s: {output.read_text()[-3000:]}")
            time.sleep(0.5)
    _, status, usage = waited
    peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    statement = json.loads((folder / "reports" / "conformance.json").read_text())
    print(
        f"\n{folder.name}: exit {os.waitstatus_to_exitcode(status)}, "
        f"{time.perf_counter() - started:.0f} s, peak memory {peak_mb:.0f} MB, "
        f"{statement['requests']['total']:,} requests"
    )
    return os.waitstatus_to_exitcode(status), statement, output.read_text(), peak_mb


def specs(keys: tuple[str, str]) -> list[str]:
    return [f"{key}:enterprise:{PER_MINUTE}:{PER_DAY}" for key in keys]


@pytest.mark.slow
@pytest.mark.big
def test_the_reference_at_60000_a_minute_is_conformant(tmp_path: Path) -> None:
    keys = new_keys()
    reference = start_reference(reference_args(specs(keys), minute_seconds=60))
    try:
        status, statement, output, peak_mb = certify(reference.base_url, keys, tmp_path / "ref")
    finally:
        reference.stop()
    assert status == 0, output[-4000:]
    assert statement["failed_requirements"] == []
    assert statement["requests"]["per_key"]["spare"] > PER_MINUTE
    assert peak_mb < MEMORY_CEILING_MB, output[-2000:]


@pytest.mark.slow
@pytest.mark.big
@pytest.mark.parametrize("fault", ["limits-not-enforced", "limit-plus-one"])
def test_a_fault_of_enforcement_at_60000_a_minute_is_caught(fault: str, tmp_path: Path) -> None:
    keys = new_keys()
    with running_double(specs(keys), (fault,), (), 60.0, None) as base_url:
        status, statement, output, peak_mb = certify(base_url, keys, tmp_path / fault)
    assert status == 1, output[-4000:]
    assert statement["failed_requirements"] == ["LIM-429-WHEN-EXCEEDED"], output[-4000:]
    assert peak_mb < MEMORY_CEILING_MB, output[-2000:]
