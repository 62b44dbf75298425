"""How fast the reference serves, against a bare Starlette app on the same server settings.

    python -m tests.bench_reference [--seconds 4] [--rounds 5] [--connections 32]
                                    [--generator auto|wrk|python] [--setups memory,redis,postgres]
                                    [--memory-requests 1000000]

Every figure is measured in this run, on this machine: the reference and the yardstick (a
Starlette app that answers `[]` with fixed rate-limit headers, on uvicorn's own httptools
protocol with the reference's socket and server settings, `tests/shared/bare_app.py`) are
measured in turn, round after round, each round starting with the other, so that a busy
neighbour slows both alike; the ratio of each round is reported with its median. Requests are
GET /v1/categories on keep-alive connections, with the key of an enterprise plan too large to
refuse anything. Set-ups:

- one worker, memory limits, categories in SQLite in memory (the default `petstore-reference`);
- two workers, limits in Redis, categories in a SQLite file;
- two workers, limits in Redis, categories in PostgreSQL (a database made for the run).

Then the reference of the first set-up is sent a million requests (`--memory-requests`), by wrk
in runs of at most 10 s until that many are answered (wrk stops on time, not on a count: its Lua
`thread:stop()` ends a thread, not the run), and its resident memory (VmRSS, with its worker
processes) is read before and after.

The load comes from `wrk` (one thread) when it is installed, else from `tests/shared/loadgen.py`, in
a process of its own either way; the output says which. Nothing is asserted: the figures
depend on the machine.

With two workers on two cores shared with the load generator, a keep-alive connection stays
with the worker that accepted it, and one worker often accepts most of them (uvicorn's workers
share one listening socket): those set-ups show what Redis and the databases cost per request,
for both servers alike, more than how far workers scale.

To see where a request's time goes, sample a reference under load with py-spy (from PyPI):
`py-spy record --gil -p PID -d 8 -f raw -o profile.txt` while `wrk -t1 -c32 -d10s -H
"Authorization: Bearer KEY" URL/v1/categories` runs (with workers: the busiest child's PID).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from conformance.reference.auth import key_digest
from tests.shared.servers import ReferenceProcess, reference_args, start_reference, start_server
from tests.shared.services import (
    POSTGRES_ADDRESS,
    REDIS_ADDRESS,
    REDIS_URL,
    forget_redis_keys,
    postgres_url,
    reachable,
    temporary_postgres_database,
)

PATH = "/categories"
WARM_UP_SECONDS = 1.0
MEMORY_RUN_SECONDS = 10  # one wrk run of the million's


@dataclass
class Sample:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    failures: int  # non-2xx answers and socket errors


@dataclass
class Setup:
    name: str
    workers: int
    reference_options: list[str]
    bare: ReferenceProcess | None = None
    reference: ReferenceProcess | None = None
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"bare": [], "reference": []})


# --- load generators ---------------------------------------------------------------------------

Generator = Callable[[str, str, int, float], Sample]


def wrk_generator(url: str, key: str, connections: int, seconds: float) -> Sample:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    command += ["-H", f"Authorization: Bearer {key}", url]
    output = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=seconds + 30
    ).stdout
    return parse_wrk(output)


def parse_wrk(output: str) -> Sample:
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.MULTILINE)
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\b", output, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\b", output, re.MULTILINE)
    if not (rate and p50 and p99):
        raise RuntimeError(f"cannot read wrk's output:\n{output}")
    failures = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    failed = int(failures.group(1)) if failures else 0
    failed += sum(int(n) for n in errors.groups()) if errors else 0
    return Sample(
        float(rate.group(1)), _milliseconds(*p50.groups()), _milliseconds(*p99.groups()), failed
    )


def _milliseconds(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def python_generator(url: str, key: str, connections: int, seconds: float) -> Sample:
    command = [sys.executable, "-m", "tests.shared.loadgen", url, "--connections", str(connections)]
    command += ["--seconds", f"{seconds:g}", "--header", f"Authorization: Bearer {key}"]
    output = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=seconds + 30
    ).stdout
    result = json.loads(output)
    served = sum(n for status, n in result["statuses"].items() if status.startswith("2"))
    failures = result["requests"] - served + result["errors"]
    latency = result["latency_ms"]
    return Sample(result["requests_per_second"], latency["p50"], latency["p99"], failures)


def pick_generator(choice: str) -> tuple[str, Generator]:
    wrk = shutil.which("wrk")
    if choice == "wrk" and not wrk:
        raise SystemExit("--generator wrk: wrk is not installed (Debian: apt-get install wrk)")
    if wrk and choice in ("auto", "wrk"):
        version = subprocess.run([wrk, "--version"], capture_output=True, text=True).stdout
        return f"wrk ({version.split(' [')[0].strip()}, one thread)", wrk_generator
    return (
        "tests/shared/loadgen.py (Python asyncio, its own process; wrk not used)",
        python_generator,
    )


# --- servers -----------------------------------------------------------------------------------


SETUP_NAMES = ("memory", "redis", "postgres")


def setups(names: list[str], folder: Path, postgres_database: str | None) -> list[Setup]:
    chosen = []
    if "memory" in names:
        chosen.append(Setup("1 worker, memory limits, SQLite in memory", 1, []))
    if not reachable(REDIS_ADDRESS):
        print("Redis is not reachable on {}:{}: two-worker set-ups left out".format(*REDIS_ADDRESS))
        return chosen
    redis = ["--workers", "2", "--rate-limit-storage", REDIS_URL]
    if "redis" in names:
        sqlite_file = str(folder / "bench.sqlite3")
        chosen.append(
            Setup("2 workers, Redis limits, SQLite file", 2, [*redis, "--database", sqlite_file])
        )
    if "postgres" in names and postgres_database:
        url = postgres_url(postgres_database)
        chosen.append(Setup("2 workers, Redis limits, PostgreSQL", 2, [*redis, "--database", url]))
    return chosen


def start(setup: Setup, key_spec: str) -> None:
    bare_command = [sys.executable, "-m", "tests.shared.bare_app", "--workers", str(setup.workers)]
    setup.bare = start_server(bare_command)
    setup.reference = start_reference(reference_args([key_spec], extra=setup.reference_options))


def stop(setup: Setup) -> None:
    for server in (setup.bare, setup.reference):
        if server is not None:
            server.stop()
            server.stderr_path.unlink(missing_ok=True)  # the access log: a line per request


@contextlib.contextmanager
def postgres_for_bench(wanted: bool) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    if not reachable(POSTGRES_ADDRESS):
        print("PostgreSQL is not reachable on {}:{}: its set-up left out".format(*POSTGRES_ADDRESS))
        yield None
        return
    with temporary_postgres_database("psc_bench") as name:
        yield name


# --- memory after many requests ----------------------------------------------------------------


def resident_kib(pid: int) -> int:
    """VmRSS of a process and its children (a supervisor's workers), in KiB."""
    total = 0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for process in [str(pid), *children]:
        status = Path(f"/proc/{process}/status").read_text()
        total += int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))
    return total


