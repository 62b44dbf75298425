"""What the register keeps of a package: a small summary of its signed statement (never the
statement itself, so that a thousand packages take little memory), in the register's words."""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from conformance import __version__

CERTIFYING_PROFILES = ("full", "day")
LONGEST = 200  # characters kept of any text a package states
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def text(value: object, longest: int = LONGEST) -> str | None:
    """A stated text, cut to `longest` characters; None where it is not text."""
    return value[:longest] if isinstance(value, str) else None


def texts(value: object) -> list[str]:
    return [text(v) or "?" for v in value[:100]] if isinstance(value, list) else []


@dataclass
class Entry:
    package: str  # the file as it was given
    vendor: str
    implementation: str | None
    verdict: str | None
    result: str | None
    profile: str | None
    plan: str | None
    strict: bool
    suite_version: str | None
    interface_version: str | None
    time: str | None
    target: str | None
    run_id: str | None
    warned: list[str]
    failed: list[str]
    key: str  # the registered key that verified it
    package_sha256: str = ""  # sha256 hex of the package file's bytes
    key_fingerprint: str = ""  # the verifying VendorKey.fingerprint
    key_path: Path | None = None  # the verifying key's PEM file (not in to_json)
    policy_sha256: str | None = None
    expires: str | None = None
    reason: str | None = None  # why it is not certified
    superseded_by: str | None = None
    slug: str = field(default="")

    def to_json(self) -> dict:
        """What the register publishes: no path of the body's machine (the package and the key
        are named by their digests; conformance.register.history adds their URLs)."""
        fields = asdict(self)
        for private in ("slug", "package", "key_path"):
            del fields[private]
        return fields


def entry(package: str, statement: dict, key: str, valid_days: int, now: datetime.datetime):
    """The entry of a verified package, with why it is not a certificate (None when it is)."""
    found = Entry(
        package=package,
        vendor=text(statement.get("vendor")) or "?",
        implementation=text(statement.get("implementation")),
        verdict=text(statement.get("verdict"), 40),
        result=text(statement.get("result"), 40),
        profile=text(statement.get("profile"), 40),
        plan=text(statement.get("plan"), 40),
        strict=statement.get("strict") is True,
        suite_version=text(statement.get("suite_version"), 40),
        interface_version=text(statement.get("spec_version"), 40),
        time=text(statement.get("time"), 40),
        target=text(statement.get("target"), 500),
        run_id=text(statement.get("run_id"), 100),
        warned=texts(statement.get("warned_requirements")),
        failed=texts(statement.get("failed_requirements")),
        key=key,
    )
    found.slug = hashlib.sha256(f"{found.vendor}\0{found.run_id}\0{package}".encode()).hexdigest()
    found.slug = found.slug[:20]
    started = parse_time(found.time)
    if started is not None:
        found.expires = (started + datetime.timedelta(days=valid_days)).strftime(TIME_FORMAT)
    found.reason = why_not_certified(found, statement, started, now)
    return found


def parse_time(value: str | None) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(value or "", TIME_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def why_not_certified(
    found: Entry, statement: dict, started: datetime.datetime | None, now: datetime.datetime
) -> str | None:
    if found.verdict != "conformant" or statement.get("exit_status") != 0:
        failed = f": failed {', '.join(found.failed)}" if found.failed else ""
        return f"the run's verdict is {found.result or found.verdict or 'not stated'}{failed}"
    if found.profile not in CERTIFYING_PROFILES:
        return f"the {found.profile} profile does not certify (full or day do)"
    if statement.get("bundled_reference") is True:
        return "a run of the bundled reference, not of the vendor's implementation"
    if started is None:
        return "the statement states no time it was made"
    if found.expires and found.expires < now.strftime(TIME_FORMAT):
        return f"expired on {found.expires}"
    if newer_suite(found.suite_version):
        return f"expired: made with petstore-conformance {found.suite_version}, now {__version__}"
    return None


def newer_suite(version: str | None) -> bool:
    """A released suite version after the one that made the run ends its certificate."""
    try:
        return Version(__version__) > Version(version or "")
    except InvalidVersion:
        return True


def supersede(entries: list[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(current, superseded): the newest entry of each vendor's implementation stands."""
    newest: dict[tuple, Entry] = {}
    superseded = []
    for found in sorted(entries, key=lambda e: (e.time or "", e.run_id or ""), reverse=True):
        standing = newest.setdefault((found.vendor, found.implementation), found)
        if standing is not found:
            found.superseded_by = standing.run_id
            superseded.append(found)
    return list(newest.values()), superseded
