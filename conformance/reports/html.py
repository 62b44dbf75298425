"""The sections the checker adds to pytest-html's report: the verdict and requirement matrix at
the top, and the evidence (exchanges and curl lines) under every test that saw a failure."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from conformance import __version__, spec
from conformance.checks import CheckResult
from conformance.reports.console import plain
from conformance.verdict import RequirementOutcome, Verdict

if TYPE_CHECKING:
    from conformance.client import Exchange
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
</style>
"""


def css_class(text: str) -> str:
    return "psc-" + text.replace(" ", "-")


def facts_table(run: Run, verdict: Verdict) -> str:
    settings = run.settings
    per_key = ", ".join(
        f"{label}: {count}" for label, count in run.client.requests_per_key().items()
    )
    minute, day = settings.plan_limits
    rows = [
        ("Target", settings.base_url + (" (bundled reference)" if run.reference else "")),
        ("Plan", f"{settings.plan} ({minute or '?'} per minute, {day or '?'} per day)"),
        ("Profile", settings.profile + (", strict" if settings.strict else "")),
        (
            "Interface",
            f"Pet Store v{spec.spec_version()}, openapi.yaml sha256 {spec.openapi_sha256()[:16]}…",
        ),
        (
            "Checker",
            f"petstore-conformance {__version__}, seed {settings.seed}, run {settings.run_id}",
        ),
        (
            "Requests spent",
            f"{run.client.requests_sent} of a budget of {settings.budget} ({per_key})",
        ),
        ("Verdict reason", verdict.reason or "every checked MUST requirement held"),
    ]
    rows += [("Warning", warning) for warning in run.warnings]
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def test_functions(test_ids: list[str]) -> list[str]:
    """`test_auth.py::test_x (24 cases)` rather than 24 parametrized ids."""
    counts: dict[str, int] = {}
    for test_id in test_ids:
        function = test_id.split("[", 1)[0]
        counts[function] = counts.get(function, 0) + 1
    return [f"{name} ({n} cases)" if n > 1 else name for name, n in counts.items()]


def matrix_table(verdict: Verdict) -> str:
    rows = []
    for outcome in verdict.outcomes:
        requirement = outcome.requirement
        tests = "<br>".join(escape(line) for line in test_functions(outcome.tests))
        rows.append(
            f"<tr><td>{escape(requirement.id)}</td><td>{requirement.level}</td>"
            f"<td class='{css_class(outcome.outcome)}'>{outcome.outcome}</td>"
            f"<td>{outcome.checks}</td><td>{escape(requirement.statement)}</td>"
            f"<td>{tests}</td><td>{detail_html(outcome)}</td></tr>"
        )
    head = (
        "<tr><th>Requirement</th><th>Level</th><th>Outcome</th><th>Checks</th>"
        "<th>Statement</th><th>Tests</th><th>Failure or reason</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def detail_html(outcome: RequirementOutcome) -> str:
    """The failure or the reason it was not tested, the cases left out, and any hints."""
    detail = outcome.reason or "; ".join(failure.message for failure in outcome.failures[:2])
    parts = [escape(plain(detail))]
    parts += [f"<br>not tested: {escape(case)}" for case in outcome.untested_cases]
    parts += [f"<br><b>hint:</b> {escape(plain(hint))}" for hint in outcome.hints]
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


def summary_html(run: Run, verdict: Verdict) -> str:
    counts = {}
    for outcome in verdict.outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    tally = ", ".join(f"{n} {name}" for name, n in counts.items())
    return (
        f"{STYLE}<div class='psc'>"
        f"<span class='psc-verdict {css_class(verdict.verdict)}'>"
        f"Verdict: {escape(verdict.verdict)}</span>"
        f"{facts_table(run, verdict)}"
        f"<h2>Requirements ({tally})</h2>{matrix_table(verdict)}"
        f"<h2>Categories created</h2>{created_list(run)}</div>"
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
