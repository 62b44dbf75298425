"""The register's one door to `verify`: `verify_package(path, public_key_path)`, and what a
register does before it, bounded before the package is trusted.

A package is never trusted more than `verify` trusts it: the register asks it, and keeps what it
says. Before that, nothing of an upload is parsed past a small bound:

- `screen`: a regular file (not a link, FIFO, device or socket), 64 MiB at most, screened with
  verify's own code (conformance.reports.contents): the member count from the zip's end record
  before zipfile reads the directory, each name and kind, each size as declared, before a byte
  is inflated;
- `claimed_vendor`: the vendor from `manifest.json`, read within `MAX_CLAIM_BYTES`; it only
  chooses the keys to try;
- `signed_statement`: the envelope, read within `MAX_ENVELOPE_BYTES`, its signature checked
  with one key; only then does `verify` read the rest (its own limits, conformance.json 16 MiB);
- `deadline`: each package has `SECONDS_PER_PACKAGE` in all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from conformance import regular_file, strict_json
from conformance import signing_keys as keys
from conformance.reports import attestation, contents, verify
from conformance.reports.package import (
    ALTERED,
    DOCUMENTS,
    HOLDS,
    INTACT,
    MANIFEST,
    STATEMENT,
    sha256,
)

MAX_PACKAGE_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # as declared: zipfile reads no more than a member declares
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_CLAIM_BYTES = 16 * 1024
"""The manifest names the vendor; a real one is under 2 KiB."""
MAX_ENVELOPE_BYTES = 1024 * 1024
"""A real envelope is a few dozen KiB; its signature is checked before anything larger."""
SECONDS_PER_PACKAGE = 30
"""The time one package may take, screening to judgement (the largest that verifies, at the
limits, takes about a second)."""


@dataclass
class Verified:
    status: int  # verify's: 0 intact and signed by the key, 1 altered or not, 2 unreadable
    lines: list[str]  # what verify said
    statement: dict | None  # the signed conformance.json, when status is 0


class Refused(Exception):
    """A package the register will not hand to verify; one line."""


def display_name(path: Path) -> str:
    """The name as it may be shown and written: a byte that is not UTF-8 as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def screen(path: Path) -> None:
    """Refuse what is no package before anything is decompressed: a special file, too many
    bytes or members, a member a package does not hold, declaring more than it can be."""
    if not regular_file.is_regular(path):
        raise Refused("not a regular file (a link, a folder, a FIFO, a device or a socket)")
    size = path.lstat().st_size
    if size > MAX_PACKAGE_BYTES:
        raise Refused(f"{size} bytes, more than a package can be ({MAX_PACKAGE_BYTES})")
    try:
        contents.refuse_a_long_directory(path)  # verify's: counted before the directory is read
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except contents.Unreadable as error:
        raise Refused(str(error)) from None
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        raise Refused("not a zip file") from None
    names = [m.filename for m in members]
    problems = [contents.name_problem(m.filename) or contents.zip_kind_problem(m) for m in members]
    strange = [n for n in names if n not in HOLDS]
    if any(problems) or strange or len(set(names)) != len(names):
        said = next((p for p in problems if p), None) or "not only a package's files"
        raise Refused(f"holds {len(names)} members: {display_text(said)}")
    declared = [m.file_size for m in members]
    too_large = [m for m in members if m.file_size > DOCUMENTS.get(m.filename, MAX_MEMBER_BYTES)]
    if too_large or sum(declared) > MAX_TOTAL_BYTES:
        raise Refused(f"its members would unpack to {sum(declared)} bytes (a zip bomb?)")


