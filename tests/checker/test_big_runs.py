"""Big runs stay small: a burst of many thousand responses is recorded compactly, counted rather
than kept where its checks pass, and listed in exchanges.har only where it matters (measured on
the real 100,000-request run: 281 MB at most and a HAR of 0.4 MB, where 60,000 requests had
taken 538 MB and 61 MB)."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

from conformance.httpclient.recording import Recorder, Sent
from conformance.httpclient.redaction import Secrets
from conformance.judging import checks
from conformance.judging.checks import CheckResult, Ledger
from conformance.judging.verdict import decide
from conformance.reports import har

SPARE = "psc-spare-big-runs-0123456789"
SENT = Sent(
    "GET",
    "http://127.0.0.1:9/v1/categories",
    [("Host", "127.0.0.1:9"), ("Authorization", f"Bearer {SPARE}"), ("Accept", "*/*")],
    b"",
)


def record_burst(recorder: Recorder, count: int, refused_at: int | None = None) -> list:
    """`count` burst responses of the spare key, as the burst's transport hands them over."""
    start = time.time()
    recorded = []
    for n in range(count):
        status = 429 if n == refused_at else 200
        headers = [
            ("date", f"Tue, 24 Nov 2026 00:00:{n // 4000 % 60:02d} GMT"),
            ("server", "uvicorn"),
            ("content-length", "2"),
            ("content-type", "application/json"),
            ("x-ratelimit-limit", "100000"),
            ("x-ratelimit-remaining", str(max(0, count - 1 - n))),
            ("x-ratelimit-reset", "1795478400"),
        ]
        recorded.append(
            recorder.record("spare", SENT, status, headers, "[]", start + n * 1e-4, 0.002, True)
        )
    return recorded


def test_a_long_burst_is_listed_where_it_matters_and_counted_elsewhere(tmp_path: Path):
    recorder = Recorder(Secrets({"spare": SPARE}))
    burst = record_burst(recorder, 5_000, refused_at=4_000)
    cited = burst[1_234]
    path = tmp_path / "exchanges.har"
    note = har.write(path, recorder.exchanges, {cited.id})

    document = json.loads(path.read_text())
    listed = [int(e["comment"].split("#")[1].split(",")[0]) for e in document["log"]["entries"]]
    assert listed == [burst[0].id, cited.id, burst[4_000].id, burst[-1].id]
    assert document["log"]["comment"] == note
    assert "a burst of 5,000 responses on key spare" in note
    assert "4 listed, 4,996 not listed (4,996 x 200)" in note
    assert SPARE not in path.read_text()


def test_a_short_burst_is_listed_whole(tmp_path: Path):
    recorder = Recorder(Secrets({"spare": SPARE}))
    record_burst(recorder, har.BURST_LISTED_IN_FULL)
    path = tmp_path / "exchanges.har"
    assert har.write(path, recorder.exchanges) == ""
    document = json.loads(path.read_text())
    assert len(document["log"]["entries"]) == har.BURST_LISTED_IN_FULL
    assert "comment" not in document["log"]


def test_memory_per_burst_response_stays_small_and_the_har_is_not_held_whole(tmp_path: Path):
    recorder = Recorder(Secrets({"spare": SPARE}))
    tracemalloc.start()
    try:
        record_burst(recorder, 20_000)
        recorded, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        har.write(tmp_path / "exchanges.har", recorder.exchanges)
        _, writing_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # About 1.1 kB a response today; 3 kB would make 100,000 responses 300 MB on their own.
    assert recorded / 20_000 < 1_500
    # Building the whole HAR document in memory took 5 kB a response.
    assert writing_peak - recorded < 20_000 * 100
    assert (tmp_path / "exchanges.har").stat().st_size < 20_000


def test_passing_checks_on_every_response_are_counted_not_kept():
    ledger = Ledger()
    for _ in range(10_000):
        ledger.add(
            CheckResult("LIM-HEADERS-PRESENT", True, "present", "t::burst", every_response=True)
        )
    failure = CheckResult("LIM-HEADERS-PRESENT", False, "absent", "t::burst", every_response=True)
    ledger.add(failure)
    ledger.add(CheckResult("LIM-HEADERS-PRESENT", True, "present", "t::burst", every_response=True))
    assert len(ledger.results) == 2  # one standing for 10,001 passes, and the failure
    assert ledger.results[1] is failure
    outcome = next(
        o for o in decide(ledger.results).outcomes if o.requirement.id == "LIM-HEADERS-PRESENT"
    )
    assert outcome.checks == 10_002
    assert outcome.outcome == "failed"


def test_a_test_that_checks_for_itself_keeps_every_result():
    ledger = Ledger()
    for n in range(3):
        ledger.add(CheckResult("LIM-HEADERS-PRESENT", True, f"check {n}", "t::own"))
    assert [r.message for r in ledger.results] == ["check 0", "check 1", "check 2"]
    assert checks.ledger() is not ledger  # the run's ledger is untouched
