"""One scenario, run: its server (the reference's app with the scenario's scripted limiter, a
recorder in front, on a free loopback port), the client's command through the shell with the
PETSTORE_* variables, in a process group of its own; a client still running at its time limit
is stopped whole, children and all (reaping.py: those that left its group too). Of its output,
only the tail is kept, however much it writes."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import selectors
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from conformance.client_mode import reaping
from conformance.client_mode.recorder import MAX_REQUESTS, Arrival, Recorder
from conformance.client_mode.scenarios import Scenario
from conformance.client_mode.scripted_limits import ScriptedLimits
from conformance.client_mode.scripted_store import BlankNamesRefused
from conformance.reference.app import Settings, create_app
from conformance.reference.auth import KeyRing
from conformance.reference.plans import PLANS
from conformance.reference.serve import start_app_in_thread

SHELL_NOT_FOUND = (126, 127)  # the shell's "cannot execute" and "command not found"
OUTPUT_TAIL = 2000  # characters of the client's stdout and stderr kept for the reports
# Bytes of each stream held while the client runs: room for OUTPUT_TAIL characters of any
# UTF-8, and for a key cut at the front to fall outside the characters kept once redacted.
TAIL_BYTES = 64 * 1024
POLL_SECONDS = 0.05  # how often a client whose output stays open is asked whether it exited
DRAIN_SECONDS = 1.0  # output still read once the client is stopped (what its last writes left)


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


def reap_strays() -> None:
    """Reap the orphans the clients left to this process (a subreaper), but no client's shell:
    its `Popen` reads its exit status (the lock keeps a shell just started from being taken
    for a stray)."""
    with _running_lock:
        reaping.reap_strays({process.pid for process in _running})


class CommandDidNotStart(Exception):
    """The shell could not run the command at all: no verdict."""


@dataclass
class ScenarioRun:
    scenario: Scenario
    arrivals: list[Arrival]
    exit_status: int | None  # None when it was stopped (its time limit, MAX_REQUESTS)
    seconds: float
    time_limit: float
    stdout: str = ""
    stderr: str = ""
    reproduce: str = ""
    started: float = field(default=0.0)  # monotonic, when the command was started
    flooded: bool = False  # stopped once it had sent MAX_REQUESTS requests

    @property
    def stopped(self) -> bool:
        return self.exit_status is None

    @property
    def timed_out(self) -> bool:
        return self.stopped and not self.flooded

    def how_stopped(self) -> str:
        if self.flooded:
            return f"stopped after {MAX_REQUESTS} requests"
        return f"stopped at {self.time_limit:g} s"


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
    out, err = OutputTail(), OutputTail()
    with _running_lock:  # registered as it starts: reap_strays must never take it
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            shell=True,
            env=client_environment(scenario, base_url, recorder.key),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: stopped whole
        )
        _running.add(process)
    try:
        with selectors.DefaultSelector() as streams:
            streams.register(process.stdout, selectors.EVENT_READ, out)
            streams.register(process.stderr, selectors.EVENT_READ, err)
            status = read_until_exit(process, streams, started + limit, recorder.full)
            seconds = time.monotonic() - started
            stop_tree(process)
            drain(streams, time.monotonic() + DRAIN_SECONDS)
    finally:
        with _running_lock:
            _running.discard(process)
        process.stdout.close()
        process.stderr.close()
    stdout, stderr = (tail.text(recorder.secrets.redact) for tail in (out, err))
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
        flooded=status is None and recorder.full.is_set(),
    )


class OutputTail:
    """The last TAIL_BYTES of a stream, whatever its length."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * TAIL_BYTES:  # trimmed now and then, not on every chunk
            del self.data[:-TAIL_BYTES]

    def text(self, redact) -> str:
        """The last OUTPUT_TAIL characters, redacted before they are cut (a key cut in half at
        the front of the bytes held is left out with the rest)."""
        return redact(bytes(self.data[-TAIL_BYTES:]).decode("utf-8", "replace"))[-OUTPUT_TAIL:]


def read_until_exit(
    process: subprocess.Popen,
    streams: selectors.BaseSelector,
    deadline: float,
    full: threading.Event,
) -> int | None:
    """Read the client's output as it comes until it exits (its status), its time is up or it
    has sent MAX_REQUESTS requests (None)."""
    while (status := process.poll()) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or full.is_set():
            return None
        if streams.get_map():
            read_ready(streams, min(remaining, POLL_SECONDS))
        else:  # both closed: nothing to read, only the exit to wait for
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(min(remaining, POLL_SECONDS))
    # Refused past MAX_REQUESTS, a client may exit by itself before this loop sees the limit
    # reached (a busy machine): the limit stopped it all the same.
    return None if full.is_set() else status


def read_ready(streams: selectors.BaseSelector, timeout: float) -> None:
    for key, _ in streams.select(timeout):
        chunk = os.read(key.fd, TAIL_BYTES)
        if chunk:
            key.data.add(chunk)
        else:
            streams.unregister(key.fileobj)


def drain(streams: selectors.BaseSelector, deadline: float) -> None:
    """What is left in the pipes once the client is stopped, until they close or the deadline
    (an orphan the sweep has yet to stop may hold them open)."""
    while streams.get_map() and (remaining := deadline - time.monotonic()) > 0:
        read_ready(streams, remaining)


def stop_tree(process: subprocess.Popen) -> None:
    """Kill what is left of the client: every process below its shell while the shell lives
    (those that left its group too), then its process group; and reap the shell. What an
    exited shell left behind was handed to this process, and is stopped at the end of the run
    (command.py)."""
    if process.returncode is None:  # not reaped: its pid is still its own
        reaping.kill_tree(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
