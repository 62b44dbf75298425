"""Fixtures shared by the project's own tests."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from tests.shared.browser import chromium_path
from tests.shared.haproxy import haproxy_path
from tests.shared.nginx import nginx_path
from tests.shared.servers import ReferenceProcess, reference_args, start_reference
from tests.shared.services import POSTGRES_ADDRESS, REDIS_ADDRESS, reachable

SERVICES = {"redis": ("Redis", REDIS_ADDRESS), "postgres": ("PostgreSQL", POSTGRES_ADDRESS)}


# Rough seconds a test of these modules takes under a parallel run; none has a module-scoped
# fixture, so their tests may go to any worker. With `--dist worksteal` each worker begins on
# a contiguous slice of the collection, and one that began on all the real-minute runs would
# still be running them when the rest were done: the long tests are dealt out, longest first,
# each to the slice with the fewest estimated seconds, at the head of its slice; the other
# tests fill the slices in their own order, so that a module and its shared fixtures mostly
# stay on one worker. The figures were measured on two idle cores (`tests/phases.py` prints
# the slowest tests of each phase).
LONG_SECONDS = {
    "test_real_conditions.py": 60.0,
    "test_client_zoo.py": 40.0,
    "test_nginx_front.py": 20.0,
    "test_haproxy_front.py": 30.0,
    "test_node_stacks.py": 25.0,
    "test_go_stacks.py": 45.0,
    "test_faults_and_variants.py": 20.0,
    "test_framework_defaults.py": 20.0,
    "test_day_profile.py": 35.0,
    "test_day_stacks.py": 100.0,
}
# Single tests far longer than their module's figure (the day's faults and deviations spend a
# day of 3-second minutes, nearly four minutes each): begun first, not stolen last.
LONG_TESTS = {
    "test_should_deviation_warns_and_fails_only_when_strict[minute-headers-until-day]": 220.0,
    "test_fault_is_detected[day-refused-behind-minute-headers]": 225.0,
    "test_a_python_app_without_its_day_fails_the_day[flask-limiter]": 200.0,
    "test_express_with_its_minute_limiter_alone_fails_the_day": 165.0,
    "test_variant_passes[sliding-minute-with-day]": 145.0,
    "test_the_double_headerless_without_a_day_never_passes_the_day": 130.0,
    "test_fault_is_detected[day-never-enforced]": 115.0,
    "test_fault_is_detected[day-refuses-early]": 100.0,
    "test_the_reference_100_ms_away_on_a_real_minute_is_conformant[business]": 95.0,
    "test_a_quick_start_on_its_documented_hour_stops_not_conformant": 80.0,
    "test_a_front_refusing_every_caller_ends_the_run_not_conformant": 70.0,
    "test_every_catalogue_entry_is_verified_as_it_claims": 70.0,
    "test_the_certification_guide_runs_as_written_and_shows_what_it_says": 65.0,
    "test_the_install_step_then_the_check_step_as_a_runner_runs_them": 60.0,
}


def estimated_seconds(item: pytest.Item) -> float:
    return LONG_TESTS.get(item.name) or LONG_SECONDS.get(item.path.name, 0.0)


# The quick loop (`tox -e quick`, `pytest -m quick`): the unit tests of the checker, the client
# mode and the reference, each module a few seconds at most, and one whole checker run against
# the reference. What they leave out (runs against the double's faults, real stacks, fronts,
# hostile targets, real minutes) is what `tox -e test` is for.
QUICK_MODULES = {
    "test_bounds.py",
    "test_burst.py",
    "test_burst_transport.py",
    "test_causes.py",
    "test_client_rules.py",
    "test_connection.py",
    "test_console.py",
    "test_generation.py",
    "test_hints.py",
    "test_http_client.py",
    "test_options.py",
    "test_progress.py",
    "test_ratelimit.py",
    "test_reference_auth.py",
    "test_reference_categories.py",
    "test_reference_endpoints.py",
    "test_reference_upgrade_offers.py",
    "test_reference_validation.py",
    "test_reports.py",
    "test_response_checks.py",
    "test_served.py",
    "test_settings.py",
    "test_spec.py",
    "test_timeline.py",
    "test_verdict.py",
}
QUICK_TESTS = {"test_command.py::test_no_arguments_certifies_the_bundled_reference"}


SOLO_GROUPS_EACH = 2
SOLO_DEALT = {"zoo": itertools.count(), "bursts": itertools.count()}  # in collection order


def pytest_itemcollected(item: pytest.Item) -> None:
    named = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
    solo = item.get_closest_marker("solo")
    if (item.path.name in QUICK_MODULES and not (item.get_closest_marker("slow") or solo)) or (
        named in QUICK_TESTS
    ):
        item.add_marker(pytest.mark.quick)
    if solo:
        # tox's solo pass (`-n 4 --dist loadgroup`): the client zoo's tests dealt out to two
        # workers, the bursts that need a core for their minute to two others, one test at a
        # time on each; four at once, mostly waiting, held their verdicts beside a second
        # whole test run.
        kind = "zoo" if item.path.name == "test_client_zoo.py" else "bursts"
        dealt = next(SOLO_DEALT[kind])
        item.add_marker(pytest.mark.xdist_group(f"{kind}-{dealt % SOLO_GROUPS_EACH + 1}"))


@pytest.hookimpl(trylast=True)  # after `-m` deselected: the slices are of what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        return
    slices = [Slice(size) for size in slice_sizes(len(items), workers)]
    for item in sorted(filter(estimated_seconds, items), key=lambda i: -estimated_seconds(i)):
        share = min((s for s in slices if s.room), key=lambda s: s.seconds, default=None)
        if share is None:
            continue  # more long tests than places: the rest keep their order
        share.add(item)
    placed = {id(item) for share in slices for item in share.items}
    rest = iter([item for item in items if id(item) not in placed])
    for share in slices:
        share.items.extend(itertools.islice(rest, share.room))
    items[:] = [item for share in slices for item in share.items] + list(rest)


def slice_sizes(count: int, workers: int) -> list[int]:
    """The contiguous shares `--dist worksteal` first hands the workers, in its own way."""
    sizes = []
    for index in range(workers):
        sizes.append((count - sum(sizes)) // (workers - index))
    return sizes


@dataclass
class Slice:
    """One worker's first share of the collection: its long tests first."""

    size: int
    items: list[pytest.Item] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def room(self) -> int:
        return self.size - len(self.items)

    def add(self, item: pytest.Item) -> None:
        self.items.append(item)
        self.seconds += estimated_seconds(item)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # tox's later passes run only the solo tests and the one that needs the machine: a filter
    # (`tox -e test -- tests/reference`) that leaves none of them is no error.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.option.markexpr in (
        "solo and not machine",
        "machine",
    ):
        session.exitstatus = pytest.ExitCode.OK


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Tests of a service or of the browser skip on a laptop without it, but CI promises them
    # all: there they fail (.ci/run installs Chromium and nginx).
    for marker, (name, address) in SERVICES.items():
        if item.get_closest_marker(marker) and not reachable(address):
            _missing("{} is not reachable on {}:{}".format(name, *address))
    if item.get_closest_marker("browser") and chromium_path() is None:
        _missing("Chromium is not installed (apt-get install chromium)")
    if item.get_closest_marker("nginx") and nginx_path() is None:
        _missing("nginx is not installed (apt-get install nginx)")
    if item.get_closest_marker("haproxy") and haproxy_path() is None:
        _missing("haproxy is not installed (apt-get install haproxy)")
    if item.get_closest_marker("java") and not (shutil.which("javac") and shutil.which("java")):
        _missing("the JDK is not installed (apt-get install default-jdk-headless)")


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}, and CI=true requires it", pytrace=False)
    pytest.skip(reason)


