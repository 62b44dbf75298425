"""`petstore-conformance register --audit OLD_SITE NEW_SITE [--key BODY.pub]`: does the newer
register extend the older one? Exit 0 only when NEW's log keeps every line of OLD's, unchanged,
and, with the body's public key, each site's checkpoint verifies and names its log (sha256 and
number of lines) and its register.json; 1 otherwise, naming the first line that differs or the
check that failed; 2 when a site or the key cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from conformance import signing_keys
from conformance.register import body, log

USAGE = "petstore-conformance register --audit OLD_SITE NEW_SITE [--key BODY.pub.pem]"
CHECKPOINT = "checkpoint.intoto.jsonl"


class Failed(Exception):
    """NEW does not extend OLD, or a checkpoint does not hold; one line."""


class Unreadable(Exception):
    """A site or key that cannot be read; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unreadable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance register", add_help=False)
    parser.add_argument("--audit", nargs=2, type=Path, metavar=("OLD_SITE", "NEW_SITE"),
                        required=True)  # fmt: skip
    parser.add_argument("--key", type=Path)
    return parser.parse_args(args)


def lines(site: Path) -> list[bytes]:
    if not (site / log.NAME).is_file():
        raise Unreadable(f"{site}: no {log.NAME}: not a register's site")
    try:
        found = log.lines_of(site / log.NAME)
    except OSError as error:
        raise Unreadable(f"{site / log.NAME}: cannot read it ({error.strerror})") from None
    except log.Broken as error:
        raise Failed(str(error)) from None
    return found


def checkpoint(site: Path, key: Path, found: list[bytes]) -> None:
    """The site's checkpoint verifies with the body's key and names this log and register."""
    try:
        data = (site / CHECKPOINT).read_bytes()
        register = (site / "register.json").read_bytes()
    except OSError as error:
        raise Failed(f"{site}: {error.filename}: cannot read it ({error.strerror})") from None
    try:
        signed = body.verified(data, key, body.CHECKPOINT_TYPE)
    except ValueError as error:
        raise Failed(f"{site / CHECKPOINT}: {error}") from None
    predicate = signed["predicate"]
    log_sha = hashlib.sha256(b"".join(line + b"\n" for line in found)).hexdigest()
    if predicate.get("log") != log_sha or predicate.get("lines") != str(len(found)):
        raise Failed(
            f"{site / CHECKPOINT}: signs a log of {predicate.get('lines')} line(s) that is not "
            f"{site / log.NAME} ({len(found)} line(s))"
        )
    if predicate.get("register") != hashlib.sha256(register).hexdigest():
        raise Failed(f"{site / CHECKPOINT}: signs another register.json than {site}'s")


def audit(old: Path, new: Path, key: Path | None) -> str:
    old_lines, new_lines = lines(old), lines(new)
    # The first line that differs first: a line changed breaks the chain only at the next one.
    difference = log.first_difference(old_lines, new_lines)
    if difference:
        raise Failed(f"{new / log.NAME} does not extend {old / log.NAME}: {difference}")
    try:
        log.check(old_lines, str(old / log.NAME))
        log.check(new_lines, str(new / log.NAME))
    except log.Broken as error:
        raise Failed(str(error)) from None
    if key is not None:
        for site, found in ((old, old_lines), (new, new_lines)):
            checkpoint(site, key, found)
    signed = ", both checkpoints verified with the body's key" if key else ""
    return (
        f"{new} extends {old}: its log keeps the {len(old_lines)} line(s) of the old one and "
        f"adds {len(new_lines) - len(old_lines)}{signed}"
    )


def main(args: list[str]) -> int:
    try:
        arguments = parse(args)
        if arguments.key is not None:
            signing_keys.load_public_key(arguments.key)
        print(audit(*arguments.audit, arguments.key))
        return 0
    except (Unreadable, signing_keys.KeyFileError) as error:
        print(f"petstore-conformance: {error}", file=sys.stderr)
        return 2
    except Failed as error:
        print(f"petstore-conformance: audit: {error}", file=sys.stderr)
        return 1
