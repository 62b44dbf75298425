"""`petstore-conformance verify DIR_OR_ZIP [--key PUBLIC.pem]`: check evidence a vendor handed
over. Exit 0 when it holds, 1 when it was altered or does not add up, 2 when it cannot be read.

`verify PACKAGE.zip --keyring KEYRING.yaml [--policy POLICY.yaml] [--valid-days DAYS]`: the
certification body's judgement of the package, from the register's own code
(conformance.register.judgement): exit 0 only where `register` would certify it, 1 where it
would register it without a certificate or reject it (the reason named), 2 where the keyring
or the policy cannot be used.

Without `--key`, a package's hashes and consistency (conformance.reports.package): integrity,
not identity. With `--key`, also the signature of `conformance.intoto.jsonl`
(conformance.reports.attestation), in a package or in a report folder: the files are the ones
the holder of the matching private key signed, unaltered, and every file there is signed.
Neither says what the checker was pointed at, and the console says so. Everything is read within
the limits of conformance.reports.contents, and printed with control characters escaped.

`verify_evidence(path, key_path)` is the check for other code (one package or folder, one
public key): a `Verification` of exit status, lines, and the signed Statement when it verified.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from conformance import signing_keys as keys
from conformance.console.requirements import plain
from conformance.reports import attestation, contents, package
from conformance.reports.package import ALTERED, INTACT, STATEMENT, UNREADABLE

USAGE = (
    "petstore-conformance verify DIR_OR_ZIP [--key PUBLIC.pem | --keyring KEYRING.yaml "
    "[--policy POLICY.yaml] [--valid-days DAYS]]"
)
UNNAMED = (
    "note: the package names no vendor (made without --vendor): no certification register "
    "accepts it"
)


class Unreadable(Exception):
    """Evidence this command cannot read; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unreadable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance verify", add_help=False)
    parser.add_argument("path", type=Path)
    parser.add_argument("--key", type=Path)
    parser.add_argument("--keyring", type=Path)
    parser.add_argument("--policy", type=Path)
    parser.add_argument("--valid-days", type=int)
    arguments = parser.parse_args(args)
    if arguments.key and arguments.keyring:
        raise Unreadable(f"--key or --keyring, not both; usage: {USAGE}")
    if (arguments.policy or arguments.valid_days is not None) and not arguments.keyring:
        raise Unreadable(f"--policy and --valid-days go with --keyring; usage: {USAGE}")
    return arguments


@dataclass
class Verification:
    """What `verify --key` found: its exit status, the lines it prints (control characters
    escaped), and the signed in-toto Statement when the evidence verified (status 0)."""

    status: int
    lines: list[str]
    statement: dict | None = None


# The run's own working folders inside a report folder: not evidence, not read.
RUN_FOLDERS = {".hypothesis", "request-bodies"}


def verify_evidence(path: Path, key_path: Path) -> Verification:
    """Verify one package (zip) or report folder against one public key (PEM): the signature,
    every file present with its signed sha256, every file there signed, and, for a package,
    its manifest and consistency. Never raises for bad input: exit 2 and one line."""
    try:
        status, lines, statement = signed(path, key_path)
    except (Unreadable, keys.KeyFileError, package.Unreadable) as error:
        status, lines, statement = UNREADABLE, [str(error)], None
    except (OSError, zipfile.BadZipFile) as error:
        reason = getattr(error, "strerror", None) or "not a zip file"
        status, lines, statement = (
            UNREADABLE,
            [f"cannot read {error.filename or path}: {reason}"],
            None,
        )
    return Verification(status, [plain(line) for line in lines], statement)


def signed(path: Path, key_path: Path) -> tuple[int, list[str], dict | None]:
    key = keys.load_public_key(key_path)
    if path.is_dir():
        contents = read_folder(path)
        head, problems, notes = [], contents.problems + folder_problems(contents), []
    else:
        contents, examined = package.open_and_examine(path)
        head, problems, notes = [examined.summary], examined.problems, examined.notes
    statement, signature_problems = attestation.check(contents, key, in_package=not path.is_dir())
    problems = problems + signature_problems
    lines = head + [f"problem: {p}" for p in problems]
    if problems:
        lines.append(
            f"{path}: NOT verified ({len(problems)} problem(s)): these are not the files the "
            "key holder signed, unaltered"
        )
        return ALTERED, lines, None
    lines += notes + signature_lines(path, key_path, key, statement)
    return INTACT, lines, statement


def read_folder(path: Path) -> contents.Contents:
    found = contents.read_folder(path, package.DOCUMENTS, RUN_FOLDERS)
    if STATEMENT not in found.members and package.ENVELOPE not in found.members:
        raise Unreadable(f"{path}: not a report folder (no {STATEMENT})")
    return found


def folder_problems(found: contents.Contents) -> list[str]:
    """A folder has no manifest: its statement must still add up, as a package's must."""
    try:
        statement = package.load(found.data(STATEMENT) or b"")
    except ValueError:
        return []  # missing or unreadable: the signature's check says so
    if not isinstance(statement, dict):
        return [f"{STATEMENT} is not a JSON object"]
    try:
        return package.statement_problems(statement)
    except (TypeError, AttributeError):
        return [f"{STATEMENT} has fields of the wrong type"]


