"""The day profile, end to end: `petstore-conformance --profile day` spends the spare key's day
window after window against the reference on a 2-second minute (its day 1,440 of them) and
against the double, correct and with each of its day faults."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.shared.checker_runs import (
    CheckerRun,
    assert_no_key_in_outputs,
    assert_no_key_leaked,
    new_keys,
    run_checker,
    run_command,
)

# An enterprise plan with a small day, so that the double's day is spent in a few windows.
SMALL_DAY = ("--plan", "enterprise", "--requests-per-minute", "60", "--requests-per-day", "250")
SMALL_DAY_KEYS = "enterprise:60:250"
DAY_PROFILE = ("--profile", "day")
WINDOW_LINE = re.compile(r"spare key, window (\d+) of its day: (\d+) served")
IN_THE_RUN = re.compile(r"window \d+ of its day: \d+ served, [^;]*; ([\d,]+) served in the run")
DAY_TIMEOUT = 400


def outcome(run: CheckerRun, requirement: str) -> dict:
    return next(e for e in run.statement["requirements"] if e["id"] == requirement)


def windows_spent(run: CheckerRun) -> list[int]:
    """The served count of each window the console's progress lines reported."""
    return [int(served) for _, served in WINDOW_LINE.findall(run.output)]


@pytest.mark.slow
def test_reference_spends_its_day_conformant(reference_server, tmp_path: Path) -> None:
    """Free plan, a 2-second minute: the day of 1,000 is spent in 16 or 17 windows (the
    exhaustion spent some of it already), every window judged, and the run is conformant."""
    keys = new_keys()
    server = reference_server([f"{key}:free" for key in keys], minute_seconds=2)
    run = run_command(
        server.base_url, keys, tmp_path / "day", options=DAY_PROFILE, timeout=DAY_TIMEOUT
    )
    assert run.status == 0, run.describe()
    assert "day profile: after the full run, the spare key spends its day: 17 windows" in (
        run.output
    )
    for requirement in ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED"):
        assert outcome(run, requirement)["outcome"] == "passed", run.describe()
    served = windows_spent(run)
    assert all(count == 60 for count in served[1:-1]), served  # a whole minute's quota each
    # The windows spend what the full run left of the day, and the last meets its end: 16 or
    # 17 windows where the full run spent 60 to 120 of it; fewer where a busy machine made it
    # spend more (a window after the reset that ran into the next is spent again).
    in_run = [int(count.replace(",", "")) for count in IN_THE_RUN.findall(run.output)]
    assert in_run[-1] == 1_000, run.describe()  # the day's figure, and not one more
    assert len(served) == 1 + math.ceil((1_000 - in_run[0]) / 60), (served, in_run)
    judged = outcome(run, "LIM-QUOTA-HONOURED")
    assert "test_rate_limits.py::test_day_quota_spent_window_after_window" in judged["tests"]
    assert_no_key_in_outputs(run)


@pytest.mark.slow
def test_correct_double_spends_its_day_conformant(tmp_path: Path) -> None:
    run = run_checker(
        tmp_path / "day",
        options=[*DAY_PROFILE, *SMALL_DAY[2:]],
        plan="enterprise",
        key_plan=SMALL_DAY_KEYS,
    )
    assert run.status == 0, run.describe()
    assert outcome(run, "LIM-DAY-ENFORCED")["outcome"] == "passed", run.describe()
    assert outcome(run, "LIM-DAY-HONOURED")["outcome"] == "passed", run.describe()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "requirement", "cause"),
    [
        ("day-never-enforced", "LIM-DAY-ENFORCED", "no more than the plan's 250 requests a day"),
        ("day-refuses-early", "LIM-DAY-HONOURED", "fewer than the plan's 250 a day"),
        (
            "day-refused-behind-minute-headers",
            "LIM-QUOTA-HONOURED",
            "must not hide behind the minute's headers",
        ),
    ],
)
def test_day_fault_is_not_conformant(
    fault: str, requirement: str, cause: str, tmp_path: Path
) -> None:
    run = run_checker(
        tmp_path / fault,
        [fault],
        options=[*DAY_PROFILE, *SMALL_DAY[2:]],
        plan="enterprise",
        key_plan=SMALL_DAY_KEYS,
    )
    assert run.status == 1, run.describe()
    assert requirement in run.statement["failed_requirements"], run.describe()
    assert cause in json.dumps(outcome(run, requirement)), outcome(run, requirement)
    assert_no_key_leaked(run)


@pytest.mark.slow
def test_day_fault_unseen_by_the_full_profile(tmp_path: Path) -> None:
    """What the day profile is for: the full profile spends no day, so it certifies a day
    that is never enforced (its day requirements are not tested, with the reason)."""
    run = run_checker(
        tmp_path / "full",
        ["day-never-enforced"],
        options=SMALL_DAY[2:],
        plan="enterprise",
        key_plan=SMALL_DAY_KEYS,
    )
    assert run.status == 0, run.describe()
    entry = outcome(run, "LIM-DAY-ENFORCED")
    assert entry["outcome"] == "not-tested", entry
    assert "--profile day" in json.dumps(entry), entry
