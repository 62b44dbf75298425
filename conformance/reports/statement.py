"""`conformance.json`: the machine-readable conformance statement of one run."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from conformance import __version__, spec, strict_json
from conformance.judging.verdict import RequirementOutcome, Verdict

if TYPE_CHECKING:
    from conformance.run import Run

MAX_EVIDENCE = 3


def iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def peak_memory_bytes() -> int | None:
    """The checker process's peak resident memory so far: what `history` charts night by night
    (a run that grows is seen before it is killed). None where the platform does not say."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def evidence(outcome: RequirementOutcome) -> list[dict]:
    return [
        {
            "test": failure.test_id,
            "message": failure.message,
            "exchange": failure.exchange.to_dict() if failure.exchange else None,
            "curl": failure.exchange.curl() if failure.exchange else None,
        }
        for failure in outcome.failures[:MAX_EVIDENCE]
    ]


def basis_entry(basis: spec.Basis) -> dict:
    return {"source": basis.source, "words": basis.words}


def requirement_entry(outcome: RequirementOutcome) -> dict:
    requirement = outcome.requirement
    entry = {
        "id": requirement.id,
        "level": requirement.level,
        "section": requirement.section,
        "statement": requirement.statement,
        "outcome": outcome.outcome,
        "checks": outcome.checks,
        "failed_checks": len(outcome.failures),
        "tests": outcome.tests,
        "evidence": evidence(outcome),
    }
    # What makes it a MUST: the document's words or an RFC's. A SHOULD without one says why it
    # is no more than a SHOULD instead (its rationale), rather than a basis of null.
    if requirement.basis is not None:
        entry["basis"] = basis_entry(requirement.basis)
    elif requirement.rationale:
        entry["rationale"] = requirement.rationale
    if outcome.reason:
        entry["reason"] = outcome.reason
    if outcome.blocked_by:
        entry["blocked_by"] = outcome.blocked_by
    if outcome.untested_cases:
        entry["untested_cases"] = outcome.untested_cases
    if outcome.hints:
        entry["hints"] = outcome.hints
    return entry


def statement(
    run: Run, verdict: Verdict, finished_at: float, additions: dict | None = None
) -> dict:
    """`additions` (the baseline's lists, the comparison) go in, replacing same-named fields."""
    settings = run.settings
    document = {
        "suite": "petstore-conformance",
        "suite_version": __version__,
        "role": "server",  # what was judged: a server (this), or a client (conformance.client_mode)
        "spec_version": spec.spec_version(),
        "spec_sha256": spec.openapi_sha256(),
        "interface_sha256": spec.interface_sha256(),
        # Who states it, and of what (--vendor, --implementation): a register's key lookup.
        "vendor": settings.vendor,
        "implementation": settings.implementation,
        "target": settings.base_url,
        "bundled_reference": run.reference is not None,
        # The proxy, the CAs trusted, whether the certificate was verified at all, its facts.
        "connection": run.connection_fields(),
        # A target may serve this name better than others: what was certified is how it
        # answered a client calling itself so.
        "user_agent": settings.user_agent,
        "plan": settings.plan,
        "plan_limits": {
            "requests_per_minute": settings.plan_limits[0],
            "requests_per_day": settings.plan_limits[1],
        },
        "profile": settings.profile,
        "strict": settings.strict,
        "seed": settings.seed,
        "run_id": settings.run_id,
        "time": iso(run.started_at),
        "finished": iso(finished_at),
        "verdict": verdict.verdict,
        "exit_status": verdict.exit_status,
        "reason": verdict.reason,
        "warnings": run.warnings,
        "requests": {
            "total": run.client.requests_sent,
            "budget": settings.budget,
            "per_key": run.client.requests_per_key(),
            # What the run cost in time: seconds each key sat out limits and back-off.
            "seconds_waited_per_key": {
                label: round(seconds, 1)
                for label, seconds in run.client.seconds_waited_per_key().items()
            },
        },
        "peak_memory_bytes": peak_memory_bytes(),
        # What the target could cost the run at most (conformance.httpclient.bounds, --deadline).
        "bounds": run.bounds(),
        "name_prefix": settings.name_prefix,
        "created_categories": run.created_categories,
        "requirements": [requirement_entry(outcome) for outcome in verdict.outcomes],
        "failed_requirements": verdict.failed_requirements,
        "warned_requirements": verdict.warned_requirements,
    }
    document.update(additions or {})
    return document


def write(path: Path, run: Run, verdict: Verdict, additions: dict | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = statement(run, verdict, time.time(), additions)
    text = strict_json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
