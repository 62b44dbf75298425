"""The checker against small Pet Store apps on the real rate-limit libraries vendors use
(tests/shared/stacks): Flask-Limiter and slowapi, each careful (limits per key and plan, the
library's own headers on) and as its quick-start shows (keyed by client address, no headers).

Both libraries send `Retry-After` on every response, 200 and 201 included: the seconds left in
the window. It is information there, not an order: a careful app's run must not wait for it.

slowapi's app is served by uvicorn as FastAPI's documentation has it: `uvicorn[standard]`, whose
httptools drops the body of a request that offers an h2c upgrade (uvicorn issue 2722), which
the checker sends as Java's HttpClient does; on uvicorn's h11 protocol it is served.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.shared.checker_runs import CheckerRun, assert_outputs_agree, run_against_app

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# A free plan on a 10-second minute: a Retry-After of up to 10 s on every answer, so that a run
# that waits for them takes many minutes, where a correct one takes about 30 s. (A pro plan's
# burst needs 30 requests a second, more than uvicorn with slowapi serves on a busy machine.)
PLAN, MINUTE_SECONDS = "free", 10
PER_MINUTE = 60
RUN_TIMEOUT = 150
HOUR_RUN_TIMEOUT = 300  # the bound on waiting for one key (120 s) and the run before it
APPS = ("flask_limiter_app", "slowapi_app")
# Each careful app as it serves every request whole: slowapi's on uvicorn's h11 protocol.
CAREFUL = {"flask_limiter_app": (), "slowapi_app": ("--http", "h11")}


def run_against(
    app: str, configuration: str, report_dir: Path, *extra: str, timeout: float = RUN_TIMEOUT
) -> CheckerRun:
    command = [sys.executable, "-m", f"tests.shared.stacks.{app}", "--configuration", configuration]
    command += ["--minute-seconds", str(MINUTE_SECONDS), *extra]
    return run_against_app(
        command,
        "--key",
        report_dir,
        PLAN,
        env={"PYTHONPATH": str(PROJECT_ROOT)},
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize("app", APPS)
def test_a_careful_app_is_conformant_without_waiting_for_retry_after_on_successes(
    app: str, tmp_path: Path
) -> None:
    run = run_against(app, "careful", tmp_path / app, *CAREFUL[app])
    assert run.status == 0, run.describe()
    requests = run.statement["requests"]
    waited = requests["seconds_waited_per_key"]
    # The main key waits for its Reset once per window it spends (a window and a second at
    # most each), never for the Retry-After of a success; unauthenticated requests are few.
    windows = requests["per_key"]["main"] // PER_MINUTE + 1
    assert waited["main"] <= windows * (MINUTE_SECONDS + 1.5), requests
    assert waited.get("none", 0) < 1, requests
    # The spare key waits until late in its window before its burst (the window after the
    # reset is then spent across the boundary), then out its one 429: a window for each it
    # spends, and one. (Two on an idle machine; beside a second test run, where the burst is
    # slower, it once spent a third.) Waiting out the Retry-After of its 60 successes would be
    # minutes.
    windows = requests["per_key"]["spare"] // PER_MINUTE + 1
    assert waited["spare"] <= (windows + 1) * (MINUTE_SECONDS + 1), requests
    assert "for the Retry-After of its 20" not in run.output, run.describe()


@pytest.mark.slow
@pytest.mark.parametrize("app", APPS)
def test_a_quick_start_app_keyed_by_address_is_not_conformant(app: str, tmp_path: Path) -> None:
    """No rate-limit headers and one count per address (on loopback, every caller's): its
    hour shortened to 3 s, or its refusals would last an hour."""
    run = run_against(app, "quick-start", tmp_path / app, "--hour-seconds", "3")
    assert run.status == 1, run.describe()
    assert "LIM-HEADERS-PRESENT" in run.statement["failed_requirements"], run.describe()


@pytest.mark.slow
def test_an_app_on_uvicorn_with_httptools_fails_on_the_body_it_drops_after_an_h2c_offer(
    tmp_path: Path,
) -> None:
    """The careful slowapi app, served as `uvicorn[standard]` serves it (httptools): conformant
    in everything but the create that offers an upgrade, whose body it drops (400)."""
    run = run_against("slowapi_app", "careful", tmp_path / "httptools", "--http", "httptools")
    assert (run.status, run.statement["failed_requirements"]) == (
        1,
        ["CAT-CREATE-H2C-OFFER"],
    ), run.describe()
    [entry] = [e for e in run.statement["requirements"] if e["id"] == "CAT-CREATE-H2C-OFFER"]
    [evidence] = entry["evidence"][:1]
    assert "Upgrade: h2c" in evidence["message"] and "got 400" in evidence["message"], evidence
    assert any("uvicorn issue 2722" in hint and "h11" in hint for hint in entry["hints"]), entry
    assert_outputs_agree(run)


def test_a_quick_start_on_its_documented_hour_stops_not_conformant(tmp_path: Path) -> None:
    """slowapi's quick-start with its real hour: once the spare key's burst spent the address's
    50 an hour, every key is refused until the hour is over, and the run stops at its bound on
    waiting for one key. LIM-HEADERS-PRESENT failed on its first response: not conformant (it
    said no verdict once), the reason says where it stopped, and the rest is "not run" so."""
    run = run_against("slowapi_app", "quick-start", tmp_path / "hour", timeout=HOUR_RUN_TIMEOUT)
    assert run.status == 1, run.describe()
    assert "LIM-HEADERS-PRESENT" in run.statement["failed_requirements"], run.describe()
    stopped = "stopped early, the rest not tested: key 'main' has been refused (429)"
    assert stopped in run.statement["reason"], run.describe()
    not_run = [
        e["id"]
        for e in run.statement["requirements"]
        if e.get("reason", "").startswith("not run: key 'main' has been refused (429)")
    ]
    assert not_run, run.describe()
