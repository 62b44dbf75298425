"""`tox -e test`: the project's tests in three phases, each run even when an earlier one failed.

tox stops an environment at its first failing command, so a failure of the parallel phase used
to hide whatever the solo tests would have said. Here every phase runs and prints its own
output; then one line per phase with pytest's closing line (what a CI log reader looks at), and
the exit status is non-zero when any phase failed.

    python -m tests.phases [PYTEST ARGS...]   # the arguments go to every phase
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from typing import IO

# Eight workers on two cores: the checker runs spend part of their time waiting out rate-limit
# windows, and the day's long runs (tests/conftest.py deals them out first) mostly wait. Twelve
# kept the cores busier alone (the test command 22:10 against 24:25), but with a second whole
# run beside it correct servers got "no verdict" in a dozen tests: eight held there. Work
# stealing keeps the long ones from queueing behind each other. Then the tests marked solo,
# each needing a core for its bursts but mostly waiting: the client zoo's on two workers, the
# bursts' on two others, one at a time on each (tests/conftest.py groups them); last, alone,
# the ones that need both cores.
PARALLEL = "not solo and not big and not day_minute"
PHASES = (
    ("parallel", ["-n", "8", "--dist", "worksteal", "-m", PARALLEL]),
    ("solo", ["-n", "4", "--dist", "loadgroup", "-m", "solo and not machine"]),
    ("machine", ["-m", "machine"]),
)
# The day profile on the real minute: about 20 minutes a test, nearly all of it waiting for
# windows, so they run beside the three phases from the start (their output is printed after).
BESIDE = ("day on the real minute", ["-n", "2", "-m", "day_minute"])
TIMEOUT = ["--timeout", "900"]  # seconds a test may take (a marker may say more)
DURATIONS = ["--durations", "25"]  # the slowest tests of each phase, for whoever trims CI's time
NO_TESTS = 5  # pytest's exit status when nothing was selected


def command_of(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", *TIMEOUT, *DURATIONS, *arguments]


def run_phase(arguments: list[str]) -> tuple[int, str]:
    """Run pytest, its output passed through as it comes; its exit status and closing line
    (with the phase's wall time: pytest's own leaves out collection and the workers' start)."""
    began = time.monotonic()
    command = command_of(arguments)
    print("phase:", " ".join(command), flush=True)
    closing = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as pytest:
        for line in pytest.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            if line.strip():
                closing = line.decode(errors="replace").strip()
    return pytest.returncode, f"{closing} [{minutes(time.monotonic() - began)}]"


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def start_beside(arguments: list[str], log: IO[bytes]) -> subprocess.Popen:
    return subprocess.Popen(command_of(arguments), stdout=log, stderr=subprocess.STDOUT)


def end_beside(process: subprocess.Popen, log: IO[bytes]) -> tuple[int, str]:
    """Wait for the phase run beside the others; print its output; its status, closing line."""
    status = process.wait()
    log.seek(0)
    output = log.read()
    print(f"phase beside the others: {' '.join(map(str, process.args))}", flush=True)
    sys.stdout.buffer.write(output)
    lines = [line for line in output.decode(errors="replace").splitlines() if line.strip()]
    return status, lines[-1].strip() if lines else ""


def failed(status: int, narrowed: bool) -> bool:
    """A phase that selected nothing fails, unless the caller's own arguments narrowed it (one
    module's tests are all in one phase)."""
    return status != 0 and not (status == NO_TESTS and narrowed)


COUNTS = re.compile(r"(\d+) (passed|failed|errors?)")


def totals(closings: list[str]) -> str:
    """Every phase's tests added up, in the plain closing line CI reads."""
    counted = {"passed": 0, "failed": 0}
    for closing in closings:
        for number, word in COUNTS.findall(closing):
            counted["passed" if word == "passed" else "failed"] += int(number)
    return f"tests: {counted['passed']} passed, {counted['failed']} failed"


def main(extra: list[str]) -> int:
    began = time.monotonic()
    with tempfile.TemporaryFile() as log:
        beside = start_beside([*BESIDE[1], *extra], log)
        results = [(name, *run_phase([*arguments, *extra])) for name, arguments in PHASES]
        results.append((BESIDE[0], *end_beside(beside, log)))
    failures = [name for name, status, _ in results if failed(status, bool(extra))]
    print(f"\nphases failed: {', '.join(failures)}" if failures else "\nphases: all passed")
    for name, status, closing in results:  # pytest's closing lines stay the last of the log
        print(f"{name} (exit {status}): {closing}")
    print(totals([closing for _, _, closing in results]), f"[{minutes(time.monotonic() - began)}]")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
