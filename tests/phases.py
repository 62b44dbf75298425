"""`tox -e test`: the project's tests in three phases, each run even when an earlier one failed.

tox stops an environment at its first failing command, so a failure of the parallel phase used
to hide whatever the solo tests would have said. Here every phase runs and prints its own
output; then one line per phase with pytest's closing line (what a CI log reader looks at), and
the exit status is non-zero when any phase failed.

    python -m tests.phases [PYTEST ARGS...]   # the arguments go to every phase
"""

from __future__ import annotations

import subprocess
import sys

# Eight workers on two cores: the checker runs of test_faults_and_variants spend part of their
# time waiting out rate-limit windows. Work stealing keeps the long ones from queueing behind
# each other. Then the tests marked solo, each needing a core of its own: the client zoo's on
# one worker, the bursts' on the other, one at a time on each (tests/conftest.py groups them);
# last, alone, the one that needs both cores.
PHASES = (
    ("parallel", ["-n", "8", "--dist", "worksteal", "-m", "not solo and not big"]),
    ("solo", ["-n", "2", "--dist", "loadgroup", "-m", "solo and not machine"]),
    ("machine", ["-m", "machine"]),
)
TIMEOUT = ["--timeout", "900"]  # seconds a test may take
NO_TESTS = 5  # pytest's exit status when nothing was selected


def run_phase(arguments: list[str]) -> tuple[int, str]:
    """Run pytest, its output passed through as it comes; its exit status and closing line."""
    command = [sys.executable, "-m", "pytest", *TIMEOUT, *arguments]
    print("phase:", " ".join(command), flush=True)
    closing = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as pytest:
        for line in pytest.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            if line.strip():
                closing = line.decode(errors="replace").strip()
    return pytest.returncode, closing


def failed(status: int, narrowed: bool) -> bool:
    """A phase that selected nothing fails, unless the caller's own arguments narrowed it (one
    module's tests are all in one phase)."""
    return status != 0 and not (status == NO_TESTS and narrowed)


def main(extra: list[str]) -> int:
    results = [(name, *run_phase([*arguments, *extra])) for name, arguments in PHASES]
    failures = [name for name, status, _ in results if failed(status, bool(extra))]
    print(f"\nphases failed: {', '.join(failures)}" if failures else "\nphases: all passed")
    for name, status, closing in results:  # pytest's closing lines stay the last of the log
        print(f"{name} (exit {status}): {closing}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
