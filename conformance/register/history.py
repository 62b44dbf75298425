"""The register's history: every certificate it ever issued (and, where the body publishes
them, the runs it did not certify), each with its status now, and the log events that say how
it got there.

A record is a dict, as register.json holds it: the entry's facts (conformance.register.entries)
with the package and the key named by their digests and URLs in the site, its page, its
implementation's badge, `first_seen` (the body's clock when it was first registered), its
status (certified, superseded, expired, revoked; "not certified" for a published failure) and
since when, what superseded it, and its revocation (date, reason).

Statuses follow from the records and the clock alone (`settle`), so that a register run with no
upload still expires, supersedes and revokes; `settle` logs each change once.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from conformance.register import names
from conformance.register.entries import TIME_FORMAT, older_suite
from conformance.register.log import Log

REGISTER = "register.json"
CERTIFIED, SUPERSEDED, EXPIRED, REVOKED = "certified", "superseded", "expired", "revoked"
NOT_CERTIFIED = "not certified"
MAX_REGISTER_BYTES = 256 * 1024 * 1024
# Where a record's files may be: a register.json read back names nothing else (a path in it is
# never trusted to stay inside the site).
PLACES = {
    "package": re.compile(r"packages/[0-9a-f]{64}\.zip"),
    "key": re.compile(r"keys/[0-9a-f]{64}\.pem"),
    "page": re.compile(r"certificates/[0-9a-f]{24}\.html"),
    "badge": re.compile(r"badges/[a-z0-9-]+/[a-z0-9-]+\.svg"),
    "summary": re.compile(r"summaries/[0-9a-f]{64}\.intoto\.jsonl"),
}


class Unusable(ValueError):
    """History the register cannot extend, or a revocation of nothing; one line."""


def slug(text: str) -> str:
    """A readable, collision-free file name for a name: its letters, and 8 hex of its sha256
    (two names that read alike still differ)."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    readable = re.sub(r"[^a-z0-9]+", "-", plain).strip("-")[:40] or "x"
    return f"{readable}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def urls(package_sha256: str, fingerprint: str, vendor: str, implementation: str | None):
    """Where a record's files are, in the site: named by digests, the badge by the names."""
    return {
        "package": f"packages/{package_sha256}.zip",
        "key": f"keys/{fingerprint}.pem",
        "page": f"certificates/{package_sha256[:24]}.html",
        # The implementation's name as the register groups it: one badge however it is cased.
        "badge": f"badges/{slug(vendor)}/{slug(names.normalised(implementation or '-'))}.svg",
    }


@dataclass
class History:
    records: list[dict]  # certificates, oldest first
    failures: list[dict]  # verified, not certified, published (--publish-failures)
    log: Log
    keyring_sha256: str | None = None
    policy_sha256: str | None = None
    key_fingerprints: list[str] = field(default_factory=list)  # of the keyring, last run
    body_key: str | None = None  # the body's public key's fingerprint, when it signed

    @classmethod
    def read(cls, folder: Path) -> History:
        """The history a site holds; empty where the folder holds none (a new register)."""
        log = Log.read(folder)
        path = folder / REGISTER
        if not path.is_file():
            return cls([], [], log)
        if path.stat().st_size > MAX_REGISTER_BYTES:
            raise Unusable(f"{path}: larger than {MAX_REGISTER_BYTES} bytes")
        try:
            document = json.loads(path.read_bytes())
            state = document["state"]
            found = cls(document["certificates"], document.get("not_certified", []), log)
            found.keyring_sha256 = state["keyring_sha256"]
            found.policy_sha256 = state["policy_sha256"]
            found.key_fingerprints = list(state["key_fingerprints"])
            found.body_key = state.get("body_key")
            logged = document["log"]
        except (ValueError, KeyError, TypeError):
            raise Unusable(f"{path}: not a register.json this register wrote") from None
        if logged != {"lines": len(log.lines), "head": log.head}:
            raise Unusable(f"{path}: does not go with {folder / 'log.jsonl'} (its head differs)")
        for number, record in enumerate(found.everything(), 1):
            if not in_place(record):
                raise Unusable(f"{path}: entry {number} names a file a register does not write")
        return found

    def known(self, package_sha256: str) -> bool:
        return any(r["package_sha256"] == package_sha256 for r in self.everything())

    def everything(self) -> list[dict]:
        return [*self.records, *self.failures]


