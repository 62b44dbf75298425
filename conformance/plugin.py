"""The pytest plugin: options, fixtures, the requirement ledger around each test, the reports.

Loaded through the `pytest11` entry point in every pytest session where the package is
installed, so it stays inert until a test of `conformance.suite` asks for the `run` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pytest
from pytest_html import extras

from conformance import interruption
from conformance.console import closing, summary
from conformance.console.progress import Progress
from conformance.httpclient.budget import BudgetExhausted
from conformance.httpclient.client import TargetThrottled, TargetUnreachable
from conformance.judging import causes, checks, fronts, hints
from conformance.judging.verdict import Verdict, decide
from conformance.options import OPTIONS
from conformance.reports import html, junit, statement
from conformance.run import NoVerdict, Run, open_run
from conformance.settings import Settings, SettingsError, from_environment, resolve
from conformance.spec import catalogue

SUITE_PACKAGE = "conformance.suite"


@dataclass
class State:
    run: Run | None = None
    ledger: checks.Ledger = field(default_factory=checks.ledger)
    stopped: str | None = None  # why the remaining tests are skipped
    broken_tests: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    progress: Progress = field(default_factory=lambda: Progress(None))
    conclusion: closing.Conclusion | None = None
    restore_signals: Callable[[], None] = lambda: None
    console: Any = None  # the checker's own console (console.areas), where it replaces pytest's


STATE = pytest.StashKey[State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("petstore-conformance", "Pet Store conformance suite")
    for option in OPTIONS:
        group.addoption(
            option.pytest_flag or option.flag,
            dest="petstore_" + option.name,
            action="store_true" if option.switch else "store",
            default=None,
            help=option.describe(),
        )


def options_from(config: pytest.Config) -> dict:
    return resolve({option.name: config.getoption("petstore_" + option.name) for option in OPTIONS})


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    suite_run = any("conformance.suite" in arg or "conformance/suite" in arg for arg in config.args)
    if getattr(config.option, "numprocesses", None) and suite_run:
        # One client paces and budgets every request of a run: parallel workers would each
        # spend the keys on their own, and could get a key banned.
        raise pytest.UsageError("the conformance suite runs in one process; drop -n")
    if suite_run and config.option.tbstyle == "auto":
        # The closing summary gives one block per failed requirement; pytest's per-test detail
        # is for -v (and the HTML report).
        config.option.tbstyle = "short" if config.option.verbose > 0 else "no"
    if suite_run and config.option.verbose < 2 and hasattr(config.option, "force_short_summary"):
        # pytest prints each FAILED line's whole message when it sees a CI: three lines a test,
        # the evidence the requirement's block already shows. One line each, as on a terminal.
        config.option.force_short_summary = True
    config.addinivalue_line("markers", "smoke: also runs in the read-only smoke profile")
    config.addinivalue_line("markers", "exhausts: spends a key's quota; runs last, never in smoke")
    config.addinivalue_line(
        "markers", "history: judges the run's traffic so far; runs after all but the exhaustion"
    )
    config.addinivalue_line(
        "markers", "day: spends a key's day; only in the day profile, after the exhaustion"
    )
    # The command's preflight already recorded checks in the current ledger: keep them.
    config.stash[STATE] = State(
        ledger=checks.ledger() if provided_run(config) else checks.start_run(),
        progress=Progress(console_stream(), lambda: terminal_mid_line(config)),
    )
    if suite_run:
        config.stash[STATE].restore_signals = interruption.install()
    report_dir = config.getoption("petstore_report_dir")
    # Under plain pytest, --report-dir asks for all three reports, like the command writes.
    if report_dir and not getattr(config.option, "htmlpath", None):
        config.option.htmlpath = str(Path(report_dir) / "report.html")
        config.option.self_contained_html = True
    if report_dir and not config.option.xmlpath:
        config.option.xmlpath = str(Path(report_dir) / "junit.xml")


def console_stream() -> TextIO | None:
    """A stream to the console that pytest's output capture does not swallow: a duplicate of
    stdout, taken now, before any test runs with its output captured."""
    try:
        return os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
    except OSError:
        return None


def terminal_mid_line(config: pytest.Config) -> bool:
    """Whether pytest left its current line unfinished (a row of progress dots)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    writer = getattr(reporter, "_tw", None)
    return bool(getattr(writer, "width_of_current_line", 0))


