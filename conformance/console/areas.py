"""The checker's own console, the default of `petstore-conformance`: what the checker does and
finds, not pytest's rows of tests.

The command loads this module as a pytest plugin (`-p conformance.console.areas`); plain
`pytest --pyargs conformance.suite` never does, and keeps pytest's console. Once pytest has
made its terminal reporter, this module puts in its place one that writes nowhere (but for an
internal error, which still reaches stderr) and prints instead:

- the target, plan and profile, and how many tests in how many areas;
- one line per area of the suite as its last test ends, with its counts and the requirements
  its failed tests broke;
- the waits, and on a terminal a live bar of the tests done (`console.progress`);
- then the failed requirements' blocks and the verdict (`console.summary`).

pytest's own view stays one word away: `-- -v` (each test's name and outcome), `-- --co`, or
`--pytest-output`.
"""

from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass, field

import pytest
from _pytest.terminal import TerminalReporter

from conformance import plugin
from conformance.console import summary
from conformance.console.progress import Bar, Progress
from conformance.console.requirements import failure_blocks, plain

AREAS = {
    "test_auth": "auth",
    "test_categories": "categories",
    "test_endpoints": "endpoints",
    "test_generated": "generated",
    "test_validation": "validation",
    "test_rate_limits": "limits",
}
"""The suite's modules and the area each checks, as a vendor names it."""


class Discard(io.TextIOBase):
    """Where pytest's rows go: nowhere."""

    def write(self, text: str) -> int:
        return len(text)


class QuietReporter(TerminalReporter):
    """pytest's terminal reporter, writing nowhere: every plugin that reports through it still
    finds it. An internal error of pytest's still reaches stderr."""

    def pytest_internalerror(self, excrepr) -> bool:
        for line in str(excrepr).split("\n"):
            sys.stderr.write(f"INTERNALERROR> {line}\n")
        return True


def wants_pytest_view(config: pytest.Config, run) -> bool:
    """pytest's own console: asked for with -v, --co or --pytest-output."""
    return (
        config.option.verbose > 0
        or config.option.collectonly
        or bool(getattr(run.settings, "pytest_output", False))
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """After pytest made its reporter: put the quiet one in its place, and the areas beside."""
    state = config.stash.get(plugin.STATE, None)
    run = plugin.provided_run(config)
    if state is None or run is None or wants_pytest_view(config, run):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
        config.pluginmanager.register(QuietReporter(config, Discard()), "terminalreporter")
    state.progress = Progress(state.progress.stream, own=True)
    state.console = AreaConsole(run, state.progress)
    config.pluginmanager.register(state.console, "petstore-conformance-areas")


@dataclass
class Area:
    name: str
    tests: int = 0
    ended: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)  # requirements its failed tests broke

    def describe(self) -> str:
        order = ("passed", "failed", "error", "skipped")
        counts = ", ".join(f"{self.outcomes[o]} {o}" for o in order if self.outcomes.get(o))
        text = f"{self.name}: {counts or 'no test'}"
        if self.broken:
            text += f"; failed {', '.join(sorted(set(self.broken)))}"
        return text


def area_of(nodeid: str) -> str:
    """The area of a test, from its module: `.venv/lib/.../suite/test_auth.py::x` is auth."""
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
    return AREAS.get(module, module.removeprefix("test_"))


class AreaConsole:
    """A pytest plugin: counts each area's tests as they end, and says so on the console."""

    def __init__(self, run, progress: Progress):
        self.run = run
        self.progress = progress
        self.areas: dict[str, Area] = {}
        self.outcome: dict[str, str] = {}  # a test's, until its teardown ends it
        self.bar: Bar | None = None
        self.ended = 0

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            area = area_of(item.nodeid)
            self.areas.setdefault(area, Area(area)).tests += 1
        settings = self.run.settings
        self.progress.note(
            f"checking {settings.base_url} (plan {settings.plan}, profile {settings.profile}): "
            f"{len(session.items)} tests in {len(self.areas)} areas"
        )
        self.bar = self.progress.start("checked", len(session.items), "tests")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite module that cannot be collected: its error's last line, which pytest's
        reporter, writing nowhere, would not show (the run then has no verdict)."""
        if report.failed:
            last = (str(report.longrepr).strip().splitlines() or ["?"])[-1]
            last = re.sub(r"^E\s+", "", last)  # pytest's mark of an error line
            self.progress.note(f"cannot collect {area_of(report.nodeid)}: {plain(last)}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        area = self.areas.get(area_of(report.nodeid))
        if area is None:
            return
        if report.when == "call" or report.skipped or report.failed:
            outcome = "error" if report.failed and report.when != "call" else report.outcome
            if self.outcome.get(report.nodeid) not in ("failed", "error"):
                self.outcome[report.nodeid] = outcome
        if report.when == "call" and report.failed:
            area.broken += getattr(report, "failed_requirement_ids", [])
        if report.when == "teardown":
            self.end(area, self.outcome.pop(report.nodeid, "passed"))

    def end(self, area: Area, outcome: str) -> None:
        area.outcomes[outcome] = area.outcomes.get(outcome, 0) + 1
        area.ended += 1
        self.ended += 1
        if self.bar is not None:
            self.progress.advance(self.bar, self.ended)
        if area.ended == area.tests:
            self.progress.note(area.describe())

    def finish(self, run, verdict, conclusion) -> None:
        """The run is judged and its reports written: the blocks and the verdict."""
        self.progress.close()
        writer = summary.PlainWriter(self.progress.stream)
        if not failure_blocks(verdict):
            writer.write_line(
                ""
            )  # the areas above, what was judged below (a block's heading says so)
        summary.write(writer, run, verdict, conclusion)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.progress.close()
