"""Measured figures of `petstore-conformance history`: seconds and peak memory over 1, 30 and
365 nights. Prints a table; asserts nothing (the machine is shared).

    python -m tests.bench_history

The nights are real statements: one full run of the checker against the bundled reference (the
demo) and one against the double with a fault (its failures carry their evidence), copied night
by night with that night's time, duration, requests and memory, the failing one standing on
every third night. Each measurement is `petstore-conformance history` in a process of its own;
its peak is that process's `ru_maxrss`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.shared.checker_runs import run_checker

COUNTS = (1, 30, 365)
MEASURE = (
    "import resource, sys, time\n"
    "from conformance import cli\n"
    "start = time.perf_counter()\n"
    "status = cli.main(['history', sys.argv[1], '--out', sys.argv[2]])\n"
    "seconds = time.perf_counter() - start\n"
    "print(status, round(seconds, 2), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def real_statements(folder: Path) -> tuple[dict, dict]:
    demo = folder / "demo"
    subprocess.run(
        [sys.executable, "-m", "conformance.cli", "--report-dir", str(demo)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    passing = json.loads((demo / "conformance.json").read_text(encoding="utf-8"))
    failing = run_checker(folder / "failing", ["no-www-authenticate"]).statement
    return passing, failing


def write_nights(folder: Path, count: int, passing: dict, failing: dict) -> Path:
    nights = folder / f"nights-{count}"
    for night in range(count):
        statement = dict(failing if night % 3 == 0 else passing)
        day = time.gmtime(1_700_000_000 + night * 86_400)
        statement["time"] = time.strftime("%Y-%m-%dT03:17:00Z", day)
        statement["finished"] = time.strftime(f"%Y-%m-%dT03:{18 + night % 30:02d}:00Z", day)
        statement["run_id"] = f"night-{night:03d}"
        statement["peak_memory_bytes"] = (80 + night % 11) * 2**20
        (nights / f"night-{night:03d}").mkdir(parents=True)
        text = json.dumps(statement, indent=2)
        (nights / f"night-{night:03d}" / "conformance.json").write_text(text, encoding="utf-8")
    return nights


def measure(nights: Path, out: Path) -> tuple[int, float, float, float]:
    """Exit status, the command's seconds, the whole process's (with its imports), peak MiB."""
    start = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-c", MEASURE, str(nights), str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    whole = time.perf_counter() - start
    status, seconds, peak_kib = process.stdout.split()[-3:]
    return int(status), float(seconds), whole, int(peak_kib) / 1024


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-history-") as folder:
        root = Path(folder)
        passing, failing = real_statements(root)
        sizes = [len(json.dumps(s, indent=2)) // 1024 for s in (passing, failing)]
        print(f"statements: passing {sizes[0]} KiB, failing {sizes[1]} KiB (each night one)")
        print(
            f"{'nights':>7} {'exit':>5} {'seconds':>8} {'process':>8} {'peak MiB':>9} "
            f"{'page KiB':>9}"
        )
        for count in COUNTS:
            nights = write_nights(root, count, passing, failing)
            out = root / f"out-{count}"
            status, seconds, whole, peak = measure(nights, out)
            page = (out / "history.html").stat().st_size // 1024
            print(f"{count:>7} {status:>5} {seconds:>8.2f} {whole:>8.2f} {peak:>9.1f} {page:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
