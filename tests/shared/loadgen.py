"""A keep-alive HTTP/1.1 load generator, for where `wrk` is not installed.

    python -m tests.shared.loadgen URL [--connections 32] [--seconds 5] [--header "Name: value"]

Each connection sends one GET, reads the whole answer, and sends the next, until the time is
up; it prints one JSON line: requests, seconds, requests per second, statuses, latency
percentiles in ms and errors. It runs in a process of its own, so that it does not share an
interpreter with the server it measures; on one core it saturates near 10,000 requests/s,
which caps what it can show of a faster server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0


def request_bytes(url: str, headers: list[str]) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise SystemExit(f"only http:// URLs: {url!r}")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", *headers, "", ""]
    return parts.hostname, parts.port or 80, "\r\n".join(lines).encode("latin-1")


async def one_connection(host: str, port: int, request: bytes, until: float, tally: Tally) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        tally.errors += 1
        return
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status, length = parse_head(head)
            await reader.readexactly(length)
            tally.latencies.append(time.perf_counter() - started)
            tally.statuses[status] = tally.statuses.get(status, 0) + 1
    except (OSError, asyncio.IncompleteReadError, ValueError):
        tally.errors += 1
    finally:
        writer.close()


def parse_head(head: bytes) -> tuple[int, int]:
    """(status, Content-Length) of a response head; ValueError for anything else."""
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return status, int(value.strip())
    raise ValueError("a response without Content-Length")


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


async def run(url: str, connections: int, seconds: float, headers: list[str]) -> dict:
    host, port, request = request_bytes(url, headers)
    tally = Tally()
    started = time.perf_counter()
    until = started + seconds
    await asyncio.gather(
        *(one_connection(host, port, request, until, tally) for _ in range(connections))
    )
    elapsed = time.perf_counter() - started
    latencies = sorted(tally.latencies)
    return {
        "requests": len(latencies),
        "seconds": elapsed,
        "requests_per_second": len(latencies) / elapsed,
        "statuses": {str(status): n for status, n in sorted(tally.statuses.items())},
        "latency_ms": {
            "p50": percentile(latencies, 0.50) * 1000,
            "p99": percentile(latencies, 0.99) * 1000,
            "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
        },
        "errors": tally.errors,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.shared.loadgen", description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    options = parser.parse_args(argv)
    result = asyncio.run(run(options.url, options.connections, options.seconds, options.header))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
