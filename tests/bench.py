"""Measured figures of the checker: what a run costs in seconds, CPU and requests, on the demo's
short minute and on a real one, and how fast its exhaustion burst sends. Prints tables; asserts
nothing (timings depend on the machine, and this one is shared).

    python -m tests.bench [--rounds N] [--skip-real-minute] [--burst-requests N]

- Demo runs: `petstore-conformance` against `petstore-reference --minute-seconds 3`, full and
  smoke profiles, N rounds each. The checker's CPU is `RUSAGE_CHILDREN` around each run.
- The real minute: one full run on the free plan against the reference with its real 60-second
  minute: wall time, requests per key, seconds each key waited on windows. The yardstick is the
  minute itself, the floor of any run that must see a quota spent and its reset.
- The burst: one wave of `conformance.burst.spender` on a key of a plan too large to refuse
  anything, at 0 ms and at 100 ms from the reference (`tests/shared/tcp_proxy.py`), as requests per
  second, against the yardstick of the same requests sent one after the other (what the exhaustion
  did before it was concurrent), measured in the same run.
- The burst against `wrk -c32` (Debian's, installed if missing): waves of the burst and runs of
  wrk taking turns against the same reference, each pair's requests per second as a ratio (the
  target is 0.8x), and the checker's CPU per request of the burst.
- The burst from one process and from as many as the CPUs (`conformance/burst/processes.py`),
  and wrk, taking turns against nginx answering every request itself (Debian's, as the tests
  start it): a target one Python sender cannot keep busy, unlike the reference.

The reference's own throughput against a bare Starlette app is `tests/bench_reference.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

from conformance.burst.reach import usable_cpus
from conformance.burst.spender import plan_wave, round_trip, send_wave, senders_cpu
from conformance.burst.waves import Wave
from conformance.httpclient.client import ConformanceClient
from conformance.spec import catalogue
from tests.shared.nginx import NginxDidNotStart, running_nginx
from tests.shared.servers import reference_args, start_reference
from tests.shared.tcp_proxy import TcpProxy

PROFILES = ("full", "smoke")
# The demo's short minute: long enough for whole-second Reset values, short enough to wait out.
MINUTE_SECONDS = 3
CHECKER_TIMEOUT = 420
ONE_WAY = 0.05  # a server 100 ms away
SEQUENTIAL_SAMPLE = 200  # requests of the one-after-the-other yardstick at 0 ms
DISTANT_SEQUENTIAL_SAMPLE = 20  # and at 100 ms, where each costs a round trip
WRK_CONNECTIONS = 32
WRK_SECONDS = 2  # short turns: a shared machine's load changes within seconds


@dataclass
class CheckerRun:
    profile: str
    exit_status: int
    wall: float
    cpu: float
    verdict: str
    requests: int
    per_key: dict[str, int] = field(default_factory=dict)
    waited: dict[str, float] = field(default_factory=dict)
    not_passed: list[str] = field(default_factory=list)


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
    requests = statement["requests"]
    testable = {r.id for r in catalogue().values() if not r.not_testable}
    not_passed = [
        entry["id"]
        for entry in statement.get("requirements", [])
        if entry["level"] == "MUST" and entry["outcome"] != "passed" and entry["id"] in testable
    ]
    return CheckerRun(
        profile,
        done.returncode,
        wall,
        cpu,
        statement["verdict"],
        requests["total"],
        requests["per_key"],
        requests.get("seconds_waited_per_key", {}),
        not_passed,
    )


def spread(values: list[float]) -> str:
    return f"{min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}"


def per_key_median(runs: list[CheckerRun]) -> str:
    labels = sorted({label for run in runs for label in run.per_key})
    return ", ".join(
        f"{label} {statistics.median(run.per_key.get(label, 0) for run in runs):g}"
        for label in labels
    )


def demo_runs(rounds: int) -> list[CheckerRun]:
    free_keys = [(new_key(), new_key()) for _ in range(rounds * len(PROFILES))]
    specs = [f"{key}:free" for pair in free_keys for key in pair]
    reference = start_reference(reference_args(specs, minute_seconds=MINUTE_SECONDS))
    runs: list[CheckerRun] = []
    try:
        print(f"reference at {reference.base_url} (minute = {MINUTE_SECONDS} s)")
        with tempfile.TemporaryDirectory(prefix="psc-bench-") as folder:
            pairs = iter(free_keys)
            for round_number in range(rounds):
                for profile in PROFILES:
                    report_dir = Path(folder) / f"{profile}-{round_number}"
                    run = run_checker(reference.base_url, profile, next(pairs), report_dir)
                    runs.append(run)
                    print(
                        f"  {profile:<5} run {round_number + 1}: {run.wall:6.2f} s wall, "
                        f"{run.cpu:5.2f} s CPU, {run.requests} requests, "
                        f"{run.verdict} (exit {run.exit_status})"
                    )
    finally:
        reference.stop()
    return runs


def print_demo_table(runs: list[CheckerRun], rounds: int) -> None:
    print()
    print(f"petstore-conformance against petstore-reference, free plan, {MINUTE_SECONDS}-second")
    print(f"minute, {rounds} runs per profile")
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


def real_minute_run() -> CheckerRun:
    """One full run on the free plan against the reference's real 60-second minute."""
    keys = (new_key(), new_key())
    reference = start_reference(reference_args([f"{key}:free" for key in keys], minute_seconds=60))
    try:
        with tempfile.TemporaryDirectory(prefix="psc-bench-") as folder:
            return run_checker(reference.base_url, "full", keys, Path(folder))
    finally:
        reference.stop()


