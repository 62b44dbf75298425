"""Checker runs forked from a process that has imported the checker already.

A run of `python -m conformance.cli` spends some 1.5 s of its 4 s of CPU importing pytest,
httpx, Hypothesis and schemathesis, and the project's tests make some three hundred such runs on
two cores. Here one process per test worker imports them once (as installed, `PYTHONSAFEPATH`,
like the runs it stands for) and forks a child for each run: the child takes the run's
environment, working folder, arguments and output files, calls `conformance.cli.main` as the
console script does, and exits with its status. Only the import is shared; the tests of the
command itself (`test_command.py` and others) still start it as users do.

    status = run(argv, env, cwd, stdout_path, stderr_path, timeout)  # None: not available

`PSC_NO_ZYGOTE=1` in the environment: every run started as a command of its own.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# What the forked child runs; the zygote's own loop. Written to be run with `-c` so that nothing
# from the source tree is imported (the checker as installed, as a user's run imports it).
SERVER = r"""
import atexit, json, os, sys, traceback
import conformance.cli, conformance.plugin  # noqa: what every run imports first
import hypothesis, schemathesis, jsonschema  # noqa: and what its generated tests import
from conformance import generation
generation.load_operations("http://127.0.0.1:1/v1")  # schemathesis' own lazy imports


def child(request):
    os.setpgid(0, 0)  # the run and what it starts, killed together on a timeout
    streams = [os.devnull, request["stdout"], request["stderr"]]
    for number, (path, flags) in enumerate(zip(streams, [os.O_RDONLY] + [os.O_WRONLY] * 2)):
        descriptor = os.open(path, flags)
        os.dup2(descriptor, number)
        os.close(descriptor)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["petstore-conformance", *request["argv"]]
    try:
        status = conformance.cli.main(request["argv"])
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(1)  # never back into this loop, whatever failed before the run
    print(json.dumps({"pid": pid}), flush=True)
    _, wait_status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(wait_status)}), flush=True)
"""

_lock = threading.Lock()
_zygote: subprocess.Popen | None = None


def _started() -> subprocess.Popen:
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        environment = {**os.environ, "PYTHONSAFEPATH": "1"}
        _zygote = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            cwd="/",
            text=True,
        )
    return _zygote


def _reply(zygote: subprocess.Popen, deadline: float) -> dict | None:
    """The zygote's next line, or None once `deadline` (monotonic) has passed."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([zygote.stdout], [], [], left)
        if ready:
            line = zygote.stdout.readline()
            if not line:
                raise RuntimeError("the checker's zygote ended")
            return json.loads(line)


def run(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    stdout: Path,
    stderr: Path,
    timeout: float,
) -> int | None:
    """The run's exit status; None where the zygote is busy with another thread's run (the
    caller then starts the command itself). subprocess.TimeoutExpired past `timeout`, the run
    killed with all it started."""
    if os.environ.get("PSC_NO_ZYGOTE") or not _lock.acquire(blocking=False):
        return None
    try:
        zygote = _started()
        request = {"argv": argv, "env": env, "cwd": str(cwd), "stdout": str(stdout)}
        zygote.stdin.write(json.dumps({**request, "stderr": str(stderr)}) + "\n")
        zygote.stdin.flush()
        deadline = time.monotonic() + timeout
        forked = _reply(zygote, deadline + 60)
        if forked is None:
            raise RuntimeError("the checker's zygote did not fork the run")
        pid = forked["pid"]
        reply = _reply(zygote, deadline)
        if reply is None:
            os.killpg(pid, signal.SIGKILL)
            _reply(zygote, time.monotonic() + 60)
            raise subprocess.TimeoutExpired(argv, timeout)
        return reply["status"]
    finally:
        _lock.release()
