"""One cause, one requirement (conformance.judging.causes and its use by the verdict): a failure a
more specific one on the same response explains does not count, and a requirement never judged
because one it needs failed says "blocked by" that one."""

from __future__ import annotations

import pytest

from conformance.httpclient.client import Exchange
from conformance.judging import causes
from conformance.judging.checks import CheckResult
from conformance.judging.verdict import decide
from conformance.spec import catalogue


def exchange(number: int, status: int = 400) -> Exchange:
    return Exchange(
        number, "main", "POST", "http://t/v1/categories", {}, None, status, [], "", 0, 0
    )


def failure(requirement_id: str, seen: Exchange | None, test: str = "test_x") -> CheckResult:
    return CheckResult(requirement_id, False, f"{requirement_id} failed", test, seen)


def passing_everything_but(*ids: str) -> list[CheckResult]:
    return [
        CheckResult(r.id, True, "held", r.tests[0] if r.tests else "test_ok")
        for r in catalogue().values()
        if not r.not_testable and r.id not in ids
    ]


def outcome(verdict, requirement_id: str):
    return next(o for o in verdict.outcomes if o.requirement.id == requirement_id)


def test_the_catalogue_names_only_its_own_ids_and_yields_without_cycles():
    for requirement in catalogue().values():
        assert set(requirement.yields_to) <= set(catalogue()), requirement.id
        assert set(requirement.needs) <= set(catalogue()), requirement.id
    # A cycle would let two failures of one response displace each other: neither would count.
    for requirement in catalogue().values():
        reachable, queue = set(), list(requirement.yields_to)
        while queue:
            other = queue.pop()
            assert other != requirement.id, f"{requirement.id} yields to itself through {other}"
            if other not in reachable:
                reachable.add(other)
                queue.extend(catalogue()[other].yields_to)


@pytest.mark.parametrize(
    ("general", "specific", "status"),
    [
        ("CAT-CREATE-201", "CAT-NAME-RANGE", 400),  # a name refused
        ("CAT-CREATE-201", "AUTH-BEARER-ACCEPTED", 401),  # the key refused
        ("GEN-NO-SERVER-ERROR", "AUTH-INVALID-KEY-401", 500),  # a crash where a 401 is due
        ("GEN-DOCUMENTED-STATUS", "GEN-NO-SERVER-ERROR", 500),
        ("LIM-REMAINING-COUNTS", "LIM-HEADERS-VALID", 429),  # Remaining: -1
        ("DEP-SUNSET-HEADER", "EP-PETS-EXISTS", 404),  # no route, so no headers
    ],
)
def test_on_one_response_only_the_more_specific_failure_counts(general, specific, status):
    seen = exchange(7, status)
    results = [failure(general, seen), failure(specific, seen)]
    settled = causes.settle(results)
    assert [r.requirement_id for r in settled.kept] == [specific]
    assert settled.displaced == {general: {specific}}
    verdict = decide([*passing_everything_but(general, specific), *results])
    assert outcome(verdict, specific).outcome in ("failed", "warned")
    assert outcome(verdict, general).outcome == "not-tested"
    assert outcome(verdict, general).blocked_by == [specific]


def test_failures_on_different_responses_both_count():
    results = [failure("CAT-CREATE-201", exchange(1)), failure("CAT-NAME-RANGE", exchange(2))]
    assert len(causes.settle(results).kept) == 2
    assert decide(results).failed_requirements == ["CAT-CREATE-201", "CAT-NAME-RANGE"]


def test_the_general_requirement_still_passes_where_it_held_elsewhere():
    seen = exchange(3)
    results = [
        CheckResult("CAT-CREATE-201", True, "201", "test_x", exchange(2, 201)),
        failure("CAT-CREATE-201", seen),
        failure("CAT-NAME-RANGE", seen),
    ]
    verdict = decide(results)
    assert outcome(verdict, "CAT-CREATE-201").outcome == "passed"
    assert verdict.failed_requirements == ["CAT-NAME-RANGE"]


