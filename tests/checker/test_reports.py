"""Unit tests of the report writers: the `conformance.json` statement and the HTML sections."""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field

import httpx
import pytest
import yaml

from conformance import __version__, spec
from conformance.httpclient import connection
from conformance.httpclient.client import ConformanceClient, Exchange
from conformance.judging import checks
from conformance.judging.verdict import decide
from conformance.reports import statement as statement_module
from conformance.reports.html import evidence_html, summary_html
from conformance.run import Run
from conformance.settings import Settings
from conformance.spec import catalogue

pytestmark = pytest.mark.usefixtures("fresh_ledger")

MAIN = "sk-main-Report-Secret-5e1d"
SPARE = "sk-spare-Report-Secret-0a9c"
BASE = "http://petstore.test/v1"
STARTED = 1_740_830_400  # 2025-03-01T12:00:00Z
FINISHED = STARTED + 95
FAILING_ID = "ERR-STATUS-MATCH"
SCRIPT = "<script>alert('key')</script>"


@dataclass
class FakeClient:
    requests_sent: int = 7
    per_key: dict[str, int] = field(default_factory=lambda: {"main": 4, "spare": 2, "none": 1})
    exchanges: list = field(default_factory=list)
    response_seconds: float = 10.0
    max_wait: float = 120.0

    def requests_per_key(self) -> dict[str, int]:
        return dict(self.per_key)

    def seconds_waited_per_key(self) -> dict[str, float]:
        return {"main": 50.04, "spare": 61.96}


@dataclass
class FakeRun:
    settings: Settings
    client: FakeClient = field(default_factory=FakeClient)
    reference: object = None
    warnings: list[str] = field(default_factory=list)
    created_categories: list[dict] = field(default_factory=list)
    started_at: float = STARTED
    proxy: str | None = None
    har_note: str = ""

    def connection_fields(self) -> dict:
        return connection.statement_fields(False, self.settings.tls, self.proxy, None)

    bounds = Run.bounds
    describe_bounds = Run.describe_bounds


@pytest.fixture
def settings() -> Settings:
    return Settings(
        base_url=BASE,
        api_key=MAIN,
        spare_api_key=SPARE,
        plan="pro",
        profile="full",
        seed=11,
        run_id="20250301120000-beef",
    )


@pytest.fixture
def run(settings) -> FakeRun:
    return FakeRun(
        settings=settings,
        warnings=["the base URL does not end in /v1"],
        created_categories=[{"id": 3, "name": settings.name_prefix + "1-<i>x</i>"}],
    )


def server(request: httpx.Request) -> httpx.Response:
    """A faulty target: echoes the Authorization header, and a wrong Error.status."""
    echoed = request.headers.get("authorization", "")
    return httpx.Response(
        400,
        json={"code": "bad", "message": f"refused {echoed} <b>bold</b>", "status": 422},
        headers={"X-Echo": echoed},
    )


@pytest.fixture
def failing_exchange() -> Exchange:
    keys = {"main": MAIN, "spare": SPARE}
    with ConformanceClient(BASE, keys, transport=httpx.MockTransport(server)) as client:
        return client.post("/categories", json={"name": "Dogs"})


def all_passing() -> list[checks.CheckResult]:
    return [
        checks.CheckResult(r.id, True, "held", r.tests[0] if r.tests else "test_ok")
        for r in catalogue().values()
        if not r.not_testable
    ]


@pytest.fixture
def failing_verdict(failing_exchange):
    checks.set_current_test("test_errors.py::test_status_match")
    checks.expect(FAILING_ID, False, f"Error.status must be 400 {SCRIPT}", failing_exchange)
    checks.set_current_test("")
    return decide([*all_passing(), *checks.ledger().results])


def entry(document: dict, requirement_id: str) -> dict:
    [found] = [e for e in document["requirements"] if e["id"] == requirement_id]
    return found


# -- conformance.json -----------------------------------------------------------------------


