"""A client program can't break the client mode: against hostile clients
(tests/client_mode/hostile_clients.py) the run ends within its bounds and in bounded memory, leaves
no process of the client behind, writes every report valid and agreeing with its exit status, and
gives no verdict to a client that sent no whole request.

Each run is a real `petstore-conformance client` process under an address-space limit (a run
that kept 2 GiB whole fails here, not the machine); its peak memory is the kernel's account of
that one process (wait4), printed with its wall time (`-s`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from html import escape
from pathlib import Path
from xml.etree import ElementTree

from conformance.client_mode.recorder import BODY_LIMIT, BODY_SECONDS, MAX_REQUESTS
from conformance.client_mode.runner import OUTPUT_TAIL
from conformance.client_mode.scenarios import GIVE_UP_SECONDS
from conformance.reference.head_bounds import HEAD_SECONDS
from tests.checker.test_hostile_targets import PEAK_MEMORY_MB, Ended, limit_address_space
from tests.client_mode import hostile_clients, inline_clients
from tests.client_mode.test_client_command import KEY_PATTERN, is_running
from tests.reference.test_reference_head_bounds import MEMORY_GROWTH_MB


def scenario_entry(ended: Ended, name: str) -> dict:
    return next(s for s in ended.statement()["scenarios"] if s["name"] == name)


def run_client(tmp_path: Path, source: str, *options: str, env: dict | None = None) -> Ended:
    """`petstore-conformance client` with the hostile `source` as its client; its exit, wall
    time, peak memory and console."""
    command = inline_clients.command(tmp_path, source, "hostile")
    report_dir = tmp_path / "reports"
    started = time.perf_counter()
    with (tmp_path / "console.txt").open("w+", encoding="utf-8") as console:
        process = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "client", "--command", command]
            + ["--report-dir", str(report_dir), *options],
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_address_space,
        )
        try:
            _, wait_status, usage = os.wait4(process.pid, 0)  # the test's timeout bounds it
        except BaseException:
            process.kill()
            raise
        seconds = time.perf_counter() - started
        console.seek(0)
        output = console.read()
    ended = Ended(
        os.waitstatus_to_exitcode(wait_status), seconds, usage.ru_maxrss / 1024, output, report_dir
    )
    print(f"\n{ended.describe().splitlines()[0]}")
    assert ended.peak_mb < PEAK_MEMORY_MB, ended.describe()
    assert_outputs_agree(ended)
    return ended


def assert_outputs_agree(ended: Ended) -> None:
    """The console's last line, conformance.json, the HTML banner, the badge and JUnit say what
    the exit status says; no key anywhere; no traceback."""
    statement = ended.statement()
    verdict = statement["verdict"]
    assert statement["exit_status"] == ended.status, ended.describe()
    last = ended.output.strip().splitlines()[-1]
    assert last.startswith(f"petstore-conformance client: {verdict} (exit {ended.status})"), last
    html = (ended.report_dir / "report.html").read_text(encoding="utf-8")
    assert f"Verdict: {escape(verdict)} (exit {ended.status})" in html
    badge = (ended.report_dir / "badge.svg").read_text(encoding="utf-8")
    assert f">{escape(verdict)}</text>" in badge
    suite = ElementTree.parse(ended.report_dir / "junit.xml").getroot()
    assert int(suite.get("errors")) == (ended.status == 2), ended.describe()
    assert (int(suite.get("failures")) > 0) == (ended.status == 1), ended.describe()
    json.loads((ended.report_dir / "exchanges.har").read_text(encoding="utf-8"))
    assert "Traceback" not in ended.output
    for path in [*ended.report_dir.iterdir()]:
        assert not KEY_PATTERN.search(path.read_text(errors="replace")), path
    assert not KEY_PATTERN.search(ended.output)


def test_a_client_flooding_its_output_is_kept_to_a_tail(tmp_path):
    """1 GiB on each stream: only the tail is kept (its end, the key redacted), memory stays
    small, and a client that sent no request has no verdict."""
    ended = run_client(tmp_path, hostile_clients.FLOODS_ITS_OUTPUT, "--scenario", "success")
    assert ended.status == 2, ended.describe()
    assert "the client sent no request in any scenario" in ended.statement()["reason"]
    scenario = scenario_entry(ended, "success")
    for stream in ("stdout", "stderr"):
        tail = scenario[stream]
        assert len(tail) <= OUTPUT_TAIL
        assert tail.endswith(f"the end of <{stream}> ***\n"), tail[-200:]


def test_a_huge_request_body_is_refused_413_unread(tmp_path):
    """A chunked body of 2 GiB: the scenario server reads its bound, answers 413 and closes; the
    one request is shown, not judged, and there is no verdict."""
    ended = run_client(tmp_path, hostile_clients.SENDS_A_HUGE_BODY, "--scenario", "create")
    assert ended.status == 2, ended.describe()
    [request] = scenario_entry(ended, "create")["requests"]
    assert (request["status"], request["judged"]) == (413, False), request
    har = json.loads((ended.report_dir / "exchanges.har").read_text(encoding="utf-8"))
    [entry] = har["log"]["entries"]
    assert entry["request"]["postData"]["text"].strip() == ""  # the whitespace read, no more
    assert len(entry["request"]["postData"]["text"]) <= BODY_LIMIT
    assert "no whole request in any scenario (1 refused" in ended.statement()["reason"]


def test_a_huge_request_head_is_refused_431_in_flat_memory(tmp_path):
    """A 64 MiB header in two scenarios: each scenario server answers 431 (or closes) past
    MAX_HEAD_BYTES and reads no more, so the run's peak memory is a careful client's, give or
    take MEMORY_GROWTH_MB; nothing was recorded, so there is no verdict."""
    scenarios = ("--scenario", "success", "--scenario", "create")
    (tmp_path / "careful").mkdir()
    (tmp_path / "huge").mkdir()
    careful = run_client(tmp_path / "careful", inline_clients.CAREFUL, *scenarios)
    ended = run_client(tmp_path / "huge", hostile_clients.SENDS_A_HUGE_HEAD, *scenarios)
    assert ended.status == 2, ended.describe()
    assert ended.peak_mb < careful.peak_mb + MEMORY_GROWTH_MB, (careful.peak_mb, ended.describe())
    for name in ("success", "create"):
        scenario = scenario_entry(ended, name)
        assert scenario["requests"] == [] and not scenario["timed_out"], scenario
        assert "HTTP/1.1 431 " in scenario["stdout"] or "no answer" in scenario["stdout"], scenario


def test_a_trickling_client_is_stopped_and_certified_nothing(tmp_path):
    """The request's head a byte a second (408 after HEAD_SECONDS, the connection closed: no
    request), and a body a byte a second (408 after BODY_SECONDS): no verdict, even for the
    scenarios chosen."""
    timeout = BODY_SECONDS + 8  # room for the 408 to end the client on a busy machine
    options = ("--scenario", "success", "--scenario", "create", "--timeout", f"{timeout:g}")
    ended = run_client(tmp_path, hostile_clients.TRICKLES, *options)
    assert ended.status == 2, ended.describe()
    assert ended.seconds < timeout + 20, ended.describe()
    success, create = scenario_entry(ended, "success"), scenario_entry(ended, "create")
    assert success["requests"] == [] and "HTTP/1.1 408 " in success["stdout"], success
    assert HEAD_SECONDS <= success["seconds"] < timeout and not success["timed_out"], success
    [request] = create["requests"]
    assert (request["status"], request["judged"]) == (408, False), request
    # The 408 came after BODY_SECONDS and ended the client before its time limit.
    assert BODY_SECONDS <= create["seconds"] < timeout and not create["timed_out"], create
    statement = ended.statement()
    assert statement["reason"].startswith("the client sent no whole request"), statement
    assert all(r["outcome"] == "not-tested" for r in statement["requirements"])


def test_no_process_of_the_client_outlives_the_run(tmp_path):
    """A daemon (setsid, its parent gone) and a child in a session of its own, left by a client
    that exits (`success`) and by one stopped at its time limit (`create`): none is left."""
    options = ("--scenario", "success", "--scenario", "create", "--timeout", "5")
    folder = tmp_path / "pids"
    folder.mkdir()
    ended = run_client(
        tmp_path, hostile_clients.LEAVES_PROCESSES, *options, env={"PID_FOLDER": str(folder)}
    )
    assert ended.status == 0, ended.describe()
    assert scenario_entry(ended, "create")["timed_out"], ended.describe()
    pids = {path.name: int(path.read_text()) for path in folder.glob("*.pid")}
    assert len(pids) == 4, pids
    # A killed process is gone at once; only its reaping may lag (is_running ignores zombies).
    deadline = time.monotonic() + 10
    while any(map(is_running, pids.values())) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {name: pid for name, pid in pids.items() if is_running(pid)}
    for pid in left.values():
        os.kill(pid, 9)
    assert not left, f"left running: {left}"


def test_a_client_flooding_requests_is_stopped_at_the_request_limit(tmp_path):
    """Requests as fast as the server answers, on the 429 that never ends: recorded up to
    MAX_REQUESTS, then the client is stopped and judged on them (hammering)."""
    ended = run_client(tmp_path, hostile_clients.FLOODS_REQUESTS, "--scenario", "endless-429")
    assert ended.status == 1, ended.describe()
    scenario = scenario_entry(ended, "endless-429")
    assert scenario["stopped_at_request_limit"] and not scenario["timed_out"], scenario
    assert len(scenario["requests"]) == MAX_REQUESTS
    assert scenario["seconds"] < GIVE_UP_SECONDS, scenario  # before its time limit
    assert f"stopped after {MAX_REQUESTS} requests" in ended.output
    assert "CLI-NO-HAMMERING" in ended.statement()["failed_requirements"]


def test_a_client_pipelining_requests_is_held_to_what_the_server_answers(tmp_path):
    """Hundreds of requests a write, never waiting for an answer: the scenario server reads no
    further while earlier ones wait (uvicorn would read on at every answer, queueing all it
    read), so memory stays small; the client is stopped at the request limit and judged."""
    ended = run_client(tmp_path, hostile_clients.PIPELINES_REQUESTS, "--scenario", "endless-429")
    assert ended.status == 1, ended.describe()
    scenario = scenario_entry(ended, "endless-429")
    assert scenario["stopped_at_request_limit"], scenario
    assert "CLI-NO-HAMMERING" in ended.statement()["failed_requirements"]