def print_real_minute(run: CheckerRun) -> None:
    print()
    print("a full run on the free plan against the reference's real 60-second minute")
    print(
        f"  wall {run.wall:.1f} s ({run.wall / 60:.2f} x the minute), CPU {run.cpu:.1f} s, "
        f"{run.verdict} (exit {run.exit_status})"
    )
    per_key = ", ".join(f"{label} {count}" for label, count in sorted(run.per_key.items()))
    waited = ", ".join(f"{label} {seconds:.1f} s" for label, seconds in sorted(run.waited.items()))
    print(f"  requests {run.requests} ({per_key})")
    print(f"  waiting on windows and back-off, per key: {waited or 'none'}")
    not_passed = ", ".join(run.not_passed) or "none"
    print(f"  testable MUST requirements not passed: {not_passed}")


def burst_rate(base_url: str, key: str, requests: int) -> tuple[float, float, Wave]:
    """Requests per second of one wave of the burst (sized as the exhaustion sizes it, for a
    fresh real minute) and of the same kind of request sent one after the other."""
    with ConformanceClient(base_url, {"main": key}) as client:
        client.get("/categories")  # connect; the round trip the wave is sized from
        near = client.exchanges[0].elapsed < 0.02
        sample = SEQUENTIAL_SAMPLE if near else DISTANT_SEQUENTIAL_SAMPLE
        started = time.perf_counter()
        for _ in range(sample):
            client.get("/categories", pace=False)
        sequential = sample / (time.perf_counter() - started)
        trip = round_trip(client.exchanges, "main")
        wave = plan_wave(requests, trip, 59.0) or Wave(requests, 64)
        started = time.perf_counter()
        sent = send_wave(client, "main", wave)
        concurrent = len(sent) / (time.perf_counter() - started)
    return concurrent, sequential, wave


def print_burst(label: str, concurrent: float, sequential: float, wave: Wave) -> None:
    ratio = concurrent / sequential
    print(f"{label:<10} {concurrent:12.1f} {sequential:14.1f} {ratio:7.1f}  {wave.connections}")


def print_bursts(requests: int) -> None:
    key = new_key()
    reference = start_reference(
        reference_args([f"{key}:enterprise:1000000:100000000"], minute_seconds=60)
    )
    print()
    print(f"the exhaustion burst: one wave of {requests} requests, sized for a fresh real minute")
    print(f"{'distance':<10} {'burst req/s':>12} {'one at a time':>14} {'ratio':>7}  connections")
    try:
        url = httpx.URL(reference.base_url)
        print_burst("0 ms", *burst_rate(reference.base_url, key, requests))
        with TcpProxy((url.host, url.port), delay=ONE_WAY) as proxy:
            print_burst("100 ms", *burst_rate(proxy.url(path=url.path), key, requests))
    finally:
        reference.stop()


def wrk_program() -> str | None:
    """Debian's wrk, installed if missing (the bench runs where apt-get may)."""
    if shutil.which("wrk") is None:
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "wrk"], check=False)
    return shutil.which("wrk")


def wrk_rate(wrk: str, url: str, key: str) -> float:
    """Requests per second of `wrk -c32` on the burst's own request."""
    command = [wrk, f"-c{WRK_CONNECTIONS}", f"-d{WRK_SECONDS}s"]
    command += ["-H", f"Authorization: Bearer {key}", url]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    if found is None:
        raise RuntimeError(f"wrk printed no rate: {done.stdout[-300:]}")
    return float(found.group(1))


def burst_wave_rate(
    base_url: str, key: str, requests: int, processes: int = 1
) -> tuple[float, float]:
    """Requests per second of one wave of the burst on WRK_CONNECTIONS connections, from its
    first request sent to its last answer, and the senders' CPU per request (this process's,
    every thread's; from several processes, theirs)."""
    with ConformanceClient(base_url, {"main": key}) as client:
        client.get("/categories")
        own, children = senders_cpu()
        sent = send_wave(client, "main", Wave(requests, WRK_CONNECTIONS, processes))
        own_after, children_after = senders_cpu()
    cpu = children_after - children if processes > 1 else own_after - own
    span = max(e.started_at + e.elapsed for e in sent) - min(e.started_at for e in sent)
    return len(sent) / span, cpu / len(sent)