@dataclass
class MemoryRun:
    requests: int
    seconds: float
    failures: int
    before_kib: int
    after_kib: int


def memory_after(server: ReferenceProcess, key: str, connections: int, requests: int) -> MemoryRun:
    """Send `requests` (at least) with wrk, in runs of MEMORY_RUN_SECONDS; RSS before and after."""
    before = resident_kib(server.process.pid)
    sent = failures = 0
    started = time.perf_counter()
    while sent < requests:
        command = ["wrk", "-t1", f"-c{connections}", f"-d{MEMORY_RUN_SECONDS}s", "--latency"]
        command += ["-H", f"Authorization: Bearer {key}", server.base_url + PATH]
        output = subprocess.run(
            command, capture_output=True, text=True, check=True, timeout=MEMORY_RUN_SECONDS + 30
        ).stdout
        done = re.search(r"^\s+(\d+) requests in", output, re.MULTILINE)
        if done is None:
            raise RuntimeError(f"cannot read wrk's output:\n{output}")
        sent += int(done.group(1))
        failures += parse_wrk(output).failures
    seconds = time.perf_counter() - started
    return MemoryRun(sent, seconds, failures, before, resident_kib(server.process.pid))


def print_memory(setup: Setup, run: MemoryRun) -> None:
    print(
        f"memory, {setup.name}: {run.before_kib / 1024:.1f} MiB resident before, "
        f"{run.after_kib / 1024:.1f} MiB after {run.requests:,} requests in {run.seconds:.0f} s "
        f"({run.requests / run.seconds:,.0f}/s, {run.failures} failed; wrk, "
        f"{MEMORY_RUN_SECONDS} s runs until that many were answered)"
    )


# --- measuring and reporting -------------------------------------------------------------------


