"""What a run concludes beyond its verdict: the baseline's judgement, the comparison with the
previous run, and the exit status they decide, in words that agree with that exit status. The
shell decides it (conformance.console.closing); the reports show it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.evidence import baseline, compare
from conformance.judging.verdict import CONFORMANT, EXIT_STATUS, NO_VERDICT

# What a run says when an expected-failures file changed its exit status from the verdict's.
EXCUSED = "not conformant, every failure expected"
BASELINE_OUT_OF_DATE = "conformant, but the expected failures are out of date"


@dataclass
class Conclusion:
    judgement: baseline.Judgement
    comparison: compare.Comparison | None
    exit_status: int
    verdict: str = CONFORMANT  # the verdict's own words, before the baseline
    undecided: str | None = None  # why there would be no verdict with the failures excused
    package: Path | None = None  # written after the reports
    package_error: str | None = None
    attestation: Path | None = None  # the signed envelope, written after the reports
    attestation_error: str | None = None
    signed_by: str | None = None  # the public key's kind and id, for the console
    signed_unnamed: bool = False  # signed without --vendor: no register accepts it

    @property
    def result(self) -> str:
        """The run's result in words that agree with its exit status: the verdict where the
        baseline left it as it was, else what the exit status says."""
        if self.exit_status == EXIT_STATUS[self.verdict]:
            return self.verdict
        if self.exit_status == 0:
            return EXCUSED
        if self.exit_status == 1:
            return BASELINE_OUT_OF_DATE
        return NO_VERDICT

    @property
    def result_reason(self) -> str | None:
        """Why a run the verdict decided ends with no verdict all the same."""
        if self.result != NO_VERDICT or self.verdict == NO_VERDICT:
            return None
        return self.package_error or self.attestation_error or self.undecided

    def statement_fields(self) -> dict:
        """Added to `conformance.json`; `exit_status` replaces the verdict's own."""
        return {
            "exit_status": self.exit_status,
            "result": self.result,
            "result_reason": self.result_reason,
            **self.judgement.statement_fields(),
            "comparison": self.comparison.to_dict() if self.comparison else None,
        }
