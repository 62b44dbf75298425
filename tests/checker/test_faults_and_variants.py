"""The checker's sensitivity and fairness, measured: `petstore-conformance`, run as users run it,
must fail every faulty double naming the requirement the fault breaks, and pass every legitimate
variant; the same verdict in consecutive runs where time can change it; no key in anything any
run writes, nor in any URL the double receives (unless the run opted in); and a console without
tracebacks or raw control bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shared.checker_runs import (
    MINUTE_SECONDS,
    CheckerRun,
    assert_no_key_leaked,
    run_checker,
)
from tests.shared.double import (
    FAULTS,
    PER_RESPONSE,
    TIMED_VARIANTS,
    VARIANT_OPTIONS,
    VARIANTS,
    WARNINGS,
)

# Consecutive runs must agree: a verdict that depends on luck is a defect of the check. Luck
# enters through time (rate limits: windows, bursts, a busy machine), so a variant of the limit
# or of the answers' pace, and a fault of a requirement judged from how a quota was spent, run
# twice; any other fault is found by checks the run's seed (0) fixes, or on each response's
# own headers, and runs once, as does a variant of what responses say (CI's time).
ROUNDS = int(os.environ.get("PSC_VERDICT_ROUNDS", "2"))


def rounds_for(requirement: str) -> range:
    timed = requirement.startswith("LIM-") and requirement not in PER_RESPONSE
    return range(1, (ROUNDS if timed else 1) + 1)


def variant_rounds(variant: str) -> range:
    return range(1, (ROUNDS if variant in TIMED_VARIANTS else 1) + 1)


def assert_hint_shown(run: CheckerRun, requirement: str, words: str) -> None:
    """The failure's hint says `words`, on the console, in conformance.json and the HTML."""
    entry = next(e for e in run.statement["requirements"] if e["id"] == requirement)
    assert any(words in hint for hint in entry.get("hints", [])), entry.get("hints")
    assert words in run.output, run.describe()
    assert words in (run.report_dir / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_is_detected(fault: str, tmp_path: Path) -> None:
    expected = FAULTS[fault].requirement
    for round_ in rounds_for(expected):
        minute = FAULTS[fault].minute_seconds or MINUTE_SECONDS
        run = run_checker(
            tmp_path / f"round-{round_}",
            [fault],
            options=FAULTS[fault].options,
            minute_seconds=minute,
        )
        assert run.status == 1, f"round {round_}: {fault} must be not conformant: {run.describe()}"
        assert expected in run.statement["failed_requirements"], (
            f"round {round_}: {fault} must fail {expected}: {run.describe()}"
        )
        assert_no_key_leaked(run)
        if FAULTS[fault].hint:
            assert_hint_shown(run, expected, FAULTS[fault].hint)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_passes(variant: str, tmp_path: Path) -> None:
    for round_ in variant_rounds(variant):
        options = VARIANT_OPTIONS.get(variant, ())
        run = run_checker(tmp_path / f"round-{round_}", variants=[variant], options=options)
        assert run.status == 0, f"round {round_}: {variant} is legitimate: {run.describe()}"
        assert run.statement["verdict"] == "conformant"
        assert_no_key_leaked(run)


@pytest.mark.slow
@pytest.mark.parametrize("deviation", sorted(WARNINGS))
def test_should_deviation_warns_and_fails_only_when_strict(deviation: str, tmp_path: Path) -> None:
    expected = WARNINGS[deviation].requirement
    for round_ in rounds_for(expected):
        options = WARNINGS[deviation].options
        run = run_checker(tmp_path / f"round-{round_}", faults=[deviation], options=options)
        assert run.status == 0, f"round {round_}: a SHOULD is a warning: {run.describe()}"
        assert expected in run.statement["warned_requirements"], run.describe()
        strict = run_checker(
            tmp_path / f"strict-{round_}", [deviation], options=[*options, "--strict"]
        )
        assert strict.status == 1, f"round {round_}: --strict fails it: {strict.describe()}"
        assert expected in strict.statement["failed_requirements"], strict.describe()
        assert_no_key_leaked(run)


def test_correct_double_is_conformant(tmp_path: Path) -> None:
    """The double without faults is the baseline every fault deviates from."""
    run = run_checker(tmp_path)
    assert run.status == 0, run.describe()
    assert run.statement["failed_requirements"] == []
    assert_no_key_leaked(run)


def test_the_timed_variants_and_per_response_requirements_are_the_registrys() -> None:
    from conformance.spec import all_requirements

    assert VARIANTS.keys() >= TIMED_VARIANTS
    assert all_requirements().keys() >= PER_RESPONSE