def measure(
    setups_: list[Setup], generator: Generator, key: str, options: argparse.Namespace
) -> None:
    for setup in setups_:
        for server in (setup.bare, setup.reference):
            assert server is not None
            generator(server.base_url + PATH, key, options.connections, WARM_UP_SECONDS)
    for round_number in range(options.rounds):
        for setup in setups_:
            # Alternate who goes first, so that neither always meets the machine fresher.
            order = ("bare", "reference") if round_number % 2 == 0 else ("reference", "bare")
            for role in order:
                server = setup.bare if role == "bare" else setup.reference
                assert server is not None
                sample = generator(
                    server.base_url + PATH, key, options.connections, options.seconds
                )
                setup.samples[role].append(sample)
            print(f"  round {round_number + 1}, {setup.name}: {describe_round(setup)}", flush=True)


def describe_round(setup: Setup) -> str:
    bare, reference = setup.samples["bare"][-1], setup.samples["reference"][-1]
    return (
        f"bare {bare.requests_per_second:,.0f}/s, reference {reference.requests_per_second:,.0f}/s "
        f"({reference.requests_per_second / bare.requests_per_second:.2f}x)"
    )


def median_of(samples: list[Sample], attribute: str) -> float:
    return statistics.median(getattr(sample, attribute) for sample in samples)


def print_report(setups_: list[Setup]) -> None:
    print()
    head = f"{'set-up':<42} {'server':<10} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}"
    print(head)
    print("-" * len(head))
    for setup in setups_:
        bare, reference = setup.samples["bare"], setup.samples["reference"]
        for label, samples, role in ((setup.name, bare, "bare"), ("", reference, "reference")):
            print(
                f"{label:<42} {role:<10} {median_of(samples, 'requests_per_second'):>9,.0f} "
                f"{median_of(samples, 'p50_ms'):>8.2f} {median_of(samples, 'p99_ms'):>8.2f} "
                f"{sum(sample.failures for sample in samples):>7}"
            )
        ratios = [
            r.requests_per_second / b.requests_per_second
            for b, r in zip(bare, reference, strict=True)
        ]
        p50 = median_of(reference, "p50_ms") / median_of(bare, "p50_ms")
        p99 = median_of(reference, "p99_ms") / median_of(bare, "p99_ms")
        rounds = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(
            f"{'':<42} {'ratio':<10} {statistics.median(ratios):>8.2f}x {p50:>7.2f}x {p99:>7.2f}x"
            f"   (reference / bare; throughput per round: {rounds})"
        )
    print()
    print(
        "ratio: throughput, the higher the better; latency, the lower the better (1.00x = as bare)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench_reference", description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=5, help="measurements per server")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections")
    parser.add_argument("--generator", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument(
        "--memory-requests",
        type=int,
        default=1_000_000,
        help="requests sent to the first set-up's reference before its memory is read again "
        "(wrk only); 0 leaves this out",
    )
    parser.add_argument(
        "--setups",
        default=",".join(SETUP_NAMES),
        help="which set-ups, comma-separated: memory (1 worker), redis (2 workers, SQLite "
        "file), postgres (2 workers, PostgreSQL); default all",
    )
    options = parser.parse_args(argv)
    names = [name.strip() for name in options.setups.split(",")]
    if not names or set(names) - set(SETUP_NAMES):
        parser.error(f"--setups takes some of {', '.join(SETUP_NAMES)}")

    generator_name, generator = pick_generator(options.generator)
    key = "bench-" + secrets.token_hex(16)
    key_spec = f"{key}:enterprise:1000000000:1000000000"
    started = time.perf_counter()
    print(f"load generator: {generator_name}; {options.connections} keep-alive connections")
    print(
        f"GET /v1{PATH}, {options.rounds} rounds of {options.seconds:g} s per server; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start"
    )
    with (
        tempfile.TemporaryDirectory(prefix="psc-bench-") as folder,
        postgres_for_bench("postgres" in names) as pg,
    ):
        chosen = setups(names, Path(folder), pg)
        try:
            for setup in chosen:
                start(setup, key_spec)
            measure(chosen, generator, key, options)
            print_report(chosen)
            if options.memory_requests > 0 and chosen and shutil.which("wrk"):
                first = chosen[0]
                assert first.reference is not None
                print_memory(
                    first,
                    memory_after(
                        first.reference, key, options.connections, options.memory_requests
                    ),
                )
        finally:
            for setup in chosen:
                stop(setup)
            if any(setup.workers > 1 for setup in chosen):
                forget_redis_keys(key_digest(key))  # this run's counters, nobody else's
    print(
        f"load average {os.getloadavg()[0]:.2f} at the end; "
        f"bench total {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
