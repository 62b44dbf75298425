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

from conformance.register import entries, site
from conformance.register.keyring import Keyring, KeyringError, load
from conformance.register.verifying import (
    Refused,
    claimed_vendor,
    screen,
    signing_keyid,
    verify_package,
)

USAGE = "petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR"
REGISTERED, REJECTED, UNUSABLE = 0, 1, 2
PROGRESS_EVERY = 2.0  # seconds between progress lines
DEFAULT_VALID_DAYS = 365


class Unusable(Exception):
    """Input the register cannot work with; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unusable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance register", add_help=False)
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--keyring", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--valid-days", type=int, default=DEFAULT_VALID_DAYS)
    parser.add_argument("--title", default="Pet Store API v1: certified implementations")
    arguments = parser.parse_args(args)
    if arguments.valid_days < 1:
        raise Unusable("--valid-days must be a positive whole number")
    return arguments


def packages(inputs: list[Path]) -> list[Path]:
    """The given zips, and every *.zip under the given folders (symbolic links not followed)."""
    found = []
    for given in inputs:
        if given.is_dir():
            for folder, subfolders, names in os.walk(given):
                subfolders.sort()
                found += [Path(folder) / n for n in sorted(names) if n.endswith(".zip")]
        elif given.exists() or given.is_symlink():
            found.append(given)
        else:
            raise Unusable(f"{given}: no such file or folder")
    if not found:
        raise Unusable(f"no package (*.zip) in {', '.join(map(str, inputs))}")
    return found


def reason_of(lines: list[str]) -> str:
    problems = [line.removeprefix("problem: ") for line in lines if line.startswith("problem: ")]
    return "; ".join(problems[:3]) or (lines[-1] if lines else "verify refused it")


def register_one(path: Path, keyring: Keyring, valid_days: int, now) -> entries.Entry | str:
    """The package's entry, or the reason it is rejected."""
    try:
        screen(path)
    except Refused as refused:
        return str(refused)
    vendor = claimed_vendor(path)
    if not isinstance(vendor, str) or not vendor:
        return "names no vendor (made without --vendor), or is not a package"
    if vendor not in keyring.vendors:
        return f"names the vendor {entries.text(vendor)!r}, who has no key in the keyring"
    hint = signing_keyid(path)
    tried = sorted(keyring.vendors[vendor], key=lambda k: k.keyid != hint)
    for key in tried:
        verified = verify_package(path, key.path)
        if verified.status == 0:
            break
    else:
        return unverified_reason(path, keyring, vendor, hint, verified.lines)
    if verified.statement.get("vendor") != vendor:
        return "the package changed while it was read"
    run_id = verified.statement.get("run_id")
    if run_id in keyring.revoked:
        return f"certificate revoked: {keyring.revoked[run_id]}"
    # The key id only: the keyring's file names are the body's own, not for a public page.
    label = f"key {key.keyid[:16]}, registered for {vendor}"
    return entries.entry(str(path), verified.statement, label, valid_days, now)


def unverified_reason(path, keyring: Keyring, vendor: str, hint, lines: list[str]) -> str:
    other = keyring.by_keyid(hint)
    foreign = other is not None and other.vendor != vendor
    if foreign and verify_package(path, other.path).status == 0:
        return (
            f"signed with a key of the vendor {other.vendor!r}, not with one of "
            f"{vendor!r}, the vendor it names"
        )
    return f"does not verify with the keys of {vendor!r}: {reason_of(lines)}"


def register(paths: list[Path], keyring: Keyring, valid_days: int, progress) -> site.Register:
    now = datetime.datetime.now(datetime.UTC)
    verified, rejected = [], []
    last = time.monotonic()
    for number, path in enumerate(paths, 1):
        found = register_one(path, keyring, valid_days, now)
        if isinstance(found, str):
            rejected.append({"package": str(path), "reason": found})
        else:
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
        paths = packages(arguments.inputs)
        keyring = load(arguments.keyring)
    except (Unusable, KeyringError) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return UNUSABLE
    try:
        site.prepare(arguments.out)  # only once the input is known to be usable
        result = register(paths, keyring, arguments.valid_days, say)
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
