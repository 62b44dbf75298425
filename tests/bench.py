"""Measured figures: what a checker run costs in seconds, CPU and requests, and how fast the
bundled reference answers. Prints a table; asserts nothing (timings depend on the machine).

    python -m tests.bench [--rounds N] [--gets N] [--minute-seconds S]

The reference runs as a `petstore-reference --port 0` subprocess, so the checker's CPU
(`RUSAGE_CHILDREN` deltas around each `petstore-conformance` run) is the checker's alone: the
reference is only reaped, and counted, after the last measurement. Every checker run gets two
fresh free-plan keys, so no run inherits a spent quota from the one before.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.servers import reference_args, start_reference

PROFILES = ("full", "smoke")
# The demo's short minute: long enough for whole-second Reset values, short enough to wait out.
MINUTE_SECONDS = 3
CHECKER_TIMEOUT = 180


@dataclass
class CheckerRun:
    profile: str
    exit_status: int
    wall: float
    cpu: float
    verdict: str
    requests: int
    per_key: dict[str, int] = field(default_factory=dict)


def new_key() -> str:
    # Hex, not urlsafe base64: a key starting with "-" would read as an option to --key.
    return "bench-" + secrets.token_hex(16)


def checker_command() -> list[str]:
    script = Path(sys.executable).with_name("petstore-conformance")
    if script.exists():
        return [str(script)]
    found = shutil.which("petstore-conformance")
    return [found] if found else [sys.executable, "-m", "conformance.cli"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_checker(base_url: str, profile: str, keys: tuple[str, str], report_dir: Path) -> CheckerRun:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PETSTORE_")}
    env.update(PETSTORE_API_KEY=keys[0], PETSTORE_SPARE_API_KEY=keys[1], PETSTORE_PLAN="free")
    command = [*checker_command(), "--base-url", base_url, "--profile", profile]
    command += ["--report-dir", str(report_dir)]
    cpu_before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=CHECKER_TIMEOUT,
    )
    wall = time.perf_counter() - started
    cpu = children_cpu() - cpu_before
    try:
        statement = json.loads((report_dir / "conformance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        print(f"  {profile}: no conformance.json (exit {done.returncode}): {done.stderr[-400:]}")
        statement = {"verdict": "no statement", "requests": {"total": 0, "per_key": {}}}
    return CheckerRun(
        profile,
        done.returncode,
        wall,
        cpu,
        statement["verdict"],
        statement["requests"]["total"],
        statement["requests"]["per_key"],
    )


def reference_throughput(base_url: str, key: str, count: int) -> tuple[float, dict[int, int], int]:
    """Requests per second for `count` sequential GET /categories on one connection, the
    statuses seen, and the size of the listing (it grows with every category the runs made)."""
    statuses: dict[int, int] = {}
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as client:
        size = len(client.get("/categories").content)  # connect and warm up, unmeasured
        started = time.perf_counter()
        for _ in range(count):
            status = client.get("/categories").status_code
            statuses[status] = statuses.get(status, 0) + 1
        elapsed = time.perf_counter() - started
    return count / elapsed, statuses, size


def spread(values: list[float]) -> str:
    return f"{min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}"


def per_key_median(runs: list[CheckerRun]) -> str:
    labels = sorted({label for run in runs for label in run.per_key})
    return ", ".join(
        f"{label} {statistics.median(run.per_key.get(label, 0) for run in runs):g}"
        for label in labels
    )


def print_table(runs: list[CheckerRun], rounds: int) -> None:
    print()
    print(f"petstore-conformance against petstore-reference, free plan, {rounds} runs per profile")
    head = (
        f"{'profile':<8} {'wall s min/med/max':>20}   {'CPU s min/med/max':>20}   "
        f"{'requests min/med/max':>21}   verdicts / exits        requests per key (median)"
    )
    print(head)
    print("-" * len(head))
    for profile in PROFILES:
        mine = [run for run in runs if run.profile == profile]
        if not mine:
            continue
        requests = [run.requests for run in mine]
        verdicts = ", ".join(sorted({f"{run.verdict}/{run.exit_status}" for run in mine}))
        print(
            f"{profile:<8} {spread([r.wall for r in mine]):>20}   "
            f"{spread([r.cpu for r in mine]):>20}   "
            f"{min(requests):>5} {statistics.median(requests):>6g} {max(requests):>6}   "
            f"{verdicts:<23} {per_key_median(mine)}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="checker runs per profile")
    parser.add_argument("--gets", type=int, default=500, help="sequential GETs for req/s")
    parser.add_argument("--minute-seconds", type=int, default=MINUTE_SECONDS)
    arguments = parser.parse_args(argv)

    free_keys = [(new_key(), new_key()) for _ in range(arguments.rounds * len(PROFILES))]
    throughput_key = new_key()
    specs = [f"{key}:free" for pair in free_keys for key in pair]
    specs.append(f"{throughput_key}:enterprise:1000000:100000000")

    bench_started = time.perf_counter()
    reference = start_reference(reference_args(specs, minute_seconds=arguments.minute_seconds))
    runs: list[CheckerRun] = []
    try:
        print(f"reference at {reference.base_url} (minute = {arguments.minute_seconds} s)")
        with tempfile.TemporaryDirectory(prefix="psc-bench-") as folder:
            pairs = iter(free_keys)
            for round_number in range(arguments.rounds):
                for profile in PROFILES:
                    report_dir = Path(folder) / f"{profile}-{round_number}"
                    run = run_checker(reference.base_url, profile, next(pairs), report_dir)
                    runs.append(run)
                    print(
                        f"  {profile:<5} run {round_number + 1}: {run.wall:6.2f} s wall, "
                        f"{run.cpu:5.2f} s CPU, {run.requests} requests, "
                        f"{run.verdict} (exit {run.exit_status})"
                    )
        rate, statuses, size = reference_throughput(
            reference.base_url, throughput_key, arguments.gets
        )
    finally:
        reference.stop()

    print_table(runs, arguments.rounds)
    print()
    shown = ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items()))
    print(
        f"reference: {rate:7.1f} requests/s for {arguments.gets} sequential GET /v1/categories "
        f"(httpx, one connection, {size} bytes each; statuses {shown})"
    )
    print(f"bench total: {time.perf_counter() - bench_started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
