"""The keyring a certification body keeps: each vendor's public keys, and what it revoked.

    vendors:
      Acme Pets:
        keys:
          - keys/acme.pub.pem                  # a PEM file, relative to the keyring, or inline PEM
          - file: keys/acme-2025.pub.pem       # or a mapping with the days it is valid
            not_before: 2025-01-01
            not_after: 2026-06-30              # withdrawn from that day
    revoked:                                   # optional: certificates withdrawn
      - run: 20261127181102-ab3de              # or  package_sha256: <64 hex>
        date: 2026-12-01
        reason: the target was not the production service

The file is held to `keyring.schema.json` (published as docs/keyring-schema.json): a field it
does not know is refused, not ignored. One name, one vendor: two names the same once
normalised (conformance.register.names), or that look alike (their UTS #39 skeletons are
equal), are refused; a name over 100 characters is refused, never cut. Every mistake is one
line naming the place in the file; a key is never printed.
"""

from __future__ import annotations

import datetime
import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from conformance import signing_keys as keys
from conformance import strict_json
from conformance.register import names
from conformance.register.documents import DocumentError, read_yaml, shown, validate

PEM_START = "-----BEGIN"
SCHEMA = "keyring.schema.json"
KeyringError = DocumentError  # the name the register's command catches


@dataclass(frozen=True)
class VendorKey:
    vendor: str
    path: Path  # the PEM file verify reads (an inline key is written to a private file)
    keyid: str  # securesystemslib's key id, the one a DSSE signature names
    label: str  # where it came from, for people: the file, or "inline key 2"
    fingerprint: str = ""  # sha256 hex of the key's DER SubjectPublicKeyInfo
    not_before: datetime.date | None = None
    not_after: datetime.date | None = None  # withdrawn from that day

    def valid_on(self, day: datetime.date) -> bool:
        return (self.not_before is None or self.not_before <= day) and (
            self.not_after is None or day < self.not_after
        )


@dataclass(frozen=True)
class Revocation:
    run: str | None
    package_sha256: str | None
    date: datetime.date
    reason: str

    def matches(self, run_id: object, package_sha256: str) -> bool:
        return (self.run is not None and self.run == run_id) or (
            self.package_sha256 is not None and self.package_sha256 == package_sha256
        )


@dataclass
class Keyring:
    path: Path
    vendors: dict[str, list[VendorKey]]  # by the name as written
    revocations: list[Revocation] = field(default_factory=list)
    scratch: tempfile.TemporaryDirectory | None = field(default=None, repr=False)
    _normalised: dict[str, str] = field(default_factory=dict, repr=False)

    def by_keyid(self, keyid: object) -> VendorKey | None:
        return next((k for ks in self.vendors.values() for k in ks if k.keyid == keyid), None)

    def named(self, claimed: object) -> str | None:
        """The vendor, as the keyring writes it, that a package's stated name means: the same
        name once normalised (case, width, white space); None where no vendor is."""
        if names.problem(claimed) is not None:
            return None
        if len(self._normalised) != len(self.vendors):  # built once, for a thousand packages
            self._normalised = {names.normalised(v): v for v in self.vendors}
        return self._normalised.get(names.normalised(claimed))

    def revocation(self, run_id: object, package_sha256: str) -> Revocation | None:
        return next((r for r in self.revocations if r.matches(run_id, package_sha256)), None)

    @property
    def sha256(self) -> str:
        """A digest of the keyring's meaning: vendors, key fingerprints and dates, revocations
        (not its layout, comments or file names)."""
        meaning = {
            "vendors": {
                vendor: sorted(
                    [k.fingerprint, str(k.not_before or ""), str(k.not_after or "")]
                    for k in vendor_keys
                )
                for vendor, vendor_keys in sorted(self.vendors.items())
            },
            "revoked": [[r.run, r.package_sha256, str(r.date), r.reason] for r in self.revocations],
        }
        return hashlib.sha256(strict_json.dumps(meaning, sort_keys=True).encode()).hexdigest()

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()


def load(path: Path) -> Keyring:
    document = read_yaml(path, "keyring")
    validate(document, SCHEMA, path, "keyring")
    keyring = Keyring(path, {}, revocations(path, document.get("revoked", [])))
    try:
        refuse_names_alike(path, list(document["vendors"]))
        for vendor, entry in document["vendors"].items():
            where = f"keyring {path}: vendor {shown(vendor)!r}"
            keyring.vendors[vendor] = [
                vendor_key(keyring, vendor, item, number, where)
                for number, item in enumerate(entry["keys"], 1)
            ]
        refuse_shared_keys(keyring)
    except DocumentError:
        keyring.close()
        raise
    return keyring


def refuse_names_alike(path: Path, vendors: list[str]) -> None:
    """One name, one vendor: no two that read the same, or look the same."""
    seen: dict[str, str] = {}
    for vendor in vendors:
        problem = names.problem(vendor)
        if problem:
            raise DocumentError(f"keyring {path}: the vendor name {shown(vendor)!r} {problem}")
        for key, how in ((names.normalised(vendor), "the same name"), (names.skeleton(vendor), "")):
            other = seen.setdefault(how + key, vendor)
            if other != vendor:
                alike = how or "names that look alike (UTS #39 confusables)"
                raise DocumentError(
                    f"keyring {path}: {shown(other)!r} and {shown(vendor)!r} are {alike}; "
                    "one name, one vendor"
                )


def day(text: object, path: Path, where: str) -> datetime.date | None:
    if text is None:
        return None
    try:
        return datetime.date.fromisoformat(str(text))
    except ValueError:
        raise DocumentError(f"keyring {path}: {where}: {shown(text)!r} is no day") from None


def vendor_key(keyring: Keyring, vendor: str, item: object, number: int, where: str) -> VendorKey:
    dated = item if isinstance(item, dict) else {"file": item}
    given = dated["file"]
    if not given.strip():
        raise DocumentError(f"{where}: key {number} is not a file name nor a PEM key")
    not_before = day(dated.get("not_before"), keyring.path, f"{where}: key {number}: not_before")
    not_after = day(dated.get("not_after"), keyring.path, f"{where}: key {number}: not_after")
    if not_before and not_after and not_after <= not_before:
        raise DocumentError(f"{where}: key {number}: not_after is not after not_before")
    if given.lstrip().startswith(PEM_START):
        label, file = f"inline key {number}", inline_file(keyring, given)
    else:
        label, file = given, keyring.path.parent / given
    try:
        key = keys.load_public_key(file)
    except keys.KeyFileError as error:
        # The loader's message names --key and the file; the keyring's names the vendor's entry.
        reason = str(error).partition(": ")[2] if label == given else "not a PEM public key"
        raise DocumentError(f"{where}: key {number} ({shown(label)}): {reason}") from None
    return VendorKey(vendor, file, key.keyid, label, fingerprint(file), not_before, not_after)


def fingerprint(file: Path) -> str:
    """sha256 of the key's DER SubjectPublicKeyInfo (`openssl pkey -pubin -outform DER`)."""
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
                raise DocumentError(
                    f"keyring {keyring.path}: vendors {shown(other)!r} and {shown(vendor)!r} "
                    f"share the key {key.keyid[:16]}; each vendor signs with keys of its own"
                )


def revocations(path: Path, entries: list[dict]) -> list[Revocation]:
    found = []
    for number, entry in enumerate(entries, 1):
        when = day(entry["date"], path, f"revoked entry {number}: date")
        run, digest = entry.get("run"), entry.get("package_sha256")
        found.append(Revocation(run, digest, when, entry["reason"]))
    return found