def is_suite_item(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    return module is not None and module.__name__.startswith(SUITE_PACKAGE + ".")


def test_id(item: pytest.Item) -> str:
    """`test_auth.py::test_name[params]`, the same wherever the package is installed."""
    return f"{item.module.__name__.rsplit('.', 1)[-1]}.py::{item.name}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = [item for item in items if is_suite_item(item)]
    if not suite:
        return

    profile = config.getoption("petstore_profile") or from_environment("profile") or "full"
    if profile == "smoke":
        skip = pytest.mark.skip(reason="not part of the read-only smoke profile")
        for item in suite:
            if item.get_closest_marker("smoke") is None:
                item.add_marker(skip)
    if profile != "day":
        skip = pytest.mark.skip(reason="spends a key's day: only in the day profile")
        for item in suite:
            if item.get_closest_marker("day") is not None:
                item.add_marker(skip)
    # Exhausting a key comes last, so nothing else runs on a key that has just been limited;
    # judging the run's traffic comes just before, when every other test has sent its own.
    items.sort(key=run_order)


def run_order(item: pytest.Item) -> int:
    if item.get_closest_marker("day"):
        return 3  # spends what the exhaustion left of the key's day, so after it
    if item.get_closest_marker("exhausts"):
        return 2
    return 1 if item.get_closest_marker("history") else 0


@pytest.fixture(scope="session")
def run(request: pytest.FixtureRequest) -> Run:
    """The run under way: built by the command, or here from the options on first use."""
    state = request.config.stash[STATE]
    if state.run is None:
        state.run = provided_run(request.config) or open_or_exit(request.config)
        state.run.attach_progress(state.progress)
    return state.run


def provided_run(config: pytest.Config) -> Run | None:
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, Run):
            return plugin
    return None


def open_or_exit(config: pytest.Config) -> Run:
    checks.set_current_test("preflight")
    try:
        return open_run(options_from(config))
    except (NoVerdict, SettingsError) as error:
        config.stash[STATE].stopped = str(error)
        pytest.exit(f"petstore-conformance: {error}", returncode=2)


@pytest.fixture(scope="session")
def settings(run: Run) -> Settings:
    return run.settings


@pytest.fixture(scope="session")
def client(run: Run):
    return run.client


def pytest_runtest_setup(item: pytest.Item) -> None:
    if not is_suite_item(item):
        return
    checks.set_current_test(test_id(item))
    stopped = item.config.stash[STATE].stopped
    if stopped:
        pytest.skip(f"not run: {stopped}")


