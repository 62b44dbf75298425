"""`petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR`:
verify every uploaded package against the keys of the vendor it names, keep what verifies,
turn away what does not with a reason, and extend the register SITE_DIR holds: its history
(conformance.register.history), its log, the published packages, keys and the body's signed
summaries, written beside SITE_DIR and swapped in whole (conformance.register.writing).

Exit 0 when every package was registered (certified or not), 1 when any was rejected (the site
is written all the same), 2 when the input is unusable (the keyring, the policy, no package, the
folder, a revocation of no certificate). `register --audit OLD NEW [--key BODY.pub]`: see
conformance.register.audit.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from conformance import signing_keys
from conformance.register import audit, entries, history, policy, publish, writing
from conformance.register.keyring import Keyring, KeyringError, load
from conformance.register.verifying import (
    Refused,
    claimed_vendor,
    screen,
    signing_keyid,
    verify_package,
)

USAGE = (
    "petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR "
    "[--policy POLICY.yaml] [--sign-key BODY.pem --body-id URI] [--body NAME] "
    "[--publish-failures] [--rejections FILE]"
)
REGISTERED, REJECTED, UNUSABLE = 0, 1, 2
DEFAULT_VALID_DAYS = 365


class Unusable(Exception):
    """Input the register cannot work with; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unusable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance register", add_help=False)
    parser.add_argument("inputs", nargs="*", type=Path)
    parser.add_argument("--keyring", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--valid-days", type=int, default=DEFAULT_VALID_DAYS)
    parser.add_argument("--title", default="Pet Store API v1: certified implementations")
    parser.add_argument("--policy", type=Path)
    parser.add_argument("--sign-key", type=Path)
    parser.add_argument("--body-id")
    parser.add_argument("--body", default="an unnamed certification body")
    parser.add_argument("--publish-failures", action="store_true")
    parser.add_argument("--rejections", type=Path)
    arguments = parser.parse_args(args)
    if arguments.valid_days < 1:
        raise Unusable("--valid-days must be a positive whole number")
    if (arguments.sign_key is None) != (arguments.body_id is None):
        raise Unusable("--sign-key and --body-id go together: the body signs as the URI it names")
    if arguments.body_id is not None and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:\S+$",
                                                      arguments.body_id):  # fmt: skip
        raise Unusable(f"--body-id {arguments.body_id!r}: not a URI (https://... or urn:...)")
    if arguments.rejections is not None and inside(arguments.rejections, arguments.out):
        raise Unusable(f"--rejections {arguments.rejections}: inside --out, which is published")
    return arguments


def inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


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
    return found


def reason_of(lines: list[str]) -> str:
    problems = [line.removeprefix("problem: ") for line in lines if line.startswith("problem: ")]
    return "; ".join(problems[:3]) or (lines[-1] if lines else "verify refused it")


def register_one(
    path: Path, keyring: Keyring, the_policy, valid_days: int, now, first_seen=None
) -> entries.Entry | str:
    """The package's entry, or the reason it is rejected. Until the intake helper's
    judgement.judge replaces it: keys judged valid at `first_seen`, the policy applied."""
    first_seen = first_seen or now
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
    day = first_seen.date()
    valid = [k for k in keyring.vendors[vendor] if valid_on(k, day)]
    if not valid:
        return f"no key of {vendor!r} was valid on {day}"
    tried = sorted(valid, key=lambda k: k.keyid != hint)
    for key in tried:
        verified = verify_package(path, key.path)
        if verified.status == 0:
            break
    else:
        return unverified_reason(path, keyring, vendor, hint, verified.lines)
    if verified.statement.get("vendor") != vendor:
        return "the package changed while it was read"
    # The key id only: the keyring's file names are the body's own, not for a public page.
    label = f"key {key.keyid[:16]}, registered for {vendor}"
    found = entries.entry(str(path), verified.statement, label, valid_days, first_seen)
    found.key_fingerprint, found.key_path = key.fingerprint, key.path
    found.policy_sha256 = the_policy.sha256
    if found.reason is None:
        found.reason = the_policy.refusal(found, first_seen)
    return found


def valid_on(key, day) -> bool:
    """The key was valid that day (its not_before and not_after, where the keyring gives them)."""
    return (key.not_before is None or key.not_before <= day) and (
        key.not_after is None or day <= key.not_after
    )


def unverified_reason(path, keyring: Keyring, vendor: str, hint, lines: list[str]) -> str:
    other = keyring.by_keyid(hint)
    foreign = other is not None and other.vendor != vendor
    if foreign and verify_package(path, other.path).status == 0:
        return (
            f"signed with a key of the vendor {other.vendor!r}, not with one of "
            f"{vendor!r}, the vendor it names"
        )
    return f"does not verify with the keys of {vendor!r}: {reason_of(lines)}"


def inputs_of(arguments: argparse.Namespace):
    """(paths, keyring, policy, signer): the usable input, or Unusable and the like."""
    paths = packages(arguments.inputs)
    the_policy = policy.DEFAULT if arguments.policy is None else policy.load(arguments.policy)
    signer = None
    if arguments.sign_key is not None:
        signer = signing_keys.load_signer(arguments.sign_key)
    return paths, load(arguments.keyring), the_policy, signer


def main(args: list[str]) -> int:
    if "--audit" in args:
        return audit.main(args)
    try:
        arguments = parse(args)
        paths, keyring, the_policy, signer = inputs_of(arguments)
    # ValueError: the policy's own error (one line), whatever the policy module names it.
    except (Unusable, KeyringError, ValueError, signing_keys.KeyFileError) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return UNUSABLE
    made = None
    try:
        # Only once the input is known to be usable; a signed register proven with the body's key.
        past = writing.prepare(arguments.out, signer.public_key if signer else None)
        if not paths and not past.everything():
            raise Unusable(f"no package (*.zip) in {', '.join(map(str, arguments.inputs))}")
        made = writing.staging(arguments.out)
        run = publish.Run(arguments, keyring, the_policy, signer, past, made, publish.say)
        # judge(path, now, first_seen): the intake helper's judgement.judge(path, keyring,
        # policy, now, first_seen) takes register_one's place on merge.
        result = run.register(paths, lambda path, now, first_seen: register_one(
            path, keyring, the_policy, arguments.valid_days, now, first_seen))  # fmt: skip
        writing.swap(made, arguments.out)
        made = None
    except (Unusable, writing.Unwritable, history.Unusable) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return UNUSABLE
    except OSError as error:
        print(f"petstore-conformance: {arguments.out}: cannot write ({error})", file=sys.stderr)
        return UNUSABLE
    finally:
        keyring.close()
        if made is not None:
            writing.discard(made)
    return result.report(arguments)
