"""A wave that one process's CPU cannot send in time goes from several (issue 17, point 2), end
to end: `petstore-conformance` against the reference with an enterprise key of 12,000 requests
a minute on a 6-second minute. Its quota and one more must land within half of what is left of
a window, 2.5 s at most, and the plan's 0.3 ms of CPU a request makes 3.6 s from one process:
the wave goes from two, says so, says the rate it reached, and the reference is conformant with
every request counted, recorded and no key anywhere.

Marked `solo` and `machine`: 12,000 requests in a few seconds need the machine's two cores to
themselves. Even so, the reference and the senders share those two cores: an idle CI runner
reached 2,100 a second, where 4,000 land it in half a window. The run then says the quota is
beyond this machine (no verdict), with the rates it reached and the rate it needed: that
answer is accepted where its own figures show it, never a verdict it could not prove."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.burst.reach import usable_cpus
from tests.shared.checker_runs import CheckerRun, assert_no_key_in_outputs, new_keys, run_command
from tests.shared.servers import reference_args, start_reference

PER_MINUTE = 12_000
PER_DAY = 1_000_000
MINUTE_SECONDS = 6


@pytest.mark.slow
@pytest.mark.solo
@pytest.mark.machine
@pytest.mark.skipif(usable_cpus() < 2, reason="a wave from two processes needs two CPUs")
def test_a_wave_one_core_cannot_send_in_time_goes_from_two_processes(tmp_path: Path) -> None:
    keys = new_keys()
    specs = [f"{key}:enterprise:{PER_MINUTE}:{PER_DAY}" for key in keys]
    reference = start_reference(reference_args(specs, minute_seconds=MINUTE_SECONDS))
    options = ["--requests-per-minute", str(PER_MINUTE), "--requests-per-day", str(PER_DAY)]
    try:
        run = run_command(
            reference.base_url, keys, tmp_path / "reports", plan="enterprise", options=options
        )
    finally:
        reference.stop()
    print(f"\nexit {run.status} in {run.seconds:.0f} s")
    print("\n".join(line for line in run.output.splitlines() if " key: " in line or ".har" in line))
    waves = re.findall(
        r"spare key: ([\d,]+) requests on (\d+) connections from (\d) processes", run.output
    )
    assert waves, run.describe()
    assert all(int(processes) == 2 for _, _, processes in waves)
    rates = re.findall(r"spare key: ([\d,]+) answered, ([\d,]+) requests a second", run.output)
    assert rates, run.describe()
    if not said_beyond_this_machine(run):
        assert run.status == 0, run.describe()
        assert run.outcomes()["LIM-429-WHEN-EXCEEDED"] == "passed"
    # Every request the processes sent is counted and recorded here.
    spare_sent = run.statement["requests"]["per_key"]["spare"]
    assert spare_sent > PER_MINUTE
    assert_no_key_in_outputs(run)


FIGURES = re.compile(
    r"need ([\d,]+) requests a second to land within half of it .*this machine reached "
    r"([\d,]+) at most"
)


def said_beyond_this_machine(run: CheckerRun) -> bool:
    """Whether the run said the quota is beyond this machine, with figures that show it: the
    fastest wave slower than landing needs, from two processes at least once."""
    if run.status != 2:
        return False
    entry = next(r for r in run.statement["requirements"] if r["id"] == "LIM-429-WHEN-EXCEEDED")
    assert entry["outcome"] == "not-tested", run.describe()
    said = entry.get("reason", "")
    figures = FIGURES.search(said)
    assert "beyond what this machine can send" in said and figures is not None, said
    needed, reached = (int(figure.replace(",", "")) for figure in figures.groups())
    assert reached < needed, said
    assert "from 2 processes" in said[figures.end() :], said
    print(f"beyond this machine: {reached:,} requests a second reached, {needed:,} needed")
    return True
