"""From the checks of a run to one outcome per requirement, a verdict and an exit status."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.judging import causes
from conformance.judging.checks import CheckResult
from conformance.spec import Requirement, catalogue

CONFORMANT = "conformant"
NOT_CONFORMANT = "not conformant"
NO_VERDICT = "no verdict"
EXIT_STATUS = {CONFORMANT: 0, NOT_CONFORMANT: 1, NO_VERDICT: 2}
STOPPED_EARLY = "; stopped early, the rest not tested: "
"""What a decided run's reason says after its failures where it stopped early, and why."""


@dataclass
class RequirementOutcome:
    requirement: Requirement
    outcome: str  # passed / failed / warned / not-tested
    checks: int = 0
    failures: list[CheckResult] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    reason: str | None = None  # why it was not tested
    blocked_by: list[str] = field(default_factory=list)  # failed requirements it needed
    untested_cases: list[str] = field(default_factory=list)  # cases left out, with reasons
    hints: list[str] = field(default_factory=list)  # likely causes of a failure (hints.py)


@dataclass
class Verdict:
    verdict: str
    outcomes: list[RequirementOutcome]
    reason: str | None = None  # why there is no verdict, or what decided it
    # Why there would be no verdict were the failures excused (by an expected-failures file).
    undecided: str | None = None

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    @property
    def failed_requirements(self) -> list[str]:
        return [o.requirement.id for o in self.outcomes if o.outcome == "failed"]

    @property
    def warned_requirements(self) -> list[str]:
        return [o.requirement.id for o in self.outcomes if o.outcome == "warned"]


def outcome_of(
    requirement: Requirement, results: list[CheckResult], strict: bool, untested_reason: str
) -> RequirementOutcome:
    failures = [result for result in results if not result.passed]
    tests = sorted({result.test_id for result in results})
    if failures:
        failed = requirement.level == "MUST" or strict
        outcome = "failed" if failed else "warned"
    elif results:
        outcome = "passed"
    else:
        outcome = "not-tested"
    reason = None
    if outcome == "not-tested":
        reason = requirement.not_testable or untested_reason
    checked = sum(result.times for result in results)
    return RequirementOutcome(requirement, outcome, checked, failures, tests, reason)


def decide(
    results: list[CheckResult],
    *,
    strict: bool = False,
    profile: str = "full",
    no_verdict_reason: str | None = None,
    untested_reason: str = "no test of this run checked it",
    unavailable: dict[str, str] | None = None,
    cannot_check: dict[str, str] | None = None,
    left_open: dict[str, str] | None = None,
    skipped_cases: dict[str, list[str]] | None = None,
    role: str = "server",
    unproven: dict[str, str] | None = None,
) -> Verdict:
    """MUST failures decide "not conformant" even when the run was cut short (`no_verdict_reason`
    says why; the reason names it beside the failures); otherwise a run cut short, or a full
    run that could not check every testable MUST requirement, has no verdict. `unavailable`
    names requirements this run's inputs cannot check (no spare key, say), and why;
    `cannot_check` those a test found it could not check against this target, and why;
    `left_open` those a test could have checked and did not, and why (they stay unchecked);
    `unproven` those whose check began and could not finish, and why: passed elsewhere, they
    stay unchecked all the same (a failure still fails them).
    `role` picks the requirements judged: a server's, or a client's (conformance.client_mode).

    One cause, one requirement (conformance.judging.causes): a failure that a more specific one on
    the same response explains does not count, and a requirement never judged because one it needs
    failed is "not tested", blocked by that one."""
    excused = {**(cannot_check or {}), **(unavailable or {})}
    settled = causes.settle(results)
    by_id: dict[str, list[CheckResult]] = {id_: [] for id_ in catalogue(role)}
    for result in settled.kept:
        by_id[result.requirement_id].append(result)
    outcomes = [
        outcome_of(
            requirement,
            by_id[requirement.id],
            strict,
            excused.get(requirement.id, (left_open or {}).get(requirement.id, untested_reason)),
        )
        for requirement in catalogue(role).values()
    ]
    # What the run was not given says most; else what failed before it, else the test's reason.
    ran = {result.test_id.split("[", 1)[0] for result in results}
    note_blocked(outcomes, settled.displaced, ran, exempt=set(unavailable or {}))
    for outcome in outcomes:
        doubt = (unproven or {}).get(outcome.requirement.id)
        if outcome.outcome == "passed" and doubt is not None:
            outcome.outcome, outcome.reason = "not-tested", doubt
        outcome.untested_cases = list((skipped_cases or {}).get(outcome.requirement.id, []))
    failed = [o.requirement.id for o in outcomes if o.outcome == "failed"]
    undecided = no_verdict_reason or unchecked_reason(outcomes, profile, excused)
    if failed:
        # A run stopped early (its deadline, a key limited for too long, an interruption) has
        # still proven what failed before it stopped: that decides; the reason says both.
        stopped = f"{STOPPED_EARLY}{no_verdict_reason}" if no_verdict_reason else ""
        reason = f"failed: {', '.join(failed)}{stopped}"
        return Verdict(NOT_CONFORMANT, outcomes, reason, undecided)
    if undecided:
        return Verdict(NO_VERDICT, outcomes, undecided)
    return Verdict(CONFORMANT, outcomes)


def unchecked_reason(
    outcomes: list[RequirementOutcome], profile: str, excused: dict[str, str]
) -> str | None:
    """A full (or day) run must check every testable MUST requirement its inputs allow."""
    unchecked = [
        o.requirement.id
        for o in outcomes
        if o.outcome == "not-tested"
        and o.requirement.level == "MUST"
        and not o.requirement.not_testable
        and o.requirement.id not in excused
        and not o.blocked_by
    ]
    if profile in ("full", "day") and unchecked:
        return f"not checked: {', '.join(unchecked)}"
    return None


def note_blocked(
    outcomes: list[RequirementOutcome],
    displaced: dict[str, set[str]],
    ran: set[str],
    exempt: set[str],
) -> None:
    """Say "blocked by X" for a testable requirement never judged because X failed (or warned):
    one of its tests ran (or its failure gave way to X's), so only X kept it from a judgement."""
    seen = {o.requirement.id: o.outcome for o in outcomes if o.outcome in ("failed", "warned")}
    for outcome in outcomes:
        requirement = outcome.requirement
        if outcome.outcome != "not-tested" or requirement.not_testable or requirement.id in exempt:
            continue
        gave_way = displaced.get(requirement.id, set())
        if not gave_way and not set(requirement.tests) & ran:
            continue  # its tests did not run (the smoke profile, a budget): not blocked
        blockers = causes.blocked_by(requirement.id, set(seen), gave_way)
        if blockers:
            outcome.blocked_by = blockers
            named = ", ".join(f"{id_} ({seen.get(id_, 'failed')})" for id_ in blockers)
            them = "them" if len(blockers) > 1 else "it"
            outcome.reason = f"blocked by {named}: it could not be judged without {them}"
