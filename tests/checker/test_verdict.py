"""Unit tests of `conformance.judging.verdict.decide`: from recorded checks to outcomes, verdict
and exit status."""

from __future__ import annotations

import pytest

from conformance.judging.checks import CheckResult
from conformance.judging.verdict import CONFORMANT, NO_VERDICT, NOT_CONFORMANT, decide
from conformance.spec import catalogue

MUST_ID = "CAT-LIST-200"
OTHER_MUST_ID = "LIM-HEADERS-PRESENT"
SHOULD_ID = "ERR-429-BODY"
NOT_TESTABLE_ID = "VER-VERSION"


def check(requirement_id: str, passed: bool = True, test: str = "test_x") -> CheckResult:
    return CheckResult(requirement_id, passed, f"{requirement_id} message", test)


def checkable_ids() -> list[str]:
    return [r.id for r in catalogue().values() if not r.not_testable]


def all_passing(*, without: tuple[str, ...] = ()) -> list[CheckResult]:
    """One passing check of every testable requirement, leaving out `without`."""
    return [check(id_) for id_ in checkable_ids() if id_ not in without]


def outcome(verdict, requirement_id: str):
    [found] = [o for o in verdict.outcomes if o.requirement.id == requirement_id]
    return found


def test_the_ids_these_tests_lean_on_have_the_levels_they_assume():
    assert catalogue()[MUST_ID].level == "MUST" and not catalogue()[MUST_ID].not_testable
    assert catalogue()[OTHER_MUST_ID].level == "MUST"
    assert catalogue()[SHOULD_ID].level == "SHOULD" and not catalogue()[SHOULD_ID].not_testable
    assert catalogue()[NOT_TESTABLE_ID].level == "MUST"
    assert catalogue()[NOT_TESTABLE_ID].not_testable


def test_every_testable_requirement_passing_is_conformant_with_exit_0():
    verdict = decide(all_passing())
    assert verdict.verdict == CONFORMANT
    assert verdict.exit_status == 0
    assert verdict.failed_requirements == []
    assert verdict.warned_requirements == []


def test_one_outcome_per_requirement_in_catalogue_order():
    verdict = decide(all_passing())
    assert [o.requirement.id for o in verdict.outcomes] == list(catalogue())


def test_a_must_failure_is_not_conformant_with_exit_1():
    results = [*all_passing(), check(MUST_ID, passed=False)]
    verdict = decide(results)
    assert verdict.verdict == NOT_CONFORMANT
    assert verdict.exit_status == 1
    assert verdict.failed_requirements == [MUST_ID]
    assert MUST_ID in (verdict.reason or "")


def test_a_must_failure_decides_even_when_the_run_was_cut_short():
    verdict = decide([check(MUST_ID, passed=False)], no_verdict_reason="budget spent")
    assert verdict.verdict == NOT_CONFORMANT
    assert verdict.exit_status == 1
    # The reason says what failed, that the run stopped early, and why.
    assert verdict.reason == f"failed: {MUST_ID}; stopped early, the rest not tested: budget spent"


def test_a_run_cut_short_without_failures_has_no_verdict_and_says_why():
    verdict = decide(all_passing(), no_verdict_reason="the request budget is spent")
    assert verdict.verdict == NO_VERDICT
    assert verdict.exit_status == 2
    assert verdict.reason == "the request budget is spent"


def test_a_should_failure_is_a_warning_and_keeps_exit_0():
    verdict = decide([*all_passing(), check(SHOULD_ID, passed=False)])
    assert outcome(verdict, SHOULD_ID).outcome == "warned"
    assert verdict.verdict == CONFORMANT
    assert verdict.exit_status == 0
    assert verdict.warned_requirements == [SHOULD_ID]
    assert verdict.failed_requirements == []


def test_a_should_failure_fails_in_strict_mode():
    verdict = decide([*all_passing(), check(SHOULD_ID, passed=False)], strict=True)
    assert outcome(verdict, SHOULD_ID).outcome == "failed"
    assert verdict.verdict == NOT_CONFORMANT
    assert verdict.exit_status == 1
    assert verdict.failed_requirements == [SHOULD_ID]


def test_a_testable_must_never_checked_in_the_full_profile_has_no_verdict():
    verdict = decide(all_passing(without=(MUST_ID,)), profile="full")
    assert verdict.verdict == NO_VERDICT
    assert verdict.exit_status == 2
    assert MUST_ID in (verdict.reason or "")
    assert outcome(verdict, MUST_ID).outcome == "not-tested"


def test_a_testable_must_never_checked_in_the_smoke_profile_is_still_conformant():
    verdict = decide(all_passing(without=(MUST_ID, OTHER_MUST_ID)), profile="smoke")
    assert verdict.verdict == CONFORMANT
    assert verdict.exit_status == 0