ReferenceFactory = Callable[..., ReferenceProcess]


@pytest.fixture
def reference_server() -> Iterator[ReferenceFactory]:
    """Start `petstore-reference` subprocesses; all are stopped after the test.

    `reference_server(keys=["k:free"], minute_seconds=60, database=None,
    rate_limit_storage=None, extra=())` returns a running `ReferenceProcess` (`.base_url`).
    """
    started: list[ReferenceProcess] = []

    def start(
        keys: Sequence[str],
        minute_seconds: int = 60,
        database: str | os.PathLike[str] | None = None,
        rate_limit_storage: str | None = None,
        extra: Sequence[str] = (),
    ) -> ReferenceProcess:
        server = start_reference(
            reference_args(
                keys,
                minute_seconds=minute_seconds,
                database=database,
                rate_limit_storage=rate_limit_storage,
                extra=extra,
            )
        )
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line that says how sensitive and how fair the checker was measured to be."""
    counts = {"fault": [0, 0], "variant": [0, 0], "should": [0, 0]}
    prefixes = {
        "fault": "test_faults_and_variants.py::test_fault_is_detected[",
        "variant": "test_faults_and_variants.py::test_variant_passes[",
        "should": (
            "test_faults_and_variants.py::test_should_deviation_warns_and_fails_only_when_strict["
        ),
    }
    for outcome, reports in terminalreporter.stats.items():
        if outcome == "deselected":  # items, not reports: they did not run
            continue
        for report in reports:
            if getattr(report, "when", "call") != "call":
                continue
            for kind, prefix in prefixes.items():
                if prefix in getattr(report, "nodeid", ""):
                    counts[kind][1] += 1
                    counts[kind][0] += outcome == "passed"
    if counts["fault"][1] or counts["variant"][1]:
        terminalreporter.write_line(
            f"faults detected {counts['fault'][0]}/{counts['fault'][1]}, "
            f"legitimate variants passed {counts['variant'][0]}/{counts['variant'][1]}, "
            f"SHOULD deviations warned {counts['should'][0]}/{counts['should'][1]}"
        )
