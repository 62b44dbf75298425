"""The checker against the Pet Store on gin with a golang.org/x/time/rate limiter per client
address, as gin's guides show it: no rate-limit headers, no Retry-After, one bucket for every
key (issue 23, 4); gin's UseH2C on, so that it takes an h2c upgrade offer (101 Switching
Protocols) and answers in HTTP/2, as a server may. Built offline from Debian's Go packages
(golang-github-gin-gonic-gin-dev, golang-golang-x-time-dev) in GOPATH mode: no module download."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared.checker_runs import run_against_app
from tests.shared.go import built

pytestmark = [pytest.mark.go, pytest.mark.slow]

APP = Path(__file__).parents[1] / "shared" / "stacks" / "go" / "gin_app"
PACKAGES = {
    "github.com/gin-gonic/gin": "golang-github-gin-gonic-gin-dev",
    "golang.org/x/time/rate": "golang-golang-x-time-dev",
}
MINUTE_SECONDS = 10


@pytest.fixture(scope="session")
def gin_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("gin") / "gin_app"
    return built(APP, binary, PACKAGES)


def test_a_limiter_per_address_without_headers_gets_every_cause(
    gin_app: Path, tmp_path: Path
) -> None:
    """A pro key (300 a minute) refused after the address's bucket of 60, and the main key
    with it, told from the statuses; a 429 without Retry-After; the missing headers."""
    command = [str(gin_app), "-minute-seconds", str(MINUTE_SECONDS), "-h2c"]
    run = run_against_app(command, "-key", tmp_path / "report", "pro")
    assert run.status == 1, run.describe()
    assert run.statement["failed_requirements"] == [
        "LIM-HEADERS-PRESENT",
        "LIM-QUOTA-HONOURED",
        "LIM-PER-KEY",
        "LIM-RETRY-AFTER",
    ], run.describe()
    assert run.outcomes()["LIM-429-WHEN-EXCEEDED"] == "passed", run.describe()
    # The create that offered h2c was taken up (101): neither failed nor held against a verdict.
    [offer] = [e for e in run.statement["requirements"] if e["id"] == "CAT-CREATE-H2C-OFFER"]
    assert offer["outcome"] == "not-tested" and "101" in offer["reason"], offer