def target_of(descriptor: dict) -> str | None:
    """A server's URL, or a client's command line (the descriptor's base64 `content`)."""
    if isinstance(descriptor.get("uri"), str):
        return descriptor["uri"]
    try:
        return base64.b64decode(descriptor.get("content") or "").decode("utf-8")
    except (ValueError, TypeError):
        return None


def signature_lines(path: Path, key_path: Path, key, statement: dict) -> list[str]:
    """What a signature that holds proves, and what it does not."""
    subjects = [s["name"] for s in statement["subject"]]
    predicate = statement["predicate"]
    target = next(
        (target_of(c) for c in predicate.get("configuration", []) if c.get("name") == "target"),
        None,
    )
    result = predicate.get("result")
    run = next((c for c in predicate.get("configuration", []) if c.get("name") == "run"), {})
    unnamed = [] if (run.get("annotations") or {}).get("vendor") else [UNNAMED]
    return unnamed + [
        f"signature: valid, by the {keys.describe(key)} of {key_path}; signed result "
        f"{result}, {len(predicate.get('failedTests', []))} failed requirement(s)",
        f"what it proves: the holder of the private key of {key_path.name} produced these "
        f"{len(subjects)} files ({', '.join(subjects)}), and nobody has altered them since",
        f"what it does not prove: that the target ({target}) was the production service, or "
        "the implementation it is said to be: the key holder chose what to check; to know, run "
        "the checker against the service yourself",
        f"{path}: verified: signed by that key and unaltered, every file signed; the signed "
        f"result is {result}",
    ]


def verify_unsigned(path: Path) -> tuple[int, list[str]]:
    """As before signatures: a package's hashes and consistency."""
    if path.is_dir():
        raise Unreadable(f"{path} is a folder: a signed report folder is verified with --key")
    status, lines = package.verify(path)
    if status != UNREADABLE and holds_envelope(path):
        lines.insert(
            -1,
            f"the package holds a signature ({package.ENVELOPE}): add --key PUBLIC.pem to "
            "check who signed it",
        )
    return status, lines


def holds_envelope(path: Path) -> bool:
    with zipfile.ZipFile(path) as archive:
        return package.ENVELOPE in archive.NameToInfo


def judged(arguments: argparse.Namespace) -> tuple[int, list[str]]:
    """The register's judgement of one package (imported here: only this option needs it)."""
    import datetime

    from conformance.register import judgement, keyring, policy
    from conformance.register.command import MAX_VALID_DAYS

    days = judgement.DEFAULT_VALID_DAYS if arguments.valid_days is None else arguments.valid_days
    if not 1 <= days <= MAX_VALID_DAYS:
        raise Unreadable(f"--valid-days must be a whole number from 1 to {MAX_VALID_DAYS}")
    try:
        rules = policy.load(arguments.policy) if arguments.policy else policy.DEFAULT
        ring = keyring.load(arguments.keyring)
    except keyring.DocumentError as error:
        return UNREADABLE, [str(error)]
    try:
        now = datetime.datetime.now(datetime.UTC)
        found = judgement.judge(arguments.path, ring, rules, now, valid_days=days)
    finally:
        ring.close()
    shown = package_name(arguments.path)
    if isinstance(found, str):
        return ALTERED, [f"{shown}: rejected: {found}"]
    lines = [
        f"{shown}: verified: run {found.run_id} of {found.time} by {found.vendor} "
        f"({found.implementation or 'implementation not stated'}), signed with the key "
        f"{found.key_fingerprint[:16]} (sha256 of its public key) registered for the vendor; "
        f"policy {rules.uri} (sha256 {rules.sha256[:16]})"
    ]
    if found.reason is not None:
        return ALTERED, [*lines, f"{shown}: verified, not certified: {found.reason}"]
    return INTACT, [*lines, f"{shown}: certified until {found.expires}, or the next suite version"]


def package_name(path: Path) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def main(args: list[str]) -> int:
    try:
        arguments = parse(args)
        if arguments.keyring is not None:
            status, lines = judged(arguments)
        elif arguments.key is None:
            status, lines = verify_unsigned(arguments.path)
        elif arguments.path.name.endswith(".jsonl") and arguments.path.is_file():
            from conformance.register import body  # a register's signed summary or checkpoint

            status, lines = body.verify_file(arguments.path, arguments.key)
        else:
            verification = verify_evidence(arguments.path, arguments.key)
            status, lines = verification.status, verification.lines
    except (Unreadable, keys.KeyFileError) as error:
        status, lines = UNREADABLE, [str(error)]
    except (OSError, zipfile.BadZipFile) as error:
        reason = getattr(error, "strerror", None) or "not a zip file"
        status, lines = UNREADABLE, [f"cannot read {error.filename or 'the input'}: {reason}"]
    stream = sys.stderr if status == UNREADABLE else sys.stdout
    prefix = "petstore-conformance: " if status == UNREADABLE else ""
    for line in lines:
        print(prefix + plain(line), file=stream)
    return status
