"""The client zoo: real Pet Store clients, in Python and in Node, certified by
`petstore-conformance client` run as a user runs it. Clients built on well-kept retry libraries
with the settings their documentation recommends, and the careful examples of the README, are
conformant; each client with a realistic fault is not, on the requirement its fault breaks.
Each client is run twice at once, and both runs must come out alike."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.npm import installed

ROOT = Path(__file__).resolve().parent.parent
PYTHON_ZOO = ROOT / "tests" / "client_zoo" / "python"
NODE_ZOO = ROOT / "tests" / "client_zoo" / "node"
EXAMPLES = ROOT / "examples" / "clients"
# A client still running this long in one scenario is stopped (and judged so): the slowest
# scenario, a 429 that never ends, already stops a client at 35 s.
SCENARIO_TIMEOUT = "60"
RESET = "CLI-WAITS-FOR-RESET"  # no retry library acts on Remaining 0 by itself


@dataclass(frozen=True)
class Client:
    name: str
    command: str
    failed: frozenset[str] = frozenset()
    warned: frozenset[str] = frozenset()
    # SHOULD faults fail only under --strict; their clients are run so, to be "not conformant".
    strict: bool = False

    @property
    def node(self) -> bool:
        return self.command.startswith("node ")


def python(script: str, *args: str) -> str:
    return " ".join([sys.executable, str(PYTHON_ZOO / script), *args])


def node_script(script: str) -> str:
    return f"node {NODE_ZOO / script}"


ZOO = (
    # Good: the README's examples, and retry libraries as their documentation recommends.
    Client("careful.py", f"{sys.executable} {EXAMPLES / 'careful.py'}"),
    Client("careful.mjs", f"node {EXAMPLES / 'careful.mjs'}"),
    Client("urllib3 Retry", python("urllib3_retry.py"), warned=frozenset({RESET})),
    Client("tenacity", python("tenacity_client.py"), warned=frozenset({RESET})),
    Client("backoff", python("backoff_client.py"), warned=frozenset({RESET})),
    # The README's two ten-line drivers: requests with urllib3's Retry, and got.
    Client("requests + urllib3 Retry", python("readme_driver.py"), warned=frozenset({RESET})),
    Client("got", node_script("readme_driver.mjs"), warned=frozenset({RESET})),
    Client("axios-retry", node_script("axios_retry.mjs"), warned=frozenset({RESET})),
    # ky waits for the X-RateLimit-Reset of a 429 that has no Retry-After: a back-off the
    # server chose, judged as such by CLI-BACKOFF-GROWS.
    Client("ky", node_script("ky.mjs"), warned=frozenset({RESET})),
    # Faulty, each on the requirement its mistake breaks.
    Client(
        "urllib3 Retry, retries at once",
        python("urllib3_retry_at_once.py"),
        failed=frozenset({"CLI-RETRY-AFTER"}),
        warned=frozenset({RESET, "CLI-503-RETRY-AFTER"}),
    ),
    Client(
        "tenacity, a fixed 1 s sleep",
        python("tenacity_fixed_sleep.py"),
        failed=frozenset({"CLI-RETRY-AFTER", "CLI-BACKOFF-GROWS"}),
        warned=frozenset({RESET}),
    ),
    Client(
        "p-retry, ignores Retry-After",
        node_script("p_retry.mjs"),
        failed=frozenset({"CLI-RETRY-AFTER"}),
        warned=frozenset({RESET, "CLI-GIVES-UP"}),
    ),
    Client(
        "naive, ignores an HTTP-date",
        python("naive.py", "ignores-http-date"),
        failed=frozenset({"CLI-RETRY-AFTER"}),
        strict=True,
    ),
    Client(
        "naive, no limit on tries",
        python("naive.py", "no-limit"),
        failed=frozenset({"CLI-GIVES-UP"}),
        strict=True,
    ),
    Client(
        "naive, retries a 401",
        python("naive.py", "retries-401"),
        failed=frozenset({"CLI-NO-RETRY-UNCHANGED"}),
        strict=True,
    ),
    Client(
        "naive, hammering",
        python("naive.py", "hammering"),
        failed=frozenset({"CLI-NO-HAMMERING"}),
        strict=True,
    ),
)


@dataclass(frozen=True)
class Outcome:
    exit_status: int
    verdict: str
    failed: frozenset[str]
    warned: frozenset[str]
    console: str = field(default="", compare=False, repr=False)  # what a failure shows


def certify(client: Client, report_dir: Path) -> Outcome:
    command = [
        *("petstore-conformance", "client", "--command", client.command),
        *("--report-dir", str(report_dir), "--timeout", SCENARIO_TIMEOUT),
        *(["--strict"] if client.strict else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    statement = json.loads((report_dir / "conformance.json").read_text())
    assert statement["role"] == "client", done.stdout
    assert statement["exit_status"] == done.returncode, done.stdout
    return Outcome(
        done.returncode,
        statement["verdict"],
        frozenset(statement["failed_requirements"]),
        frozenset(statement["warned_requirements"]),
        done.stdout,
    )


@pytest.fixture(scope="session")
def node_clients() -> Path:
    return installed(NODE_ZOO)


# The clients are judged on their waits, measured as the server saw them: beside seven busy
# workers on two cores, a wait stretched by load moved verdicts (ky, p-retry in CI). They run with
# the solo tests, after the parallel ones.
@pytest.mark.solo
@pytest.mark.parametrize(
    "client",
    [pytest.param(c, id=c.name, marks=[pytest.mark.node] if c.node else []) for c in ZOO],
)
def test_client_is_judged_by_its_retry_policy(client: Client, tmp_path: Path, request) -> None:
    if client.node:
        request.getfixturevalue("node_clients")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda n: certify(client, tmp_path / f"run{n}"), (1, 2)))
    assert runs[0] == runs[1], "two runs disagree:\n" + runs[0].console + runs[1].console
    outcome = runs[0]
    conformant = not client.failed
    assert outcome == Outcome(
        0 if conformant else 1,
        "conformant" if conformant else "not conformant",
        client.failed,
        client.warned,
    ), outcome.console
