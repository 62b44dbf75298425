"""The keyring a certification body keeps: each vendor's public keys, and what it revoked.

    vendors:
      Acme Pets:
        keys: [keys/acme.pub.pem]        # a PEM file, relative to the keyring, or inline PEM
    revoked:                             # optional: certificates withdrawn, by run id
      - run: 20261127181102-ab3de
        reason: the target was not the production service

Revoking a key is removing it from `keys`: packages signed only with it are rejected from then
on. Every mistake is one line naming the place in the file; a key is never printed.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from conformance import signing_keys as keys

MAX_KEYRING_BYTES = 1024 * 1024
PEM_START = "-----BEGIN"


class KeyringError(ValueError):
    """A keyring that cannot be used; one line."""


@dataclass(frozen=True)
class VendorKey:
    vendor: str
    path: Path  # the PEM file verify reads (an inline key is written to a private file)
    keyid: str  # securesystemslib's key id, the one a DSSE signature names
    label: str  # where it came from, for people: the file, or "inline key 2"
    # STUB of the register contract's names (the intake helper's keyring sets them for real).
    fingerprint: str = ""  # sha256 hex of the key's DER SubjectPublicKeyInfo
    not_before: datetime.date | None = None
    not_after: datetime.date | None = None


@dataclass(frozen=True)
class Revocation:
    """STUB of the register contract's name: a certificate withdrawn, by run id or package."""

    run: str | None
    package_sha256: str | None
    date: datetime.date | None
    reason: str


@dataclass
class Keyring:
    path: Path
    vendors: dict[str, list[VendorKey]]
    revoked: dict[str, str]  # run id: reason
    revocations: list[Revocation] = field(default_factory=list)
    scratch: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    def by_keyid(self, keyid: object) -> VendorKey | None:
        return next((k for ks in self.vendors.values() for k in ks if k.keyid == keyid), None)

    @property
    def sha256(self) -> str:
        """STUB: a digest of the keyring's meaning (vendors, key fingerprints, revocations)."""
        meaning = {
            "vendors": {v: sorted(k.fingerprint for k in ks) for v, ks in self.vendors.items()},
            "revocations": [[r.run, r.package_sha256, str(r.date), r.reason]
                            for r in self.revocations],
        }  # fmt: skip
        return hashlib.sha256(json.dumps(meaning, sort_keys=True).encode()).hexdigest()

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()


def read(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_KEYRING_BYTES + 1)
    except OSError as error:
        raise KeyringError(f"keyring {path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_KEYRING_BYTES:
        raise KeyringError(f"keyring {path}: larger than {MAX_KEYRING_BYTES} bytes")
    try:
        document = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1})" if where else ""
        raise KeyringError(f"keyring {path}: not YAML{at}") from None
    if not isinstance(document, dict) or not isinstance(document.get("vendors"), dict):
        raise KeyringError(f"keyring {path}: no `vendors:` mapping of vendor names to keys")
    unknown = set(document) - {"vendors", "revoked"}
    if unknown:
        raise KeyringError(f"keyring {path}: unknown field {sorted(map(str, unknown))[0]!r}")
    return document


def load(path: Path) -> Keyring:
    document = read(path)
    withdrawn = revocations(path, document.get("revoked"))
    keyring = Keyring(path, {}, {r.run: r.reason for r in withdrawn if r.run}, withdrawn)
    for vendor, entry in document["vendors"].items():
        where = f"keyring {path}: vendor {vendor!r}"
        if not isinstance(vendor, str) or not vendor.strip():
            raise KeyringError(f"keyring {path}: a vendor name must be text, not {vendor!r}")
        given = entry.get("keys") if isinstance(entry, dict) else None
        if not isinstance(given, list) or not given:
            raise KeyringError(f"{where}: no `keys:` list of PEM files or inline PEM keys")
        keyring.vendors[vendor] = [
            vendor_key(keyring, vendor, item, number, where) for number, item in enumerate(given, 1)
        ]
    refuse_shared_keys(keyring)
    return keyring


def vendor_key(keyring: Keyring, vendor: str, item: object, number: int, where: str) -> VendorKey:
    if not isinstance(item, str) or not item.strip():
        raise KeyringError(f"{where}: key {number} is not a file name nor a PEM key")
    if item.lstrip().startswith(PEM_START):
        label, file = f"inline key {number}", inline_file(keyring, item)
    else:
        label, file = item, keyring.path.parent / item
    try:
        key = keys.load_public_key(file)
    except keys.KeyFileError as error:
        # The loader's message names --key and the file; the keyring's names the vendor's entry.
        reason = str(error).partition(": ")[2] if label == item else "not a PEM public key"
        raise KeyringError(f"{where}: key {number} ({label}): {reason}") from None
    return VendorKey(vendor, file, key.keyid, label, fingerprint(file))


def fingerprint(file: Path) -> str:
    """STUB: sha256 hex of the key's DER SubjectPublicKeyInfo."""
    from cryptography.hazmat.primitives import serialization

    public = serialization.load_pem_public_key(keys.read_pem(file, "--key"))
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def inline_file(keyring: Keyring, pem: str) -> Path:
    """Verify reads keys from files: an inline key gets one in a private scratch folder."""
    if keyring.scratch is None:
        keyring.scratch = tempfile.TemporaryDirectory(prefix="psc-keyring-")
    file = Path(keyring.scratch.name) / f"key-{len(list(Path(keyring.scratch.name).iterdir()))}"
    file.write_text(pem.strip() + "\n", encoding="utf-8")
    return file


def refuse_shared_keys(keyring: Keyring) -> None:
    """One key, two vendors: a package signed with it could be either's."""
    owner: dict[str, str] = {}
    for vendor, vendor_keys in keyring.vendors.items():
        for key in vendor_keys:
            other = owner.setdefault(key.keyid, vendor)
            if other != vendor:
                raise KeyringError(
                    f"keyring {keyring.path}: vendors {other!r} and {vendor!r} share the key "
                    f"{key.keyid[:16]}; each vendor signs with keys of its own"
                )


def revocations(path: Path, entries: object) -> list[Revocation]:
    """STUB of the contract's `revoked:` list: `run:` or `package_sha256:`, `date:`, `reason:`."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise KeyringError(f"keyring {path}: `revoked:` must be a list of run ids and reasons")
    found = []
    for number, entry in enumerate(entries, 1):
        entry = entry if isinstance(entry, dict) else {}
        run, package, reason = entry.get("run"), entry.get("package_sha256"), entry.get("reason")
        date = entry.get("date")
        if (
            not (isinstance(run, str) or isinstance(package, str))
            or not isinstance(reason, str)
            or not reason.strip()
            or not (date is None or isinstance(date, datetime.date))
        ):
            raise KeyringError(f"keyring {path}: revoked entry {number} needs `run:` and `reason:`")
        found.append(Revocation(run, package, date, reason))
    return found
