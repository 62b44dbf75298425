"""The register's one door to `verify`: `verify_package(path, public_key_path)`.

A package is never trusted more than `verify` trusts it: the register asks it, and keeps what it
says. This module adds only what a register needs before and after: bounds checked before a
byte is decompressed (so that a thousand uploads, zip bombs among them, stay in bounded memory),
the vendor a package names (to choose the keys to ask with) and the statement that verified.
`verify` bounds and reads its input once (`conformance.reports.verify.verify_evidence`).
"""

from __future__ import annotations

import json
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from conformance.reports import attestation, verify
from conformance.reports.package import (
    ALTERED,
    INTACT,
    MANIFEST,
    REPORTS,
    STATEMENT,
    sha256,
)

MAX_PACKAGE_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # as declared: zipfile reads no more than a member declares
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
KNOWN_MEMBERS = {MANIFEST, attestation.ENVELOPE, *REPORTS, "expected-failures.yaml"}


@dataclass
class Verified:
    status: int  # verify's: 0 intact and signed by the key, 1 altered or not, 2 unreadable
    lines: list[str]  # what verify said
    statement: dict | None  # the signed conformance.json, when status is 0


class Refused(Exception):
    """A package the register will not hand to verify; one line."""


def screen(path: Path) -> None:
    """Refuse what is no package before anything is decompressed: a special file, too many
    bytes, a member declaring more than a report can be, members a package does not hold."""
    try:
        info = path.lstat()
    except OSError as error:
        raise Refused(f"cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise Refused("not a regular file")
    if info.st_size > MAX_PACKAGE_BYTES:
        raise Refused(f"{info.st_size} bytes, more than a package can be ({MAX_PACKAGE_BYTES})")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        raise Refused("not a zip file") from None
    names = [m.filename for m in members]
    strange = [n for n in names if n not in KNOWN_MEMBERS]
    if strange or len(set(names)) != len(names):
        raise Refused(f"holds {len(names)} members, not only a package's files")
    declared = [m.file_size for m in members]
    if max(declared, default=0) > MAX_MEMBER_BYTES or sum(declared) > MAX_TOTAL_BYTES:
        raise Refused(f"its members would unpack to {sum(declared)} bytes (a zip bomb?)")


def member(path: Path, name: str, limit: int) -> bytes | None:
    """One member, at most `limit` bytes of it (screened first); None where absent or damaged."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(name) as handle:
            return handle.read(limit)
    except (OSError, KeyError, zipfile.BadZipFile, ValueError, EOFError):
        return None
    except Exception:  # noqa: BLE001 - zlib.error and the like: a damaged member, said so
        return None


def claimed_vendor(path: Path) -> object:
    """The vendor the package names, unverified: it only chooses the keys to verify with."""
    try:
        return json.loads(member(path, STATEMENT, MAX_MEMBER_BYTES) or b"").get("vendor")
    except (ValueError, AttributeError, RecursionError):  # nested 100,000 deep: no vendor
        return None


def signing_keyid(path: Path) -> object:
    """The key id the envelope's signature names, unverified: a hint, for the reason."""
    try:
        document = json.loads(member(path, attestation.ENVELOPE, MAX_ENVELOPE_BYTES) or b"")
        return document["signatures"][0]["keyid"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
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
    data = member(path, STATEMENT, MAX_MEMBER_BYTES)
    try:
        statement = json.loads(data or b"")
    except (ValueError, RecursionError):
        statement = None
    if signed_digest(result.statement) != sha256(data or b"") or not isinstance(statement, dict):
        return Verified(ALTERED, [*result.lines, "the package changed while it was read"], None)
    return Verified(INTACT, result.lines, statement)
