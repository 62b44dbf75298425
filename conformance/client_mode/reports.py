"""A client's verdict in the suite's own report forms: the console's blocks, `report.html`
(the requirement matrix and the timeline), `junit.xml`, `conformance.json` with
`"role": "client"`, `exchanges.har`, `badge.svg` and the `--package` zip. The writers of the
server suite do the work; this module only gives them a client run's facts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html import escape
from pathlib import Path

from conformance import __version__, spec, strict_json
from conformance.client_mode.rules import early_requests, judged, wait_end
from conformance.client_mode.runner import ScenarioRun
from conformance.console.requirements import failure_blocks, plain, verdict_lines
from conformance.judging.verdict import NO_VERDICT, Verdict
from conformance.reports import attestation, badge, har, html, package, timeline
from conformance.reports.statement import iso, requirement_entry


@dataclass
class ClientRun:
    command: str
    runs: list[ScenarioRun]
    verdict: Verdict
    strict: bool
    run_id: str
    started_at: float
    seconds: float  # wall time of the whole run

    @property
    def exchanges(self):
        return [arrival.exchange for run in self.runs for arrival in run.arrivals]


def scenario_line(run: ScenarioRun) -> str:
    how = run.how_stopped() if run.stopped else f"exit {run.exit_status}"
    statuses = " ".join(str(arrival.status) for arrival in run.arrivals[:12])
    more = " …" if len(run.arrivals) > 12 else ""
    count = f"{len(run.arrivals)} request" + ("" if len(run.arrivals) == 1 else "s")
    return f"  {run.scenario.name}: {how}, {count} ({statuses}{more}), {run.seconds:.1f} s"


def console_lines(client_run: ClientRun, report_dir: Path) -> list[str]:
    lines = ["scenarios:", *(scenario_line(run) for run in client_run.runs)]
    blocks = failure_blocks(client_run.verdict)
    if blocks:
        lines.append(f"{'=' * 20} failed requirements: {len(blocks)} {'=' * 20}")
    for number, block in enumerate(blocks):
        lines += [""] * bool(number) + block
    lines += verdict_lines(client_run.verdict)
    verdict = client_run.verdict
    failed = (
        f": failed {', '.join(verdict.failed_requirements)}" if verdict.failed_requirements else ""
    )
    if verdict.verdict == "no verdict":
        failed = f": {verdict.reason}"
    lines.append(
        f"petstore-conformance client: {verdict.verdict} (exit {verdict.exit_status}){failed}; "
        f"{len(client_run.runs)} scenarios in {client_run.seconds:.1f} s; "
        f"report {report_dir / 'report.html'}"
    )
    return [plain(line) if line else line for line in lines]


def scenario_entry(run: ScenarioRun) -> dict:
    return {
        "name": run.scenario.name,
        "purpose": run.scenario.purpose,
        "operation": run.scenario.operation,
        "repeat": run.scenario.repeat,
        "exit_status": run.exit_status,
        "timed_out": run.timed_out,
        "stopped_at_request_limit": run.flooded,
        "seconds": round(run.seconds, 3),
        "requests": [
            {
                "at": round(arrival.arrived - run.started, 3),
                "method": arrival.exchange.method,
                "url": arrival.exchange.url,
                "status": arrival.status,
                "retry_after": arrival.header("Retry-After"),
                "exchange": arrival.exchange.id,
                "judged": arrival.complete,  # False: refused before it was whole (413, 408)
            }
            for arrival in run.arrivals
        ],
        "stdout": run.stdout,
        "stderr": run.stderr,
        "reproduce": run.reproduce,
    }


def statement(client_run: ClientRun) -> dict:
    verdict = client_run.verdict
    return {
        "suite": "petstore-conformance",
        "suite_version": __version__,
        "role": "client",
        "spec_version": spec.spec_version(),
        "spec_sha256": spec.openapi_sha256(),
        "interface_sha256": spec.interface_sha256(),
        "target": client_run.command,
        "plan": None,
        "profile": "client",
        "strict": client_run.strict,
        "run_id": client_run.run_id,
        "time": iso(client_run.started_at),
        "finished": iso(client_run.started_at + client_run.seconds),
        "seconds": round(client_run.seconds, 1),
        "verdict": verdict.verdict,
        "exit_status": verdict.exit_status,
        "reason": verdict.reason,
        "scenarios": [scenario_entry(run) for run in client_run.runs],
        "requirements": [requirement_entry(outcome) for outcome in verdict.outcomes],
        "failed_requirements": verdict.failed_requirements,
        "warned_requirements": verdict.warned_requirements,
    }


def junit(client_run: ClientRun) -> bytes:
    """One test case per check, named scenario::check, with its requirement as a property."""
    outcomes = client_run.verdict.outcomes
    results = [(o, failure) for o in outcomes for failure in o.failures]
    suite = ET.Element("testsuite", name="petstore-conformance client")
    failed_ids = {(o.requirement.id, f.test_id) for o, f in results if o.outcome == "failed"}
    for outcome in outcomes:
        for test_id in outcome.tests:
            case = ET.SubElement(suite, "testcase", classname=outcome.requirement.id, name=test_id)
            properties = ET.SubElement(case, "properties")
            ET.SubElement(properties, "property", name="requirement", value=outcome.requirement.id)
            ET.SubElement(properties, "property", name="level", value=outcome.requirement.level)
            if (outcome.requirement.id, test_id) in failed_ids:
                message = next(f.message for f in outcome.failures if f.test_id == test_id)
                ET.SubElement(case, "failure", message=plain(message)).text = plain(message)
    no_verdict = client_run.verdict.verdict == NO_VERDICT
    if no_verdict:  # CI colours a build from JUnit: a run that decided nothing is not green
        case = ET.SubElement(suite, "testcase", classname="requirements", name="verdict")
        message = plain(f"{NO_VERDICT}: {client_run.verdict.reason}")
        ET.SubElement(case, "error", message=message).text = message
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(len(failed_ids)))
    suite.set("errors", str(int(no_verdict)))
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def timeline_lanes(client_run: ClientRun) -> list[tuple[str, list[timeline.ClientMark]]]:
    lanes = []
    for run in client_run.runs:
        if not run.arrivals:
            continue
        start = run.arrivals[0].arrived
        early = {id(item.arrival) for item in early_requests(judged(run), [429, 503])}
        marks = []
        for arrival in run.arrivals:
            end = wait_end(arrival)
            marks.append(
                timeline.ClientMark(
                    arrival.arrived - start,
                    arrival.status,
                    end - arrival.answered if end is not None else None,
                    id(arrival) in early,
                )
            )
        lanes.append((run.scenario.name, marks))
    return lanes


def report_html(client_run: ClientRun) -> str:
    verdict = client_run.verdict
    rows = [
        ("Client command", client_run.command),
        ("Role", "client"),
        (
            "Interface",
            f"Pet Store v{spec.spec_version()}, interface.md sha256 "
            f"{spec.interface_sha256()[:16]}…",
        ),
        ("Checker", f"petstore-conformance {__version__}, run {client_run.run_id}"),
        ("Wall time", f"{client_run.seconds:.1f} s for {len(client_run.runs)} scenarios"),
        ("Verdict reason", verdict.reason or "every checked MUST requirement held"),
    ]
    facts = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    scenario_rows = "".join(
        f"<tr><td>{escape(run.scenario.name)}</td><td>{escape(run.scenario.purpose)}</td>"
        f"<td>{escape(scenario_line(run).split(': ', 1)[1])}</td>"
        f"<td><pre>{escape(plain(run.stderr[-400:] or run.stdout[-400:]))}</pre></td></tr>"
        for run in client_run.runs
    )
    evidence = [f for o in verdict.outcomes for f in o.failures]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>petstore-conformance client"
        f"</title></head><body>{html.STYLE}{html.SCRIPT}<div class='psc'>"
        "<h1>Pet Store client conformance</h1>"
        f"<span class='psc-verdict {html.css_class(verdict.verdict)}'>Verdict: "
        f"{escape(verdict.verdict)} (exit {verdict.exit_status})</span>"
        f"<table>{facts}</table>"
        f"<h2>Requirements</h2>{html.filters(verdict)}{html.matrix_table(verdict)}"
        "<h2>The client's requests against the 429s and waits it was given</h2>"
        f"{timeline.client_timeline_html(timeline_lanes(client_run))}"
        "<h2>Scenarios</h2><table><thead><tr><th>Scenario</th><th>What it asks</th>"
        f"<th>What the client did</th><th>Its output (tail)</th></tr></thead>{scenario_rows}"
        "</table><h2>Evidence of each failure</h2></div>"
        f"{html.evidence_html(evidence) if evidence else '<p>No failure.</p>'}</body></html>"
    )


def write(
    client_run: ClientRun, report_dir: Path, package_path: Path | None, signer=None
) -> Path | None:
    """The reports; signed with `signer` (`--sign-key`) as the checker's are; the package."""
    report_dir.mkdir(parents=True, exist_ok=True)
    document = strict_json.dumps(statement(client_run), indent=2, ensure_ascii=False) + "\n"
    (report_dir / package.STATEMENT).write_text(document, encoding="utf-8")
    (report_dir / "report.html").write_text(report_html(client_run), encoding="utf-8")
    (report_dir / "junit.xml").write_bytes(junit(client_run))
    har.write(report_dir / "exchanges.har", client_run.exchanges)
    badge.write(report_dir / "badge.svg", spec.spec_version(), client_run.verdict.verdict)
    envelope = attestation.write(report_dir, signer) if signer is not None else None
    if package_path is None:
        return None
    return package.build(package_path, report_dir, envelope=envelope)
