"""The three X-RateLimit-* headers read as LIM-HEADERS-VALID reads them: whole numbers (Reset may
carry a fraction of a second), non-negative, Remaining no more than Limit. Shared by the checks
(conformance.judging.response_checks) and by pacing (conformance.httpclient.receiving), which
takes no value that fails them for a window spent."""

from __future__ import annotations

import re
from typing import Protocol

RATE_LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
INTEGER = re.compile(r"^\s*\d+\s*$")
DECIMAL = re.compile(r"^\s*\d+(\.\d+)?\s*$")


class HasHeaders(Protocol):
    def header(self, name: str) -> str | None: ...


def header_number(text: str | None, *, fraction: bool = False) -> float | None:
    """A header value as a non-negative number: an integer, or, where `fraction`, a decimal."""
    if text is None:
        return None
    pattern = DECIMAL if fraction else INTEGER
    return float(text) if pattern.match(text) else None


def rate_limit_values(exchange: HasHeaders) -> dict[str, float] | None:
    """The three headers as numbers (Reset may carry a fraction of a second), or None where any
    is missing or malformed."""
    values = {}
    for name in RATE_LIMIT_HEADERS:
        value = header_number(exchange.header(name), fraction=name == "X-RateLimit-Reset")
        if value is None:
            return None
        values[name] = value
    return values


def header_problems(exchange: HasHeaders) -> list[str]:
    """What is wrong with each of the three headers, naming the header and the value."""
    problems = []
    for name in RATE_LIMIT_HEADERS:
        text = exchange.header(name)
        if header_number(text, fraction=name == "X-RateLimit-Reset") is None:
            kind = "a Unix time in seconds" if name == "X-RateLimit-Reset" else "a whole number"
            problems.append(f"{name} must be {kind} (non-negative), got {text!r}")
    values = rate_limit_values(exchange)
    if values and values["X-RateLimit-Remaining"] > values["X-RateLimit-Limit"]:
        problems.append(
            f"X-RateLimit-Remaining ({exchange.header('X-RateLimit-Remaining')!r}) must not "
            f"exceed X-RateLimit-Limit ({exchange.header('X-RateLimit-Limit')!r})"
        )
    return problems


def invalid_value(exchange: HasHeaders) -> bool:
    """Whether a rate-limit header the response carries fails LIM-HEADERS-VALID (a missing one
    is LIM-HEADERS-PRESENT's): such a response says nothing of how much its window has left."""
    present = [name for name in RATE_LIMIT_HEADERS if exchange.header(name) is not None]
    return any(name in problem for problem in header_problems(exchange) for name in present)
