"""The sections the checker adds to pytest-html's report: the verdict, the requirement matrix
(filtered by outcome and by area), the expected failures, the comparison and the rate-limit
timeline at the top; the evidence (exchanges and curl lines) under every test that saw a
failure; and pytest-html's Python and plugin table moved to the end, where it bothers no one."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from conformance import __version__, spec
from conformance.console.requirements import plain
from conformance.httpclient import connection
from conformance.judging.checks import CheckResult
from conformance.judging.verdict import RequirementOutcome, Verdict
from conformance.reports import conclusion_html, timeline

if TYPE_CHECKING:
    from conformance.evidence.conclusion import Conclusion
    from conformance.httpclient.client import Exchange
    from conformance.run import Run

STYLE = """
<style>
.psc h2 {margin: .6em 0 .3em}
.psc-verdict {font-size: 1.4em; font-weight: bold; padding: .5em 1em; border-radius: 4px;
  display: inline-block; color: #fff}
.psc-conformant {background: #2e7d32} .psc-not-conformant {background: #c62828}
.psc-no-verdict {background: #6d6d6d}
.psc table {border-collapse: collapse; margin: .4em 0 1em}
.psc td, .psc th {border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top}
.psc-passed {color: #2e7d32; font-weight: bold} .psc-failed {color: #c62828; font-weight: bold}
.psc-warned {color: #b26a00; font-weight: bold} .psc-not-tested {color: #6d6d6d}
.psc pre {white-space: pre-wrap; word-break: break-all; background: #f6f6f6; padding: .4em;
  margin: .2em 0}
.psc-expected {color: #8e24aa; font-weight: bold} .psc-stale {color: #8e24aa}
.psc-filters {margin: .3em 0} .psc-filters label {margin-right: 1.2em}
.psc-legend span {margin-right: 1.2em}
#psc-matrix tr[data-tags~=failed] {background: #fdecea}
#psc-matrix tr[data-tags~=expected] {background: #f5eaf7}
#psc-matrix tr[data-tags~=warned] {background: #fff4e0}
</style>
"""
# The matrix filters, and the environment table (Python, plugins) moved after the results: a
# reader comes for the verdict, not for the versions of pluggy.
SCRIPT = """
<script>
function pscFilter() {
  const outcome = document.getElementById('psc-outcome').value;
  const area = document.getElementById('psc-area').value;
  let shown = 0;
  for (const row of document.querySelectorAll('#psc-matrix tbody tr')) {
    const tags = row.dataset.tags.split(' ');
    row.hidden = !((outcome === 'all' || tags.includes(outcome)) &&
                   (area === 'all' || row.dataset.area === area));
    shown += row.hidden ? 0 : 1;
  }
  document.getElementById('psc-shown').textContent = shown;
}
document.addEventListener('DOMContentLoaded', () => {
  const footer = document.querySelector('footer');
  for (const id of ['environment-header', 'environment']) {
    const part = document.getElementById(id);
    if (part && footer) footer.before(part);
  }
  const heading = document.querySelector('#environment-header h2');
  if (heading) heading.textContent = 'Environment (Python and plugins)';
});
</script>
"""
AREAS = {
    "AUTH": "Authentication",
    "CAT": "Categories",
    "VAL": "Validation",
    "EP": "Endpoints",
    "ERR": "Errors",
    "GEN": "General",
    "LIM": "Limits",
    "DEP": "Deprecation",
    "VER": "Versioning",
    "CLI": "Clients",
}
OUTCOME_FILTERS = ("all", "failed", "expected", "warned", "passed", "not-tested")
# The matrix shows what needs attention first; the catalogue's order within each outcome.
ROW_ORDER = {"failed": 0, "warned": 1, "not-tested": 2, "passed": 3}


def css_class(text: str) -> str:
    return "psc-" + text.replace(" ", "-")


def facts_table(run: Run, verdict: Verdict) -> str:
    settings = run.settings
    per_key = ", ".join(
        f"{label}: {count}" for label, count in run.client.requests_per_key().items()
    )
    minute, day = settings.plan_limits
    rows = [
        *stated_rows(settings),
        ("Target", settings.base_url + (" (bundled reference)" if run.reference else "")),
        *connection_rows(run.connection_fields()),
        ("Plan", f"{settings.plan} ({minute or '?'} per minute, {day or '?'} per day)"),
        ("Profile", settings.profile + (", strict" if settings.strict else "")),
        (
            "Interface",
            f"Pet Store v{spec.spec_version()}, openapi.yaml sha256 {spec.openapi_sha256()[:16]}…, "
            f"interface.md sha256 {spec.interface_sha256()[:16]}…",
        ),
        (
            "Checker",
            f"petstore-conformance {__version__}, seed {settings.seed}, run {settings.run_id}",
        ),
        ("User-Agent", settings.user_agent),
        (
            "Requests spent",
            f"{run.client.requests_sent} of a budget of {settings.budget} ({per_key})",
        ),
        ("Bounds", run.describe_bounds()),
        ("Verdict reason", verdict.reason or "every checked MUST requirement held"),
    ]
    rows += [("Warning", warning) for warning in run.warnings]
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def stated_rows(settings) -> list[tuple[str, str]]:
    """--vendor and --implementation, where given."""
    given = (("Vendor", settings.vendor), ("Implementation", settings.implementation))
    return [(label, value) for label, value in given if value]


def connection_rows(fields: dict) -> list[tuple[str, str]]:
    """How the target was reached and, over HTTPS, the TLS facts (expiry warnings are among
    the run's warnings)."""
    rows = [("Connection", connection.describe(fields))]
    if fields.get("tls"):
        rows.append(("TLS", connection.describe_tls(fields["tls"])))
    return rows


def test_functions(test_ids: list[str]) -> list[str]:
    """`test_auth.py::test_x (24 cases)` rather than 24 parametrized ids."""
    counts: dict[str, int] = {}
    for test_id in test_ids:
        function = test_id.split("[", 1)[0]
        counts[function] = counts.get(function, 0) + 1
    return [f"{name} ({n} cases)" if n > 1 else name for name, n in counts.items()]


def area(requirement_id: str) -> str:
    prefix = requirement_id.split("-", 1)[0]
    return AREAS.get(prefix, prefix)


def filters(verdict: Verdict) -> str:
    areas = list(dict.fromkeys(area(o.requirement.id) for o in verdict.outcomes))
    outcomes = "".join(f"<option>{name}</option>" for name in OUTCOME_FILTERS)
    choices = "".join(f"<option>{escape(name)}</option>" for name in ["all", *areas])
    return (
        "<div class='psc-filters'>"
        f"<label>Outcome <select id='psc-outcome' onchange='pscFilter()'>{outcomes}</select>"
        "</label>"
        f"<label>Area <select id='psc-area' onchange='pscFilter()'>{choices}</select></label>"
        f"<span><span id='psc-shown'>{len(verdict.outcomes)}</span> of "
        f"{len(verdict.outcomes)} requirements shown</span></div>"
    )


def matrix_table(verdict: Verdict, conclusion: Conclusion | None = None) -> str:
    expected = conclusion_html.excused_ids(conclusion)
    stale = conclusion_html.stale_ids(conclusion)
    rows = []
    for outcome in sorted(verdict.outcomes, key=lambda o: ROW_ORDER.get(o.outcome, 0)):
        requirement = outcome.requirement
        tests = "<br>".join(escape(line) for line in test_functions(outcome.tests))
        tags = [outcome.outcome]
        shown = outcome.outcome
        if requirement.id in expected:
            tags.append("expected")
            shown += " <span class='psc-expected'>(expected)</span>"
        if requirement.id in stale:
            shown += " <span class='psc-stale'>(stale entry)</span>"
        rows.append(
            f"<tr data-tags='{' '.join(tags)}' data-area='{escape(area(requirement.id))}'>"
            f"<td>{escape(requirement.id)}</td><td>{requirement.level}</td>"
            f"<td class='{css_class(outcome.outcome)}'>{shown}</td>"
            f"<td>{outcome.checks}</td><td>{escape(requirement.statement)}{basis_html(requirement)}</td>"
            f"<td>{tests}</td><td>{detail_html(outcome)}</td></tr>"
        )
    head = (
        "<thead><tr><th>Requirement</th><th>Level</th><th>Outcome</th><th>Checks</th>"
        "<th>Statement</th><th>Tests</th><th>Failure or reason</th></tr></thead>"
    )
    return f"<table id='psc-matrix'>{head}<tbody>{''.join(rows)}</tbody></table>"


def basis_html(requirement: spec.Requirement) -> str:
    """Under the statement: whose words make it a MUST (the document's or an RFC's)."""
    if requirement.basis is None:
        return ""
    return f"<br><small class='psc-basis'>basis: {escape(requirement.basis.cited())}</small>"


def detail_html(outcome: RequirementOutcome) -> str:
    """The failure or the reason it was not tested, the cases left out, any hints, and the
    first failure's exchange (one click away, so a failure is understood from its row)."""
    messages = list(dict.fromkeys(failure.message for failure in outcome.failures))
    detail = outcome.reason or "; ".join(messages[:2])
    parts = [escape(plain(detail))]
    parts += [f"<br>not tested: {escape(case)}" for case in outcome.untested_cases]
    parts += [f"<br><b>hint:</b> {escape(plain(hint))}" for hint in outcome.hints]
    first = next((f.exchange for f in outcome.failures if f.exchange is not None), None)
    if first is not None:
        parts.append(
            f"<details class='psc-evidence'><summary>evidence</summary>"
            f"{exchange_html(first)}</details>"
        )
    return "".join(parts)


def created_list(run: Run) -> str:
    if not run.created_categories:
        return "<p>This run created no categories.</p>"
    items = "".join(
        f"<li>{escape(str(c.get('id')))}: {escape(str(c.get('name')))}</li>"
        for c in run.created_categories
    )
    return (
        f"<p>{len(run.created_categories)} categories, all named "
        f"<code>{escape(run.settings.name_prefix)}…</code> (the interface has no DELETE):</p>"
        f"<details><summary>show</summary><ul>{items}</ul></details>"
    )


def summary_html(run: Run, verdict: Verdict, conclusion: Conclusion | None = None) -> str:
    counts = {}
    for outcome in verdict.outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    tally = ", ".join(f"{n} {name}" for name, n in counts.items())
    return (
        f"{STYLE}{SCRIPT}<div class='psc'>"
        f"<span class='psc-verdict {css_class(verdict.verdict)}'>"
        f"Verdict: {escape(verdict.verdict)}</span>"
        f"{conclusion_html.exit_note(conclusion)}"
        f"{facts_table(run, verdict)}"
        f"{conclusion_html.baseline_section(conclusion)}"
        f"{conclusion_html.comparison_section(conclusion)}"
        f"<h2>Requirements ({tally})</h2>{filters(verdict)}{matrix_table(verdict, conclusion)}"
        f"<h2>Rate limits over the run</h2>{timeline.timeline_html(run.client.exchanges)}"
        + (f"<p>exchanges.har: {escape(run.har_note)}</p>" if run.har_note else "")
        + f"<h2>Categories created</h2>{created_list(run)}"
        "<h2>Tests, with the evidence of each failure</h2></div>"
    )


def exchange_html(exchange: Exchange) -> str:
    request_headers = "\n".join(f"{k}: {v}" for k, v in exchange.request_headers.items())
    response_headers = "\n".join(f"{k}: {v}" for k, v in exchange.response_headers)
    # Bodies are shown with their control characters as escapes: never a raw NUL in a report.
    parts = [
        f"<b>#{exchange.id} {escape(plain(exchange.summary()))}</b>",
        f"<pre>{escape(exchange.method)} {escape(exchange.url)}\n{escape(request_headers)}"
        + (f"\n\n{escape(plain(exchange.request_body))}" if exchange.request_body else "")
        + "</pre>",
        f"<pre>{exchange.status}\n{escape(response_headers)}\n\n"
        f"{escape(plain(exchange.response_body))}</pre>",
        f"reproduce: <pre>{escape(exchange.curl())}</pre>",
    ]
    return "".join(parts)


def evidence_html(failures: list[CheckResult]) -> str:
    blocks = []
    for failure in failures:
        message = escape(plain(failure.message))
        text = f"<p><b>[{escape(failure.requirement_id)}]</b> {message}</p>"
        if failure.exchange is not None:
            text += exchange_html(failure.exchange)
        blocks.append(text)
    return f"<div class='psc'>{''.join(blocks)}</div>"
