"""What a certification body certifies, beyond what verifies: `register --policy POLICY.yaml`
and `verify --keyring K --policy POLICY.yaml`.

    profiles: [day]               # full and day by default
    plans: [pro, business]        # any by default
    strict: true                  # false by default
    suite_versions: ["0.1.0"]     # the register's own by default
    interface_versions: ["1.0.0"] # the register's own by default
    max_age_days: 30              # a run's greatest age when first seen; none by default
    targets: ["*.acme.example"]   # host patterns of the target; any by default

Held to `policy.schema.json` (published as docs/policy-schema.json). A package outside it is
"verified, not certified", with the rule it breaks named ("policy: ..."). Each certificate
records `Policy.sha256`, a digest of the policy's meaning (defaults included).
"""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path

from conformance import __version__, spec, strict_json
from conformance.register.documents import DocumentError, read_yaml, shown, validate

SCHEMA = "policy.schema.json"
DEFAULT_URI = "petstore-conformance:policy/default"
PolicyError = DocumentError


@dataclass(frozen=True)
class Policy:
    uri: str  # the policy's name, for a verification summary: the file's name
    profiles: tuple[str, ...] = ("full", "day")
    plans: tuple[str, ...] | None = None
    strict: bool = False
    suite_versions: tuple[str, ...] = (__version__,)
    interface_versions: tuple[str, ...] | None = None  # None: the register's own
    max_age_days: int | None = None
    targets: tuple[str, ...] | None = None

    @property
    def interfaces(self) -> tuple[str, ...]:
        return self.interface_versions or (spec.spec_version(),)

    @property
    def sha256(self) -> str:
        meaning = {**asdict(self), "interface_versions": self.interfaces}
        del meaning["uri"]
        return hashlib.sha256(strict_json.dumps(meaning, sort_keys=True).encode()).hexdigest()

    def refusal(self, entry, first_seen: datetime.datetime) -> str | None:
        """The rule `entry` (a verified package's) breaks, named; None where it breaks none."""
        for problem in (
            self.profile_problem(entry),
            self.version_problem(entry),
            self.age_problem(entry, first_seen),
            self.target_problem(entry),
        ):
            if problem:
                return f"policy: {problem}"
        return None

    def profile_problem(self, entry) -> str | None:
        if entry.profile not in self.profiles:
            allowed = " or ".join(self.profiles)
            return f"the {shown(entry.profile)} profile does not certify ({allowed} do)"
        if self.plans is not None and entry.plan not in self.plans:
            return f"the {shown(entry.plan)} plan is not one of {', '.join(self.plans)}"
        if self.strict and not entry.strict:
            return "only strict runs certify (SHOULD failures fail)"
        return None

    def version_problem(self, entry) -> str | None:
        if entry.suite_version not in self.suite_versions:
            return (
                f"made with petstore-conformance {shown(entry.suite_version)}, not "
                f"{' or '.join(self.suite_versions)}"
            )
        if entry.interface_version not in self.interfaces:
            return (
                f"checks interface version {shown(entry.interface_version)}, not "
                f"{' or '.join(self.interfaces)}"
            )
        return None

    def age_problem(self, entry, first_seen: datetime.datetime) -> str | None:
        if self.max_age_days is None or entry.started is None:
            return None
        age = first_seen - entry.started
        if age > datetime.timedelta(days=self.max_age_days):
            return f"the run was {age.days} days old when first seen, past {self.max_age_days}"
        return None

    def target_problem(self, entry) -> str | None:
        if self.targets is None:
            return None
        host = host_of(entry.target)
        if host is None or not any(fnmatch.fnmatchcase(host, p.lower()) for p in self.targets):
            return f"the target's host {shown(host)} matches none of {', '.join(self.targets)}"
        return None


def host_of(target: str | None) -> str | None:
    try:
        return urllib.parse.urlsplit(target or "").hostname
    except ValueError:
        return None


DEFAULT = Policy(DEFAULT_URI)


def load(path: Path) -> Policy:
    document = read_yaml(path, "policy")
    document = {} if document is None or document == "" else document
    validate(document, SCHEMA, path, "policy")

    def listed(name: str) -> tuple[str, ...] | None:
        return tuple(document[name]) if name in document else None

    age = document.get("max_age_days")
    return Policy(
        uri=path.name,
        profiles=listed("profiles") or DEFAULT.profiles,
        plans=listed("plans"),
        strict=document.get("strict") == "true",
        suite_versions=listed("suite_versions") or DEFAULT.suite_versions,
        interface_versions=listed("interface_versions"),
        max_age_days=int(age) if age is not None else None,
        targets=listed("targets"),
    )
