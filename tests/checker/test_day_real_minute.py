"""The day profile on the real 60 s minute, free plan: the spare key's 1,000 a day spent window
after window, about 17 minutes a run. A shortened minute reaches the same verdicts in seconds
(tests/checker/test_day_profile.py); these prove it on the minute vendors run.

Marked `day_minute`: nearly all of their time is spent waiting for windows, so tox runs them
beside the other phases, not in one of them (tests/phases.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.shared.checker_runs import (
    CheckerRun,
    assert_no_key_in_outputs,
    new_keys,
    run_against_app,
    run_command,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# The full run (about 70 s), then the day's windows left after it, a minute and a reset each,
# with a margin: what the day profile's own default deadline allows for the free plan.
RUN_TIMEOUT = 2_500


def day_outcomes(run: CheckerRun) -> dict[str, str]:
    wanted = ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED", "LIM-QUOTA-HONOURED")
    return {e["id"]: e["outcome"] for e in run.statement["requirements"] if e["id"] in wanted}


@pytest.mark.slow
@pytest.mark.day_minute
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_reference_spends_its_day_on_the_real_minute(reference_server, tmp_path: Path) -> None:
    keys = new_keys()
    server = reference_server([f"{key}:free" for key in keys], minute_seconds=60)
    run = run_command(
        server.base_url, keys, tmp_path / "day", options=["--profile", "day"], timeout=RUN_TIMEOUT
    )
    print(f"reference, real minute, day profile: {run.seconds:.0f} s, {run.statement['requests']}")
    assert run.status == 0, run.describe()
    assert day_outcomes(run) == {
        "LIM-DAY-ENFORCED": "passed",
        "LIM-DAY-HONOURED": "passed",
        "LIM-QUOTA-HONOURED": "passed",
    }, run.describe()
    assert run.statement["requests"]["per_key"]["spare"] <= 1_000 + 20 * 4, run.statement
    assert_no_key_in_outputs(run)


@pytest.mark.slow
@pytest.mark.day_minute
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_flask_limiter_with_its_day_is_conformant_on_the_real_minute(tmp_path: Path) -> None:
    """ "60 per minute;1000 per day" as Flask-Limiter's documentation writes it: the minute's
    headers until the day's 429, which reports the day."""
    command = [sys.executable, "-m", "tests.shared.stacks.flask_limiter_app"]
    command += ["--configuration", "careful-day", "--minute-seconds", "60"]
    run = run_against_app(
        command,
        "--key",
        tmp_path / "day",
        "free",
        env={"PYTHONPATH": str(PROJECT_ROOT)},
        timeout=RUN_TIMEOUT,
        options=("--profile", "day"),
    )
    requests = run.statement["requests"]
    print(f"Flask-Limiter, real minute, day profile: {run.seconds:.0f} s, {requests}")
    assert run.status == 0, run.describe()
    outcomes = day_outcomes(run)
    assert outcomes["LIM-DAY-ENFORCED"] == outcomes["LIM-DAY-HONOURED"] == "passed", run.describe()