def in_place(found: object) -> bool:
    """A record read back names its files where a register writes them, and nowhere else."""
    if not isinstance(found, dict) or not isinstance(found.get("package_sha256"), str):
        return False
    for name, place in PLACES.items():
        value = found.get(name)
        if not (value is None and name == "summary") and not (
            isinstance(value, str) and place.fullmatch(value)
        ):
            return False
    return found["package"] == f"packages/{found['package_sha256']}.zip"


def record(entry, first_seen: str, envelope_sha256: str) -> dict:
    """A newly registered entry, as the history keeps it."""
    made = entry.to_json()
    made.update(urls(entry.package_sha256, entry.key_fingerprint, entry.vendor,
                     entry.implementation))  # fmt: skip
    made.update(
        first_seen=first_seen,
        envelope_sha256=envelope_sha256,
        summary=None,
        status=CERTIFIED if entry.reason is None else NOT_CERTIFIED,
        status_since=first_seen,
        superseded_by=None,
        revoked=None,
    )
    return made


def newest_first(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["time"] or "", r["first_seen"], r["package_sha256"]),
                  reverse=True)  # fmt: skip


def implementations(records: list[dict]) -> dict[tuple, list[dict]]:
    """Each vendor's implementation: its records, newest first."""
    groups: dict[tuple, list[dict]] = {}
    for found in newest_first(records):
        # One implementation however its name is cased or spaced: "Acme Store" and "acme  store"
        # would otherwise stand side by side, each certified.
        named = names.normalised(found["implementation"] or "")
        groups.setdefault((found["vendor"], named), []).append(found)
    return groups


def status_now(found: dict, newer: dict | None, now: datetime.datetime) -> tuple[str, str | None]:
    """(status, the page that superseded it): revoked over superseded over expired."""
    if found["revoked"] is not None:
        return REVOKED, None
    if newer is not None:
        return SUPERSEDED, newer["page"]
    if (found["expires"] or "") < now.strftime(TIME_FORMAT) or older_suite(found["suite_version"]):
        return EXPIRED, None
    return CERTIFIED, None


def revoke(history: History, revocations: list, now: datetime.datetime) -> None:
    """The keyring's revocations applied to the whole history. One that matches no certificate
    ever issued is a mistake the body must see: Unusable."""
    today = now.date()
    for revocation in revocations:
        matched = [
            r for r in history.records if revocation.matches(r["run_id"], r["package_sha256"])
        ]
        if not matched:
            what = f"run {revocation.run}" if revocation.run else (
                f"package {revocation.package_sha256}")  # fmt: skip
            raise Unusable(f"the keyring revokes {what}, which no certificate in the register is")
        for found in matched:
            if found["revoked"] is None:
                found["revoked"] = {"date": str(revocation.date or today),
                                    "reason": revocation.reason}  # fmt: skip


def withdraw(found: dict, reason: str, now: datetime.datetime) -> None:
    """A certificate that no longer holds under the keyring or the policy: revoked, saying why."""
    if found["revoked"] is None:
        found["revoked"] = {"date": str(now.date()), "reason": reason}


def settle(history: History, now: datetime.datetime) -> None:
    """Every record's status now; each change logged once."""
    time = now.strftime(TIME_FORMAT)
    for group in implementations(history.records).values():
        for number, found in enumerate(group):
            newer = group[number - 1] if number else None
            status, by = status_now(found, newer, now)
            if status == found["status"] and by == found["superseded_by"]:
                continue
            found["status"], found["superseded_by"], found["status_since"] = status, by, time
            facts = {"certificate": found["page"], "package_sha256": found["package_sha256"]}
            if status == SUPERSEDED:
                history.log.append(time, "superseded", **facts, by=by)
            elif status == REVOKED:
                history.log.append(time, "revoked", **facts, **found["revoked"])
            elif status == EXPIRED:
                history.log.append(time, "expired", **facts, expires=found["expires"])


def badges(history: History) -> dict[str, tuple[str, str]]:
    """Each implementation's badge: (its status now, interface version), from its newest
    certificate; "not certified" where it has only published failures."""
    found = {}
    for group in implementations(history.failures).values():
        found[group[0]["badge"]] = (NOT_CERTIFIED, group[0]["interface_version"] or "?")
    for group in implementations(history.records).values():
        found[group[0]["badge"]] = (group[0]["status"], group[0]["interface_version"] or "?")
    return found
