"""Plans and their request limits, and the `KEY:PLAN` specs that assign a plan to an API key."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    name: str
    per_minute: int
    per_day: int


PLANS = {
    "free": Plan("free", 60, 1_000),
    "pro": Plan("pro", 300, 10_000),
    "business": Plan("business", 1_000, 100_000),
}

# Callers without a valid key are limited per client address, with the free plan's figures.
ANONYMOUS_PLAN = Plan("anonymous", PLANS["free"].per_minute, PLANS["free"].per_day)


class KeySpecError(ValueError):
    """A `KEY:PLAN` spec that cannot be understood; the message says why."""


def parse_key_spec(spec: str) -> tuple[str, Plan]:
    """`KEY:free|pro|business` or `KEY:enterprise:RPM:RPD` -> (key, plan)."""
    parts = spec.strip().split(":")
    key = parts[0]
    if not key or any(ch.isspace() for ch in key):
        raise KeySpecError(f"bad key spec {_redacted(spec)!r}: the key is empty or has blanks")
    if len(parts) == 2 and parts[1].lower() in PLANS:
        return key, PLANS[parts[1].lower()]
    if len(parts) == 4 and parts[1].lower() == "enterprise":
        try:
            per_minute, per_day = int(parts[2]), int(parts[3])
        except ValueError:
            per_minute = per_day = 0
        if per_minute < 1 or per_day < 1:
            raise KeySpecError(
                f"bad key spec {_redacted(spec)!r}: enterprise needs KEY:enterprise:RPM:RPD "
                "with positive whole numbers"
            )
        return key, Plan("enterprise", per_minute, per_day)
    raise KeySpecError(
        f"bad key spec {_redacted(spec)!r}: expected KEY:free, KEY:pro, KEY:business "
        "or KEY:enterprise:RPM:RPD"
    )


def _redacted(spec: str) -> str:
    """The spec with its key hidden: error messages must not print keys."""
    _, sep, rest = spec.strip().partition(":")
    return f"***{sep}{rest}"
