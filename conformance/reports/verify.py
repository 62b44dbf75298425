"""`petstore-conformance verify DIR_OR_ZIP [--key PUBLIC.pem]`: check evidence a vendor handed
over. Exit 0 when it holds, 1 when it was altered or does not add up, 2 when it cannot be read.

Without `--key`, a package's hashes and consistency (conformance.reports.package): integrity,
not identity. With `--key`, also the signature of `conformance.intoto.jsonl`
(conformance.reports.attestation), in a package or in a report folder: the files are the ones
the holder of the matching private key signed, unaltered. Neither says what the checker was
pointed at, and the console says so.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

from conformance import signing_keys as keys
from conformance.reports import attestation, package
from conformance.reports.package import ALTERED, INTACT, REPORTS, STATEMENT, UNREADABLE

USAGE = "petstore-conformance verify DIR_OR_ZIP [--key PUBLIC.pem]"


class Unreadable(Exception):
    """Evidence this command cannot read; one line."""


class Arguments(argparse.ArgumentParser):
    def error(self, message: str):
        raise Unreadable(f"{message}; usage: {USAGE}")


def parse(args: list[str]) -> argparse.Namespace:
    parser = Arguments(prog="petstore-conformance verify", add_help=False)
    parser.add_argument("path", type=Path)
    parser.add_argument("--key", type=Path)
    return parser.parse_args(args)


def read_folder(path: Path) -> tuple[dict[str, bytes], bytes | None]:
    """The report files of a folder and its envelope (None where there is none)."""
    files = {name: (path / name).read_bytes() for name in REPORTS if (path / name).is_file()}
    envelope = path / attestation.ENVELOPE
    if STATEMENT not in files and not envelope.is_file():
        raise Unreadable(f"{path}: not a report folder (no {STATEMENT})")
    return files, envelope.read_bytes() if envelope.is_file() else None


def read_package(path: Path) -> tuple[dict[str, bytes], bytes | None]:
    """The same from a package; a damaged member reads as empty, which no digest matches."""
    with zipfile.ZipFile(path) as archive:
        members = {
            name: package.read_member(archive, name) or b""
            for name in [*REPORTS, attestation.ENVELOPE]
            if name in archive.namelist()
        }
    return {n: d for n, d in members.items() if n in REPORTS}, members.get(attestation.ENVELOPE)


def folder_problems(files: dict[str, bytes]) -> list[str]:
    """A folder has no manifest: its statement must still add up, as a package's must."""
    try:
        return package.statement_problems(json.loads(files[STATEMENT]))
    except (KeyError, ValueError, TypeError, AttributeError):
        return []  # missing or unreadable: the signature's check says so


def signature_lines(path: Path, key_path: Path, key, statement: dict) -> list[str]:
    """What a signature that holds proves, and what it does not."""
    subjects = [s.get("name") for s in statement.get("subject", []) if isinstance(s, dict)]
    predicate = statement.get("predicate") or {}
    target = next(
        (c.get("uri") for c in predicate.get("configuration", []) if c.get("name") == "target"),
        None,
    )
    return [
        f"signature: valid, by the {keys.describe(key)} of {key_path}; signed result "
        f"{predicate.get('result')}, {len(predicate.get('failedTests', []))} failed requirement(s)",
        f"what it proves: the holder of the private key of {key_path.name} produced these "
        f"{len(subjects)} files ({', '.join(subjects)}), and nobody has altered them since",
        f"what it does not prove: that the target ({target}) was the production service, or "
        "the implementation it is said to be: the key holder chose what to check; to know, run "
        "the checker against the service yourself",
        f"{path}: signed by that key and unaltered",
    ]


def verify_signed(path: Path, key_path: Path) -> tuple[int, list[str]]:
    key = keys.load_public_key(key_path)
    lines: list[str] = []
    if path.is_dir():
        files, envelope = read_folder(path)
        problems = folder_problems(files)
        status = INTACT
    else:
        status, lines = package.verify(path)
        if status == UNREADABLE:
            return status, lines
        files, envelope = read_package(path)
        problems = []
    statement, signature_problems = attestation.check(envelope, files, key)
    problems += signature_problems
    if problems:
        lines += [f"problem: {p}" for p in problems]
        lines.append(f"{path}: the signature does not hold ({len(problems)} problem(s))")
        return ALTERED, lines
    return status, lines + signature_lines(path, key_path, key, statement)


def verify_unsigned(path: Path) -> tuple[int, list[str]]:
    """As before signatures: a package's hashes and consistency."""
    if path.is_dir():
        raise Unreadable(f"{path} is a folder: a signed report folder is verified with --key")
    status, lines = package.verify(path)
    if status != UNREADABLE and read_package(path)[1] is not None:
        lines.append(
            f"the package holds a signature ({attestation.ENVELOPE}): add --key PUBLIC.pem to "
            "check who signed it"
        )
    return status, lines


def main(args: list[str]) -> int:
    try:
        arguments = parse(args)
        if arguments.key is None:
            status, lines = verify_unsigned(arguments.path)
        else:
            status, lines = verify_signed(arguments.path, arguments.key)
    except (Unreadable, keys.KeyFileError) as error:
        status, lines = UNREADABLE, [str(error)]
    except (OSError, zipfile.BadZipFile) as error:
        reason = getattr(error, "strerror", None) or "not a zip file"
        status, lines = UNREADABLE, [f"cannot read {error.filename or 'the input'}: {reason}"]
    stream = sys.stderr if status == UNREADABLE else sys.stdout
    prefix = "petstore-conformance: " if status == UNREADABLE else ""
    for line in lines:
        print(prefix + line, file=stream)
    return status
