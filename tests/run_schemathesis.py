"""Run schemathesis (`st run --checks all`) against a freshly started reference.

    python -m tests.run_schemathesis [--max-examples N] [--seed N] [--max-time SECONDS]

`--max-time` bounds the wall time (schemathesis' own --max-time would keep fuzzing until
it is spent, so it is not passed on).

Starts `petstore-reference` with a business key, runs the schemathesis CLI on
spec/openapi.yaml, and exits with schemathesis' status (0: no finding).
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from conformance.spec import openapi_path
from tests.shared.servers import reference_args, start_reference


def schemathesis_command(base_url: str, key: str, *, max_examples: int, seed: int) -> list[str]:
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or shutil.which("st")
    if st is None:
        raise RuntimeError("the schemathesis command `st` is not installed")
    return [
        st,
        "run",
        str(openapi_path()),
        "--url",
        base_url,
        "--checks",
        "all",
        "-H",
        f"Authorization: Bearer {key}",
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--no-color",
        # no example database in the working tree; the seed alone decides what is generated
        "--generation-database",
        "none",
        # the reference's demo pets are ids 1-3; a 404 for the others is expected
        "--warnings",
        "off",
    ]


def run(max_examples: int = 30, seed: int = 1, max_time: int = 120) -> subprocess.CompletedProcess:
    key = "st-" + secrets.token_hex(8)
    server = start_reference(reference_args([f"{key}:business"]))
    try:
        command = schemathesis_command(server.base_url, key, max_examples=max_examples, seed=seed)
        # schemathesis keeps a cache folder in its working directory: not in the checkout
        with tempfile.TemporaryDirectory(prefix="petstore-st-") as workdir:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=max_time,
                check=False,
                cwd=workdir,
            )
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.run_schemathesis")
    parser.add_argument("--max-examples", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-time", type=int, default=120, help="kill schemathesis after this")
    options = parser.parse_args(argv)
    result = run(options.max_examples, options.seed, options.max_time)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
