"""The body's judgement of one package, the same for `register` and for
`verify PKG --keyring KEYRING.yaml [--policy POLICY.yaml]`:

    judge(path, keyring, policy, now, first_seen=None) -> Entry | str

An Entry for a package that verified (`entry.reason` None for a certificate, else why not,
the policy's rules as "policy: ..."), or the reason it is rejected. In order, each step bounded
before the next trusts more (conformance.register.verifying): screened; the vendor its manifest
names, looked up by its normalised name; the envelope's signature checked with that vendor's
keys valid on `first_seen` (the body's clock when it first registered the package: a key
withdrawn later keeps what it signed before); then `verify`, the signed statement's claims
(conformance.register.entries), revocations, and the policy.
"""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

from conformance.register import entries, names
from conformance.register.entries import Entry, Rejected
from conformance.register.keyring import Keyring, VendorKey
from conformance.register.policy import Policy
from conformance.register.verifying import (
    MAX_PACKAGE_BYTES,
    Refused,
    TooSlow,
    claimed_vendor,
    deadline,
    display_name,
    member,
    screen,
    signed_by,
    signing_keyid,
    unsigned_member,
    verify_package,
)

DEFAULT_VALID_DAYS = 365
MAX_JUNIT_BYTES = 16 * 1024 * 1024


def judge(
    path: Path,
    keyring: Keyring,
    policy: Policy,
    now: datetime.datetime,
    first_seen: datetime.datetime | None = None,
    valid_days: int = DEFAULT_VALID_DAYS,
    revocations: bool = True,
) -> Entry | str:
    """The package's entry, or the reason it is rejected (one line). Never raises for what
    the package holds; it takes `verifying.SECONDS_PER_PACKAGE` at most. The register passes
    `revocations=False`: it keeps a revoked certificate in its history, marked revoked."""
    try:
        with deadline():
            screen(path)
            return judged(path, keyring, policy, now, first_seen or now, valid_days, revocations)
    except (Refused, Rejected, TooSlow) as refused:
        return str(refused)


def file_sha256(path: Path) -> str:
    """sha256 of the (screened, at most 64 MiB) package's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
            if handle.tell() > MAX_PACKAGE_BYTES:
                raise Refused("grew past the size of a package while it was read")
    return digest.hexdigest()


def judged(
    path, keyring: Keyring, policy: Policy, now, first_seen, valid_days, revocations: bool
) -> Entry | str:
    claimed = claimed_vendor(path)
    if not isinstance(claimed, str) or not claimed:
        return "names no vendor (made without --vendor), or is not a package"
    problem = names.problem(claimed)
    if problem:
        return f"names a vendor that {problem}"
    vendor = keyring.named(claimed)
    if vendor is None:
        return f"names the vendor {entries_text(claimed)!r}, who has no key in the keyring"
    key, why = signing_key(path, keyring, vendor, first_seen.date())
    if key is None:
        return why
    altered = unsigned_member(path, signed_by(path, key.path))
    if altered is not None:
        return f"does not verify with the keys of {vendor!r}: {altered} was altered since signed"
    verified = verify_package(path, key.path)
    if verified.status != 0:
        return f"does not verify with the keys of {vendor!r}: {reason_of(verified.lines)}"
    statement = verified.statement
    if keyring.named(statement.get("vendor")) != vendor:
        return "its signed conformance.json names another vendor than its manifest"
    digest = file_sha256(path)
    revoked = keyring.revocation(statement.get("run_id"), digest) if revocations else None
    if revoked is not None:
        return f"certificate revoked on {revoked.date}: {revoked.reason}"
    # The key id only: the keyring's file names are the body's own, not for a public page.
    label = f"key {key.keyid[:16]}, registered for {vendor}"
    found = entries.entry(display_name(path), statement, vendor, label, now)
    junit = member(path, "junit.xml", MAX_JUNIT_BYTES)
    if junit is not None and len(junit) > MAX_JUNIT_BYTES:
        return f"its junit.xml is larger than {MAX_JUNIT_BYTES} bytes"
    disagreement = entries.junit_problem(junit, found)
    if disagreement:
        return disagreement
    found.package_sha256, found.key_fingerprint, found.key_path = digest, key.fingerprint, key.path
    found.policy_sha256 = policy.sha256
    ends = entries.expiry(found, valid_days)
    found.expires = ends.strftime(entries.TIME_FORMAT) if ends else None
    found.reason = entries.why_not_certified(found, statement, now) or policy.refusal(
        found, first_seen
    )
    return found


def entries_text(value: str) -> str:
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def signature_problem(path: Path, key_path: Path) -> str | None:
    signed = signed_by(path, key_path)
    return signed if isinstance(signed, str) else None


def signing_key(
    path: Path, keyring: Keyring, vendor: str, day: datetime.date
) -> tuple[VendorKey | None, str]:
    """The vendor's key, valid on `day`, whose signature the envelope holds; else why none."""
    hint = signing_keyid(path)
    keys = sorted(keyring.vendors[vendor], key=lambda k: k.keyid != hint)
    problem = "no key of the vendor is valid on that day"
    for key in [k for k in keys if k.valid_on(day)]:
        problem = signature_problem(path, key.path)
        if problem is None:
            return key, ""
    for key in [k for k in keys if not k.valid_on(day)]:
        if signature_problem(path, key.path) is None:
            return None, (
                f"signed with a key of {vendor!r} valid from {key.not_before or 'the start'} "
                f"until {key.not_after or 'now'}, not on {day} when the register first saw it"
            )
    other = keyring.by_keyid(hint)
    if other is not None and other.vendor != vendor and signature_problem(path, other.path) is None:
        return None, (
            f"signed with a key of the vendor {other.vendor!r}, not with one of "
            f"{vendor!r}, the vendor it names"
        )
    return None, f"does not verify with the keys of {vendor!r}: {problem}"


def reason_of(lines: list[str]) -> str:
    problems = [line.removeprefix("problem: ") for line in lines if line.startswith("problem: ")]
    return "; ".join(problems[:3]) or (lines[-1] if lines else "verify refused it")
