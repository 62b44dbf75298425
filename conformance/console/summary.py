"""What the console says once the run is judged: one block per failed requirement, what was
warned and not tested, then the verdict and the run's facts (target, requests, connection,
bounds, what the close wrote). The same lines on pytest's terminal reporter (pytest's view, and
plain pytest) and on the checker's own console.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TextIO

from conformance.console import closing
from conformance.console.requirements import closing_lines, failure_blocks
from conformance.httpclient import connection

if TYPE_CHECKING:
    from conformance.evidence.conclusion import Conclusion
    from conformance.judging.verdict import Verdict
    from conformance.run import Run


class Writer(Protocol):
    """What the summary is written on: pytest's TerminalReporter has both."""

    def write_sep(self, sep: str, title: str) -> None: ...

    def write_line(self, line: str) -> None: ...


class PlainWriter:
    """The checker's own console: a heading is a line of its own, after a blank one."""

    def __init__(self, stream: TextIO | None):
        self.stream = stream

    def write_sep(self, sep: str, title: str) -> None:
        self.write_line("")
        self.write_line(title)

    def write_line(self, line: str) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.stream = None  # the reader left; the run goes on to its exit status


def write(writer: Writer, run: Run, verdict: Verdict, conclusion: Conclusion) -> None:
    blocks = failure_blocks(verdict)
    if blocks:
        writer.write_sep("=", f"failed requirements: {len(blocks)}")
    for number, block in enumerate(blocks):
        for line in [""] * bool(number) + block:
            writer.write_line(line)
    for line in closing_lines(run, verdict):
        writer.write_line(line)
    writer.write_sep("=", f"petstore-conformance: {conclusion.result}")
    for line in facts(run, verdict, conclusion):
        writer.write_line(line)


def facts(run: Run, verdict: Verdict, conclusion: Conclusion) -> list[str]:
    """Under the verdict: why, what was warned about the run, what it spent and how it reached
    the target, what its close wrote."""
    lines = [
        f"reason: {reason}"
        for reason in dict.fromkeys(filter(None, (verdict.reason, conclusion.result_reason)))
    ]
    lines += [f"warning: {warning}" for warning in run.warnings]
    per_key = ", ".join(f"{k}: {n}" for k, n in run.client.requests_per_key().items())
    lines += [
        f"target {run.settings.base_url}, plan {run.settings.plan}, profile "
        f"{run.settings.profile}; requests {run.client.requests_sent} ({per_key}); "
        f"User-Agent {run.settings.user_agent!r}",
        f"connection: {connection.describe(run.connection_fields())}",
        f"bounds: {run.describe_bounds()}",
    ]
    if run.har_note:
        lines.append(f"exchanges.har: {run.har_note}")
    lines += closing.console_lines(conclusion)
    lines.append(f"statement: {run.settings.report_dir / 'conformance.json'}")
    return lines
