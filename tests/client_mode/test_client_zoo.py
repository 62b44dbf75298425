"""The client zoo: real Pet Store clients, in Python, Node, Go and Java, certified by
`petstore-conformance client` run as a user runs it. Clients built on well-kept retry libraries
with the settings their documentation recommends or with their defaults (which give up a refused
POST), a client with no retry at all, and the careful examples of the README, are conformant;
each client with a realistic fault is not, on the requirement its fault breaks. Each client is
run twice at once, and both runs must come out alike."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.shared.go import built
from tests.shared.npm import installed

ROOT = Path(__file__).resolve().parents[2]
PYTHON_ZOO = ROOT / "tests" / "client_mode" / "zoo" / "python"
NODE_ZOO = ROOT / "tests" / "client_mode" / "zoo" / "node"
GO_ZOO = ROOT / "tests" / "client_mode" / "zoo" / "go"
GO_RETRY = "github.com/hashicorp/go-retryablehttp"
GO_BINARY = "{go}"  # in a Go client's command: the binary the session built
JAVA_ZOO = ROOT / "tests" / "client_mode" / "zoo" / "java"
JAVA_CLASS = "{java}"  # in a Java client's command: `java` with the classes the session built
EXAMPLES = ROOT / "examples" / "careful_clients"
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
    # Where it shows, the scenarios its failures come from: a fault only one scenario can show.
    failed_in: frozenset[str] | None = None

    @property
    def needs(self) -> str | None:
        """The language tool its command needs beyond Python: "node", "go", "java" or None."""
        if self.command.startswith("node "):
            return "node"
        if self.command.startswith(JAVA_CLASS):
            return "java"
        return "go" if self.command.startswith(GO_BINARY) else None


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
    # Their defaults give up a refused POST (RFC 9110 section 9.2.2) and stop after two retries
    # of a GET, before a third wait would show the back-off grow: said, not failed.
    Client("got, defaults", node_script("got_defaults.mjs"), warned=frozenset({RESET})),
    Client("ky, defaults", node_script("ky_defaults.mjs"), warned=frozenset({RESET})),
    # go-retryablehttp with a Backoff that reads an HTTP-date too (its documented hook).
    Client("go-retryablehttp, HTTP-date read", f"{GO_BINARY} http-date", warned=frozenset({RESET})),
    # Java's own HttpClient with its defaults, which offer an h2c upgrade on every new
    # connection (RFC 9110 section 7.8: the server may ignore it and serves the request), under
    # a careful policy that also waits for the Reset.
    Client("java.net.http HttpClient", f"{JAVA_CLASS} PetStoreClient"),
    # No retry at all: it gives up every 429, as it may, and is told what it did not show.
    Client("no retry", python("no_retry.py"), warned=frozenset({"CLI-RETRIES", RESET})),
    # Faulty, each on the requirement its mistake breaks.
    Client(
        "urllib3 Retry, retries at once",
        python("urllib3_retry_at_once.py"),
        failed=frozenset({"CLI-RETRY-AFTER"}),
        warned=frozenset({RESET, "CLI-503-RETRY-AFTER"}),
    ),
    Client(
        "tenacity, documented example",
        python("tenacity_docs_example.py"),
        failed=frozenset({"CLI-RETRY-AFTER"}),
        warned=frozenset({RESET}),
        failed_in=frozenset({"long-retry-after-seconds", "long-retry-after-date"}),
    ),
    Client(
        "go-retryablehttp, defaults",
        f"{GO_BINARY} defaults",
        failed=frozenset({"CLI-RETRY-AFTER"}),
        warned=frozenset({RESET}),
        failed_in=frozenset({"retry-after-date", "long-retry-after-date"}),
    ),
    # Three requests within one 6 s Retry-After: the ban's threshold.
    Client(
        "tenacity, a fixed 1 s sleep",
        python("tenacity_fixed_sleep.py"),
        failed=frozenset({"CLI-NO-HAMMERING"}),
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
    failed_in: frozenset[str] = field(default=frozenset(), compare=False)
    console: str = field(default="", compare=False, repr=False)  # what a failure shows


def certify(client: Client, command_line: str, report_dir: Path) -> Outcome:
    command = [
        *("petstore-conformance", "client", "--command", command_line),
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
        frozenset(
            evidence["test"].split("::", 1)[0]
            for entry in statement["requirements"]
            if entry["outcome"] == "failed"
            for evidence in entry.get("evidence", [])
        ),
        done.stdout,
    )


@pytest.fixture(scope="session")
def node_clients() -> Path:
    return installed(NODE_ZOO)


@pytest.fixture(scope="session")
def go_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("go-client") / "zoo-go"
    return built(GO_ZOO, binary, {GO_RETRY: "golang-github-hashicorp-go-retryablehttp-dev"})


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Java client compiled once per session (javac, the JDK's; the marker checks it)."""
    classes = tmp_path_factory.mktemp("java-client")
    sources = sorted(str(path) for path in JAVA_ZOO.glob("*.java"))
    subprocess.run(
        ["javac", "-d", str(classes), *sources], check=True, capture_output=True, timeout=300
    )
    return classes


# The clients are judged on their waits, measured as the server saw them: beside seven busy
# workers on two cores, a wait stretched by load moved verdicts (ky, p-retry in CI). They run with
# the solo tests, after the parallel ones.
@pytest.mark.solo
@pytest.mark.parametrize(
    "client",
    [
        pytest.param(c, id=c.name, marks=[getattr(pytest.mark, c.needs)] if c.needs else [])
        for c in ZOO
    ],
)
def test_client_is_judged_by_its_retry_policy(client: Client, tmp_path: Path, request) -> None:
    command = client.command
    if client.needs == "node":
        request.getfixturevalue("node_clients")
    if client.needs == "go":
        command = command.replace(GO_BINARY, str(request.getfixturevalue("go_client")))
    if client.needs == "java":
        classes = request.getfixturevalue("java_classes")
        command = command.replace(JAVA_CLASS, f"java -cp {classes}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda n: certify(client, command, tmp_path / f"run{n}"), (1, 2)))
    assert runs[0] == runs[1], "two runs disagree:\n" + runs[0].console + runs[1].console
    outcome = runs[0]
    conformant = not client.failed
    assert outcome == Outcome(
        0 if conformant else 1,
        "conformant" if conformant else "not conformant",
        client.failed,
        client.warned,
    ), outcome.console
    if client.failed_in is not None:
        assert outcome.failed_in == client.failed_in, outcome.console