def test_an_unreadable_reset_blocks_the_reset_judgements():
    results = [*passing_everything_but("LIM-RESET-HONEST", "LIM-RESET-UNIX-TIME")]
    results = [r for r in results if r.requirement_id != "LIM-HEADERS-VALID"]
    results.append(failure("LIM-HEADERS-VALID", exchange(9, 200)))
    verdict = decide(results)
    honest = outcome(verdict, "LIM-RESET-HONEST")
    assert honest.outcome == "not-tested"
    assert honest.blocked_by == ["LIM-HEADERS-VALID"]
    assert honest.reason.startswith("blocked by LIM-HEADERS-VALID (failed)")
    assert outcome(verdict, "LIM-RESET-UNIX-TIME").blocked_by == ["LIM-HEADERS-VALID"]
    assert verdict.failed_requirements == ["LIM-HEADERS-VALID"]


def test_a_blocked_must_does_not_turn_the_verdict_into_no_verdict():
    # Blocked by a SHOULD that only warned: the run cannot judge it, and says why.
    results = passing_everything_but("DEP-SUNSET-HEADER", "DEP-SUNSET-FUTURE")
    results.append(failure("DEP-SUNSET-HEADER", exchange(4, 200)))
    verdict = decide(results)
    assert outcome(verdict, "DEP-SUNSET-FUTURE").blocked_by == ["DEP-SUNSET-HEADER"]
    assert "(warned)" in outcome(verdict, "DEP-SUNSET-FUTURE").reason
    assert verdict.verdict == "conformant"


def test_a_requirement_whose_tests_did_not_run_is_not_blocked():
    # The smoke profile skips the exhaustion test: LIM-RESET-HONEST keeps the profile's reason.
    results = [
        r
        for r in passing_everything_but("LIM-HEADERS-VALID")
        if r.test_id.split("::")[-1] != "test_exhaustion_429_retry_after_and_reset"
    ]
    results.append(failure("LIM-HEADERS-VALID", exchange(9, 200)))
    verdict = decide(results, profile="smoke", untested_reason="not in smoke")
    assert outcome(verdict, "LIM-RESET-HONEST").blocked_by == []
    assert outcome(verdict, "LIM-RESET-HONEST").reason == "not in smoke"


def test_without_a_failed_prerequisite_an_unjudged_requirement_keeps_its_own_reason():
    verdict = decide(passing_everything_but("LIM-RESET-HONEST"), untested_reason="no time")
    assert outcome(verdict, "LIM-RESET-HONEST").blocked_by == []
    assert outcome(verdict, "LIM-RESET-HONEST").reason == "no time"
    assert verdict.verdict == "no verdict"


def test_prerequisites_are_followed_through_what_they_need():
    assert causes.prerequisites("LIM-RESET-HONEST")[:2] == [
        "LIM-RESET-UNIX-TIME",
        "LIM-429-WHEN-EXCEEDED",
    ]
    assert "LIM-HEADERS-PRESENT" in causes.prerequisites("LIM-RESET-HONEST")


def test_skipped_cases_are_kept_with_their_requirement():
    reason = "the key in the query string: not sent without --allow-key-in-url"
    verdict = decide(passing_everything_but(), skipped_cases={"AUTH-INVALID-KEY-401": [reason]})
    assert outcome(verdict, "AUTH-INVALID-KEY-401").outcome == "passed"
    assert outcome(verdict, "AUTH-INVALID-KEY-401").untested_cases == [reason]


def test_a_proxys_refusal_explains_every_other_failure_on_its_response():
    """nginx's 503 fails CAT-LIST-200 and LIM-HEADERS-PRESENT too; only its cause counts, and a
    requirement judged nowhere else is blocked by it."""
    refused, own = exchange(1, 503), exchange(2, 400)
    front = CheckResult("LIM-429-WHEN-EXCEEDED", False, "front", "test_x", refused)
    front.whole_response = True
    results = [
        front,
        failure("CAT-LIST-200", refused),
        failure("LIM-HEADERS-PRESENT", refused),
        failure("LIM-HEADERS-PRESENT", own),  # the service's own answer: judged as usual
    ]
    settled = causes.settle(results)
    assert [(r.requirement_id, r.exchange.id) for r in settled.kept] == [
        ("LIM-429-WHEN-EXCEEDED", 1),
        ("LIM-HEADERS-PRESENT", 2),
    ]
    assert settled.displaced["CAT-LIST-200"] == {"LIM-429-WHEN-EXCEEDED"}
    verdict = decide(passing_everything_but("CAT-LIST-200") + results, strict=False)
    assert outcome(verdict, "CAT-LIST-200").blocked_by == ["LIM-429-WHEN-EXCEEDED"]