def test_the_statement_has_every_contract_field(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    openapi = yaml.safe_load(spec.openapi_path().read_text(encoding="utf-8"))
    assert document["suite_version"] == __version__
    assert document["spec_version"] == str(openapi["info"]["version"]) == "1.0.0"
    assert document["spec_sha256"] == hashlib.sha256(spec.openapi_path().read_bytes()).hexdigest()
    interface = hashlib.sha256(spec.interface_path().read_bytes()).hexdigest()
    assert document["interface_sha256"] == interface
    assert document["target"] == BASE
    assert document["plan"] == "pro"
    assert document["plan_limits"] == {"requests_per_minute": 300, "requests_per_day": 10_000}
    assert document["profile"] == "full"
    assert document["time"] == "2025-03-01T12:00:00Z"
    assert document["finished"] == "2025-03-01T12:01:35Z"
    assert document["verdict"] == "not conformant"
    assert document["exit_status"] == 1
    assert document["failed_requirements"] == [FAILING_ID]
    assert document["bundled_reference"] is False
    assert document["seed"] == 11
    assert document["run_id"] == "20250301120000-beef"
    assert document["warnings"] == ["the base URL does not end in /v1"]


def test_the_statement_reports_requests_per_key_and_the_budget(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    assert document["requests"] == {
        "total": 7,
        "budget": run.settings.budget,
        "per_key": {"main": 4, "spare": 2, "none": 1},
        "seconds_waited_per_key": {"main": 50.0, "spare": 62.0},
    }


def test_the_statement_lists_the_categories_created(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    assert document["created_categories"] == run.created_categories


def test_every_requirement_has_an_entry_with_id_level_outcome_evidence(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    entries = document["requirements"]
    assert [e["id"] for e in entries] == list(catalogue())
    for item in entries:
        assert item["level"] == catalogue()[item["id"]].level
        assert item["outcome"] in {"passed", "failed", "warned", "not-tested"}
        assert isinstance(item["evidence"], list)
    assert entry(document, "CAT-LIST-200")["outcome"] == "passed"
    assert entry(document, "CAT-LIST-200")["evidence"] == []
    assert entry(document, FAILING_ID)["outcome"] == "failed"


def test_each_entry_and_matrix_row_shows_the_basis(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    challenge = entry(document, "AUTH-WWW-AUTHENTICATE")["basis"]
    assert challenge["source"] == "RFC 9110 section 15.5.2"
    assert "MUST send a WWW-Authenticate header field" in challenge["words"]
    headers = entry(document, "LIM-HEADERS-PRESENT")["basis"]
    assert headers["source"] == "document"
    assert headers["words"].startswith("Every API response carries the headers")
    should = entry(document, "ERR-429-BODY")  # a SHOULD without a basis says why it is one
    assert "basis" not in should and "not shown" in should["rationale"], should
    page = html.unescape(summary_html(run, failing_verdict))
    assert 'basis: RFC 9110 section 15.5.2: "The server generating a 401 response MUST' in page
    assert 'basis: the document: "Every API response carries the headers' in page


def test_a_not_tested_entry_says_why(run, failing_verdict):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    not_tested = entry(document, "LIM-PLAN-CHANGE")
    assert not_tested["outcome"] == "not-tested"
    assert not_tested["reason"] == catalogue()["LIM-PLAN-CHANGE"].not_testable
    assert "reason" not in entry(document, "CAT-LIST-200")


def test_a_failing_check_has_the_redacted_exchange_and_curl_line_as_evidence(
    run, failing_verdict, failing_exchange
):
    document = statement_module.statement(run, failing_verdict, FINISHED)
    failing = entry(document, FAILING_ID)
    assert failing["failed_checks"] == 1
    assert failing["tests"] == [
        "test_auth.py::test_wrong_credential_is_401",
        "test_errors.py::test_status_match",
    ]
    assert failing["checks"] == 2
    [evidence] = failing["evidence"]
    assert evidence["test"] == "test_errors.py::test_status_match"
    assert SCRIPT in evidence["message"]
    exchange = evidence["exchange"]
    assert exchange["method"] == "POST"
    assert exchange["url"] == BASE + "/categories"
    assert exchange["status"] == 400
    assert exchange["request_headers"]["Authorization"] == "Bearer ***"
    assert ["X-Echo", "Bearer ***"] in exchange["response_headers"]
    assert '"status":422' in exchange["response_body"].replace(" ", "")
    assert evidence["curl"] == failing_exchange.curl()
    assert evidence["curl"].startswith("curl ")
    assert "$PETSTORE_API_KEY" in evidence["curl"]


def test_no_key_anywhere_in_the_statement(run, failing_verdict):
    text = json.dumps(statement_module.statement(run, failing_verdict, FINISHED))
    assert MAIN not in text
    assert SPARE not in text


def test_evidence_is_capped_per_requirement(run, failing_exchange):
    for n in range(statement_module.MAX_EVIDENCE + 2):
        checks.expect(FAILING_ID, False, f"failure {n}", failing_exchange)
    verdict = decide([*all_passing(), *checks.ledger().results])
    failing = entry(statement_module.statement(run, verdict, FINISHED), FAILING_ID)
    assert failing["failed_checks"] == statement_module.MAX_EVIDENCE + 2
    assert [e["message"] for e in failing["evidence"]] == [
        f"failure {n}" for n in range(statement_module.MAX_EVIDENCE)
    ]


def test_evidence_without_an_exchange_has_none(run):
    checks.expect(FAILING_ID, False, "seen without a response")
    verdict = decide([*all_passing(), *checks.ledger().results])
    [evidence] = entry(statement_module.statement(run, verdict, FINISHED), FAILING_ID)["evidence"]
    assert evidence["exchange"] is None and evidence["curl"] is None


def test_a_conformant_statement(run):
    document = statement_module.statement(run, decide(all_passing()), FINISHED)
    assert document["verdict"] == "conformant"
    assert document["exit_status"] == 0
    assert document["failed_requirements"] == []


def test_write_puts_valid_json_on_disk(tmp_path, run, failing_verdict):
    path = tmp_path / "deep" / "conformance.json"
    statement_module.write(path, run, failing_verdict)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["verdict"] == "not conformant"
    assert document["failed_requirements"] == [FAILING_ID]
    assert MAIN not in path.read_text(encoding="utf-8")


# -- HTML -----------------------------------------------------------------------------------


def test_summary_shows_the_verdict(run, failing_verdict):
    page = summary_html(run, failing_verdict)
    assert "Verdict: not conformant" in page
    assert "psc-not-conformant" in page
    conformant = summary_html(run, decide(all_passing()))
    assert "Verdict: conformant" in conformant


def test_summary_escapes_html_in_failure_messages(run, failing_verdict):
    page = summary_html(run, failing_verdict)
    assert SCRIPT not in page
    assert "<script>alert" not in page
    assert html.escape(SCRIPT) in page


def test_summary_escapes_html_in_created_category_names(run, failing_verdict):
    page = summary_html(run, failing_verdict)
    assert "<i>x</i>" not in page
    assert "&lt;i&gt;x&lt;/i&gt;" in page


def test_summary_shows_the_facts_and_never_a_key(run, failing_verdict):
    page = summary_html(run, failing_verdict)
    assert BASE in page
    assert "pro (300 per minute, 10000 per day)" in page
    assert f"interface.md sha256 {spec.interface_sha256()[:16]}" in page
    assert "main: 4, spare: 2, none: 1" in page
    assert "the base URL does not end in /v1" in page
    assert FAILING_ID in page
    assert MAIN not in page and SPARE not in page


def test_evidence_html_has_the_curl_line_and_escapes_bodies(failing_verdict, failing_exchange):
    [failure] = [r for r in checks.ledger().results if r.requirement_id == FAILING_ID]
    page = evidence_html([failure])
    assert html.escape(failing_exchange.curl()) in page
    assert "$PETSTORE_API_KEY" in page
    assert f"[{FAILING_ID}]" in page
    assert "<b>bold</b>" not in page
    assert "<script>alert" not in page
    assert MAIN not in page and SPARE not in page


def test_evidence_html_without_an_exchange_has_just_the_message():
    checks.expect(FAILING_ID, False, "a <b> message")
    page = evidence_html(checks.ledger().results)
    assert "a &lt;b&gt; message" in page
    assert "curl" not in page


def test_hints_blocked_and_untested_cases_reach_the_statement_and_the_page(run, failing_verdict):
    [failed] = [o for o in failing_verdict.outcomes if o.requirement.id == FAILING_ID]
    failed.hints = ["looks produced by an intermediary <nginx>"]
    [untested] = [o for o in failing_verdict.outcomes if o.requirement.id == "AUTH-INVALID-KEY-401"]
    untested.untested_cases = ["the key in the URL: needs --allow-key-in-url"]
    document = statement_module.statement(run, failing_verdict, FINISHED)
    assert entry(document, FAILING_ID)["hints"] == failed.hints
    assert entry(document, "AUTH-INVALID-KEY-401")["untested_cases"] == untested.untested_cases
    assert document["name_prefix"] == "psc-beef-"
    page = summary_html(run, failing_verdict)
    assert "<b>hint:</b> looks produced by an intermediary &lt;nginx&gt;" in page
    assert "not tested: the key in the URL: needs --allow-key-in-url" in page


def test_a_blocked_requirement_names_what_blocked_it(run, failing_exchange):
    checks.expect("LIM-HEADERS-VALID", False, "Reset '1.5e9'", failing_exchange)
    results = [
        r
        for r in all_passing()
        if r.requirement_id not in ("LIM-HEADERS-VALID", "LIM-RESET-HONEST")
    ]
    verdict = decide([*results, *checks.ledger().results])
    honest = entry(statement_module.statement(run, verdict, FINISHED), "LIM-RESET-HONEST")
    assert honest["outcome"] == "not-tested"
    assert honest["blocked_by"] == ["LIM-HEADERS-VALID"]
    assert honest["reason"].startswith("blocked by LIM-HEADERS-VALID")


def test_no_raw_control_character_in_the_page(failing_exchange):
    checks.expect(FAILING_ID, False, "body 'a\x00b\x1b'", failing_exchange)
    page = evidence_html(checks.ledger().results)
    assert "\x00" not in page and "\x1b" not in page
    assert "a\\x00b\\x1b" in page
