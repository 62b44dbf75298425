"""The day profile against apps on the real rate-limit libraries, each with a day limit written
as its documentation writes one, and each with that day removed (issue 36, item 7).

Flask-Limiter ("60 per minute;1000 per day"), slowapi ("60/minute;1000/day"), express-rate-limit
(a day limiter, then a minute limiter) and a sliding-log minute (Flask-Limiter on the `limits`
library's moving window): the minute shortened to 5 s, the day a real day counted in requests.
While the day serves, their headers report the minute; the day's 429 reports the day (Limit the
day's figure, Remaining 0, Reset and Retry-After at the day's end, hours away). With its day each
is conformant, LIM-DAY-ENFORCED and LIM-DAY-HONOURED passed; without it each is not conformant on
LIM-DAY-ENFORCED. A quick-start with no day and no X-RateLimit-* headers never passes the day.

The free plan (a day of 1,000: 17 windows) for Flask-Limiter and Express, as the issue measured
them; an enterprise plan of 60 a minute and 250 a day (5 windows) for the others.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.shared.checker_runs import CheckerRun, run_against_app, run_checker
from tests.shared.npm import installed

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NODE_STACKS = PROJECT_ROOT / "tests" / "shared" / "stacks" / "node"
MINUTE_SECONDS = 5
DAY_PROFILE = ("--profile", "day")
FREE = ("free", None, DAY_PROFILE)
SMALL_DAY = (
    "enterprise",
    "enterprise:60:250",
    (*DAY_PROFILE, "--requests-per-minute", "60", "--requests-per-day", "250"),
)
# A free day is 17 windows of 5 s and their waits, after a full run; a day never enforced is
# spent two windows more. Bounds, not expectations: wall times are reported, not asserted.
DAY_TIMEOUT = 600
DAY_REQUIREMENTS = ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED")
# Each Python app: its module, the configuration with its day and the one without, the plan, and
# what else it needs (slowapi's careful app on uvicorn's h11 protocol, as test_real_stacks.py).
PYTHON_APPS = {
    "flask-limiter": ("flask_limiter_app", "careful-day", "careful-no-day", FREE, ()),
    "slowapi": ("slowapi_app", "careful-day", "careful-no-day", SMALL_DAY, ("--http", "h11")),
    "sliding-log": ("flask_limiter_app", "sliding-day", "sliding-no-day", SMALL_DAY, ()),
}


def run_python_app(app: str, with_day: bool, report_dir: Path) -> CheckerRun:
    module, day, no_day, (plan, key_plan, options), extra = PYTHON_APPS[app]
    command = [sys.executable, "-m", f"tests.shared.stacks.{module}"]
    command += ["--configuration", day if with_day else no_day]
    command += ["--minute-seconds", str(MINUTE_SECONDS), *extra]
    return run_against_app(
        command,
        "--key",
        report_dir,
        plan,
        env={"PYTHONPATH": str(PROJECT_ROOT)},
        timeout=DAY_TIMEOUT,
        options=options,
        key_plan=key_plan,
    )


def run_express(config: str, report_dir: Path) -> CheckerRun:
    stacks = installed(NODE_STACKS)
    command = ["node", str(stacks / "express_app.mjs"), "--config", config]
    command += ["--minute-seconds", str(MINUTE_SECONDS)]
    return run_against_app(
        command, "--key", report_dir, "free", timeout=DAY_TIMEOUT, options=DAY_PROFILE
    )


def figures(run: CheckerRun) -> str:
    """One line for the log: the verdict, the day's outcomes, requests per key, wall time."""
    outcomes = run.outcomes()
    day = ", ".join(f"{r} {outcomes.get(r)}" for r in DAY_REQUIREMENTS)
    per_key = run.statement.get("requests", {}).get("per_key")
    return f"exit {run.status}; {day}; requests {per_key}; {run.seconds:.0f} s"


def assert_day_conformant(run: CheckerRun) -> None:
    print(figures(run))
    assert run.status == 0, run.describe()
    for requirement in DAY_REQUIREMENTS:
        assert run.outcomes()[requirement] == "passed", (requirement, run.describe())


def assert_day_not_enforced(run: CheckerRun) -> None:
    print(figures(run))
    assert run.status == 1, run.describe()
    assert "LIM-DAY-ENFORCED" in run.statement["failed_requirements"], run.describe()


@pytest.mark.slow
@pytest.mark.parametrize("app", sorted(PYTHON_APPS))
def test_a_python_app_with_its_day_is_conformant(app: str, tmp_path: Path) -> None:
    assert_day_conformant(run_python_app(app, True, tmp_path / "report"))


@pytest.mark.slow
@pytest.mark.parametrize("app", sorted(PYTHON_APPS))
def test_a_python_app_without_its_day_fails_the_day(app: str, tmp_path: Path) -> None:
    assert_day_not_enforced(run_python_app(app, False, tmp_path / "report"))


@pytest.mark.slow
@pytest.mark.node
def test_express_with_a_day_limiter_is_conformant(tmp_path: Path) -> None:
    assert_day_conformant(run_express("careful-day", tmp_path / "report"))


@pytest.mark.slow
@pytest.mark.node
def test_express_with_its_minute_limiter_alone_fails_the_day(tmp_path: Path) -> None:
    assert_day_not_enforced(run_express("careful", tmp_path / "report"))


@pytest.mark.slow
@pytest.mark.node
def test_express_quick_start_never_passes_the_day(tmp_path: Path) -> None:
    """The README's limiter: 100 a minute per address, no day, no X-RateLimit-* headers."""
    run = run_express("quick-start", tmp_path / "report")
    assert run.status == 1, run.describe()
    assert run.outcomes()["LIM-DAY-ENFORCED"] != "passed", run.describe()


@pytest.mark.slow
def test_the_double_headerless_without_a_day_never_passes_the_day(tmp_path: Path) -> None:
    """The quick-starts' shape in the double (its fault registry checks LIM-HEADERS-PRESENT):
    a minute's 429 is never taken for the day's. Without a Reset or a Retry-After, each window
    opens the plan's whole minute after the last refusal: a small day keeps it to a window or two
    (not a multiple of the minute's, so that no minute's refusal meets the day's figure)."""
    run = run_checker(
        tmp_path / "report",
        ["headerless-no-day"],
        options=[*DAY_PROFILE, "--requests-per-minute", "60", "--requests-per-day", "150"],
        plan="enterprise",
        key_plan="enterprise:60:150",
    )
    assert run.status == 1, run.describe()
    assert run.outcomes()["LIM-DAY-ENFORCED"] == "failed", run.describe()
    assert run.outcomes()["LIM-DAY-HONOURED"] != "failed", run.describe()
