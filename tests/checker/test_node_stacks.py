"""The checker against Pet Store apps on the real Node rate-limit libraries, as vendors set
them up: express-rate-limit on Express and @fastify/rate-limit on Fastify, each in its README's
quick-start (keyed by client address) and in a careful configuration (keyed by API key, the
plan's limit, the headers on every response) (issue 23, 4 and 5). The apps are
tests/shared/stacks/node/; their packages are pinned in its package-lock.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared.checker_runs import CheckerRun, run_against_app
from tests.shared.npm import installed

pytestmark = [pytest.mark.node, pytest.mark.slow]

STACKS = Path(__file__).parents[1] / "shared" / "stacks" / "node"
# The apps' minute: long enough for a pro plan's burst to land inside one window on a busy
# machine, short enough that a run costs some 25 s.
MINUTE_SECONDS = 10
# What no header can show stays blocked by the missing headers: the Limit against the plan, how
# Remaining counts, one count across endpoints, and when the limit resets.
HEADER_ONLY = {"LIM-HEADERS-VALID", "LIM-LIMIT-PLAN", "LIM-REMAINING-COUNTS", "LIM-PER-CALLER"}
HEADER_ONLY |= {"LIM-RESET-UNIX-TIME", "LIM-RESET-WHOLE-SECONDS", "LIM-RESET-HONEST"}


@pytest.fixture(scope="session")
def node_stacks() -> Path:
    return installed(STACKS)


def checked(stacks: Path, tmp_path: Path, app: str, config: str, plan: str) -> CheckerRun:
    command = ["node", str(stacks / app), "--config", config]
    command += ["--minute-seconds", str(MINUTE_SECONDS)]
    return run_against_app(command, "--key", tmp_path / "report", plan)


def blocked(run: CheckerRun) -> dict[str, list[str]]:
    return {e["id"]: e["blocked_by"] for e in run.statement["requirements"] if e.get("blocked_by")}


@pytest.mark.parametrize("app", ["express_app.mjs", "fastify_app.mjs"])
def test_a_careful_configuration_is_conformant(node_stacks: Path, tmp_path: Path, app: str) -> None:
    """Keyed by API key, the plan's limit, the headers on 401s and 404s, Reset a Unix time
    (Fastify's own is a delay: the app turns it into a time)."""
    run = checked(node_stacks, tmp_path, app, "careful", "free")
    assert run.status == 0, run.describe()
    assert not blocked(run), run.describe()


def test_express_quick_start_gets_every_cause_from_the_statuses(
    node_stacks: Path, tmp_path: Path
) -> None:
    """The README's limiter: one count of 100 per client address, no X-RateLimit-* headers
    at all (`legacyHeaders: false`). A pro key (300 a minute) is refused after some 100
    requests, and the main key with it: the statuses show both, in the run that fails the
    headers; only what no status can show stays blocked by them."""
    run = checked(node_stacks, tmp_path, "express_app.mjs", "quick-start", "pro")
    assert run.status == 1, run.describe()
    failed = run.statement["failed_requirements"]
    assert failed == ["LIM-HEADERS-PRESENT", "LIM-QUOTA-HONOURED", "LIM-PER-KEY"], run.describe()
    assert set(blocked(run)) == HEADER_ONLY, blocked(run)
    assert run.outcomes()["LIM-429-WHEN-EXCEEDED"] == "passed", run.describe()


def test_fastify_quick_start_gets_every_cause_from_the_statuses(
    node_stacks: Path, tmp_path: Path
) -> None:
    """The README's limiter: 100 per client address, its headers on the routes it hooks but
    not on the 401s an app-wide auth hook answers first, its Reset a delay. Every cause in one
    run; what needs a Reset to read stays blocked by it."""
    run = checked(node_stacks, tmp_path, "fastify_app.mjs", "quick-start", "pro")
    assert run.status == 1, run.describe()
    failed = run.statement["failed_requirements"]
    assert failed == [
        "LIM-HEADERS-PRESENT",
        "LIM-LIMIT-PLAN",
        "LIM-RESET-UNIX-TIME",
        "LIM-QUOTA-HONOURED",
        "LIM-PER-KEY",
    ], run.describe()
    reads_reset = {"LIM-REMAINING-COUNTS", "LIM-PER-CALLER", "LIM-RESET-HONEST"}
    assert set(blocked(run)) == reads_reset, blocked(run)
    assert all("LIM-RESET-UNIX-TIME" in blocked(run)[r] for r in reads_reset), blocked(run)