def print_burst_against_wrk(requests: int, rounds: int) -> list[float]:
    """The burst and wrk taking turns against one reference; returns each turn's ratio."""
    wrk = wrk_program()
    if wrk is None:
        print("\nwrk is not installed and could not be: the burst's ratio to wrk is not measured")
        return []
    key = new_key()
    reference = start_reference(
        reference_args([f"{key}:enterprise:100000000:1000000000"], minute_seconds=60)
    )
    url = reference.base_url.rstrip("/") + "/categories"
    print()
    print(
        f"the burst ({requests} requests a wave) against wrk -c{WRK_CONNECTIONS} "
        f"({WRK_SECONDS} s a run), taking turns against the same reference"
    )
    print(f"{'turn':<5} {'burst req/s':>12} {'wrk req/s':>10} {'ratio':>6}  checker CPU/request")
    ratios: list[float] = []
    try:
        for turn in range(1, rounds + 1):
            burst, cpu = burst_wave_rate(reference.base_url, key, requests)
            other = wrk_rate(wrk, url, key)
            ratios.append(burst / other)
            print(f"{turn:<5} {burst:12.0f} {other:10.0f} {ratios[-1]:5.2f}x  {cpu * 1e3:.2f} ms")
    finally:
        reference.stop()
    print(
        f"ratio min/median/max {min(ratios):.2f}/{statistics.median(ratios):.2f}/"
        f"{max(ratios):.2f}x (target 0.8x)"
    )
    return ratios


# A target faster than one sending process: nginx answering every request itself, with the
# headers of a plan too large to refuse anything (no access log: nginx's own cost, not disk's).
FAST_TARGET = """
server {{
    listen 127.0.0.1:{0};
    access_log off;
    location / {{
        default_type application/json;
        add_header X-RateLimit-Limit 100000000 always;
        add_header X-RateLimit-Remaining 99999999 always;
        add_header X-RateLimit-Reset 4102444800 always;
        return 200 '[]';
    }}
}}
"""


def print_burst_from_processes(requests: int, rounds: int) -> None:
    """The burst from one process and from as many as the CPUs, and wrk, taking turns against
    nginx (a target one Python sender cannot keep busy), as requests a second."""
    processes = usable_cpus()
    wrk = wrk_program()
    print()
    if processes < 2:
        print("one CPU: the burst from several processes is not measured")
        return
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            running_nginx(Path(folder), lambda ports: FAST_TARGET.format(*ports)) as nginx,
        ):
            base_url = f"http://127.0.0.1:{nginx.ports[0]}/v1"
            print(
                f"the burst ({requests} requests a wave, {WRK_CONNECTIONS} connections) from 1 "
                f"and from {processes} processes, against nginx answering by itself"
            )
            print(
                f"{'turn':<5} {'1 process':>10} {f'{processes} processes':>12} {'ratio':>6}  "
                f"{'wrk req/s':>10}  CPU/request (1, {processes})"
            )
            ratios = []
            for turn in range(1, rounds + 1):
                one, one_cpu = burst_wave_rate(base_url, new_key(), requests)
                many, many_cpu = burst_wave_rate(base_url, new_key(), requests, processes)
                other = wrk_rate(wrk, base_url + "/categories", new_key()) if wrk else float("nan")
                ratios.append(many / one)
                print(
                    f"{turn:<5} {one:10.0f} {many:12.0f} {ratios[-1]:5.2f}x  {other:10.0f}  "
                    f"{one_cpu * 1e3:.3f} ms, {many_cpu * 1e3:.3f} ms"
                )
    except NginxDidNotStart as error:
        print(f"nginx did not start ({error}): the burst from several processes is not measured")
        return
    print(f"{processes} processes against 1: median {statistics.median(ratios):.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="demo runs per profile")
    parser.add_argument("--skip-real-minute", action="store_true")
    parser.add_argument("--burst-requests", type=int, default=2000)
    parser.add_argument("--wrk-rounds", type=int, default=6, help="turns of the burst and wrk")
    parser.add_argument("--wrk-only", action="store_true", help="only the burst against wrk")
    arguments = parser.parse_args(argv)

    bench_started = time.perf_counter()
    if arguments.wrk_only:
        print_burst_against_wrk(arguments.burst_requests, arguments.wrk_rounds)
        print_burst_from_processes(arguments.burst_requests * 5, arguments.wrk_rounds)
        return 0
    runs = demo_runs(arguments.rounds)
    print_demo_table(runs, arguments.rounds)
    if not arguments.skip_real_minute:
        print_real_minute(real_minute_run())
    print_bursts(arguments.burst_requests)
    print_burst_against_wrk(arguments.burst_requests, arguments.wrk_rounds)
    print_burst_from_processes(arguments.burst_requests * 5, arguments.wrk_rounds)
    print(f"\nbench total: {time.perf_counter() - bench_started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