def test_an_empty_smoke_run_is_conformant_but_an_empty_full_run_is_not():
    assert decide([], profile="smoke").verdict == CONFORMANT
    assert decide([], profile="full").verdict == NO_VERDICT


def test_a_should_never_checked_does_not_block_the_full_verdict():
    verdict = decide(all_passing(without=(SHOULD_ID,)), profile="full")
    assert verdict.verdict == CONFORMANT
    assert outcome(verdict, SHOULD_ID).outcome == "not-tested"


def test_unavailable_requirements_do_not_block_and_carry_their_reason():
    reason = "no spare key was given"
    verdict = decide(all_passing(without=(MUST_ID,)), unavailable={MUST_ID: reason})
    assert verdict.verdict == CONFORMANT
    unchecked = outcome(verdict, MUST_ID)
    assert unchecked.outcome == "not-tested"
    assert unchecked.reason == reason


def test_unavailable_does_not_excuse_another_unchecked_must():
    verdict = decide(
        all_passing(without=(MUST_ID, OTHER_MUST_ID)), unavailable={MUST_ID: "no spare key"}
    )
    assert verdict.verdict == NO_VERDICT
    assert OTHER_MUST_ID in (verdict.reason or "")
    assert MUST_ID not in (verdict.reason or "")


def test_a_requirement_left_open_carries_its_reason_and_leaves_no_verdict():
    reason = "beyond what this machine can send: 12,001 requests need 2,001 a second"
    verdict = decide(all_passing(without=(MUST_ID,)), left_open={MUST_ID: reason})
    assert verdict.verdict == NO_VERDICT
    assert MUST_ID in (verdict.reason or "")
    assert outcome(verdict, MUST_ID).reason == reason
    passing = decide(all_passing(), left_open={MUST_ID: reason})  # judged after all
    assert passing.verdict == CONFORMANT and outcome(passing, MUST_ID).reason is None


def test_a_must_failure_beats_unavailable():
    verdict = decide([check(MUST_ID, passed=False)], unavailable={MUST_ID: "no spare key"})
    assert verdict.verdict == NOT_CONFORMANT
    assert outcome(verdict, MUST_ID).outcome == "failed"


def test_not_testable_requirements_do_not_block_and_show_their_reason():
    verdict = decide(all_passing())
    not_testable = outcome(verdict, NOT_TESTABLE_ID)
    assert not_testable.outcome == "not-tested"
    assert not_testable.reason == catalogue()[NOT_TESTABLE_ID].not_testable
    assert verdict.verdict == CONFORMANT


def test_an_unchecked_requirement_gets_the_untested_reason():
    verdict = decide(all_passing(without=(MUST_ID,)), untested_reason="budget ran out")
    assert outcome(verdict, MUST_ID).reason == "budget ran out"


def test_checked_outcomes_carry_no_reason():
    verdict = decide([*all_passing(), check(SHOULD_ID, passed=False)])
    assert outcome(verdict, MUST_ID).reason is None
    assert outcome(verdict, SHOULD_ID).reason is None


@pytest.mark.parametrize(
    ("passes", "level_id", "strict", "expected"),
    [
        ([True, True], MUST_ID, False, "passed"),
        ([True, False, True], MUST_ID, False, "failed"),
        ([True, False], SHOULD_ID, False, "warned"),
        ([False], SHOULD_ID, True, "failed"),
        ([], MUST_ID, False, "not-tested"),
    ],
)
def test_outcome_of_each_requirement(passes, level_id, strict, expected):
    results = [check(level_id, passed, test=f"t{i}") for i, passed in enumerate(passes)]
    assert outcome(decide(results, strict=strict), level_id).outcome == expected


def test_an_outcome_counts_checks_keeps_failures_and_lists_tests_once_sorted():
    results = [
        check(MUST_ID, True, "test_b"),
        check(MUST_ID, False, "test_a"),
        check(MUST_ID, False, "test_b"),
        check(OTHER_MUST_ID, True, "test_c"),
    ]
    found = outcome(decide(results), MUST_ID)
    assert found.checks == 3
    assert [(f.test_id, f.passed) for f in found.failures] == [("test_a", False), ("test_b", False)]
    assert found.tests == ["test_a", "test_b"]


def test_failed_requirements_are_listed_once_in_catalogue_order():
    ids = checkable_ids()
    chosen = [ids[2], ids[7], ids[-1]]
    chosen = [id_ for id_ in chosen if catalogue()[id_].level == "MUST"]
    assert len(chosen) >= 2
    results = [check(id_, passed=False) for id_ in reversed(chosen)]
    results += [check(chosen[0], passed=False)]  # a second failure of the same requirement
    verdict = decide(results)
    assert verdict.failed_requirements == chosen
