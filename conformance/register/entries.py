"""What the register keeps of a package: a small summary of its signed statement (never the
statement itself, so that a thousand packages take little memory), in the register's words,
and the claims it makes held to what the register knows.

Every field is read defensively: a text that is not text is None, a text over its bound or
holding a lone surrogate rejects the package (`Rejected`, never cut: two names cut at one
length can become one). The claims: the run's time is a UTC time, not after the body's clock
by more than `CLOCK_SKEW`, nor before `INTERFACE_SINCE`; the `result` words follow from the
verdict and exit status (the verdict shown is the verdict's, never free text); the signed
junit.xml agrees with a conformant conformance.json. What is not this register's (another
suite, interface version or description) verifies but does not certify, the reason named.
"""

from __future__ import annotations

import datetime
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from conformance import __version__, spec
from conformance.judging.verdict import CONFORMANT, EXIT_STATUS, NO_VERDICT

CERTIFYING_PROFILES = ("full", "day")
LONGEST = 200  # characters of a text a package states, unless said otherwise
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
CLOCK_SKEW = datetime.timedelta(minutes=10)
"""How far after the body's clock a run may be dated: clocks differ, not by days."""
INTERFACE_SINCE = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
"""The interface v1 document states no date of its own: this is the day its description
(spec/openapi.yaml, spec/interface.md's source) entered this suite. No run checked it before."""
# The run's result in words that agree with its exit status (conformance.evidence.conclusion).
EXCUSED = "not conformant, every failure expected"
BASELINE_OUT_OF_DATE = "conformant, but the expected failures are out of date"


class Rejected(Exception):
    """A claim that rules the package out of the register; one line."""


def text(value: object, longest: int = LONGEST, name: str = "a text") -> str | None:
    """A stated text; None where it is not text; Rejected where over `longest` characters or
    not Unicode (a lone surrogate)."""
    if not isinstance(value, str):
        return None
    if len(value) > longest:
        raise Rejected(f"states {name} longer than {longest} characters")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise Rejected(f"states {name} holding a lone surrogate, which is no character")
    return value


def texts(value: object, name: str) -> list[str]:
    if not isinstance(value, list):
        return []
    if len(value) > 1000:
        raise Rejected(f"states more than 1000 {name}")
    return [text(v, 100, name) or "?" for v in value]


@dataclass
class Entry:
    package: str  # the file as it was given
    vendor: str  # the keyring's name of the vendor the signing key is registered for
    implementation: str | None
    verdict: str | None
    result: str | None  # the verdict in words that agree with the exit status: never free text
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
    package_sha256: str = ""
    key_fingerprint: str = ""
    key_path: Path | None = None  # the verifying key's PEM file: the body's, not published
    policy_sha256: str | None = None

    @property
    def started(self) -> datetime.datetime | None:
        return parse_time(self.time)

    def to_json(self) -> dict:
        """What the register publishes: no path of the body's machine (the package and the key
        are named by their digests; conformance.register.history adds their URLs)."""
        fields = asdict(self)
        for private in ("package", "key_path"):
            del fields[private]
        return fields


def entry(package: str, statement: dict, vendor: str, key: str, now: datetime.datetime) -> Entry:
    """The entry of a verified package (reason not yet judged); Rejected where a claim rules
    the package out."""
    verdict = text(statement.get("verdict"), 40, "a verdict")
    exit_status = statement.get("exit_status")
    found = Entry(
        package=package,
        vendor=vendor,
        implementation=text(statement.get("implementation"), 200, "an implementation"),
        verdict=verdict,
        result=result_of(verdict, exit_status),
        profile=text(statement.get("profile"), 40, "a profile"),
        plan=text(statement.get("plan"), 40, "a plan"),
        strict=statement.get("strict") is True,
        suite_version=text(statement.get("suite_version"), 40, "a suite version"),
        interface_version=text(statement.get("spec_version"), 40, "an interface version"),
        time=text(statement.get("time"), 40, "a time"),
        target=text(statement.get("target"), 2000, "a target"),
        run_id=text(statement.get("run_id"), 100, "a run id"),
        warned=texts(statement.get("warned_requirements"), "warned requirements"),
        failed=texts(statement.get("failed_requirements"), "failed requirements"),
        key=key,
    )
    stated = text(statement.get("result"), 100, "a result")
    if stated is not None and stated != found.result:
        raise Rejected(
            f"its result {stated!r} does not follow from its verdict and exit status "
            f"({found.result})"
        )
    check_time(found.time, now)
    return found


def result_of(verdict: str | None, exit_status: object) -> str:
    """The words conformance.evidence.conclusion writes for this verdict and exit status."""
    if verdict in EXIT_STATUS and exit_status == EXIT_STATUS[verdict]:
        return verdict
    if exit_status == 0:
        return EXCUSED
    if exit_status == 1:
        return BASELINE_OUT_OF_DATE
    return NO_VERDICT


def parse_time(value: str | None) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(value or "", TIME_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def check_time(stated: str | None, now: datetime.datetime) -> None:
    """Dates compared as dates: a run from the future, or from before the interface, is none."""
    started = parse_time(stated)
    if started is None:
        raise Rejected("states no time it was made, or one that is not YYYY-MM-DDTHH:MM:SSZ")
    if started > now + CLOCK_SKEW:
        raise Rejected(
            f"dated {stated}, after the register's clock "
            f"({now.strftime(TIME_FORMAT)}) by more than {CLOCK_SKEW.seconds // 60} minutes"
        )
    if started < INTERFACE_SINCE:
        raise Rejected(
            f"dated {stated}, before the interface it checks existed ({INTERFACE_SINCE.date()})"
        )


def expiry(found: Entry, valid_days: int) -> datetime.datetime | None:
    try:
        return found.started + datetime.timedelta(days=valid_days) if found.started else None
    except OverflowError:
        return None


def why_not_certified(found: Entry, statement: dict, now: datetime.datetime) -> str | None:
    """Why a verified package is no certificate, before the policy; None where it is one."""
    if found.verdict != CONFORMANT or statement.get("exit_status") != 0:
        failed = f": failed {', '.join(found.failed)}" if found.failed else ""
        return f"the run's verdict is {found.verdict or 'not stated'}{failed}"
    if statement.get("bundled_reference") is True:
        return "a run of the bundled reference, not of the vendor's implementation"
    if (
        statement.get("spec_sha256") != spec.openapi_sha256()
        or statement.get("interface_sha256") != spec.interface_sha256()
    ):
        return (
            "checked against another interface description: its openapi.yaml or interface.md "
            "sha256 is not this register's"
        )
    if older_suite(found.suite_version):
        return f"expired: made with petstore-conformance {found.suite_version}, now {__version__}"
    ends = found.expires and parse_time(found.expires)
    if ends and ends < now:
        return f"expired on {found.expires}"
    return None


def older_suite(version: str | None) -> bool:
    """A released suite version after the one that made the run ends its certificate."""
    try:
        return Version(__version__) > Version(version or "")
    except InvalidVersion:
        return False  # not a version at all: the policy names it


def junit_problem(data: bytes | None, found: Entry) -> str | None:
    """The signed junit.xml must not record failures beside a conformant conformance.json."""
    if data is None or found.verdict != CONFORMANT:
        return None
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return "its junit.xml declares a document type, which the checker's never does"
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError, RecursionError):
        return "its junit.xml is not XML"
    failing = sum(1 for e in root.iter() if e.tag in ("failure", "error"))
    if failing:
        return (
            f"its signed junit.xml records {failing} failure(s) or error(s), where its "
            "conformance.json says conformant: the reports disagree"
        )
    return None
