"""Unit tests of conformance.console.requirements: one block per failed requirement, and a closing
list of what was warned and what was not tested, with the reasons; and of conformance.console.areas:
a line per area of the suite as its last test ends."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from types import SimpleNamespace

from conformance.console.areas import AreaConsole, area_of
from conformance.console.progress import Progress
from conformance.console.requirements import closing_lines, failure_blocks, plain
from conformance.httpclient.client import Exchange
from conformance.judging.checks import CheckResult
from conformance.judging.verdict import decide
from conformance.settings import Settings
from conformance.spec import catalogue

HEADERS = [("Content-Type", "application/json"), ("Server", "uvicorn"), ("Date", "x")]


def exchange(number: int, status: int = 400, body: str = '{"code":"bad"}') -> Exchange:
    return Exchange(
        number,
        "main",
        "POST",
        "http://api.test/v1/categories",
        {"Authorization": "Bearer ***"},
        "{}",
        status,
        HEADERS,
        body,
        0,
        0.01,
        _curl="curl -i -X POST http://api.test/v1/categories --data-binary '{}'",
    )


def passing(*but: str) -> list[CheckResult]:
    return [
        CheckResult(r.id, True, "held", r.tests[0] if r.tests else "test_ok")
        for r in catalogue().values()
        if not r.not_testable and r.id not in but
    ]


@dataclass
class FakeRun:
    settings: Settings = field(
        default_factory=lambda: Settings(
            base_url="http://api.test/v1", api_key="key-main-k", run_id="1-ab"
        )
    )
    created_categories: list = field(default_factory=lambda: [{"id": 1, "name": "psc-ab-1"}])


def test_one_block_per_failed_requirement_with_basis_evidence_and_curl():
    failures = [
        CheckResult(
            "LIM-HEADERS-PRESENT",
            False,
            f"a 400 lacks the headers ({n})",
            f"test_validation.py::test_x[{n}]",
            exchange(n),
        )
        for n in range(1, 31)
    ]
    verdict = decide([*passing(), *failures])
    [block] = failure_blocks(verdict)
    assert block[0] == "LIM-HEADERS-PRESENT (MUST): 30 of 31 checks failed, in 30 tests"
    assert block[1].startswith('  basis: the document: "Every API response carries the headers')
    assert "(Limits rule 1)" in block[1]
    assert "  failed: a 400 lacks the headers (1)" in block
    assert any(
        line.startswith("  evidence: POST http://api.test/v1/categories -> 400") for line in block
    )
    assert "    X-RateLimit-Limit: (absent)" in block
    assert "    Content-Type: application/json" not in block  # not a header of this rule
    assert "  reproduce: curl -i -X POST http://api.test/v1/categories --data-binary '{}'" in block
    assert block[-1] == (
        "  first seen in: test_validation.py::test_x[1] and 29 more (-v, or the HTML report)"
    )
    assert len(block) <= 12  # thirty failures, one short block


def test_a_block_cites_the_rfc_and_why_where_the_document_is_silent():
    failure = CheckResult("AUTH-WWW-AUTHENTICATE", False, "no challenge", "test_auth", exchange(1))
    [block] = failure_blocks(decide([*passing(), failure]))
    assert any(line.startswith("  why: The document only says 401; RFC 9110") for line in block)
    # The RFC's own requirement-level words, not the document's.
    assert block[1].startswith(
        '  basis: RFC 9110 section 15.5.2: "The server generating a 401 response MUST send'
    ), block[1]
    assert "    WWW-Authenticate: (absent)" in block


def test_a_block_names_the_hints_and_shows_no_control_character():
    body = "nul \x00 and esc \x1b here"
    failure = CheckResult(
        "ERR-SCHEMA", False, f"not JSON: {body}", "test_v", exchange(1, body=body)
    )
    verdict = decide([*passing(), failure])
    next(o for o in verdict.outcomes if o.outcome == "failed").hints = ["the proxy did it"]
    [block] = failure_blocks(verdict)
    assert "  hint: the proxy did it" in block
    text = "\n".join(block)
    assert "\x00" not in text and "\x1b" not in text
    assert "nul \\x00 and esc \\x1b here" in text


def test_the_closing_lines_list_warned_not_tested_and_blocked_with_reasons():
    results = passing("LIM-HEADERS-VALID", "LIM-RESET-HONEST", "DEP-SUNSET-FUTURE", "LIM-PER-KEY")
    results += [
        CheckResult("LIM-HEADERS-VALID", False, "Limit '60.0'", "t", exchange(1, 200)),
        CheckResult("DEP-DEPRECATION-HEADER", False, "got 'true'", "t", exchange(2, 200)),
    ]
    verdict = decide(
        results,
        unavailable={"LIM-PER-KEY": "needs a second key of the plan (--spare-api-key)"},
        skipped_cases={"AUTH-INVALID-KEY-401": ["the key in the URL: needs the opt-in"]},
    )
    lines = closing_lines(FakeRun(), verdict)
    assert "warned (SHOULD; a failure under --strict):" in lines
    assert "  DEP-DEPRECATION-HEADER: got 'true'" in lines
    assert "not tested:" in lines
    assert "  LIM-PER-KEY (MUST): needs a second key of the plan (--spare-api-key)" in lines
    blocked = [line for line in lines if line.startswith("  LIM-RESET-HONEST (MUST): blocked by")]
    assert blocked and "LIM-HEADERS-VALID (failed)" in blocked[0]
    assert "  DEP-SUNSET-FUTURE (SHOULD): no test of this run checked it" in lines
    assert (
        "  AUTH-INVALID-KEY-401 (MUST), passed but for one case: the key in the URL: needs the "
        "opt-in" in lines
    )
    assert any(line.startswith("not testable over HTTP: LIM-PLAN-CHANGE") for line in lines)
    assert any("'psc-ab-'" in line for line in lines)


def test_a_clean_run_closes_with_only_what_cannot_be_tested():
    lines = closing_lines(FakeRun(created_categories=[]), decide(passing()))
    assert [line.split(":")[0] for line in lines] == ["not testable over HTTP"]


def test_plain_keeps_text_and_escapes_controls():
    assert plain("Chats élégants 🐈") == "Chats élégants 🐈"
    assert plain("a\tb\nc\rd\x00e\x7f") == "a b\\nc\\rd\\x00e\\x7f"


# --- the checker's own console: a line per area as its last test ends ---------------------


class Report(SimpleNamespace):
    """What pytest_runtest_logreport is given, as far as the areas read it."""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def skipped(self) -> bool:
        return self.outcome == "skipped"


def phases(nodeid: str, call: str = "passed", setup: str = "passed", **extra) -> list[Report]:
    reports = [Report(nodeid=nodeid, when="setup", outcome=setup)]
    if setup == "passed":
        reports.append(Report(nodeid=nodeid, when="call", outcome=call, **extra))
    return [*reports, Report(nodeid=nodeid, when="teardown", outcome="passed")]


SUITE = ".venv/lib/python3.11/site-packages/conformance/suite"


def test_an_area_is_named_from_its_module_wherever_the_package_is_installed():
    assert area_of(f"{SUITE}/test_auth.py::test_x[a-b]") == "auth"
    assert area_of("test_rate_limits.py::test_day") == "limits"
    assert area_of("test_something_new.py::test_y") == "something_new"


def test_each_area_gets_one_line_once_its_last_test_ends_with_counts_and_broken_ids():
    console = io.StringIO()
    run = SimpleNamespace(settings=FakeRun().settings)
    areas = AreaConsole(run, Progress(console, own=True))
    tests = [f"{SUITE}/test_auth.py::t{n}" for n in range(3)] + ["test_categories.py::c"]
    areas.pytest_collection_finish(
        SimpleNamespace(items=[SimpleNamespace(nodeid=t) for t in tests])
    )
    failed = {"failed_requirement_ids": ["AUTH-WWW-AUTHENTICATE"]}
    reports = [
        *phases(tests[0]),
        *phases(tests[1], "failed", **failed),
        *phases(tests[3]),
        *phases(tests[2], setup="skipped"),
    ]
    for report in reports:
        areas.pytest_runtest_logreport(report)
    assert console.getvalue().splitlines() == [
        "petstore-conformance: checking http://api.test/v1 (plan free, profile full): 4 tests "
        "in 2 areas",
        "petstore-conformance: categories: 1 passed",
        "petstore-conformance: auth: 1 passed, 1 failed, 1 skipped; failed AUTH-WWW-AUTHENTICATE",
    ]
