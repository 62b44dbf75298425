"""The report's sections for nightly CI and certification: what decided the exit status, the
expected-failures baseline entry by entry, and what changed since the previous run."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.evidence.conclusion import Conclusion

CHANGE_LABELS = {
    "regressions": "regression",
    "fixes": "fix",
    "newly_not_tested": "newly not tested",
    "newly_tested": "newly tested",
    "other_changes": "changed",
}


def excused_ids(conclusion: Conclusion | None) -> set[str]:
    return {entry.id for entry in conclusion.judgement.expected} if conclusion else set()


def stale_ids(conclusion: Conclusion | None) -> set[str]:
    return {entry.id for entry in conclusion.judgement.stale} if conclusion else set()


def exit_note(conclusion: Conclusion | None) -> str:
    if conclusion is None:
        return ""
    judgement = conclusion.judgement
    said = []
    if judgement.expected and not judgement.unexpected:
        said.append("every failed requirement is a listed expected failure")
    if judgement.baseline is not None and judgement.unexpected:
        said.append(f"new failures: {', '.join(judgement.unexpected)}")
    if judgement.stale:
        said.append(f"stale entries: {', '.join(e.id for e in judgement.stale)}")
    if judgement.expired:
        said.append(f"expired entries: {', '.join(e.id for e in judgement.expired)}")
    if conclusion.result_reason:
        said.append(conclusion.result_reason)
    detail = f" ({'; '.join(said)})" if said else ""
    result = f"{conclusion.exit_status}: {conclusion.result}{detail}"
    return f"<p class='psc-exit'>Exit status {escape(result)}</p>"


def entry_status(conclusion: Conclusion, requirement_id: str) -> str:
    judgement = conclusion.judgement
    if requirement_id in {e.id for e in judgement.expired}:
        return "expired: it no longer excuses; fix the failure or give a later until"
    if requirement_id in stale_ids(conclusion):
        return "stale: the requirement passed; remove this entry"
    if requirement_id in excused_ids(conclusion):
        return "expected failure: failed, as listed"
    return "not failed this run (not tested, or warned): neither stale nor failing"


def baseline_section(conclusion: Conclusion | None) -> str:
    if conclusion is None or conclusion.judgement.baseline is None:
        return ""
    judgement = conclusion.judgement
    baseline = judgement.baseline
    rows = [
        f"<tr><td>{escape(e.id)}</td><td>{escape(entry_status(conclusion, e.id))}</td>"
        f"<td>{escape(e.reason)}</td><td>{e.until or ''}</td></tr>"
        for e in baseline.entries
    ]
    listed = {e.id for e in baseline.entries}
    rows += [
        f"<tr><td>{escape(i)}</td><td class='psc-failed'>new failure: not listed</td>"
        "<td></td><td></td></tr>"
        for i in judgement.unexpected
        if i not in listed
    ]
    head = "<tr><th>Requirement</th><th>This run</th><th>Reason</th><th>Until</th></tr>"
    return (
        f"<h2>Expected failures ({escape(str(baseline.path))})</h2>"
        f"<table id='psc-baseline'>{head}{''.join(rows)}</table>"
    )


def comparison_section(conclusion: Conclusion | None) -> str:
    if conclusion is None or conclusion.comparison is None:
        return ""
    comparison = conclusion.comparison
    previous = comparison.previous
    intro = (
        f"<p>Compared with run {escape(str(previous.get('run_id')))} of "
        f"{escape(str(previous.get('time')))} (verdict {escape(str(previous.get('verdict')))}, "
        f"target {escape(str(previous.get('target')))}).</p>"
    )
    notes = "".join(f"<p>Note: {escape(note)}.</p>" for note in comparison.notes)
    rows = [
        f"<tr><td class='{'psc-failed' if name == 'regressions' else ''}'>{label}</td>"
        f"<td>{escape(c.id)}</td><td>{escape(c.before)}</td><td>{escape(c.after)}</td></tr>"
        for name, label in CHANGE_LABELS.items()
        for c in getattr(comparison, name)
    ]
    head = "<tr><th>Change</th><th>Requirement</th><th>Before</th><th>Now</th></tr>"
    table = f"<table id='psc-comparison'>{head}{''.join(rows)}</table>"
    if not rows:
        table = "<p>No requirement changed its outcome.</p>"
    return f"<h2>Since the previous run</h2>{intro}{notes}{table}"
