"""What the console says at the end of a run: one block per failed requirement, then what was
warned, what was not tested and why. pytest's per-test detail stays with `-v` and the HTML
report; a vendor reads this first.

Every line is plain text a terminal and a CI log show as it is: control characters are written
as escapes, and exchanges are already redacted by the client.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from conformance.judging.checks import CheckResult
from conformance.judging.verdict import RequirementOutcome, Verdict

if TYPE_CHECKING:
    from conformance.httpclient.client import Exchange
    from conformance.run import Run

RATE_LIMIT = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
# The response headers that matter to each rule, shown with the first evidence.
HEADERS: dict[str, tuple[str, ...]] = {
    "LIM-RESET-UNIX-TIME": ("X-RateLimit-Reset", "Date"),
    "LIM-RESET-HONEST": ("X-RateLimit-Reset", "Date"),
    "LIM-RETRY-AFTER": ("Retry-After", "Date"),
    "LIM-RETRY-AFTER-HONEST": ("Retry-After", "Date"),
    "AUTH-WWW-AUTHENTICATE": ("WWW-Authenticate",),
    "EP-PETS-EXISTS": ("Deprecation", "Sunset"),
    "DEP-SUNSET-FUTURE": ("Deprecation", "Sunset", "Date"),
}
HEADERS_BY_PREFIX = {
    "LIM-": RATE_LIMIT,
    "DEP-": ("Deprecation", "Sunset"),
    "CLI-": ("Retry-After", "X-RateLimit-Remaining", "X-RateLimit-Reset"),
}
DEFAULT_HEADERS = ("Content-Type",)
SHARED_REASON = 4  # this many not-tested requirements with one reason share a line
NOT_SHOWN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """`text` on one line with no control characters: never a raw NUL in a log."""
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return NOT_SHOWN.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def headers_for(requirement_id: str) -> tuple[str, ...]:
    if requirement_id in HEADERS:
        return HEADERS[requirement_id]
    for prefix, names in HEADERS_BY_PREFIX.items():
        if requirement_id.startswith(prefix):
            return names
    return DEFAULT_HEADERS


def failed_outcomes(verdict: Verdict) -> list[RequirementOutcome]:
    """In catalogue order, but a cause that explains whole responses (a limiter in front of the
    service) first: it is what the vendor must read first."""
    failed = [outcome for outcome in verdict.outcomes if outcome.outcome == "failed"]
    return sorted(failed, key=lambda o: not any(f.whole_response for f in o.failures))


def failure_blocks(verdict: Verdict) -> list[list[str]]:
    """One block of lines per failed requirement, in catalogue order."""
    return [requirement_block(outcome) for outcome in failed_outcomes(verdict)]


def requirement_block(outcome: RequirementOutcome) -> list[str]:
    requirement = outcome.requirement
    failures = outcome.failures
    tests = sorted({failure.test_id for failure in failures})
    lines = [
        f"{requirement.id} ({requirement.level}): {len(failures)} of {outcome.checks} checks "
        f"failed, in {len(tests)} test{'s' if len(tests) != 1 else ''}",
        *basis_lines(outcome),
    ]
    first = first_evidence(outcome)
    lines.append(f"  failed: {plain(first.message)}")
    if first.exchange is not None:
        lines += evidence_lines(first, outcome)
    lines += [f"  hint: {plain(hint)}" for hint in outcome.hints]
    if first.exchange is not None:
        lines.append(f"  reproduce: {plain(first.exchange.curl())}")
    more = f" and {len(tests) - 1} more (-v, or the HTML report)" if len(tests) > 1 else ""
    lines.append(f"  first seen in: {first.test_id}{more}")
    return lines


def first_evidence(outcome: RequirementOutcome) -> CheckResult:
    """The first failure with an exchange, from a test the catalogue names for the requirement
    where there is one: its request is made to show that rule, so it is the plainest."""
    failures = outcome.failures
    shown = [f for f in failures if f.exchange is not None] or failures
    named = [f for f in shown if f.test_id.split("[", 1)[0] in outcome.requirement.tests]
    return (named or shown)[0]


def basis_lines(outcome: RequirementOutcome) -> list[str]:
    """What makes the requirement what it is: the document's or an RFC's words (a MUST's
    basis), else the quote a SHOULD rests on, else its statement."""
    requirement = outcome.requirement
    lines = []
    if requirement.basis is not None:
        lines.append(f"  basis: {plain(requirement.basis.cited())} ({requirement.section})")
    elif requirement.quote:
        lines.append(f'  basis: "{plain(requirement.quote)}" ({requirement.section})')
    else:
        lines.append(f"  basis: {requirement.section}: {plain(requirement.statement)}")
    if requirement.rationale:
        lines.append(f"  why: {plain(requirement.rationale)}")
    return lines


def evidence_lines(failure: CheckResult, outcome: RequirementOutcome) -> list[str]:
    exchange: Exchange = failure.exchange
    names = list(headers_for(failure.requirement_id))
    if any("intermediary" in hint for hint in outcome.hints):
        names = ["Server", "Content-Type", *names]
    lines = [f"  evidence: {plain(exchange.summary())}"]
    for name in dict.fromkeys(names):
        values = exchange.header_values(name)
        shown = ", ".join(values) if values else "(absent)"
        lines.append(f"    {name}: {plain(shown)}")
    return lines


def untested_lines(untested: list[RequirementOutcome]) -> list[str]:
    """One line each, but one line for many that share a reason (the smoke profile, say)."""
    by_reason: dict[str, list[RequirementOutcome]] = {}
    for outcome in untested:
        by_reason.setdefault(outcome.reason or "", []).append(outcome)
    lines = []
    for reason, outcomes in by_reason.items():
        if len(outcomes) >= SHARED_REASON:
            ids = ", ".join(o.requirement.id for o in outcomes)
            lines.append(f"  {len(outcomes)} requirements, {reason}: {ids}")
        else:
            lines += [f"  {o.requirement.id} ({o.requirement.level}): {reason}" for o in outcomes]
    return lines


def closing_lines(run: Run, verdict: Verdict) -> list[str]:
    """Warned and not-tested requirements, with their reasons; what the run created."""
    lines = verdict_lines(verdict)
    if run.created_categories:
        lines.append(
            f"created {len(run.created_categories)} categories, every name starting "
            f"{run.settings.name_prefix!r} (listed in the report; the interface has no DELETE)"
        )
    return lines


def verdict_lines(verdict: Verdict) -> list[str]:
    """Warned and not-tested requirements, with their reasons (servers' runs and clients')."""
    lines = []
    warned = [o for o in verdict.outcomes if o.outcome == "warned"]
    if warned:
        lines.append("warned (SHOULD; a failure under --strict):")
        lines += [f"  {o.requirement.id}: {plain(o.failures[0].message)}" for o in warned]
    untested = [
        o for o in verdict.outcomes if o.outcome == "not-tested" and not o.requirement.not_testable
    ]
    partly = [o for o in verdict.outcomes if o.untested_cases and o.outcome != "not-tested"]
    if untested or partly:
        lines.append("not tested:")
        lines += untested_lines(untested)
        lines += [
            f"  {o.requirement.id} ({o.requirement.level}), {o.outcome} but for one case: {case}"
            for o in partly
            for case in o.untested_cases
        ]
    by_nature = [o.requirement.id for o in verdict.outcomes if o.requirement.not_testable]
    if by_nature:
        lines.append(
            f"not testable over HTTP: {', '.join(by_nature)} (the reasons are in the report)"
        )
    return lines
