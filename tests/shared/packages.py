"""Signed packages for the register's tests and bench, made from one real run's reports: a
variant states other words (vendor, implementation, time...) and is signed again with the key
given, the way the checker signs (conformance.reports.attestation, .package); hostile ones are
made to be turned away (a zip bomb, garbage, a bad signature, a member too many)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from conformance import signing_keys as keys
from conformance.reports import attestation, package
from conformance.reports.package import STATEMENT


def signed_variant(
    report_dir: Path, zip_path: Path, key_pem: Path, scratch: Path, **stated
) -> Path:
    """A package of `report_dir`'s reports whose conformance.json states `stated` instead,
    signed with `key_pem` (a private key)."""
    folder = scratch / f"variant-{zip_path.stem}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(report_dir, folder)
    statement = json.loads((folder / STATEMENT).read_text(encoding="utf-8"))
    statement.update(stated)
    (folder / STATEMENT).write_text(json.dumps(statement, indent=2), encoding="utf-8")
    envelope = attestation.write(folder, keys.load_signer(key_pem))
    package.build(zip_path, folder, envelope=envelope)
    shutil.rmtree(folder)
    return zip_path


def rewritten(source: Path, target: Path, member: str, change) -> Path:
    """A copy of the package with one member's bytes changed by `change` (a tampered one)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for name in original.namelist():
            data = original.read(name)
            copy.writestr(name, change(data) if name == member else data)
    return target


def zip_bomb(target: Path, gigabytes: int = 4) -> Path:
    """A package-shaped zip whose conformance.json unpacks to `gigabytes` of zeros (written in
    chunks, so that making it takes no memory either)."""
    chunk = b"0" * (1 << 20)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(package.MANIFEST, "{}")
        with archive.open(STATEMENT, "w", force_zip64=True) as member:
            for _ in range(gigabytes * 1024):
                member.write(chunk)
    return target


def garbage(target: Path, size: int = 4096, seed: int = 0) -> Path:
    import random

    target.write_bytes(random.Random(seed).randbytes(size))
    return target


def flipped_signature(source: Path, target: Path) -> Path:
    """The envelope's signature with one character changed."""

    def flip(data: bytes) -> bytes:
        document = json.loads(data)
        sig = document["signatures"][0]["sig"]
        document["signatures"][0]["sig"] = ("A" if sig[0] != "A" else "B") + sig[1:]
        return json.dumps(document).encode()

    return rewritten(source, target, attestation.ENVELOPE, flip)