def blocking(
    results: list[checks.CheckResult], strict: bool, test: str
) -> list[checks.CheckResult]:
    """The failures that fail `test`: MUST ones (SHOULD ones too when strict) that no more
    specific failure on the same response explains, and that the test asserted itself or, for
    checks of every response, that the catalogue says the test verifies."""
    function = test.split("[", 1)[0]
    return [
        r
        for r in causes.settle(results).kept
        if not r.passed
        and (strict or catalogue()[r.requirement_id].level == "MUST")
        and (not r.every_response or function in catalogue()[r.requirement_id].tests)
    ]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Run the test, then fail it if it recorded a MUST failure (or, strict, a SHOULD one)."""
    if not is_suite_item(item):
        return (yield)
    state = item.config.stash[STATE]
    this_test = test_id(item)
    checks.set_current_test(this_test)
    try:
        yield
    except checks.RequirementFailed:
        pass  # raised by require(); re-raised below with every failure of the test
    except (BudgetExhausted, TargetThrottled, TargetUnreachable) as error:
        state.stopped = stop_reason(error)
        pytest.skip(f"not run: {state.stopped}")
    except (pytest.skip.Exception, pytest.fail.Exception):
        raise
    except Exception:
        state.broken_tests.append(this_test)
        raise
    strict = state.run.settings.strict if state.run else False
    failures = blocking(state.ledger.for_test(this_test), strict, this_test)
    if failures:
        raise checks.RequirementFailed(failures)
    return None


def stop_reason(error: Exception) -> str:
    if isinstance(error, BudgetExhausted):
        return f"{error}; raise --max-requests"
    return str(error)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if not is_suite_item(item) or call.when != "call":
        return report
    if call.excinfo is not None and call.excinfo.errisinstance(checks.RequirementFailed):
        # The failed requirements and their evidence, not a traceback into this module.
        report.longrepr = str(call.excinfo.value)
        failures = call.excinfo.value.failures
        report.failed_requirement_ids = sorted({f.requirement_id for f in failures})
    results = item.config.stash[STATE].ledger.for_test(test_id(item))
    report.requirement_ids = sorted({result.requirement_id for result in results})
    item.user_properties.append(("requirements", " ".join(report.requirement_ids)))
    failures = [result for result in results if not result.passed]
    if failures:
        report.extras = [*getattr(report, "extras", []), extras.html(html.evidence_html(failures))]
    return report


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session):
    state = session.config.stash[STATE]
    if state.run is None:
        return (yield)
    run = state.run
    if interruption.signal_received():
        # SIGTERM or SIGINT: nothing more is sent, from any thread; the reports say so. What
        # failed before it is proven all the same: the verdict follows it (decide).
        state.stopped = interruption.reason(run.started_at)
        run.client.halt(f"the run was {state.stopped}")
    reason = state.stopped
    if state.broken_tests:
        reason = f"tests could not complete: {', '.join(state.broken_tests)}"
    for result in fronts.refusal_failures(run.client.exchanges, state.ledger.results):
        state.ledger.add(result)
    state.verdict = decide(
        state.ledger.results,
        strict=run.settings.strict,
        profile=run.settings.profile,
        no_verdict_reason=reason,
        untested_reason=f"not run: {reason}" if reason else untested_reason(run),
        unavailable=unavailable(run.settings),
        cannot_check=state.ledger.unavailable,
        left_open=state.ledger.left_open,
        skipped_cases=state.ledger.skipped_cases,
        unproven=state.ledger.unproven,
    )
    hints.attach(state.verdict, run.client.exchanges)
    state.conclusion = closing.conclude(run, state.verdict)
    statement.write(
        run.settings.report_dir / "conformance.json",
        run,
        state.verdict,
        state.conclusion.statement_fields(),
    )
    closing.write_evidence(run, state.verdict)
    session.exitstatus = state.conclusion.exit_status
    yield  # pytest-html and junitxml write their reports here
    if session.config.option.xmlpath:
        stated = {"vendor": run.settings.vendor, "implementation": run.settings.implementation}
        junit.agree(Path(session.config.option.xmlpath), state.verdict, state.conclusion, stated)
    closing.write_attestation(run, state.conclusion)
    closing.write_package(run, state.conclusion)
    session.exitstatus = state.conclusion.exit_status  # 2 if the package could not be written
    if state.console is not None:
        state.console.finish(run, state.verdict, state.conclusion)


def unavailable(settings: Settings) -> dict[str, str]:
    """Requirements this run cannot check with what it was given."""
    reasons = {}
    if not settings.spare_api_key:
        reasons["LIM-PER-KEY"] = "needs a second key of the plan (--spare-api-key)"
    if settings.profile != "day":
        for id_ in DAY_REQUIREMENTS:
            reasons[id_] = (
                "checked by the day profile only (--profile day), which spends a key's day"
            )
    if None in settings.plan_limits:
        reasons["LIM-LIMIT-PLAN"] = (
            "the enterprise figures were not given (--requests-per-minute, --requests-per-day)"
        )
    return reasons


def untested_reason(run: Run) -> str:
    if run.settings.profile == "smoke":
        return "not checked by the read-only smoke profile"
    return "no test of this run checked it"


DAY_REQUIREMENTS = ("LIM-DAY-ENFORCED", "LIM-DAY-HONOURED")
"""Judged only by the day profile, which spends a key's day."""


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.restore_signals()
    if state is not None and state.run is not None and not provided_run(config):
        state.run.close()


def pytest_html_report_title(report) -> None:
    report.title = "Pet Store conformance report"


def pytest_html_results_summary(prefix, summary, postfix, session) -> None:
    state = session.config.stash[STATE]
    if state.verdict is not None:
        prefix.append(html.summary_html(state.run, state.verdict, state.conclusion))


def pytest_html_results_table_header(cells) -> None:
    cells.insert(2, "<th>Requirements</th>")


def pytest_html_results_table_row(report, cells) -> None:
    ids = getattr(report, "requirement_ids", [])
    cells.insert(2, f"<td>{' '.join(ids)}</td>")


def pytest_metadata(metadata: dict) -> None:
    # The environment table of the HTML report must not carry anything that may be a secret.
    for name in [n for n in metadata if any(w in n.upper() for w in ("KEY", "TOKEN", "SECRET"))]:
        del metadata[name]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if state.verdict is not None and state.console is None:
        summary.write(terminalreporter, state.run, state.verdict, state.conclusion)