def display_text(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def member(path: Path, name: str, limit: int) -> bytes | None:
    """One member, at most `limit` + 1 bytes of it (screened first); None where absent or
    damaged."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(name) as handle:
            return handle.read(limit + 1)
    except (OSError, KeyError, zipfile.BadZipFile, ValueError, EOFError):
        return None
    except Exception:  # noqa: BLE001 - zlib.error and the like: a damaged member, said so
        return None


def claimed_vendor(path: Path) -> object:
    """The vendor the package's manifest names, unverified, read within MAX_CLAIM_BYTES: it
    only chooses the keys to verify with (the signed statement must name the same)."""
    data = member(path, MANIFEST, MAX_CLAIM_BYTES) or b""
    if len(data) > MAX_CLAIM_BYTES:
        return None
    try:
        manifest = strict_json.loads(data, unique_keys=True)
    except ValueError:
        return None
    return manifest.get("vendor") if isinstance(manifest, dict) else None


def envelope(path: Path) -> bytes | None:
    data = member(path, attestation.ENVELOPE, MAX_ENVELOPE_BYTES)
    return None if data is None or len(data) > MAX_ENVELOPE_BYTES else data


def signing_keyid(path: Path) -> object:
    """The key id the envelope's signature names, unverified: a hint, for the reason."""
    try:
        document = json.loads((envelope(path) or b"").splitlines()[0])
        return document["signatures"][0]["keyid"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None


def signed_by(path: Path, public_key_path: Path) -> dict | str:
    """The in-toto Statement the envelope (small, bounded) signs with the key, or why it does
    not verify. Checked before verify reads the package's larger documents."""
    data = envelope(path)
    if data is None:
        return f"no {attestation.ENVELOPE} of at most {MAX_ENVELOPE_BYTES} bytes: not signed"
    try:
        key = keys.load_public_key(public_key_path)
        return attestation.signed_statement(attestation.envelopes(data), key)
    except (ValueError, keys.KeyFileError) as error:
        return str(error)


def unsigned_member(path: Path, signed: dict) -> str | None:
    """The first member whose bytes are not the ones the Statement signs (hashed as read, never
    parsed); None where every signed member present is: only then does verify parse them."""
    digests = attestation.signed_digests(signed)
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.filename not in digests:
                    continue
                hasher = hashlib.sha256()
                with archive.open(info) as stream:
                    while chunk := stream.read(1024 * 1024):
                        hasher.update(chunk)
                if hasher.hexdigest() != digests[info.filename]:
                    return info.filename
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, zlib.error):
        return "the zip"
    return None


def signed_digest(signed: dict) -> object:
    """The sha256 the signed Statement gives conformance.json."""
    subjects = signed.get("subject") if isinstance(signed.get("subject"), list) else []
    named = [s for s in subjects if isinstance(s, dict) and s.get("name") == STATEMENT]
    return (named[0].get("digest") or {}).get("sha256") if len(named) == 1 else None


def verify_package(path: Path, public_key_path: Path) -> Verified:
    """What `verify FILE.zip --key PUBLIC.pem` says of a (screened) package, and the signed
    conformance.json when it holds."""
    result = verify.verify_evidence(path, public_key_path)
    if result.status != INTACT or result.statement is None:
        return Verified(result.status, result.lines, None)
    # The report the signature covers, read again and held to the signed digest again, so that
    # a file replaced between the two reads is not registered with another's statement.
    data = member(path, STATEMENT, DOCUMENTS[STATEMENT]) or b""
    try:
        statement = strict_json.loads(data, unique_keys=True)
    except ValueError:
        statement = None
    if signed_digest(result.statement) != sha256(data) or not isinstance(statement, dict):
        return Verified(ALTERED, [*result.lines, "the package changed while it was read"], None)
    return Verified(INTACT, result.lines, statement)


class TooSlow(Exception):
    """A package that took longer than SECONDS_PER_PACKAGE."""


@contextlib.contextmanager
def deadline(seconds: float = SECONDS_PER_PACKAGE):
    """TooSlow raised inside the block once `seconds` have passed (a timer signal: in the main
    thread only, where the register runs; elsewhere the block runs unbounded in time)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise TooSlow(f"took longer than {seconds:g} s, the time one package may take")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
