"""One scenario, run: its server (the reference's app with the scenario's scripted limiter, a
recorder in front, on a free loopback port), the client's command through the shell with the
PETSTORE_* variables, in a process group of its own so that a client still running at its
time limit is stopped whole, children and all."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from conformance.clients.recorder import Arrival, Recorder
from conformance.clients.scenarios import Scenario
from conformance.clients.scripted_limits import ScriptedLimits
from conformance.clients.scripted_store import BlankNamesRefused
from conformance.reference.app import Settings, create_app
from conformance.reference.auth import KeyRing
from conformance.reference.plans import PLANS
from conformance.reference.serve import start_app_in_thread

SHELL_NOT_FOUND = (126, 127)  # the shell's "cannot execute" and "command not found"
OUTPUT_TAIL = 2000  # characters of the client's stdout and stderr kept for the reports


# The clients running now: on Ctrl-C every one is stopped, as they run in sessions of their
# own that the terminal's signal does not reach.
_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()


def stop_all() -> None:
    with _running_lock:
        running = list(_running)
    for process in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


class CommandDidNotStart(Exception):
    """The shell could not run the command at all: no verdict."""


@dataclass
class ScenarioRun:
    scenario: Scenario
    arrivals: list[Arrival]
    exit_status: int | None  # None when it was stopped at its time limit
    seconds: float
    time_limit: float
    stdout: str = ""
    stderr: str = ""
    reproduce: str = ""
    started: float = field(default=0.0)  # monotonic, when the command was started

    @property
    def timed_out(self) -> bool:
        return self.exit_status is None


def reproduce_line(command: str, scenario: Scenario) -> str:
    return (
        f"petstore-conformance client --command {shlex.quote(command)} --scenario {scenario.name}"
    )


def client_environment(scenario: Scenario, base_url: str, key: str) -> dict[str, str]:
    return {
        **os.environ,
        "PETSTORE_BASE_URL": base_url,
        "PETSTORE_API_KEY": key,
        "PETSTORE_OPERATION": scenario.operation,
        "PETSTORE_CATEGORY_NAME": scenario.category_name,
        "PETSTORE_REPEAT": str(scenario.repeat),
        "PETSTORE_SCENARIO": scenario.name,
    }


def run_scenario(scenario: Scenario, command: str, timeout: float) -> ScenarioRun:
    key = "client-" + secrets.token_urlsafe(18)
    known = key if scenario.valid_key else "other-" + secrets.token_urlsafe(18)
    settings = Settings(keys=KeyRing.from_keys([(known, PLANS["free"])]))
    app = create_app(
        settings,
        access_log=False,
        limits=ScriptedLimits(scenario.script),
        categories=BlankNamesRefused(),
    )
    recorder = Recorder(app, key, reproduce_line(command, scenario))
    limit = min(timeout, scenario.time_limit or timeout)
    # An idle connection stays open as long as the client may run: a server closing it as the
    # client's retry goes out (uvicorn closes after 5 s; a busy machine stretches a 2 s wait
    # that far) would judge the client by a race the scenario is not about.
    server = start_app_in_thread(recorder, keep_alive=math.ceil(limit) + 5)
    try:
        return run_command(scenario, command, limit, server.base_url, recorder)
    finally:
        server.stop()


def run_command(
    scenario: Scenario, command: str, limit: float, base_url: str, recorder: Recorder
) -> ScenarioRun:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            shell=True,
            env=client_environment(scenario, base_url, recorder.key),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group: stopped whole
        )
        with _running_lock:
            _running.add(process)
        try:
            status: int | None = process.wait(limit)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            with _running_lock:
                _running.discard(process)
        seconds = time.monotonic() - started
        stop_group(process)
        stdout, stderr = (recorder.secrets.redact(tail(handle)) for handle in (out, err))
    if status in SHELL_NOT_FOUND and not recorder.arrivals:
        last = stderr.strip().splitlines()[-1:] or [f"exit status {status}"]
        raise CommandDidNotStart(f"the command could not start: {last[0]}")
    return ScenarioRun(
        scenario,
        recorder.arrivals,
        status,
        seconds,
        limit,
        stdout,
        stderr,
        recorder.reproduce,
        started,
    )


def stop_group(process: subprocess.Popen) -> None:
    """Kill what is left of the client's process group (all of it, when it timed out)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def tail(handle) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", "replace")[-OUTPUT_TAIL:]
