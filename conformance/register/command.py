"""`petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR`:
verify every uploaded package against the keys of the vendor it names, keep what verifies,
turn away what does not with a reason, and write the register as a static site.

Exit 0 when every package was registered (certified or not), 1 when any was rejected (the site
is written all the same), 2 when the input is unusable (the keyring, no package, the folder).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

from conformance.register import entries, policy, site
from conformance.register.judgement import judge
from conformance.register.keyring import Keyring, KeyringError, load
from conformance.register.policy import Policy
from conformance.register.verifying import display_name

USAGE = (
    "petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR "
    "[--policy POLICY.yaml]"
)
REGISTERED, REJECTED, UNUSABLE = 0, 1, 2
PROGRESS_EVERY = 2.0  # seconds between progress lines
DEFAULT_VALID_DAYS = 365
MAX_VALID_DAYS = 3650  # ten years: a suite version lasts less


class Unusable(Exception):
    """Input the register cannot work with; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unusable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance register", add_help=False)
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--keyring", type=Path, required=True)
    parser.add_argument("--policy", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--valid-days", type=int, default=DEFAULT_VALID_DAYS)
    parser.add_argument("--title", default="Pet Store API v1: certified implementations")
    arguments = parser.parse_args(args)
    if not 1 <= arguments.valid_days <= MAX_VALID_DAYS:
        raise Unusable(f"--valid-days must be a whole number from 1 to {MAX_VALID_DAYS}")
    return arguments


def packages(inputs: list[Path], skipped=lambda line: None) -> list[Path]:
    """The given zips, and every *.zip under the given folders (symbolic links not followed:
    each one left aside, and each file that is no *.zip, is `skipped` with a line)."""
    found = []
    for given in inputs:
        if given.is_dir():
            for folder, subfolders, names in os.walk(given):
                subfolders.sort()
                for name in [n for n in subfolders if (Path(folder) / n).is_symlink()]:
                    skipped(f"{display_name(Path(folder) / name)}: a symbolic link, not followed")
                found += [Path(folder) / n for n in sorted(names) if n.endswith(".zip")]
                for name in sorted(n for n in names if not n.endswith(".zip")):
                    skipped(f"{display_name(Path(folder) / name)}: not a *.zip")
        elif given.exists() or given.is_symlink():
            found.append(given)
        else:
            raise Unusable(f"{display_name(given)}: no such file or folder")
    if not found:
        raise Unusable(f"no package (*.zip) in {', '.join(map(display_name, inputs))}")
    return found


def register(
    paths: list[Path], keyring: Keyring, valid_days: int, progress, rules: Policy = policy.DEFAULT
) -> site.Register:
    now = datetime.datetime.now(datetime.UTC)
    verified, rejected = [], []
    last = time.monotonic()
    seen: dict[str, str] = {}  # package sha256: the first upload of it
    for number, path in enumerate(paths, 1):
        found = judge(path, keyring, rules, now, valid_days=valid_days)
        if isinstance(found, str):
            rejected.append({"package": display_name(path), "reason": found})
        elif found.package_sha256 in seen:
            progress(f"{found.package}: a copy of {seen[found.package_sha256]}, counted once")
        else:
            seen[found.package_sha256] = found.package
            verified.append(found)
        if time.monotonic() - last >= PROGRESS_EVERY or number == len(paths):
            last = time.monotonic()
            progress(
                f"{number} of {len(paths)} packages: {len(verified)} verified, "
                f"{len(rejected)} rejected"
            )
    current, superseded = entries.supersede(verified)
    return site.Register(current, superseded, rejected, now, valid_days)


def say(line: str) -> None:
    print(f"petstore-conformance: register: {line}", file=sys.stderr, flush=True)


def main(args: list[str]) -> int:
    try:
        arguments = parse(args)
        paths = packages(arguments.inputs, lambda line: say(f"skipped {line}"))
        rules = policy.load(arguments.policy) if arguments.policy else policy.DEFAULT
        keyring = load(arguments.keyring)
    except (Unusable, KeyringError) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return UNUSABLE
    try:
        site.prepare(arguments.out)  # only once the input is known to be usable
        result = register(paths, keyring, arguments.valid_days, say, rules)
    except site.Unwritable as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return UNUSABLE
    finally:
        keyring.close()
    try:
        site.write(arguments.out, result, arguments.title)
    except OSError as error:
        print(f"petstore-conformance: {arguments.out}: cannot write ({error})", file=sys.stderr)
        return UNUSABLE
    print(result.summary(arguments.out))
    for rejected in result.rejected:
        print(f"rejected {site.shown(rejected['package'])}: {site.shown(rejected['reason'])}")
    return REJECTED if result.rejected else REGISTERED
