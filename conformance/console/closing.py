"""A run's close: what it concludes beyond its verdict (for nightly CI and vendor
self-certification), and the evidence it leaves: the plugin's hooks call these five functions
and nothing more.

- `conclude`: the baseline's judgement (`--expected-failures`), the comparison with the previous
  run (`--previous`), and the exit status they decide;
- `write_evidence`: `exchanges.har` and `badge.svg` on every run, and the baseline of this run's
  failures when `--write-expected-failures` asks;
- `write_attestation`: the signed in-toto attestation of `--sign-key`, once every report is on
  disk;
- `write_package`: the zip of `--package`, the attestation in it;
- `console_lines`: what the terminal summary adds.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from conformance import spec
from conformance.evidence import baseline, compare
from conformance.evidence.conclusion import Conclusion
from conformance.judging import checks
from conformance.judging.verdict import Verdict
from conformance.reports import badge, har, package

if TYPE_CHECKING:
    from conformance.run import Run


def run_day(run: Run) -> datetime.date:
    """The day the run started, in UTC: what an expected failure's `until` is judged against."""
    return datetime.datetime.fromtimestamp(run.started_at, datetime.UTC).date()


def conclude(run: Run, verdict: Verdict) -> Conclusion:
    settings = run.settings
    judgement = baseline.apply(verdict, settings.expected_failures, run_day(run))
    comparison = None
    if settings.previous is not None:
        comparison = compare.compare(settings.previous, this_run(run, verdict))
    exit_status = baseline.exit_status(verdict, judgement)
    return Conclusion(judgement, comparison, exit_status, verdict.verdict, verdict.undecided)


def this_run(run: Run, verdict: Verdict) -> dict:
    """This run in the statement's shape, as far as the comparison reads it."""
    return {
        "target": run.settings.base_url,
        "spec_sha256": spec.openapi_sha256(),
        "profile": run.settings.profile,
        "requirements": [{"id": o.requirement.id, "outcome": o.outcome} for o in verdict.outcomes],
    }


def write_evidence(run: Run, verdict: Verdict) -> None:
    settings = run.settings
    run.har_note = har.write(settings.report_dir / "exchanges.har", run.client.exchanges, cited())
    badge.write(settings.report_dir / "badge.svg", spec.spec_version(), verdict.verdict)
    if settings.write_expected_failures is not None:
        baseline.write(
            settings.write_expected_failures, verdict, settings.base_url, settings.run_id
        )


def cited() -> set[int]:
    """Exchanges a rule judged: every one a test's own check named, and every failure's."""
    return {
        r.exchange.id
        for r in checks.ledger().results
        if r.exchange is not None and (not r.every_response or not r.passed)
    }


def baseline_used(run: Run):
    """The expected-failures file the run was judged with, if any."""
    return run.settings.expected_failures.path if run.settings.expected_failures else None


def write_attestation(run: Run, conclusion: Conclusion) -> None:
    settings = run.settings
    if settings.sign_key is None:
        return
    # Imported when signing: in-toto, protobuf and cryptography are some 0.1 s of every run.
    from conformance import signing_keys
    from conformance.reports import attestation

    try:
        conclusion.attestation = attestation.write(
            settings.report_dir, settings.sign_key, baseline_used(run)
        )
        conclusion.signed_by = signing_keys.describe(settings.sign_key.public_key)
        conclusion.signed_unnamed = not settings.vendor
    except (OSError, attestation.Unreadable) as error:
        why = getattr(error, "strerror", None) or error
        conclusion.attestation_error = f"cannot sign the reports: {why}"
        conclusion.exit_status = 2


def write_package(run: Run, conclusion: Conclusion) -> None:
    settings = run.settings
    if settings.package is None:
        return
    try:
        conclusion.package = package.build(
            settings.package, settings.report_dir, baseline_used(run), conclusion.attestation
        )
    except OSError as error:
        conclusion.package_error = f"cannot write {settings.package}: {error.strerror or error}"
        conclusion.exit_status = 2


UNNAMED = (
    "signed without --vendor: no certification register accepts a package that names no "
    "vendor (it finds the vendor's keys by that name); run again with --vendor NAME"
)


def console_lines(conclusion: Conclusion) -> list[str]:
    lines = baseline.console_lines(conclusion.judgement)
    if conclusion.comparison is not None:
        lines += compare.lines(conclusion.comparison)
    if conclusion.attestation_error is not None:
        lines.append(f"attestation: {conclusion.attestation_error}")
    if conclusion.attestation is not None:
        lines.append(
            f"attestation: {conclusion.attestation}, signed with the {conclusion.signed_by} "
            f"(check it with petstore-conformance verify {conclusion.attestation.parent} --key "
            "PUBLIC.pem)"
        )
    if conclusion.attestation is not None and conclusion.signed_unnamed:
        lines.append(f"attestation: warning: {UNNAMED}")
    if conclusion.package_error is not None:
        lines.append(f"package: {conclusion.package_error}")
    if conclusion.package is not None:
        lines.append(
            f"package: {conclusion.package} (check it with petstore-conformance verify "
            f"{conclusion.package})"
        )
    return lines
