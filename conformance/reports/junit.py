"""`junit.xml` made to agree with the exit status: CI systems colour a build from it.

pytest writes one test case per check of the suite; a test fails only where it verifies the
requirement that failed. Failures found elsewhere (in the preflight, on a response a check of
every response judged in another test, by the judging of fronts after the tests), a stale or
expired expected failure, and a run with no verdict would leave a green JUnit for a red run. So,
once pytest has written it, each requirement the exit status rests on gets a test case of its
own (`requirements` / the id), a run with no verdict an error, and a run whose every failure was
expected shows those failures as skipped, with why.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.judging.verdict import NO_VERDICT, Verdict

if TYPE_CHECKING:
    from conformance.evidence.conclusion import Conclusion

CLASSNAME = "requirements"
COUNTS = ("tests", "failures", "errors", "skipped")
NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def agree(path: Path, verdict: Verdict, conclusion: Conclusion, stated: dict | None = None) -> None:
    """Rewrite `path` so that its failures and errors say what the exit status says."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return  # not written (pytest stopped before its session ended): nothing to disagree
    root = tree.getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return
    if conclusion.exit_status == 0:
        excuse_failures(suite)
    judgement = conclusion.judgement
    outcomes = {o.requirement.id: o for o in verdict.outcomes}
    for requirement in judgement.unexpected:
        failures = outcomes[requirement].failures
        message = failures[0].message if failures else "failed"
        add_case(suite, requirement, "failure", f"[{requirement}] {message}")
    for entry in judgement.stale:
        add_case(suite, entry.id, "failure", f"expected to fail, but passed: {entry.reason}")
    for entry in judgement.expired:
        add_case(suite, entry.id, "failure", f"expected failure expired on {entry.until}")
    if conclusion.exit_status == 2:
        reason = conclusion.result_reason or verdict.reason or verdict.undecided
        add_case(suite, "verdict", "error", f"{NO_VERDICT}: {reason or 'the run did not end'}")
    add_properties(suite, stated or {})
    recount(suite)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def excuse_failures(suite: ET.Element) -> None:
    """Exit 0 with failures means each was listed as expected: skipped, saying so."""
    for case in suite.iter("testcase"):
        for failure in case.findall("failure"):
            case.remove(failure)
            skipped = ET.SubElement(case, "skipped", type="expected failure")
            skipped.set("message", "expected failure: " + (failure.get("message") or ""))


def add_properties(suite: ET.Element, stated: dict) -> None:
    """--vendor and --implementation, where given, as the suite's properties."""
    given = {name: value for name, value in stated.items() if value}
    if not given:
        return
    properties = suite.find("properties")
    if properties is None:
        properties = ET.Element("properties")
        suite.insert(0, properties)
    for name, value in given.items():
        ET.SubElement(properties, "property", name=name, value=NOT_IN_XML.sub("", value))


def add_case(suite: ET.Element, name: str, kind: str, message: str) -> None:
    case = ET.SubElement(suite, "testcase", classname=CLASSNAME, name=name, time="0")
    # A target's bytes may be quoted in the message: XML 1.0 has no place for C0 controls.
    message = NOT_IN_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", message)
    ET.SubElement(case, kind, message=message).text = message


def recount(suite: ET.Element) -> None:
    cases = list(suite.iter("testcase"))
    found = {
        "tests": len(cases),
        "failures": sum(1 for case in cases if case.find("failure") is not None),
        "errors": sum(1 for case in cases if case.find("error") is not None),
        "skipped": sum(1 for case in cases if case.find("skipped") is not None),
    }
    for name in COUNTS:
        suite.set(name, str(found[name]))
