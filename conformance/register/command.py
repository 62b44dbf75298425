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
from conformance.register import audit, history, policy, publish, writing
from conformance.register.judgement import judge
from conformance.register.keyring import KeyringError, load
from conformance.register.verifying import display_name

USAGE = (
    "petstore-conformance register PACKAGE_OR_FOLDER... --keyring KEYRING.yaml --out SITE_DIR "
    "[--policy POLICY.yaml] [--sign-key BODY.pem --body-id URI] [--body NAME] "
    "[--publish-failures] [--rejections FILE]"
)
REGISTERED, REJECTED, UNUSABLE = 0, 1, 2
DEFAULT_VALID_DAYS = 365
MAX_VALID_DAYS = 3650  # ten years: a suite version lasts less


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
    if not 1 <= arguments.valid_days <= MAX_VALID_DAYS:
        raise Unusable(f"--valid-days must be a whole number from 1 to {MAX_VALID_DAYS}")
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


def packages(inputs: list[Path], skipped=lambda line: None) -> list[Path]:
    """The given zips, and every *.zip under the given folders (symbolic links not followed:
    each one left aside, and each file that is no *.zip, is `skipped` with a line). None at all
    is for the caller to judge: a night with no upload still settles statuses and revocations."""
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
    return found


def inputs_of(arguments: argparse.Namespace):
    """(paths, keyring, policy, signer): the usable input, or Unusable and the like."""
    paths = packages(arguments.inputs, lambda line: publish.say(f"skipped {line}"))
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
            raise Unusable(
                f"no package (*.zip) in {', '.join(map(display_name, arguments.inputs))}"
            )
        made = writing.staging(arguments.out)
        run = publish.Run(arguments, keyring, the_policy, signer, past, made, publish.say)
        result = run.register(paths, lambda path, now, first_seen: judge(
            path, keyring, the_policy, now, first_seen, arguments.valid_days,
            revocations=False))  # fmt: skip
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
