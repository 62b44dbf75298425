"""STUB of the register contract's policy (the intake helper owns this module; on merge, take
theirs): `load(path) -> Policy`, `DEFAULT`, `Policy.sha256`, `Policy.uri`, and
`Policy.refusal(entry, first_seen)`, the rule a verified run breaks (None where none).

    profiles: [day]        # the profiles that certify (default: full and day)
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

MAX_POLICY_BYTES = 64 * 1024


class PolicyError(ValueError):
    """A policy file that cannot be used; one line."""


@dataclass(frozen=True)
class Policy:
    uri: str
    sha256: str
    profiles: tuple[str, ...]

    def refusal(self, entry, first_seen: datetime.datetime) -> str | None:
        if entry.profile not in self.profiles:
            allowed = ", ".join(self.profiles)
            return f"policy: the {entry.profile} profile does not certify ({allowed} do)"
        return None


DEFAULT = Policy(
    "petstore-conformance:default-policy",
    hashlib.sha256(b"profiles: [full, day]\n").hexdigest(),
    ("full", "day"),
)


def load(path: Path) -> Policy:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_POLICY_BYTES + 1)
        document = yaml.safe_load(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        raise PolicyError(f"policy {path}: cannot read it as YAML") from None
    profiles = document.get("profiles") if isinstance(document, dict) else None
    if len(data) > MAX_POLICY_BYTES or not isinstance(profiles, list) or not profiles:
        raise PolicyError(f"policy {path}: no `profiles:` list")
    return Policy(path.name, hashlib.sha256(data).hexdigest(), tuple(map(str, profiles)))
