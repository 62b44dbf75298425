"""How fast `petstore-conformance register` gets through uploads, and in how much memory.

    python -m tests.bench_register [--packages 1000] [--small 100]

One real signed run (the double, conformant) is made once; a hundred variants of it, each
stating another vendor (ten, each with its own Ed25519 key) or implementation, are signed
again (tests/shared/packages.py), and copied to fill nine tenths of the uploads. The last tenth
is hostile: zip bombs (a gigabyte of zeros declared), flipped signatures, garbage, packages
edited after signing, packages signed with another vendor's key. `register` runs over
`--small` packages, then over `--packages`, each in a process of its own whose peak resident
memory is read from the kernel (wait4): memory that stays flat from the small set to the large
one is bounded memory. The yardstick is `verify` itself, in process, on one valid package: the
ratio says what the register costs per package beyond a verify.

Then history (`--history 1000`, `--new 100`): a register of that many distinct certificates
(each package signed again with a run id of its own), extended by that many new uploads, beside
the same new uploads registered into an empty folder: extending a long history costs about what
the new packages cost (the old ones are linked, not verified again), in flat memory. Nothing is
asserted: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.reports import verify
from tests.checker.test_command import checker, new_key, run_command
from tests.checker.test_register import openssl_key
from tests.shared import packages
from tests.shared.double import running_double

VENDORS = 10
VARIANTS = 100
HOSTILE_SHARE = 10  # one package in ten


def real_run(folder: Path, key: Path) -> Path:
    keys = (new_key("main"), new_key("spare"))
    with running_double([f"{k}:free" for k in keys]) as base_url:
        args = ["--base-url", base_url, "--api-key", keys[0], "--spare-api-key", keys[1]]
        args += ["--vendor", "Vendor 0", "--sign-key", str(key), "--report-dir", "reports"]
        finished = run_command(checker(*args), folder)
    assert finished.status == 0, finished.describe()
    return folder / "reports"


def pool(folder: Path) -> tuple[list[Path], list[Path], Path]:
    """(valid packages, hostile packages, keyring)."""
    vendor_keys = [openssl_key(folder, f"vendor{n}") for n in range(VENDORS)]
    reports = real_run(folder, vendor_keys[0][0])
    made = folder / "made"
    made.mkdir()
    valid = []
    for n in range(VARIANTS):
        vendor = n % VENDORS
        valid.append(
            packages.signed_variant(
                reports, made / f"v{n}.zip", vendor_keys[vendor][0], folder,
                vendor=f"Vendor {vendor}", implementation=f"Store {n // VENDORS}",
                run_id=f"run-{n}",
            )
        )  # fmt: skip
    bomb = packages.zip_bomb(made / "bomb.zip", gigabytes=1)
    hostile = [bomb]
    for n in range(VENDORS):
        hostile.append(packages.flipped_signature(valid[n], made / f"flipped{n}.zip"))
        hostile.append(packages.garbage(made / f"garbage{n}.zip", size=1000 * (n + 1), seed=n))
        hostile.append(
            packages.rewritten(valid[n], made / f"edited{n}.zip", "conformance.json",
                               lambda d: d.replace(b'"conformant"', b'"not conformant"', 1))
        )  # fmt: skip
        hostile.append(
            packages.signed_variant(
                reports, made / f"foreign{n}.zip", vendor_keys[(n + 1) % VENDORS][0], folder,
                vendor=f"Vendor {n}", implementation="forged",
            )
        )  # fmt: skip
    keyring = folder / "keyring.yaml"
    lines = ["vendors:"]
    for n, (_, public) in enumerate(vendor_keys):
        lines += [f"  Vendor {n}:", f"    keys: [{public.name}]"]
    keyring.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return valid, hostile, keyring


def uploads(folder: Path, count: int, valid: list[Path], hostile: list[Path]) -> Path:
    """`count` packages: every tenth hostile (bombs among them), the rest valid, by copy."""
    target = folder / f"uploads-{count}"
    target.mkdir()
    for n in range(count):
        source = (
            hostile[n // HOSTILE_SHARE % len(hostile)]
            if n % HOSTILE_SHARE == 0
            else valid[n % len(valid)]
        )
        shutil.copyfile(source, target / f"{n:05d}-{source.name}")
    return target


def measured_register(
    folder: Path, uploads_dir: Path, keyring: Path, site: Path | None = None
) -> tuple[float, int, int]:
    """(seconds, peak resident KiB, exit status) of one register in its own process."""
    site = site or folder / f"site-{uploads_dir.name}"
    command = checker("register", str(uploads_dir), "--keyring", str(keyring), "--out",
                      str(site))  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    said = process.stderr.read().decode().strip().splitlines()
    progress = [line for line in said if " packages: " in line]
    process.stderr.close()
    print(f"  last progress line: {progress[-1] if progress else '(none)'}")
    return seconds, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def distinct(folder: Path, name: str, count: int, start: int) -> Path:
    """`count` packages, each signed again with a run id of its own (so each is a certificate
    of its own), ten vendors, ten implementations each."""
    target = folder / name
    target.mkdir()
    reports = folder / "reports"
    for n in range(start, start + count):
        vendor = n % VENDORS
        packages.signed_variant(
            reports, target / f"d{n:05d}.zip", folder / f"vendor{vendor}.pem", folder,
            vendor=f"Vendor {vendor}", implementation=f"Store {n // VENDORS % 10}",
            run_id=f"history-{n}",
        )  # fmt: skip
    return target


def history(folder: Path, keyring: Path, old: int, new: int) -> None:
    started = time.perf_counter()
    past, fresh = distinct(folder, "past", old, 0), distinct(folder, "fresh", new, old)
    print(f"made {old} + {new} distinct signed packages in {time.perf_counter() - started:.0f} s")
    site = folder / "site-history"
    for label, uploads_dir, into in (
        (f"{new} new uploads into an empty register", fresh, folder / "site-empty"),
        (f"a history of {old} certificates, from empty", past, site),
        (f"{new} new uploads added to that history of {old}", fresh, site),
    ):
        seconds, peak, status = measured_register(folder, uploads_dir, keyring, into)
        print(f"register {label}: {seconds:.1f} s, peak memory {peak / 1024:.0f} MiB, "
              f"exit {status}")  # fmt: skip


def verify_seconds(package: Path, public_key: Path, rounds: int = 20) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        assert verify.verify_evidence(package, public_key).status == 0
    return (time.perf_counter() - started) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench_register")
    parser.add_argument("--packages", type=int, default=1000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--new", type=int, default=100)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="psc-bench-register-") as name:
        folder = Path(name)
        started = time.perf_counter()
        valid, hostile, keyring = pool(folder)
        print(f"made {len(valid)} signed variants and {len(hostile)} hostile packages of one "
              f"real run in {time.perf_counter() - started:.1f} s")  # fmt: skip
        yardstick = verify_seconds(valid[0], folder / "vendor0.pub.pem")
        print(f"yardstick: verify of one valid package, in process: {yardstick * 1000:.1f} ms")
        for count in (arguments.small, arguments.packages):
            target = uploads(folder, count, valid, hostile)
            size = sum(p.stat().st_size for p in target.iterdir()) / 1e6
            seconds, peak, status = measured_register(folder, target, keyring)
            per = seconds / count
            print(
                f"register {count} packages ({size:.0f} MB, one in {HOSTILE_SHARE} hostile): "
                f"{seconds:.1f} s, {per * 1000:.1f} ms a package ({per / yardstick:.1f}x a "
                f"verify), peak memory {peak / 1024:.0f} MiB, exit {status}"
            )
        history(folder, keyring, arguments.history, arguments.new)


if __name__ == "__main__":
    sys.exit(main())
